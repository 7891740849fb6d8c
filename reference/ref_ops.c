/* ctq CPU reference ops (see ref_ops.h). */
#include "reference/ref_ops.h"
#include "core/dtype.h"
#include "core/numerics.h"

#include <string.h>

/* Output columns per task: a block of NB weight rows (NB × K) stays in
 * cache while every row of x streams past it; blocks are spread over the
 * threads, so M = 1 (decode) is as parallel as a prefill. */
#define NB 64

/* f32 dot products in a fixed order: 16 interleaved partial sums (lane i
 * takes k = i mod 16), then the lanes added pairwise. The order is part of
 * the definition, so results do not depend on compiler or thread count,
 * and the loop vectorizes without reassociation. */
#define LANES 16

static float dot_f32(const float *a, const float *b, int64_t K)
{
	float acc[LANES] = {0};
	int64_t k = 0;
	for (; k + LANES <= K; k += LANES)
		for (int i = 0; i < LANES; i++)
			acc[i] += a[k + i] * b[k + i];
	for (int i = 0; k < K; k++, i++)
		acc[i] += a[k] * b[k];
	for (int w = LANES / 2; w > 0; w /= 2)
		for (int i = 0; i < w; i++)
			acc[i] += acc[i + w];
	return acc[0];
}

static float dot_bf16(const uint16_t *a, const uint16_t *b, int64_t K)
{
	float acc[LANES] = {0};
	int64_t k = 0;
	for (; k + LANES <= K; k += LANES)
		for (int i = 0; i < LANES; i++)
			acc[i] += ctq_bf16_to_f32(a[k + i]) * ctq_bf16_to_f32(b[k + i]);
	for (int i = 0; k < K; k++, i++)
		acc[i] += ctq_bf16_to_f32(a[k]) * ctq_bf16_to_f32(b[k]);
	for (int w = LANES / 2; w > 0; w /= 2)
		for (int i = 0; i < w; i++)
			acc[i] += acc[i + w];
	return acc[0];
}

static void quantize_row(const float *x, int64_t K, int8_t *q, float *s)
{
	float amax = 0.0f;
	for (int64_t k = 0; k < K; k++)
		amax = ctq_amax_update(amax, x[k]);
	float sc = amax == 0.0f ? 0.0f : ctq_act_scale(amax);
	*s = sc;
	for (int64_t k = 0; k < K; k++)
		q[k] = ctq_quantize(x[k], sc);
}

void ctq_ref_quantize_f32(const float *x, int64_t M, int64_t K, int8_t *q, float *s)
{
#pragma omp parallel for schedule(static)
	for (int64_t m = 0; m < M; m++)
		quantize_row(x + m * K, K, q + m * K, s + m);
}

void ctq_ref_quantize_bf16(const uint16_t *x, int64_t M, int64_t K, int8_t *q, float *s)
{
#pragma omp parallel for schedule(static)
	for (int64_t m = 0; m < M; m++) {
		const uint16_t *xr = x + m * K;
		float amax = 0.0f;
		for (int64_t k = 0; k < K; k++)
			amax = ctq_amax_update(amax, ctq_bf16_to_f32(xr[k]));
		float sc = amax == 0.0f ? 0.0f : ctq_act_scale(amax);
		s[m] = sc;
		for (int64_t k = 0; k < K; k++)
			q[m * K + k] = ctq_quantize(ctq_bf16_to_f32(xr[k]), sc);
	}
}

void ctq_ref_quantize_ct_f32(const float *x, int64_t M, int64_t K, int8_t *q, float *s)
{
#pragma omp parallel for schedule(static)
	for (int64_t m = 0; m < M; m++) {
		const float *xr = x + m * K;
		float amax = 0.0f;
		for (int64_t k = 0; k < K; k++)
			amax = ctq_amax_update(amax, xr[k]);
		const float sc = ctq_ct_act_scale(amax, false);
		s[m] = sc;
		for (int64_t k = 0; k < K; k++)
			q[m * K + k] = ctq_ct_quantize(xr[k], sc, false);
	}
}

void ctq_ref_quantize_ct_bf16(const uint16_t *x, int64_t M, int64_t K, int8_t *q, float *s)
{
#pragma omp parallel for schedule(static)
	for (int64_t m = 0; m < M; m++) {
		const uint16_t *xr = x + m * K;
		float amax = 0.0f;
		for (int64_t k = 0; k < K; k++)
			amax = ctq_amax_update(amax, ctq_bf16_to_f32(xr[k]));
		const float sc = ctq_ct_act_scale(amax, true);
		s[m] = sc;
		for (int64_t k = 0; k < K; k++)
			q[m * K + k] = ctq_ct_quantize(ctq_bf16_to_f32(xr[k]), sc, true);
	}
}

void ctq_ref_dequantize_ct(const int8_t *q, const float *s, int64_t R, int64_t K, bool bf16,
			   float *y)
{
#pragma omp parallel for schedule(static)
	for (int64_t r = 0; r < R; r++)
		for (int64_t k = 0; k < K; k++)
			y[r * K + k] = ctq_ct_dequantize(q[r * K + k], s[r], bf16);
}

void ctq_ref_quantize_weight_rows(const float *w, int64_t N, int64_t K, int8_t *q,
				  uint16_t *s_bf16)
{
#pragma omp parallel for schedule(static)
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

enum ctq_status ctq_ref_gemm_i8(const int8_t *q, const int8_t *w, int64_t M, int64_t N,
				int64_t K, int32_t *acc, struct ctq_error *err)
{
	if (K > CTQ_K_MAX)
		return ctq_error_set(err, CTQ_ERR_USAGE, "K",
				     "is %lld; int32 accumulation is exact only for K <= %ld",
				     (long long)K, CTQ_K_MAX);
#pragma omp parallel for schedule(dynamic, 1)
	for (int64_t n0 = 0; n0 < N; n0 += NB) {
		int64_t n1 = n0 + NB < N ? n0 + NB : N;
		for (int64_t m = 0; m < M; m++) {
			const int8_t *qr = q + m * K;
			for (int64_t n = n0; n < n1; n++) {
				const int8_t *wr = w + n * K;
				int32_t sum = 0;
				for (int64_t k = 0; k < K; k++)
					sum += (int32_t)qr[k] * (int32_t)wr[k];
				acc[m * N + n] = sum;
			}
		}
	}
	return CTQ_OK;
}

void ctq_ref_w8a8_epilogue(const int32_t *acc, const float *s_a, const float *s_w,
			   const float *bias, int64_t M, int64_t N, uint16_t *y)
{
#pragma omp parallel for schedule(static)
	for (int64_t m = 0; m < M; m++)
		for (int64_t n = 0; n < N; n++)
			y[m * N + n] = ctq_w8a8_epilogue(acc[m * N + n], s_a[m], s_w[n],
							 bias ? bias[n] : 0.0f);
}

void ctq_ref_w8a8_epilogue_f32(const int32_t *acc, const float *s_a, const float *s_w,
			       const float *bias, int64_t M, int64_t N, float *y)
{
#pragma omp parallel for schedule(static)
	for (int64_t m = 0; m < M; m++)
		for (int64_t n = 0; n < N; n++)
			y[m * N + n] = ctq_w8a8_epilogue_f32(acc[m * N + n], s_a[m], s_w[n],
							     bias ? bias[n] : 0.0f);
}

void ctq_ref_gemm_bf16(const uint16_t *x, const uint16_t *w, const float *bias, int64_t M,
		       int64_t N, int64_t K, uint16_t *y)
{
#pragma omp parallel for schedule(dynamic, 1)
	for (int64_t n0 = 0; n0 < N; n0 += NB) {
		int64_t n1 = n0 + NB < N ? n0 + NB : N;
		for (int64_t m = 0; m < M; m++) {
			const uint16_t *xr = x + m * K;
			for (int64_t n = n0; n < n1; n++) {
				const uint16_t *wr = w + n * K;
				y[m * N + n] = ctq_f32_to_bf16(dot_bf16(xr, wr, K) + (bias ? bias[n] : 0.0f));
			}
		}
	}
}

void ctq_ref_gemm_f32(const float *x, const float *w, const float *bias, int64_t M,
		      int64_t N, int64_t K, float *y)
{
#pragma omp parallel for schedule(dynamic, 1)
	for (int64_t n0 = 0; n0 < N; n0 += NB) {
		int64_t n1 = n0 + NB < N ? n0 + NB : N;
		for (int64_t m = 0; m < M; m++) {
			const float *xr = x + m * K;
			for (int64_t n = n0; n < n1; n++) {
				y[m * N + n] = dot_f32(xr, w + n * K, K) + (bias ? bias[n] : 0.0f);
			}
		}
	}
}

void ctq_ref_gemm_f64(const float *x, const float *w, const float *bias, int64_t M,
		      int64_t N, int64_t K, double *y)
{
#pragma omp parallel for schedule(dynamic, 1)
	for (int64_t n0 = 0; n0 < N; n0 += NB) {
		int64_t n1 = n0 + NB < N ? n0 + NB : N;
		for (int64_t m = 0; m < M; m++) {
			const float *xr = x + m * K;
			for (int64_t n = n0; n < n1; n++) {
				const float *wr = w + n * K;
				double sum = 0.0;
				for (int64_t k = 0; k < K; k++)
					sum += (double)xr[k] * (double)wr[k];
				y[m * N + n] = sum + (bias ? (double)bias[n] : 0.0);
			}
		}
	}
}
