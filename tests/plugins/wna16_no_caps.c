/* Test plug-in: ABI version 2 with a gemm_wna16 but no capability bit
 * saying which layouts it serves (neither WNA16_INT4 nor WNA16_INT8); ctq
 * must refuse it (exit 2) rather than guess. */
#include "ctq_kernel_plugin.h"

static int gemm(const uint16_t *x, const int32_t *wp, const float *s, const int32_t *z,
		const float *bias, int64_t M, int64_t N, int64_t K, int32_t bits, int64_t g,
		uint16_t *y, void *stream, char *msg, size_t cap)
{
	(void)x, (void)wp, (void)s, (void)z, (void)bias, (void)M, (void)N, (void)K, (void)bits;
	(void)g, (void)y, (void)stream, (void)msg, (void)cap;
	return 1;
}

static const struct ctq_kernel_plugin table = {
	.abi_version = CTQ_KERNEL_PLUGIN_ABI_VERSION,
	.struct_size = sizeof(struct ctq_kernel_plugin),
	.name = "wna16_no_caps",
	.device = CTQ_KERNEL_PLUGIN_DEVICE_CPU,
	.gemm_wna16 = gemm,
};

const struct ctq_kernel_plugin *ctq_kernel_plugin(uint32_t abi_version);

const struct ctq_kernel_plugin *ctq_kernel_plugin(uint32_t abi_version)
{
	return abi_version == CTQ_KERNEL_PLUGIN_ABI_VERSION ? &table : NULL;
}
