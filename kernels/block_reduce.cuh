/* Device helpers shared by the model-op kernels (kernels/model_ops.cu,
 * kernels/attention.cu): a BF16 load and block-wide sum / max over warp
 * shuffles (any block size up to 1024; every thread gets the result). */
#ifndef CTQ_KERNELS_BLOCK_REDUCE_CUH
#define CTQ_KERNELS_BLOCK_REDUCE_CUH

#include "core/dtype.h"

__device__ __forceinline__ float ld_bf16(const uint16_t *p) { return ctq_bf16_to_f32(*p); }

__device__ __forceinline__ float block_sum(float v, float *red)
{
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	const int w = threadIdx.x >> 5, lane = threadIdx.x & 31, nw = (blockDim.x + 31) >> 5;
	__syncthreads();
	if (lane == 0)
		red[w] = v;
	__syncthreads();
	float s = 0.0f;
	for (int i = 0; i < nw; i++)
		s += red[i];
	return s;
}

__device__ __forceinline__ float block_max(float v, float *red)
{
	for (int o = 16; o > 0; o >>= 1)
		v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	const int w = threadIdx.x >> 5, lane = threadIdx.x & 31, nw = (blockDim.x + 31) >> 5;
	__syncthreads();
	if (lane == 0)
		red[w] = v;
	__syncthreads();
	float s = -INFINITY;
	for (int i = 0; i < nw; i++)
		s = fmaxf(s, red[i]);
	return s;
}

/* The block size of every RMSNorm kernel for `rows` rows of H
 * (rmsnorm_kernel, the fused rmsnorm_quant / add_rmsnorm kernels,
 * qk_norm_rope): one rule, so their sums of squares run in the same order
 * and give the same bits. Few long rows (decode: one block per row on a
 * few SMs, latency bound) take 1024 threads: H = 2560 with 256 threads
 * measured 4.8 us at M = 1 against 3.05 us with 1024 (H200, ed329c3).
 * Many rows take 256 (1024 threads left most of them idle and measured
 * 33 us at 2048 rows of 2560 against 25 us). Rows of H < 1024 (the q/k
 * head norms) do not depend on the row count. */
#define CTQ_RMS_FEW_ROWS 256

static inline int ctq_rms_threads(int64_t rows, int64_t H)
{
	if (H >= 1024 && rows <= CTQ_RMS_FEW_ROWS)
		return 1024;
	return H >= 256 ? 256 : 128;
}

#endif
