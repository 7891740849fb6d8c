/* ctq per-token int8 quantization on the GPU: one block per row (token).
 * Two passes over the row — the absolute maximum (a sticky-NaN max,
 * core/numerics.h), then x / s rounded to nearest even and saturated. The
 * second pass reads the row from L1/L2 (quantize_kernel, any K) or from
 * registers (quantize_vec_kernel, K % 8 == 0 up to 10240). Bit-identical
 * to ctq_ref_quantize_bf16. */
#include "core/dtype.h"
#include "core/numerics.h"
#include "kernels/cuda_check.h"
#include "kernels/kernels.h"

#define QUANT_THREADS 256

__global__ void quantize_kernel(const uint16_t *__restrict__ x, int64_t K, int8_t *__restrict__ q,
				float *__restrict__ s)
{
	const int64_t row = blockIdx.x;
	const uint16_t *xr = x + row * K;
	int8_t *qr = q + row * K;
	__shared__ float warp_amax[QUANT_THREADS / 32];
	__shared__ float row_scale;

	float amax = 0.0f;
	for (int64_t k = threadIdx.x; k < K; k += blockDim.x)
		amax = ctq_amax_update(amax, ctq_bf16_to_f32(xr[k]));
	for (int off = 16; off > 0; off >>= 1)
		amax = ctq_amax_update(amax, __shfl_xor_sync(0xffffffffu, amax, off));
	if ((threadIdx.x & 31) == 0)
		warp_amax[threadIdx.x >> 5] = amax;
	__syncthreads();
	if (threadIdx.x == 0) {
		float a = 0.0f;
		for (int w = 0; w < (int)(blockDim.x >> 5); w++)
			a = ctq_amax_update(a, warp_amax[w]);
		float sc = a == 0.0f ? 0.0f : ctq_act_scale(a);
		row_scale = sc;
		s[row] = sc;
	}
	__syncthreads();
	const float sc = row_scale;
	for (int64_t k = threadIdx.x; k < K; k += blockDim.x)
		qr[k] = ctq_quantize(ctq_bf16_to_f32(xr[k]), sc);
}

/* The vectorised form for K % 8 == 0 with 16-byte aligned rows and
 * K <= QV_THREADS * 8 * QV_CHUNKS: each thread loads its 8-element groups
 * once (16-byte loads) and keeps them in registers for the second pass, so
 * the row is read from memory exactly once; q is stored 8 bytes at a time.
 * Same formulas, same bits (the amax reduction is order-independent). */
#define QV_THREADS 128
#define QV_CHUNKS 10

__device__ __forceinline__ uint32_t quant_pair(uint32_t two_bf16, float sc)
{
	const int8_t a = ctq_quantize(ctq_bf16_to_f32((uint16_t)(two_bf16 & 0xffff)), sc);
	const int8_t b = ctq_quantize(ctq_bf16_to_f32((uint16_t)(two_bf16 >> 16)), sc);
	return (uint32_t)(uint8_t)a | ((uint32_t)(uint8_t)b << 8);
}

__device__ __forceinline__ float amax_pair(float amax, uint32_t two_bf16)
{
	amax = ctq_amax_update(amax, ctq_bf16_to_f32((uint16_t)(two_bf16 & 0xffff)));
	return ctq_amax_update(amax, ctq_bf16_to_f32((uint16_t)(two_bf16 >> 16)));
}

__global__ void __launch_bounds__(QV_THREADS)
quantize_vec_kernel(const uint16_t *__restrict__ x, int64_t K, int8_t *__restrict__ q,
		    float *__restrict__ s)
{
	const int64_t row = blockIdx.x;
	const uint4 *xr = (const uint4 *)(x + row * K);
	uint2 *qr = (uint2 *)(q + row * K);
	const int groups = (int)(K / 8);
	__shared__ float warp_amax[QV_THREADS / 32];
	__shared__ float row_scale;
	uint4 v[QV_CHUNKS];
	float amax = 0.0f;
#pragma unroll
	for (int c = 0; c < QV_CHUNKS; c++) {
		const int g = c * QV_THREADS + threadIdx.x;
		if (g < groups) {
			v[c] = __ldg(xr + g);
			amax = amax_pair(amax_pair(amax, v[c].x), v[c].y);
			amax = amax_pair(amax_pair(amax, v[c].z), v[c].w);
		}
	}
	for (int off = 16; off > 0; off >>= 1)
		amax = ctq_amax_update(amax, __shfl_xor_sync(0xffffffffu, amax, off));
	if ((threadIdx.x & 31) == 0)
		warp_amax[threadIdx.x >> 5] = amax;
	__syncthreads();
	if (threadIdx.x == 0) {
		float a = 0.0f;
		for (int w = 0; w < QV_THREADS / 32; w++)
			a = ctq_amax_update(a, warp_amax[w]);
		const float sc = a == 0.0f ? 0.0f : ctq_act_scale(a);
		row_scale = sc;
		s[row] = sc;
	}
	__syncthreads();
	const float sc = row_scale;
#pragma unroll
	for (int c = 0; c < QV_CHUNKS; c++) {
		const int g = c * QV_THREADS + threadIdx.x;
		if (g < groups) {
			uint2 o;
			o.x = quant_pair(v[c].x, sc) | (quant_pair(v[c].y, sc) << 16);
			o.y = quant_pair(v[c].z, sc) | (quant_pair(v[c].w, sc) << 16);
			qr[g] = o;
		}
	}
}

/* Many rows (M >= 4096; below that the block kernel measured faster on
 * the H200) of K % 8 == 0, K <= 4096: one warp per row, no
 * block barriers; a block of 8 warps takes 8 rows, so a full SM keeps 64
 * rows in flight and M = 8192 runs in about one wave. Each lane loads all
 * its 16-byte groups before using any (memory-level parallelism), the
 * amax is a warp shuffle reduction, and every lane computes the same
 * scale from the same amax. */
#define QW_WARPS 8
#define QW_MAX_CHUNKS 16

template <int QW_CHUNKS>
__global__ void __launch_bounds__(QW_WARPS * 32)
quantize_warp_kernel(const uint16_t *__restrict__ x, int64_t M, int64_t K, int8_t *__restrict__ q,
		     float *__restrict__ s)
{
	const int lane = threadIdx.x & 31;
	const int64_t row = (int64_t)blockIdx.x * QW_WARPS + (threadIdx.x >> 5);
	if (row >= M)
		return;
	const uint4 *xr = (const uint4 *)(x + row * K);
	uint2 *qr = (uint2 *)(q + row * K);
	const int groups = (int)(K / 8);
	uint4 v[QW_CHUNKS];
	float amax = 0.0f;
#pragma unroll
	for (int c = 0; c < QW_CHUNKS; c++) {
		const int g = c * 32 + lane;
		if (g < groups)
			v[c] = __ldg(xr + g);
	}
#pragma unroll
	for (int c = 0; c < QW_CHUNKS; c++) {
		const int g = c * 32 + lane;
		if (g < groups) {
			amax = amax_pair(amax_pair(amax, v[c].x), v[c].y);
			amax = amax_pair(amax_pair(amax, v[c].z), v[c].w);
		}
	}
	for (int off = 16; off > 0; off >>= 1)
		amax = ctq_amax_update(amax, __shfl_xor_sync(0xffffffffu, amax, off));
	const float sc = amax == 0.0f ? 0.0f : ctq_act_scale(amax);
	if (lane == 0)
		s[row] = sc;
#pragma unroll
	for (int c = 0; c < QW_CHUNKS; c++) {
		const int g = c * 32 + lane;
		if (g < groups) {
			uint2 o;
			o.x = quant_pair(v[c].x, sc) | (quant_pair(v[c].y, sc) << 16);
			o.y = quant_pair(v[c].z, sc) | (quant_pair(v[c].w, sc) << 16);
			qr[g] = o;
		}
	}
}

extern "C" enum ctq_status ctq_quantize_launch(const uint16_t *x, int64_t M, int64_t K, int8_t *q,
					       float *s, void *stream, struct ctq_error *err)
{
	if (M <= 0)
		return CTQ_OK;
	if (M > 0x7fffffffLL)
		return ctq_error_set(err, CTQ_ERR_USAGE, "M", "is %lld; at most 2^31-1 rows",
				     (long long)M);
	const bool vec = K % 8 == 0 && (uintptr_t)x % 16 == 0 && (uintptr_t)q % 8 == 0;
	if (vec && M >= 4096 && K <= 32 * 8 * QW_MAX_CHUNKS) {
		/* registers for just the chunks a lane holds: occupancy */
		const unsigned blocks = (unsigned)((M + QW_WARPS - 1) / QW_WARPS);
		cudaStream_t st = (cudaStream_t)stream;
		const int64_t chunks = (K / 8 + 31) / 32;
		if (chunks <= 4)
			quantize_warp_kernel<4><<<blocks, QW_WARPS * 32, 0, st>>>(x, M, K, q, s);
		else if (chunks <= 8)
			quantize_warp_kernel<8><<<blocks, QW_WARPS * 32, 0, st>>>(x, M, K, q, s);
		else if (chunks <= 10)
			quantize_warp_kernel<10><<<blocks, QW_WARPS * 32, 0, st>>>(x, M, K, q, s);
		else if (chunks <= 12)
			quantize_warp_kernel<12><<<blocks, QW_WARPS * 32, 0, st>>>(x, M, K, q, s);
		else
			quantize_warp_kernel<16><<<blocks, QW_WARPS * 32, 0, st>>>(x, M, K, q, s);
	} else if (vec && K <= (int64_t)QV_THREADS * 8 * QV_CHUNKS)
		quantize_vec_kernel<<<(unsigned)M, QV_THREADS, 0, (cudaStream_t)stream>>>(x, K, q, s);
	else
		quantize_kernel<<<(unsigned)M, QUANT_THREADS, 0, (cudaStream_t)stream>>>(x, K, q, s);
	return CTQ_LAUNCH(err);
}
