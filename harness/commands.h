/* ctq commands: one file per command; each returns an exit code
 * (core/status.h enum ctq_exit) and prints its own --help. */
#ifndef CTQ_HARNESS_COMMANDS_H
#define CTQ_HARNESS_COMMANDS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "core/status.h"
#include "quant/modules.h"
#include "quant/qconfig.h"
#include "backend/backend.h"

int ctq_cmd_inspect(int argc, char **argv);
int ctq_cmd_conform(int argc, char **argv);
int ctq_cmd_probe(int argc, char **argv);
int ctq_cmd_bench(int argc, char **argv);
int ctq_cmd_generate(int argc, char **argv);
int ctq_cmd_bench_model(int argc, char **argv);
int ctq_cmd_bench_serve(int argc, char **argv);
/* bench serve --url (harness/cmd_bench_serve_url.c): against an HTTP server. */
int ctq_cmd_bench_serve_url(int argc, char **argv);
int ctq_cmd_bench_gemm(int argc, char **argv);
int ctq_cmd_make_model(int argc, char **argv);
int ctq_cmd_quantize(int argc, char **argv);
int ctq_cmd_verify_weights(int argc, char **argv);
int ctq_cmd_import_gguf(int argc, char **argv);
int ctq_cmd_eval(int argc, char **argv);
int ctq_cmd_eval_kld(int argc, char **argv);
int ctq_cmd_run(int argc, char **argv);
/* Loads and validates a plan file without running it (the fuzz target tests/fuzz/fuzz_plan.c). */
enum ctq_status ctq_run_plan_check(const char *file, struct ctq_error *err);
int ctq_cmd_report(int argc, char **argv);
int ctq_cmd_compare(int argc, char **argv);
int ctq_cmd_serve(int argc, char **argv);

/* The command registry (harness/registry.c): main dispatches through it and
 * `ctq help` lists it in this order; `ctq run` runs the in_plan ones. */

/* How a command takes its output location when a plan step runs it. */
enum ctq_cmd_out {
	CTQ_CMD_OUT_NONE,   /* where its arguments say */
	CTQ_CMD_OUT_OPTION, /* --out DIR (a run directory), RUN/<step id> by default */
};

struct ctq_command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary; /* one line of `ctq help` */
	bool in_plan;        /* a plan step may run it */
	enum ctq_cmd_out out;
};

extern const struct ctq_command ctq_commands[];
extern const size_t ctq_n_commands;

/* The command called name, or NULL. */
const struct ctq_command *ctq_command_find(const char *name);

/* Shared helpers (harness/common.c). */

/* Prints "ctq: <class> at <path>: <message>" to stderr. */
void ctq_print_error(const char *cmd, const struct ctq_error *err);
/* ctq_print_error, then the exit code of err's status: a failed command's end. */
int ctq_print_error_exit(const char *cmd, const struct ctq_error *err);

/* A command's options as a table, for ctq_opt_parse. */
enum ctq_opt_kind {
	CTQ_OPT_KIND_FLAG, /* dst: bool *, set true */
	CTQ_OPT_KIND_STR,  /* dst: const char **, the value (the last one given wins) */
	CTQ_OPT_KIND_INT,  /* dst: long *, an integer in [min, max] */
	CTQ_OPT_KIND_FN,   /* fn(cmd, name, value, dst) parses the value; false: printed */
	CTQ_OPT_KIND_OUT,  /* dst: struct ctq_opt_out *: --out DIR and the --force flag */
};

/* --out DIR and --force, one concern: where a command's run directory goes
 * and whether an existing one may be replaced (ctq_opt_out_ok checks both). */
struct ctq_opt_out {
	const char *dir; /* NULL: the default under runs/ */
	bool force;
};

struct ctq_opt {
	const char *name; /* "--model" */
	enum ctq_opt_kind kind;
	void *dst;
	long min, max; /* CTQ_OPT_KIND_INT */
	bool (*fn)(const char *cmd, const char *name, const char *v, void *dst);
};

/* Table entries; the conditional checks dst's type at compile time. */
#define CTQ_OPT_FLAG(n, d) {(n), CTQ_OPT_KIND_FLAG, (void *)(1 ? (d) : (bool *)0), 0, 0, NULL}
#define CTQ_OPT_STR(n, d) {(n), CTQ_OPT_KIND_STR, (void *)(1 ? (d) : (const char **)0), 0, 0, NULL}
#define CTQ_OPT_INT(n, d, lo, hi) {(n), CTQ_OPT_KIND_INT, (void *)(1 ? (d) : (long *)0), (lo), (hi), NULL}
#define CTQ_OPT_FN(n, d, f) {(n), CTQ_OPT_KIND_FN, (d), 0, 0, (f)}
#define CTQ_OPT_OUT(d) {"--out", CTQ_OPT_KIND_OUT, (void *)(1 ? (d) : (struct ctq_opt_out *)0), 0, 0, NULL}
#define CTQ_OPT_END {NULL, CTQ_OPT_KIND_FLAG, NULL, 0, 0, NULL}

/* Parses argv[1..argc-1] of `ctq CMD` against opts (ended by an entry with
 * no name): --help / -h calls help() and gives CTQ_EXIT_OK; an option of
 * opts takes the next argument as its value (none for a flag); an argument
 * that does not start with '-' (or is "-" itself) fills pos[0..n_pos-1] in
 * order; an unknown option, a missing or bad value, or one positional
 * argument too many prints why and gives CTQ_EXIT_USAGE. Returns -1 when
 * every argument was taken. */
int ctq_opt_parse(const char *cmd, int argc, char **argv, const struct ctq_opt *opts,
		  const char **pos, int n_pos, void (*help)(void));
/* ctq_opt_parse, then the one value the command cannot run without: when
 * *need is still NULL prints "ctq CMD: MISSING" and gives CTQ_EXIT_USAGE. */
int ctq_opt_parse_need(const char *cmd, int argc, char **argv, const struct ctq_opt *opts,
		       const char **pos, int n_pos, void (*help)(void), const char *const *need,
		       const char *missing);

/* Takes the value of option argv[*i] (advancing *i); prints a usage error
 * and returns NULL when it is missing. */
const char *ctq_opt_value(int argc, char **argv, int *i);

/* Whether --out DIR (out->dir; NULL: the default under runs/) may receive a
 * new run directory under --force (results/run.h ctq_run_out_check): checked
 * before a command starts its work. Prints why not. */
bool ctq_opt_out_ok(const char *cmd, const struct ctq_opt_out *out);
/* True when path is NULL or a checkpoint folder whose config.json reads as
 * an object (core/hf_config.h); otherwise prints the error naming the path
 * ("ctq CMD: io-error at PATH: OPT: no such file or folder", or the
 * config's invalid-config / parse-error), sets *rc to its exit code and
 * returns false. Checked right after the options, before a backend opens or
 * a tokenizer loads, so that a mistyped or broken checkpoint is what is
 * said, the same way in every command. */
bool ctq_opt_model_dir(const char *cmd, const char *opt, const char *path, int *rc);
/* ctq_opt_model_dir that also hands back the parsed config.json (*cfg,
 * owned: cJSON_Delete; NULL when path is NULL or on error), for a command
 * that reads it (ctq serve's context length), so that it is read once. */
bool ctq_opt_model_config(const char *cmd, const char *opt, const char *path, cJSON **cfg, int *rc);

/* --backend's default, one rule for every command that runs a model: cuda
 * when a CUDA device opens, else reference. Says which, and why, in one
 * line on stderr ("ctq CMD: backend cuda (default; NVIDIA H200 ...)").
 * Called after the inputs are checked. */
const char *ctq_opt_backend_default(const char *cmd);

/* Parses a positive int option value; false on error (printed). */
bool ctq_opt_int(const char *cmd, const char *opt, const char *v, long min,
		 long max, long *out);
/* A comma-separated option value split into items (core/split.h, whose
 * refusals are printed): the count, or -1. */
int ctq_opt_split(const char *cmd, const char *opt, const char *v, char *buf, size_t size, const char **items,
		  int cap);
/* A comma-separated list of integers in [min, max] (--m 1,16,64), at most
 * cap (<= 64) of them, into out: the count (>= 1), or -1 after printing
 * why (ctq_opt_split's refusals, an entry out of range). */
int ctq_opt_int_list(const char *cmd, const char *opt, const char *v, long min, long max, long *out,
		     int cap);

/* CTQ_OPT_FN parsers that more than one command takes. Seconds (dst:
 * double *): a timeout in [0.001, 1e7]; HTTP timeouts are whole
 * milliseconds, where 0 would mean none. */
bool ctq_opt_fn_seconds(const char *cmd, const char *name, const char *v, void *dst);
/* --arrival closed | poisson:RATE (dst: double *, 0 for closed). */
bool ctq_opt_fn_arrival(const char *cmd, const char *name, const char *v, void *dst);

/* Parses an --act-numerics value (ctq or transformers); false on error
 * (printed). */
bool ctq_opt_act_numerics(const char *cmd, const char *v, enum ctq_act_numerics *out);
/* The same as a CTQ_OPT_KIND_FN parser (dst: enum ctq_act_numerics *). */
bool ctq_opt_fn_act_numerics(const char *cmd, const char *name, const char *v, void *dst);

/* Whether numerics n can run on the --backend value: ctq's everywhere,
 * transformers' on the reference only; false (printed) otherwise. Checked
 * before any backend opens, so the refusal is a usage error (exit 2) on
 * every host; ctq_backend_set_act_numerics refuses the same in the library. */
bool ctq_opt_act_numerics_backend(const char *cmd, enum ctq_act_numerics n, const char *backend);


/* Run directories, as the commands open them (harness/common.c over
 * results/run.h; a model folder's plan: ctq_target_open_plan,
 * checkpoint/target.h). */
struct ctq_run;

/* The run directory of results that are complete before it begins (eval,
 * eval kld, bench serve): begins it in run, write(ctx, run, err) fills it,
 * commits it; aborted on error. run->final_dir names it afterwards. */
enum ctq_status ctq_harness_run_write(struct ctq_run *run, const struct ctq_opt_out *out,
				      const char *command, int argc, char **argv,
				      enum ctq_status (*write)(void *ctx, struct ctq_run *run,
							       struct ctq_error *err),
				      void *ctx, struct ctq_error *err);

/* bench serve's run directory, one for both engines (the in-process one
 * and --url; harness/cmd_bench_serve.c): bench_serve.csv of fill's rows,
 * the manifest's bench_serve member of fill's fields, print_summary(s) once
 * the CSV is closed, then where the results are. */
struct ctq_csv;
struct cJSON;
struct ctq_serve_results {
	const void *s; /* the engine's state, borrowed */
	void (*fill)(const void *s, struct ctq_csv *csv, struct cJSON *manifest);
	void (*print_summary)(const void *s);
};
enum ctq_status ctq_bench_serve_results(const struct ctq_serve_results *r,
					const struct ctq_opt_out *out, int argc, char **argv,
					struct ctq_error *err);

/* A progress line redrawn in place on stderr (eval, eval kld): drawn at most
 * five times a second and at the end, which ends it with a newline. */
struct ctq_progress_line {
	bool on;         /* draw at all (--progress, or stderr is a terminal) */
	bool open;       /* a line is drawn and not ended */
	double t0, last; /* ctq_now_s() at the start and at the last draw */
};

/* Starts the clock (the rate counts from now). */
void ctq_progress_line_start(struct ctq_progress_line *p);
/* The rate (done per second since the start) when the line for done of
 * total is to be drawn now; negative when it is not. */
double ctq_progress_line_rate(struct ctq_progress_line *p, size_t done, size_t total);
/* Draws the line of fmt over the last one, ends it when done == total. */
void ctq_progress_line_print(struct ctq_progress_line *p, size_t done, size_t total,
			     const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* The end of a command that failed with a progress line drawn: ends an
 * open line, then ctq_print_error_exit. */
int ctq_progress_line_fail(struct ctq_progress_line *p, const char *cmd,
			   const struct ctq_error *err);

/* Output folders and progress, shared by make-model and quantize
 * (harness/common.c over checkpoint/hf_folder.h). */

/* Whether OUT may be written: it does not exist, is an empty folder, or
 * force is set (*replace then says the commit must replace it). Prints why
 * not. */
bool ctq_out_dir_allowed(const char *cmd, const char *out, bool force, bool *replace);

/* Drops trailing slashes (a temporary folder is made beside OUT). */
void ctq_out_dir_trim(char *out);

/* A progress printer for ctq_progress_fn (checkpoint/synth.h): one stderr line
 * per tensor group (a decoder layer, the embeddings, ...). */
struct ctq_progress {
	const char *cmd;
	bool quiet;
	double t0_s;
	char group[128];
};
void ctq_progress_init(struct ctq_progress *p, const char *cmd, bool quiet);
void ctq_progress_print(void *ctx, const char *tensor, uint64_t bytes_done,
			uint64_t bytes_total);
double ctq_progress_elapsed_s(const struct ctq_progress *p);

#endif
