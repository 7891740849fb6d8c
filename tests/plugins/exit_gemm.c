/* Test plug-in: quantize works, gemm_w8a8 ends its process with
 * _exit(7) instead of returning (tests/test_plugin_host.c: the host's
 * caller names the exit status, the op and the geometry). */
#include <unistd.h>

#include "ctq_kernel_plugin.h"

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

static int gemm(const int8_t *q, const float *s_tok, const int8_t *w, const float *s_ch,
		const float *bias, int64_t M, int64_t N, int64_t K, uint16_t *y, void *ws, size_t wsb,
		void *stream, char *msg, size_t cap)
{
	(void)q, (void)s_tok, (void)w, (void)s_ch, (void)bias, (void)M, (void)N, (void)K, (void)y;
	(void)ws, (void)wsb, (void)stream, (void)msg, (void)cap;
	_exit(7);
}

static const struct ctq_kernel_plugin table = {
	.abi_version = CTQ_KERNEL_PLUGIN_ABI_VERSION,
	.struct_size = sizeof(struct ctq_kernel_plugin),
	.name = "exit_gemm",
	.device = CTQ_KERNEL_PLUGIN_DEVICE_CPU,
	.quantize = quantize,
	.gemm_w8a8 = gemm,
};

const struct ctq_kernel_plugin *ctq_kernel_plugin(uint32_t abi_version);

const struct ctq_kernel_plugin *ctq_kernel_plugin(uint32_t abi_version)
{
	return abi_version == CTQ_KERNEL_PLUGIN_ABI_VERSION ? &table : NULL;
}
