/* Criterion tests for the reference's fast paths against its scalar
 * definitions, bit for bit: every SIMD level this CPU has (ctq_ref_simd_cap
 * forces the lower ones) for the int8 GEMM and the per-token quantization,
 * on shapes off every tile and vector width and on rows holding the values
 * where a vector formula could drift (ties, zeros, NaN, Inf, subnormals);
 * the attention op's fast path against its definition on calls that mix
 * prefill runs, decode tokens and slots, at odd head sizes and lengths; and
 * whole evaluations of a tiny model, scalar against fast at 1 and 2
 * threads, to the last bit of every log-probability. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "core/dtype.h"
#include "core/numerics.h"
#include "conform/probe_session.h"
#include "core/json.h"
#include "core/rng.h"
#include "eval/eval.h"
#include "model/model.h"
#include "reference/ref_model_ops.h"
#include "reference/ref_ops.h"
#include "tests/model_fixture.h"
#include "text/tokenizer.h"

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
	{13, 33, 129}, {64, 72, 2560}, {5, 89, 31},   {4, 5, 70016},  {9, 37, 70015},
	{8, 40, 3},    {17, 31, 578},
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

/* x (M, K) over seven decades, w (N, K) and b (N) standard normal, f32. */
static void gemm_inputs(struct ctq_rng *r, int64_t M, int64_t N, int64_t K, float **x, float **w, float **b)
{
	*x = malloc((size_t)(M * K) * 4), *w = malloc((size_t)(N * K) * 4), *b = malloc((size_t)N * 4);
	cr_assert(*x && *w && *b);
	for (int64_t i = 0; i < M * K; i++)
		(*x)[i] = (float)(ctq_rng_normal(r) * pow(10.0, (double)(int)ctq_rng_below(r, 7) - 3));
	for (int64_t i = 0; i < N * K; i++)
		(*w)[i] = (float)ctq_rng_normal(r);
	for (int64_t n = 0; n < N; n++)
		(*b)[n] = (float)ctq_rng_normal(r);
}

/* The f64 product at every level equals its definition (per output, k
 * order, then the bias), with and without bias, over six decades; N off
 * the 16- and 8-wide panels. */
Test(ref_fast, gemm_f64_every_level_equals_the_definition, .fini = restore_level)
{
	int lv[3];
	const int nl = levels(lv);
	struct ctq_rng r;
	ctq_rng_seed(&r, 64);
	for (size_t d = 0; d < sizeof gemm_dims / sizeof *gemm_dims; d++) {
		const int64_t M = gemm_dims[d][0], N = gemm_dims[d][1], K = gemm_dims[d][2];
		if (M * N * K > (int64_t)1 << 27)
			continue; /* the scalar definition would take seconds */
		float *x, *w, *b;
		gemm_inputs(&r, M, N, K, &x, &w, &b);
		double *want = malloc((size_t)(M * N) * 8), *got = malloc((size_t)(M * N) * 8);
		cr_assert(want && got);
		for (int with_bias = 0; with_bias < 2; with_bias++) {
			ctq_ref_gemm_f64_scalar(x, w, with_bias ? b : NULL, M, N, K, want);
			for (int l = 0; l < nl; l++) {
				cr_assert_eq(ctq_ref_simd_cap(lv[l]), lv[l]);
				ctq_ref_gemm_f64(x, w, with_bias ? b : NULL, M, N, K, got);
				for (int64_t i = 0; i < M * N; i++)
					cr_assert(!memcmp(&got[i], &want[i], 8),
						  "f64 M=%lld N=%lld K=%lld bias %d %s [%lld]: %a vs %a", (long long)M,
						  (long long)N, (long long)K, with_bias, ctq_ref_simd(), (long long)i,
						  got[i], want[i]);
			}
		}
		free(x), free(w), free(b), free(want), free(got);
	}
}

/* The f32 GEMM at every level equals dot_lanes's definition (the scalar
 * loop) bit for bit: values over seven decades (the lanes' order matters),
 * rows of -0 (a tail lane that took a +0 would turn -0 into +0; a sum of
 * -0 products is -0 until the bias), Inf and NaN, K off 16, M off 4, N off
 * 2 and NB. */
Test(ref_fast, gemm_f32_every_level_equals_the_definition, .fini = restore_level)
{
	int lv[3];
	const int nl = levels(lv);
	struct ctq_rng r;
	ctq_rng_seed(&r, 32);
	for (size_t d = 0; d < sizeof gemm_dims / sizeof *gemm_dims; d++) {
		const int64_t M = gemm_dims[d][0], N = gemm_dims[d][1], K = gemm_dims[d][2];
		if (M * N * K > (int64_t)1 << 27)
			continue; /* the scalar definition would take seconds */
		float *x, *w, *b;
		gemm_inputs(&r, M, N, K, &x, &w, &b);
		float *want = malloc((size_t)(M * N) * 4), *got = malloc((size_t)(M * N) * 4);
		cr_assert(want && got);
		if (M > 1) /* row 1: -0 times positive weights; row 0's first values Inf and NaN */
			for (int64_t k = 0; k < K; k++)
				x[K + k] = -0.0f;
		if (M > 1 && N > 0)
			for (int64_t k = 0; k < K; k++)
				w[k] = fabsf(w[k]);
		x[0] = INFINITY;
		if (K > 3)
			x[3] = NAN;
		for (int with_bias = 0; with_bias < 2; with_bias++) {
			ctq_ref_gemm_f32_scalar(x, w, with_bias ? b : NULL, M, N, K, want);
			for (int l = 0; l < nl; l++) {
				cr_assert_eq(ctq_ref_simd_cap(lv[l]), lv[l]);
				memset(got, 0x5a, (size_t)(M * N) * 4);
				ctq_ref_gemm_f32(x, w, with_bias ? b : NULL, M, N, K, got);
				for (int64_t i = 0; i < M * N; i++)
					cr_assert(!memcmp(&got[i], &want[i], 4) || (isnan(got[i]) && isnan(want[i])),
						  "f32 M=%lld N=%lld K=%lld bias %d %s [%lld]: %a vs %a", (long long)M,
						  (long long)N, (long long)K, with_bias, ctq_ref_simd(), (long long)i,
						  (double)got[i], (double)want[i]);
			}
		}
		free(x), free(w), free(b), free(want), free(got);
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

/* One attention call: tokens (slot, pos) over caches already holding
 * earlier positions. */
struct att_case {
	const char *id;
	int64_t heads, kv_heads, d, max_len, slots;
	int n_runs;
	struct { int32_t slot, pos0, len; } runs[4]; /* consecutive positions */
};

static const struct att_case att_cases[] = {
	{"decode-1", 4, 2, 16, 64, 1, 1, {{0, 9, 1}}},
	{"prefill-from-0", 4, 2, 16, 64, 1, 1, {{0, 0, 37}}},
	{"odd-d-odd-len", 3, 1, 5, 80, 2, 2, {{1, 0, 23}, {0, 11, 3}}},
	{"d-9-mixed", 6, 3, 9, 128, 3, 3, {{2, 100, 1}, {0, 0, 17}, {1, 40, 33}}},
	{"smollm2-heads", 9, 3, 64, 600, 3, 4, {{0, 0, 70}, {2, 511, 1}, {1, 300, 5}, {0, 70, 1}}},
	{"d-40-long", 8, 8, 40, 1100, 1, 1, {{0, 900, 64}}},
	{"qwen3-4b-heads", 32, 8, 128, 300, 2, 2, {{1, 0, 1}, {0, 200, 40}}},
};

static void attention_case(const struct att_case *c, struct ctq_rng *r)
{
	int64_t T = 0;
	for (int i = 0; i < c->n_runs; i++)
		T += c->runs[i].len;
	const int64_t row = c->kv_heads * c->d, ld = (c->heads + 2 * c->kv_heads) * c->d;
	const size_t cache_n = (size_t)(c->slots * c->max_len * row);
	float *qkv = malloc((size_t)(T * ld) * 4), *kc0 = malloc(cache_n * 4), *vc0 = malloc(cache_n * 4);
	float *kc1 = malloc(cache_n * 4), *vc1 = malloc(cache_n * 4);
	float *o0 = malloc((size_t)(T * c->heads * c->d) * 4), *o1 = malloc((size_t)(T * c->heads * c->d) * 4);
	int32_t *slot = malloc((size_t)T * 4), *pos = malloc((size_t)T * 4);
	cr_assert(qkv && kc0 && vc0 && kc1 && vc1 && o0 && o1 && slot && pos);
	for (int64_t t = 0, i = 0; i < c->n_runs; i++)
		for (int32_t j = 0; j < c->runs[i].len; j++, t++)
			slot[t] = c->runs[i].slot, pos[t] = c->runs[i].pos0 + j;
	/* scores over a few units, so that the softmax is neither flat nor one-hot */
	for (int64_t i = 0; i < T * ld; i++)
		qkv[i] = (float)ctq_rng_normal(r);
	for (size_t i = 0; i < cache_n; i++)
		kc0[i] = (float)ctq_rng_normal(r), vc0[i] = (float)ctq_rng_normal(r);
	memcpy(kc1, kc0, cache_n * 4), memcpy(vc1, vc0, cache_n * 4);
	struct ctq_error err = {0};
	cr_assert_eq(ctq_refm_attention_scalar(NULL, qkv, qkv + c->heads * c->d,
					       qkv + (c->heads + c->kv_heads) * c->d, ld, kc0, vc0, slot, pos,
					       T, c->heads, c->kv_heads, c->d, c->max_len, o0, &err),
		     CTQ_OK, "%s", err.message);
	memset(o1, 0x5a, (size_t)(T * c->heads * c->d) * 4);
	cr_assert_eq(ctq_refm_attention(NULL, qkv, qkv + c->heads * c->d, qkv + (c->heads + c->kv_heads) * c->d,
					ld, kc1, vc1, slot, pos, slot, pos, T, c->heads, c->kv_heads, c->d,
					c->max_len, o1, &err),
		     CTQ_OK, "%s", err.message);
	cr_assert(!memcmp(kc0, kc1, cache_n * 4) && !memcmp(vc0, vc1, cache_n * 4), "%s: caches differ", c->id);
	double norm = 0;
	for (int64_t i = 0; i < T * c->heads * c->d; i++) {
		norm += (double)o0[i] * o0[i];
		cr_assert_eq(ctq_f32_bits(o1[i]), ctq_f32_bits(o0[i]), "%s (%s, %d threads) [%lld]: %a vs %a", c->id,
			     ctq_ref_simd(), omp_get_max_threads(), (long long)i, (double)o1[i], (double)o0[i]);
	}
	cr_assert_gt(norm, 0.0, "%s: a vacuous case", c->id);
	free(qkv), free(kc0), free(vc0), free(kc1), free(vc1), free(o0), free(o1), free(slot), free(pos);
}

/* The attention op (its fast path where the CPU has AVX2, wider with
 * AVX-512) equals the definition bit for bit, at every level and at one
 * and two threads. */
Test(ref_fast, attention_equals_the_definition, .fini = restore_level)
{
	int lv[3];
	const int nl = levels(lv);
	cr_assert_geq(nl, 2, "this CPU has no AVX2: the fast path is not tested here");
	struct ctq_rng r;
	ctq_rng_seed(&r, 5);
	for (int l = 1; l < nl; l++)
		for (int threads = 1; threads <= 2; threads++) {
			cr_assert_eq(ctq_ref_simd_cap(lv[l]), lv[l]);
			omp_set_num_threads(threads);
			for (size_t i = 0; i < sizeof att_cases / sizeof *att_cases; i++)
				attention_case(&att_cases[i], &r);
		}
}

/* A planted difference is seen: the fast path's bits are compared, not
 * the definition's with itself (token 0 attends to itself alone: its
 * output is its value, so one ulp of the value shows). */
Test(ref_fast, attention_comparison_sees_one_ulp)
{
	const int64_t d = 8, T = 5;
	float qkv[5 * 3 * 8], kc[5 * 8], vc[5 * 8], kc2[5 * 8], vc2[5 * 8], o0[5 * 8], o1[5 * 8];
	int32_t slot[5] = {0}, pos[5] = {0, 1, 2, 3, 4};
	struct ctq_rng r;
	ctq_rng_seed(&r, 9);
	for (size_t i = 0; i < sizeof qkv / sizeof *qkv; i++)
		qkv[i] = (float)ctq_rng_normal(&r);
	struct ctq_error err = {0};
	cr_assert_eq(ctq_refm_attention_scalar(NULL, qkv, qkv + d, qkv + 2 * d, 3 * d, kc, vc, slot, pos, T, 1,
					       1, d, 5, o0, &err), CTQ_OK);
	qkv[2 * d + 3] = nextafterf(qkv[2 * d + 3], INFINITY); /* token 0's value */
	cr_assert_eq(ctq_refm_attention(NULL, qkv, qkv + d, qkv + 2 * d, 3 * d, kc2, vc2, slot, pos, NULL, NULL,
					T, 1, 1, d, 5, o1, &err), CTQ_OK);
	cr_assert(memcmp(o0, o1, sizeof o0), "one ulp of a key changed no output bit");
}

/* ---- whole evaluations ------------------------------------------------------------ */

/* lp (n, 4): the log-probabilities ctq_eval_score gives for MMLU test
 * (5-shot, 3 a subject) on model, on the reference backend at SIMD level
 * `level` and `threads` OpenMP threads, in batches of 3 slots and 64 tokens
 * a call (prefixes cut across calls, so attention reads earlier calls'
 * keys). */
static double (*eval_lp(const char *model, int level, int threads, size_t *n))[4]
{
	struct ctq_error err = {0};
	struct ctq_eval_data data;
	struct ctq_tokenizer tok;
	struct ctq_eval_set set;
	cr_assert_eq(ctq_eval_data_load(&data, CTQ_BENCH_MMLU, "datasets/mmlu", "test", NULL, 0, true, &err),
		     CTQ_OK, "%s", err.message);
	cr_assert_eq(ctq_tokenizer_load(&tok, "tests/fixtures/tokenizers/gpt2-small", &err), CTQ_OK, "%s",
		     err.message);
	const struct ctq_eval_options o = {.bench = CTQ_BENCH_MMLU, .protocol = CTQ_PROTO_ORIGINAL, .shots = 5,
					   .max_context = 4096, .limit = 3};
	cr_assert_eq(ctq_eval_prepare(&set, &data, &o, &tok, &err), CTQ_OK, "%s", err.message);
	ctq_ref_simd_cap(level);
	omp_set_num_threads(threads);
	struct ctq_model m;
	const struct ctq_model_options mo = {.dir = model, .backend = "reference", .tp = 1,
					     .limits = {.max_slots = 3, .max_len = set.max_len, .max_tokens = 64}};
	cr_assert_eq(ctq_model_open(&m, &mo, &err), CTQ_OK, "%s", err.message);
	double (*lp)[4] = calloc(set.n, sizeof *lp);
	struct ctq_eval_counters c;
	cr_assert_eq(ctq_eval_score(&m, &set, lp, NULL, NULL, &c, &err), CTQ_OK, "%s", err.message);
	*n = set.n;
	ctq_model_close(&m);
	ctq_eval_set_free(&set);
	ctq_tokenizer_free(&tok);
	ctq_eval_data_free(&data);
	return lp;
}

/* Scalar definitions (level 0, one thread) against the fast paths at every
 * level and at 1 and 2 threads: every log-probability of a W8A8 and a BF16
 * evaluation, bit for bit. */
Test(ref_fast, eval_scalar_and_fast_give_the_same_bits, .fini = restore_level)
{
	struct fixture f;
	fixture_make(&f, "reffast", 2048, 7);
	int lv[3];
	const int nl = levels(lv);
	const char *models[2] = {f.w8a8, f.bf16};
	for (int mi = 0; mi < 2; mi++) {
		size_t n0;
		double(*want)[4] = eval_lp(models[mi], 0, 1, &n0);
		cr_assert_gt(n0, 0);
		for (int l = 1; l < nl; l++)
			for (int threads = 1; threads <= 2; threads++) {
				size_t n1;
				double(*got)[4] = eval_lp(models[mi], lv[l], threads, &n1);
				cr_assert_eq(n1, n0);
				for (size_t i = 0; i < n0; i++)
					for (int k = 0; k < 4; k++) {
						cr_assert(isfinite(want[i][k]));
						cr_assert(!memcmp(&got[i][k], &want[i][k], sizeof want[i][k]),
							  "%s level %d threads %d item %zu choice %d: %a vs %a",
							  models[mi], lv[l], threads, i, k, got[i][k], want[i][k]);
					}
				free(got);
			}
		free(want);
	}
	fixture_drop(&f);
}

/* ---- probes ----------------------------------------------------------------------- */

/* probe.json's rows on the reference backend at SIMD level `level` (the
 * oracle and the backend probed both at that level): the tiny geometries
 * with every synthetic pattern at M 1, 7 and 9, and the qwen3-0.6b ones
 * with random weights under gaussian and BF16-limit activations at M 1
 * (drawing their weights and the scalar definitions take seconds beyond). */
static cJSON *probe_rows(int level)
{
	ctq_ref_simd_cap(level);
	struct ctq_backend b;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_backend_reference(&b, &err), CTQ_OK);
	struct ctq_probe_policy policy;
	ctq_probe_policy_default(&policy);
	const int64_t ms[] = {1, 7, 9};
	struct ctq_probe_session S = {.backends = &b, .n_backends = 1, .ms = ms, .n_m = 3, .seed = 1,
				      .policy = &policy};
	const size_t n_m[2] = {3, 1};
	cr_assert_eq(ctq_probe_session_init(&S, &err), CTQ_OK);
	for (int w = 0; w < CTQ_PW_COUNT; w++)
		S.wsel[w] = w != CTQ_PW_CHECKPOINT;
	for (int a = 0; a < CTQ_PA_COUNT; a++)
		S.asel[a] = true;
	const char *presets[2] = {"tiny", "qwen3-0.6b"};
	for (int p = 0; p < 2; p++) {
		struct ctq_probe_shapes shapes;
		cr_assert_eq(ctq_probe_shapes_parse(presets[p], &shapes, &err), CTQ_OK);
		S.n_m = n_m[p];
		if (p == 1) {
			memset(S.wsel, 0, sizeof S.wsel);
			memset(S.asel, 0, sizeof S.asel);
			S.wsel[CTQ_PW_RANDOM] = S.asel[CTQ_PA_GAUSSIAN] = S.asel[CTQ_PA_BF16_LIMIT] = true;
		}
		for (size_t l = 0; l < shapes.n; l++)
			cr_assert_eq(ctq_probe_session_layer(&S, &shapes.v[l], S.wsel, S.asel, &err), CTQ_OK, "%s",
				     err.message);
		ctq_probe_shapes_free(&shapes);
	}
	cr_assert_eq(S.failed, 0);
	cJSON *rows = S.rows;
	S.rows = NULL;
	ctq_probe_session_free(&S);
	ctq_backend_close(&b);
	return rows;
}

/* The probes' rows (kernel and quantization rel-L2, worst elements, bit
 * counts) are the same at every level: the fast oracle and backend give
 * the scalar definitions' bits on the probe geometries and patterns. */
Test(ref_fast, probe_rows_equal_at_every_level, .fini = restore_level)
{
	int lv[3];
	const int nl = levels(lv);
	cJSON *want = probe_rows(0);
	const int n = cJSON_GetArraySize(want);
	cr_assert_eq(n, 4 * 4 * 4 * 3 + 4 * 2);
	for (int l = 1; l < nl; l++) {
		cJSON *got = probe_rows(lv[l]);
		cr_assert_eq(cJSON_GetArraySize(got), n);
		for (int i = 0; i < n; i++) {
			char *a = cJSON_PrintUnformatted(cJSON_GetArrayItem(got, i));
			char *b = cJSON_PrintUnformatted(cJSON_GetArrayItem(want, i));
			cr_assert(a && b);
			cr_assert_str_eq(a, b, "level %d row %d", lv[l], i);
			free(a), free(b);
		}
		cJSON_Delete(got);
	}
	cJSON_Delete(want);
}
