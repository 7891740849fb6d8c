/* Test plug-in: gemm_workspace_bytes answers SIZE_MAX - 8, which once
 * overflowed ctq's alignment padding (a 255-byte block handed over as
 * SIZE_MAX - 8 bytes); gemm_w8a8 writes the first 4 KiB of its workspace.
 * ctq must refuse the size (exit 3) naming this file and the field. */
#include "ctq_kernel_plugin.h"

#include <string.h>

static int quantize(const uint16_t *x, int64_t M, int64_t K, int8_t *q, float *s_tok, void *stream,
		    char *msg, size_t cap)
{
	(void)x, (void)stream, (void)msg, (void)cap;
	for (int64_t m = 0; m < M; m++) {
		s_tok[m] = 1.0f;
		for (int64_t k = 0; k < K; k++)
			q[m * K + k] = 0;
	}
	return 0;
}

static size_t ws_bytes(int64_t M, int64_t N, int64_t K)
{
	(void)M, (void)N, (void)K;
	return SIZE_MAX - 8;
}

static int gemm(const int8_t *q, const float *s_tok, const int8_t *w, const float *s_ch,
		const float *bias, int64_t M, int64_t N, int64_t K, uint16_t *y, void *ws, size_t wsb,
		void *stream, char *msg, size_t cap)
{
	(void)q, (void)s_tok, (void)w, (void)s_ch, (void)bias, (void)K;
	(void)stream, (void)msg, (void)cap;
	memset(ws, 0x5a, wsb < 4096 ? wsb : 4096);
	for (int64_t i = 0; i < M * N; i++)
		y[i] = 0;
	return 0;
}

static const struct ctq_kernel_plugin table = {
	.abi_version = CTQ_KERNEL_PLUGIN_ABI_VERSION,
	.struct_size = sizeof(struct ctq_kernel_plugin),
	.name = "huge_ws",
	.device = CTQ_KERNEL_PLUGIN_DEVICE_CPU,
	.quantize = quantize,
	.gemm_workspace_bytes = ws_bytes,
	.gemm_w8a8 = gemm,
};

const struct ctq_kernel_plugin *ctq_kernel_plugin(uint32_t abi_version);

const struct ctq_kernel_plugin *ctq_kernel_plugin(uint32_t abi_version)
{
	return abi_version == CTQ_KERNEL_PLUGIN_ABI_VERSION ? &table : NULL;
}
