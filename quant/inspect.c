/* What `ctq inspect` shows (quant/inspect.h). */
#include "quant/inspect.h"
#include "core/json.h"
#include "quant/regex.h"

#include <stdio.h>
#include <string.h>

size_t ctq_inspect_regex_entries(const struct ctq_qconfig *cfg)
{
	size_t n = 0;
	for (size_t g = 0; g < cfg->n_groups; g++)
		for (size_t t = 0; t < cfg->groups[g].scheme.n_targets; t++)
			n += !strncmp(cfg->groups[g].scheme.targets[t], "re:", 3);
	for (size_t i = 0; i < cfg->n_ignore; i++)
		n += !strncmp(cfg->ignore[i], "re:", 3);
	return n;
}

enum ctq_status ctq_inspect_resolve(struct ctq_inspection *v, const char *path,
				    const struct ctq_qconfig *cfg, const struct ctq_modules *mods,
				    bool all, enum ctq_semantics only, struct ctq_error *err)
{
	memset(v, 0, sizeof *v);
	v->cfg = cfg;
	v->mods = mods;
	v->all = all;
	v->only = only;
	size_t n_regex = ctq_inspect_regex_entries(cfg);
	if (n_regex && mods->n > CTQ_INSPECT_MAX_REGEX_PAIRS / n_regex)
		return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, path,
				     "%zu re: targets and ignore entries x %zu modules = %zu regex matches per profile; inspect takes at most %zu (about 4 s with --semantics all; see docs/semantics.md \"Cost of inspect\")",
				     n_regex, mods->n, n_regex * mods->n, CTQ_INSPECT_MAX_REGEX_PAIRS);
	struct ctq_regex_cache rcache;
	ctq_regex_cache_init(&rcache);
	for (int s = 0; s < CTQ_SEM_COUNT; s++) {
		if (!all && s != (int)only)
			continue;
		if (!ctq_plan_resolve(&v->plans[s], cfg, mods, (enum ctq_semantics)s, &rcache, &v->errs[s]))
			v->have[s] = true;
	}
	ctq_regex_cache_free(&rcache);
	return CTQ_OK;
}

void ctq_inspect_free(struct ctq_inspection *v)
{
	for (int s = 0; s < CTQ_SEM_COUNT; s++)
		ctq_plan_free(&v->plans[s]);
	ctq_shard_plan_free(&v->sp);
	v->have_sp = false;
}

enum ctq_semantics ctq_inspect_primary(const struct ctq_inspection *v)
{
	return v->all ? CTQ_SEM_STRICT : v->only;
}

enum ctq_status ctq_inspect_shards(struct ctq_inspection *v, int tp, struct ctq_error *err)
{
	enum ctq_status st = ctq_shard_plan_build(&v->sp, &v->plans[ctq_inspect_primary(v)], tp, err);
	v->have_sp = st == CTQ_OK;
	return st;
}

static const char *group_name(const struct ctq_qconfig *cfg, const struct ctq_plan_entry *e)
{
	return e->group >= 0 ? cfg->groups[e->group].name : "-";
}

bool ctq_inspect_disagree(const struct ctq_inspection *v, size_t i)
{
	const char *key0 = NULL;
	char buf[3][160];
	int k = 0;
	for (int s = 0; s < CTQ_SEM_COUNT; s++) {
		const struct ctq_plan_entry *e;
		if (!v->have[s]) {
			snprintf(buf[k], sizeof buf[k], "config-error");
		} else {
			e = &v->plans[s].entries[i];
			snprintf(buf[k], sizeof buf[k], "%s|%s",
				 e->error ? ctq_status_name(e->error) : e->scheme, group_name(v->cfg, e));
		}
		if (!key0)
			key0 = buf[k];
		else if (strcmp(key0, buf[k]))
			return true;
		k++;
	}
	return false;
}

void ctq_inspect_cell(const struct ctq_inspection *v, enum ctq_semantics s, size_t i, char *buf,
		      size_t cap)
{
	if (!v->have[s]) {
		snprintf(buf, cap, "!config-error");
		return;
	}
	const struct ctq_plan_entry *e = &v->plans[s].entries[i];
	if (e->error) {
		snprintf(buf, cap, "!%s", ctq_status_name(e->error));
		return;
	}
	snprintf(buf, cap, "%s %s/%s", e->scheme, group_name(v->cfg, e), ctq_match_by_name(e->by));
}

static cJSON *entry_json(const struct ctq_qconfig *cfg, const struct ctq_plan_entry *e)
{
	cJSON *o = cJSON_CreateObject();
	if (e->error) {
		cJSON_AddStringToObject(o, "error", ctq_status_name(e->error));
		cJSON_AddStringToObject(o, "message", e->message);
		return o;
	}
	cJSON_AddStringToObject(o, "scheme", e->scheme);
	if (e->group >= 0)
		cJSON_AddStringToObject(o, "group", cfg->groups[e->group].name);
	else
		cJSON_AddNullToObject(o, "group");
	if (e->target)
		cJSON_AddStringToObject(o, "target", e->target);
	else
		cJSON_AddNullToObject(o, "target");
	cJSON_AddStringToObject(o, "by", ctq_match_by_name(e->by));
	if (e->format)
		cJSON_AddStringToObject(o, "format", e->format);
	if (e->vllm_class)
		cJSON_AddStringToObject(o, "vllm_class", e->vllm_class);
	return o;
}

static cJSON *range_json(const int64_t r[2])
{
	double d[2] = {(double)r[0], (double)r[1]};
	return cJSON_CreateDoubleArray(d, 2);
}

static cJSON *shards_json(const struct ctq_shard_plan *sp, size_t m)
{
	static const char *const scale_names[] = {"none", "sliced", "replicated"};
	static const char *const bias_names[] = {"none", "sliced", "rank0", "replicated"};
	cJSON *a = cJSON_CreateArray();
	for (int r = 0; r < sp->tp; r++) {
		const struct ctq_shard *sh = ctq_shard_at(sp, m, r);
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "rank", r);
		cJSON_AddStringToObject(o, "kind", ctq_shard_kind_name(sh->kind));
		cJSON_AddItemToObject(o, "weight_rows", range_json(sh->rows));
		cJSON_AddItemToObject(o, "weight_cols", range_json(sh->cols));
		cJSON_AddStringToObject(o, "scale", scale_names[sh->scale]);
		if (sh->scale == CTQ_SCALE_SLICED)
			cJSON_AddItemToObject(o, "scale_rows", range_json(sh->scale_rows));
		cJSON_AddStringToObject(o, "bias", bias_names[sh->bias]);
		if (sh->bias == CTQ_BIAS_SLICED)
			cJSON_AddItemToObject(o, "bias_rows", range_json(sh->bias_rows));
		cJSON_AddItemToArray(a, o);
	}
	return a;
}

/* Whether profile s is shown. */
static bool shown(const struct ctq_inspection *v, int s)
{
	return v->all || s == (int)v->only;
}

static cJSON *module_json(const struct ctq_inspection *v, size_t i)
{
	const struct ctq_modules *mods = v->mods;
	cJSON *mo = cJSON_CreateObject();
	cJSON_AddStringToObject(mo, "name", mods->v[i].name);
	cJSON *types = cJSON_AddArrayToObject(mo, "types");
	for (size_t t = 0; t < mods->v[i].n_types; t++)
		cJSON_AddItemToArray(types, cJSON_CreateString(mods->v[i].types[t]));
	cJSON_AddStringToObject(mo, "vllm_type", mods->v[i].vllm_type);
	if (mods->v[i].ct_name) /* the module's name in transformers 5.23's model (ct matches it) */
		cJSON_AddStringToObject(mo, "ct_name", mods->v[i].ct_name);
	if (mods->v[i].guessed)
		cJSON_AddBoolToObject(mo, "guessed", true);
	for (int s = 0; s < CTQ_SEM_COUNT; s++) {
		if (!shown(v, s) || !v->have[s])
			continue;
		cJSON_AddItemToObject(mo, ctq_semantics_name((enum ctq_semantics)s),
				      entry_json(v->cfg, &v->plans[s].entries[i]));
	}
	if (v->all)
		cJSON_AddBoolToObject(mo, "profiles_disagree", ctq_inspect_disagree(v, i));
	if (v->have_sp && ctq_shard_at(&v->sp, i, 0)->kind != CTQ_SHARD_NONE)
		cJSON_AddItemToObject(mo, "shards", shards_json(&v->sp, i));
	return mo;
}

cJSON *ctq_inspect_json(const struct ctq_inspection *v, const char *path)
{
	const struct ctq_qconfig *cfg = v->cfg;
	cJSON *root = cJSON_CreateObject();
	if (!root)
		return NULL;
	cJSON_AddStringToObject(root, "path", path);
	cJSON *c = cJSON_AddObjectToObject(root, "config");
	cJSON_AddStringToObject(c, "location", ctq_qlocation_name(cfg->location));
	cJSON_AddStringToObject(c, "block_path", cfg->block_path ? cfg->block_path : "");
	if (cfg->quant_method)
		cJSON_AddStringToObject(c, "quant_method", cfg->quant_method);
	cJSON *groups = cJSON_AddArrayToObject(c, "groups");
	for (size_t g = 0; g < cfg->n_groups; g++) {
		cJSON *go = cJSON_CreateObject();
		cJSON_AddStringToObject(go, "name", cfg->groups[g].name);
		cJSON_AddItemToArray(groups, go);
	}
	cJSON *errs = cJSON_AddObjectToObject(root, "config_errors");
	cJSON *refused = cJSON_AddObjectToObject(root, "config_refusals");
	cJSON_AddNumberToObject(root, "guessed_modules", (double)v->mods->n_guessed);
	cJSON *ms = cJSON_AddArrayToObject(root, "modules");
	for (size_t i = 0; i < v->mods->n; i++)
		cJSON_AddItemToArray(ms, module_json(v, i));
	for (int s = 0; s < CTQ_SEM_COUNT; s++) {
		const struct ctq_error *r = &v->plans[s].refusal;
		if (shown(v, s) && v->have[s] && r->status) {
			cJSON *ro = cJSON_CreateObject();
			cJSON_AddStringToObject(ro, "class", ctq_status_name(r->status));
			cJSON_AddStringToObject(ro, "path", r->path);
			cJSON_AddStringToObject(ro, "message", r->message);
			cJSON_AddItemToObject(refused, ctq_semantics_name((enum ctq_semantics)s), ro);
		}
		if (!shown(v, s) || v->have[s] || !v->errs[s].status)
			continue;
		cJSON *eo = cJSON_CreateObject();
		cJSON_AddStringToObject(eo, "class", ctq_status_name(v->errs[s].status));
		cJSON_AddStringToObject(eo, "path", v->errs[s].path);
		cJSON_AddStringToObject(eo, "message", v->errs[s].message);
		cJSON_AddItemToObject(errs, ctq_semantics_name((enum ctq_semantics)s), eo);
	}
	return root;
}
