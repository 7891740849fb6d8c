/* Test plug-in: a CUDA plug-in (device CUDA; no kernel of its own) whose
 * quantize returns at once and whose gemm_w8a8 never returns. ctq runs a CUDA plug-in in a host process
 * (backend/plugin_host.h), so the probe ends with exit 3 naming this file,
 * gemm_w8a8 and the geometry, and ctq goes on (tests/gpu/test_plugin_gpu.c). */
#include "ctq_kernel_plugin.h"

#include <unistd.h>

static int quantize(const uint16_t *x, int64_t M, int64_t K, int8_t *q, float *s_tok, void *stream,
		    char *msg, size_t cap)
{
	(void)x, (void)M, (void)K, (void)q, (void)s_tok, (void)stream, (void)msg, (void)cap;
	return 0;
}

static int gemm(const int8_t *q, const float *s_tok, const int8_t *w, const float *s_ch,
		const float *bias, int64_t M, int64_t N, int64_t K, uint16_t *y, void *ws, size_t wsb,
		void *stream, char *msg, size_t cap)
{
	(void)q, (void)s_tok, (void)w, (void)s_ch, (void)bias, (void)M, (void)N, (void)K, (void)y;
	(void)ws, (void)wsb, (void)stream, (void)msg, (void)cap;
	for (;;)
		pause();
	return 0;
}

static const struct ctq_kernel_plugin table = {
	.abi_version = CTQ_KERNEL_PLUGIN_ABI_VERSION,
	.struct_size = sizeof(struct ctq_kernel_plugin),
	.name = "hang_gemm_cuda",
	.device = CTQ_KERNEL_PLUGIN_DEVICE_CUDA,
	.quantize = quantize,
	.gemm_w8a8 = gemm,
};

const struct ctq_kernel_plugin *ctq_kernel_plugin(uint32_t abi_version);

const struct ctq_kernel_plugin *ctq_kernel_plugin(uint32_t abi_version)
{
	return abi_version == CTQ_KERNEL_PLUGIN_ABI_VERSION ? &table : NULL;
}
