/* Running a shell command from a test and reading what it printed: the one
 * popen helper of the Criterion tests. */
#ifndef CTQ_TESTS_COMMAND_H
#define CTQ_TESTS_COMMAND_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

/* Runs cmd with sh; out (cap bytes, NUL-terminated) receives the first
 * cap - 1 bytes of its stdout (the rest is read and dropped). Returns its
 * exit code, or -1 when it did not exit (a signal). */
static inline int test_command(const char *cmd, char *out, size_t cap)
{
	FILE *p = popen(cmd, "r");
	cr_assert(p, "popen: %s", cmd);
	size_t n = 0, got;
	char sink[4096];
	while ((got = fread(n + 1 < cap ? out + n : sink, 1, n + 1 < cap ? cap - 1 - n : sizeof sink, p)) > 0)
		if (n + 1 < cap)
			n += got;
	if (cap)
		out[n] = '\0';
	const int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The ctq binary under test: CTQ_BIN (set by tools/run-tests.sh), else
 * build/ctq. */
static inline const char *test_ctq_bin(void)
{
	const char *bin = getenv("CTQ_BIN");
	return bin && *bin ? bin : "build/ctq";
}

#endif
