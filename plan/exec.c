/* Run plans: executing a loaded plan into a run directory (plan/plan.h):
 * which steps run, each step's argv and captured output, the manifest's
 * record of the steps, junit.xml and the report. */
#include "plan/plan.h"
#include "core/arena.h"
#include "core/fileio.h"
#include "core/json.h"
#include "core/time.h"
#include "backend/backend.h"
#include "results/env.h"
#include "results/junit_merge.h"
#include "results/run.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The path a reader of the finished run sees: tmp prefix -> final. */
static void final_path(char *buf, size_t cap, const char *path, const struct ctq_run *run)
{
	size_t n = strlen(run->tmp_dir);
	if (!strncmp(path, run->tmp_dir, n) && (path[n] == '/' || !path[n]))
		snprintf(buf, cap, "%s%s", run->final_dir, path + n);
	else
		snprintf(buf, cap, "%s", path);
}

/* Runs fn with stdout and stderr sent to log_path. */
static int run_captured(int (*fn)(int, char **), int argc, char **argv, const char *log_path)
{
	fflush(stdout);
	fflush(stderr);
	int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return fn(argc, argv);
	int so = dup(1), se = dup(2);
	dup2(fd, 1);
	dup2(fd, 2);
	close(fd);
	int rc = fn(argc, argv);
	fflush(stdout);
	fflush(stderr);
	if (so >= 0) {
		dup2(so, 1);
		close(so);
	}
	if (se >= 0) {
		dup2(se, 2);
		close(se);
	}
	return rc;
}

/* Builds the step's argv (argv[0] the command name). */
static enum ctq_status build_argv(struct ctq_runplan_step *x, const struct ctq_run *run,
				  struct ctq_error *err)
{
	char stepdir[1300];
	snprintf(stepdir, sizeof stepdir, "%s/%s", run->tmp_dir, x->id);
	x->argc = 0;
	x->argv[x->argc++] = ctq_strdup(x->command);
	bool has_out = false;
	const cJSON *a;
	cJSON_ArrayForEach(a, x->args)
	{
		has_out |= !strcmp(a->valuestring, "--out");
		x->argv[x->argc++] = ctq_runplan_substitute(a->valuestring, run->tmp_dir, stepdir);
	}
	if (x->cmd->out_option && !has_out) {
		x->argv[x->argc++] = ctq_strdup("--out");
		x->argv[x->argc++] = ctq_strdup(stepdir);
	}
	x->argv[x->argc] = NULL;
	for (int i = 0; i < x->argc; i++)
		if (!x->argv[i])
			return ctq_error_set(err, CTQ_ERR_NOMEM, x->id, "out of memory");
	return CTQ_OK;
}

/* Why the step is skipped, or false (also on error, in err). */
static bool skip_reason(const struct ctq_runplan *p, struct ctq_runplan_step *x,
			const struct ctq_run *run, bool gpu, const char *no_gpu,
			struct ctq_error *err)
{
	if (x->needs_gpu && !gpu) {
		snprintf(x->reason, sizeof x->reason, "%s", no_gpu);
		return true;
	}
	for (int i = 0; i < x->n_after; i++) {
		const struct ctq_runplan_step *d = &p->steps[x->after[i]];
		if (d->status != CTQ_STEP_PASSED) {
			snprintf(x->reason, sizeof x->reason, "step %s did not pass (%s)", d->id,
				 ctq_step_status_name(d->status));
			return true;
		}
	}
	const cJSON *r;
	char stepdir[1300];
	snprintf(stepdir, sizeof stepdir, "%s/%s", run->tmp_dir, x->id);
	cJSON_ArrayForEach(r, x->requires)
	{
		char *path = ctq_runplan_substitute(r->valuestring, run->tmp_dir, stepdir);
		if (!path) {
			ctq_error_set(err, CTQ_ERR_NOMEM, x->id, "out of memory");
			return false;
		}
		bool ok = ctq_path_exists(path);
		if (!ok) {
			char shown[1300];
			final_path(shown, sizeof shown, path, run);
			/* fixtures/ holds what `make fixtures` downloads and makes
			 * (the SmolLM2 checkpoints): say how to get it */
			snprintf(x->reason, sizeof x->reason, "missing %s%s", shown,
				 !strncmp(r->valuestring, "fixtures/", 9) ? " (run `make fixtures`)" : "");
		}
		free(path);
		if (!ok)
			return true;
	}
	return false;
}

bool ctq_runplan_gpu(const char *mode, char *no_gpu, size_t no_cap, char *desc, size_t desc_cap)
{
	/* The backend's message says which: no driver, an old driver, no
	 * device, or a build without CUDA; it is given once, as it is. */
	if (!strcmp(mode, "off")) {
		snprintf(no_gpu, no_cap, "GPU steps turned off (--gpu off)");
		return false;
	}
	struct ctq_backend b;
	struct ctq_error ge = {0};
	memset(&b, 0, sizeof b);
	if (ctq_backend_open(&b, "cuda", &ge) == CTQ_OK) {
		b.ops->describe(&b, desc, desc_cap);
		ctq_backend_close(&b);
		return true;
	}
	snprintf(no_gpu, no_cap, "%s%s", strncmp(ge.message, "no CUDA device", 14) ? "no CUDA device: " : "",
		 ge.message);
	return false;
}

enum ctq_status ctq_runplan_prepare(struct ctq_run *run, const char *cuda_desc,
				    struct ctq_error *err)
{
	struct ctq_env_options eo = {.query_gpus = true, .cuda_device_desc = cuda_desc};
	ctq_env_capture(run->manifest, &eo);
	char logs[1300];
	snprintf(logs, sizeof logs, "%s/logs", run->tmp_dir);
	return ctq_mkdirs(logs, err);
}

/* Runs step x with its output in LOGS/<id>.txt and sets its outcome. */
static void step_run(struct ctq_runplan_step *x, const char *log)
{
	double t0 = ctq_now_s();
	x->exit_code = run_captured(x->cmd->run, x->argc, x->argv, log);
	x->wall_s = ctq_now_s() - t0;
	switch (x->exit_code) {
	case CTQ_EXIT_OK:
		x->status = x->expect_fail ? CTQ_STEP_FAILED : CTQ_STEP_PASSED;
		if (x->expect_fail)
			snprintf(x->reason, sizeof x->reason,
				 "its check passed (exit 0) where the plan expects it to fail: the gate let "
				 "through what it must reject (see logs/%s.txt)", x->id);
		break;
	case CTQ_EXIT_FAIL:
		x->status = x->expect_fail ? CTQ_STEP_PASSED : CTQ_STEP_FAILED;
		snprintf(x->reason, sizeof x->reason,
			 x->expect_fail ? "its check failed (exit 1), as the plan expects (see logs/%s.txt)"
					: "a check failed (exit 1; see logs/%s.txt)",
			 x->id);
		break;
	default:
		x->status = CTQ_STEP_ERROR;
		snprintf(x->reason, sizeof x->reason, "%s (exit %d; see logs/%s.txt)",
			 x->exit_code == CTQ_EXIT_USAGE ? "bad usage or input"
			 : x->exit_code == CTQ_EXIT_ENV ? "the environment cannot do it"
							: "stopped",
			 x->exit_code, x->id);
	}
}

enum ctq_status ctq_runplan_steps(struct ctq_runplan *p, struct ctq_run *run, bool gpu,
				  const char *no_gpu, const struct ctq_runplan_hooks *hooks,
				  struct ctq_runplan_tally *t, struct ctq_error *err)
{
	struct ctq_error e = {0};
	memset(t, 0, sizeof *t);
	double t_all = ctq_now_s();
	enum ctq_status st = CTQ_OK;
	for (int i = 0; i < p->n && !st; i++) {
		struct ctq_runplan_step *x = &p->steps[i];
		x->status = CTQ_STEP_SKIPPED;
		if (skip_reason(p, x, run, gpu, no_gpu, &e)) {
			t->counts[CTQ_STEP_SKIPPED]++;
			if (hooks && hooks->step_end)
				hooks->step_end(hooks->ctx, p, i, NULL);
			continue;
		}
		if ((st = e.status) || (st = build_argv(x, run, &e)))
			break;
		char log[1400];
		snprintf(log, sizeof log, "%s/logs/%s.txt", run->tmp_dir, x->id);
		if (hooks && hooks->step_begin)
			hooks->step_begin(hooks->ctx, p, i);
		step_run(x, log);
		t->counts[x->status]++;
		if (hooks && hooks->step_end)
			hooks->step_end(hooks->ctx, p, i, log);
	}
	t->steps_s = ctq_now_s() - t_all;
	if (st && err && !err->status)
		*err = e;
	return st;
}

int ctq_runplan_exit_code(const struct ctq_runplan_tally *t)
{
	return t->counts[CTQ_STEP_FAILED] || t->counts[CTQ_STEP_ERROR] ? CTQ_EXIT_FAIL : CTQ_EXIT_OK;
}

/* Checkpoint folders the steps named (an argument that is a folder with a
 * config.json), with their provenance, into manifest.checkpoints. */
static void checkpoints(const struct ctq_runplan *p, struct ctq_run *run)
{
	cJSON *arr = cJSON_AddArrayToObject(run->manifest, "checkpoints");
	cJSON *errs = NULL;
	for (int i = 0; i < p->n && arr; i++) {
		const struct ctq_runplan_step *x = &p->steps[i];
		for (int k = 1; k < x->argc; k++) {
			char cfg[1300], shown[1300];
			snprintf(cfg, sizeof cfg, "%s/config.json", x->argv[k]);
			if (!ctq_path_is_dir(x->argv[k]) || !ctq_path_exists(cfg))
				continue;
			final_path(shown, sizeof shown, x->argv[k], run);
			cJSON *found = NULL, *c;
			cJSON_ArrayForEach(c, arr)
			{
				const cJSON *pa = ctq_json_get(c, "path");
				if (cJSON_IsString(pa) && !strcmp(pa->valuestring, shown))
					found = c;
			}
			if (!found) {
				struct ctq_error e = {0};
				if (ctq_env_checkpoint(x->argv[k], shown, &found, &e)) {
					if (!errs)
						errs = cJSON_AddArrayToObject(run->manifest, "checkpoint_errors");
					char msg[1200];
					snprintf(msg, sizeof msg, "%s: %s: %s", shown, ctq_status_name(e.status),
						 e.message);
					cJSON_AddItemToArray(errs, cJSON_CreateString(msg));
					continue;
				}
				cJSON_AddArrayToObject(found, "used_by");
				cJSON_AddItemToArray(arr, found);
			}
			cJSON *ub = cJSON_GetObjectItemCaseSensitive(found, "used_by");
			bool listed = false;
			cJSON_ArrayForEach(c, ub) listed |= !strcmp(c->valuestring, x->id);
			if (!listed)
				cJSON_AddItemToArray(ub, cJSON_CreateString(x->id));
		}
	}
}

/* One step of manifest.steps; its seed ("--seed S" in its argv) in *seed. */
static cJSON *step_json(const struct ctq_runplan_step *x, const struct ctq_run *run,
			const char **seed)
{
	cJSON *s = cJSON_CreateObject();
	if (!s)
		return NULL;
	const bool skipped = x->status == CTQ_STEP_SKIPPED;
	cJSON_AddStringToObject(s, "id", x->id);
	cJSON_AddStringToObject(s, "command", x->command);
	cJSON *av = cJSON_AddArrayToObject(s, "argv");
	char shown[1300];
	*seed = NULL;
	for (int k = 0; k < x->argc; k++) {
		final_path(shown, sizeof shown, x->argv[k], run);
		cJSON_AddItemToArray(av, cJSON_CreateString(shown));
		if (k > 0 && !strcmp(x->argv[k - 1], "--seed"))
			*seed = x->argv[k];
	}
	if (!x->argc) {
		/* Skipped before its arguments were built: the plan's args,
		 * ${run} and ${step} expanded to the final names. */
		char stepdir[1300];
		snprintf(stepdir, sizeof stepdir, "%s/%s", run->final_dir, x->id);
		cJSON_AddItemToArray(av, cJSON_CreateString(x->command));
		const cJSON *a;
		cJSON_ArrayForEach(a, x->args)
		{
			char *v = ctq_runplan_substitute(a->valuestring, run->final_dir, stepdir);
			cJSON_AddItemToArray(av, cJSON_CreateString(v ? v : a->valuestring));
			free(v);
		}
	}
	cJSON_AddStringToObject(s, "status", ctq_step_status_name(x->status));
	if (x->reason[0])
		cJSON_AddStringToObject(s, "reason", x->reason);
	if (!skipped)
		cJSON_AddNumberToObject(s, "exit_code", x->exit_code);
	cJSON_AddNumberToObject(s, "wall_time_s", x->wall_s);
	char rel[300];
	snprintf(rel, sizeof rel, "logs/%s.txt", x->id);
	if (!skipped)
		cJSON_AddStringToObject(s, "log", rel);
	if (x->needs_gpu)
		cJSON_AddStringToObject(s, "needs", "gpu");
	if (x->expect_fail)
		cJSON_AddStringToObject(s, "expect", "fail");
	if (x->about[0])
		cJSON_AddStringToObject(s, "about", x->about);
	return s;
}

void ctq_runplan_record(const struct ctq_runplan *p, struct ctq_run *run, const char *plan_file,
			const struct ctq_runplan_tally *t, int rc)
{
	checkpoints(p, run);
	cJSON *m = run->manifest;
	cJSON *pl = cJSON_AddObjectToObject(m, "plan");
	cJSON_AddStringToObject(pl, "name", p->name);
	cJSON_AddStringToObject(pl, "file", plan_file);
	cJSON_AddStringToObject(pl, "sha256", p->sha256);
	cJSON_AddStringToObject(pl, "about", p->about);
	cJSON *steps = cJSON_AddArrayToObject(m, "steps");
	cJSON *seeds = cJSON_AddObjectToObject(m, "seeds");
	for (int i = 0; i < p->n; i++) {
		const struct ctq_runplan_step *x = &p->steps[i];
		const char *seed;
		cJSON *s = step_json(x, run, &seed);
		if (!s)
			break;
		cJSON_AddItemToArray(steps, s);
		if (x->status != CTQ_STEP_SKIPPED)
			cJSON_AddStringToObject(seeds, x->id, seed ? seed : "command default");
	}
	cJSON *sum = cJSON_AddObjectToObject(m, "summary");
	cJSON_AddNumberToObject(sum, "passed", t->counts[CTQ_STEP_PASSED]);
	cJSON_AddNumberToObject(sum, "failed", t->counts[CTQ_STEP_FAILED]);
	cJSON_AddNumberToObject(sum, "skipped", t->counts[CTQ_STEP_SKIPPED]);
	cJSON_AddNumberToObject(sum, "error", t->counts[CTQ_STEP_ERROR]);
	cJSON_AddNumberToObject(m, "exit_code", rc);
}

enum ctq_status ctq_runplan_junit(struct ctq_runplan *p, struct ctq_run *run, int rc,
				  struct ctq_error *err)
{
	/* the command lines as a reader of the finished run sees them (${run}
	 * and ${step} expanded to the final names) */
	struct ctq_junit_step js[CTQ_RUNPLAN_MAX_STEPS];
	for (int i = 0; i < p->n; i++) {
		const struct ctq_runplan_step *x = &p->steps[i];
		char *jpath = p->junit_scratch[i].junit, *ppath = p->junit_scratch[i].probe_csv;
		char *cmdl = p->junit_scratch[i].cmdline;
		const size_t jcap = sizeof p->junit_scratch[i].junit;
		const size_t ccap = sizeof p->junit_scratch[i].cmdline;
		snprintf(jpath, jcap, "%s/%s/junit.xml", run->tmp_dir, x->id);
		snprintf(ppath, jcap, "%s/%s/probe.csv", run->tmp_dir, x->id);
		char stepdir[1300];
		snprintf(stepdir, sizeof stepdir, "%s/%s", run->final_dir, x->id);
		size_t len = 0;
		const cJSON *a;
		len += (size_t)snprintf(cmdl, ccap, "ctq %s", x->command);
		cJSON_ArrayForEach(a, x->args) if (len < ccap)
		{
			char *shown = ctq_runplan_substitute(a->valuestring, run->final_dir, stepdir);
			len += (size_t)snprintf(cmdl + len, ccap - len, " %s", shown ? shown : a->valuestring);
			free(shown);
		}
		js[i] = (struct ctq_junit_step){x->id, cmdl, ctq_step_status_name(x->status),
						x->reason[0] ? x->reason : NULL, x->wall_s,
						ctq_path_exists(jpath) ? jpath : NULL,
						ctq_path_exists(ppath) ? ppath : NULL,
						x->expect_fail && x->status == CTQ_STEP_PASSED};
	}
	char path[1400], verdict[96];
	snprintf(verdict, sizeof verdict, "%s%s", rc ? "FAIL" : "PASS",
		 ctq_report_cpu_only(run->manifest) ? " (" CTQ_REPORT_CPU_ONLY ")" : "");
	snprintf(path, sizeof path, "%s/junit.xml", run->tmp_dir);
	return ctq_junit_merge(path, p->name, verdict, js, (size_t)p->n, err);
}

enum ctq_status ctq_runplan_report(struct ctq_run *run, struct ctq_report_summary *rs,
				   struct ctq_error *err)
{
	cJSON *copy = cJSON_Duplicate(run->manifest, true);
	if (!copy)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "manifest", "out of memory");
	time_t t = time(NULL);
	struct tm tm;
	char ended[32];
	gmtime_r(&t, &tm);
	strftime(ended, sizeof ended, "%Y-%m-%dT%H:%M:%SZ", &tm);
	struct timespec t1;
	clock_gettime(CLOCK_REALTIME, &t1);
	cJSON_AddStringToObject(copy, "ended_utc", ended);
	cJSON_AddNumberToObject(copy, "wall_time_s",
				(double)(t1.tv_sec - run->t0.tv_sec) +
					1e-9 * (double)(t1.tv_nsec - run->t0.tv_nsec));
	char *text = cJSON_Print(copy);
	cJSON_Delete(copy);
	char path[1300];
	snprintf(path, sizeof path, "%s/manifest.json", run->tmp_dir);
	enum ctq_status st = text ? ctq_file_write_atomic(path, text, strlen(text), err)
				  : ctq_error_set(err, CTQ_ERR_NOMEM, "manifest", "out of memory");
	free(text);
	return st ? st : ctq_report_write(run->tmp_dir, run->final_dir, rs, err);
}
