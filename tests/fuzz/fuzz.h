/* ctq fuzz targets: what every libFuzzer target shares — the input size
 * bound, a private temporary folder (created on the first input, removed at
 * exit) and writing an input into it as a named file.
 *
 * What it is not: a test harness; a target returns 0 for every input and
 * lets the sanitizers (address, undefined, leaks) report what goes wrong. */
#ifndef CTQ_TESTS_FUZZ_H
#define CTQ_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fileio.h"

/* Inputs above 1 MiB are rejected: every parser bounds its own files far
 * higher, so larger inputs only slow the search down. */
#define CTQ_FUZZ_MAX_BYTES ((size_t)1 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char ctq_fuzz_dir_buf[256];

static void ctq_fuzz_cleanup(void)
{
	if (ctq_fuzz_dir_buf[0])
		ctq_remove_tree(ctq_fuzz_dir_buf);
	ctq_fuzz_dir_buf[0] = '\0';
}

/* The target's own folder under $TMPDIR (else /tmp), created once and
 * removed at exit; a crash exits without atexit, so tools/fuzz.sh points
 * TMPDIR at a folder of its own and removes that after the run. */
static inline const char *ctq_fuzz_dir(void)
{
	if (!ctq_fuzz_dir_buf[0]) {
		const char *t = getenv("TMPDIR");
		snprintf(ctq_fuzz_dir_buf, sizeof ctq_fuzz_dir_buf, "%s/ctq-fuzz-XXXXXX",
			 t && *t && strlen(t) < 200 ? t : "/tmp");
		if (!mkdtemp(ctq_fuzz_dir_buf)) {
			perror("ctq fuzz: mkdtemp");
			abort();
		}
		atexit(ctq_fuzz_cleanup);
	}
	return ctq_fuzz_dir_buf;
}

/* dir/name (a static buffer, overwritten by the next call). */
static inline const char *ctq_fuzz_path(const char *name)
{
	static char path[512];
	snprintf(path, sizeof path, "%s/%s", ctq_fuzz_dir(), name);
	return path;
}

/* Writes n bytes to path, replacing it; aborts on failure (the fuzzer's
 * environment, not the input, is broken then). */
static inline void ctq_fuzz_write(const char *path, const void *data, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f || (n && fwrite(data, 1, n, f) != n) || fclose(f)) {
		perror(path);
		abort();
	}
}

#endif
