/* ctq status and error model.
 *
 * Every fallible function returns enum ctq_status (CTQ_OK == 0) and fills an
 * optional caller-allocated struct ctq_error: an error class, a path (a JSON
 * path from the root of the file it points into, a module name, or
 * file:offset) and a message naming what was found and what was expected.
 * The first error wins: later calls to ctq_error_set on a filled error keep
 * the first one. Library code never prints.
 */
#ifndef CTQ_CORE_STATUS_H
#define CTQ_CORE_STATUS_H

#include <stdarg.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum ctq_status {
	CTQ_OK = 0,
	CTQ_ERR_PARSE,              /* parse-error */
	CTQ_ERR_INVALID_CONFIG,     /* invalid-config */
	CTQ_ERR_UNKNOWN_PRESET,     /* unknown-preset */
	CTQ_ERR_UNSUPPORTED_FORMAT, /* unsupported-format */
	CTQ_ERR_UNSUPPORTED_SCHEME, /* unsupported-scheme */
	CTQ_ERR_AMBIGUOUS_MATCH,    /* ambiguous-match */
	CTQ_ERR_FUSED_MISMATCH,     /* fused-mismatch */
	CTQ_ERR_ENGINE_DIVERGENT,   /* engine-divergent */
	CTQ_ERR_SHARD_INVALID,      /* shard-invalid */
	CTQ_ERR_CHECKPOINT,         /* checkpoint-error */
	CTQ_ERR_IO,                 /* io-error */
	CTQ_ERR_NOMEM,              /* out-of-memory */
	CTQ_ERR_USAGE,              /* usage (bad command line or bad suite case) */
	CTQ_ERR_ENV,                /* environment cannot do what was asked */
	CTQ_STATUS_COUNT
};

#define CTQ_PATH_MAX 512
#define CTQ_MESSAGE_MAX 1024

struct ctq_error {
	enum ctq_status status;
	char path[CTQ_PATH_MAX];
	char message[CTQ_MESSAGE_MAX];
};

/* The stable name of a status ("parse-error", ...); "ok" for CTQ_OK. */
const char *ctq_status_name(enum ctq_status s);

/* Parses a stable name; returns CTQ_STATUS_COUNT when unknown. */
enum ctq_status ctq_status_from_name(const char *name);

/* Fills err (if non-NULL and still empty) and returns s. path may be NULL. */
enum ctq_status ctq_error_set(struct ctq_error *err, enum ctq_status s,
			      const char *path, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
enum ctq_status ctq_error_vset(struct ctq_error *err, enum ctq_status s,
			       const char *path, const char *fmt, va_list ap);

void ctq_error_clear(struct ctq_error *err);

/* Exit codes (DESIGN.md). */
enum ctq_exit {
	CTQ_EXIT_OK = 0,
	CTQ_EXIT_FAIL = 1,  /* a check failed or a regression was found */
	CTQ_EXIT_USAGE = 2, /* bad usage or bad input */
	CTQ_EXIT_ENV = 3    /* the environment cannot do what was asked */
};

/* The exit code a command returns when it stops on this status. */
int ctq_status_exit_code(enum ctq_status s);

#ifdef __cplusplus
}
#endif

#endif
