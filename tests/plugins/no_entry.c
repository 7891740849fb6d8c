/* Test plug-in: a shared object that exports no ctq_kernel_plugin entry
 * point (a misspelt one instead); ctq must refuse it (exit 2). */
#include "ctq_kernel_plugin.h"

const struct ctq_kernel_plugin *ctq_kernel_plugin_v1(uint32_t abi_version);

const struct ctq_kernel_plugin *ctq_kernel_plugin_v1(uint32_t abi_version)
{
	(void)abi_version;
	return 0;
}
