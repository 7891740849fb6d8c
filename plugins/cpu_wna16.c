/* cpu_wna16: a CPU weight-only kernel plug-in (include/ctq_kernel_plugin.h,
 * ABI version 2), written against the public header alone as a third party
 * would: BF16 activations times int4 / int8 pack-quantized weights, per
 * channel or per group, symmetric or with zero points, dequantized and
 * summed in the order the ABI documents, so it declares WNA16_EXACT. It
 * provides gemm_wna16 only (no W8A8 pair), the example of a weight-only
 * plug-in in docs/probing.md and the plug-in of the tests.
 *
 * Planted defect: CTQ_WNA16_PLANT=group-stride reads the scale of (n, g)
 * at g * N + n, as if weight_scale were stored [n_groups, N] (a wrong
 * group stride, the kind of bug behind the field report's weight-only
 * kernel): per channel it is still right, with groups every output is
 * wrong. ctq probe must fail it on every geometry and name each layer.
 * Read at each call (a plug-in may read its own environment).
 *
 * Build: cc -O2 -fPIC -shared -ffp-contract=off -Iinclude plugins/cpu_wna16.c
 *        -o cpu_wna16.so   (no fused multiply-add: each step rounds)
 */
#include "ctq_kernel_plugin.h"

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

/* Value i of a run packed pf to a word (b bits each, offset 2^(b-1)). */
static int unpack(const int32_t *p, int64_t i, int bits)
{
	const int pf = 32 / bits;
	const uint32_t w = (uint32_t)p[i / pf];
	return (int)((w >> ((i % pf) * bits)) & ((1u << bits) - 1u)) - (1 << (bits - 1));
}

static int cpu_gemm_wna16(const uint16_t *x, const int32_t *w_packed, const float *scale,
			  const int32_t *zero_packed, const float *bias, int64_t M, int64_t N,
			  int64_t K, int32_t bits, int64_t group_size, uint16_t *y, void *stream,
			  char *msg, size_t msg_cap)
{
	(void)stream;
	if (bits != 4 && bits != 8) {
		snprintf(msg, msg_cap, "bits %d; this plug-in serves 4 and 8", (int)bits);
		return 1;
	}
	const char *plant = getenv("CTQ_WNA16_PLANT");
	const int wrong_stride = plant && !strcmp(plant, "group-stride");
	const int64_t G = group_size > 0 ? group_size : K, n_groups = (K + G - 1) / G;
	const int64_t words = (K + 32 / bits - 1) / (32 / bits);
	/* xt (K, M): one k's tokens side by side; w (K): row n dequantized;
	 * acc (M): each token's sum, in k order. */
	float *xt = malloc((size_t)(K * M + K + M) * sizeof *xt);
	if (!xt) {
		snprintf(msg, msg_cap, "out of memory (%lld floats)", (long long)(K * M + K + M));
		return 2;
	}
	float *w = xt + K * M, *acc = w + K;
	for (int64_t m = 0; m < M; m++)
		for (int64_t k = 0; k < K; k++)
			xt[k * M + m] = bf16_to_f32(x[m * K + k]);
	for (int64_t n = 0; n < N; n++) {
		for (int64_t k = 0; k < K; k++) {
			const int64_t g = k / G;
			const float s = scale[wrong_stride ? g * N + n : n * n_groups + g];
			int z = 0;
			if (zero_packed) {
				const int pf = 32 / bits;
				const uint32_t zw = (uint32_t)zero_packed[(n / pf) * n_groups + g];
				z = (int)((zw >> ((n % pf) * bits)) & ((1u << bits) - 1u)) - (1 << (bits - 1));
			}
			w[k] = (float)(unpack(w_packed + n * words, k, bits) - z) * s;
		}
		memset(acc, 0, (size_t)M * sizeof *acc);
		for (int64_t k = 0; k < K; k++)
			for (int64_t m = 0; m < M; m++)
				acc[m] = acc[m] + xt[k * M + m] * w[k];
		for (int64_t m = 0; m < M; m++)
			y[m * N + n] = f32_to_bf16(acc[m] + (bias ? bias[n] : 0.0f));
	}
	free(xt);
	return 0;
}

static const struct ctq_kernel_plugin table = {
	.abi_version = CTQ_KERNEL_PLUGIN_ABI_VERSION,
	.struct_size = sizeof(struct ctq_kernel_plugin),
	.name = "cpu_wna16",
	.device = CTQ_KERNEL_PLUGIN_DEVICE_CPU,
	.caps = CTQ_KERNEL_PLUGIN_WNA16_INT4 | CTQ_KERNEL_PLUGIN_WNA16_INT8 |
		CTQ_KERNEL_PLUGIN_WNA16_GROUPS | CTQ_KERNEL_PLUGIN_WNA16_ASYM |
		CTQ_KERNEL_PLUGIN_WNA16_EXACT,
	.gemm_wna16 = cpu_gemm_wna16,
};

const struct ctq_kernel_plugin *ctq_kernel_plugin(uint32_t abi_version);

const struct ctq_kernel_plugin *ctq_kernel_plugin(uint32_t abi_version)
{
	return abi_version == CTQ_KERNEL_PLUGIN_ABI_VERSION ? &table : NULL;
}
