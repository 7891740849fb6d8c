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
int ctq_cmd_bench_gemm(int argc, char **argv);
int ctq_cmd_make_model(int argc, char **argv);
int ctq_cmd_quantize(int argc, char **argv);
int ctq_cmd_import_gguf(int argc, char **argv);
int ctq_cmd_eval(int argc, char **argv);
int ctq_cmd_eval_kld(int argc, char **argv);
int ctq_cmd_run(int argc, char **argv);
/* Loads and validates a plan file without running it (the fuzz target tests/fuzz/fuzz_plan.c). */
enum ctq_status ctq_run_plan_check(const char *file, struct ctq_error *err);
int ctq_cmd_report(int argc, char **argv);
int ctq_cmd_compare(int argc, char **argv);

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

/* Takes the value of option argv[*i] (advancing *i); prints a usage error
 * and returns NULL when it is missing. */
const char *ctq_opt_value(int argc, char **argv, int *i);

/* Whether --out DIR (out; NULL: the default under runs/) may receive a new
 * run directory (results/run.h ctq_run_out_check): checked before a
 * command starts its work. Prints why not. */
bool ctq_opt_out_ok(const char *cmd, const char *out, bool force);
/* True when path is NULL or a folder; otherwise prints "ctq CMD: io-error
 * at PATH: OPT: no such file or folder" (or "not a folder"), false. Checked
 * right after the options, before a backend opens or a tokenizer loads, so
 * that a mistyped checkpoint path is what is said. */
bool ctq_opt_model_dir(const char *cmd, const char *opt, const char *path);

/* Parses a positive int option value; false on error (printed). */
bool ctq_opt_int(const char *cmd, const char *opt, const char *v, long min,
		 long max, long *out);

/* Parses an --act-numerics value (ctq or transformers); false on error
 * (printed). */
bool ctq_opt_act_numerics(const char *cmd, const char *v, enum ctq_act_numerics *out);

/* Whether numerics n can run on the --backend value: ctq's everywhere,
 * transformers' on the reference only; false (printed) otherwise. Checked
 * before any backend opens, so the refusal is a usage error (exit 2) on
 * every host; ctq_backend_set_act_numerics refuses the same in the library. */
bool ctq_opt_act_numerics_backend(const char *cmd, enum ctq_act_numerics n, const char *backend);

/* Loads PATH (checkpoint folder, config.json or a standalone quantization
 * config) into cfg and enumerates its modules into mods: from the file's
 * model_type / num_hidden_layers, or from arch + layers when given. */
enum ctq_status ctq_load_target(const char *path,
				const struct ctq_parse_options *opt,
				const char *arch, long layers, const char *prefix,
				struct ctq_qconfig *cfg, struct ctq_modules *mods,
				struct ctq_error *err);

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
