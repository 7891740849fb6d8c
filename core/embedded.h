/* ctq embedded files: the text of repository files the build carries into
 * the binary (tools/embed.sh, the Makefile's EMBED_SRC: the policies/ JSON files),
 * so that a built-in default is the file itself and not a copy in C. */
#ifndef CTQ_CORE_EMBEDDED_H
#define CTQ_CORE_EMBEDDED_H

#include <stddef.h>

/* The NUL-terminated text of the file at path (as the repository names it,
 * e.g. "policies/probe.json"), its length in *len when len is not NULL;
 * NULL when the build did not embed it. */
const char *ctq_embedded(const char *path, size_t *len);

#endif
