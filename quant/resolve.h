/* ctq scheme resolver: for every module, what it executes as — scheme,
 * config group, matched target and the rule that matched — under one of
 * three semantics profiles (docs/semantics.md):
 *
 *   strict  ctq's own: exact > regex > type, equal-level matches from
 *           different groups are ambiguous, fused sets must agree, only
 *           w8a8-int8 and unquantized execute (fail closed);
 *   ct      compressed-tensors / transformers / llm-compressor (spec §5.1);
 *   vllm    vLLM main (spec §5.2, §6.3).
 *
 * The plan is the single answer the loader, kernels and reports read.
 */
#ifndef CTQ_QUANT_RESOLVE_H
#define CTQ_QUANT_RESOLVE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/arena.h"
#include "core/status.h"
#include "quant/modules.h"
#include "quant/qconfig.h"
#include "quant/regex.h"

enum ctq_semantics { CTQ_SEM_STRICT, CTQ_SEM_CT, CTQ_SEM_VLLM, CTQ_SEM_COUNT };

enum ctq_match_by {
	CTQ_BY_NAME,
	CTQ_BY_REGEX,
	CTQ_BY_TYPE,
	CTQ_BY_IGNORE,
	CTQ_BY_DEFAULT,
};

struct ctq_plan_entry {
	size_t module;          /* index into the modules */
	const char *scheme;     /* stable scheme name; NULL when error is set */
	long group;             /* index into cfg->groups, or -1 */
	const char *target;     /* matched target or ignore entry; NULL for default */
	enum ctq_match_by by;
	const char *format;     /* effective format of the group; NULL if none */
	const char *vllm_class; /* vllm profile: the scheme class vLLM selects */
	enum ctq_status error;  /* CTQ_OK, or the module's error class */
	const char *message;    /* error message naming the module */
};

struct ctq_plan {
	struct ctq_arena arena;
	enum ctq_semantics sem;
	const struct ctq_qconfig *cfg;   /* borrowed */
	const struct ctq_modules *mods;  /* borrowed */
	struct ctq_plan_entry *entries;  /* (n) one per module, module order */
	size_t n;
	size_t n_errors;                 /* entries with a module error */
	/* strict: an engine refuses the whole config that ctq resolves
	 * (engine-divergent, at the refusing engine's config path, naming the
	 * engine and its reason); status CTQ_OK when both engines load it. */
	struct ctq_error refusal;
};

const char *ctq_semantics_name(enum ctq_semantics s);
/* Returns false when name is not strict, ct or vllm. */
bool ctq_semantics_parse(const char *name, enum ctq_semantics *out);
const char *ctq_match_by_name(enum ctq_match_by by);

/* Resolves every module. Module errors (ambiguous-match, unsupported-scheme,
 * unsupported-format, fused-mismatch, engine-divergent) are recorded in the
 * entries, a whole-config engine refusal under strict in plan->refusal, and
 * the call returns CTQ_OK; errors of the whole config (invalid-config for a
 * failing regex or a profile's config check, unsupported-format for
 * sparsity/transforms) are returned with err filled and no entries.
 * cfg and mods are borrowed and must outlive the plan. rc may be NULL. */
enum ctq_status ctq_plan_resolve(struct ctq_plan *plan,
				 const struct ctq_qconfig *cfg,
				 const struct ctq_modules *mods,
				 enum ctq_semantics sem, struct ctq_regex_cache *rc,
				 struct ctq_error *err);

void ctq_plan_free(struct ctq_plan *plan);

/* The entry of a module name, or NULL. */
const struct ctq_plan_entry *ctq_plan_find(const struct ctq_plan *plan,
					   const char *module);

/* True when every module resolved without error and no engine refuses the
 * config (plan->refusal): the plan may execute. */
bool ctq_plan_executable(const struct ctq_plan *plan);

#endif
