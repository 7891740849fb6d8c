/* ctq conformance suites: loading and validating cases (DESIGN.md "Suite
 * case format") and checking one case under one semantics profile. */
#ifndef CTQ_CONFORM_SUITE_H
#define CTQ_CONFORM_SUITE_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "core/status.h"
#include "core/strbuf.h"
#include "quant/qconfig.h"
#include "quant/resolve.h"

struct ctq_case {
	const char *file;        /* the case file (owned by the suite) */
	const char *id;
	const char *about;
	const cJSON *json;       /* the case object, borrowed from the file */
	bool sem[CTQ_SEM_COUNT];
	const cJSON *config;     /* inline config.json body, or NULL */
	char *config_file;       /* resolved path of config_file, or NULL */
	const cJSON *model;
	const cJSON *modules;
	const cJSON *tensors;    /* {name: shape}: the checkpoint's tensor header, or NULL */
	long tp;                 /* 0 when absent */
	struct ctq_parse_options parser;
	const cJSON *checkpoint; /* a synthetic checkpoint to build (numeric cases) */
	long numeric_tp[8];      /* tp sizes of the numeric TP checks */
	int n_numeric_tp;
};

struct ctq_suite {
	cJSON **roots;           /* parsed files, owned */
	char **files;
	size_t n_files;
	struct ctq_case *cases;
	size_t n_cases;
};

/* Loads every *.json file below dir (recursively, sorted; folders named
 * `fixtures` hold data, not cases) and validates each case. Any malformed
 * file or case is an error naming its path: the suite is not run at all. */
enum ctq_status ctq_suite_load(struct ctq_suite *s, const char *dir,
			       struct ctq_error *err);
void ctq_suite_free(struct ctq_suite *s);

/* One observed check. */
struct ctq_check {
	const char *case_id;
	const char *file;
	enum ctq_semantics sem;
	char *name;      /* "error", a module name, "shard:<module>:<rank>" */
	char *expected;
	char *actual;
	bool passed;
	char *detail;    /* why it failed; "" when passed */
};

struct ctq_checks {
	struct ctq_check *v;
	size_t n, cap;
};

void ctq_checks_free(struct ctq_checks *c);

/* How cases are run. */
struct ctq_case_run_options {
	/* An existing folder (borrowed) under which a numeric case builds its
	 * synthetic checkpoint (ctq-conform-XXXXXX and its -w8a8 twin),
	 * removed when the case ends. ctq conform passes its temporary run
	 * directory, so a killed run leaves nothing outside it. NULL: $TMPDIR,
	 * else /tmp, and the scratch is registered with core/cleanup.h. */
	const char *scratch_dir;
};

/* Runs one case under one profile, appending its checks. opt may be NULL
 * (defaults above). Errors are only resource failures (io-error naming the
 * scratch folder when it cannot be made); a case that cannot load its
 * config is a failed check. */
enum ctq_status ctq_case_run_opts(const struct ctq_case *c, enum ctq_semantics sem,
				  const struct ctq_case_run_options *opt,
				  struct ctq_checks *out, struct ctq_error *err);

/* The modules case c names (conform/suite_tree.c): its modules list, its
 * model (an arch contradicting the config's model_type is invalid-config),
 * its tensors with config (ctq_modules_from_tensors), or config alone.
 * mods is initialised by the caller. Errors: the enumeration's. */
enum ctq_status ctq_case_modules(const struct ctq_case *c, const cJSON *config,
				 struct ctq_modules *mods, struct ctq_error *err);

/* ctq_case_run_opts with the default options. */
enum ctq_status ctq_case_run(const struct ctq_case *c, enum ctq_semantics sem,
			     struct ctq_checks *out, struct ctq_error *err);

#endif
