/* ctq commands: one file per command; each returns an exit code
 * (core/status.h enum ctq_exit) and prints its own --help. */
#ifndef CTQ_HARNESS_COMMANDS_H
#define CTQ_HARNESS_COMMANDS_H

#include <stdbool.h>
#include <stdio.h>

#include "core/status.h"
#include "quant/modules.h"
#include "quant/qconfig.h"

int ctq_cmd_inspect(int argc, char **argv);
int ctq_cmd_conform(int argc, char **argv);
int ctq_cmd_probe(int argc, char **argv);

/* Shared helpers (harness/common.c). */

/* Prints "ctq: <class> at <path>: <message>" to stderr. */
void ctq_print_error(const char *cmd, const struct ctq_error *err);

/* Takes the value of option argv[*i] (advancing *i); prints a usage error
 * and returns NULL when it is missing. */
const char *ctq_opt_value(int argc, char **argv, int *i);

/* Parses a positive int option value; false on error (printed). */
bool ctq_opt_int(const char *cmd, const char *opt, const char *v, long min,
		 long max, long *out);

/* Loads PATH (checkpoint folder, config.json or a standalone quantization
 * config) into cfg and enumerates its modules into mods: from the file's
 * model_type / num_hidden_layers, or from arch + layers when given. */
enum ctq_status ctq_load_target(const char *path,
				const struct ctq_parse_options *opt,
				const char *arch, long layers, const char *prefix,
				struct ctq_qconfig *cfg, struct ctq_modules *mods,
				struct ctq_error *err);

#endif
