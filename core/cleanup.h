/* Temporary folders that an interrupted command must not leave behind.
 *
 * ctq writes every result into a temporary folder beside its final place and
 * renames it when complete (core/fileio.h). A SIGINT, SIGTERM or SIGHUP in
 * between would leave `OUT.tmp-XXXXXX` (or a conform scratch folder) on disk:
 * folders registered here are removed by the signal handler, which then
 * lets the signal take its default course (the exit status still says the
 * command was killed). The handlers are installed with the first
 * registration. Removal in the handler forks and execs rm(1): fork, execve
 * and waitpid are async-signal-safe, a directory walk in the handler is not.
 */
#ifndef CTQ_CORE_CLEANUP_H
#define CTQ_CORE_CLEANUP_H

#include <stdbool.h>

#define CTQ_CLEANUP_MAX 32

/* Registers path (copied) for removal on a signal; false when the table is
 * full or the path too long (the folder is then only removed on the normal
 * paths). */
bool ctq_cleanup_register(const char *path);

/* Forgets path (it was renamed into place or removed). */
void ctq_cleanup_unregister(const char *path);

#endif
