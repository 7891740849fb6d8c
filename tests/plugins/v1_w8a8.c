/* Test plug-in: a version-1 W8A8 plug-in as it was built before ABI
 * version 2 (exact quantize and gemm, no bf16 GEMM). It answers NULL when
 * asked for version 2 and a version-1 table (struct_size
 * CTQ_KERNEL_PLUGIN_V1_SIZE) when asked for 1. The bytes past that size
 * hold a gemm_wna16 that fails loudly: ctq must read none of them (a
 * table it read whole would declare gemm_wna16 without capability bits
 * and be refused). */
#include "ctq_kernel_plugin.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static float bf16_to_f32(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

static uint16_t f32_to_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x0040u);
	u += 0x7fffu + ((u >> 16) & 1u);
	return (uint16_t)(u >> 16);
}

static int v1_quantize(const uint16_t *x, int64_t M, int64_t K, int8_t *q, float *s_tok,
		       void *stream, char *msg, size_t msg_cap)
{
	(void)stream, (void)msg, (void)msg_cap;
	for (int64_t m = 0; m < M; m++) {
		float amax = 0.0f;
		for (int64_t k = 0; k < K; k++) {
			float a = fabsf(bf16_to_f32(x[m * K + k]));
			if (a > amax || a != a)
				amax = a;
		}
		float s = amax == 0.0f ? 0.0f : amax / 127.0f;
		s_tok[m] = s;
		for (int64_t k = 0; k < K; k++) {
			float r = s == 0.0f ? 0.0f : rintf(bf16_to_f32(x[m * K + k]) / s);
			q[m * K + k] = (int8_t)(r != r ? 0 : r > 127.0f ? 127 : r < -128.0f ? -128 : r);
		}
	}
	return 0;
}

static int v1_gemm(const int8_t *q, const float *s_tok, const int8_t *w, const float *s_ch,
		   const float *bias, int64_t M, int64_t N, int64_t K, uint16_t *y, void *ws,
		   size_t ws_bytes, void *stream, char *msg, size_t msg_cap)
{
	(void)ws, (void)ws_bytes, (void)stream, (void)msg, (void)msg_cap;
	for (int64_t m = 0; m < M; m++)
		for (int64_t n = 0; n < N; n++) {
			int32_t acc = 0;
			for (int64_t k = 0; k < K; k++)
				acc += (int32_t)q[m * K + k] * (int32_t)w[n * K + k];
			float v = (float)acc * s_tok[m];
			v = v * s_ch[n];
			y[m * N + n] = f32_to_bf16(v + (bias ? bias[n] : 0.0f));
		}
	return 0;
}

static int not_v1(const uint16_t *x, const int32_t *wp, const float *s, const int32_t *z,
		  const float *bias, int64_t M, int64_t N, int64_t K, int32_t bits, int64_t g,
		  uint16_t *y, void *stream, char *msg, size_t msg_cap)
{
	(void)x, (void)wp, (void)s, (void)z, (void)bias, (void)M, (void)N, (void)K, (void)bits;
	(void)g, (void)y, (void)stream;
	snprintf(msg, msg_cap, "ctq called past the end of a version-1 table");
	return 1;
}

static const struct ctq_kernel_plugin table = {
	.abi_version = 1,
	.struct_size = (uint32_t)CTQ_KERNEL_PLUGIN_V1_SIZE,
	.name = "v1_w8a8",
	.device = CTQ_KERNEL_PLUGIN_DEVICE_CPU,
	.caps = CTQ_KERNEL_PLUGIN_QUANT_EXACT | CTQ_KERNEL_PLUGIN_GEMM_EXACT,
	.quantize = v1_quantize,
	.gemm_w8a8 = v1_gemm,
	.gemm_wna16 = not_v1, /* past struct_size: garbage to a version-1 reader */
};

const struct ctq_kernel_plugin *ctq_kernel_plugin(uint32_t abi_version);

const struct ctq_kernel_plugin *ctq_kernel_plugin(uint32_t abi_version)
{
	return abi_version == 1 ? &table : NULL;
}
