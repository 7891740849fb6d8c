/* The W8A8 epilogue on two adjacent outputs, shared by the tensor-core
 * GEMMs (gemm_w8a8_sm90.cu, gemm_w8a8_sm80.cu): ctq_w8a8_epilogue's bits,
 * packed (the first in the low half). The f32 chain is core/numerics.h's;
 * the rounding to BF16 is one cvt.rn.bf16x2.f32 for both instead of
 * ctq_f32_to_bf16's integer steps: both round to nearest even (subnormals
 * and overflow to Inf included), and the only NaN this chain can hold is
 * the canonical 0x7fffffff of GPU float arithmetic, which both turn into
 * 0x7fff. */
#ifndef CTQ_KERNELS_EPILOGUE_CUH
#define CTQ_KERNELS_EPILOGUE_CUH

#include <cuda_bf16.h>

#include "core/numerics.h"

__device__ __forceinline__ uint32_t epilogue_pair(int32_t a0, int32_t a1, float sa, float sw0, float sw1,
						  float b0, float b1)
{
	const __nv_bfloat162 h = __floats2bfloat162_rn(ctq_w8a8_epilogue_f32(a0, sa, sw0, b0),
							ctq_w8a8_epilogue_f32(a1, sa, sw1, b1));
	return *(const uint32_t *)&h;
}

#endif
