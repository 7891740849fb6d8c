/* Criterion tests for run plans (plan/plan.h) with commands of the test's
 * own, so that what is checked is the plan module, not the ctq commands:
 *   - a bad plan is invalid-config naming the member at fault (err->path)
 *     and why, and a command outside the caller's table is refused;
 *   - a good plan's steps: ids, commands, after (one id or a list, as
 *     indices), needs, requires;
 *   - ${run} and ${step} expansion;
 *   - executing: skipped for no GPU, for an earlier step that did not pass
 *     and for a missing required path, each with its reason; exit codes to
 *     passed / failed / error; output captured in logs/<id>.txt; --out
 *     RUN/<id> added only to commands that take it and only when the args
 *     name none; the hooks see every step;
 *   - the manifest record (steps, seeds, summary, exit_code, final paths)
 *     and junit.xml (a testcase per step, the verdict). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/json.h"
#include "plan/plan.h"
#include "results/run.h"

/* ---- the test's commands --------------------------------------------------- */

/* The last argv a command saw, joined by spaces. */
static char last_argv[8][1024];

static void note(int slot, int argc, char **argv)
{
	size_t len = 0;
	last_argv[slot][0] = '\0';
	for (int i = 0; i < argc; i++)
		len += (size_t)snprintf(last_argv[slot] + len, sizeof last_argv[slot] - len, "%s%s",
					i ? " " : "", argv[i]);
}

static int cmd_pass(int argc, char **argv)
{
	note(0, argc, argv);
	printf("pass says hello\n");
	fprintf(stderr, "pass on stderr\n");
	return 0;
}

static int cmd_fail(int argc, char **argv)
{
	note(1, argc, argv);
	printf("a check failed here\n");
	return 1;
}

static int cmd_usage(int argc, char **argv)
{
	note(2, argc, argv);
	return 2;
}

static int cmd_env(int argc, char **argv)
{
	note(3, argc, argv);
	return 3;
}

static int cmd_stopped(int argc, char **argv)
{
	note(4, argc, argv);
	return 7;
}

/* A command that takes --out DIR. */
static int cmd_outcmd(int argc, char **argv)
{
	note(5, argc, argv);
	return 0;
}

/* A check that fails and says so in DIR/junit.xml (--out DIR), as ctq's
 * gating commands do. */
static int cmd_gate(int argc, char **argv)
{
	for (int i = 1; i + 1 < argc; i++) {
		if (strcmp(argv[i], "--out"))
			continue;
		char path[1400];
		snprintf(path, sizeof path, "%s/junit.xml", argv[i + 1]);
		struct ctq_error err = {0};
		if (ctq_mkdirs(argv[i + 1], &err))
			return 3;
		FILE *f = fopen(path, "w");
		if (!f)
			return 3;
		fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n  <testsuite name=\"gate\" "
		      "tests=\"1\" failures=\"1\">\n    <testcase name=\"verdict\">\n      <failure "
		      "message=\"inconclusive\">inconclusive</failure>\n    </testcase>\n  </testsuite>\n"
		      "</testsuites>\n",
		      f);
		fclose(f);
	}
	return 1;
}

static const struct ctq_runplan_command cmds[] = {
	{"pass", cmd_pass, false},   {"fail", cmd_fail, false},       {"usage", cmd_usage, false},
	{"env", cmd_env, false},     {"stopped", cmd_stopped, false}, {"outcmd", cmd_outcmd, true},
	{"gate", cmd_gate, true},
};
#define N_CMDS (sizeof cmds / sizeof *cmds)

/* ---- helpers --------------------------------------------------------------- */

struct tmp {
	char root[64];
	char plan[128];
};

static void tmp_make(struct tmp *t)
{
	snprintf(t->root, sizeof t->root, "/tmp/ctq-plan-XXXXXX");
	cr_assert(mkdtemp(t->root));
	snprintf(t->plan, sizeof t->plan, "%s/plan.json", t->root);
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	cr_assert(f, "%s", path);
	fputs(text, f);
	fclose(f);
}

static char *slurp(const char *path)
{
	char *text = NULL;
	size_t n = 0;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_file_read(path, (size_t)16 << 20, &text, &n, &err), CTQ_OK, "%s: %s", path,
		     err.message);
	return text;
}

/* Loads text as a plan into a fresh *p (freed by the caller). */
static enum ctq_status load(struct tmp *t, const char *text, struct ctq_runplan **p,
			    struct ctq_error *err)
{
	put(t->plan, text);
	*p = calloc(1, sizeof **p);
	cr_assert(*p);
	return ctq_runplan_load(*p, t->plan, cmds, N_CMDS, err);
}

static void unload(struct ctq_runplan *p)
{
	ctq_runplan_free(p);
	free(p);
}

/* What the hooks saw: begin and end calls per step. */
struct seen {
	int begun[16], ended[16], ended_skipped[16];
};

static void hook_begin(void *ctx, const struct ctq_runplan *p, int i)
{
	(void)p;
	((struct seen *)ctx)->begun[i]++;
}

static void hook_end(void *ctx, const struct ctq_runplan *p, int i, const char *log)
{
	struct seen *s = ctx;
	s->ended[i]++;
	if (!log) {
		s->ended_skipped[i]++;
		cr_expect_eq(p->steps[i].status, CTQ_STEP_SKIPPED);
	} else {
		cr_expect(ctq_path_exists(log), "step %s: no log %s", p->steps[i].id, log);
	}
}

/* Begins a run directory RUN under t and prepares it. */
static void begin(struct tmp *t, struct ctq_run *run)
{
	char out[128];
	snprintf(out, sizeof out, "%s/run", t->root);
	char *argv[] = {"run", t->plan, NULL};
	struct ctq_error err = {0};
	memset(run, 0, sizeof *run);
	cr_assert_eq(ctq_run_begin(run, out, false, "run", 2, argv, &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(ctq_runplan_prepare(run, NULL, &err), CTQ_OK, "%s", err.message);
}

static const cJSON *member(const cJSON *o, const char *key)
{
	const cJSON *v = ctq_json_get(o, key);
	cr_assert(v, "no member %s", key);
	return v;
}

/* ---- loading ----------------------------------------------------------------- */

TestSuite(plan);

Test(plan, bad_plans_name_the_member_at_fault)
{
	static const struct {
		const char *plan, *path, *says;
	} bad[] = {
		{"[]", "(root)", "a plan is a JSON object; found array"},
		{"{\"name\": \"x\", \"steps\": [], \"extra\": 1}", "extra", "unknown member \"extra\""},
		{"{\"name\": \"x y\", \"steps\": [{}]}", "name", "found x y"},
		{"{\"steps\": [{}]}", "name", "expected a name"},
		{"{\"name\": \"x\", \"about\": 1, \"steps\": [{}]}", "about", "expected a string, found number"},
		{"{\"name\": \"x\", \"steps\": []}", "steps", "found an empty one"},
		{"{\"name\": \"x\", \"steps\": {}}", "steps", "expected a non-empty array of steps"},
		{"{\"name\": \"x\", \"steps\": [3]}", "steps[0]", "a step is an object; found number"},
		{"{\"name\": \"x\", \"steps\": [{\"id\": \"a\", \"command\": \"pass\", \"arg\": []}]}",
		 "steps[0].arg", "unknown member \"arg\""},
		{"{\"name\": \"x\", \"steps\": [{\"id\": \"logs\", \"command\": \"pass\"}]}", "steps[0].id",
		 "(not logs or plots); found logs"},
		{"{\"name\": \"x\", \"steps\": [{\"id\": \".a\", \"command\": \"pass\"}]}", "steps[0].id",
		 "found .a"},
		{"{\"name\": \"x\", \"steps\": [{\"id\": \"a\", \"command\": \"pass\"}, {\"id\": \"a\", \"command\": \"pass\"}]}",
		 "steps[1].id", "duplicate step id \"a\""},
		{"{\"name\": \"x\", \"steps\": [{\"id\": \"a\", \"command\": 3}]}", "steps[0].command",
		 "expected a ctq command name, found number"},
		{"{\"name\": \"x\", \"steps\": [{\"id\": \"a\", \"command\": \"inspect\"}]}", "steps[0].command",
		 "\"inspect\" is not a command a plan can run"},
		{"{\"name\": \"x\", \"steps\": [{\"id\": \"a\", \"command\": \"pass\", \"args\": \"-v\"}]}",
		 "steps[0].args", "expected an array of strings, found string"},
		{"{\"name\": \"x\", \"steps\": [{\"id\": \"a\", \"command\": \"pass\", \"args\": [1]}]}",
		 "steps[0].args", "an item is number"},
		{"{\"name\": \"x\", \"steps\": [{\"id\": \"a\", \"command\": \"pass\", \"requires\": [true]}]}",
		 "steps[0].requires", "an item is"},
		{"{\"name\": \"x\", \"steps\": [{\"id\": \"a\", \"command\": \"pass\", \"needs\": \"tpu\"}]}",
		 "steps[0].needs", "the only need is \"gpu\"; found tpu"},
		{"{\"name\": \"x\", \"steps\": [{\"id\": \"a\", \"command\": \"pass\", \"about\": []}]}",
		 "steps[0].about", "expected a string, found array"},
		{"{\"name\": \"x\", \"steps\": [{\"id\": \"a\", \"command\": \"pass\", \"after\": \"b\"}, {\"id\": \"b\", \"command\": \"pass\"}]}",
		 "steps[0].after", "\"b\" is not an earlier step"},
		{"{\"name\": \"x\", \"steps\": [{\"id\": \"a\", \"command\": \"pass\", \"after\": \"a\"}]}",
		 "steps[0].after", "\"a\" is not an earlier step"},
		{"{\"name\": \"x\", \"steps\": [{\"id\": \"a\", \"command\": \"pass\"}, {\"id\": \"b\", \"command\": \"pass\", \"after\": [\"a\", \"a\"]}]}",
		 "steps[1].after", "names \"a\" twice"},
		{"{\"name\": \"x\", \"steps\": [{\"id\": \"a\", \"command\": \"pass\"}, {\"id\": \"b\", \"command\": \"pass\", \"after\": 2}]}",
		 "steps[1].after", "expected an array of strings, found number"},
	};
	struct tmp t;
	tmp_make(&t);
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		struct ctq_runplan *p;
		struct ctq_error err = {0};
		cr_expect_eq(load(&t, bad[i].plan, &p, &err), CTQ_ERR_INVALID_CONFIG, "%s", bad[i].plan);
		cr_expect_str_eq(err.path, bad[i].path, "%s", bad[i].plan);
		cr_expect(strstr(err.message, bad[i].says), "%s: \"%s\" lacks \"%s\"", bad[i].plan,
			  err.message, bad[i].says);
		unload(p);
	}
	ctq_remove_tree(t.root);
}

Test(plan, too_many_steps_or_arguments_and_not_json)
{
	struct tmp t;
	tmp_make(&t);
	/* 257 steps; then one step of 129 arguments */
	size_t cap = 64 * 1024, len = 0;
	char *text = malloc(cap);
	cr_assert(text);
	len += (size_t)snprintf(text + len, cap - len, "{\"name\": \"big\", \"steps\": [");
	for (int i = 0; i < CTQ_RUNPLAN_MAX_STEPS + 1; i++)
		len += (size_t)snprintf(text + len, cap - len, "%s{\"id\": \"s%d\", \"command\": \"pass\"}",
					i ? ", " : "", i);
	snprintf(text + len, cap - len, "]}");
	struct ctq_runplan *p;
	struct ctq_error err = {0};
	cr_expect_eq(load(&t, text, &p, &err), CTQ_ERR_INVALID_CONFIG);
	cr_expect_str_eq(err.path, "steps");
	unload(p);
	len = (size_t)snprintf(text, cap, "{\"name\": \"big\", \"steps\": [{\"id\": \"a\", \"command\": \"pass\", \"args\": [");
	for (int i = 0; i < CTQ_RUNPLAN_MAX_ARGS + 1; i++)
		len += (size_t)snprintf(text + len, cap - len, "%s\"x\"", i ? ", " : "");
	snprintf(text + len, cap - len, "]}]}");
	err = (struct ctq_error){0};
	cr_expect_eq(load(&t, text, &p, &err), CTQ_ERR_INVALID_CONFIG);
	cr_expect_str_eq(err.path, "steps[0].args");
	cr_expect(strstr(err.message, "more than 128 arguments"), "%s", err.message);
	unload(p);
	free(text);
	err = (struct ctq_error){0};
	cr_expect_eq(load(&t, "{\"name\": ", &p, &err), CTQ_ERR_PARSE);
	unload(p);
	char missing[128];
	snprintf(missing, sizeof missing, "%s/none.json", t.root);
	p = calloc(1, sizeof *p);
	err = (struct ctq_error){0};
	cr_expect_eq(ctq_runplan_load(p, missing, cmds, N_CMDS, &err), CTQ_ERR_IO);
	unload(p);
	ctq_remove_tree(t.root);
}

Test(plan, a_good_plan_loads_its_steps)
{
	struct tmp t;
	tmp_make(&t);
	struct ctq_runplan *p;
	struct ctq_error err = {0};
	cr_assert_eq(load(&t,
			  "{\"name\": \"good\", \"about\": \"a plan\", \"steps\": ["
			  "{\"id\": \"a\", \"command\": \"pass\", \"args\": [\"1\", \"${run}\"], \"about\": \"first\"},"
			  "{\"id\": \"b\", \"command\": \"outcmd\", \"needs\": \"gpu\", \"after\": \"a\"},"
			  "{\"id\": \"c\", \"command\": \"fail\", \"after\": [\"b\", \"a\"], \"requires\": [\"x\"]}]}",
			  &p, &err),
		     CTQ_OK, "%s", err.message);
	cr_expect_str_eq(p->name, "good");
	cr_expect_str_eq(p->about, "a plan");
	cr_expect_eq(strlen(p->sha256), 64);
	cr_assert_eq(p->n, 3);
	cr_expect_str_eq(p->steps[0].id, "a");
	cr_expect_eq(p->steps[0].cmd, &cmds[0]);
	cr_expect_str_eq(p->steps[0].about, "first");
	cr_expect_eq(cJSON_GetArraySize(p->steps[0].args), 2);
	cr_expect(!p->steps[0].needs_gpu);
	cr_expect_eq(p->steps[0].n_after, 0);
	cr_expect_eq(p->steps[1].cmd, &cmds[5]);
	cr_expect(p->steps[1].needs_gpu);
	cr_expect_str_eq(p->steps[1].about, "");
	cr_expect_eq(p->steps[1].n_after, 1);
	cr_expect_eq(p->steps[1].after[0], 0);
	cr_expect_eq(p->steps[2].n_after, 2);
	cr_expect_eq(p->steps[2].after[0], 1);
	cr_expect_eq(p->steps[2].after[1], 0);
	cr_expect_eq(cJSON_GetArraySize(p->steps[2].requires), 1);
	for (int i = 0; i < 3; i++)
		cr_expect_eq(p->steps[i].argc, 0, "argv is built when a step runs");
	unload(p);
	ctq_remove_tree(t.root);
}

Test(plan, substitute_expands_run_and_step)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
		{"", ""},
		{"plain", "plain"},
		{"${run}", "/R"},
		{"${step}/x", "/R/s/x"},
		{"${run}/models/${run}", "/R/models//R"},
		{"${ru}n ${step", "${ru}n ${step"},
		{"$${run}}", "$/R}"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char *got = ctq_runplan_substitute(cases[i].in, "/R", "/R/s");
		cr_assert(got);
		cr_expect_str_eq(got, cases[i].want, "%s", cases[i].in);
		free(got);
	}
}

Test(plan, step_status_names_are_stable)
{
	cr_expect_str_eq(ctq_step_status_name(CTQ_STEP_PASSED), "passed");
	cr_expect_str_eq(ctq_step_status_name(CTQ_STEP_FAILED), "failed");
	cr_expect_str_eq(ctq_step_status_name(CTQ_STEP_SKIPPED), "skipped");
	cr_expect_str_eq(ctq_step_status_name(CTQ_STEP_ERROR), "error");
}

Test(plan, gpu_off_is_said_as_such)
{
	char no_gpu[600] = "", desc[256] = "";
	cr_expect(!ctq_runplan_gpu("off", no_gpu, sizeof no_gpu, desc, sizeof desc));
	cr_expect_str_eq(no_gpu, "GPU steps turned off (--gpu off)");
}

/* ---- executing ----------------------------------------------------------------- */

#define EXEC_PLAN                                                                                  \
	"{\"name\": \"exec\", \"steps\": ["                                                          \
	"{\"id\": \"p\", \"command\": \"pass\", \"args\": [\"${run}/m\", \"--seed\", \"5\"]},"       \
	"{\"id\": \"f\", \"command\": \"fail\"},"                                                    \
	"{\"id\": \"u\", \"command\": \"usage\"},"                                                   \
	"{\"id\": \"e\", \"command\": \"env\"},"                                                     \
	"{\"id\": \"x\", \"command\": \"stopped\"},"                                                 \
	"{\"id\": \"g\", \"command\": \"pass\", \"needs\": \"gpu\"},"                                \
	"{\"id\": \"af\", \"command\": \"pass\", \"after\": [\"p\", \"f\"]},"                        \
	"{\"id\": \"ap\", \"command\": \"pass\", \"after\": \"p\", \"args\": [\"${step}\"]},"        \
	"{\"id\": \"r\", \"command\": \"pass\", \"requires\": [\"${run}/none\"], \"args\": [\"${step}\"]}," \
	"{\"id\": \"rf\", \"command\": \"pass\", \"requires\": [\"fixtures/ctq-test-none\"]},"      \
	"{\"id\": \"o\", \"command\": \"outcmd\", \"args\": [\"a\"]},"                               \
	"{\"id\": \"o2\", \"command\": \"outcmd\", \"args\": [\"--out\", \"${run}/elsewhere\"]}"      \
	"]}"

Test(plan, steps_run_skip_and_tally)
{
	struct tmp t;
	tmp_make(&t);
	struct ctq_runplan *p;
	struct ctq_error err = {0};
	cr_assert_eq(load(&t, EXEC_PLAN, &p, &err), CTQ_OK, "%s", err.message);
	struct ctq_run run;
	begin(&t, &run);
	struct seen seen = {0};
	const struct ctq_runplan_hooks hooks = {&seen, hook_begin, hook_end};
	struct ctq_runplan_tally tally;
	cr_assert_eq(ctq_runplan_steps(p, &run, false, "no CUDA device: test", &hooks, &tally, &err),
		     CTQ_OK, "%s", err.message);
	static const struct {
		const char *id;
		enum ctq_step_status status;
		int exit_code;
		const char *reason; /* a part of it; "" when none */
	} want[] = {
		{"p", CTQ_STEP_PASSED, 0, ""},
		{"f", CTQ_STEP_FAILED, 1, "a check failed (exit 1; see logs/f.txt)"},
		{"u", CTQ_STEP_ERROR, 2, "bad usage or input (exit 2; see logs/u.txt)"},
		{"e", CTQ_STEP_ERROR, 3, "the environment cannot do it (exit 3; see logs/e.txt)"},
		{"x", CTQ_STEP_ERROR, 7, "stopped (exit 7; see logs/x.txt)"},
		{"g", CTQ_STEP_SKIPPED, 0, "no CUDA device: test"},
		{"af", CTQ_STEP_SKIPPED, 0, "step f did not pass (failed)"},
		{"ap", CTQ_STEP_PASSED, 0, ""},
		{"r", CTQ_STEP_SKIPPED, 0, "/run/none"},
		{"rf", CTQ_STEP_SKIPPED, 0, "missing fixtures/ctq-test-none (run `make fixtures`)"},
		{"o", CTQ_STEP_PASSED, 0, ""},
		{"o2", CTQ_STEP_PASSED, 0, ""},
	};
	cr_assert_eq(p->n, (int)(sizeof want / sizeof *want));
	for (int i = 0; i < p->n; i++) {
		const struct ctq_runplan_step *x = &p->steps[i];
		cr_expect_str_eq(x->id, want[i].id);
		cr_expect_eq(x->status, want[i].status, "%s: %s", x->id, ctq_step_status_name(x->status));
		cr_expect_eq(seen.ended[i], 1, "%s: step_end %d times", x->id, seen.ended[i]);
		if (want[i].status == CTQ_STEP_SKIPPED) {
			cr_expect_eq(seen.begun[i], 0, "%s", x->id);
			cr_expect_eq(seen.ended_skipped[i], 1, "%s", x->id);
			cr_expect_eq(x->argc, 0, "%s", x->id);
		} else {
			cr_expect_eq(seen.begun[i], 1, "%s", x->id);
			cr_expect_eq(x->exit_code, want[i].exit_code, "%s", x->id);
		}
		if (want[i].reason[0])
			cr_expect(strstr(x->reason, want[i].reason), "%s: \"%s\" lacks \"%s\"", x->id,
				  x->reason, want[i].reason);
		else
			cr_expect_str_eq(x->reason, "", "%s", x->id);
	}
	/* the missing path is named as the finished run will be */
	cr_expect(strstr(p->steps[8].reason, run.final_dir) && !strstr(p->steps[8].reason, ".tmp-"),
		  "%s", p->steps[8].reason);
	cr_expect_eq(tally.counts[CTQ_STEP_PASSED], 4);
	cr_expect_eq(tally.counts[CTQ_STEP_FAILED], 1);
	cr_expect_eq(tally.counts[CTQ_STEP_ERROR], 3);
	cr_expect_eq(tally.counts[CTQ_STEP_SKIPPED], 4);
	cr_expect_eq(ctq_runplan_exit_code(&tally), 1);

	/* argv: ${run} / ${step} expanded to the temporary folder while running;
	 * --out RUN/<id> for a command that takes it, unless the args name one */
	char want_argv[1400];
	snprintf(want_argv, sizeof want_argv, "pass %s/%s", run.tmp_dir, "ap");
	cr_expect_str_eq(last_argv[0], want_argv);
	snprintf(want_argv, sizeof want_argv, "%s/m", run.tmp_dir);
	cr_expect_eq(p->steps[0].argc, 4);
	cr_expect_str_eq(p->steps[0].argv[1], want_argv);
	cr_expect_str_eq(p->steps[0].argv[3], "5");
	snprintf(want_argv, sizeof want_argv, "outcmd --out %s/elsewhere", run.tmp_dir);
	cr_expect_str_eq(last_argv[5], want_argv);
	cr_expect_eq(p->steps[10].argc, 4);
	snprintf(want_argv, sizeof want_argv, "%s/o", run.tmp_dir);
	cr_expect_str_eq(p->steps[10].argv[2], "--out");
	cr_expect_str_eq(p->steps[10].argv[3], want_argv);
	cr_expect_null(p->steps[10].argv[4]);
	cr_expect_eq(p->steps[11].argc, 3);

	/* the output of a step is in its log, not on the terminal */
	char log[1400];
	snprintf(log, sizeof log, "%s/logs/p.txt", run.tmp_dir);
	char *text = slurp(log);
	cr_expect(strstr(text, "pass says hello\n") && strstr(text, "pass on stderr\n"), "%s", text);
	free(text);
	snprintf(log, sizeof log, "%s/logs/g.txt", run.tmp_dir);
	cr_expect(!ctq_path_exists(log), "a skipped step has no log");

	ctq_run_abort(&run);
	unload(p);
	ctq_remove_tree(t.root);
}

Test(plan, a_gpu_step_runs_when_there_is_a_gpu)
{
	struct tmp t;
	tmp_make(&t);
	struct ctq_runplan *p;
	struct ctq_error err = {0};
	cr_assert_eq(load(&t, "{\"name\": \"g\", \"steps\": [{\"id\": \"g\", \"command\": \"pass\", \"needs\": \"gpu\"}]}",
			  &p, &err),
		     CTQ_OK);
	struct ctq_run run;
	begin(&t, &run);
	struct ctq_runplan_tally tally;
	cr_assert_eq(ctq_runplan_steps(p, &run, true, "unused", NULL, &tally, &err), CTQ_OK);
	cr_expect_eq(p->steps[0].status, CTQ_STEP_PASSED);
	cr_expect_eq(ctq_runplan_exit_code(&tally), 0);
	ctq_run_abort(&run);
	unload(p);
	ctq_remove_tree(t.root);
}

/* "expect": "fail" shows a gate's teeth: the step passes when its check
 * fails (exit 1), fails when the check passes, and an error stays an error;
 * the steps after it run only when the gate did bite. */
Test(plan, an_expected_failure_passes_only_when_the_check_fails)
{
	struct tmp t;
	tmp_make(&t);
	struct ctq_runplan *p;
	struct ctq_error err = {0};
	cr_assert_eq(load(&t, "{\"name\": \"teeth\", \"steps\": ["
			      "{\"id\": \"bites\", \"command\": \"fail\", \"expect\": \"fail\"},"
			      "{\"id\": \"toothless\", \"command\": \"pass\", \"expect\": \"fail\"},"
			      "{\"id\": \"broken\", \"command\": \"usage\", \"expect\": \"fail\"},"
			      "{\"id\": \"plain\", \"command\": \"pass\", \"expect\": \"pass\"},"
			      "{\"id\": \"after-bite\", \"command\": \"pass\", \"after\": \"bites\"},"
			      "{\"id\": \"after-toothless\", \"command\": \"pass\", \"after\": \"toothless\"},"
			      "{\"id\": \"gate-bites\", \"command\": \"gate\", \"expect\": \"fail\"}]}",
			  &p, &err),
		     CTQ_OK, "%s", err.message);
	cr_expect(p->steps[0].expect_fail && p->steps[1].expect_fail && !p->steps[3].expect_fail);
	struct ctq_run run;
	begin(&t, &run);
	struct ctq_runplan_tally tally;
	cr_assert_eq(ctq_runplan_steps(p, &run, false, "unused", NULL, &tally, &err), CTQ_OK);
	cr_expect_eq(p->steps[0].status, CTQ_STEP_PASSED);
	cr_expect(strstr(p->steps[0].reason, "as the plan expects (see logs/bites.txt)"), "%s", p->steps[0].reason);
	cr_expect_eq(p->steps[1].status, CTQ_STEP_FAILED);
	cr_expect(strstr(p->steps[1].reason, "expects it to fail") && strstr(p->steps[1].reason, "logs/toothless.txt"),
		  "%s", p->steps[1].reason);
	cr_expect_eq(p->steps[2].status, CTQ_STEP_ERROR);
	cr_expect_eq(p->steps[3].status, CTQ_STEP_PASSED);
	cr_expect_eq(p->steps[4].status, CTQ_STEP_PASSED);
	cr_expect_eq(p->steps[5].status, CTQ_STEP_SKIPPED);
	cr_expect_eq(p->steps[6].status, CTQ_STEP_PASSED);
	cr_expect_eq(ctq_runplan_exit_code(&tally), 1);
	/* the manifest says what was expected; junit.xml counts the expected
	 * failure as passed and leaves the gate's own failing suite out, the
	 * reason in the testcase's <system-out> */
	const int rc = ctq_runplan_exit_code(&tally);
	ctq_runplan_record(p, &run, t.plan, &tally, rc);
	cr_assert_eq(ctq_runplan_junit(p, &run, rc, &err), CTQ_OK, "%s", err.message);
	const cJSON *sb = cJSON_GetArrayItem(member(run.manifest, "steps"), 6);
	cr_expect_str_eq(member(sb, "expect")->valuestring, "fail");
	cr_expect_eq(member(sb, "exit_code")->valueint, 1);
	cr_expect_str_eq(member(sb, "status")->valuestring, "passed");
	char path[1400];
	snprintf(path, sizeof path, "%s/gate-bites/junit.xml", run.tmp_dir);
	cr_expect(ctq_path_exists(path), "the gate wrote no junit.xml");
	snprintf(path, sizeof path, "%s/junit.xml", run.tmp_dir);
	char *xml = slurp(path);
	cr_expect(!strstr(xml, "gate-bites: gate"), "the expected failure's own suite was copied: %s", xml);
	cr_expect(strstr(xml, "<system-out>its check failed (exit 1), as the plan expects (see logs/gate-bites.txt)"
			      "</system-out>"),
		  "%s", xml);
	/* the toothless step is the one failure */
	cr_expect(strstr(xml, "failures=\"1\" errors=\"1\""), "%s", xml);
	free(xml);
	ctq_run_abort(&run);
	unload(p);
	ctq_remove_tree(t.root);

	/* only "pass" or "fail" */
	tmp_make(&t);
	cr_expect_eq(load(&t, "{\"name\": \"x\", \"steps\": [{\"id\": \"a\", \"command\": \"pass\", \"expect\": \"inferior\"}]}",
			  &p, &err),
		     CTQ_ERR_INVALID_CONFIG);
	cr_expect_str_eq(err.path, "steps[0].expect");
	cr_expect(strstr(err.message, "found inferior"), "%s", err.message);
	unload(p);
	ctq_remove_tree(t.root);
}

Test(plan, record_and_junit_describe_the_finished_run)
{
	struct tmp t;
	tmp_make(&t);
	struct ctq_runplan *p;
	struct ctq_error err = {0};
	cr_assert_eq(load(&t, EXEC_PLAN, &p, &err), CTQ_OK, "%s", err.message);
	struct ctq_run run;
	begin(&t, &run);
	struct ctq_runplan_tally tally;
	cr_assert_eq(ctq_runplan_steps(p, &run, false, "no GPU here", NULL, &tally, &err), CTQ_OK);
	const int rc = ctq_runplan_exit_code(&tally);
	ctq_runplan_record(p, &run, t.plan, &tally, rc);
	cr_assert_eq(ctq_runplan_junit(p, &run, rc, &err), CTQ_OK, "%s", err.message);

	const cJSON *m = run.manifest;
	cr_expect_eq(member(m, "exit_code")->valueint, 1);
	const cJSON *pl = member(m, "plan");
	cr_expect_str_eq(member(pl, "name")->valuestring, "exec");
	cr_expect_str_eq(member(pl, "file")->valuestring, t.plan);
	cr_expect_str_eq(member(pl, "sha256")->valuestring, p->sha256);
	const cJSON *sum = member(m, "summary");
	cr_expect_eq(member(sum, "passed")->valueint, 4);
	cr_expect_eq(member(sum, "failed")->valueint, 1);
	cr_expect_eq(member(sum, "skipped")->valueint, 4);
	cr_expect_eq(member(sum, "error")->valueint, 3);
	const cJSON *seeds = member(m, "seeds");
	cr_expect_str_eq(member(seeds, "p")->valuestring, "5");
	cr_expect_str_eq(member(seeds, "f")->valuestring, "command default");
	cr_expect_null(ctq_json_get(seeds, "g"), "a skipped step has no seed");
	const cJSON *steps = member(m, "steps");
	cr_assert_eq(cJSON_GetArraySize(steps), p->n);
	/* a step that ran: its argv under the final name, exit code and log */
	const cJSON *s0 = cJSON_GetArrayItem(steps, 0);
	char want[1400];
	snprintf(want, sizeof want, "%s/m", run.final_dir);
	cr_expect_str_eq(cJSON_GetArrayItem(member(s0, "argv"), 1)->valuestring, want);
	cr_expect_str_eq(member(s0, "status")->valuestring, "passed");
	cr_expect_eq(member(s0, "exit_code")->valueint, 0);
	cr_expect_str_eq(member(s0, "log")->valuestring, "logs/p.txt");
	cr_expect_null(ctq_json_get(s0, "reason"));
	/* a skipped one: the plan's args expanded to the final names, no exit
	 * code or log, its need and reason */
	const cJSON *sg = cJSON_GetArrayItem(steps, 5);
	cr_expect_str_eq(member(sg, "status")->valuestring, "skipped");
	cr_expect_str_eq(member(sg, "reason")->valuestring, "no GPU here");
	cr_expect_str_eq(member(sg, "needs")->valuestring, "gpu");
	cr_expect_null(ctq_json_get(sg, "exit_code"));
	cr_expect_null(ctq_json_get(sg, "log"));
	const cJSON *sr = cJSON_GetArrayItem(steps, 8);
	snprintf(want, sizeof want, "%s/r", run.final_dir);
	cr_expect_str_eq(cJSON_GetArrayItem(member(sr, "argv"), 1)->valuestring, want);
	cr_expect(cJSON_IsArray(member(m, "checkpoints")));

	char path[1400];
	snprintf(path, sizeof path, "%s/junit.xml", run.tmp_dir);
	char *xml = slurp(path);
	for (int i = 0; i < p->n; i++) {
		char name[128];
		snprintf(name, sizeof name, "name=\"%s (ctq %s", p->steps[i].id, p->steps[i].command);
		cr_expect(strstr(xml, name), "junit.xml has no testcase %s", p->steps[i].id);
	}
	/* the command line as the finished run names it */
	snprintf(want, sizeof want, "name=\"p (ctq pass %s/m --seed 5)\"", run.final_dir);
	cr_expect(strstr(xml, want), "junit.xml lacks %s", want);
	cr_expect(strstr(xml, "<skipped message=\"no GPU here\"/>"), "%s", xml);
	/* no step that needs a GPU ran: the verdict qualifies the CPU only */
	cr_expect(strstr(xml, "value=\"FAIL (" CTQ_REPORT_CPU_ONLY ")\""), "%s", xml);
	free(xml);
	ctq_run_abort(&run);
	unload(p);
	ctq_remove_tree(t.root);
}
