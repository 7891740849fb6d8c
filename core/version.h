/* ctq version: the release number of this tree and the git revision the
 * binary was built from (the Makefile passes it to core/version.c alone;
 * a run's manifest also records the revision of the tree it ran in). */
#ifndef CTQ_CORE_VERSION_H
#define CTQ_CORE_VERSION_H

/* Bumped by hand at a release. */
#define CTQ_VERSION "0.11.0"

/* CTQ_VERSION. */
const char *ctq_version(void);

/* The short git revision of the build, "-dirty" appended when tracked files
 * differed from it; "unknown" when built outside a repository without
 * CTQ_REVISION. */
const char *ctq_build_revision(void);

#endif
