/* ctq dtype names and bulk conversions (see dtype.h). */
#include "core/dtype.h"

#include <string.h>

/* safetensors data is little-endian and is read here with memcpy. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "ctq reads little-endian tensor data natively; big-endian hosts are not supported"
#endif

static const char *const dtype_names[CTQ_DTYPE_COUNT] = {
	[CTQ_DTYPE_F32] = "F32",
	[CTQ_DTYPE_F16] = "F16",
	[CTQ_DTYPE_BF16] = "BF16",
	[CTQ_DTYPE_I8] = "I8",
	[CTQ_DTYPE_I32] = "I32",
	[CTQ_DTYPE_I64] = "I64",
	[CTQ_DTYPE_U8] = "U8",
	[CTQ_DTYPE_F8_E4M3] = "F8_E4M3",
	[CTQ_DTYPE_F64] = "F64",
	[CTQ_DTYPE_BOOL] = "BOOL",
};

const char *ctq_dtype_name(enum ctq_dtype t)
{
	if ((unsigned)t >= CTQ_DTYPE_COUNT)
		return "?";
	return dtype_names[t];
}

bool ctq_dtype_parse(const char *name, enum ctq_dtype *out)
{
	if (!name)
		return false;
	for (int i = 0; i < CTQ_DTYPE_COUNT; i++) {
		if (strcmp(dtype_names[i], name) == 0) {
			*out = (enum ctq_dtype)i;
			return true;
		}
	}
	return false;
}

/* One F64, I32 or I64 element at p (any alignment), converted as C
 * converts it. */
static float wide_to_f32(const unsigned char *p, enum ctq_dtype t)
{
	double d;
	int32_t i32;
	int64_t i64;
	switch (t) {
	case CTQ_DTYPE_F64:
		memcpy(&d, p, sizeof d);
		return (float)d;
	case CTQ_DTYPE_I32:
		memcpy(&i32, p, sizeof i32);
		return (float)i32;
	default:
		memcpy(&i64, p, sizeof i64);
		return (float)i64;
	}
}

bool ctq_convert_to_f32(const void *src, enum ctq_dtype t, size_t n, float *dst)
{
	const unsigned char *s = src; /* (n * ctq_dtype_size(t)) bytes, any alignment */
	switch (t) {
	case CTQ_DTYPE_F32:
		if (n)
			memcpy(dst, s, n * sizeof *dst);
		return true;
	case CTQ_DTYPE_F16:
	case CTQ_DTYPE_BF16:
		for (size_t i = 0; i < n; i++) {
			uint16_t h;
			memcpy(&h, s + 2 * i, 2);
			dst[i] = t == CTQ_DTYPE_F16 ? ctq_f16_to_f32(h) : ctq_bf16_to_f32(h);
		}
		return true;
	case CTQ_DTYPE_F8_E4M3:
		for (size_t i = 0; i < n; i++)
			dst[i] = ctq_f8e4m3_to_f32(s[i]);
		return true;
	case CTQ_DTYPE_I8:
		for (size_t i = 0; i < n; i++)
			dst[i] = (float)(int8_t)s[i];
		return true;
	case CTQ_DTYPE_U8:
		for (size_t i = 0; i < n; i++)
			dst[i] = (float)s[i];
		return true;
	case CTQ_DTYPE_BOOL:
		for (size_t i = 0; i < n; i++)
			dst[i] = s[i] ? 1.0f : 0.0f;
		return true;
	case CTQ_DTYPE_F64:
	case CTQ_DTYPE_I32:
	case CTQ_DTYPE_I64: {
		const size_t w = ctq_dtype_size(t);
		for (size_t i = 0; i < n; i++)
			dst[i] = wide_to_f32(s + w * i, t);
		return true;
	}
	default:
		return false;
	}
}

void ctq_convert_f32_to_bf16(const float *src, size_t n, uint16_t *dst)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = ctq_f32_to_bf16(src[i]);
}

void ctq_convert_f32_to_f16(const float *src, size_t n, uint16_t *dst)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = ctq_f32_to_f16(src[i]);
}

float ctq_float_at(const void *p, enum ctq_dtype t, int64_t i)
{
	if (t == CTQ_DTYPE_BF16)
		return ctq_bf16_to_f32(((const uint16_t *)p)[i]);
	if (t == CTQ_DTYPE_F16)
		return ctq_f16_to_f32(((const uint16_t *)p)[i]);
	return ((const float *)p)[i];
}

float ctq_float_store(void *p, enum ctq_dtype t, int64_t i, float v)
{
	if (t == CTQ_DTYPE_BF16) {
		const uint16_t b = ctq_f32_to_bf16(v);
		((uint16_t *)p)[i] = b;
		return ctq_bf16_to_f32(b);
	}
	if (t == CTQ_DTYPE_F16) {
		const uint16_t h = ctq_f32_to_f16(v);
		((uint16_t *)p)[i] = h;
		return ctq_f16_to_f32(h);
	}
	((float *)p)[i] = v;
	return v;
}
