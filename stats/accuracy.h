/* ctq eval statistics: accuracy standard errors, the paired comparison of two
 * checkpoints on the same questions, and the distance between their answer
 * distributions.
 *
 * Conventions: accuracies and differences are fractions (0.25, not 25 %);
 * confidence intervals are two-sided 95 % (z = CTQ_Z95). In a paired table
 * the reference (baseline) is "ref" and the candidate is "new":
 *   a = both right, b = ref right / new wrong (right->wrong),
 *   c = ref wrong / new right (wrong->right), d = both wrong.
 *
 * What it is not: a general statistics library; every function here is one
 * that the eval report prints, with its formula beside it.
 */
#ifndef CTQ_STATS_ACCURACY_H
#define CTQ_STATS_ACCURACY_H

#include <stddef.h>

/* The 0.975 quantile of the standard normal (scipy.stats.norm.ppf(0.975)). */
#define CTQ_Z95 1.959963984540054

/* Binomial standard error of an accuracy, sqrt(p (1 - p) / n) with
 * p = k / n; 0 when n == 0. The micro average's SE. */
double ctq_stats_binom_se(size_t k, size_t n);

/* Standard error of the macro average (the mean of S subject accuracies
 * p_s = k_s / n_s) with the subjects held fixed and only the questions
 * random: sqrt(sum_s p_s (1 - p_s) / n_s) / S. Subjects with n_s == 0 are
 * skipped (and not counted in S). */
double ctq_stats_macro_se(const size_t *k, const size_t *n, size_t S);

/* Wilson score interval for k successes in n trials at z; [0, 1] when
 * n == 0. */
void ctq_stats_wilson(size_t k, size_t n, double z, double *lo, double *hi);

/* Two-sided exact McNemar test: the binomial test of min(b, c) successes
 * in b + c trials at p = 1/2, p = min(1, 2 P(X <= min(b, c))) (what
 * scipy.stats.binomtest gives for p = 1/2). Summed in log space, so b + c
 * may be large; 1 when b + c == 0. */
double ctq_stats_mcnemar_exact(size_t b, size_t c);

struct ctq_paired {
	size_t n, a, b, c, d;  /* the table (see above) */
	double acc_ref, acc_new;
	double diff;           /* acc_new - acc_ref = (c - b) / n */
	/* Newcombe's hybrid score interval for a paired difference (Newcombe
	 * 1998, Stat Med 17:2635, method 10; Fagerland et al. 2014 recommend
	 * it): Wilson intervals of both accuracies combined with the phi
	 * correlation of the table. Coverage stays near nominal with few
	 * discordant pairs, where the Wald interval is too narrow (it is
	 * [0, 0] when b = c = 0). */
	double lo, hi;
	/* Wald interval on the mean of the per-question differences:
	 * diff +- z sqrt((b + c) / n - diff^2) / sqrt(n), for reference. */
	double wald_lo, wald_hi;
	double p_mcnemar;      /* ctq_stats_mcnemar_exact(b, c) */
};

/* Fills p from the table at z. */
void ctq_stats_paired(struct ctq_paired *p, size_t a, size_t b, size_t c, size_t d, double z);

/* KL(ref || new) in nats between the distributions softmax(ref_lp) and
 * softmax(new_lp) over n choices (log-probabilities of each choice's
 * continuation; only their differences matter). */
double ctq_stats_kl(const double *ref_lp, const double *new_lp, int n);

/* log(exp(x_0) + ... + exp(x_{n-1})), stable; -inf for n == 0. */
double ctq_stats_logsumexp(const double *x, int n);

#endif
