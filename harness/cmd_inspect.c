/* ctq inspect: the plan per module — name, type, scheme, group, matched
 * target, rule — as a table or JSON, under one semantics profile or all
 * three side by side with their disagreements marked. */
#include "harness/commands.h"
#include "quant/regex.h"
#include "quant/resolve.h"

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
	       "  --check              exit 1 when the strict plan cannot execute\n"
	       "\n"
	       "exit: 0 shown; 1 --check and the strict plan has module errors;\n"
	       "      2 bad usage or a config error under the selected profile.\n");
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

static int print_json(const char *path, const struct view *v, bool all, int only,
		      const struct ctq_qconfig *cfg, const struct ctq_modules *mods)
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
	long layers = 0;
	bool json = false, check = false;
	struct ctq_parse_options opt = {0};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			help();
			return CTQ_EXIT_OK;
		} else if (!strcmp(a, "--json")) {
			json = true;
		} else if (!strcmp(a, "--check")) {
			check = true;
		} else if (!strcmp(a, "--accept-unknown-keys")) {
			opt.accept_unknown_keys = true;
		} else if (!strcmp(a, "--semantics")) {
			if (!(sem_name = ctq_opt_value(argc, argv, &i)))
				return CTQ_EXIT_USAGE;
		} else if (!strcmp(a, "--arch")) {
			if (!(arch = ctq_opt_value(argc, argv, &i)))
				return CTQ_EXIT_USAGE;
		} else if (!strcmp(a, "--prefix")) {
			if (!(prefix = ctq_opt_value(argc, argv, &i)))
				return CTQ_EXIT_USAGE;
		} else if (!strcmp(a, "--ct-version")) {
			if (!(opt.ct_version = ctq_opt_value(argc, argv, &i)))
				return CTQ_EXIT_USAGE;
		} else if (!strcmp(a, "--layers")) {
			const char *v = ctq_opt_value(argc, argv, &i);
			if (!v || !ctq_opt_int("inspect", "--layers", v, 1, 4096, &layers))
				return CTQ_EXIT_USAGE;
		} else if (a[0] == '-') {
			fprintf(stderr, "ctq inspect: unknown option %s (see --help)\n", a);
			return CTQ_EXIT_USAGE;
		} else if (!path) {
			path = a;
		} else {
			fprintf(stderr, "ctq inspect: one PATH only (got %s and %s)\n", path, a);
			return CTQ_EXIT_USAGE;
		}
	}
	if (!path) {
		fprintf(stderr, "ctq inspect: PATH is required (see --help)\n");
		return CTQ_EXIT_USAGE;
	}
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
	enum ctq_status st = ctq_load_target(path, &opt, arch, layers, prefix, &cfg,
					     &mods, &err);
	if (st) {
		ctq_print_error("inspect", &err);
		rc = ctq_status_exit_code(st);
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
	if (json) {
		rc = print_json(path, &v, all, (int)only, &cfg, &mods);
	} else {
		print_header(path, &cfg, &mods);
		if (all)
			print_all(&v, &cfg, &mods);
		else
			print_single(&v.plans[only], &cfg, &mods);
		print_errors(&v, &mods);
	}
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
