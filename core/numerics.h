/* ctq numerics: every quantization formula of DESIGN.md "Numerics", defined
 * once, compiled by both cc (reference/) and nvcc (kernels/), so that the
 * integer results (q, s, acc) are bit-identical and the BF16 outputs are
 * identical wherever the same epilogue order is followed.
 *
 *   per-token activation quantization:
 *     amax = max_k |x[m,k]|,  s = amax / 127,
 *     q = clamp(rint(x / s), -128, 127)  (ties to even), amax == 0 -> s = 0, q = 0
 *     (kernels use ctq_quantize_fast: the same q without a division)
 *   W8A8 GEMM epilogue:
 *     acc = sum_k q[m,k] * w[n,k]   (int32, exact for K <= CTQ_K_MAX)
 *     y = bf16(((float)acc * s_a[m]) * s_w[n] + bias[n]), each step rounded
 *   and, for comparisons with transformers only, compressed-tensors' fake
 *   quantization (ctq_ct_*, amax / 127.5, below)
 *
 * Host code must be compiled with -ffp-contract=off (the Makefile does) so
 * that no multiply-add is fused; device code uses the _rn intrinsics, which
 * are never contracted.
 */
#ifndef CTQ_CORE_NUMERICS_H
#define CTQ_CORE_NUMERICS_H

#include <stdbool.h>
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

/* The smallest weight scale a producer writes: compressed-tensors clamps its
 * observed scales at torch.finfo(torch.float32).eps (FLT_EPSILON). */
#define CTQ_WEIGHT_SCALE_MIN 1.1920928955078125e-07f

/* A weight row's scale before it is stored in the weight dtype: the row
 * scale clamped at CTQ_WEIGHT_SCALE_MIN, so an all-zero row keeps a tiny
 * positive scale, never 0. A NaN scale (from a NaN amax) also becomes the
 * minimum: the comparison is false. */
CTQ_NUM_FN float ctq_weight_scale(float amax)
{
	const float s = ctq_act_scale(amax);
	return s > CTQ_WEIGHT_SCALE_MIN ? s : CTQ_WEIGHT_SCALE_MIN;
}

/* The N-bit symmetric weight grid (2 <= bits <= 8) that ctq quantize
 * --weight-bits simulates inside int8 storage: q_max = 2^(bits-1) - 1, the
 * row scale amax / q_max clamped at CTQ_WEIGHT_SCALE_MIN as above, and
 * q = clamp(rint(w / s), -q_max, q_max). bits == 8 is the producer's rule
 * itself (ctq_weight_scale, ctq_quantize: amax / 127, clamp [-128, 127]),
 * so an 8-bit simulation writes the same bytes as a plain W8A8 quantize. */
CTQ_NUM_FN int ctq_weight_qmax(int bits)
{
	return (1 << (bits - 1)) - 1;
}

CTQ_NUM_FN float ctq_weight_scale_bits(float amax, int bits)
{
	if (bits >= 8)
		return ctq_weight_scale(amax);
	const float s = CTQ_FDIV(amax, (float)ctq_weight_qmax(bits));
	return s > CTQ_WEIGHT_SCALE_MIN ? s : CTQ_WEIGHT_SCALE_MIN;
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

/* q on the N-bit grid of ctq_weight_scale_bits (bits == 8: ctq_quantize). */
CTQ_NUM_FN int8_t ctq_quantize_bits(float x, float s, int bits)
{
	if (bits >= 8)
		return ctq_quantize(x, s);
	const int8_t q = ctq_quantize(x, s), m = (int8_t)ctq_weight_qmax(bits);
	return q > m ? m : q < -m ? (int8_t)-m : q;
}

/* The fast form of ctq_quantize for a whole row: one correctly rounded
 * reciprocal per row, then per element a multiply and additions instead
 * of the IEEE division, rint and conversions; the exact formula is kept
 * for the rare element next to a rounding boundary or outside
 * [-127.5, 127.5]. ctq_quantize_fast(x, s, ctq_quantize_inv(s)) ==
 * ctq_quantize(x, s) for every float x and s.
 *
 * Why it is exact. Let t = x / s (real), z = fl(t) (the division of
 * ctq_quantize), inv = fl(1 / s), y = fl(x * inv); u = 2^-24. The fast
 * formula is used only where s > 0 and inv is finite and normal (else
 * ctq_quantize_inv gives NaN, which sends every element to the exact
 * formula; s = 0, Inf or NaN give q = 0 for the whole row there), and
 * its result only where |y| < 127.5 and y is more than TOL from every
 * half-integer. Three ranges of |t|:
 *  - |t| < 1/4: |z| <= 1/4 and |y| < 1/4 + 2^-24 (an underflowing
 *    product included), so both round to 0 (the fast result).
 *  - 1/4 <= |t| < 128: no underflow, so y = t (1 + e1)(1 + e2) and
 *    z = t (1 + e3) with |e_i| <= u, and |y - z| <= |t| (3u + u^2)
 *    < 3 * 2^-17 + 2^-41 < CTQ_QUANT_FAST_TOL = 2^-14. rint is monotone,
 *    so rint(y) != rint(z) needs a half-integer h in the closed interval
 *    between y and z, within |y - z| < TOL of y: such a y is sent to the
 *    exact formula. Otherwise rint(y) == rint(z), in [-127, 127] as
 *    |y| < 127.5: no clamp needed. Ties (z == h) go to the exact formula.
 *  - |t| >= 128: |y| >= 128 (1 - u)^2 > 127.5: the exact formula.
 * The test is computed exactly where it matters: for |y| < 2^22,
 * m = y + 1.5 * 2^23 has an ulp of 1, so m - 1.5 * 2^23 = rint(y) (ties
 * to even: 1.5 * 2^23 is even) and the low byte of m's bits is rint(y)
 * mod 256; y - rint(y) is exact (a multiple of ulp(y) of at most 2^23
 * ulps when rint(y) != 0, or y itself); 0.5 - |y - r| is exact for
 * |y - r| >= 1/4 (Sterbenz) and >= 1/4 otherwise (rounding is monotone),
 * so "> TOL" decides exactly as in real arithmetic. NaN, Inf or a large y
 * fail the comparisons: exact formula. Every step is rounded on its own
 * (CTQ_FMUL / CTQ_FADD are not contracted into a fused multiply-add on
 * the device; the host builds with -ffp-contract=off). tests/test_ref_ops.c
 * checks all 65536 bf16 x against hundreds of scales, and that TOL = 0
 * would be wrong. */
#define CTQ_QUANT_FAST_TOL 0x1p-14f

/* The reciprocal ctq_quantize_fast wants for row scale s: fl(1 / s), or a
 * NaN where the fast formula does not apply (s <= 0, NaN, Inf, or 1 / s
 * not a finite normal float: s below about 2^-128 or above 2^126). */
CTQ_NUM_FN float ctq_quantize_inv(float s)
{
	const float inv = CTQ_FDIV(1.0f, s);
	if (s > 0.0f && inv >= 0x1p-126f && inv <= 0x1.fffffep127f)
		return inv;
	return ctq_f32_from_bits(0x7fc00000u);
}

CTQ_NUM_FN int8_t ctq_quantize_fast(float x, float s, float inv)
{
	const float y = CTQ_FMUL(x, inv);
	const float m = CTQ_FADD(y, 0x1.8p23f); /* 1.5 * 2^23 + rint(y) */
	const float r = CTQ_FADD(m, -0x1.8p23f);
	/* distance from y to the nearest half-integer */
	const float d = CTQ_FADD(0.5f, -fabsf(CTQ_FADD(y, -r)));
	if (!(d > CTQ_QUANT_FAST_TOL && fabsf(y) < 127.5f))
		return ctq_quantize(x, s);
	const int32_t b = (int32_t)(ctq_f32_bits(m) & 0xffu);
	return (int8_t)(b - ((b & 0x80) << 1));
}

/* ---- compressed-tensors' fake quantization: transformers' numerics ----
 *
 * transformers runs a compressed-tensors W8A8 checkpoint by fake
 * quantization in the activation dtype, not by an integer GEMM
 * (compressed_tensors quantization/utils/helpers.py calculate_qparams,
 * quantization/lifecycle/forward_helpers.py _quantize_dequantize):
 *   s = amax / 127.5           the divisor is (q_max - q_min) / 2 =
 *                              (127 - (-128)) / 2, not 127; a zero scale
 *                              becomes torch.finfo(dtype).eps
 *   q = rint(clamp(x / s, -128, 127))      (torch.round: ties to even)
 *   x^ = q * s, and the weight likewise w^ = w * s_w
 *   y = x^ . w^T in floating point
 * each operation rounded to the dtype: with bf16 set, every result is the
 * f32 operation rounded to BF16 (PyTorch's BF16 arithmetic on the CPU and
 * the GPU; a model run in BF16), else it stays f32 (a model run in float32,
 * where w^ = w * s_w is exact). Unlike ctq's formula, the largest negative
 * element of a row reaches -128 (-127.5 rounds to even) while the largest
 * positive one stops at 127. The reference backend runs these under
 * --act-numerics transformers (backend/backend.h); ctq's formula above
 * stays the default. */
#define CTQ_CT_ACT_DIVISOR 127.5f
#define CTQ_CT_SCALE_EPS_F32 0x1p-23f  /* torch.finfo(torch.float32).eps */
#define CTQ_CT_SCALE_EPS_BF16 0x1p-7f  /* torch.finfo(torch.bfloat16).eps */

/* x rounded to the nearest BF16 (ties to even), as an f32. */
CTQ_NUM_FN float ctq_bf16_round(float x)
{
	return ctq_bf16_to_f32(ctq_f32_to_bf16(x));
}

CTQ_NUM_FN float ctq_ct_round(float x, bool bf16)
{
	return bf16 ? ctq_bf16_round(x) : x;
}

/* compressed-tensors' scale of a row from its absolute maximum. NaN and
 * Inf propagate as in ctq_act_scale. */
CTQ_NUM_FN float ctq_ct_act_scale(float amax, bool bf16)
{
	const float s = ctq_ct_round(CTQ_FDIV(amax, CTQ_CT_ACT_DIVISOR), bf16);
	return s == 0.0f ? (bf16 ? CTQ_CT_SCALE_EPS_BF16 : CTQ_CT_SCALE_EPS_F32) : s;
}

/* compressed-tensors' q of x for the row scale s. The clamp comes first,
 * as in round_to_quantized_type_args; both bounds are integers, so it
 * equals rounding first. NaN maps to 0 as in ctq_quantize: a NaN element
 * makes the row's scale NaN, which carries the poison. */
CTQ_NUM_FN int8_t ctq_ct_quantize(float x, float s, bool bf16)
{
	float t = ctq_ct_round(CTQ_FDIV(x, s), bf16);
	if (!(t == t))
		return 0;
	t = t > 127.0f ? 127.0f : (t < -128.0f ? -128.0f : t);
	return (int8_t)CTQ_RINT(t);
}

/* The dequantized value compressed-tensors multiplies in floating point. */
CTQ_NUM_FN float ctq_ct_dequantize(int8_t q, float s, bool bf16)
{
	return ctq_ct_round(CTQ_FMUL(CTQ_I2F((int32_t)q), s), bf16);
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

/* ---- weight-only int weights (WNA16): compressed-tensors pack-quantized ----
 *
 * b-bit ints (b in {4, 8}) span [-2^(b-1), 2^(b-1) - 1]. Packing (the
 * library's pack_to_int32): u = q + 2^(b-1) (unsigned), 32 / b values per
 * int32 word, value j of a word at bits [j*b, (j+1)*b) (little-endian
 * nibbles / bytes), rows zero-padded to whole words. Weights are packed
 * along their last dimension (K), zero points along dimension 0 (N).
 * Dequantization w = (q - z) * s: the integer difference is exact, its
 * conversion to f32 is exact (|q - z| < 2^9), the product rounds once, so
 * every implementation dequantizes to the same bits. */
CTQ_NUM_FN int ctq_wna16_qmin(int bits)
{
	return -(1 << (bits - 1));
}

CTQ_NUM_FN int ctq_wna16_qmax(int bits)
{
	return (1 << (bits - 1)) - 1;
}

/* Values per int32 word. */
CTQ_NUM_FN int ctq_pack_factor(int bits)
{
	return 32 / bits;
}

/* Words that hold n values. */
CTQ_NUM_FN int64_t ctq_pack_words(int64_t n, int bits)
{
	const int64_t pf = 32 / bits;
	return (n + pf - 1) / pf;
}

/* Value k of a row packed along it (row: ctq_pack_words(K, bits) words). */
CTQ_NUM_FN int ctq_pack_get(const int32_t *row, int64_t k, int bits)
{
	const int pf = 32 / bits;
	const uint32_t w = (uint32_t)row[k / pf];
	const uint32_t u = (w >> (unsigned)((k % pf) * bits)) & ((1u << bits) - 1u);
	return (int)u - (1 << (bits - 1));
}

/* Value (n, g) of a matrix with cols columns packed along dimension 0
 * (ctq_pack_words(rows, bits) rows of cols words). */
CTQ_NUM_FN int ctq_pack_get_dim0(const int32_t *p, int64_t n, int64_t g, int64_t cols, int bits)
{
	const int pf = 32 / bits;
	const uint32_t w = (uint32_t)p[(n / pf) * cols + g];
	const uint32_t u = (w >> (unsigned)((n % pf) * bits)) & ((1u << bits) - 1u);
	return (int)u - (1 << (bits - 1));
}

CTQ_NUM_FN float ctq_wna16_dequant(int q, int z, float s)
{
	return CTQ_FMUL(CTQ_I2F(q - z), s);
}

/* Asymmetric group / channel parameters from the group's min and max, as
 * compressed-tensors' calculate_qparams: the range is widened to hold 0,
 * s = (hi - lo) / (2^b - 1) (clamped at CTQ_WEIGHT_SCALE_MIN as the
 * symmetric scale is), z = clamp(rint(qmin - lo / s), qmin, qmax) computed
 * from the scale as stored (the caller rounds s to the weight dtype first). */
CTQ_NUM_FN float ctq_wna16_scale_asym(float lo, float hi, int bits)
{
	lo = lo < 0.0f ? lo : 0.0f;
	hi = hi > 0.0f ? hi : 0.0f;
	const float s = CTQ_FDIV(hi - lo, (float)((1 << bits) - 1));
	return s > CTQ_WEIGHT_SCALE_MIN ? s : CTQ_WEIGHT_SCALE_MIN;
}

CTQ_NUM_FN int ctq_wna16_zero_point(float lo, float s, int bits)
{
	lo = lo < 0.0f ? lo : 0.0f;
	const float z = CTQ_RINT(CTQ_FADD((float)ctq_wna16_qmin(bits), -CTQ_FDIV(lo, s)));
	if (!(z == z))
		return 0;
	return z < (float)ctq_wna16_qmin(bits) ? ctq_wna16_qmin(bits)
	       : z > (float)ctq_wna16_qmax(bits) ? ctq_wna16_qmax(bits) : (int)z;
}

/* q = clamp(rint(x / s) + z, qmin, qmax); NaN maps to z (w^ = 0). */
CTQ_NUM_FN int ctq_wna16_quantize_asym(float x, float s, int z, int bits)
{
	const float r = CTQ_RINT(CTQ_FDIV(x, s));
	if (!(r == r))
		return z;
	const float v = r + (float)z;
	return v < (float)ctq_wna16_qmin(bits) ? ctq_wna16_qmin(bits)
	       : v > (float)ctq_wna16_qmax(bits) ? ctq_wna16_qmax(bits) : (int)v;
}

#endif
