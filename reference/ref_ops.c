/* ctq CPU reference ops (see ref_ops.h). */
#include "reference/ref_ops.h"
#include "core/dtype.h"
#include "core/numerics.h"
#include "reference/ref_threads.h"

#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CTQ_REF_X86 1
#include <immintrin.h>
#endif

/* Output columns per task: a block of NB weight rows (NB × K) stays in
 * cache while every row of x streams past it; blocks are spread over the
 * threads, so M = 1 (decode) is as parallel as a prefill. */
#define NB 64

/* A row element as f32: x (K) f32, or bf16 bits when bf16 (exact). */
static inline float row_at(const void *x, bool bf16, int64_t k)
{
	return bf16 ? ctq_bf16_to_f32(((const uint16_t *)x)[k]) : ((const float *)x)[k];
}

/* f32 dot products of two f32 rows, or two bf16 rows widened exactly, in
 * a fixed order: 16 interleaved partial sums (lane i takes k = i mod 16),
 * then the lanes added pairwise. The order is part of the definition, so
 * results do not depend on compiler or thread count, and the loop
 * vectorizes without reassociation (bf16 is a constant at each call). */
#define LANES 16

static inline float dot_lanes(const void *a, const void *b, bool bf16, int64_t K)
{
	float acc[LANES] = {0};
	int64_t k = 0;
	for (; k + LANES <= K; k += LANES)
		for (int i = 0; i < LANES; i++)
			acc[i] += row_at(a, bf16, k + i) * row_at(b, bf16, k + i);
	for (int i = 0; k < K; k++, i++)
		acc[i] += row_at(a, bf16, k) * row_at(b, bf16, k);
	for (int w = LANES / 2; w > 0; w /= 2)
		for (int i = 0; i < w; i++)
			acc[i] += acc[i + w];
	return acc[0];
}

#ifdef CTQ_REF_X86
/* 8 elements of row x from k on, as f32 (bf16 bits widened exactly). */
__attribute__((target("avx2"))) static inline __m256 load8(const void *x, bool bf16, int64_t k)
{
	if (!bf16)
		return _mm256_loadu_ps((const float *)x + k);
	const __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)x + k));
	return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* ctq's per-token quantization of one row x (K) into q (K) and *s with
 * AVX2, the bits of the scalar loop below:
 * - amax: over values without NaN, ctq_amax_update is the maximum, which
 *   is commutative and associative (equal magnitudes have equal bits once
 *   the sign is cleared), so 8 lanes and then the lanes give the loop's
 *   value. A row holding a NaN, whose amax is the first NaN's bits, is left
 *   to the scalar loop (returns false).
 * - q: ctq_quantize step by step: vdivps is the IEEE division of divss,
 *   vroundps to nearest is rintf in the default rounding mode (ties to
 *   even), NaN (Inf / Inf) becomes 0, then the clamp to [-128, 127]. */
__attribute__((target("avx2"))) static bool quant_row_avx2(const void *x, bool bf16, int64_t K,
							    int8_t *q, float *s)
{
	const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
	__m256 mx = _mm256_setzero_ps(), nan = _mm256_setzero_ps();
	int64_t k = 0;
	for (; k + 8 <= K; k += 8) {
		const __m256 a = _mm256_and_ps(load8(x, bf16, k), absmask);
		nan = _mm256_or_ps(nan, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
		mx = _mm256_max_ps(mx, a);
	}
	if (_mm256_movemask_ps(nan))
		return false;
	float lanes[8], amax = 0.0f;
	_mm256_storeu_ps(lanes, mx);
	for (int i = 0; i < 8; i++)
		amax = ctq_amax_update(amax, lanes[i]);
	for (; k < K; k++) {
		const float v = row_at(x, bf16, k);
		if (v != v)
			return false;
		amax = ctq_amax_update(amax, v);
	}
	const float sc = amax == 0.0f ? 0.0f : ctq_act_scale(amax);
	*s = sc;
	if (sc == 0.0f) {
		memset(q, 0, (size_t)K);
		return true;
	}
	const __m256 vs = _mm256_set1_ps(sc), lo = _mm256_set1_ps(-128.0f), hi = _mm256_set1_ps(127.0f);
	const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
	for (k = 0; k + 32 <= K; k += 32) {
		__m256i v[4];
		for (int j = 0; j < 4; j++) {
			__m256 r = _mm256_round_ps(_mm256_div_ps(load8(x, bf16, k + 8 * j), vs),
						   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
			r = _mm256_and_ps(r, _mm256_cmp_ps(r, r, _CMP_ORD_Q));
			v[j] = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(r, lo), hi));
		}
		/* the packs interleave 128-bit lanes: dwords v0[0..3] v1[0..3]
		 * v2[0..3] v3[0..3] v0[4..7] ..., put back in order */
		const __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(v[0], v[1]),
						     _mm256_packs_epi32(v[2], v[3]));
		_mm256_storeu_si256((__m256i *)(q + k), _mm256_permutevar8x32_epi32(b, order));
	}
	for (; k < K; k++)
		q[k] = ctq_quantize(row_at(x, bf16, k), sc);
	return true;
}
#endif

/* Per-token quantization of rows x (M, K) (f32, or bf16 bits when bf16)
 * into q (M, K) and s (M): ctq's formula, or compressed-tensors' when ct
 * (computed in the dtype of x). ctq's formula takes AVX2 where the CPU has
 * it (quant_row_avx2: the same bits). */
static void quantize_rows(const void *x, bool bf16, bool ct, int64_t M, int64_t K, int8_t *q, float *s)
{
	const size_t esz = bf16 ? sizeof(uint16_t) : sizeof(float);
	const bool simd = !ct && ctq_ref_simd_level() >= 1;
#pragma omp parallel for schedule(static) num_threads(ctq_ref_threads(2 * M * K))
	for (int64_t m = 0; m < M; m++) {
		const void *xr = (const char *)x + (size_t)(m * K) * esz;
#ifdef CTQ_REF_X86
		if (simd && quant_row_avx2(xr, bf16, K, q + m * K, &s[m]))
			continue;
#else
		(void)simd;
#endif
		float amax = 0.0f;
		for (int64_t k = 0; k < K; k++)
			amax = ctq_amax_update(amax, row_at(xr, bf16, k));
		const float sc = ct ? ctq_ct_act_scale(amax, bf16) : amax == 0.0f ? 0.0f : ctq_act_scale(amax);
		s[m] = sc;
		for (int64_t k = 0; k < K; k++) {
			const float v = row_at(xr, bf16, k);
			q[m * K + k] = ct ? ctq_ct_quantize(v, sc, bf16) : ctq_quantize(v, sc);
		}
	}
}

void ctq_ref_quantize_f32(const float *x, int64_t M, int64_t K, int8_t *q, float *s)
{
	quantize_rows(x, false, false, M, K, q, s);
}

void ctq_ref_quantize_bf16(const uint16_t *x, int64_t M, int64_t K, int8_t *q, float *s)
{
	quantize_rows(x, true, false, M, K, q, s);
}

void ctq_ref_quantize_ct_f32(const float *x, int64_t M, int64_t K, int8_t *q, float *s)
{
	quantize_rows(x, false, true, M, K, q, s);
}

void ctq_ref_quantize_ct_bf16(const uint16_t *x, int64_t M, int64_t K, int8_t *q, float *s)
{
	quantize_rows(x, true, true, M, K, q, s);
}

void ctq_ref_dequantize_ct(const int8_t *q, const float *s, int64_t R, int64_t K, bool bf16,
			   float *y)
{
#pragma omp parallel for schedule(static) num_threads(ctq_ref_threads(R * K))
	for (int64_t r = 0; r < R; r++)
		for (int64_t k = 0; k < K; k++)
			y[r * K + k] = ctq_ct_dequantize(q[r * K + k], s[r], bf16);
}

void ctq_ref_quantize_weight_rows(const float *w, int64_t N, int64_t K, int8_t *q,
				  uint16_t *s_bf16)
{
#pragma omp parallel for schedule(static) num_threads(ctq_ref_threads(2 * N * K))
	for (int64_t n = 0; n < N; n++) {
		const float *wr = w + n * K;
		float amax = 0.0f;
		for (int64_t k = 0; k < K; k++)
			amax = ctq_amax_update(amax, wr[k]);
		uint16_t sb = ctq_f32_to_bf16(ctq_weight_scale(amax));
		s_bf16[n] = sb;
		float sc = ctq_bf16_to_f32(sb);
		for (int64_t k = 0; k < K; k++)
			q[n * K + k] = ctq_quantize(wr[k], sc);
	}
}

/* The operands of one GEMM y (M, N) = x (M, K) · w (N, K)ᵀ (+ bias (N)),
 * in the element types the cell function knows. */
struct gemm_args {
	const void *x, *w;
	const float *bias; /* or NULL */
	int64_t N, K;
	void *y;
};

/* Writes y[m, n] from row m of x and row n of w. */
typedef void (*gemm_cell_fn)(const struct gemm_args *a, int64_t m, int64_t n);

/* Every cell of y, NB output columns per task (see NB). */
static void gemm_tiles(const struct gemm_args *a, int64_t M, gemm_cell_fn cell)
{
	const int64_t N = a->N;
#pragma omp parallel for schedule(dynamic, 1) num_threads(ctq_ref_threads(M * N * a->K))
	for (int64_t n0 = 0; n0 < N; n0 += NB) {
		int64_t n1 = n0 + NB < N ? n0 + NB : N;
		for (int64_t m = 0; m < M; m++)
			for (int64_t n = n0; n < n1; n++)
				cell(a, m, n);
	}
}

static void cell_i8(const struct gemm_args *a, int64_t m, int64_t n)
{
	const int8_t *qr = (const int8_t *)a->x + m * a->K, *wr = (const int8_t *)a->w + n * a->K;
	int32_t sum = 0;
	for (int64_t k = 0; k < a->K; k++)
		sum += (int32_t)qr[k] * (int32_t)wr[k];
	((int32_t *)a->y)[m * a->N + n] = sum;
}

static void cell_bf16(const struct gemm_args *a, int64_t m, int64_t n)
{
	const uint16_t *xr = (const uint16_t *)a->x + m * a->K, *wr = (const uint16_t *)a->w + n * a->K;
	((uint16_t *)a->y)[m * a->N + n] =
		ctq_f32_to_bf16(dot_lanes(xr, wr, true, a->K) + (a->bias ? a->bias[n] : 0.0f));
}

static void cell_f32(const struct gemm_args *a, int64_t m, int64_t n)
{
	const float *xr = (const float *)a->x + m * a->K, *wr = (const float *)a->w + n * a->K;
	((float *)a->y)[m * a->N + n] = dot_lanes(xr, wr, false, a->K) + (a->bias ? a->bias[n] : 0.0f);
}

static void cell_f64(const struct gemm_args *a, int64_t m, int64_t n)
{
	const float *xr = (const float *)a->x + m * a->K, *wr = (const float *)a->w + n * a->K;
	double sum = 0.0;
	for (int64_t k = 0; k < a->K; k++)
		sum += (double)xr[k] * (double)wr[k];
	((double *)a->y)[m * a->N + n] = sum + (a->bias ? (double)a->bias[n] : 0.0);
}

enum ctq_status ctq_ref_gemm_i8_scalar(const int8_t *q, const int8_t *w, int64_t M, int64_t N,
				       int64_t K, int32_t *acc, struct ctq_error *err)
{
	if (K > CTQ_K_MAX)
		return ctq_error_set(err, CTQ_ERR_USAGE, "K",
				     "is %lld; int32 accumulation is exact only for K <= %ld",
				     (long long)K, CTQ_K_MAX);
	gemm_tiles(&(struct gemm_args){q, w, NULL, N, K, acc}, M, cell_i8);
	return CTQ_OK;
}

/* y = the epilogue of acc into y_bf16 (bf16 bits) or, when y_bf16 is
 * NULL, into y_f32. */
static void epilogue(const int32_t *acc, const float *s_a, const float *s_w, const float *bias,
		     int64_t M, int64_t N, uint16_t *y_bf16, float *y_f32)
{
#pragma omp parallel for schedule(static) num_threads(ctq_ref_threads(M * N))
	for (int64_t m = 0; m < M; m++)
		for (int64_t n = 0; n < N; n++) {
			const float b = bias ? bias[n] : 0.0f;
			if (y_bf16)
				y_bf16[m * N + n] = ctq_w8a8_epilogue(acc[m * N + n], s_a[m], s_w[n], b);
			else
				y_f32[m * N + n] = ctq_w8a8_epilogue_f32(acc[m * N + n], s_a[m], s_w[n], b);
		}
}

void ctq_ref_w8a8_epilogue(const int32_t *acc, const float *s_a, const float *s_w,
			   const float *bias, int64_t M, int64_t N, uint16_t *y)
{
	epilogue(acc, s_a, s_w, bias, M, N, y, NULL);
}

void ctq_ref_w8a8_epilogue_f32(const int32_t *acc, const float *s_a, const float *s_w,
			       const float *bias, int64_t M, int64_t N, float *y)
{
	epilogue(acc, s_a, s_w, bias, M, N, NULL, y);
}

void ctq_ref_gemm_bf16(const uint16_t *x, const uint16_t *w, const float *bias, int64_t M,
		       int64_t N, int64_t K, uint16_t *y)
{
	gemm_tiles(&(struct gemm_args){x, w, bias, N, K, y}, M, cell_bf16);
}

void ctq_ref_gemm_f32_scalar(const float *x, const float *w, const float *bias, int64_t M,
			     int64_t N, int64_t K, float *y)
{
	gemm_tiles(&(struct gemm_args){x, w, bias, N, K, y}, M, cell_f32);
}

void ctq_ref_gemm_f64_scalar(const float *x, const float *w, const float *bias, int64_t M,
			     int64_t N, int64_t K, double *y)
{
	gemm_tiles(&(struct gemm_args){x, w, bias, N, K, y}, M, cell_f64);
}
