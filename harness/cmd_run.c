/* ctq run: executes a plan (a JSON list of ctq commands) in-process into
 * one run directory. The plan's format, its checks and its execution are
 * plan/plan.h's; this file hands it the registry's in_plan commands, parses
 * the options, prints the progress lines and the summary, and maps the
 * outcome to an exit code. */
#include "harness/commands.h"
#include "core/arena.h"
#include "core/fileio.h"
#include "plan/plan.h"
#include "results/run.h"

#include <stdlib.h>
#include <string.h>

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

/* The registry's commands a plan may run, as plan/ takes them, into cmds
 * (room for cap); how many. */
static size_t plan_commands(struct ctq_runplan_command *cmds, size_t cap)
{
	size_t n = 0;
	for (size_t i = 0; i < ctq_n_commands && n < cap; i++)
		if (ctq_commands[i].in_plan)
			cmds[n++] = (struct ctq_runplan_command){ctq_commands[i].name, ctq_commands[i].run,
								 ctq_commands[i].out == CTQ_CMD_OUT_OPTION};
	return n;
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

/* The progress lines: "[i/n] id" before a step runs, its outcome after. */
static void step_begin(void *ctx, const struct ctq_runplan *p, int i)
{
	(void)ctx;
	printf("[%d/%d] %-22s ", i + 1, p->n, p->steps[i].id);
	fflush(stdout);
}

static void step_end(void *ctx, const struct ctq_runplan *p, int i, const char *log)
{
	const bool verbose = *(const bool *)ctx;
	const struct ctq_runplan_step *x = &p->steps[i];
	if (!log) {
		printf("[%d/%d] %-22s skipped  %s\n", i + 1, p->n, x->id, x->reason);
		fflush(stdout);
		return;
	}
	printf("%-8s %7.2f s%s%s\n", ctq_step_status_name(x->status), x->wall_s,
	       x->reason[0] ? "  " : "", x->reason);
	if (verbose)
		print_log(log);
	else if (x->status != CTQ_STEP_PASSED)
		print_tail(log);
	fflush(stdout);
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

/* The exit code of a failed write of the run's own files: a usage status
 * (nothing the user named is wrong by then) is the environment's. */
static int write_exit_code(enum ctq_status st)
{
	return ctq_status_exit_code(st) == CTQ_EXIT_USAGE ? CTQ_EXIT_ENV : ctq_status_exit_code(st);
}

/* The steps, the manifest, junit.xml and the report into run (begun);
 * prints the summary. Aborts run on error. The exit code. */
static int run_plan(struct ctq_runplan *p, struct ctq_run *run, const char *plan_file,
		    bool verbose, bool report, const char *desc, bool gpu, const char *no_gpu)
{
	struct ctq_error err = {0};
	if (ctq_runplan_prepare(run, desc[0] ? desc : NULL, &err)) {
		ctq_print_error("run", &err);
		ctq_run_abort(run);
		return CTQ_EXIT_ENV;
	}
	printf("ctq run: plan %s (%s), %d step(s) into %s\n", p->name, plan_file, p->n, run->final_dir);
	printf("  GPU: %s\n", gpu ? desc : no_gpu);
	fflush(stdout);

	struct ctq_runplan_tally t;
	const struct ctq_runplan_hooks hooks = {&verbose, step_begin, step_end};
	if (ctq_runplan_steps(p, run, gpu, no_gpu, &hooks, &t, &err)) {
		ctq_print_error("run", &err);
		ctq_run_abort(run);
		return CTQ_EXIT_USAGE;
	}
	int rc = ctq_runplan_exit_code(&t);
	ctq_runplan_record(p, run, plan_file, &t, rc);
	enum ctq_status st;
	if ((st = ctq_runplan_junit(p, run, rc, &err))) {
		ctq_print_error("run", &err);
		ctq_run_abort(run);
		return CTQ_EXIT_ENV;
	}
	struct ctq_report_summary rs = {0};
	if (report && (st = ctq_runplan_report(run, &rs, &err))) {
		ctq_print_error("run", &err);
		ctq_run_abort(run);
		return write_exit_code(st);
	}
	char final_dir[sizeof run->final_dir];
	snprintf(final_dir, sizeof final_dir, "%s", run->final_dir);
	if (ctq_run_commit(run, &err)) {
		ctq_print_error("run", &err);
		return CTQ_EXIT_ENV;
	}
	const int *c = t.counts;
	printf("\nrun %s: %d passed, %d failed, %d skipped, %d error in %.1f s\n", p->name,
	       c[CTQ_STEP_PASSED], c[CTQ_STEP_FAILED], c[CTQ_STEP_SKIPPED], c[CTQ_STEP_ERROR], t.steps_s);
	if (report)
		printf("run: results in %s/ (junit.xml, manifest.json, summary.md, report.html%s)%s%s\n",
		       final_dir, rs.n_plots ? ", plots/" : "", rs.plot_note[0] ? "; " : "", rs.plot_note);
	else
		printf("run: results in %s/ (junit.xml, manifest.json)\n", final_dir);
	return rc;
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
	if (!ctq_opt_out_ok("run", &out))
		return CTQ_EXIT_USAGE;
	struct ctq_runplan *p = ctq_calloc(1, sizeof *p);
	if (!p) {
		fprintf(stderr, "ctq run: out of memory\n");
		return CTQ_EXIT_USAGE;
	}
	struct ctq_error err = {0};
	struct ctq_run run;
	memset(&run, 0, sizeof run);
	int rc = CTQ_EXIT_USAGE;
	struct ctq_runplan_command cmds[32];
	const size_t n_cmds = plan_commands(cmds, sizeof cmds / sizeof *cmds);
	enum ctq_status st = ctq_runplan_load(p, plan_file, cmds, n_cmds, &err);
	if (st) {
		fprintf(stderr, "ctq run: bad plan %s: %s at %s: %s\n", plan_file, ctq_status_name(err.status),
			err.path, err.message);
		goto out;
	}
	char no_gpu[600] = "no CUDA device", desc[256] = "";
	const bool gpu = ctq_runplan_gpu(gpu_mode, no_gpu, sizeof no_gpu, desc, sizeof desc);
	if ((st = ctq_run_begin(&run, out.dir, out.force, "run", argc, argv, &err))) {
		ctq_print_error("run", &err);
		rc = st == CTQ_ERR_USAGE ? CTQ_EXIT_USAGE : write_exit_code(st);
		goto out;
	}
	rc = run_plan(p, &run, plan_file, verbose, !no_report, desc, gpu, no_gpu);
out:
	ctq_runplan_free(p);
	free(p);
	fflush(stdout);
	return rc;
}

enum ctq_status ctq_run_plan_check(const char *file, struct ctq_error *err)
{
	struct ctq_runplan *p = ctq_calloc(1, sizeof *p);
	struct ctq_runplan_command cmds[32];
	const size_t n_cmds = plan_commands(cmds, sizeof cmds / sizeof *cmds);
	enum ctq_status st = p ? ctq_runplan_load(p, file, cmds, n_cmds, err)
			       : ctq_error_set(err, CTQ_ERR_NOMEM, file, "out of memory");
	ctq_runplan_free(p);
	free(p);
	return st;
}
