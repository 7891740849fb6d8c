/* ctq token-distribution statistics (ctq eval kld): the per-token KL
 * divergence between two models' next-token distributions over the whole
 * vocabulary, their top-1 agreement and the log-probability each gives the
 * actual next token; quantiles of a sample; and a percentile bootstrap of a
 * ratio of sums over resampled blocks (windows of text).
 *
 * Conventions: natural logarithms (nats); the reference is "ref", the
 * candidate "new"; KL(ref || new) = sum_i p_ref,i (log p_ref,i - log p_new,i)
 * as llama.cpp's perplexity --kl-divergence computes it.
 *
 * What it is not: a verdict (eval/kld.c applies the policy), or a model
 * runner: it takes logits the caller computed.
 */
#ifndef CTQ_STATS_KLD_H
#define CTQ_STATS_KLD_H

#include <stddef.h>
#include <stdint.h>

/* log(sum_i exp(x_i)) of n float logits, in double (max first, so stable);
 * -inf when n == 0 or every x_i is -inf. */
double ctq_stats_logsumexp_f32(const float *x, int64_t n);

struct ctq_kld_token {
	double kl;              /* KL(ref || new), nats, >= 0 */
	double lp_ref, lp_new;  /* log p(target) under each model */
	int32_t top_ref, top_new; /* argmax of each (first index on ties) */
};

/* One token position: ref and cand are the f32 logits (V) of the two models
 * (borrowed), target the actual next token (0 <= target < V). Log-softmax
 * in double over all V entries. Identical logits give kl == 0 exactly. A
 * rounding residue below zero (the sum of p (lr - ln) can be -1e-17 when
 * the distributions are nearly equal) is clamped to 0. */
void ctq_stats_kld_token(const float *ref, const float *cand, int64_t V, int32_t target,
			 struct ctq_kld_token *out);

/* Quantile q (0..1) of v (n values, sorted ascending, borrowed) by linear
 * interpolation between order statistics (numpy's default, "linear");
 * NaN when n == 0. */
double ctq_quantile_sorted(const double *v, size_t n, double q);

/* Percentile bootstrap interval of R = sum(num) / sum(den) over n blocks
 * (num, den: (n) borrowed; den > 0 in total): B resamples of n blocks drawn
 * with replacement (seeded, so repeatable), [lo, hi] the (1 - level) / 2
 * and (1 + level) / 2 quantiles of the resampled R. Resamples whose den is
 * 0 are skipped. n == 0: NaN. n == 1: lo == hi == R (one block shows no
 * spread). Returns 0, or -1 when out of memory. */
int ctq_stats_ratio_bootstrap(const double *num, const double *den, size_t n, size_t B,
			      uint64_t seed, double level, double *lo, double *hi);

#endif
