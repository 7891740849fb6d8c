/* ctq numerics: every quantization formula of DESIGN.md "Numerics", defined
 * once, compiled by both cc (reference/) and nvcc (kernels/), so that the
 * integer results (q, s, acc) are bit-identical and the BF16 outputs are
 * identical wherever the same epilogue order is followed.
 *
 *   per-token activation quantization:
 *     amax = max_k |x[m,k]|,  s = amax / 127,
 *     q = clamp(rint(x / s), -128, 127)  (ties to even), amax == 0 -> s = 0, q = 0
 *   W8A8 GEMM epilogue:
 *     acc = sum_k q[m,k] * w[n,k]   (int32, exact for K <= CTQ_K_MAX)
 *     y = bf16(((float)acc * s_a[m]) * s_w[n] + bias[n]), each step rounded
 *
 * Host code must be compiled with -ffp-contract=off (the Makefile does) so
 * that no multiply-add is fused; device code uses the _rn intrinsics, which
 * are never contracted.
 */
#ifndef CTQ_CORE_NUMERICS_H
#define CTQ_CORE_NUMERICS_H

#include <stdint.h>

#include "core/dtype.h"

#ifdef __CUDACC__
#define CTQ_NUM_FN static inline __host__ __device__
#else
#define CTQ_NUM_FN static inline
#endif

/* |q| <= 128 and |w| <= 127, so each product is at most 16256 in magnitude
 * and an int32 sum of K of them cannot overflow while K <= 2^31 / 16256. */
#define CTQ_K_MAX 132104L

#if defined(__CUDA_ARCH__)
#define CTQ_FMUL(a, b) __fmul_rn((a), (b))
#define CTQ_FADD(a, b) __fadd_rn((a), (b))
#define CTQ_FDIV(a, b) __fdiv_rn((a), (b))
#define CTQ_I2F(a) __int2float_rn(a)
#define CTQ_RINT(a) rintf(a)
#else
#include <math.h>
#define CTQ_FMUL(a, b) ((a) * (b))
#define CTQ_FADD(a, b) ((a) + (b))
#define CTQ_FDIV(a, b) ((a) / (b))
#define CTQ_I2F(a) ((float)(a))
#define CTQ_RINT(a) rintf(a) /* default rounding mode: to nearest, ties to even */
#endif

/* Running absolute maximum of a row. NaN is sticky (a NaN element makes the
 * row's amax NaN), and the operation is commutative and associative, so any
 * reduction order (CPU loop, GPU tree) gives the same bits. An Inf or NaN
 * element therefore gives s = Inf or NaN, every q = 0, and a NaN output row:
 * poison propagates instead of turning into a plausible bias-only output. */
CTQ_NUM_FN float ctq_amax_update(float amax, float x)
{
	float a = fabsf(x);
	return (a > amax || a != a) ? a : amax;
}

/* Scale of a row from its absolute maximum. */
CTQ_NUM_FN float ctq_act_scale(float amax)
{
	return CTQ_FDIV(amax, 127.0f);
}

/* q for one element given the row scale s (s == 0 -> 0). NaN maps to 0:
 * rint(NaN) is NaN and a NaN compares false against both bounds, so it is
 * caught explicitly; the row's scale (NaN) carries the poison instead. */
CTQ_NUM_FN int8_t ctq_quantize(float x, float s)
{
	if (s == 0.0f)
		return 0;
	float r = CTQ_RINT(CTQ_FDIV(x, s));
	if (!(r == r))
		return 0;
	if (r > 127.0f)
		return 127;
	if (r < -128.0f)
		return -128;
	return (int8_t)r;
}

/* One W8A8 output element: bf16(((float)acc * sa) * sw + bias). */
CTQ_NUM_FN float ctq_w8a8_epilogue_f32(int32_t acc, float sa, float sw, float bias)
{
	return CTQ_FADD(CTQ_FMUL(CTQ_FMUL(CTQ_I2F(acc), sa), sw), bias);
}

CTQ_NUM_FN uint16_t ctq_w8a8_epilogue(int32_t acc, float sa, float sw, float bias)
{
	return ctq_f32_to_bf16(ctq_w8a8_epilogue_f32(acc, sa, sw, bias));
}

#endif
