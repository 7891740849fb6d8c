/* ctq version (see version.h). */
#include "core/version.h"

#include <stdio.h>
#include <string.h>

#ifndef CTQ_BUILD_REVISION
#define CTQ_BUILD_REVISION "unknown"
#endif
#ifndef CTQ_BUILD_CUDA_ARCHS
#define CTQ_BUILD_CUDA_ARCHS ""
#endif

const char *ctq_version(void)
{
	return CTQ_VERSION;
}

const char *ctq_build_revision(void)
{
	return CTQ_BUILD_REVISION[0] ? CTQ_BUILD_REVISION : "unknown";
}

const char *ctq_build_cuda_archs(void)
{
	return CTQ_BUILD_CUDA_ARCHS;
}

size_t ctq_arch_next(const char **s, char *word, size_t cap)
{
	while (**s == ' ')
		(*s)++;
	const size_t n = strcspn(*s, " ");
	if (cap)
		snprintf(word, cap, "%.*s", (int)n, *s);
	*s += n;
	return n;
}

/* One entry "sm_86", "sm_90a", "compute_120": its number (86, 90, 120) and
 * whether it is architecture-specific (the "a" suffix). */
static int parse_arch(const char *w, const char *prefix, int *xy, int *specific)
{
	const size_t n = strlen(w), p = strlen(prefix);
	if (n <= p || strncmp(w, prefix, p))
		return 0;
	int v = 0;
	size_t i = p;
	for (; i < n && w[i] >= '0' && w[i] <= '9' && v < 10000; i++)
		v = v * 10 + (w[i] - '0');
	if (i == p)
		return 0;
	*specific = i < n && (w[i] == 'a' || w[i] == 'f');
	if (i + (size_t)*specific != n)
		return 0;
	*xy = v;
	return 1;
}

int ctq_build_runs_on(int major, int minor, char *how, unsigned long cap)
{
	return ctq_archs_run_on(ctq_build_cuda_archs(), major, minor, how, cap);
}

int ctq_archs_run_on(const char *s, int major, int minor, char *how, unsigned long cap)
{
	const int cc = major * 10 + minor;
	char sass[32] = "", ptx[32] = "";
	int best_sass = -1, best_ptx = -1;
	if (how && cap)
		how[0] = '\0';
	/* as the driver picks: the newest machine code of the same major
	 * version not newer than the GPU, else the newest PTX not newer */
	char w[32];
	while (ctq_arch_next(&s, w, sizeof w)) {
		int xy, specific;
		if (parse_arch(w, "sm_", &xy, &specific) && xy / 10 == major &&
		    (specific ? xy == cc : xy % 10 <= minor) && xy > best_sass) {
			best_sass = xy;
			snprintf(sass, sizeof sass, "%s", w);
		}
		if (parse_arch(w, "compute_", &xy, &specific) && (specific ? xy == cc : xy <= cc) &&
		    xy > best_ptx) {
			best_ptx = xy;
			snprintf(ptx, sizeof ptx, "%s", w);
		}
	}
	if (how && cap && sass[0])
		snprintf(how, cap, "%s", sass);
	else if (how && cap && ptx[0])
		snprintf(how, cap, "%s (PTX, compiled by the driver)", ptx);
	return sass[0] || ptx[0];
}
