/* ctq element types: the safetensors dtype names, element sizes, and the
 * bit-exact scalar conversions bf16 <-> f32, f16 <-> f32 and f8_e4m3fn -> f32.
 *
 * The scalar conversions are `static inline` and plain C that nvcc also
 * compiles (as C++), host and device alike (CTQ_HOSTDEV), so a kernel and the
 * CPU reference round exactly the same way. They read float bits through
 * memcpy on the host and __float_as_uint on the device: no type punning UB.
 *
 * What it is not: a tensor type, or a general cast library. Narrowing goes to
 * bf16 and f16 only (round to nearest even); fp8 is decoded, never encoded.
 */
#ifndef CTQ_CORE_DTYPE_H
#define CTQ_CORE_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define CTQ_HOSTDEV __host__ __device__
#else
#define CTQ_HOSTDEV
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The values are ctq's own; the safetensors names are ctq_dtype_name(). */
enum ctq_dtype {
	CTQ_DTYPE_F32,
	CTQ_DTYPE_F16,
	CTQ_DTYPE_BF16,
	CTQ_DTYPE_I8,
	CTQ_DTYPE_I32,
	CTQ_DTYPE_I64,
	CTQ_DTYPE_U8,
	CTQ_DTYPE_F8_E4M3, /* e4m3fn: no infinities, 0x7f/0xff NaN, max 448 */
	CTQ_DTYPE_F64,
	CTQ_DTYPE_BOOL,    /* one byte per element */
	CTQ_DTYPE_COUNT
};

/* Bytes per element; 0 for a value outside the enum. */
CTQ_HOSTDEV static inline size_t ctq_dtype_size(enum ctq_dtype t)
{
	switch (t) {
	case CTQ_DTYPE_F64:
	case CTQ_DTYPE_I64:
		return 8;
	case CTQ_DTYPE_F32:
	case CTQ_DTYPE_I32:
		return 4;
	case CTQ_DTYPE_F16:
	case CTQ_DTYPE_BF16:
		return 2;
	case CTQ_DTYPE_I8:
	case CTQ_DTYPE_U8:
	case CTQ_DTYPE_F8_E4M3:
	case CTQ_DTYPE_BOOL:
		return 1;
	default:
		return 0;
	}
}

/* The safetensors name ("F32", "BF16", "F8_E4M3", ...); a static string.
 * "?" for a value outside the enum. */
const char *ctq_dtype_name(enum ctq_dtype t);

/* Parses a safetensors name (case-sensitive, exact). Returns false and leaves
 * *out untouched when the name is not one of ctq's dtypes. */
bool ctq_dtype_parse(const char *name, enum ctq_dtype *out);

/* ---- bit access -------------------------------------------------------- */

CTQ_HOSTDEV static inline uint32_t ctq_f32_bits(float f)
{
#ifdef __CUDA_ARCH__
	return __float_as_uint(f);
#else
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	return u;
#endif
}

CTQ_HOSTDEV static inline float ctq_f32_from_bits(uint32_t u)
{
#ifdef __CUDA_ARCH__
	return __uint_as_float(u);
#else
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
#endif
}

/* ---- bf16 (1 sign, 8 exponent, 7 mantissa bits: the top half of an f32) -- */

/* Exact: every bf16 is an f32. NaN payloads are kept as they are. */
CTQ_HOSTDEV static inline float ctq_bf16_to_f32(uint16_t h)
{
	return ctq_f32_from_bits((uint32_t)h << 16);
}

/* Round to nearest, ties to even. Infinities stay infinities, finite values
 * past the largest bf16 round to infinity, NaN stays NaN with the quiet bit
 * set (and its sign and upper payload kept), so a NaN never becomes inf. */
CTQ_HOSTDEV static inline uint16_t ctq_f32_to_bf16(float f)
{
	uint32_t u = ctq_f32_bits(f);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x0040u);
	/* Adding 0x7fff plus the lowest kept bit rounds half to even; the
	 * carry may run into the exponent, which is the correct result. */
	u += 0x7fffu + ((u >> 16) & 1u);
	return (uint16_t)(u >> 16);
}

/* ---- f16 (IEEE binary16: 1 sign, 5 exponent (bias 15), 10 mantissa) ----- */

/* Exact: every half is an f32. Subnormal halves become normal f32s; NaN
 * payloads are kept bit for bit (a signalling NaN stays signalling). */
CTQ_HOSTDEV static inline float ctq_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t exp = (h >> 10) & 0x1fu;
	uint32_t mant = h & 0x3ffu;
	uint32_t u;
	if (exp == 0x1fu) {
		u = sign | 0x7f800000u | (mant << 13);
	} else if (exp != 0) {
		u = sign | ((exp + 112u) << 23) | (mant << 13);
	} else if (mant == 0) {
		u = sign;
	} else {
		/* mant * 2^-24: shift the leading one up to bit 10. */
		uint32_t e = 113u; /* f32 exponent of 2^-14 */
		while ((mant & 0x400u) == 0) {
			mant <<= 1;
			e--;
		}
		u = sign | (e << 23) | ((mant & 0x3ffu) << 13);
	}
	return ctq_f32_from_bits(u);
}

/* Round to nearest, ties to even, with gradual underflow to subnormals and
 * signed zero. Values from 65520 up (the midpoint past the largest half,
 * 65504, whose tie goes to the even neighbour 2^16) become infinity. NaN
 * stays NaN with the quiet bit set, as F16C's vcvtps2ph does. */
CTQ_HOSTDEV static inline uint16_t ctq_f32_to_f16(float f)
{
	uint32_t u = ctq_f32_bits(f);
	uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
	uint32_t a = u & 0x7fffffffu;
	if (a > 0x7f800000u)
		return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
	if (a >= 0x477ff000u) /* 65520.0f and above, infinity included */
		return (uint16_t)(sign | 0x7c00u);
	if (a >= 0x38800000u) { /* 2^-14: normal halves */
		uint32_t r = a - ((uint32_t)112 << 23); /* rebias 127 -> 15 */
		uint32_t q = r >> 13, rem = r & 0x1fffu;
		if (rem > 0x1000u || (rem == 0x1000u && (q & 1u)))
			q++;
		return (uint16_t)(sign | q);
	}
	uint32_t e = a >> 23;
	if (e < 102u) /* below 2^-25: rounds to zero */
		return sign;
	/* Subnormal result: value = m * 2^(e-150); units of 2^-24 are
	 * m >> (126 - e), shift in [14, 24]. */
	uint32_t m = (a & 0x7fffffu) | 0x800000u;
	uint32_t shift = 126u - e;
	uint32_t q = m >> shift, rem = m & ((1u << shift) - 1u);
	uint32_t half = 1u << (shift - 1u);
	if (rem > half || (rem == half && (q & 1u)))
		q++; /* may carry into the smallest normal: still correct */
	return (uint16_t)(sign | q);
}

/* ---- f8 e4m3fn (1 sign, 4 exponent (bias 7), 3 mantissa; no inf) -------- */

/* Exact. Subnormals at exponent 0 (m * 2^-9); S.1111.111 is NaN (returned
 * as a quiet NaN with the code's sign); the largest finite is 448. */
CTQ_HOSTDEV static inline float ctq_f8e4m3_to_f32(uint8_t b)
{
	uint32_t sign = (uint32_t)(b & 0x80u) << 24;
	uint32_t exp = (b >> 3) & 0xfu;
	uint32_t mant = b & 0x7u;
	uint32_t u;
	if ((b & 0x7fu) == 0x7fu) {
		u = sign | 0x7fc00000u;
	} else if (exp != 0) {
		u = sign | ((exp + 120u) << 23) | (mant << 20);
	} else if (mant == 0) {
		u = sign;
	} else {
		uint32_t e = 121u; /* f32 exponent of 2^-6 */
		while ((mant & 0x8u) == 0) {
			mant <<= 1;
			e--;
		}
		u = sign | (e << 23) | ((mant & 0x7u) << 20);
	}
	return ctq_f32_from_bits(u);
}

/* ---- bulk conversions (host only) ---------------------------------------- */

/* Converts n elements of type t at src to f32 at dst (n floats). src may be
 * unaligned (it is read through memcpy), e.g. a tensor in a mapped file.
 * Integers convert as C does (I64 beyond 2^24 rounds to nearest even), F64
 * rounds to nearest even, BOOL gives 1.0 for any non-zero byte. src and dst
 * are borrowed and must not overlap. Returns false (writing nothing) for a
 * t outside the enum. */
bool ctq_convert_to_f32(const void *src, enum ctq_dtype t, size_t n, float *dst);

/* n floats to bf16 / f16 bit patterns (rounding as the scalar versions). */
void ctq_convert_f32_to_bf16(const float *src, size_t n, uint16_t *dst);
void ctq_convert_f32_to_f16(const float *src, size_t n, uint16_t *dst);

/* Element i of a BF16, F16 or F32 array (a stored scale, say) as f32; any
 * other t reads as F32. */
float ctq_float_at(const void *p, enum ctq_dtype t, int64_t i);

/* v stored as element i of a BF16, F16 or F32 array (rounded to nearest
 * even; any other t stores F32); returns the stored value as f32, which is
 * what every reader of the array gets back (a weight row is quantized with
 * the scale as stored, not as computed). */
float ctq_float_store(void *p, enum ctq_dtype t, int64_t i, float v);

#ifdef __cplusplus
}
#endif

#endif
