/* ctq embedded files: the text of repository files the build carries into
 * the binary (tools/embed.sh, the Makefile's EMBED_SRC: the policies/ JSON files),
 * so that a built-in default is the file itself and not a copy in C. */
#ifndef CTQ_CORE_EMBEDDED_H
#define CTQ_CORE_EMBEDDED_H

#include <stddef.h>

#include "core/json.h"
#include "core/status.h"

/* The NUL-terminated text of the file at path (as the repository names it,
 * e.g. "policies/probe.json"), its length in *len when len is not NULL;
 * NULL when the build did not embed it. */
const char *ctq_embedded(const char *path, size_t *len);

/* The embedded file at path parsed as JSON into *root (the caller deletes
 * it). Errors: io-error when the build did not embed it, parse-error. */
enum ctq_status ctq_embedded_json(const char *path, cJSON **root, struct ctq_error *err);

#endif
