/* Criterion tests for the reference's fast paths against its scalar
 * definitions, bit for bit: every SIMD level this CPU has (ctq_ref_simd_cap
 * forces the lower ones) for the int8 GEMM and the per-token quantization,
 * on shapes off every tile and vector width and on rows holding the values
 * where a vector formula could drift (ties, zeros, NaN, Inf, subnormals). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/numerics.h"
#include "core/rng.h"
#include "reference/ref_ops.h"

/* Restores the CPU's own level after each test (each runs in its own
 * process under Criterion, but a --jobs 1 run keeps one). */
static void restore_level(void)
{
	ctq_ref_simd_cap(2);
}

/* The levels this CPU can run, lowest first; n of them. */
static int levels(int *out)
{
	const int top = ctq_ref_simd_cap(2);
	int n = 0;
	for (int l = 0; l <= top; l++)
		out[n++] = l;
	return n;
}

static const int64_t gemm_dims[][3] = {
	{1, 1, 1},   {1, 6144, 2560}, {2, 3, 15},   {3, 5, 17},     {4, 8, 16},
	{4, 4, 64},  {5, 9, 63},      {7, 67, 65},  {8, 19456, 64}, {9, 130, 1000},
	{13, 33, 129}, {64, 72, 2560}, {4, 5, 70016},
};

/* The int8 GEMM at every level equals the dot-product definition, random
 * and saturated (q, w in {-128, 127}: the VNNI correction's worst case). */
Test(ref_fast, gemm_i8_every_level_equals_the_definition, .fini = restore_level)
{
	int lv[3];
	const int nl = levels(lv);
	struct ctq_rng r;
	ctq_rng_seed(&r, 34);
	struct ctq_error err = {0};
	for (size_t d = 0; d < sizeof gemm_dims / sizeof *gemm_dims; d++) {
		const int64_t M = gemm_dims[d][0], N = gemm_dims[d][1], K = gemm_dims[d][2];
		int8_t *q = malloc((size_t)(M * K)), *w = malloc((size_t)(N * K));
		int32_t *want = malloc((size_t)(M * N) * 4), *got = malloc((size_t)(M * N) * 4);
		cr_assert(q && w && want && got);
		for (int extreme = 0; extreme < 2; extreme++) {
			for (int64_t i = 0; i < M * K; i++)
				q[i] = extreme ? (int8_t)((ctq_rng_next(&r) & 1) ? 127 : -128) : (int8_t)ctq_rng_next(&r);
			for (int64_t i = 0; i < N * K; i++)
				w[i] = extreme ? (int8_t)((ctq_rng_next(&r) & 2) ? 127 : -128) : (int8_t)ctq_rng_next(&r);
			cr_assert_eq(ctq_ref_gemm_i8_scalar(q, w, M, N, K, want, &err), CTQ_OK);
			int64_t nonzero = 0;
			for (int64_t i = 0; i < M * N; i++)
				nonzero += want[i] != 0;
			cr_assert_gt(nonzero, 0, "a vacuous case");
			for (int l = 0; l < nl; l++) {
				cr_assert_eq(ctq_ref_simd_cap(lv[l]), lv[l]);
				memset(got, 0x5a, (size_t)(M * N) * 4);
				cr_assert_eq(ctq_ref_gemm_i8(q, w, M, N, K, got, &err), CTQ_OK);
				for (int64_t i = 0; i < M * N; i++)
					cr_assert_eq(got[i], want[i], "i8 M=%lld N=%lld K=%lld extreme %d level %s [%lld]",
						     (long long)M, (long long)N, (long long)K, extreme, ctq_ref_simd(),
						     (long long)i);
			}
			ctq_ref_simd_cap(2);
		}
		free(q), free(w), free(want), free(got);
	}
}

/* Rows whose every element a vector formula could get wrong. */
enum row_kind {
	ROW_RANDOM,     /* normal values over seven decades */
	ROW_TIES,       /* amax 127 (s = 1): half-integers round to even */
	ROW_ZERO,       /* amax 0: s = 0, q = 0 */
	ROW_NEG_ZERO,   /* -0.0 only */
	ROW_NAN,        /* one NaN somewhere: the scalar loop's row */
	ROW_INF,        /* one Inf: s = Inf, Inf / Inf = NaN -> 0 */
	ROW_SUBNORMAL,  /* amax subnormal: s rounds to 0 or to a subnormal */
	ROW_HUGE,       /* near FLT_MAX */
	ROW_KINDS
};

static void fill_row(struct ctq_rng *r, enum row_kind kind, float *x, int64_t K)
{
	for (int64_t k = 0; k < K; k++) {
		switch (kind) {
		case ROW_TIES:
			x[k] = (float)((int)ctq_rng_below(r, 255) - 127) + 0.5f;
			break;
		case ROW_ZERO:
			x[k] = 0.0f;
			break;
		case ROW_NEG_ZERO:
			x[k] = -0.0f;
			break;
		case ROW_SUBNORMAL:
			x[k] = ctq_f32_from_bits((uint32_t)ctq_rng_below(r, 1u << 12) | (ctq_rng_next(r) & 1 ? 0x80000000u : 0));
			break;
		case ROW_HUGE:
			x[k] = (float)(ctq_rng_normal(r) * 1e38);
			break;
		default:
			x[k] = (float)(ctq_rng_normal(r) * pow(10.0, (double)(int)ctq_rng_below(r, 7) - 3));
		}
	}
	if (kind == ROW_TIES)
		x[ctq_rng_below(r, (uint64_t)K)] = -127.5f; /* amax 127.5 -> s = 127.5 / 127 */
	if (kind == ROW_TIES && ctq_rng_next(r) & 1)
		for (int64_t k = 0; k < K; k++)
			x[k] = fmaxf(-127.0f, fminf(127.0f, x[k])), x[0] = 127.0f; /* s = 1 exactly */
	if (kind == ROW_NAN)
		x[ctq_rng_below(r, (uint64_t)K)] = ctq_f32_from_bits(0x7fc00000u | (uint32_t)ctq_rng_below(r, 1000));
	if (kind == ROW_INF)
		x[ctq_rng_below(r, (uint64_t)K)] = ctq_rng_next(r) & 1 ? INFINITY : -INFINITY;
}

/* ctq_ref_quantize_f32 and _bf16 at every level equal the scalar loop:
 * q and the bits of s, every kind of row, K off the 8- and 32-wide steps. */
Test(ref_fast, quantize_every_level_equals_the_scalar_loop, .fini = restore_level)
{
	static const int64_t Ks[] = {1, 7, 8, 9, 31, 32, 33, 63, 100, 576, 1536, 2561};
	int lv[3];
	const int nl = levels(lv);
	struct ctq_rng r;
	ctq_rng_seed(&r, 21);
	for (size_t i = 0; i < sizeof Ks / sizeof *Ks; i++) {
		const int64_t K = Ks[i], M = 3 * ROW_KINDS;
		float *x = malloc((size_t)(M * K) * 4), *s0 = malloc((size_t)M * 4), *s1 = malloc((size_t)M * 4);
		uint16_t *xb = malloc((size_t)(M * K) * 2);
		int8_t *q0 = malloc((size_t)(M * K)), *q1 = malloc((size_t)(M * K));
		cr_assert(x && s0 && s1 && xb && q0 && q1);
		for (int64_t m = 0; m < M; m++)
			fill_row(&r, (enum row_kind)(m % ROW_KINDS), x + m * K, K);
		for (int64_t j = 0; j < M * K; j++)
			xb[j] = ctq_f32_to_bf16(x[j]);
		for (int bf16 = 0; bf16 < 2; bf16++) {
			ctq_ref_simd_cap(0);
			if (bf16)
				ctq_ref_quantize_bf16(xb, M, K, q0, s0);
			else
				ctq_ref_quantize_f32(x, M, K, q0, s0);
			int64_t nonzero = 0;
			for (int64_t j = 0; j < M * K; j++)
				nonzero += q0[j] != 0;
			cr_assert_gt(nonzero, 0, "a vacuous case");
			for (int l = 1; l < nl; l++) {
				cr_assert_eq(ctq_ref_simd_cap(lv[l]), lv[l]);
				memset(q1, 0x5a, (size_t)(M * K));
				if (bf16)
					ctq_ref_quantize_bf16(xb, M, K, q1, s1);
				else
					ctq_ref_quantize_f32(x, M, K, q1, s1);
				for (int64_t m = 0; m < M; m++) {
					cr_assert_eq(ctq_f32_bits(s1[m]), ctq_f32_bits(s0[m]),
						     "s K=%lld row %lld (kind %d) bf16 %d %s: %a vs %a", (long long)K,
						     (long long)m, (int)(m % ROW_KINDS), bf16, ctq_ref_simd(),
						     (double)s1[m], (double)s0[m]);
					for (int64_t k = 0; k < K; k++)
						cr_assert_eq(q1[m * K + k], q0[m * K + k],
							     "q K=%lld row %lld (kind %d) [%lld] bf16 %d %s", (long long)K,
							     (long long)m, (int)(m % ROW_KINDS), (long long)k, bf16,
							     ctq_ref_simd());
				}
			}
		}
		free(x), free(s0), free(s1), free(xb), free(q0), free(q1);
	}
}

/* The scalar loop is ctq_quantize itself: the level-0 path is the
 * definition the others are held to. */
Test(ref_fast, scalar_level_is_the_numerics_formula, .fini = restore_level)
{
	const float x[5] = {127.0f, 0.5f, 1.5f, -2.5f, -127.0f};
	int8_t q[5];
	float s;
	cr_assert_eq(ctq_ref_simd_cap(0), 0);
	cr_assert_str_eq(ctq_ref_simd(), "scalar");
	ctq_ref_quantize_f32(x, 1, 5, q, &s);
	cr_assert_eq(s, 1.0f);
	for (int k = 0; k < 5; k++)
		cr_assert_eq(q[k], ctq_quantize(x[k], 1.0f));
	cr_assert_eq(q[1], 0);
	cr_assert_eq(q[2], 2);
	cr_assert_eq(q[3], -2);
}
