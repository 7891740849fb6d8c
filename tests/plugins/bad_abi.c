/* Test plug-in: a complete table that states kernel plug-in ABI version 3,
 * which this ctq does not speak; ctq must refuse it (exit 2). */
#include "ctq_kernel_plugin.h"

static int quantize(const uint16_t *x, int64_t M, int64_t K, int8_t *q, float *s, void *stream,
		    char *msg, size_t cap)
{
	(void)x, (void)M, (void)K, (void)q, (void)s, (void)stream, (void)msg, (void)cap;
	return 1;
}

static int gemm(const int8_t *q, const float *s_tok, const int8_t *w, const float *s_ch,
		const float *bias, int64_t M, int64_t N, int64_t K, uint16_t *y, void *ws, size_t wsb,
		void *stream, char *msg, size_t cap)
{
	(void)q, (void)s_tok, (void)w, (void)s_ch, (void)bias, (void)M, (void)N, (void)K, (void)y;
	(void)ws, (void)wsb, (void)stream, (void)msg, (void)cap;
	return 1;
}

static const struct ctq_kernel_plugin table = {
	.abi_version = 3,
	.struct_size = sizeof(struct ctq_kernel_plugin),
	.name = "bad_abi",
	.device = CTQ_KERNEL_PLUGIN_DEVICE_CPU,
	.quantize = quantize,
	.gemm_w8a8 = gemm,
};

const struct ctq_kernel_plugin *ctq_kernel_plugin(uint32_t abi_version);

const struct ctq_kernel_plugin *ctq_kernel_plugin(uint32_t abi_version)
{
	(void)abi_version;
	return &table;
}
