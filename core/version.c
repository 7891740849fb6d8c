/* ctq version (see version.h). */
#include "core/version.h"

#ifndef CTQ_BUILD_REVISION
#define CTQ_BUILD_REVISION "unknown"
#endif

const char *ctq_version(void)
{
	return CTQ_VERSION;
}

const char *ctq_build_revision(void)
{
	return CTQ_BUILD_REVISION[0] ? CTQ_BUILD_REVISION : "unknown";
}
