/* ctq run directory and manifest (see run.h). */
#define _GNU_SOURCE
#include "results/run.h"
#include "core/arena.h"
#include "core/fileio.h"
#include "core/json.h"
#include "core/version.h"
#include "backend/knobs.h"
#include "results/csv_out.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

static void utc_now(char *buf, size_t cap, const char *fmt)
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, cap, fmt, &tm);
}

/* CTQ_REVISION (e.g. "1a2b3c4d5e6f" or "1a2b3c4d5e6f-dirty") names the
 * revision where the tree was copied without its history (GPU hosts that
 * receive a working tree); otherwise git is asked. */
void ctq_git_revision(char *buf, size_t cap, bool *dirty)
{
	const char *env = ctq_env(CTQ_ENV_REVISION);
	if (env && *env) {
		size_t n = strlen(env);
		*dirty = n > 6 && !strcmp(env + n - 6, "-dirty");
		snprintf(buf, cap, "%.*s", (int)(*dirty ? n - 6 : n), env);
		return;
	}
	ctq_read_cmd_line("git rev-parse --short=12 HEAD 2>/dev/null", buf, cap);
	if (!buf[0])
		snprintf(buf, cap, "unknown");
	char st[8];
	ctq_read_cmd_line("git status --porcelain --untracked-files=no 2>/dev/null | head -n 1",
		 st, sizeof st);
	*dirty = st[0] != '\0';
}

static void cpu_model(char *buf, size_t cap)
{
	ctq_read_cmd_line("sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1",
		 buf, cap);
	if (!buf[0])
		snprintf(buf, cap, "unknown");
}

/* Whether the last component of path is a temporary name that
 * ctq_tmpdir_beside made: ".tmp-" and six characters of mkdtemp's. */
static bool is_tmp_name(const char *path)
{
	size_t n = strlen(path);
	while (n > 1 && path[n - 1] == '/')
		n--;
	if (n < 11 || memcmp(path + n - 11, ".tmp-", 5) != 0)
		return false;
	for (size_t i = n - 6; i < n; i++)
		if (!isalnum((unsigned char)path[i]))
			return false;
	return true;
}

/* The kind of path, and for the refusals why (into why, cap bytes). */
static enum ctq_run_dir_kind dir_kind(const char *path, char *why, size_t cap)
{
	struct stat sb;
	if (lstat(path, &sb) != 0) {
		snprintf(why, cap, "does not exist");
		return CTQ_RUN_DIR_ABSENT;
	}
	if (S_ISLNK(sb.st_mode) && !ctq_path_is_dir(path)) {
		snprintf(why, cap, "is a symbolic link that does not lead to a folder (a link is "
			 "followed only to a folder)");
		return CTQ_RUN_DIR_OTHER;
	}
	if (!S_ISDIR(sb.st_mode) && !S_ISLNK(sb.st_mode)) {
		snprintf(why, cap, "is not a folder");
		return CTQ_RUN_DIR_OTHER;
	}
	if (ctq_dir_is_empty(path)) {
		snprintf(why, cap, "is an empty folder, not a ctq run directory (no manifest.json)");
		return CTQ_RUN_DIR_EMPTY;
	}
	char mpath[4200];
	snprintf(mpath, sizeof mpath, "%s/manifest.json", path);
	if (lstat(mpath, &sb) != 0 || !S_ISREG(sb.st_mode)) {
		snprintf(why, cap, "is not a ctq run directory (no manifest.json)");
		return CTQ_RUN_DIR_OTHER;
	}
	cJSON *m = NULL;
	struct ctq_error e = {0};
	if (ctq_json_load_file(mpath, (size_t)64 << 20, NULL, &m, &e)) {
		snprintf(why, cap, "is not a ctq run directory (manifest.json does not parse: %s)",
			 e.message);
		return CTQ_RUN_DIR_OTHER;
	}
	enum ctq_run_dir_kind k = CTQ_RUN_DIR_FINISHED;
	if (!cJSON_IsNumber(ctq_json_get(m, "schema_version")) ||
	    !cJSON_IsString(ctq_json_get(m, "command"))) {
		snprintf(why, cap, "is not a ctq run directory (manifest.json has no schema_version and command)");
		k = CTQ_RUN_DIR_OTHER;
	} else if (is_tmp_name(path)) {
		snprintf(why, cap, "holds a run that did not finish: it still has the temporary name "
			 "*.tmp-XXXXXX (a run is finished only when renamed to its final name)");
		k = CTQ_RUN_DIR_UNFINISHED;
	} else if (!cJSON_IsString(ctq_json_get(m, "ended_utc"))) {
		snprintf(why, cap, "holds a run that did not finish: manifest.json has no ended_utc "
			 "(written when the run commits)");
		k = CTQ_RUN_DIR_UNFINISHED;
	}
	cJSON_Delete(m);
	return k;
}

enum ctq_run_dir_kind ctq_run_dir_kind(const char *path)
{
	char why[512];
	return dir_kind(path, why, sizeof why);
}

enum ctq_status ctq_run_dir_check(const char *path, struct ctq_error *err)
{
	char why[512];
	if (dir_kind(path, why, sizeof why) == CTQ_RUN_DIR_FINISHED)
		return CTQ_OK;
	return ctq_error_set(err, CTQ_ERR_USAGE, path, "%s; expected a finished ctq run directory", why);
}

enum ctq_status ctq_run_out_check(const char *out_dir, bool force, struct ctq_error *err)
{
	char why[512];
	switch (dir_kind(out_dir, why, sizeof why)) {
	case CTQ_RUN_DIR_ABSENT:
	case CTQ_RUN_DIR_EMPTY:
		return CTQ_OK;
	case CTQ_RUN_DIR_OTHER:
		return ctq_error_set(err, CTQ_ERR_USAGE, out_dir,
				     "already exists and %s; refusing to replace it (--out takes a new "
				     "folder, an empty one, or a ctq run directory with --force)",
				     why);
	case CTQ_RUN_DIR_UNFINISHED:
	case CTQ_RUN_DIR_FINISHED:
		if (force)
			return CTQ_OK;
		return ctq_error_set(err, CTQ_ERR_USAGE, out_dir,
				     "is an existing ctq run directory; --force replaces it");
	}
	return CTQ_OK;
}

enum ctq_status ctq_run_begin(struct ctq_run *run, const char *out_dir, bool force,
			      const char *command, int argc, char **argv,
			      struct ctq_error *err)
{
	memset(run, 0, sizeof *run);
	run->force = force;
	clock_gettime(CLOCK_REALTIME, &run->t0);
	ctq_host_load_mark(&run->load0);
	utc_now(run->started_utc, sizeof run->started_utc, "%Y-%m-%dT%H:%M:%SZ");
	char rev[64];
	bool dirty;
	ctq_git_revision(rev, sizeof rev, &dirty);
	if (out_dir) {
		snprintf(run->final_dir, sizeof run->final_dir, "%s", out_dir);
		/* The temporary folder goes beside the final one, not inside. */
		size_t n = strlen(run->final_dir);
		while (n > 1 && run->final_dir[n - 1] == '/')
			run->final_dir[--n] = '\0';
		/* --out LINK, a symbolic link to a folder: the run goes into the
		 * folder it leads to (the temporary folder beside that one, the
		 * commit onto it, on its filesystem) and the link stays as it
		 * is. Replacing the link by the run was the old behaviour. A link
		 * to anything else is refused by ctq_run_out_check. */
		struct stat sb;
		if (lstat(run->final_dir, &sb) == 0 && S_ISLNK(sb.st_mode) &&
		    ctq_path_is_dir(run->final_dir)) {
			char real[PATH_MAX];
			if (!realpath(run->final_dir, real))
				return ctq_error_set(err, CTQ_ERR_IO, out_dir,
						     "cannot follow the symbolic link: %s", strerror(errno));
			if (strlen(real) >= sizeof run->final_dir)
				return ctq_error_set(err, CTQ_ERR_USAGE, out_dir,
						     "leads to %s, a path of more than %zu bytes", real,
						     sizeof run->final_dir - 1);
			snprintf(run->final_dir, sizeof run->final_dir, "%s", real);
		}
	} else {
		char stamp[32];
		utc_now(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ");
		snprintf(run->final_dir, sizeof run->final_dir, "runs/%s-%s%s",
			 stamp, rev, dirty ? "-dirty" : "");
		/* Two runs in one second get their own folders (-2, -3, ...):
		 * a default folder is never replaced. */
		size_t n = strlen(run->final_dir);
		for (int k = 2; ctq_path_exists(run->final_dir) && k < 1000; k++)
			snprintf(run->final_dir + n, sizeof run->final_dir - n, "-%d", k);
	}
	enum ctq_status st = ctq_run_out_check(run->final_dir, force, err);
	if (st)
		return st;
	st = ctq_tmpdir_beside(run->final_dir, run->tmp_dir, sizeof run->tmp_dir, err);
	if (st)
		return st;
	run->open = true;
	cJSON *m = cJSON_CreateObject();
	run->manifest = m;
	if (!m) {
		ctq_run_abort(run);
		return ctq_error_set(err, CTQ_ERR_NOMEM, "manifest", "out of memory");
	}
	cJSON_AddNumberToObject(m, "schema_version", CTQ_RUN_SCHEMA_VERSION);
	cJSON_AddStringToObject(m, "command", command);
	cJSON *av = cJSON_AddArrayToObject(m, "argv");
	for (int i = 0; av && i < argc; i++)
		cJSON_AddItemToArray(av, cJSON_CreateString(argv[i]));
	cJSON_AddStringToObject(m, "started_utc", run->started_utc);
	/* To the microsecond: ctq compare --ab orders the runs of two run sets
	 * by it to check that they were interleaved. */
	cJSON_AddNumberToObject(m, "started_unix_s",
				(double)run->t0.tv_sec + 1e-9 * (double)run->t0.tv_nsec);
	cJSON *ctq = cJSON_AddObjectToObject(m, "ctq");
	cJSON_AddStringToObject(ctq, "version", ctq_version());
	cJSON_AddStringToObject(ctq, "build_revision", ctq_build_revision());
	/* the GPU code the binary carries (Makefile CUDA_ARCH) */
	cJSON *archs = cJSON_AddArrayToObject(ctq, "cuda_archs");
	char w[32];
	for (const char *a = ctq_build_cuda_archs(); archs && ctq_arch_next(&a, w, sizeof w);)
		cJSON_AddItemToArray(archs, cJSON_CreateString(w));
	ctq_kpaths_snapshot(&run->paths0);
	/* the dispatch knobs of every run (CTQ_ARCH above all: which GPU
	 * generation's choices the kernels made) */
	ctq_knobs_to_json(m);
	cJSON *git = cJSON_AddObjectToObject(m, "git");
	cJSON_AddStringToObject(git, "revision", rev);
	cJSON_AddBoolToObject(git, "dirty", dirty);
	struct utsname u;
	cJSON *host = cJSON_AddObjectToObject(m, "host");
	if (uname(&u) == 0) {
		cJSON_AddStringToObject(host, "name", u.nodename);
		cJSON_AddStringToObject(host, "kernel", u.release);
		cJSON_AddStringToObject(host, "machine", u.machine);
	}
	char cpu[256];
	cpu_model(cpu, sizeof cpu);
	cJSON_AddStringToObject(host, "cpu", cpu);
	cJSON_AddNumberToObject(host, "cpus_online", (double)sysconf(_SC_NPROCESSORS_ONLN));
	return CTQ_OK;
}

const char *ctq_run_path(const struct ctq_run *run, const char *name,
			 char *buf, size_t cap)
{
	snprintf(buf, cap, "%s/%s", run->tmp_dir, name);
	return buf;
}

enum ctq_status ctq_run_csv_open(const struct ctq_run *run, const char *name, struct ctq_csv *csv,
				 const char *const *header, size_t n_cols, struct ctq_error *err)
{
	char path[sizeof run->tmp_dir + 100];
	return ctq_csv_open(csv, ctq_run_path(run, name, path, sizeof path), header, n_cols, err);
}

enum ctq_status ctq_run_write_file(const struct ctq_run *run, const char *name, const void *data,
				   size_t n_bytes, struct ctq_error *err)
{
	char path[sizeof run->tmp_dir + 100];
	return ctq_file_write_atomic(ctq_run_path(run, name, path, sizeof path), data, n_bytes, err);
}

/* Whether name is a text result file (CSV, JSON, log, Markdown, HTML, XML,
 * gnuplot script) that may name the run directory. */
static bool is_text_result(const char *name)
{
	static const char *const ext[] = {".csv", ".json", ".txt", ".md", ".html", ".xml", ".gp",
					  ".log"};
	size_t n = strlen(name);
	for (size_t i = 0; i < sizeof ext / sizeof *ext; i++) {
		size_t k = strlen(ext[i]);
		if (n > k && !strcmp(name + n - k, ext[i]))
			return true;
	}
	return false;
}

/* Rewrites, in every text result file under dir, the temporary name from
 * into the final name to: the steps and reporters of a run write while it
 * is still in its temporary folder, and a reader of the finished run must
 * see only the final name. Files over 256 MiB and binary files (tensors)
 * are left as they are. */
static enum ctq_status final_names(const char *dir, const char *from, const char *to, int depth,
				   struct ctq_error *err)
{
	DIR *d = opendir(dir);
	if (!d || depth > 16) {
		if (d)
			closedir(d);
		return CTQ_OK;
	}
	size_t nf = strlen(from), nt = strlen(to);
	enum ctq_status st = CTQ_OK;
	struct dirent *e;
	while (!st && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char path[4200];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		struct stat sb;
		if (lstat(path, &sb) != 0)
			continue;
		if (S_ISDIR(sb.st_mode)) {
			st = final_names(path, from, to, depth + 1, err);
			continue;
		}
		if (!S_ISREG(sb.st_mode) || !is_text_result(e->d_name) || sb.st_size > (off_t)256 << 20)
			continue;
		char *text = NULL;
		size_t n = 0;
		if (ctq_file_read(path, (size_t)256 << 20, &text, &n, NULL))
			continue;
		size_t hits = 0;
		for (const char *c = text; (c = strstr(c, from)); c += nf)
			hits++;
		if (!hits || memchr(text, '\0', n)) {
			ctq_free(text);
			continue;
		}
		char *out = ctq_malloc(n + hits * nt + 1), *w = out;
		if (!out) {
			ctq_free(text);
			st = ctq_error_set(err, CTQ_ERR_NOMEM, path, "out of memory");
			break;
		}
		for (const char *c = text, *h; c < text + n; c = h + nf) {
			if (!(h = strstr(c, from))) {
				memcpy(w, c, (size_t)(text + n - c));
				w += text + n - c;
				break;
			}
			memcpy(w, c, (size_t)(h - c));
			w += h - c;
			memcpy(w, to, nt);
			w += nt;
		}
		st = ctq_file_write_atomic(path, out, (size_t)(w - out), err);
		ctq_free(out);
		ctq_free(text);
	}
	closedir(d);
	return st;
}

enum ctq_status ctq_run_commit(struct ctq_run *run, struct ctq_error *err)
{
	char ended[32];
	utc_now(ended, sizeof ended, "%Y-%m-%dT%H:%M:%SZ");
	struct timespec t1;
	clock_gettime(CLOCK_REALTIME, &t1);
	cJSON_AddStringToObject(run->manifest, "ended_utc", ended);
	/* which kernel each op ran during this run (backend/paths.h) */
	cJSON_DeleteItemFromObjectCaseSensitive(run->manifest, "kernel_paths");
	ctq_kpaths_to_json(run->manifest, &run->paths0);
	/* what the run shared its host with (docs/nightly.md, host_load) */
	struct ctq_host_load_mark load1;
	ctq_host_load_mark(&load1);
	ctq_host_load_to_json(run->manifest, &run->load0, &load1);
	cJSON_AddNumberToObject(run->manifest, "wall_time_s",
				(double)(t1.tv_sec - run->t0.tv_sec) +
					1e-9 * (double)(t1.tv_nsec - run->t0.tv_nsec));
	char *text = cJSON_Print(run->manifest);
	if (!text) {
		ctq_run_abort(run);
		return ctq_error_set(err, CTQ_ERR_NOMEM, "manifest", "out of memory");
	}
	char path[1200];
	enum ctq_status st = ctq_file_write_atomic(
		ctq_run_path(run, "manifest.json", path, sizeof path), text,
		strlen(text), err);
	ctq_free(text);
	if (!st)
		st = final_names(run->tmp_dir, run->tmp_dir, run->final_dir, 0, err);
	if (!st)
		st = ctq_run_out_check(run->final_dir, run->force, err);
	if (!st)
		st = ctq_tmpdir_commit(run->tmp_dir, run->final_dir, true, err);
	if (st) {
		ctq_run_abort(run);
		return st;
	}
	run->open = false;
	cJSON_Delete(run->manifest);
	run->manifest = NULL;
	return CTQ_OK;
}

void ctq_run_abort(struct ctq_run *run)
{
	if (!run)
		return;
	if (run->open)
		ctq_remove_tree(run->tmp_dir);
	run->open = false;
	cJSON_Delete(run->manifest);
	run->manifest = NULL;
}
