/* Test plug-in: declares QUANT_EXACT but computes the token scale as
 * amax * (1 / 127) instead of amax / 127 (a common shortcut that differs
 * in the last bit for some amax), so only the probe's bit-exact check can
 * catch it: its rel-L2 stays far below the kernel threshold. */
#include "ctq_kernel_plugin.h"

#include <math.h>
#include <string.h>

static float bf16_to_f32(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

static int quantize(const uint16_t *x, int64_t M, int64_t K, int8_t *q, float *s_tok, void *stream,
		    char *msg, size_t cap)
{
	(void)stream, (void)msg, (void)cap;
	for (int64_t m = 0; m < M; m++) {
		float amax = 0.0f;
		for (int64_t k = 0; k < K; k++)
			amax = fmaxf(amax, fabsf(bf16_to_f32(x[m * K + k])));
		float s = amax * (1.0f / 127.0f);
		s_tok[m] = s;
		for (int64_t k = 0; k < K; k++) {
			float r = s == 0.0f ? 0.0f : rintf(bf16_to_f32(x[m * K + k]) / s);
			q[m * K + k] = (int8_t)(r > 127.0f ? 127.0f : r < -128.0f ? -128.0f : r);
		}
	}
	return 0;
}

static int gemm(const int8_t *q, const float *s_tok, const int8_t *w, const float *s_ch,
		const float *bias, int64_t M, int64_t N, int64_t K, uint16_t *y, void *ws, size_t wsb,
		void *stream, char *msg, size_t cap)
{
	(void)ws, (void)wsb, (void)stream, (void)msg, (void)cap;
	for (int64_t m = 0; m < M; m++)
		for (int64_t n = 0; n < N; n++) {
			int32_t acc = 0;
			for (int64_t k = 0; k < K; k++)
				acc += (int32_t)q[m * K + k] * (int32_t)w[n * K + k];
			float v = (float)acc * s_tok[m];
			v = v * s_ch[n];
			v = v + (bias ? bias[n] : 0.0f);
			uint32_t u;
			memcpy(&u, &v, sizeof u);
			u += 0x7fffu + ((u >> 16) & 1u); /* finite inputs only in this test */
			y[m * N + n] = (uint16_t)(u >> 16);
		}
	return 0;
}

static const struct ctq_kernel_plugin table = {
	.abi_version = CTQ_KERNEL_PLUGIN_ABI_VERSION,
	.struct_size = sizeof(struct ctq_kernel_plugin),
	.name = "recip_scale",
	.device = CTQ_KERNEL_PLUGIN_DEVICE_CPU,
	.caps = CTQ_KERNEL_PLUGIN_QUANT_EXACT,
	.quantize = quantize,
	.gemm_w8a8 = gemm,
};

const struct ctq_kernel_plugin *ctq_kernel_plugin(uint32_t abi_version);

const struct ctq_kernel_plugin *ctq_kernel_plugin(uint32_t abi_version)
{
	return abi_version == CTQ_KERNEL_PLUGIN_ABI_VERSION ? &table : NULL;
}
