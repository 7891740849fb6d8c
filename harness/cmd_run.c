/* ctq run: executes a plan (a JSON list of ctq commands) in-process into
 * one run directory: each step writes into RUN/<step id>/ (commands with
 * --out) or where its arguments say (${run}, ${step}); its output goes to
 * RUN/logs/<step id>.txt. The run gets one junit.xml (a testcase per step
 * plus the steps' own suites), one manifest.json (environment, plan, steps,
 * seeds, checkpoint provenance), summary.md, report.html and plots/, and is
 * renamed into place when complete.
 *
 * Plan format (plans/default.json is the embedded default):
 *   {"name": "default", "about": "...",
 *    "steps": [{"id": "conform", "command": "conform",
 *               "args": ["--suite", "suites"],
 *               "needs": "gpu",                 optional: skipped without a GPU
 *               "after": ["make-tiny"],         optional: skipped unless these passed
 *               "requires": ["fixtures/x"],     optional: skipped unless these exist
 *               "about": "..."}]}
 * Unknown members, duplicate or malformed ids, unknown commands and
 * references to later steps are a bad plan (exit 2, nothing runs). */
#include "harness/commands.h"
#include "core/arena.h"
#include "core/fileio.h"
#include "core/json.h"
#include "core/sha256.h"
#include "core/strbuf.h"
#include "backend/backend.h"
#include "results/env.h"
#include "results/junit_merge.h"
#include "reports/report.h"
#include "results/run.h"
#include "core/time.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_STEPS 256
#define MAX_ARGS 128

static void help(void)
{
	printf("usage: ctq run PLAN.json [--out DIR [--force]] [--gpu auto|off] [--verbose]\n"
	       "               [--no-report]\n"
	       "\n"
	       "Runs the steps of a plan, each a ctq command executed in this process, into\n"
	       "one run directory, and writes junit.xml (one testcase per step plus the\n"
	       "steps' own), manifest.json (environment, plan, steps, seeds, checkpoint\n"
	       "provenance), summary.md, report.html and plots/.\n"
	       "\n"
	       "A step: {\"id\", \"command\", \"args\": [...], \"needs\": \"gpu\", \"after\": [ids],\n"
	       "\"requires\": [paths], \"about\"}. In args and requires, ${run} is the run\n"
	       "directory and ${step} the step's folder, RUN/<id>; commands that write a\n"
	       "run directory (conform, probe, bench, eval) get --out RUN/<id> unless args\n"
	       "name one. A step is skipped, with its reason, when it needs a GPU and none\n"
	       "is present, when a step it comes after did not pass, or when a path it\n"
	       "requires is missing. Step output goes to RUN/logs/<id>.txt.\n"
	       "\n"
	       "options:\n"
	       "  --out DIR      run directory (default runs/<UTC time>-<revision>)\n"
	       "  --force        replace DIR when it is an existing ctq run directory (any\n"
	       "                 other non-empty DIR is refused)\n"
	       "  --gpu MODE     auto (default): GPU steps run when a CUDA device opens;\n"
	       "                 off: GPU steps are skipped\n"
	       "  --verbose      print each step's output after it ends\n"
	       "  --no-report    leave out summary.md, report.html and plots/ (ctq report\n"
	       "                 RUN writes them later)\n"
	       "\n"
	       "exit: 0 every step that ran passed; 1 a step failed or stopped on an error;\n"
	       "      2 a bad plan or bad usage (nothing runs); 3 the run directory cannot\n"
	       "      be written.\n");
}

struct step {
	const char *id, *command, *about; /* borrowed from the plan JSON */
	const struct ctq_command *cmd;    /* in the registry, in_plan */
	const cJSON *args, *requires;
	bool needs_gpu;
	int after[MAX_STEPS];
	int n_after;
	/* results */
	const char *status;  /* passed failed skipped error */
	char reason[512];
	int exit_code;
	double wall_s;
	char *argv[MAX_ARGS + 4];
	int argc;
};

struct plan {
	cJSON *root;
	const char *name, *about;
	struct step steps[MAX_STEPS];
	int n;
	char sha256[CTQ_SHA256_HEX];
};

static bool valid_id(const char *s)
{
	if (!*s || strlen(s) > 64 || !strcmp(s, "logs") || !strcmp(s, "plots") || s[0] == '.')
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      *s == '-' || *s == '_' || *s == '.'))
			return false;
	return true;
}

static enum ctq_status bad(struct ctq_error *err, const char *path, const char *fmt, const char *a)
{
	return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, path, fmt, a);
}

static enum ctq_status string_list(const cJSON *v, const char *path, struct ctq_error *err)
{
	if (!cJSON_IsArray(v))
		return bad(err, path, "expected an array of strings, found %s", ctq_json_type_name(v));
	const cJSON *a;
	cJSON_ArrayForEach(a, v) if (!cJSON_IsString(a))
		return bad(err, path, "expected an array of strings; an item is %s", ctq_json_type_name(a));
	return CTQ_OK;
}

static enum ctq_status plan_load(struct plan *p, const char *file, struct ctq_error *err)
{
	memset(p, 0, sizeof *p);
	enum ctq_status st = ctq_json_load_file(file, (size_t)4 << 20, NULL, &p->root, err);
	if (st)
		return st == CTQ_ERR_IO ? st : CTQ_ERR_PARSE;
	unsigned char d[CTQ_SHA256_BYTES];
	if ((st = ctq_sha256_file(file, d, err)))
		return st;
	ctq_sha256_hex(d, p->sha256);
	const cJSON *root = p->root;
	if (!cJSON_IsObject(root))
		return bad(err, "(root)", "a plan is a JSON object; found %s", ctq_json_type_name(root));
	for (const cJSON *m = root->child; m; m = m->next)
		if (strcmp(m->string, "name") && strcmp(m->string, "about") && strcmp(m->string, "steps"))
			return bad(err, m->string, "unknown member \"%s\" (name, about, steps)", m->string);
	const cJSON *name = ctq_json_get(root, "name"), *about = ctq_json_get(root, "about");
	const cJSON *steps = ctq_json_get(root, "steps");
	if (!cJSON_IsString(name) || !valid_id(name->valuestring))
		return bad(err, "name", "expected a name of letters, digits, '-', '_' or '.'; found %s",
			   cJSON_IsString(name) ? name->valuestring : ctq_json_type_name(name));
	if (about && !cJSON_IsString(about))
		return bad(err, "about", "expected a string, found %s", ctq_json_type_name(about));
	p->name = name->valuestring;
	p->about = about ? about->valuestring : "";
	if (!cJSON_IsArray(steps) || !cJSON_GetArraySize(steps))
		return bad(err, "steps", "expected a non-empty array of steps, found %s",
			   cJSON_IsArray(steps) ? "an empty one" : ctq_json_type_name(steps));
	if (cJSON_GetArraySize(steps) > MAX_STEPS)
		return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, "steps", "more than %d steps", MAX_STEPS);
	const cJSON *s;
	char jp[CTQ_PATH_MAX], mp[CTQ_PATH_MAX];
	cJSON_ArrayForEach(s, steps)
	{
		struct step *x = &p->steps[p->n];
		ctq_json_path_index(jp, sizeof jp, "steps", (size_t)p->n);
		if (!cJSON_IsObject(s))
			return bad(err, jp, "a step is an object; found %s", ctq_json_type_name(s));
		static const char *const members[] = {"id", "command", "args", "needs", "after",
						      "requires", "about"};
		for (const cJSON *m = s->child; m; m = m->next) {
			size_t k;
			for (k = 0; k < sizeof members / sizeof *members; k++)
				if (!strcmp(m->string, members[k]))
					break;
			ctq_json_path_key(mp, sizeof mp, jp, m->string);
			if (k == sizeof members / sizeof *members)
				return bad(err, mp, "unknown member \"%s\" (id, command, args, needs, after, requires, about)",
					   m->string);
		}
		const cJSON *id = ctq_json_get(s, "id"), *cmd = ctq_json_get(s, "command");
		ctq_json_path_key(mp, sizeof mp, jp, "id");
		if (!cJSON_IsString(id) || !valid_id(id->valuestring))
			return bad(err, mp, "expected an id of letters, digits, '-', '_' or '.' (not logs or plots); found %s",
				   cJSON_IsString(id) ? id->valuestring : ctq_json_type_name(id));
		for (int i = 0; i < p->n; i++)
			if (!strcmp(p->steps[i].id, id->valuestring))
				return bad(err, mp, "duplicate step id \"%s\"", id->valuestring);
		x->id = id->valuestring;
		ctq_json_path_key(mp, sizeof mp, jp, "command");
		if (!cJSON_IsString(cmd))
			return bad(err, mp, "expected a ctq command name, found %s", ctq_json_type_name(cmd));
		x->cmd = ctq_command_find(cmd->valuestring);
		if (!x->cmd || !x->cmd->in_plan)
			return bad(err, mp, "\"%s\" is not a command a plan can run (inspect, conform, probe, "
					    "bench, eval, generate, make-model, quantize, import-gguf, compare)",
				   cmd->valuestring);
		x->command = cmd->valuestring;
		x->args = ctq_json_get(s, "args");
		ctq_json_path_key(mp, sizeof mp, jp, "args");
		if (x->args && (st = string_list(x->args, mp, err)))
			return st;
		if (x->args && cJSON_GetArraySize(x->args) > MAX_ARGS)
			return bad(err, mp, "more than %s arguments", "128");
		x->requires = ctq_json_get(s, "requires");
		ctq_json_path_key(mp, sizeof mp, jp, "requires");
		if (x->requires && (st = string_list(x->requires, mp, err)))
			return st;
		const cJSON *needs = ctq_json_get(s, "needs");
		ctq_json_path_key(mp, sizeof mp, jp, "needs");
		if (needs && !(cJSON_IsString(needs) && !strcmp(needs->valuestring, "gpu")))
			return bad(err, mp, "the only need is \"gpu\"; found %s",
				   cJSON_IsString(needs) ? needs->valuestring : ctq_json_type_name(needs));
		x->needs_gpu = needs != NULL;
		const cJSON *ab = ctq_json_get(s, "about");
		ctq_json_path_key(mp, sizeof mp, jp, "about");
		if (ab && !cJSON_IsString(ab))
			return bad(err, mp, "expected a string, found %s", ctq_json_type_name(ab));
		x->about = ab ? ab->valuestring : "";
		const cJSON *after = ctq_json_get(s, "after");
		ctq_json_path_key(mp, sizeof mp, jp, "after");
		if (after && cJSON_IsString(after)) {
			/* one id as a string */
		} else if (after && (st = string_list(after, mp, err))) {
			return st;
		}
		const cJSON *a = cJSON_IsString(after) ? after : after ? after->child : NULL;
		for (; a; a = cJSON_IsString(after) ? NULL : a->next) {
			int k;
			for (k = 0; k < p->n; k++)
				if (!strcmp(p->steps[k].id, a->valuestring))
					break;
			if (k == p->n)
				return bad(err, mp, "\"%s\" is not an earlier step", a->valuestring);
			if (x->n_after == MAX_STEPS)
				return bad(err, mp, "names more than %s steps", "256");
			for (int j = 0; j < x->n_after; j++)
				if (x->after[j] == k)
					return bad(err, mp, "names \"%s\" twice", a->valuestring);
			x->after[x->n_after++] = k;
		}
		p->n++;
	}
	return CTQ_OK;
}

/* s with ${run} and ${step} replaced; owned. */
static char *substitute(const char *s, const char *run, const char *step)
{
	struct ctq_strbuf sb;
	ctq_strbuf_init(&sb);
	while (*s) {
		if (!strncmp(s, "${run}", 6)) {
			ctq_strbuf_append(&sb, run);
			s += 6;
		} else if (!strncmp(s, "${step}", 7)) {
			ctq_strbuf_append(&sb, step);
			s += 7;
		} else {
			ctq_strbuf_appendn(&sb, s, 1);
			s++;
		}
	}
	if (sb.oom || !sb.data) {
		ctq_strbuf_free(&sb);
		return sb.oom ? NULL : ctq_strdup("");
	}
	return sb.data;
}

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

static void free_argv(struct step *x)
{
	for (int i = 0; i < x->argc; i++)
		free(x->argv[i]);
	x->argc = 0;
}

/* Builds the step's argv (argv[0] the command name). */
static enum ctq_status build_argv(struct step *x, const struct ctq_run *run, struct ctq_error *err)
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
		x->argv[x->argc++] = substitute(a->valuestring, run->tmp_dir, stepdir);
	}
	if (x->cmd->out == CTQ_CMD_OUT_OPTION && !has_out) {
		x->argv[x->argc++] = ctq_strdup("--out");
		x->argv[x->argc++] = ctq_strdup(stepdir);
	}
	x->argv[x->argc] = NULL;
	for (int i = 0; i < x->argc; i++)
		if (!x->argv[i])
			return ctq_error_set(err, CTQ_ERR_NOMEM, x->id, "out of memory");
	return CTQ_OK;
}

/* Why the step is skipped, or false. */
static bool skip_reason(struct plan *p, struct step *x, const struct ctq_run *run, bool gpu,
			const char *no_gpu, struct ctq_error *err)
{
	if (x->needs_gpu && !gpu) {
		snprintf(x->reason, sizeof x->reason, "%s", no_gpu);
		return true;
	}
	for (int i = 0; i < x->n_after; i++) {
		const struct step *d = &p->steps[x->after[i]];
		if (strcmp(d->status, "passed") != 0) {
			snprintf(x->reason, sizeof x->reason, "step %s did not pass (%s)", d->id, d->status);
			return true;
		}
	}
	const cJSON *r;
	char stepdir[1300];
	snprintf(stepdir, sizeof stepdir, "%s/%s", run->tmp_dir, x->id);
	cJSON_ArrayForEach(r, x->requires)
	{
		char *path = substitute(r->valuestring, run->tmp_dir, stepdir);
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

static void print_log(const char *path)
{
	char *text = NULL;
	size_t n = 0;
	if (ctq_file_read(path, (size_t)64 << 20, &text, &n, NULL))
		return;
	fwrite(text, 1, n, stdout);
	free(text);
}

/* Prints the last lines of a log (at most ~1500 bytes). */
static void print_tail(const char *path)
{
	char *text = NULL;
	const char *tail;
	if (ctq_file_read_tail(path, (size_t)64 << 20, 1500, &text, &tail, NULL))
		return;
	for (const char *c = tail; *c;) {
		size_t k = strcspn(c, "\n");
		printf("      | %.*s\n", (int)k, c);
		c += k + (c[k] == '\n');
	}
	free(text);
}

/* Checkpoint folders the steps named (an argument that is a folder with a
 * config.json), with their provenance, into manifest.checkpoints. */
static void checkpoints(struct plan *p, struct ctq_run *run)
{
	cJSON *arr = cJSON_AddArrayToObject(run->manifest, "checkpoints");
	cJSON *errs = NULL;
	for (int i = 0; i < p->n && arr; i++) {
		struct step *x = &p->steps[i];
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

/* manifest.steps, manifest.seeds and manifest.plan. */
static void record(struct plan *p, struct ctq_run *run, const char *plan_file, int counts[4])
{
	cJSON *m = run->manifest;
	cJSON *pl = cJSON_AddObjectToObject(m, "plan");
	cJSON_AddStringToObject(pl, "name", p->name);
	cJSON_AddStringToObject(pl, "file", plan_file);
	cJSON_AddStringToObject(pl, "sha256", p->sha256);
	cJSON_AddStringToObject(pl, "about", p->about);
	cJSON *steps = cJSON_AddArrayToObject(m, "steps");
	cJSON *seeds = cJSON_AddObjectToObject(m, "seeds");
	for (int i = 0; i < p->n; i++) {
		struct step *x = &p->steps[i];
		cJSON *s = cJSON_CreateObject();
		if (!s)
			break;
		cJSON_AddStringToObject(s, "id", x->id);
		cJSON_AddStringToObject(s, "command", x->command);
		cJSON *av = cJSON_AddArrayToObject(s, "argv");
		char shown[1300];
		const char *seed = NULL;
		for (int k = 0; k < x->argc; k++) {
			final_path(shown, sizeof shown, x->argv[k], run);
			cJSON_AddItemToArray(av, cJSON_CreateString(shown));
			if (k > 0 && !strcmp(x->argv[k - 1], "--seed"))
				seed = x->argv[k];
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
				char *v = substitute(a->valuestring, run->final_dir, stepdir);
				cJSON_AddItemToArray(av, cJSON_CreateString(v ? v : a->valuestring));
				free(v);
			}
		}
		cJSON_AddStringToObject(s, "status", x->status);
		if (x->reason[0])
			cJSON_AddStringToObject(s, "reason", x->reason);
		if (strcmp(x->status, "skipped") != 0)
			cJSON_AddNumberToObject(s, "exit_code", x->exit_code);
		cJSON_AddNumberToObject(s, "wall_time_s", x->wall_s);
		char rel[300];
		snprintf(rel, sizeof rel, "logs/%s.txt", x->id);
		if (strcmp(x->status, "skipped") != 0)
			cJSON_AddStringToObject(s, "log", rel);
		if (x->needs_gpu)
			cJSON_AddStringToObject(s, "needs", "gpu");
		if (x->about[0])
			cJSON_AddStringToObject(s, "about", x->about);
		cJSON_AddItemToArray(steps, s);
		if (strcmp(x->status, "skipped") != 0)
			cJSON_AddStringToObject(seeds, x->id, seed ? seed : "command default");
	}
	cJSON *sum = cJSON_AddObjectToObject(m, "summary");
	cJSON_AddNumberToObject(sum, "passed", counts[0]);
	cJSON_AddNumberToObject(sum, "failed", counts[1]);
	cJSON_AddNumberToObject(sum, "skipped", counts[2]);
	cJSON_AddNumberToObject(sum, "error", counts[3]);
}

/* The report over a copy of the manifest that already says when the run
 * ended (ctq_run_commit adds those members to the real one). */
static enum ctq_status write_report(struct ctq_run *run, struct ctq_report_summary *rs,
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

/* --gpu MODE (dst: const char **). */
static bool opt_gpu(const char *cmd, const char *name, const char *v, void *dst)
{
	if (strcmp(v, "auto") && strcmp(v, "off")) {
		fprintf(stderr, "ctq %s: %s is \"%s\"; expected auto or off\n", cmd, name, v);
		return false;
	}
	*(const char **)dst = v;
	return true;
}

/* A GPU is a CUDA device the backend can open: true with its description
 * in desc, else false with why in no_gpu. */
static bool detect_gpu(const char *gpu_mode, char *no_gpu, size_t no_cap, char *desc, size_t desc_cap)
{
	/* The backend's message says which: no driver, an old driver, no
	 * device, or a build without CUDA; it is given once, as it is. */
	if (!strcmp(gpu_mode, "off")) {
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

/* Runs step x (number i of n) with its output in LOGS/<id>.txt, and
 * prints its line. */
static void step_run(struct step *x, int i, int n, const char *logs, bool verbose, int counts[4])
{
	char log[1400];
	snprintf(log, sizeof log, "%s/%s.txt", logs, x->id);
	printf("[%d/%d] %-22s ", i + 1, n, x->id);
	fflush(stdout);
	double t0 = ctq_now_s();
	x->exit_code = run_captured(x->cmd->run, x->argc, x->argv, log);
	x->wall_s = ctq_now_s() - t0;
	switch (x->exit_code) {
	case CTQ_EXIT_OK:
		x->status = "passed";
		counts[0]++;
		break;
	case CTQ_EXIT_FAIL:
		x->status = "failed";
		snprintf(x->reason, sizeof x->reason, "a check failed (exit 1; see logs/%s.txt)", x->id);
		counts[1]++;
		break;
	default:
		x->status = "error";
		snprintf(x->reason, sizeof x->reason, "%s (exit %d; see logs/%s.txt)",
			 x->exit_code == CTQ_EXIT_USAGE ? "bad usage or input"
			 : x->exit_code == CTQ_EXIT_ENV ? "the environment cannot do it"
							: "stopped",
			 x->exit_code, x->id);
		counts[3]++;
	}
	printf("%-8s %7.2f s%s%s\n", x->status, x->wall_s, x->reason[0] ? "  " : "", x->reason);
	if (verbose)
		print_log(log);
	else if (strcmp(x->status, "passed") != 0)
		print_tail(log);
	fflush(stdout);
}

/* junit.xml: a testcase per step, then the steps' own suites; the
 * command lines as a reader of the finished run sees them (${run} and
 * ${step} expanded to the final names). 0, or the exit code (printed). */
static int write_junit(struct plan *p, struct ctq_run *run, int rc)
{
	struct ctq_error err = {0};
	struct ctq_junit_step js[MAX_STEPS];
	char (*jpaths)[1400] = ctq_calloc((size_t)p->n, sizeof *jpaths);
	char (*ppaths)[1400] = ctq_calloc((size_t)p->n, sizeof *ppaths);
	char (*cmdl)[600] = ctq_calloc((size_t)p->n, sizeof *cmdl);
	if (!jpaths || !ppaths || !cmdl) {
		free(jpaths);
		free(ppaths);
		free(cmdl);
		fprintf(stderr, "ctq run: out of memory\n");
		return CTQ_EXIT_USAGE;
	}
	for (int i = 0; i < p->n; i++) {
		struct step *x = &p->steps[i];
		snprintf(jpaths[i], sizeof jpaths[i], "%s/%s/junit.xml", run->tmp_dir, x->id);
		snprintf(ppaths[i], sizeof ppaths[i], "%s/%s/probe.csv", run->tmp_dir, x->id);
		char stepdir[1300];
		snprintf(stepdir, sizeof stepdir, "%s/%s", run->final_dir, x->id);
		size_t len = 0;
		const cJSON *a;
		len += (size_t)snprintf(cmdl[i], sizeof cmdl[i], "ctq %s", x->command);
		cJSON_ArrayForEach(a, x->args) if (len < sizeof cmdl[i])
		{
			char *shown = substitute(a->valuestring, run->final_dir, stepdir);
			len += (size_t)snprintf(cmdl[i] + len, sizeof cmdl[i] - len, " %s",
						shown ? shown : a->valuestring);
			free(shown);
		}
		js[i] = (struct ctq_junit_step){x->id, cmdl[i], x->status,
						x->reason[0] ? x->reason : NULL, x->wall_s,
						ctq_path_exists(jpaths[i]) ? jpaths[i] : NULL,
						ctq_path_exists(ppaths[i]) ? ppaths[i] : NULL};
	}
	char path[1400], verdict[96];
	snprintf(verdict, sizeof verdict, "%s%s", rc ? "FAIL" : "PASS",
		 ctq_report_cpu_only(run->manifest) ? " (" CTQ_REPORT_CPU_ONLY ")" : "");
	snprintf(path, sizeof path, "%s/junit.xml", run->tmp_dir);
	enum ctq_status st = ctq_junit_merge(path, p->name, verdict, js, (size_t)p->n, &err);
	free(jpaths);
	free(ppaths);
	free(cmdl);
	if (st) {
		ctq_print_error("run", &err);
		return CTQ_EXIT_ENV;
	}
	return 0;
}

int ctq_cmd_run(int argc, char **argv)
{
	const char *plan_file = NULL, *gpu_mode = "auto";
	struct ctq_opt_out out = {0};
	bool verbose = false, no_report = false;
	const struct ctq_opt opts[] = {
		CTQ_OPT_OUT(&out),
		CTQ_OPT_FN("--gpu", &gpu_mode, opt_gpu),
		CTQ_OPT_FLAG("--verbose", &verbose),
		CTQ_OPT_FLAG("-v", &verbose),
		CTQ_OPT_FLAG("--no-report", &no_report),
		CTQ_OPT_END,
	};
	int prc = ctq_opt_parse_need("run", argc, argv, opts, &plan_file, 1, help, &plan_file,
				     "PLAN.json is required (plans/default.json is the default plan; see --help)");
	if (prc >= 0)
		return prc;
	const bool report = !no_report;
	if (!ctq_opt_out_ok("run", &out))
		return CTQ_EXIT_USAGE;
	struct plan *p = ctq_calloc(1, sizeof *p);
	if (!p) {
		fprintf(stderr, "ctq run: out of memory\n");
		return CTQ_EXIT_USAGE;
	}
	struct ctq_error err = {0};
	struct ctq_run run;
	memset(&run, 0, sizeof run);
	int rc = CTQ_EXIT_USAGE;
	enum ctq_status st = plan_load(p, plan_file, &err);
	if (st) {
		fprintf(stderr, "ctq run: bad plan %s: %s at %s: %s\n", plan_file, ctq_status_name(err.status),
			err.path, err.message);
		goto out;
	}

	char no_gpu[600] = "no CUDA device", desc[256] = "";
	const bool gpu = detect_gpu(gpu_mode, no_gpu, sizeof no_gpu, desc, sizeof desc);
	if ((st = ctq_run_begin(&run, out.dir, out.force, "run", argc, argv, &err))) {
		ctq_print_error("run", &err);
		rc = st == CTQ_ERR_USAGE				  ? CTQ_EXIT_USAGE
		     : ctq_status_exit_code(st) == CTQ_EXIT_USAGE ? CTQ_EXIT_ENV
								  : ctq_status_exit_code(st);
		goto out;
	}
	struct ctq_env_options eo = {.query_gpus = true, .cuda_device_desc = desc[0] ? desc : NULL};
	ctq_env_capture(run.manifest, &eo);
	char logs[1300];
	snprintf(logs, sizeof logs, "%s/logs", run.tmp_dir);
	if ((st = ctq_mkdirs(logs, &err))) {
		ctq_print_error("run", &err);
		ctq_run_abort(&run);
		rc = CTQ_EXIT_ENV;
		goto out;
	}
	printf("ctq run: plan %s (%s), %d step(s) into %s\n", p->name, plan_file, p->n, run.final_dir);
	printf("  GPU: %s\n", gpu ? desc : no_gpu);
	fflush(stdout);

	int counts[4] = {0}; /* passed failed skipped error */
	double t_all = ctq_now_s();
	for (int i = 0; i < p->n; i++) {
		struct step *x = &p->steps[i];
		x->status = "skipped";
		if (skip_reason(p, x, &run, gpu, no_gpu, &err)) {
			counts[2]++;
			printf("[%d/%d] %-22s skipped  %s\n", i + 1, p->n, x->id, x->reason);
			fflush(stdout);
			continue;
		}
		if (err.status || (st = build_argv(x, &run, &err))) {
			ctq_print_error("run", &err);
			ctq_run_abort(&run);
			rc = CTQ_EXIT_USAGE;
			goto out;
		}
		step_run(x, i, p->n, logs, verbose, counts);
	}
	double t_steps = ctq_now_s() - t_all;

	checkpoints(p, &run);
	record(p, &run, plan_file, counts);
	rc = counts[1] || counts[3] ? CTQ_EXIT_FAIL : CTQ_EXIT_OK;
	cJSON_AddNumberToObject(run.manifest, "exit_code", rc);

	int jrc = write_junit(p, &run, rc);
	if (jrc) {
		ctq_run_abort(&run);
		rc = jrc;
		goto out;
	}
	struct ctq_report_summary rs = {0};
	if (report && (st = write_report(&run, &rs, &err))) {
		ctq_print_error("run", &err);
		ctq_run_abort(&run);
		rc = ctq_status_exit_code(st) == CTQ_EXIT_USAGE ? CTQ_EXIT_ENV : ctq_status_exit_code(st);
		goto out;
	}
	char final_dir[sizeof run.final_dir];
	snprintf(final_dir, sizeof final_dir, "%s", run.final_dir);
	if ((st = ctq_run_commit(&run, &err))) {
		ctq_print_error("run", &err);
		rc = CTQ_EXIT_ENV;
		goto out;
	}
	printf("\nrun %s: %d passed, %d failed, %d skipped, %d error in %.1f s\n", p->name, counts[0],
	       counts[1], counts[2], counts[3], t_steps);
	if (report)
		printf("run: results in %s/ (junit.xml, manifest.json, summary.md, report.html%s)%s%s\n",
		       final_dir, rs.n_plots ? ", plots/" : "", rs.plot_note[0] ? "; " : "", rs.plot_note);
	else
		printf("run: results in %s/ (junit.xml, manifest.json)\n", final_dir);
out:
	for (int i = 0; p && i < p->n; i++)
		free_argv(&p->steps[i]);
	if (p)
		cJSON_Delete(p->root);
	free(p);
	fflush(stdout);
	return rc;
}

enum ctq_status ctq_run_plan_check(const char *file, struct ctq_error *err)
{
	struct plan *p = ctq_calloc(1, sizeof *p);
	enum ctq_status st = p ? plan_load(p, file, err) : ctq_error_set(err, CTQ_ERR_NOMEM, file, "out of memory");
	if (p)
		cJSON_Delete(p->root);
	free(p);
	return st;
}
