/* ctq run directory: every command that writes results writes them into a
 * temporary directory beside the final one and renames it when complete, so
 * a failed or interrupted command leaves nothing partial. The manifest
 * records what ran, where and on which revision. */
#ifndef CTQ_RESULTS_RUN_H
#define CTQ_RESULTS_RUN_H

#include <stdbool.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "backend/paths.h"
#include "results/env.h"
#include "core/status.h"

#define CTQ_RUN_SCHEMA_VERSION 1

struct ctq_run {
	char final_dir[1024];
	char tmp_dir[1100];
	char started_utc[32];
	struct timespec t0;
	cJSON *manifest;  /* owned; commands may add members before commit */
	bool open;
	bool force;       /* an existing run directory at final_dir may be replaced */
	struct ctq_kpath_counts paths0; /* kernel paths taken before the run began */
	struct ctq_host_load_mark load0; /* the host's load when the run began (host_load) */
};

/* out_dir NULL: runs/<UTC time>-<revision>, with -2, -3, ... appended
 * when that folder exists (a default folder is never replaced). command: the subcommand name;
 * argv is recorded as the command line. force: an existing ctq run
 * directory at out_dir is replaced at commit (--force). out_dir a symbolic
 * link to a folder: the link is followed, the run written into the folder
 * it leads to (final_dir is that folder's real path) and the link kept; a
 * link to anything else is refused. Errors: usage-error naming out_dir
 * when it may not be written (ctq_run_out_check), io-error. */
enum ctq_status ctq_run_begin(struct ctq_run *run, const char *out_dir, bool force,
			      const char *command, int argc, char **argv,
			      struct ctq_error *err);

/* What a path holds, as far as run directories go. A run is finished only
 * once it carries its final name: every run is written under a temporary
 * name (<final>.tmp-XXXXXX) and renamed last, and manifest.json gains
 * ended_utc at commit, so a folder with a temporary name, or with a
 * manifest lacking ended_utc, is a run that did not finish. */
enum ctq_run_dir_kind {
	CTQ_RUN_DIR_ABSENT,     /* nothing there */
	CTQ_RUN_DIR_EMPTY,      /* an empty folder */
	CTQ_RUN_DIR_OTHER,      /* a file, or a folder that is not a ctq run directory */
	CTQ_RUN_DIR_UNFINISHED, /* a ctq run directory whose run did not finish */
	CTQ_RUN_DIR_FINISHED,   /* a finished ctq run directory */
};
enum ctq_run_dir_kind ctq_run_dir_kind(const char *path);

/* OK when path is a finished run directory (what report and compare read);
 * otherwise usage-error naming path and saying why: it does not exist, is
 * not a folder, is not a ctq run directory (no manifest.json with
 * schema_version and command), or holds a run that did not finish. */
enum ctq_status ctq_run_dir_check(const char *path, struct ctq_error *err);

/* OK when out_dir may receive a new run: it does not exist, is an empty
 * folder, or is a ctq run directory and force is set. usage-error naming
 * it otherwise (a non-empty folder or a file that is not a run directory is
 * never replaced). */
enum ctq_status ctq_run_out_check(const char *out_dir, bool force, struct ctq_error *err);

/* Path of a file inside the (temporary) run directory; written into buf. */
const char *ctq_run_path(const struct ctq_run *run, const char *name,
			 char *buf, size_t cap);

struct ctq_csv;
/* Opens the CSV file name inside the (temporary) run directory and writes
 * its header, as ctq_csv_open does. */
enum ctq_status ctq_run_csv_open(const struct ctq_run *run, const char *name, struct ctq_csv *csv,
				 const char *const *header, size_t n_cols, struct ctq_error *err);
/* Writes n_bytes of data to the file name inside the (temporary) run
 * directory, as ctq_file_write_atomic does. */
enum ctq_status ctq_run_write_file(const struct ctq_run *run, const char *name, const void *data,
				   size_t n_bytes, struct ctq_error *err);

/* Writes manifest.json (with ended_utc, the mark of a finished run),
 * rewrites the temporary directory's name into the final one in every text
 * result file under it (CSV, JSON, logs, summary.md, report.html, junit.xml)
 * and renames the directory into place; an existing one is replaced as
 * ctq_tmpdir_commit does, after ctq_run_out_check again. */
enum ctq_status ctq_run_commit(struct ctq_run *run, struct ctq_error *err);

/* Removes the temporary directory; idempotent. */
void ctq_run_abort(struct ctq_run *run);

/* Fills buf with the git revision of the working tree ("unknown" outside a
 * repository) and *dirty. */
void ctq_git_revision(char *buf, size_t cap, bool *dirty);

#endif
