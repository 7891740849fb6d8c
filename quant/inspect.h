/* What `ctq inspect` shows of a quantization config and its modules,
 * computed here and printed by the command: the plan under one semantics
 * profile or all three, with the config error of each profile that fails;
 * per module whether the profiles disagree and each profile's cell (scheme,
 * group, rule); the tensor-parallel shard plan; and the document of
 * `ctq inspect --json`. */
#ifndef CTQ_QUANT_INSPECT_H
#define CTQ_QUANT_INSPECT_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"
#include "quant/modules.h"
#include "quant/qconfig.h"
#include "quant/resolve.h"
#include "quant/shard.h"

struct cJSON;

/* inspect matches every `re:` target and ignore entry against every module
 * name under each profile it resolves (names and class targets are cheap):
 * the cost is regex entries x modules x profiles, about 100 ns per target
 * and 200 ns per ignore entry for each (entry, module, profile), the JIT
 * and the match cache (quant/regex.h) included. Configs above this many
 * (regex entry, module) pairs are refused: 200 entries at the largest model
 * (4096 layers, 32770 modules) pass, and the worst case at the bound, all
 * ignore entries, took 4.1 s with --semantics all (docs/semantics.md
 * "Cost of inspect"). */
#define CTQ_INSPECT_MAX_REGEX_PAIRS ((size_t)200 * 32770)

struct ctq_inspection {
	const struct ctq_qconfig *cfg;  /* borrowed */
	const struct ctq_modules *mods; /* borrowed */
	bool all;                       /* every profile, side by side */
	enum ctq_semantics only;        /* the one profile when not all */
	struct ctq_plan plans[CTQ_SEM_COUNT];
	bool have[CTQ_SEM_COUNT];              /* the profile was resolved ... */
	struct ctq_error errs[CTQ_SEM_COUNT]; /* ... or failed with this config error */
	struct ctq_shard_plan sp;             /* with ctq_inspect_shards */
	bool have_sp;
};

/* The `re:` targets and ignore entries of cfg. */
size_t ctq_inspect_regex_entries(const struct ctq_qconfig *cfg);

/* Initialises v over cfg and mods (borrowed; they outlive v) and resolves
 * the selected profiles (all, or only). A profile that fails keeps its
 * config error in v->errs (not returned). Errors: invalid-config at path
 * when the regex entries x modules exceed CTQ_INSPECT_MAX_REGEX_PAIRS
 * (nothing resolved). ctq_inspect_free releases v, also after an error. */
enum ctq_status ctq_inspect_resolve(struct ctq_inspection *v, const char *path,
				    const struct ctq_qconfig *cfg, const struct ctq_modules *mods,
				    bool all, enum ctq_semantics only, struct ctq_error *err);
void ctq_inspect_free(struct ctq_inspection *v);

/* The profile the exit code and the shard plan follow: strict under all,
 * else the one shown. */
enum ctq_semantics ctq_inspect_primary(const struct ctq_inspection *v);

/* Plans tp tensor-parallel ranks over the primary profile's plan into v->sp
 * (quant/shard.h; errors as ctq_shard_plan_build). */
enum ctq_status ctq_inspect_shards(struct ctq_inspection *v, int tp, struct ctq_error *err);

/* Whether module i resolves differently (scheme or error, and group) under
 * the profiles; a profile with a config error counts as "config-error". */
bool ctq_inspect_disagree(const struct ctq_inspection *v, size_t i);

/* Module i's cell under profile s: "SCHEME GROUP/RULE", "!STATUS" for a
 * module error, "!config-error" when the profile failed. */
void ctq_inspect_cell(const struct ctq_inspection *v, enum ctq_semantics s, size_t i, char *buf,
		      size_t cap);

/* The document of `ctq inspect --json`: path, the config's location, block
 * path, quant_method and groups; per module its name, types, vLLM type, the
 * entry of each profile shown, profiles_disagree (all), its shards (with
 * ctq_inspect_shards); the config errors of the profiles shown
 * (config_errors) and the whole-config engine refusals of their plans
 * (config_refusals: strict's engine-divergent). Owned
 * (cJSON_Delete); NULL when out of memory. */
struct cJSON *ctq_inspect_json(const struct ctq_inspection *v, const char *path);

#endif
