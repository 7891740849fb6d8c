/* Criterion tests for reference/ref_ops and core/numerics.h: the formulas
 * of DESIGN.md "Numerics" at their edges. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "core/dtype.h"
#include "core/numerics.h"
#include "reference/ref_ops.h"

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
