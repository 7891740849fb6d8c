/* Run plans (ctq run PLAN): a JSON list of ctq commands, loaded and
 * validated (plan.c), then executed in-process into one run directory
 * (exec.c): each step writes into RUN/<step id>/ (commands with --out) or
 * where its arguments say (${run}, ${step}); its output goes to
 * RUN/logs/<step id>.txt. The run gets one junit.xml (a testcase per step
 * plus the steps' own suites), one manifest.json (environment, plan, steps,
 * seeds, checkpoint provenance) and, unless left out, summary.md,
 * report.html and plots/.
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
 * references to later steps are a bad plan (invalid-config, nothing runs).
 *
 * The commands a step may run are the caller's (harness/registry.c hands
 * its in_plan rows over as a struct ctq_runplan_command table): this folder
 * knows nothing of the ctq program. Library code: it prints nothing; what a
 * step prints goes to its log, and the caller prints the progress lines
 * from struct ctq_runplan_hooks. */
#ifndef CTQ_PLAN_PLAN_H
#define CTQ_PLAN_PLAN_H

#include <stdbool.h>
#include <stddef.h>

#include "core/sha256.h"
#include "core/status.h"
#include "reports/report.h"

struct cJSON;
struct ctq_run;

#define CTQ_RUNPLAN_MAX_STEPS 256
#define CTQ_RUNPLAN_MAX_ARGS 128

/* A command a step may run. */
struct ctq_runplan_command {
	const char *name;
	int (*run)(int argc, char **argv); /* returns an exit code (CTQ_EXIT_*) */
	bool out_option; /* takes --out DIR: RUN/<step id> unless the args name one */
};

/* The outcome of a step. */
enum ctq_step_status {
	CTQ_STEP_PASSED,  /* exit 0 */
	CTQ_STEP_FAILED,  /* exit 1: a check failed */
	CTQ_STEP_SKIPPED, /* not run: reason says why */
	CTQ_STEP_ERROR,   /* any other exit: bad usage, the environment, stopped */
	CTQ_STEP_STATUS_COUNT
};

/* "passed", "failed", "skipped", "error" (manifest.json and junit.xml). */
const char *ctq_step_status_name(enum ctq_step_status s);

struct ctq_runplan_step {
	const char *id, *command, *about; /* borrowed from the plan JSON */
	const struct ctq_runplan_command *cmd;
	const struct cJSON *args, *requires;
	bool needs_gpu;
	/* "expect": "fail": a gate's teeth; the step passes when its command
	 * reports a failed check (exit 1) and fails when it passes (exit 0) */
	bool expect_fail;
	int after[CTQ_RUNPLAN_MAX_STEPS]; /* earlier steps, by index */
	int n_after;
	/* results */
	enum ctq_step_status status;
	char reason[512]; /* why skipped, failed or in error; "" when passed, but
			   * for an expected failure that passed, which says so */
	int exit_code;
	double wall_s;
	char *argv[CTQ_RUNPLAN_MAX_ARGS + 4]; /* built when the step runs; argv[0] the command */
	int argc;
};

struct ctq_runplan {
	struct cJSON *root;
	const char *name, *about; /* borrowed from root */
	struct ctq_runplan_step steps[CTQ_RUNPLAN_MAX_STEPS];
	int n;
	char sha256[CTQ_SHA256_HEX]; /* of the plan file */
	/* junit.xml's per-step paths and command lines (ctq_runplan_junit),
	 * held here so that the run's bookkeeping allocates nothing of its own
	 * once the steps have run */
	struct {
		char junit[1400], probe_csv[1400], cmdline[600];
	} junit_scratch[CTQ_RUNPLAN_MAX_STEPS];
};

/* Loads and validates the plan in file into p (zeroed first; large: the
 * caller allocates it). A step's command is looked up by name in cmds
 * (n_cmds rows). Errors: io-error, parse-error (not JSON), invalid-config
 * (a bad plan: err->path is the JSON path of the member at fault),
 * out-of-memory. ctq_runplan_free releases p, also after an error. */
enum ctq_status ctq_runplan_load(struct ctq_runplan *p, const char *file,
				 const struct ctq_runplan_command *cmds, size_t n_cmds,
				 struct ctq_error *err);
/* Frees what p holds (the JSON, the steps' argv), not p itself. NULL: nothing. */
void ctq_runplan_free(struct ctq_runplan *p);

/* s with ${run} replaced by run and ${step} by step; owned (free), NULL when
 * out of memory. */
char *ctq_runplan_substitute(const char *s, const char *run, const char *step);

/* ---- execution (exec.c) ---- */

/* Whether GPU steps can run: mode "off" never; otherwise when the CUDA
 * backend opens (desc: its description). False with why in no_gpu: "GPU
 * steps turned off (--gpu off)", or the backend's message (no driver, an
 * old driver, no device, a build without CUDA) as "no CUDA device: ...". */
bool ctq_runplan_gpu(const char *mode, char *no_gpu, size_t no_cap, char *desc,
		     size_t desc_cap);

/* Prepares a begun run for the steps: the environment into its manifest
 * (the GPUs queried; cuda_desc, or NULL, names the device) and the logs/
 * folder. */
enum ctq_status ctq_runplan_prepare(struct ctq_run *run, const char *cuda_desc,
				    struct ctq_error *err);

/* What the caller prints as the steps go; ctx is passed back. Either may be
 * NULL. */
struct ctq_runplan_hooks {
	void *ctx;
	/* Step i is about to run (not called for a skipped step). */
	void (*step_begin)(void *ctx, const struct ctq_runplan *p, int i);
	/* Step i ran, its output in log (NULL: it was skipped). */
	void (*step_end)(void *ctx, const struct ctq_runplan *p, int i, const char *log);
};

/* Tallies of a plan's steps (counts by enum ctq_step_status). */
struct ctq_runplan_tally {
	int counts[CTQ_STEP_STATUS_COUNT];
	double steps_s; /* wall time of the steps, skipped ones included */
};

/* Runs p's steps in order into run (prepared), each with its stdout and
 * stderr in RUN/logs/<id>.txt: a step is skipped when it needs a GPU and
 * gpu is false (no_gpu is the reason), when a step it comes after did not
 * pass, or when a path it requires (${run}, ${step} expanded) is missing.
 * A step that runs gets the plan's args, expanded, plus --out RUN/<id> when
 * its command takes --out and the args name none. Fills each step's
 * results and t. Errors (nothing more runs): out-of-memory. */
enum ctq_status ctq_runplan_steps(struct ctq_runplan *p, struct ctq_run *run, bool gpu,
				  const char *no_gpu, const struct ctq_runplan_hooks *hooks,
				  struct ctq_runplan_tally *t, struct ctq_error *err);

/* The exit code of the run: CTQ_EXIT_FAIL when a step failed or stopped on
 * an error, else CTQ_EXIT_OK. */
int ctq_runplan_exit_code(const struct ctq_runplan_tally *t);

/* After the steps: the manifest's checkpoints (folders the steps named,
 * with provenance), plan, steps, seeds, summary and exit_code (rc). */
void ctq_runplan_record(const struct ctq_runplan *p, struct ctq_run *run, const char *plan_file,
			const struct ctq_runplan_tally *t, int rc);

/* RUN/junit.xml: a testcase per step, then the steps' own suites (their
 * junit.xml and probe.csv); the verdict PASS or FAIL by rc, qualified when
 * no GPU code ran (ctq_report_cpu_only). Writes p's junit_scratch. */
enum ctq_status ctq_runplan_junit(struct ctq_runplan *p, struct ctq_run *run, int rc,
				  struct ctq_error *err);

/* summary.md, report.html and plots/ over the manifest as it will read once
 * committed (ended_utc and wall_time_s added to a copy); rs says what was
 * written. */
enum ctq_status ctq_runplan_report(struct ctq_run *run, struct ctq_report_summary *rs,
				   struct ctq_error *err);

#endif
