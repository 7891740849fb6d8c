/* Criterion tests for checkpoint/gptq.h. Checked: the Hessian sums against
 * a naive 2/n sum of x xᵀ (sizes off the tile); a 3-column case worked by
 * hand (error propagated into the next column, a dead column dropped); the
 * block-wise Cholesky form against an independent column-by-column
 * reference that inverts each trailing sub-Hessian by Gauss-Jordan (block
 * sizes 1, 5 and 128 give the same bytes); a diagonal Hessian writes the
 * round-to-nearest checkpoint byte for byte; dampening (a singular Hessian
 * without it falls back to round to nearest, with it does not; out of
 * range is refused); and GPTQ's output error on correlated inputs is below
 * round to nearest's. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/dtype.h"
#include "core/numerics.h"
#include "core/rng.h"
#include "checkpoint/gptq.h"
#include "checkpoint/quantize.h"

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

static void gptq(const float *w, int64_t N, int64_t K, const struct ctq_gptq_hessian *h,
		 double damp, int64_t block, int8_t *q, float *scale, bool *fallback)
{
	struct ctq_error err = {0};
	struct ctq_gptq_hinv v;
	cr_assert_eq(ctq_gptq_hinv_init(&v, h, damp, &err), CTQ_OK, "%s", err.message);
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
	cr_assert_eq(ctq_gptq_hinv_init(&v, &h, 0.0, &err), CTQ_OK, "%s", err.message);
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
	cr_assert_eq(ctq_gptq_hinv_init(&v, &h, 1.5, &err), CTQ_ERR_USAGE);
	cr_assert_eq(ctq_gptq_hinv_init(&v, &h, -0.1, NULL), CTQ_ERR_USAGE);
	struct ctq_gptq_hessian empty;
	cr_assert_eq(ctq_gptq_hessian_init(&empty, K, NULL), CTQ_OK);
	cr_assert_eq(ctq_gptq_hinv_init(&v, &empty, 0.01, NULL), CTQ_ERR_USAGE);
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
	cr_assert_eq(ctq_gptq_hinv_init(&v, &h, 0.01, &err), CTQ_OK);
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
