/* Device helpers shared by the kernels (quant.cu, model_ops.cu,
 * attention.cu), written once: a BF16 load, block-wide sum / max over warp
 * shuffles (any block size up to 1024; every thread gets the result), the
 * RMSNorm block size, and the integer-amax / quantization helpers of the
 * fused quantizing kernels. */
#ifndef CTQ_KERNELS_DEVICE_CUH
#define CTQ_KERNELS_DEVICE_CUH

#include "core/dtype.h"
#include "core/numerics.h"

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

/* ---- integer amax and quantization of BF16 pairs ------------------------ */

/* |b| of a bf16 b, as a float, orders exactly like b & 0x7fff as an
 * unsigned integer (sign-magnitude with the exponent above the mantissa),
 * and the NaN patterns (b & 0x7fff) > 0x7f80 come after Inf. So the
 * integer max of the sign-cleared patterns is the pattern of the sticky-
 * NaN absolute maximum of ctq_amax_update, and the max is associative and
 * commutative like it. (A NaN amax may carry a different payload than a
 * float fold would; s = amax / 127 is a NaN either way, and GPU float
 * arithmetic is expected to return its canonical NaN 0x7fffffff for a NaN
 * operand, so the bits of s would not change; tests/gpu/test_kernels.c
 * only asks for a NaN, as the CPU's s keeps the payload.) Packed: two
 * bf16 per 32-bit word, two 16-bit maxima per instruction. */
__device__ __forceinline__ uint32_t amax_bits(uint32_t acc, uint32_t two_bf16)
{
	return __vmaxu2(acc, two_bf16 & 0x7fff7fffu);
}

/* The row scale from the integer amax a of a row (one 16-bit pattern;
 * fold a packed word's halves first); the reciprocal for
 * ctq_quantize_fast is ctq_quantize_inv of it. */
__device__ __forceinline__ float scale_of_bits(uint32_t a)
{
	return a == 0 ? 0.0f : ctq_act_scale(ctq_bf16_to_f32((uint16_t)a));
}

/* Two bf16 (one word) to two q bytes in the low half of the result. */
__device__ __forceinline__ uint32_t quant_pair(uint32_t two_bf16, float sc, float inv)
{
	const int8_t a = ctq_quantize_fast(__uint_as_float(two_bf16 << 16), sc, inv);
	const int8_t b = ctq_quantize_fast(__uint_as_float(two_bf16 & 0xffff0000u), sc, inv);
	return (uint32_t)(uint8_t)a | ((uint32_t)(uint8_t)b << 8);
}

/* Eight bf16 (16 bytes) to eight q bytes. */
__device__ __forceinline__ uint2 quant_group(uint4 v, float sc, float inv)
{
	uint2 o;
	o.x = quant_pair(v.x, sc, inv) | (quant_pair(v.y, sc, inv) << 16);
	o.y = quant_pair(v.z, sc, inv) | (quant_pair(v.w, sc, inv) << 16);
	return o;
}

#endif
