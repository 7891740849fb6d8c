/* ctq inspect: the plan per module — name, type, scheme, group, matched
 * target, rule — as a table or JSON, under one semantics profile or all
 * three side by side with their disagreements marked. */
#include "checkpoint/target.h"
#include "harness/commands.h"
#include "quant/regex.h"
#include "quant/resolve.h"
#include "quant/shard.h"
#include "core/strbuf.h"

#include <stdlib.h>
#include <string.h>

static void help(void)
{
	printf("usage: ctq inspect PATH [options]\n"
	       "\n"
	       "Shows what every module of a checkpoint executes as: scheme, config group,\n"
	       "matched target and the rule that matched (name, regex, type, ignore, default).\n"
	       "PATH is a checkpoint folder, its config.json, or a standalone quantization\n"
	       "config (then name the model with --arch and --layers).\n"
	       "\n"
	       "options:\n"
	       "  --semantics S        strict (default; ctq's own), ct, vllm, or all: one column\n"
	       "                       per profile, '!' marks modules where they disagree\n"
	       "  --json               machine-readable plan on stdout\n"
	       "  --arch A --layers N  enumerate qwen3, qwen2 or llama with N layers\n"
	       "  --prefix P           module prefix of a nested language model\n"
	       "                       (default model., or model.language_model. for text_config)\n"
	       "  --accept-unknown-keys  accept unknown args/scheme keys (pre-0.11 producers)\n"
	       "  --ct-version X.Y     compressed-tensors version for preset expansion\n"
	       "  --tp N               plan N tensor-parallel ranks: per-rank shapes, source\n"
	       "                       slices of weight, scale and bias (needs the model shape)\n"
	       "  --check              exit 1 when the strict plan cannot execute\n"
	       "\n"
	       "cost: every re: target and ignore entry is matched against every module name\n"
	       "      under each profile shown. A config with more than 6554000 (re: entry,\n"
	       "      module) pairs is refused as invalid-config: 200 re: entries at 4096\n"
	       "      layers (32770 modules, the most --layers or num_hidden_layers allow).\n"
	       "      Measured at 4096 layers: 200 re: targets 1.4 s strict, 2.0 s all;\n"
	       "      1 target + 199 re: ignore entries (the worst case) 2.5 s, 4.1 s.\n"
	       "      Names and class targets cost no regex match. See docs/semantics.md.\n"
	       "\n"
	       "exit: 0 shown; 1 --check and the strict plan has module errors;\n"
	       "      2 bad usage or a config error under the selected profile.\n");
}

/* inspect matches every `re:` target and ignore entry against every module
 * name under each profile it resolves (names and class targets are cheap):
 * the cost is regex entries x modules x profiles, about 100 ns per target
 * and 200 ns per ignore entry for each (entry, module, profile), the JIT
 * and the match cache (quant/regex.h) included. Configs above this many
 * (regex entry, module) pairs are refused: 200 entries at the largest model
 * (4096 layers, 32770 modules) pass, and the worst case at the bound, all
 * ignore entries, took 4.1 s with --semantics all (docs/semantics.md
 * "Cost of inspect"). */
#define INSPECT_MAX_REGEX_PAIRS ((size_t)200 * 32770)

static size_t count_regex_entries(const struct ctq_qconfig *cfg)
{
	size_t n = 0;
	for (size_t g = 0; g < cfg->n_groups; g++)
		for (size_t t = 0; t < cfg->groups[g].scheme.n_targets; t++)
			n += !strncmp(cfg->groups[g].scheme.targets[t], "re:", 3);
	for (size_t i = 0; i < cfg->n_ignore; i++)
		n += !strncmp(cfg->ignore[i], "re:", 3);
	return n;
}

struct view {
	struct ctq_plan plans[CTQ_SEM_COUNT];
	bool have[CTQ_SEM_COUNT];
	struct ctq_error errs[CTQ_SEM_COUNT];
};

static void cell(const struct ctq_qconfig *cfg, const struct ctq_plan_entry *e,
		 char *buf, size_t cap)
{
	if (e->error) {
		snprintf(buf, cap, "!%s", ctq_status_name(e->error));
		return;
	}
	snprintf(buf, cap, "%s %s/%s", e->scheme,
		 e->group >= 0 ? cfg->groups[e->group].name : "-",
		 ctq_match_by_name(e->by));
}

static bool disagree(const struct view *v, const struct ctq_qconfig *cfg,
		     size_t i)
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
				 e->error ? ctq_status_name(e->error) : e->scheme,
				 e->group >= 0 ? cfg->groups[e->group].name : "-");
		}
		if (!key0)
			key0 = buf[k];
		else if (strcmp(key0, buf[k]))
			return true;
		k++;
	}
	return false;
}

static size_t width(size_t w, const char *s)
{
	size_t n = strlen(s);
	return n > w ? n : w;
}

static void print_header(const char *path, const struct ctq_qconfig *cfg,
			 const struct ctq_modules *mods)
{
	printf("config: %s\n", path);
	if (cfg->location == CTQ_QLOC_NONE) {
		printf("  no quantization config: every module is unquantized\n");
	} else {
		printf("  block %s (%s%s), quant_method %s, format %s, status %s, version %s\n",
		       cfg->block_path[0] ? cfg->block_path : "(file root)",
		       ctq_qlocation_name(cfg->location), cfg->nested ? ", nested" : "",
		       cfg->quant_method, cfg->format ? cfg->format : "(none)",
		       cfg->status ? cfg->status : "(none)",
		       cfg->version ? cfg->version : "(none)");
		printf("  %zu group(s), %zu ignore entr%s, kv_cache_scheme %s\n",
		       cfg->n_groups, cfg->n_ignore, cfg->n_ignore == 1 ? "y" : "ies",
		       cfg->kv_cache ? "set" : "none");
	}
	printf("model: %s, %d layer(s), %zu module(s)\n\n",
	       mods->shape.arch ? mods->shape.arch : "(explicit)", mods->shape.layers,
	       mods->n);
}

static void print_single(const struct ctq_plan *p, const struct ctq_qconfig *cfg,
			 const struct ctq_modules *mods)
{
	size_t w[5] = {6, 4, 6, 5, 6};
	for (size_t i = 0; i < p->n; i++) {
		const struct ctq_plan_entry *e = &p->entries[i];
		const struct ctq_module *m = &mods->v[i];
		w[0] = width(w[0], m->name);
		w[1] = width(w[1], p->sem == CTQ_SEM_VLLM ? m->vllm_type : m->types[0]);
		w[2] = width(w[2], e->error ? ctq_status_name(e->error) : e->scheme);
		w[3] = width(w[3], e->group >= 0 ? cfg->groups[e->group].name : "-");
		w[4] = width(w[4], e->target ? e->target : "-");
	}
	printf("%-*s  %-*s  %-*s  %-*s  %-*s  %s\n", (int)w[0], "MODULE", (int)w[1],
	       "TYPE", (int)w[2], "SCHEME", (int)w[3], "GROUP", (int)w[4], "TARGET",
	       "BY");
	for (size_t i = 0; i < p->n; i++) {
		const struct ctq_plan_entry *e = &p->entries[i];
		const struct ctq_module *m = &mods->v[i];
		printf("%-*s  %-*s  %-*s  %-*s  %-*s  %s\n", (int)w[0], m->name,
		       (int)w[1], p->sem == CTQ_SEM_VLLM ? m->vllm_type : m->types[0],
		       (int)w[2], e->error ? ctq_status_name(e->error) : e->scheme,
		       (int)w[3], e->group >= 0 ? cfg->groups[e->group].name : "-",
		       (int)w[4], e->target ? e->target : "-",
		       e->error ? "error" : ctq_match_by_name(e->by));
	}
}

static void print_all(const struct view *v, const struct ctq_qconfig *cfg,
		      const struct ctq_modules *mods)
{
	size_t w[5] = {6, 4, 6, 6, 6};
	char buf[160];
	for (size_t i = 0; i < mods->n; i++) {
		w[0] = width(w[0], mods->v[i].name);
		w[1] = width(w[1], mods->v[i].types[0]);
		for (int s = 0; s < CTQ_SEM_COUNT; s++) {
			if (v->have[s])
				cell(cfg, &v->plans[s].entries[i], buf, sizeof buf);
			else
				snprintf(buf, sizeof buf, "!config-error");
			w[2 + s] = width(w[2 + s], buf);
		}
	}
	printf("   %-*s  %-*s  %-*s  %-*s  %s\n", (int)w[0], "MODULE", (int)w[1], "TYPE",
	       (int)w[2], "STRICT", (int)w[3], "CT", "VLLM");
	size_t n_diff = 0;
	for (size_t i = 0; i < mods->n; i++) {
		bool d = disagree(v, cfg, i);
		n_diff += d;
		printf("%s  %-*s  %-*s", d ? "!" : " ", (int)w[0], mods->v[i].name,
		       (int)w[1], mods->v[i].types[0]);
		for (int s = 0; s < CTQ_SEM_COUNT; s++) {
			if (v->have[s])
				cell(cfg, &v->plans[s].entries[i], buf, sizeof buf);
			else
				snprintf(buf, sizeof buf, "!config-error");
			if (s < CTQ_SEM_COUNT - 1)
				printf("  %-*s", (int)w[2 + s], buf);
			else
				printf("  %s\n", buf);
		}
	}
	printf("\n%zu of %zu module(s) resolve differently across profiles "
	       "(cells: scheme group/rule; '!' = error)\n", n_diff, mods->n);
}

static void print_errors(const struct view *v, const struct ctq_modules *mods)
{
	for (int s = 0; s < CTQ_SEM_COUNT; s++) {
		if (!v->have[s] && v->errs[s].status) {
			printf("\n[%s] config error: %s at %s: %s\n",
			       ctq_semantics_name((enum ctq_semantics)s),
			       ctq_status_name(v->errs[s].status), v->errs[s].path,
			       v->errs[s].message);
			continue;
		}
		if (!v->have[s] || !v->plans[s].n_errors)
			continue;
		printf("\n[%s] %zu module error(s):\n",
		       ctq_semantics_name((enum ctq_semantics)s), v->plans[s].n_errors);
		for (size_t i = 0; i < mods->n; i++) {
			const struct ctq_plan_entry *e = &v->plans[s].entries[i];
			if (e->error)
				printf("  %s: %s\n", ctq_status_name(e->error), e->message);
		}
	}
}

static void range(struct ctq_strbuf *sb, const int64_t r[2])
{
	ctq_strbuf_printf(sb, "[%lld,%lld)", (long long)r[0], (long long)r[1]);
}

/* One line per module: kind, checkpoint shape, per-rank shape, scale and
 * bias layout, then each rank's source slice. */
static void print_shards(const struct ctq_shard_plan *sp, const struct ctq_modules *mods)
{
	printf("\ntensor parallel: tp %d, %ld head(s) and %ld kv head(s) per rank, kv heads replicated %ldx\n",
	       sp->tp, sp->heads_per_rank, sp->kv_heads_per_rank, sp->kv_replicas);
	size_t w = 6;
	for (size_t m = 0; m < mods->n; m++)
		w = width(w, mods->v[m].name);
	printf("%-*s  %-10s  %-14s  %-14s  %-10s  %-6s  %s\n", (int)w, "MODULE", "KIND", "CHECKPOINT",
	       "PER RANK", "SCALE", "BIAS", "SOURCE SLICE PER RANK (rows or columns)");
	static const char *const scale_names[] = {"none", "sliced", "replicated"};
	static const char *const bias_names[] = {"none", "sliced", "rank0", "full"};
	struct ctq_strbuf sb;
	ctq_strbuf_init(&sb);
	for (size_t m = 0; m < mods->n; m++) {
		const struct ctq_shard *s0 = ctq_shard_at(sp, m, 0);
		if (s0->kind == CTQ_SHARD_NONE)
			continue;
		char full[32], per[32];
		snprintf(full, sizeof full, "[%lld,%lld]", (long long)sp->out_features[m],
			 (long long)sp->in_features[m]);
		snprintf(per, sizeof per, "[%lld,%lld]", (long long)(s0->rows[1] - s0->rows[0]),
			 (long long)(s0->cols[1] - s0->cols[0]));
		ctq_strbuf_reset(&sb);
		for (int r = 0; r < sp->tp && s0->kind != CTQ_SHARD_REPLICATED; r++) {
			const struct ctq_shard *sh = ctq_shard_at(sp, m, r);
			ctq_strbuf_printf(&sb, "%sr%d ", r ? " " : "", r);
			range(&sb, sh->kind == CTQ_SHARD_ROW ? sh->cols : sh->rows);
		}
		printf("%-*s  %-10s  %-14s  %-14s  %-10s  %-6s  %s\n", (int)w, mods->v[m].name,
		       ctq_shard_kind_name(s0->kind), full, per, scale_names[s0->scale],
		       bias_names[s0->bias], s0->kind == CTQ_SHARD_REPLICATED ? "(full on every rank)" : ctq_strbuf_str(&sb));
	}
	/* The fused runtime layers as engines allocate them per rank. */
	for (size_t f = 0; f < mods->n_fused && f < 2; f++) {
		const struct ctq_fused_set *fs = &mods->fused[f];
		int64_t rows = 0;
		ctq_strbuf_reset(&sb);
		for (size_t i = 0; i < fs->n_members; i++) {
			const struct ctq_shard *sh = ctq_shard_at(sp, fs->members[i], 0);
			rows += sh->rows[1] - sh->rows[0];
			const char *leaf = strrchr(mods->v[fs->members[i]].name, '.');
			ctq_strbuf_printf(&sb, "%s%s %lld", i ? " + " : "", leaf ? leaf + 1 : "",
					  (long long)(sh->rows[1] - sh->rows[0]));
		}
		printf("fused %s per rank: [%lld,%lld] (%s)\n", fs->key, (long long)rows,
		       (long long)sp->in_features[fs->members[0]], ctq_strbuf_str(&sb));
	}
	ctq_strbuf_free(&sb);
}

static cJSON *entry_json(const struct ctq_qconfig *cfg,
			 const struct ctq_plan_entry *e)
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

static int print_json(const char *path, const struct view *v, bool all, int only,
		      const struct ctq_qconfig *cfg, const struct ctq_modules *mods,
		      const struct ctq_shard_plan *sp)
{
	cJSON *root = cJSON_CreateObject();
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
	cJSON *ms = cJSON_AddArrayToObject(root, "modules");
	for (size_t i = 0; i < mods->n; i++) {
		cJSON *mo = cJSON_CreateObject();
		cJSON_AddStringToObject(mo, "name", mods->v[i].name);
		cJSON *types = cJSON_AddArrayToObject(mo, "types");
		for (size_t t = 0; t < mods->v[i].n_types; t++)
			cJSON_AddItemToArray(types, cJSON_CreateString(mods->v[i].types[t]));
		cJSON_AddStringToObject(mo, "vllm_type", mods->v[i].vllm_type);
		for (int s = 0; s < CTQ_SEM_COUNT; s++) {
			if ((!all && s != only) || !v->have[s])
				continue;
			cJSON_AddItemToObject(mo, ctq_semantics_name((enum ctq_semantics)s),
					      entry_json(cfg, &v->plans[s].entries[i]));
		}
		if (all)
			cJSON_AddBoolToObject(mo, "profiles_disagree", disagree(v, cfg, i));
		if (sp && ctq_shard_at(sp, i, 0)->kind != CTQ_SHARD_NONE)
			cJSON_AddItemToObject(mo, "shards", shards_json(sp, i));
		cJSON_AddItemToArray(ms, mo);
	}
	for (int s = 0; s < CTQ_SEM_COUNT; s++) {
		if ((!all && s != only) || v->have[s] || !v->errs[s].status)
			continue;
		cJSON *eo = cJSON_CreateObject();
		cJSON_AddStringToObject(eo, "class", ctq_status_name(v->errs[s].status));
		cJSON_AddStringToObject(eo, "path", v->errs[s].path);
		cJSON_AddStringToObject(eo, "message", v->errs[s].message);
		cJSON_AddItemToObject(errs, ctq_semantics_name((enum ctq_semantics)s), eo);
	}
	char *text = cJSON_Print(root);
	cJSON_Delete(root);
	if (!text) {
		fprintf(stderr, "ctq inspect: out of memory\n");
		return CTQ_EXIT_USAGE;
	}
	puts(text);
	free(text);
	return CTQ_EXIT_OK;
}

int ctq_cmd_inspect(int argc, char **argv)
{
	const char *path = NULL, *arch = NULL, *prefix = NULL, *sem_name = "strict";
	long layers = 0, tp = 0;
	bool json = false, check = false;
	struct ctq_parse_options opt = {0};
	const struct ctq_opt opts[] = {
		CTQ_OPT_FLAG("--json", &json),
		CTQ_OPT_FLAG("--check", &check),
		CTQ_OPT_FLAG("--accept-unknown-keys", &opt.accept_unknown_keys),
		CTQ_OPT_STR("--semantics", &sem_name),
		CTQ_OPT_STR("--arch", &arch),
		CTQ_OPT_STR("--prefix", &prefix),
		CTQ_OPT_STR("--ct-version", &opt.ct_version),
		CTQ_OPT_INT("--tp", &tp, 1, 1024),
		CTQ_OPT_INT("--layers", &layers, 1, 4096),
		CTQ_OPT_END,
	};
	int prc = ctq_opt_parse_need("inspect", argc, argv, opts, &path, 1, help, &path,
				     "PATH is required (see --help)");
	if (prc >= 0)
		return prc;
	bool all = !strcmp(sem_name, "all");
	enum ctq_semantics only = CTQ_SEM_STRICT;
	if (!all && !ctq_semantics_parse(sem_name, &only)) {
		fprintf(stderr, "ctq inspect: --semantics is \"%s\"; expected strict, ct, vllm or all\n",
			sem_name);
		return CTQ_EXIT_USAGE;
	}

	struct ctq_qconfig cfg;
	struct ctq_modules mods;
	struct ctq_error err = {0};
	struct view v;
	memset(&v, 0, sizeof v);
	int rc = CTQ_EXIT_OK;
	enum ctq_status st = ctq_target_load_config(path, &opt, arch, layers, prefix, &cfg,
					     &mods, &err);
	if (st) {
		ctq_print_error("inspect", &err);
		rc = ctq_status_exit_code(st);
		goto out;
	}
	size_t n_regex = count_regex_entries(&cfg);
	if (n_regex && mods.n > INSPECT_MAX_REGEX_PAIRS / n_regex) {
		ctq_error_set(&err, CTQ_ERR_INVALID_CONFIG, path,
			      "%zu re: targets and ignore entries x %zu modules = %zu regex matches per profile; inspect takes at most %zu (about 4 s with --semantics all; see docs/semantics.md \"Cost of inspect\")",
			      n_regex, mods.n, n_regex * mods.n, INSPECT_MAX_REGEX_PAIRS);
		rc = ctq_print_error_exit("inspect", &err);
		goto out;
	}
	struct ctq_regex_cache rcache;
	ctq_regex_cache_init(&rcache);
	for (int s = 0; s < CTQ_SEM_COUNT; s++) {
		if (!all && s != (int)only)
			continue;
		if (!ctq_plan_resolve(&v.plans[s], &cfg, &mods, (enum ctq_semantics)s,
				      &rcache, &v.errs[s]))
			v.have[s] = true;
	}
	ctq_regex_cache_free(&rcache);
	enum ctq_semantics primary = all ? CTQ_SEM_STRICT : only;
	if (!v.have[primary] && !all) {
		ctq_print_error("inspect", &v.errs[primary]);
		rc = ctq_status_exit_code(v.errs[primary].status);
		goto out;
	}
	struct ctq_shard_plan sp;
	memset(&sp, 0, sizeof sp);
	if (tp && ctq_shard_plan_build(&sp, &v.plans[primary], (int)tp, &err)) {
		rc = ctq_print_error_exit("inspect", &err);
		goto out;
	}
	if (json) {
		rc = print_json(path, &v, all, (int)only, &cfg, &mods, tp ? &sp : NULL);
	} else {
		print_header(path, &cfg, &mods);
		if (all)
			print_all(&v, &cfg, &mods);
		else
			print_single(&v.plans[only], &cfg, &mods);
		print_errors(&v, &mods);
		if (tp)
			print_shards(&sp, &mods);
	}
	ctq_shard_plan_free(&sp);
	if (!v.have[primary])
		rc = ctq_status_exit_code(v.errs[primary].status);
	else if (check && v.have[CTQ_SEM_STRICT] && v.plans[CTQ_SEM_STRICT].n_errors)
		rc = CTQ_EXIT_FAIL;
out:
	for (int s = 0; s < CTQ_SEM_COUNT; s++)
		ctq_plan_free(&v.plans[s]);
	ctq_modules_free(&mods);
	ctq_qconfig_free(&cfg);
	return rc;
}
