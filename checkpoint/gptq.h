/* ctq GPTQ: the weight rounding of llm-compressor's GPTQModifier, per-channel
 * symmetric int8, following vllm-project/llm-compressor at
 * ab1ba3effcafc15746cd6d6ca24cba3f7bd7a582 (2026-08-22):
 * src/llmcompressor/modifiers/gptq/gptq_quantize.py (accumulate_hessian,
 * quantize_weight; last changed in 8716438) and modifiers/gptq/base.py
 * (compress_module_list), after arXiv 2210.17323 §3.4. The file lived at
 * modifiers/quantization/gptq/ until a27d9e2; the 0050550 version there has
 * the same algorithm with a running rescale of H.
 *
 * Hessian of a Linear's input: over the calibration samples (windows) s,
 * each of M_s tokens x (K),
 *   H = 2 / n_samples * sum_s sum_t x xᵀ            (K, K)
 * accumulate_hessian sums 2 x xᵀ and counts samples (not tokens);
 * compress_module_list divides by the count. Kept here as the raw sum in
 * f64; the factor 2 / n is applied when the inverse is prepared.
 *
 * The inverse (quantize_weight, in this order):
 *   dead  = { i : H_ii == 0 }: H_ii = 1 and W[:, i] = 0 (an input channel
 *           the calibration never lit carries no error and is dropped)
 *   H    += dampening_frac * mean(diag H) * I        (default 0.01)
 *   U     = cholesky(cholesky_inverse(cholesky(H)), upper)   (Hinv = Uᵀ U)
 * A Cholesky that fails (H not positive definite) falls back to U = I,
 * which is round-to-nearest, as the library does (it logs a warning; here
 * the result says so).
 *
 * The rounding, block by block of block_size columns (default 128): for
 * each column i of the block, d = U_ii, q = quantize(w_i), err = (w_i - q)
 * / d, the block's columns i.. get -= err · U[i, i..]; after the block the
 * columns beyond it get -= Err · U[block, beyond]. loss = sum (w - q)^2 /
 * d^2 / 2, the library's.
 *
 * Scales: the library computes them once, before GPTQ, with the module's
 * weight observer over the full weight (base.py on_sequential_epoch_end:
 * observe(modules, "weight"); memoryless_minmax for W8A8), not per block:
 * per output channel, from the row's absolute maximum. ctq uses its own producer's
 * rule for that (checkpoint/quantize.h ctq_quantize_weight: amax / 127
 * clamped, rounded to the weight's dtype), so the scale on disk is the one
 * the rounding used, and a GPTQ with U = I writes the RTN checkpoint byte
 * for byte. The library rounds with the f32 scale and stores it in the
 * weight dtype afterwards; the two differ by that rounding only.
 *
 * Arithmetic: f64 for the Hessian, its inverse and the error propagation
 * (the library runs f32, GPTQ_PRECISION); each element's rounding is
 * core/numerics.h ctq_quantize on the f32 value, the formula ctq's
 * producer uses.
 *
 * Column order: static activation ordering when asked (ctq quantize's
 * default): the columns are rounded in the order of descending diag(H)
 * and the result un-permuted, as apply_activation_ordering does. In
 * llm-compressor 0.14 GPTQModifier.actorder defaults to "static" and
 * resolve_quantization_config gives it to channel strategies too, so the
 * W8A8 preset's weights run with actorder static there (checked on 0.14.0.1
 * by tests/oracle/llmc_recipes.py; this file was first written from
 * ab1ba3e, read then as giving it to group strategies only).
 * The per-channel scale is the same whichever the order.
 *
 * What it is not: actorder "weight" / dynamic groups, group or 4-bit strategies, the sparsity mask
 * (preserve_zeros: only for weights already mostly zero), or a calibrator
 * (eval/calib.h gathers the Hessians layer by layer).
 */
#ifndef CTQ_CHECKPOINT_GPTQ_H
#define CTQ_CHECKPOINT_GPTQ_H

#include <stdbool.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/status.h"

#define CTQ_GPTQ_DEFAULT_DAMPENING 0.01 /* GPTQModifier.dampening_frac */
#define CTQ_GPTQ_DEFAULT_BLOCK 128      /* GPTQModifier.block_size */

/* The raw input second moment of one Linear (or of the Linears that share
 * an input: q/k/v, gate/up). */
struct ctq_gptq_hessian {
	int64_t K;
	double *S;          /* (K, K) sum of x xᵀ, upper triangle filled; owned */
	int64_t n_samples;  /* calibration samples (windows) added */
	int64_t n_tokens;
};

/* Errors: usage (K < 1), out-of-memory. */
enum ctq_status ctq_gptq_hessian_init(struct ctq_gptq_hessian *h, int64_t K,
				      struct ctq_error *err);
void ctq_gptq_hessian_free(struct ctq_gptq_hessian *h);
/* Zeroes the sums (the next layer reuses the buffer). */
void ctq_gptq_hessian_reset(struct ctq_gptq_hessian *h);

/* Adds one calibration sample: x (M, K) host f32 row-major, borrowed.
 * Tiles in parallel (OpenMP); the sum does not depend on the thread count.
 * Errors: out-of-memory (a transposed copy of x). */
enum ctq_status ctq_gptq_hessian_add(struct ctq_gptq_hessian *h, const float *x, int64_t M,
				     struct ctq_error *err);

/* The prepared inverse of one Hessian. */
struct ctq_gptq_hinv {
	int64_t K;
	double *U;        /* (K, K) upper Cholesky factor of H^-1, row-major; owned */
	bool *dead;       /* (K) columns dropped (H_ii == 0); owned */
	int64_t *perm;    /* (K) the column order U is in: perm[c] is the weight
			   * column rounded c-th; owned */
	int64_t n_dead;
	bool fallback;    /* the Cholesky failed: U = I (round to nearest) */
};

/* Prepares h (which must hold samples) with dampening_frac in [0, 1].
 * actorder: the columns are rounded in the order of descending diag(H)
 * (the library's static activation ordering, ActivationOrdering.STATIC,
 * which GPTQModifier applies to W8A8's channel weights since 0.14);
 * false: in index order. Errors: usage (no samples, dampening out of
 * range), out-of-memory. */
enum ctq_status ctq_gptq_hinv_init(struct ctq_gptq_hinv *v, const struct ctq_gptq_hessian *h,
				   double dampening_frac, bool actorder, struct ctq_error *err);
void ctq_gptq_hinv_free(struct ctq_gptq_hinv *v);

/* GPTQ-quantizes w (N, K) of dtype BF16, F16 or F32 (a tensor's bytes)
 * under v (v->K == K) with block_size >= 1 columns per block: q (N, K)
 * int8, scale (N) in dtype as ctq_quantize_weight writes it, err2 / norm2
 * (N) per row sum (q*s - w)^2 and sum w^2 in f64 against the original w
 * (dead columns included), *loss (may be NULL) the library's loss.
 * name is used in errors. Errors: usage (K mismatch, block_size < 1),
 * checkpoint-error (a row with NaN or infinite values), out-of-memory. */
enum ctq_status ctq_gptq_weight(const void *w, enum ctq_dtype dtype, int64_t N, int64_t K,
				const struct ctq_gptq_hinv *v, int64_t block_size, const char *name,
				int8_t *q, void *scale, double *err2, double *norm2, double *loss,
				struct ctq_error *err);

#endif
