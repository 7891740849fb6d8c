/* ctq run directory and manifest (see run.h). */
#define _GNU_SOURCE
#include "reports/run.h"
#include "core/fileio.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

static void utc_now(char *buf, size_t cap, const char *fmt)
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, cap, fmt, &tm);
}

static void read_cmd(const char *cmd, char *buf, size_t cap)
{
	buf[0] = '\0';
	FILE *p = popen(cmd, "r");
	if (!p)
		return;
	if (fgets(buf, (int)cap, p)) {
		size_t n = strlen(buf);
		while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
			buf[--n] = '\0';
	}
	pclose(p);
}

/* CTQ_REVISION (e.g. "1a2b3c4d5e6f" or "1a2b3c4d5e6f-dirty") names the
 * revision where the tree was copied without its history (GPU hosts that
 * receive a working tree); otherwise git is asked. */
void ctq_git_revision(char *buf, size_t cap, bool *dirty)
{
	const char *env = getenv("CTQ_REVISION");
	if (env && *env) {
		size_t n = strlen(env);
		*dirty = n > 6 && !strcmp(env + n - 6, "-dirty");
		snprintf(buf, cap, "%.*s", (int)(*dirty ? n - 6 : n), env);
		return;
	}
	read_cmd("git rev-parse --short=12 HEAD 2>/dev/null", buf, cap);
	if (!buf[0])
		snprintf(buf, cap, "unknown");
	char st[8];
	read_cmd("git status --porcelain --untracked-files=no 2>/dev/null | head -n 1",
		 st, sizeof st);
	*dirty = st[0] != '\0';
}

static void cpu_model(char *buf, size_t cap)
{
	read_cmd("sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1",
		 buf, cap);
	if (!buf[0])
		snprintf(buf, cap, "unknown");
}

enum ctq_status ctq_run_begin(struct ctq_run *run, const char *out_dir,
			      const char *command, int argc, char **argv,
			      struct ctq_error *err)
{
	memset(run, 0, sizeof *run);
	clock_gettime(CLOCK_REALTIME, &run->t0);
	utc_now(run->started_utc, sizeof run->started_utc, "%Y-%m-%dT%H:%M:%SZ");
	char rev[64];
	bool dirty;
	ctq_git_revision(rev, sizeof rev, &dirty);
	if (out_dir) {
		snprintf(run->final_dir, sizeof run->final_dir, "%s", out_dir);
	} else {
		char stamp[32];
		utc_now(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ");
		snprintf(run->final_dir, sizeof run->final_dir, "runs/%s-%s%s",
			 stamp, rev, dirty ? "-dirty" : "");
	}
	enum ctq_status st = ctq_tmpdir_beside(run->final_dir, run->tmp_dir,
					       sizeof run->tmp_dir, err);
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

enum ctq_status ctq_run_commit(struct ctq_run *run, struct ctq_error *err)
{
	char ended[32];
	utc_now(ended, sizeof ended, "%Y-%m-%dT%H:%M:%SZ");
	struct timespec t1;
	clock_gettime(CLOCK_REALTIME, &t1);
	cJSON_AddStringToObject(run->manifest, "ended_utc", ended);
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
	free(text);
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
