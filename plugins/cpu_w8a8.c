/* cpu_w8a8: a CPU W8A8 kernel plug-in (include/ctq_kernel_plugin.h), written
 * against the public header alone, as a third party would: per-token int8
 * quantization, an int32 GEMM and the float epilogue, each in the order the
 * ABI documents, so it declares QUANT_EXACT and GEMM_EXACT. It is the
 * plug-in of the tests (`make` builds it into build/plugins/cpu_w8a8.so)
 * and the example of docs/probing.md.
 *
 * Test switch: CTQ_PLUGIN_PLANT_NAN=K:N[,K:N...] makes gemm_w8a8 write a
 * quiet NaN at output element (M / 2, N / 2) of every call whose geometry
 * is one of those (the plug-in sees shapes, not layer names); ctq probe
 * must catch it and name the layer. Read by the plug-in at each call, so
 * a test can set it per process.
 *
 * Build: cc -O2 -fPIC -shared -ffp-contract=off -Iinclude plugins/cpu_w8a8.c
 *        -o cpu_w8a8.so   (no fused multiply-add: the epilogue rounds each step)
 */
#include "ctq_kernel_plugin.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static float bf16_to_f32(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

/* Round to nearest even; NaN stays a quiet NaN. */
static uint16_t f32_to_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x0040u);
	u += 0x7fffu + ((u >> 16) & 1u);
	return (uint16_t)(u >> 16);
}

static int8_t quantize_one(float x, float s)
{
	if (s == 0.0f)
		return 0;
	float r = rintf(x / s); /* ties to even in the default rounding mode */
	if (r != r)
		return 0;
	if (r > 127.0f)
		return 127;
	if (r < -128.0f)
		return -128;
	return (int8_t)r;
}

static int cpu_quantize(const uint16_t *x, int64_t M, int64_t K, int8_t *q, float *s_tok,
			void *stream, char *msg, size_t msg_cap)
{
	(void)stream, (void)msg, (void)msg_cap;
	for (int64_t m = 0; m < M; m++) {
		const uint16_t *xr = x + m * K; /* (K) bf16 */
		float amax = 0.0f;
		for (int64_t k = 0; k < K; k++) {
			float a = fabsf(bf16_to_f32(xr[k]));
			if (a > amax || a != a) /* NaN is sticky */
				amax = a;
		}
		float s = amax == 0.0f ? 0.0f : amax / 127.0f;
		s_tok[m] = s;
		for (int64_t k = 0; k < K; k++)
			q[m * K + k] = quantize_one(bf16_to_f32(xr[k]), s);
	}
	return 0;
}

/* CTQ_PLUGIN_PLANT_NAN names (K, N)? A malformed list plants nothing. */
static int plant_nan(int64_t K, int64_t N)
{
	const char *e = getenv("CTQ_PLUGIN_PLANT_NAN");
	while (e && *e) {
		char *end;
		long long k = strtoll(e, &end, 10);
		if (end == e || *end != ':')
			return 0;
		long long n = strtoll(end + 1, &end, 10);
		if (k == K && n == N)
			return 1;
		e = *end == ',' ? end + 1 : NULL;
	}
	return 0;
}

static int cpu_gemm_w8a8(const int8_t *q, const float *s_tok, const int8_t *w, const float *s_ch,
			 const float *bias, int64_t M, int64_t N, int64_t K, uint16_t *y, void *ws,
			 size_t ws_bytes, void *stream, char *msg, size_t msg_cap)
{
	(void)ws, (void)ws_bytes, (void)stream;
	if (K > 132104) {
		snprintf(msg, msg_cap, "K = %lld exceeds the int32-exact bound 132104", (long long)K);
		return 1;
	}
	for (int64_t m = 0; m < M; m++) {
		const int8_t *qr = q + m * K; /* (K) */
		for (int64_t n = 0; n < N; n++) {
			const int8_t *wr = w + n * K; /* (K) */
			int32_t acc = 0;
			for (int64_t k = 0; k < K; k++)
				acc += (int32_t)qr[k] * (int32_t)wr[k];
			float v = (float)acc * s_tok[m];
			v = v * s_ch[n];
			v = v + (bias ? bias[n] : 0.0f); /* added even when 0: -0 -> +0 */
			y[m * N + n] = f32_to_bf16(v);
		}
	}
	if (plant_nan(K, N))
		y[(M / 2) * N + N / 2] = 0x7fc0;
	return 0;
}

static int cpu_gemm_bf16(const uint16_t *x, const uint16_t *w, const float *bias, int64_t M,
			 int64_t N, int64_t K, uint16_t *y, void *stream, char *msg, size_t msg_cap)
{
	(void)stream, (void)msg, (void)msg_cap;
	for (int64_t m = 0; m < M; m++)
		for (int64_t n = 0; n < N; n++) {
			float acc = 0.0f;
			for (int64_t k = 0; k < K; k++)
				acc += bf16_to_f32(x[m * K + k]) * bf16_to_f32(w[n * K + k]);
			y[m * N + n] = f32_to_bf16(bias ? acc + bias[n] : acc);
		}
	return 0;
}

static const struct ctq_kernel_plugin table = {
	.abi_version = CTQ_KERNEL_PLUGIN_ABI_VERSION,
	.struct_size = sizeof(struct ctq_kernel_plugin),
	.name = "cpu_w8a8",
	.device = CTQ_KERNEL_PLUGIN_DEVICE_CPU,
	.caps = CTQ_KERNEL_PLUGIN_QUANT_EXACT | CTQ_KERNEL_PLUGIN_GEMM_EXACT,
	.quantize = cpu_quantize,
	.gemm_w8a8 = cpu_gemm_w8a8,
	.gemm_bf16 = cpu_gemm_bf16,
};

const struct ctq_kernel_plugin *ctq_kernel_plugin(uint32_t abi_version);

const struct ctq_kernel_plugin *ctq_kernel_plugin(uint32_t abi_version)
{
	return abi_version == CTQ_KERNEL_PLUGIN_ABI_VERSION ? &table : NULL;
}
