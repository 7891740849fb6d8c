/* Criterion tests for reference/ref_ops and core/numerics.h: the formulas
 * of DESIGN.md "Numerics" at their edges. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/numerics.h"
#include "core/rng.h"
#include "reference/ref_ops.h"
#include "reference/ref_threads.h"

Test(numerics, quantize_rounds_ties_to_even)
{
	/* s = 1 makes x / s exact; halves go to the even neighbour. */
	static const struct { float x; int q; } v[] = {
		{0.5f, 0}, {1.5f, 2}, {2.5f, 2}, {-0.5f, 0}, {-1.5f, -2}, {-2.5f, -2},
		{126.5f, 126}, {127.4f, 127}, {200.0f, 127}, {-127.5f, -128}, {-500.0f, -128},
	};
	for (size_t i = 0; i < sizeof v / sizeof *v; i++)
		cr_expect_eq(ctq_quantize(v[i].x, 1.0f), v[i].q, "x=%g", (double)v[i].x);
}

Test(numerics, zero_scale_and_nan)
{
	cr_expect_eq(ctq_quantize(5.0f, 0.0f), 0);
	cr_expect_eq(ctq_quantize(NAN, 1.0f), 0);
	cr_expect_eq(ctq_quantize(1.0f, NAN), 0);
	cr_expect_eq(ctq_quantize(INFINITY, INFINITY), 0);
}

Test(numerics, amax_is_nan_sticky_in_any_order)
{
	float a = 0;
	a = ctq_amax_update(a, 1.0f);
	a = ctq_amax_update(a, NAN);
	a = ctq_amax_update(a, 5.0f);
	cr_expect(isnan(a));
	float b = ctq_amax_update(ctq_amax_update(0.0f, -3.0f), 2.0f);
	cr_expect_eq(b, 3.0f);
	/* combining partial maxima (a GPU tree) gives the same bits */
	cr_expect(isnan(ctq_amax_update(3.0f, NAN)));
	cr_expect(isnan(ctq_amax_update(NAN, 3.0f)));
}

/* The GPU kernels take the absolute maximum of bf16 values as an integer
 * max of h & 0x7fff (kernels/quant.cu amax_bits). That is the sticky-NaN
 * ctq_amax_update exactly when |h| as a float is strictly increasing in
 * h & 0x7fff up to Inf (0x7f80) and every pattern above is a NaN. */
Test(numerics, bf16_abs_orders_like_its_bits)
{
	float prev = -1.0f;
	for (uint32_t h = 0; h <= 0x7fff; h++) {
		const float a = fabsf(ctq_bf16_to_f32((uint16_t)(h | 0x8000)));
		if (h <= 0x7f80) {
			cr_assert(a > prev, "bf16 %04x: |x| = %a not above %a", (unsigned)h, (double)a,
				  (double)prev);
			prev = a;
		} else {
			cr_assert(isnan(a), "bf16 %04x is not a NaN", (unsigned)h);
		}
		cr_assert_eq(ctq_f32_bits(a), ctq_f32_bits(ctq_bf16_to_f32((uint16_t)h)));
	}
}

/* ---- ctq_quantize_fast == ctq_quantize -------------------------------- */

/* Row scales for the fast-quantize checks: ctq_act_scale of amax drawn from
 * Gaussians over 2^-40 .. 2^40, of random finite bf16 patterns, of bf16
 * values that are then also quantized (x / s lands on +-127), the
 * subnormal and overflow edges of 1 / s, and scales that never come from
 * ctq_act_scale (0, negative, Inf, NaN, huge, subnormal). */
#define FAST_SCALES 560

static int fast_scales(float *s)
{
	static const uint16_t edge_amax[] = {
		0x0001, 0x0002, 0x007f, 0x0080, 0x0081, 0x0100, 0x0300, 0x0380, 0x0381, 0x03c0,
		0x0400, 0x0480, 0x3f80, 0x42fe, 0x4300, 0x7f00, 0x7f7f, 0x7f80, 0x7fc0,
	};
	static const float direct[] = {
		0.0f, -0.0f, -1.0f, INFINITY, NAN, 0x1p126f, 0x1p127f, 0x1.fffffep127f,
		0x1p-127f, 0x1p-128f, 0x1p-129f, 0x1p-140f, 0x1p-149f, 1.0f, 3.0f, 1.0f / 3.0f,
	};
	struct ctq_rng r;
	ctq_rng_seed(&r, 20240601);
	int n = 0;
	for (size_t i = 0; i < sizeof edge_amax / sizeof *edge_amax; i++)
		s[n++] = ctq_act_scale(ctq_bf16_to_f32(edge_amax[i]));
	for (size_t i = 0; i < sizeof direct / sizeof *direct; i++)
		s[n++] = direct[i];
	for (int i = 0; i < 200; i++) {
		const float a = fabsf((float)ldexp(ctq_rng_normal(&r), (int)ctq_rng_below(&r, 81) - 40));
		s[n++] = ctq_act_scale(ctq_bf16_to_f32(ctq_f32_to_bf16(a)));
	}
	for (int i = 0; i < 125; i++) {
		const uint16_t h = (uint16_t)ctq_rng_below(&r, 0x7f80); /* finite, >= 0 */
		s[n++] = ctq_act_scale(ctq_bf16_to_f32(h));
	}
	/* amax = |x| for a bf16 x of the sweep: x / s is 127 up to rounding */
	while (n < FAST_SCALES) {
		const uint16_t h = (uint16_t)(0x3000 + ctq_rng_below(&r, 0x1800));
		s[n++] = ctq_act_scale(ctq_bf16_to_f32(h));
	}
	return n;
}

/* The fast formula with the boundary guard CTQ_QUANT_FAST_TOL replaced by
 * tol: tol = 0 is what the guard protects against, and the targeted cases
 * below must catch it (a test that cannot fail is a defect). */
static int8_t quantize_fast_tol(float x, float s, float inv, float tol)
{
	const float y = x * inv;
	const float r = (y + 0x1.8p23f) - 0x1.8p23f;
	const float d = 0.5f - fabsf(y - r);
	if (!(d > tol && fabsf(y) < 127.5f))
		return ctq_quantize(x, s);
	return (int8_t)r;
}

Test(numerics, quantize_fast_equals_quantize_for_every_bf16)
{
	float s[FAST_SCALES];
	const int ns = fast_scales(s);
	long fast_rows = 0;
	for (int i = 0; i < ns; i++) {
		const float inv = ctq_quantize_inv(s[i]);
		fast_rows += !isnan(inv);
		for (uint32_t h = 0; h < 0x10000; h++) {
			const float x = ctq_bf16_to_f32((uint16_t)h);
			const int8_t f = ctq_quantize_fast(x, s[i], inv), e = ctq_quantize(x, s[i]);
			if (f != e)
				cr_assert_fail("quantize_fast x=%a (bf16 %04x) s=%a inv=%a: %d, exact %d",
					       (double)x, (unsigned)h, (double)s[i], (double)inv, f, e);
		}
	}
	/* most scales take the fast formula; the edges (0, NaN, tiny) do not */
	cr_assert_gt(fast_rows, ns - 40, "only %ld of %d scales use the fast formula", fast_rows, ns);
	cr_assert_lt(fast_rows, ns, "no scale exercises the exact-row fallback");
}

Test(numerics, quantize_fast_at_half_integers)
{
	float s[FAST_SCALES];
	const int ns = fast_scales(s);
	long cases = 0, wrong_without_guard = 0;
	for (int i = 0; i < ns; i++) {
		const float inv = ctq_quantize_inv(s[i]);
		for (int n = -131; n <= 131; n++) {
			/* x near (n + 1/2) s, so that x / s is at or beside a tie,
			 * and its float and bf16 neighbours */
			const float x0 = (float)(((double)n + 0.5) * (double)s[i]);
			float xs[1 + 2 * 6 + 5];
			int nx = 0;
			float up = x0, down = x0;
			xs[nx++] = x0;
			for (int k = 0; k < 6; k++) {
				up = nextafterf(up, INFINITY);
				down = nextafterf(down, -INFINITY);
				xs[nx++] = up;
				xs[nx++] = down;
			}
			const uint16_t b = ctq_f32_to_bf16(x0);
			for (int k = -2; k <= 2; k++)
				xs[nx++] = ctq_bf16_to_f32((uint16_t)(b + k));
			for (int j = 0; j < nx; j++) {
				const float x = xs[j];
				const int8_t f = ctq_quantize_fast(x, s[i], inv), e = ctq_quantize(x, s[i]);
				cases++;
				if (f != e)
					cr_assert_fail("quantize_fast x=%a s=%a inv=%a (n=%d): %d, exact %d",
						       (double)x, (double)s[i], (double)inv, n, f, e);
				if (!isnan(inv))
					wrong_without_guard += quantize_fast_tol(x, s[i], inv, 0.0f) != e;
			}
		}
	}
	/* the cases reach the boundary: without the guard some would be wrong */
	cr_assert_gt(wrong_without_guard, 0,
		     "no case in %ld would fail with CTQ_QUANT_FAST_TOL = 0: vacuous", cases);
}

Test(numerics, epilogue_rounds_each_step)
{
	/* acc * sa * sw + bias computed with separate roundings must equal the
	 * float chain, not a fused multiply-add. */
	int32_t acc = 123456789;
	float sa = 0.0123456f, sw = 0.000987654f, bias = 0.3333333f;
	volatile float t = (float)acc;
	t = t * sa;
	t = t * sw;
	t = t + bias;
	cr_expect_eq(ctq_w8a8_epilogue_f32(acc, sa, sw, bias), (float)t);
	cr_expect_eq(ctq_w8a8_epilogue(acc, sa, sw, bias), ctq_f32_to_bf16((float)t));
}

Test(ref_ops, zero_row_gives_zero_scale_and_bias_output)
{
	uint16_t x[2 * 4] = {0};
	for (int k = 0; k < 4; k++)
		x[4 + k] = ctq_f32_to_bf16((float)(k + 1));
	int8_t q[8];
	float s[2];
	ctq_ref_quantize_bf16(x, 2, 4, q, s);
	cr_expect_eq(s[0], 0.0f);
	for (int k = 0; k < 4; k++)
		cr_expect_eq(q[k], 0);
	cr_expect_eq(s[1], 4.0f / 127.0f);
	cr_expect_eq(q[7], 127);
	cr_expect_eq(q[4], (int8_t)rintf(1.0f / (4.0f / 127.0f)));
	int8_t w[4] = {1, 2, 3, 4};
	int32_t acc[2];
	struct ctq_error err = {0};
	cr_assert_eq(ctq_ref_gemm_i8(q, w, 2, 1, 4, acc, &err), CTQ_OK);
	cr_expect_eq(acc[0], 0);
	float sw = 0.5f, bias = 1.25f;
	uint16_t y[2];
	ctq_ref_w8a8_epilogue(acc, s, &sw, &bias, 2, 1, y);
	cr_expect_eq(ctq_bf16_to_f32(y[0]), 1.25f);
}

Test(ref_ops, nan_or_inf_row_poisons_the_output)
{
	uint16_t x[3] = {ctq_f32_to_bf16(1.0f), 0x7fc0, ctq_f32_to_bf16(2.0f)};
	int8_t q[3];
	float s;
	ctq_ref_quantize_bf16(x, 1, 3, q, &s);
	cr_expect(isnan(s));
	int8_t w[3] = {1, 1, 1};
	int32_t acc;
	struct ctq_error err = {0};
	ctq_ref_gemm_i8(q, w, 1, 1, 3, &acc, &err);
	float sw = 1.0f;
	uint16_t y;
	ctq_ref_w8a8_epilogue(&acc, &s, &sw, NULL, 1, 1, &y);
	cr_expect(isnan(ctq_bf16_to_f32(y)));
	x[1] = 0x7f80; /* +Inf */
	ctq_ref_quantize_bf16(x, 1, 3, q, &s);
	cr_expect(isinf(s));
	ctq_ref_gemm_i8(q, w, 1, 1, 3, &acc, &err);
	ctq_ref_w8a8_epilogue(&acc, &s, &sw, NULL, 1, 1, &y);
	cr_expect(isnan(ctq_bf16_to_f32(y)), "0 * Inf must be NaN, got %g", (double)ctq_bf16_to_f32(y));
}

Test(ref_ops, int32_exact_at_extremes_and_k_bound)
{
	enum { K = 9728 };
	static int8_t q[K], w[K];
	for (int k = 0; k < K; k++) {
		q[k] = -128;
		w[k] = -128 + (k & 1) * 255; /* alternating -128, 127 */
	}
	int32_t acc;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_ref_gemm_i8(q, w, 1, 1, K, &acc, &err), CTQ_OK);
	int64_t want = 0;
	for (int k = 0; k < K; k++)
		want += (int64_t)q[k] * w[k];
	cr_expect_eq(acc, (int32_t)want);
	cr_expect_eq(ctq_ref_gemm_i8(q, w, 1, 1, CTQ_K_MAX + 1, &acc, &err), CTQ_ERR_USAGE);
}

Test(ref_ops, weight_rows_quantized_with_the_stored_bf16_scale)
{
	float w[2 * 3] = {0.1f, -0.3f, 0.25f, 0, 0, 0};
	int8_t q[6];
	uint16_t s[2];
	ctq_ref_quantize_weight_rows(w, 2, 3, q, s);
	float sc = ctq_bf16_to_f32(s[0]);
	cr_expect_eq(s[0], ctq_f32_to_bf16(0.3f / 127.0f));
	for (int k = 0; k < 3; k++)
		cr_expect_eq(q[k], ctq_quantize(w[k], sc));
	cr_expect_eq(s[1], ctq_f32_to_bf16(CTQ_WEIGHT_SCALE_MIN), "an all-zero row keeps a positive scale");
	cr_expect_eq(q[3], 0);
	/* Dequantized within half a step of the original. */
	for (int k = 0; k < 3; k++)
		cr_expect(fabsf(q[k] * sc - w[k]) <= 0.5f * sc * 1.01f + 1e-7f);
}

Test(ref_ops, f64_product_matches_naive)
{
	float x[2 * 3] = {1, 2, 3, -1, 0.5f, 0.25f};
	float w[2 * 3] = {0.5f, 0.25f, 0.125f, 1, 1, 1};
	float bias[2] = {1, -1};
	double y[4];
	ctq_ref_gemm_f64(x, w, bias, 2, 2, 3, y);
	cr_expect_eq(y[0], 0.5 + 0.5 + 0.375 + 1);
	cr_expect_eq(y[3], -1 + 0.5 + 0.25 - 1);
}

/* The fast reference GEMMs (reference/ref_gemm.c) against their
 * definitions, bit for bit: the Qwen3-4B probe geometries at decode and
 * prefill M, shapes off every tile and vector width, saturated int8 at K =
 * 9728, f64 products over six orders of magnitude with and without bias. */
Test(ref_ops, fast_gemms_equal_their_definitions_bit_for_bit)
{
	static const int64_t dims[][3] = {
		{1, 6144, 2560}, {7, 2560, 4096}, {8, 19456, 2560}, {3, 2560, 9728},
		{1, 1, 1},       {2, 3, 15},      {5, 9, 17},         {9, 67, 33},
		{4, 8, 16},      {13, 130, 1000}, {2, 64, 9728},    {4, 5, 70016},
	};
	struct ctq_rng r;
	ctq_rng_seed(&r, 7);
	struct ctq_error err = {0};
	for (size_t d = 0; d < sizeof dims / sizeof *dims; d++) {
		const int64_t M = dims[d][0], N = dims[d][1], K = dims[d][2];
		int8_t *q = malloc((size_t)(M * K)), *w = malloc((size_t)(N * K));
		float *xf = malloc((size_t)(M * K) * 4), *wf = malloc((size_t)(N * K) * 4), *b = malloc((size_t)N * 4);
		int32_t *a1 = malloc((size_t)(M * N) * 4), *a2 = malloc((size_t)(M * N) * 4);
		double *y1 = malloc((size_t)(M * N) * 8), *y2 = malloc((size_t)(M * N) * 8);
		/* saturated on every third shape and the long one, where q + 128
		 * times w passes 2^31 (the VNNI path's modular correction) */
		const bool extreme = d % 3 == 1 || K > 65536;
		for (int64_t i = 0; i < M * K; i++) {
			q[i] = extreme ? (int8_t)((ctq_rng_next(&r) & 1) ? 127 : -128) : (int8_t)ctq_rng_next(&r);
			xf[i] = (float)(ctq_rng_normal(&r) * pow(10.0, (double)(int)ctq_rng_below(&r, 7) - 3));
		}
		for (int64_t i = 0; i < N * K; i++) {
			w[i] = extreme ? (int8_t)((ctq_rng_next(&r) & 2) ? 127 : -128) : (int8_t)ctq_rng_next(&r);
			wf[i] = (float)ctq_rng_normal(&r);
		}
		for (int64_t n = 0; n < N; n++)
			b[n] = (float)ctq_rng_normal(&r);
		cr_assert_eq(ctq_ref_gemm_i8(q, w, M, N, K, a1, &err), CTQ_OK);
		cr_assert_eq(ctq_ref_gemm_i8_scalar(q, w, M, N, K, a2, &err), CTQ_OK);
		cr_assert(!memcmp(a1, a2, (size_t)(M * N) * 4), "i8 M=%lld N=%lld K=%lld (%s)", (long long)M,
			  (long long)N, (long long)K, ctq_ref_simd());
		for (int with_bias = 0; with_bias < 2; with_bias++) {
			ctq_ref_gemm_f64(xf, wf, with_bias ? b : NULL, M, N, K, y1);
			ctq_ref_gemm_f64_scalar(xf, wf, with_bias ? b : NULL, M, N, K, y2);
			for (int64_t i = 0; i < M * N; i++)
				cr_assert(!memcmp(&y1[i], &y2[i], 8), "f64 M=%lld N=%lld K=%lld bias %d [%lld]: %a vs %a (%s)",
					  (long long)M, (long long)N, (long long)K, with_bias, (long long)i, y1[i], y2[i],
					  ctq_ref_simd());
		}
		free(q), free(w), free(xf), free(wf), free(b), free(a1), free(a2), free(y1), free(y2);
	}
}

/* One thread per CTQ_REF_GRAIN operations, at least one, at most OpenMP's
 * limit: a decode step of the tiny synthetic model (M = 1, vocab 512,
 * hidden 64, its largest GEMM) runs on the calling thread alone, a large
 * prefill GEMM on every thread allowed. */
Test(ref_ops, threads_one_per_grain_within_the_openmp_limit)
{
	cr_assert_eq(ctq_ref_threads(0), 1);
	cr_assert_eq(ctq_ref_threads(1 * 512 * 64), 1);
	cr_assert_eq(ctq_ref_threads(CTQ_REF_GRAIN - 1), 1);
#ifdef _OPENMP
	const int max = omp_get_max_threads();
	cr_assert_eq(ctq_ref_threads(2 * CTQ_REF_GRAIN), max < 2 ? max : 2);
	cr_assert_eq(ctq_ref_threads(512 * 4096 * INT64_C(4096)), max);
	omp_set_num_threads(3);
	cr_assert_eq(ctq_ref_threads(3 * CTQ_REF_GRAIN + 1), 3);
	cr_assert_eq(ctq_ref_threads(100 * CTQ_REF_GRAIN), 3, "capped at omp_set_num_threads");
	omp_set_num_threads(max);
#endif
}
