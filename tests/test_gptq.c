/* Criterion tests for checkpoint/gptq.h. Checked: the Hessian sums against
 * a naive 2/n sum of x xᵀ (sizes off the tile); a 3-column case worked by
 * hand (error propagated into the next column, a dead column dropped); the
 * block-wise Cholesky form against an independent column-by-column
 * reference that inverts each trailing sub-Hessian by Gauss-Jordan (block
 * sizes 1, 5 and 128 give the same bytes); a diagonal Hessian writes the
 * round-to-nearest checkpoint byte for byte; dampening (a singular Hessian
 * without it falls back to round to nearest, with it does not; out of
 * range is refused); and GPTQ's output error on correlated inputs is below
 * round to nearest's; static activation ordering is column-order GPTQ on
 * the permuted columns. Then the layer-wise calibration (eval/calib.h,
 * `ctq quantize --recipe gptq`) on the tiny synthetic Qwen3 with outlier
 * channels: every linear's output error on the inputs its layer sees in
 * the GPTQ model is below round to nearest's, the checkpoint and its
 * recipe.yaml, one seed one checkpoint, and bad options. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/dtype.h"
#include "core/numerics.h"
#include "core/rng.h"
#include "core/fileio.h"
#include "checkpoint/gptq.h"
#include "checkpoint/quantize.h"
#include "checkpoint/safetensors.h"
#include "checkpoint/synth.h"
#include "eval/calib.h"
#include "harness/commands.h"
#include "model/model.h"
#include "quant/modules.h"

#define TOKENIZER "tests/fixtures/tokenizers/gpt2-small/tokenizer.json"
#define CALIB_TEXT "tests/fixtures/tokenizers/corpus.txt"

/* A uniform number in [-1, 1). */
static double uni(struct ctq_rng *r)
{
	return (double)ctq_rng_below(r, 1u << 30) / (double)(1u << 29) - 1.0;
}

/* x (M, K): z (M, R) times a fixed mixing (R, K), plus a little noise, so
 * that the input channels are strongly correlated. */
static void correlated(float *x, int64_t M, int64_t K, uint64_t seed)
{
	struct ctq_rng r;
	ctq_rng_seed(&r, seed);
	const int64_t R = 3;
	double *mix = malloc((size_t)(R * K) * sizeof *mix);
	for (int64_t i = 0; i < R * K; i++)
		mix[i] = uni(&r);
	for (int64_t t = 0; t < M; t++) {
		double z[3] = {uni(&r), uni(&r), uni(&r)};
		for (int64_t k = 0; k < K; k++) {
			double v = 0.05 * uni(&r);
			for (int64_t j = 0; j < R; j++)
				v += z[j] * mix[j * K + k];
			x[t * K + k] = (float)v;
		}
	}
	free(mix);
}

static void hessian_of(struct ctq_gptq_hessian *h, const float *x, int64_t M, int64_t K,
		       int64_t per_sample)
{
	struct ctq_error err = {0};
	cr_assert_eq(ctq_gptq_hessian_init(h, K, &err), CTQ_OK, "%s", err.message);
	for (int64_t t0 = 0; t0 < M; t0 += per_sample) {
		int64_t m = M - t0 < per_sample ? M - t0 : per_sample;
		cr_assert_eq(ctq_gptq_hessian_add(h, x + t0 * K, m, &err), CTQ_OK, "%s", err.message);
	}
}

static void gptq_ordered(const float *w, int64_t N, int64_t K, const struct ctq_gptq_hessian *h,
			 double damp, int64_t block, bool actorder, int8_t *q, float *scale,
			 bool *fallback)
{
	struct ctq_error err = {0};
	struct ctq_gptq_hinv v;
	cr_assert_eq(ctq_gptq_hinv_init(&v, h, damp, actorder, &err), CTQ_OK, "%s", err.message);
	double *e2 = malloc((size_t)N * sizeof *e2), *w2 = malloc((size_t)N * sizeof *w2), loss;
	cr_assert_eq(ctq_gptq_weight(w, CTQ_DTYPE_F32, N, K, &v, block, "w", q, scale, e2, w2, &loss,
				     &err),
		     CTQ_OK, "%s", err.message);
	if (fallback)
		*fallback = v.fallback;
	cr_assert(loss >= 0.0 && isfinite(loss), "loss %g", loss);
	free(e2);
	free(w2);
	ctq_gptq_hinv_free(&v);
}

/* GPTQ in column order. */
static void gptq(const float *w, int64_t N, int64_t K, const struct ctq_gptq_hessian *h,
		 double damp, int64_t block, int8_t *q, float *scale, bool *fallback)
{
	gptq_ordered(w, N, K, h, damp, block, false, q, scale, fallback);
}

static void rtn(const float *w, int64_t N, int64_t K, int8_t *q, float *scale)
{
	double *e2 = malloc((size_t)N * sizeof *e2), *w2 = malloc((size_t)N * sizeof *w2);
	cr_assert_eq(ctq_quantize_weight(w, CTQ_DTYPE_F32, N, K, q, scale, e2, w2), -1);
	free(e2);
	free(w2);
}

Test(gptq, hessian_is_two_over_n_sum_x_xt)
{
	const int64_t M = 23, K = 7; /* neither a multiple of the tile */
	float *x = malloc((size_t)(M * K) * sizeof *x);
	correlated(x, M, K, 11);
	struct ctq_gptq_hessian h;
	hessian_of(&h, x, M, K, 10); /* samples of 10, 10 and 3 tokens */
	cr_assert_eq(h.n_samples, 3);
	cr_assert_eq(h.n_tokens, M);
	for (int64_t i = 0; i < K; i++)
		for (int64_t j = i; j < K; j++) {
			double s = 0.0;
			for (int64_t t = 0; t < M; t++)
				s += (double)x[t * K + i] * (double)x[t * K + j];
			cr_assert(fabs(h.S[i * K + j] - s) <= 1e-12 * (1.0 + fabs(s)),
				  "S[%lld][%lld] %.17g, expected %.17g", (long long)i, (long long)j,
				  h.S[i * K + j], s);
		}
	ctq_gptq_hessian_reset(&h);
	cr_assert_eq(h.n_samples, 0);
	cr_assert_eq(h.S[1], 0.0);
	ctq_gptq_hessian_free(&h);
	free(x);
}

/* w = [0.014, 0.004, 1.27], scale 1.27 / 127 = 0.01; inputs light columns
 * 0 and 1 only, H ∝ [[2, 1], [1, 2]] on them, no dampening. Column 0
 * rounds 1.4 -> 1 (error 0.004); H^-1 ∝ [[2, -1], [-1, 2]] / 3 moves
 * -error * (-1/3) / (2/3) = +0.002 into column 1: 0.006 -> 0.6 -> 1, where
 * round to nearest gives 0.4 -> 0. Column 2 is dead: 0 (RTN: 127). */
Test(gptq, hand_worked_three_columns)
{
	const float x[3 * 3] = {1, 1, 0, 1, 0, 0, 0, 1, 0};
	const float w[3] = {0.014f, 0.004f, 1.27f};
	struct ctq_gptq_hessian h;
	hessian_of(&h, x, 3, 3, 1);
	int8_t q[3], qr[3];
	float s, sr;
	bool fb = true;
	gptq(w, 1, 3, &h, 0.0, 128, q, &s, &fb);
	rtn(w, 1, 3, qr, &sr);
	cr_assert_not(fb);
	cr_assert_eq(s, sr, "scale %g, round to nearest's %g", (double)s, (double)sr);
	cr_assert_eq(s, 1.27f / 127.0f);
	cr_assert(qr[0] == 1 && qr[1] == 0 && qr[2] == 127, "rtn %d %d %d", qr[0], qr[1], qr[2]);
	cr_assert(q[0] == 1 && q[1] == 1 && q[2] == 0, "gptq %d %d %d, expected 1 1 0", q[0], q[1], q[2]);
	struct ctq_error err = {0};
	struct ctq_gptq_hinv v;
	cr_assert_eq(ctq_gptq_hinv_init(&v, &h, 0.0, false, &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(v.n_dead, 1);
	cr_assert(v.dead[2] && !v.dead[0] && !v.dead[1]);
	ctq_gptq_hinv_free(&v);
	ctq_gptq_hessian_free(&h);
}

/* Gauss-Jordan inverse of A (n, n) into inv; A is overwritten. */
static void gj_inverse(double *A, int64_t n, double *inv)
{
	for (int64_t i = 0; i < n * n; i++)
		inv[i] = i % (n + 1) == 0 ? 1.0 : 0.0;
	for (int64_t c = 0; c < n; c++) {
		int64_t p = c;
		for (int64_t r = c + 1; r < n; r++)
			if (fabs(A[r * n + c]) > fabs(A[p * n + c]))
				p = r;
		for (int64_t j = 0; j < n; j++) {
			double t = A[c * n + j];
			A[c * n + j] = A[p * n + j], A[p * n + j] = t;
			t = inv[c * n + j];
			inv[c * n + j] = inv[p * n + j], inv[p * n + j] = t;
		}
		const double d = A[c * n + c];
		for (int64_t j = 0; j < n; j++)
			A[c * n + j] /= d, inv[c * n + j] /= d;
		for (int64_t r = 0; r < n; r++) {
			if (r == c)
				continue;
			const double f = A[r * n + c];
			for (int64_t j = 0; j < n; j++)
				A[r * n + j] -= f * A[c * n + j], inv[r * n + j] -= f * inv[c * n + j];
		}
	}
}

/* GPTQ column by column from its definition (Optimal Brain Quantization in
 * a fixed order): after rounding column c, the columns beyond it move by
 * -(w_c - q_c) [H_F^-1]_{c,j} / [H_F^-1]_{cc}, H_F the Hessian of the
 * columns not yet rounded, inverted afresh here. */
static void reference_gptq(const float *w, int64_t N, int64_t K, const struct ctq_gptq_hessian *h,
			   double damp, const float *scale, int8_t *q)
{
	double *H = malloc((size_t)(K * K) * sizeof *H);
	const double f = 2.0 / (double)h->n_samples;
	bool *dead = calloc((size_t)K, 1);
	for (int64_t i = 0; i < K; i++)
		for (int64_t j = 0; j < K; j++)
			H[i * K + j] = f * h->S[(i < j ? i : j) * K + (i < j ? j : i)];
	double mean = 0.0;
	for (int64_t i = 0; i < K; i++) {
		if (H[i * K + i] == 0.0)
			dead[i] = true, H[i * K + i] = 1.0;
		mean += H[i * K + i];
	}
	for (int64_t i = 0; i < K; i++)
		H[i * K + i] += damp * mean / (double)K;
	double *A = malloc((size_t)(K * K) * sizeof *A), *inv = malloc((size_t)(K * K) * sizeof *inv);
	double *wd = malloc((size_t)(N * K) * sizeof *wd);
	for (int64_t i = 0; i < N * K; i++)
		wd[i] = dead[i % K] ? 0.0 : (double)w[i];
	for (int64_t c = 0; c < K; c++) {
		const int64_t n = K - c;
		for (int64_t i = 0; i < n; i++)
			for (int64_t j = 0; j < n; j++)
				A[i * n + j] = H[(c + i) * K + c + j];
		gj_inverse(A, n, inv);
		for (int64_t r = 0; r < N; r++) {
			double *row = wd + r * K;
			const int8_t qi = ctq_quantize((float)row[c], scale[r]);
			q[r * K + c] = qi;
			const double e = row[c] - (double)qi * (double)scale[r];
			for (int64_t j = 1; j < n; j++)
				row[c + j] -= e * inv[j] / inv[0];
		}
	}
	free(H);
	free(dead);
	free(A);
	free(inv);
	free(wd);
}

Test(gptq, blocks_match_column_by_column_reference)
{
	const int64_t N = 6, K = 37, M = 80;
	float *x = malloc((size_t)(M * K) * sizeof *x), *w = malloc((size_t)(N * K) * sizeof *w);
	correlated(x, M, K, 5);
	for (int64_t t = 0; t < M; t++)
		x[t * K + 9] = 0.0f; /* a dead column among live ones */
	struct ctq_rng r;
	ctq_rng_seed(&r, 17);
	for (int64_t i = 0; i < N * K; i++)
		w[i] = (float)(0.1 * uni(&r));
	struct ctq_gptq_hessian h;
	hessian_of(&h, x, M, K, 16);
	int8_t *ref = malloc((size_t)(N * K)), *q = malloc((size_t)(N * K)), *qr = malloc((size_t)(N * K));
	float scale[6], sr[6];
	rtn(w, N, K, qr, sr);
	reference_gptq(w, N, K, &h, 0.01, sr, ref);
	const int64_t blocks[] = {1, 5, 128};
	for (size_t b = 0; b < sizeof blocks / sizeof *blocks; b++) {
		gptq(w, N, K, &h, 0.01, blocks[b], q, scale, NULL);
		cr_assert_eq(memcmp(scale, sr, sizeof sr), 0, "block %lld: scales differ from RTN's",
			     (long long)blocks[b]);
		for (int64_t i = 0; i < N * K; i++)
			cr_assert_eq(q[i], ref[i], "block %lld: q[%lld][%lld] %d, reference %d",
				     (long long)blocks[b], (long long)(i / K), (long long)(i % K), q[i], ref[i]);
	}
	int64_t differ = 0;
	for (int64_t i = 0; i < N * K; i++)
		differ += q[i] != qr[i];
	cr_assert(differ > N * K / 10, "GPTQ changed only %lld of %lld values from RTN", (long long)differ,
		  (long long)(N * K));
	for (int64_t n = 0; n < N; n++)
		cr_assert_eq(q[n * K + 9], 0, "dead column, row %lld: %d", (long long)n, q[n * K + 9]);
	free(x);
	free(w);
	free(ref);
	free(q);
	free(qr);
	ctq_gptq_hessian_free(&h);
}

/* Static activation ordering (llm-compressor 0.14's actorder "static" for
 * W8A8): GPTQ with actorder on (w, x) is GPTQ in column order on the
 * columns permuted by descending diag(H), un-permuted: the same bytes.
 * Channel energies differ (x's columns scaled 1..K/2) so the order is no
 * identity, and a dead column (diag 0) goes last. */
Test(gptq, actorder_static_is_column_order_on_permuted_columns)
{
	const int64_t N = 5, K = 29, M = 70;
	float *x = malloc((size_t)(M * K) * sizeof *x), *w = malloc((size_t)(N * K) * sizeof *w);
	float *xp = malloc((size_t)(M * K) * sizeof *xp), *wp = malloc((size_t)(N * K) * sizeof *wp);
	correlated(x, M, K, 23);
	for (int64_t t = 0; t < M; t++)
		for (int64_t k = 0; k < K; k++)
			x[t * K + k] *= k == 4 ? 0.0f : (float)(1 + (k * 7) % (K / 2));
	struct ctq_rng r;
	ctq_rng_seed(&r, 29);
	for (int64_t i = 0; i < N * K; i++)
		w[i] = (float)(0.1 * uni(&r));
	struct ctq_gptq_hessian h, hp;
	hessian_of(&h, x, M, K, 16);
	/* the order, from the diagonal (selection sort, descending, index order on ties) */
	int64_t perm[29];
	bool used[29] = {false};
	for (int64_t c = 0; c < K; c++) {
		int64_t best = -1;
		for (int64_t k = 0; k < K; k++)
			if (!used[k] && (best < 0 || h.S[k * K + k] > h.S[best * K + best]))
				best = k;
		used[best] = true;
		perm[c] = best;
	}
	cr_assert_eq(perm[K - 1], 4, "the dead column is rounded last");
	int64_t moved = 0;
	for (int64_t c = 0; c < K; c++)
		moved += perm[c] != c;
	cr_assert(moved > K / 2, "the order moves %lld columns", (long long)moved);
	for (int64_t t = 0; t < M; t++)
		for (int64_t c = 0; c < K; c++)
			xp[t * K + c] = x[t * K + perm[c]];
	for (int64_t n = 0; n < N; n++)
		for (int64_t c = 0; c < K; c++)
			wp[n * K + c] = w[n * K + perm[c]];
	hessian_of(&hp, xp, M, K, 16);
	int8_t q[5 * 29], qp[5 * 29], q0[5 * 29];
	float s[5], sp[5], s0[5];
	const int64_t blocks[] = {1, 7, 128};
	for (size_t b = 0; b < sizeof blocks / sizeof *blocks; b++) {
		gptq_ordered(w, N, K, &h, 0.01, blocks[b], true, q, s, NULL);
		gptq(wp, N, K, &hp, 0.01, blocks[b], qp, sp, NULL);
		cr_assert_eq(memcmp(s, sp, sizeof s), 0, "block %lld: scales", (long long)blocks[b]);
		for (int64_t n = 0; n < N; n++)
			for (int64_t c = 0; c < K; c++)
				cr_assert_eq(q[n * K + perm[c]], qp[n * K + c],
					     "block %lld: q[%lld][%lld] %d, permuted run %d", (long long)blocks[b],
					     (long long)n, (long long)perm[c], q[n * K + perm[c]], qp[n * K + c]);
	}
	gptq(w, N, K, &h, 0.01, 128, q0, s0, NULL);
	cr_assert(memcmp(q, q0, sizeof q) != 0, "the order changes no value: a vacuous test");
	free(x);
	free(w);
	free(xp);
	free(wp);
	ctq_gptq_hessian_free(&h);
	ctq_gptq_hessian_free(&hp);
}

Test(gptq, diagonal_hessian_writes_round_to_nearest)
{
	const int64_t N = 4, K = 9;
	float x[9 * 9] = {0}, w[4 * 9];
	for (int64_t k = 0; k < K; k++)
		x[k * K + k] = 1.0f + (float)k; /* uncorrelated channels, unequal energy */
	struct ctq_rng r;
	ctq_rng_seed(&r, 2);
	for (int64_t i = 0; i < N * K; i++)
		w[i] = (float)uni(&r);
	struct ctq_gptq_hessian h;
	hessian_of(&h, x, K, K, 4);
	int8_t q[4 * 9], qr[4 * 9];
	float s[4], sr[4];
	gptq(w, N, K, &h, 0.01, 4, q, s, NULL);
	rtn(w, N, K, qr, sr);
	cr_assert_eq(memcmp(q, qr, sizeof q), 0);
	cr_assert_eq(memcmp(s, sr, sizeof s), 0);
	ctq_gptq_hessian_free(&h);
}

Test(gptq, dampening_makes_singular_hessian_invertible)
{
	/* columns 0 and 1 always equal: H singular without dampening */
	const int64_t N = 3, K = 4, M = 12;
	float x[12 * 4], w[3 * 4];
	correlated(x, M, K, 9);
	for (int64_t t = 0; t < M; t++)
		x[t * K + 1] = x[t * K + 0];
	struct ctq_rng r;
	ctq_rng_seed(&r, 4);
	for (int64_t i = 0; i < N * K; i++)
		w[i] = (float)uni(&r);
	struct ctq_gptq_hessian h;
	hessian_of(&h, x, M, K, 12);
	int8_t q[12], qr[12];
	float s[3], sr[3];
	bool fb = false;
	gptq(w, N, K, &h, 0.0, 128, q, s, &fb);
	rtn(w, N, K, qr, sr);
	cr_assert(fb, "a singular Hessian without dampening should fall back to round to nearest");
	cr_assert_eq(memcmp(q, qr, sizeof q), 0);
	gptq(w, N, K, &h, 0.01, 128, q, s, &fb);
	cr_assert_not(fb, "dampening 0.01 should make the Hessian positive definite");
	cr_assert_neq(memcmp(q, qr, sizeof q), 0, "GPTQ left every value as RTN's");
	struct ctq_error err = {0};
	struct ctq_gptq_hinv v;
	cr_assert_eq(ctq_gptq_hinv_init(&v, &h, 1.5, false, &err), CTQ_ERR_USAGE);
	cr_assert_eq(ctq_gptq_hinv_init(&v, &h, -0.1, false, NULL), CTQ_ERR_USAGE);
	struct ctq_gptq_hessian empty;
	cr_assert_eq(ctq_gptq_hessian_init(&empty, K, NULL), CTQ_OK);
	cr_assert_eq(ctq_gptq_hinv_init(&v, &empty, 0.01, false, NULL), CTQ_ERR_USAGE);
	cr_assert_eq(ctq_gptq_hessian_init(&empty, 0, NULL), CTQ_ERR_USAGE);
	ctq_gptq_hessian_free(&empty);
	ctq_gptq_hessian_free(&h);
}

/* ||X (Ŵ - W)ᵀ||_F^2 over the calibration rows. */
static double out_err(const float *x, int64_t M, int64_t K, const float *w, const int8_t *q,
		      const float *s, int64_t N)
{
	double e = 0.0;
	for (int64_t t = 0; t < M; t++)
		for (int64_t n = 0; n < N; n++) {
			double y = 0.0;
			for (int64_t k = 0; k < K; k++)
				y += (double)x[t * K + k] * ((double)q[n * K + k] * s[n] - (double)w[n * K + k]);
			e += y * y;
		}
	return e;
}

Test(gptq, output_error_below_round_to_nearest_on_correlated_inputs)
{
	const int64_t N = 16, K = 200, M = 512; /* K over one block of 128 */
	float *x = malloc((size_t)(M * K) * sizeof *x), *w = malloc((size_t)(N * K) * sizeof *w);
	correlated(x, M, K, 21);
	struct ctq_rng r;
	ctq_rng_seed(&r, 23);
	for (int64_t i = 0; i < N * K; i++)
		w[i] = (float)(0.05 * uni(&r));
	struct ctq_gptq_hessian h;
	hessian_of(&h, x, M, K, 128);
	int8_t *q = malloc((size_t)(N * K)), *qr = malloc((size_t)(N * K));
	float s[16], sr[16];
	gptq(w, N, K, &h, CTQ_GPTQ_DEFAULT_DAMPENING, CTQ_GPTQ_DEFAULT_BLOCK, q, s, NULL);
	rtn(w, N, K, qr, sr);
	const double eg = out_err(x, M, K, w, q, s, N), er = out_err(x, M, K, w, qr, sr, N);
	cr_assert(eg < 0.5 * er, "GPTQ output error %.6g, RTN's %.6g: expected under half", eg, er);
	free(x);
	free(w);
	free(q);
	free(qr);
	ctq_gptq_hessian_free(&h);
}

Test(gptq, bad_shapes_and_values)
{
	struct ctq_gptq_hessian h;
	const float x[4] = {1, 0, 0, 1};
	hessian_of(&h, x, 2, 2, 2);
	struct ctq_gptq_hinv v;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_gptq_hinv_init(&v, &h, 0.01, false, &err), CTQ_OK);
	int8_t q[6];
	float s[2];
	double e2[2], w2[2];
	const float w3[6] = {1, 2, 3, 4, 5, 6}, wnan[4] = {1, NAN, 3, 4};
	cr_assert_eq(ctq_gptq_weight(w3, CTQ_DTYPE_F32, 2, 3, &v, 128, "w", q, s, e2, w2, NULL, &err),
		     CTQ_ERR_USAGE);
	cr_assert_eq(ctq_gptq_weight(wnan, CTQ_DTYPE_F32, 2, 2, &v, 128, "w", q, s, e2, w2, NULL, NULL),
		     CTQ_ERR_CHECKPOINT);
	cr_assert_eq(ctq_gptq_weight(wnan, CTQ_DTYPE_F32, 2, 2, &v, 0, "w", q, s, e2, w2, NULL, NULL),
		     CTQ_ERR_USAGE);
	ctq_gptq_hinv_free(&v);
	ctq_gptq_hessian_free(&h);
}

/* ---- layer-wise calibration on the tiny outlier model --------------------- */

struct tiny {
	char root[64], bf16[96], gptq[96];
};

static void tiny_make(struct tiny *f)
{
	snprintf(f->root, sizeof f->root, "/tmp/ctq-gptq-XXXXXX");
	cr_assert(mkdtemp(f->root));
	snprintf(f->bf16, sizeof f->bf16, "%s/bf16", f->root);
	snprintf(f->gptq, sizeof f->gptq, "%s/gptq", f->root);
	struct ctq_synth_spec s;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_synth_spec_init(&s, "qwen3", "tiny", &err), CTQ_OK, "%s", err.message);
	s.vocab_size = 2048;
	s.outliers = true;
	s.seed = 3;
	cr_assert_eq(ctq_synth_write(&s, f->bf16, 0, NULL, NULL, &err), CTQ_OK, "%s", err.message);
	char *data = NULL, *dst = ctq_path_join(f->bf16, "tokenizer.json");
	size_t n = 0;
	cr_assert_eq(ctq_file_read(TOKENIZER, (size_t)1 << 26, &data, &n, &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(ctq_file_write_atomic(dst, data, n, &err), CTQ_OK, "%s", err.message);
	free(data);
	free(dst);
}

static int run_quantize(const char *const *args)
{
	char *argv[40];
	int argc = 0;
	argv[argc++] = (char *)"quantize";
	for (; *args; args++)
		argv[argc++] = (char *)*args;
	argv[argc] = NULL;
	return ctq_cmd_quantize(argc, argv);
}

/* Every linear input of every layer of a run, concatenated over windows. */
struct inputs {
	int64_t layers;
	float *x[8][CTQ_OBSERVE_N_SITES]; /* (rows, K) */
	int64_t rows[8][CTQ_OBSERVE_N_SITES], K[8][CTQ_OBSERVE_N_SITES];
};

static void keep_input(void *ctx, int64_t layer, enum ctq_observe_site site, const float *x,
		       int64_t M, int64_t K)
{
	struct inputs *in = ctx;
	if (layer >= 8)
		return;
	float **p = &in->x[layer][site];
	int64_t *r = &in->rows[layer][site];
	*p = realloc(*p, (size_t)((*r + M) * K) * sizeof **p);
	memcpy(*p + *r * K, x, (size_t)(M * K) * sizeof *x);
	*r += M;
	in->K[layer][site] = K;
}

/* ||X (Ŵ - W)ᵀ||² for the linear `name` with Ŵ = q * s (N, K). */
static double module_err(const struct ctq_checkpoint *ck, const char *name, const float *x,
			 int64_t rows, const int8_t *q, const float *s)
{
	char wn[256];
	snprintf(wn, sizeof wn, "%s.weight", name);
	const struct ctq_st_tensor *t = ctq_checkpoint_find(ck, wn, NULL);
	cr_assert(t && t->ndim == 2, "%s", wn);
	const int64_t N = t->shape[0], K = t->shape[1];
	float *w = malloc((size_t)(N * K) * sizeof *w);
	cr_assert(ctq_convert_to_f32(t->data, t->dtype, (size_t)(N * K), w));
	double e = 0.0;
	for (int64_t r = 0; r < rows; r++)
		for (int64_t n = 0; n < N; n++) {
			double y = 0.0;
			for (int64_t k = 0; k < K; k++)
				y += (double)x[r * K + k] * ((double)q[n * K + k] * s[n] - (double)w[n * K + k]);
			e += y * y;
		}
	free(w);
	return e;
}

Test(calib_gptq, each_linear_beats_round_to_nearest_on_its_inputs, .timeout = 180)
{
	struct tiny f;
	tiny_make(&f);
	struct ctq_error err = {0};
	int32_t *ids = NULL;
	int64_t n_text = 0;
	const int64_t n = 8, len = 64;
	cr_assert_eq(ctq_calib_windows(f.bf16, CALIB_TEXT, n, len, 0, &ids, &n_text, &err), CTQ_OK, "%s",
		     err.message);
	const struct ctq_calib_gptq_options o = {.dampening_frac = CTQ_GPTQ_DEFAULT_DAMPENING,
						 .block_size = CTQ_GPTQ_DEFAULT_BLOCK};
	struct ctq_calib_gptq_result res;
	cr_assert_eq(ctq_calib_gptq(f.bf16, NULL, 0, ids, n, len, &o, &res, &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(res.n_mods, 14, "%zu modules", res.n_mods); /* 2 layers x 7 */
	cr_assert_eq(res.n_tokens, n * len);
	cr_assert_eq(res.n_fallback, 0);
	/* the inputs each layer sees with the GPTQ weights in place: the BF16
	 * model's observer, each linear's weight replaced by its rounded one
	 * dequantized, as the layer-wise run propagated */
	struct inputs in;
	memset(&in, 0, sizeof in);
	struct ctq_model m;
	const struct ctq_model_options mo = {
		.dir = f.bf16, .backend = "reference", .tp = 1,
		.limits = {.max_slots = 1, .max_len = len, .max_tokens = len, .no_graphs = true,
			   .observe = keep_input, .observe_ctx = &in}};
	cr_assert_eq(ctq_model_open(&m, &mo, &err), CTQ_OK, "%s", err.message);
	static const enum ctq_observe_site site_of[CTQ_HF_LINEARS] = {
		CTQ_OBSERVE_QKV, CTQ_OBSERVE_QKV, CTQ_OBSERVE_QKV, CTQ_OBSERVE_O,
		CTQ_OBSERVE_GATE_UP, CTQ_OBSERVE_GATE_UP, CTQ_OBSERVE_DOWN};
	for (size_t i0 = 0; i0 < res.n_mods;) {
		/* the members of one fused linear: consecutive, one site */
		size_t i1 = i0 + 1;
		while (i1 < res.n_mods && i1 % CTQ_HF_LINEARS &&
		       site_of[i1 % CTQ_HF_LINEARS] == site_of[i0 % CTQ_HF_LINEARS])
			i1++;
		int64_t rows = 0;
		for (size_t i = i0; i < i1; i++)
			rows += res.mods[i].N;
		const int64_t K = res.mods[i0].K;
		uint16_t *dq = malloc((size_t)(rows * K) * sizeof *dq), *p = dq;
		for (size_t i = i0; i < i1; i++) {
			const struct ctq_calib_gptq_module *g = &res.mods[i];
			cr_assert_eq(g->dtype, CTQ_DTYPE_BF16);
			for (int64_t k = 0; k < g->N * K; k++)
				*p++ = ctq_f32_to_bf16((float)g->q[k] *
						       ctq_bf16_to_f32(((const uint16_t *)g->scale)[k / K]));
		}
		cr_assert_eq(ctq_runner_set_dense(&m.r[0], (int64_t)(i0 / CTQ_HF_LINEARS),
						  site_of[i0 % CTQ_HF_LINEARS], dq, &err),
			     CTQ_OK, "%s", err.message);
		free(dq);
		i0 = i1;
	}
	int32_t slot[64] = {0}, pos[64];
	for (int64_t t = 0; t < len; t++)
		pos[t] = (int32_t)t;
	for (int64_t w = 0; w < n; w++)
		cr_assert_eq(ctq_model_forward(&m, ids + w * len, slot, pos, len, NULL, 0, NULL, &err), CTQ_OK,
			     "%s", err.message);
	ctq_model_close(&m);
	struct ctq_checkpoint ck;
	cr_assert_eq(ctq_checkpoint_open(&ck, f.bf16, &err), CTQ_OK, "%s", err.message);
	for (size_t i = 0; i < res.n_mods; i++) {
		const struct ctq_calib_gptq_module *g = &res.mods[i];
		const int64_t l = (int64_t)(i / CTQ_HF_LINEARS);
		const enum ctq_observe_site s = site_of[i % CTQ_HF_LINEARS];
		cr_assert_eq(in.rows[l][s], n * len, "%s: %lld rows observed", g->name, (long long)in.rows[l][s]);
		cr_assert_eq(in.K[l][s], g->K);
		char wn[256];
		snprintf(wn, sizeof wn, "%s.weight", g->name);
		const struct ctq_st_tensor *t = ctq_checkpoint_find(&ck, wn, NULL);
		cr_assert(t);
		int8_t *qr = malloc((size_t)(g->N * g->K));
		uint16_t *sr = malloc((size_t)g->N * 2);
		float *srf = malloc((size_t)g->N * sizeof *srf), *sgf = malloc((size_t)g->N * sizeof *sgf);
		double *e2 = malloc((size_t)g->N * sizeof *e2), *w2 = malloc((size_t)g->N * sizeof *w2);
		cr_assert_eq(ctq_quantize_weight(t->data, t->dtype, g->N, g->K, qr, sr, e2, w2), -1);
		for (int64_t r = 0; r < g->N; r++) {
			srf[r] = ctq_bf16_to_f32(sr[r]);
			sgf[r] = ctq_bf16_to_f32(((const uint16_t *)g->scale)[r]);
			cr_assert_eq(sr[r], ((const uint16_t *)g->scale)[r], "%s row %lld: scale differs from RTN's",
				     g->name, (long long)r);
		}
		const double eg = module_err(&ck, g->name, in.x[l][s], in.rows[l][s], g->q, sgf);
		const double er = module_err(&ck, g->name, in.x[l][s], in.rows[l][s], qr, srf);
		cr_log_info("%s: output error GPTQ %.4g, RTN %.4g (%.2fx)", g->name, eg, er, eg / er);
		if (s == CTQ_OBSERVE_QKV) {
			/* q/k/v's inputs depend only on the layers before, rounded
			 * when layer l calibrated: the layer-wise run saw these
			 * very rows, so GPTQ on them gives the same bytes */
			struct ctq_gptq_hessian h;
			hessian_of(&h, in.x[l][s], in.rows[l][s], g->K, len);
			struct ctq_gptq_hinv v;
			cr_assert_eq(ctq_gptq_hinv_init(&v, &h, CTQ_GPTQ_DEFAULT_DAMPENING, false, &err), CTQ_OK);
			cr_assert_eq(ctq_gptq_weight(t->data, t->dtype, g->N, g->K, &v, CTQ_GPTQ_DEFAULT_BLOCK,
						     g->name, qr, sr, e2, w2, NULL, &err),
				     CTQ_OK, "%s", err.message);
			cr_expect_eq(memcmp(qr, g->q, (size_t)(g->N * g->K)), 0,
				     "%s: GPTQ on the full forward's inputs differs from the layer-wise run's",
				     g->name);
			ctq_gptq_hinv_free(&v);
			ctq_gptq_hessian_free(&h);
		}
		cr_expect(er > 0.0 && eg < er, "%s: GPTQ output error %.6g not below RTN's %.6g", g->name, eg, er);
		free(qr), free(sr), free(srf), free(sgf), free(e2), free(w2);
	}
	ctq_checkpoint_close(&ck);
	for (int l = 0; l < 8; l++)
		for (int s = 0; s < CTQ_OBSERVE_N_SITES; s++)
			free(in.x[l][s]);
	ctq_calib_gptq_result_free(&res);
	ctq_free(ids);
	ctq_remove_tree(f.root);
}

Test(calib_gptq, quantize_writes_gptq_checkpoint_and_recipe, .timeout = 180)
{
	struct tiny f;
	tiny_make(&f);
	char g2[128];
	snprintf(g2, sizeof g2, "%s/gptq2", f.root);
	const char *a[] = {f.bf16, f.gptq, "--quiet", "--recipe", "smoothquant+gptq", "--calib", CALIB_TEXT,
			   "--calib-samples", "8", "--calib-len", "64", "--dampening-frac", "0.02",
			   "--block-size", "16", NULL};
	cr_assert_eq(run_quantize(a), CTQ_EXIT_OK);
	const char *a2[] = {f.bf16, g2, "--quiet", "--recipe", "smoothquant+gptq", "--calib", CALIB_TEXT,
			    "--calib-samples", "8", "--calib-len", "64", "--dampening-frac", "0.02",
			    "--block-size", "16", NULL};
	cr_assert_eq(run_quantize(a2), CTQ_EXIT_OK);
	struct ctq_error err = {0};
	char *p1 = ctq_path_join(f.gptq, "model.safetensors"), *p2 = ctq_path_join(g2, "model.safetensors");
	char *d1 = NULL, *d2 = NULL, *text = NULL;
	size_t n1 = 0, n2 = 0, n = 0;
	cr_assert_eq(ctq_file_read(p1, 1 << 26, &d1, &n1, &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(ctq_file_read(p2, 1 << 26, &d2, &n2, &err), CTQ_OK, "%s", err.message);
	cr_expect(n1 == n2 && !memcmp(d1, d2, n1), "two runs with one seed differ");
	char *ry = ctq_path_join(f.gptq, "recipe.yaml");
	cr_assert_eq(ctq_file_read(ry, 1 << 20, &text, &n, &err), CTQ_OK, "%s", err.message);
	cr_expect(strstr(text, "# written by ctq quantize --recipe smoothquant+gptq; calibration: 8 window(s)"),
		  "%s", text);
	cr_expect(strstr(text, ", on the reference backend\n"), "%s", text);
	cr_expect(strstr(text, "    SmoothQuantModifier:\n      smoothing_strength: 0.8\n"), "%s", text);
	cr_expect(strstr(text, "    GPTQModifier:\n      targets: [Linear]\n      ignore: ['lm_head']\n"
			       "      scheme: W8A8\n      block_size: 16\n      dampening_frac: 0.02\n"
			       "      actorder: static\n"),
		  "%s", text);
	cr_expect_null(strstr(text, "QuantizationModifier"), "%s", text);
	free(text), free(ry), free(d1), free(d2), free(p1), free(p2);
	/* --save-calib: the windows, one a line; --save-smoothed: the smoothed
	 * model the first run quantized (its quantization is the same bytes) */
	char wf[160], sm[128], g3[128];
	snprintf(wf, sizeof wf, "%s/windows.txt", f.root);
	snprintf(sm, sizeof sm, "%s/smoothed", f.root);
	snprintf(g3, sizeof g3, "%s/gptq3", f.root);
	const char *a4[] = {f.bf16, g3, "--quiet", "--recipe", "smoothquant+gptq", "--calib", CALIB_TEXT,
			    "--calib-samples", "8", "--calib-len", "64", "--dampening-frac", "0.02",
			    "--block-size", "16", "--save-calib", wf, "--save-smoothed", sm, NULL};
	cr_assert_eq(run_quantize(a4), CTQ_EXIT_OK);
	cr_assert_eq(ctq_file_read(wf, 1 << 20, &text, &n, &err), CTQ_OK, "%s", err.message);
	int lines = 0, ids_n = 0;
	for (size_t i = 0; i < n; i++) {
		lines += text[i] == '\n';
		ids_n += text[i] != ' ' && text[i] != '\n' && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\n');
	}
	cr_expect(lines == 8 && ids_n == 8 * 64, "%d window lines, %d ids", lines, ids_n);
	free(text);
	char *ps = ctq_path_join(sm, "model.safetensors"), *pc = ctq_path_join(sm, "config.json");
	cr_expect(ctq_path_exists(ps) && ctq_path_exists(pc), "no smoothed checkpoint in %s", sm);
	free(ps), free(pc);
	p1 = ctq_path_join(f.gptq, "model.safetensors"), p2 = ctq_path_join(g3, "model.safetensors");
	cr_assert_eq(ctq_file_read(p1, 1 << 26, &d1, &n1, &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(ctq_file_read(p2, 1 << 26, &d2, &n2, &err), CTQ_OK, "%s", err.message);
	cr_expect(n1 == n2 && !memcmp(d1, d2, n1), "--save-calib / --save-smoothed changed the checkpoint");
	free(d1), free(d2), free(p1), free(p2);
	/* the checkpoint runs as any W8A8 one */
	struct ctq_model m;
	const struct ctq_model_options mo = {
		.dir = f.gptq, .backend = "reference", .tp = 1,
		.limits = {.max_slots = 1, .max_len = 8, .max_tokens = 8, .no_graphs = true}};
	cr_assert_eq(ctq_model_open(&m, &mo, &err), CTQ_OK, "%s", err.message);
	cr_expect_eq(m.n_quantized, 14);
	ctq_model_close(&m);
	/* ignored linears stay unquantized (and keep their weights while the
	 * later layers calibrate) */
	char ig[128];
	snprintf(ig, sizeof ig, "%s/ignored", f.root);
	const char *a3[] = {f.bf16, ig, "--quiet", "--recipe", "gptq", "--calib", CALIB_TEXT,
			    "--calib-samples", "4", "--calib-len", "32", "--ignore", "re:.*o_proj", NULL};
	cr_assert_eq(run_quantize(a3), CTQ_EXIT_OK);
	const struct ctq_model_options mi = {
		.dir = ig, .backend = "reference", .tp = 1,
		.limits = {.max_slots = 1, .max_len = 8, .max_tokens = 8, .no_graphs = true}};
	cr_assert_eq(ctq_model_open(&m, &mi, &err), CTQ_OK, "%s", err.message);
	cr_expect_eq(m.n_quantized, 12);
	cr_expect_eq(m.n_dense, 2 + 1, "two o_proj and lm_head");
	ctq_model_close(&m);
	/* bad options: exit 2, no OUT */
	char out[128];
	snprintf(out, sizeof out, "%s/out", f.root);
	const struct {
		const char *id;
		const char *args[12];
	} bad[] = {
		{"gptq-no-calib", {f.bf16, out, "--recipe", "gptq"}},
		{"dampening-above-1", {f.bf16, out, "--recipe", "gptq", "--calib", CALIB_TEXT, "--dampening-frac", "1.5"}},
		{"dampening-not-a-number", {f.bf16, out, "--recipe", "gptq", "--calib", CALIB_TEXT, "--dampening-frac", "x"}},
		{"block-size-0", {f.bf16, out, "--recipe", "gptq", "--calib", CALIB_TEXT, "--block-size", "0"}},
		{"block-size-with-rtn", {f.bf16, out, "--block-size", "64"}},
		{"dampening-with-smoothquant", {f.bf16, out, "--recipe", "smoothquant", "--calib", CALIB_TEXT,
						"--dampening-frac", "0.1"}},
		{"gptq-weight-bits", {f.bf16, out, "--recipe", "gptq", "--calib", CALIB_TEXT, "--weight-bits", "4"}},
		{"strength-with-gptq", {f.bf16, out, "--recipe", "gptq", "--calib", CALIB_TEXT,
					"--smoothing-strength", "0.5"}},
		{"actorder-unknown", {f.bf16, out, "--recipe", "gptq", "--calib", CALIB_TEXT, "--actorder", "weight"}},
		{"actorder-with-rtn", {f.bf16, out, "--actorder", "none"}},
		{"save-smoothed-with-gptq", {f.bf16, out, "--recipe", "gptq", "--calib", CALIB_TEXT,
					     "--save-smoothed", g2}},
		{"save-smoothed-is-out", {f.bf16, out, "--recipe", "smoothquant", "--calib", CALIB_TEXT,
					  "--save-smoothed", out}},
		{"save-calib-with-rtn", {f.bf16, out, "--save-calib", g2}},
		{"calib-backend-unknown", {f.bf16, out, "--recipe", "gptq", "--calib", CALIB_TEXT,
					   "--calib-backend", "tpu"}},
		{"calib-backend-with-rtn", {f.bf16, out, "--calib-backend", "reference"}},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		const char *args[16] = {0};
		size_t k = 0;
		for (; bad[i].args[k]; k++)
			args[k] = bad[i].args[k];
		args[k++] = "--quiet";
		args[k] = NULL;
		cr_expect_eq(run_quantize(args), CTQ_EXIT_USAGE, "%s", bad[i].id);
		cr_expect_not(ctq_path_exists(out), "%s created OUT", bad[i].id);
	}
	ctq_remove_tree(f.root);
}
