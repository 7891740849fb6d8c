/* ctq run directory: every command that writes results writes them into a
 * temporary directory beside the final one and renames it when complete, so
 * a failed or interrupted command leaves nothing partial. The manifest
 * records what ran, where and on which revision. */
#ifndef CTQ_REPORTS_RUN_H
#define CTQ_REPORTS_RUN_H

#include <stdbool.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "core/status.h"

#define CTQ_RUN_SCHEMA_VERSION 1

struct ctq_run {
	char final_dir[1024];
	char tmp_dir[1100];
	char started_utc[32];
	struct timespec t0;
	cJSON *manifest;  /* owned; commands may add members before commit */
	bool open;
};

/* out_dir NULL: runs/<UTC time>-<revision>. command: the subcommand name;
 * argv is recorded as the command line. */
enum ctq_status ctq_run_begin(struct ctq_run *run, const char *out_dir,
			      const char *command, int argc, char **argv,
			      struct ctq_error *err);

/* Path of a file inside the (temporary) run directory; written into buf. */
const char *ctq_run_path(const struct ctq_run *run, const char *name,
			 char *buf, size_t cap);

/* Writes manifest.json and renames the directory into place. */
enum ctq_status ctq_run_commit(struct ctq_run *run, struct ctq_error *err);

/* Removes the temporary directory; idempotent. */
void ctq_run_abort(struct ctq_run *run);

/* Fills buf with the git revision of the working tree ("unknown" outside a
 * repository) and *dirty. */
void ctq_git_revision(char *buf, size_t cap, bool *dirty);

#endif
