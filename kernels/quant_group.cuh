/* Eight BF16 values (one 16-byte load) to eight int8 (one 8-byte store)
 * with ctq_quantize_fast's result for every element (core/numerics.h),
 * in fewer instructions: its decision per element without a branch each
 * (ctq_quantize_fast_m), one branch per group to the exact formula. The
 * fast result, rint(y) in [-127, 127], is the low byte of m's bits (two's
 * complement mod 256), so four results pack into a word by two byte
 * permutes. A group with any element outside the fast form (a
 * half-integer neighbour, |y| >= 127.5, a NaN inv: ctq_quantize_inv's
 * "not applicable") takes ctq_quantize for all eight. */
#ifndef CTQ_QUANT_GROUP_CUH
#define CTQ_QUANT_GROUP_CUH

#include "core/numerics.h"

/* the packed integer amax over two bf16 in a word (kernels/quant.cu) */
__device__ __forceinline__ uint32_t ctq_amax_bits2(uint32_t acc, uint32_t two_bf16)
{
	return __vmaxu2(acc, two_bf16 & 0x7fff7fffu);
}

/* four results from four m (their low bytes) */
__device__ __forceinline__ uint32_t ctq_pack4(float m0, float m1, float m2, float m3)
{
	return __byte_perm(__byte_perm(__float_as_uint(m0), __float_as_uint(m1), 0x0040),
			   __byte_perm(__float_as_uint(m2), __float_as_uint(m3), 0x0040), 0x5410);
}

__device__ __forceinline__ float ctq_bf16_lo(uint32_t w)
{
	return __uint_as_float(w << 16);
}

__device__ __forceinline__ float ctq_bf16_hi(uint32_t w)
{
	return __uint_as_float(w & 0xffff0000u);
}

static __device__ __noinline__ uint2 ctq_quant8_exact(uint4 v, float sc)
{
	const uint32_t w[4] = {v.x, v.y, v.z, v.w};
	uint32_t o[2] = {0, 0};
#pragma unroll
	for (int i = 0; i < 8; i++) {
		const float x = i & 1 ? ctq_bf16_hi(w[i >> 1]) : ctq_bf16_lo(w[i >> 1]);
		o[i >> 2] |= (uint32_t)(uint8_t)ctq_quantize(x, sc) << (8 * (i & 3));
	}
	return make_uint2(o[0], o[1]);
}

__device__ __forceinline__ uint2 ctq_quant8(uint4 v, float sc, float inv)
{
	const uint32_t w[4] = {v.x, v.y, v.z, v.w};
	float m[8];
	bool ok = true;
#pragma unroll
	for (int i = 0; i < 8; i++)
		m[i] = ctq_quantize_fast_m(i & 1 ? ctq_bf16_hi(w[i >> 1]) : ctq_bf16_lo(w[i >> 1]), inv, &ok);
	if (__builtin_expect(!ok, 0))
		return ctq_quant8_exact(v, sc);
	return make_uint2(ctq_pack4(m[0], m[1], m[2], m[3]), ctq_pack4(m[4], m[5], m[6], m[7]));
}

#endif
