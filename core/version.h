/* ctq version: the release number of this tree and the git revision the
 * binary was built from (the Makefile passes it to core/version.c alone;
 * a run's manifest also records the revision of the tree it ran in). */
#ifndef CTQ_CORE_VERSION_H
#define CTQ_CORE_VERSION_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped by hand at a release. */
#define CTQ_VERSION "0.11.0"

/* CTQ_VERSION. */
const char *ctq_version(void);

/* The short git revision of the build, "-dirty" appended when tracked files
 * differed from it; "unknown" when built outside a repository without
 * CTQ_REVISION. */
const char *ctq_build_revision(void);

/* The GPU code the binary carries, as the build's CUDA_ARCH named it:
 * space-separated sm_XY (machine code for that architecture) and
 * compute_XY (PTX the driver compiles for later GPUs), e.g. "sm_80 sm_86
 * sm_89 sm_90a sm_100 sm_120 compute_120"; "" in a build without CUDA. */
const char *ctq_build_cuda_archs(void);

/* Whether the build carries code a GPU of compute capability major.minor
 * runs: machine code sm_XY with X == major and Y <= minor (sm_XYa only for
 * exactly X.Y), or PTX compute_XY with XY <= the capability (compute_XYa
 * only for exactly X.Y). *how (may be NULL) receives the entry that
 * covers it ("sm_86", or "compute_120 (PTX, compiled by the driver)"),
 * machine code preferred; "" when none does. */
int ctq_build_runs_on(int major, int minor, char *how, unsigned long cap);
/* The next entry of a list in CUDA_ARCH's form: skips blanks at *s,
 * copies the entry into word (cap bytes, cut if longer), advances *s past
 * it. Returns its length; 0 at the end of the list. */
size_t ctq_arch_next(const char **s, char *word, size_t cap);

/* The same rule over any list in CUDA_ARCH's form (tests). */
int ctq_archs_run_on(const char *archs, int major, int minor, char *how, unsigned long cap);

#ifdef __cplusplus
}
#endif

#endif
