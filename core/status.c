/* ctq status names and the first-error-wins error setter. */
#include "core/status.h"

#include <stdio.h>
#include <string.h>

static const char *const status_names[CTQ_STATUS_COUNT] = {
	[CTQ_OK] = "ok",
	[CTQ_ERR_PARSE] = "parse-error",
	[CTQ_ERR_INVALID_CONFIG] = "invalid-config",
	[CTQ_ERR_UNKNOWN_PRESET] = "unknown-preset",
	[CTQ_ERR_UNSUPPORTED_FORMAT] = "unsupported-format",
	[CTQ_ERR_UNSUPPORTED_SCHEME] = "unsupported-scheme",
	[CTQ_ERR_AMBIGUOUS_MATCH] = "ambiguous-match",
	[CTQ_ERR_FUSED_MISMATCH] = "fused-mismatch",
	[CTQ_ERR_ENGINE_DIVERGENT] = "engine-divergent",
	[CTQ_ERR_SHARD_INVALID] = "shard-invalid",
	[CTQ_ERR_CHECKPOINT] = "checkpoint-error",
	[CTQ_ERR_IO] = "io-error",
	[CTQ_ERR_NOMEM] = "out-of-memory",
	[CTQ_ERR_USAGE] = "usage",
	[CTQ_ERR_ENV] = "environment",
};

const char *ctq_status_name(enum ctq_status s)
{
	if ((unsigned)s >= CTQ_STATUS_COUNT)
		return "unknown-status";
	return status_names[s];
}

enum ctq_status ctq_status_from_name(const char *name)
{
	for (int i = 0; i < CTQ_STATUS_COUNT; i++)
		if (strcmp(status_names[i], name) == 0)
			return (enum ctq_status)i;
	return CTQ_STATUS_COUNT;
}

enum ctq_status ctq_error_vset(struct ctq_error *err, enum ctq_status s,
			       const char *path, const char *fmt, va_list ap)
{
	if (!err || err->status != CTQ_OK || s == CTQ_OK)
		return s;
	err->status = s;
	snprintf(err->path, sizeof err->path, "%s", path ? path : "");
	vsnprintf(err->message, sizeof err->message, fmt, ap);
	return s;
}

enum ctq_status ctq_error_set(struct ctq_error *err, enum ctq_status s,
			      const char *path, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ctq_error_vset(err, s, path, fmt, ap);
	va_end(ap);
	return s;
}

void ctq_error_clear(struct ctq_error *err)
{
	if (!err)
		return;
	err->status = CTQ_OK;
	err->path[0] = '\0';
	err->message[0] = '\0';
}

int ctq_status_exit_code(enum ctq_status s)
{
	switch (s) {
	case CTQ_OK:
		return CTQ_EXIT_OK;
	case CTQ_ERR_ENV:
		return CTQ_EXIT_ENV;
	default:
		return CTQ_EXIT_USAGE;
	}
}
