/* ctq inspect: the plan per module — name, type, scheme, group, matched
 * target, rule — as a table or JSON, under one semantics profile or all
 * three side by side with their disagreements marked. What is shown is
 * computed by quant/inspect.h (profiles, cells, disagreements, shards, the
 * JSON document); this file parses the options, prints and gives the exit
 * code. */
#include "checkpoint/target.h"
#include "harness/commands.h"
#include "quant/inspect.h"
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
	       "config (then name the model with --arch and --layers). A folder's modules are\n"
	       "every module its safetensors hold: those outside the qwen3 / qwen2 / llama\n"
	       "tree (a vision tower, a projector, experts) with a guessed class and a warning.\n"
	       "\n"
	       "options:\n"
	       "  --semantics S        strict (default; ctq's own), ct, vllm, or all: one column\n"
	       "                       per profile, '!' marks modules where they disagree\n"
	       "  --json               machine-readable plan on stdout\n"
	       "  --arch A --layers N  enumerate a dense architecture of ctq's table (qwen3,\n"
	       "                       qwen2, llama, mistral, gemma*, phi3) with N layers (refused\n"
	       "                       when the config's model_type names another model)\n"
	       "  --prefix P           module prefix of a nested language model\n"
	       "                       (default model., or model.language_model. for text_config)\n"
	       "  --accept-unknown-keys  accept unknown args/scheme keys (pre-0.11 producers)\n"
	       "  --ct-version X.Y     compressed-tensors version for preset expansion\n"
	       "  --tp N               plan N tensor-parallel ranks: per-rank shapes, source\n"
	       "                       slices of weight, scale and bias (needs the model shape)\n"
	       "  --check              exit 1 when the strict plan cannot execute: a module\n"
	       "                       error, or an engine refuses the whole config\n"
	       "\n"
	       "cost: every re: target and ignore entry is matched against every module name\n"
	       "      under each profile shown. A config with more than 6554000 (re: entry,\n"
	       "      module) pairs is refused as invalid-config: 200 re: entries at 4096\n"
	       "      layers (32770 modules, the most --layers or num_hidden_layers allow).\n"
	       "      Measured at 4096 layers: 200 re: targets 1.4 s strict, 2.0 s all;\n"
	       "      1 target + 199 re: ignore entries (the worst case) 2.5 s, 4.1 s.\n"
	       "      Names and class targets cost no regex match. See docs/semantics.md.\n"
	       "\n"
	       "exit: 0 shown; 1 --check and the strict plan has module errors or an\n"
	       "      engine refuses the config (engine-divergent);\n"
	       "      2 bad usage or a config error under the selected profile.\n");
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
	printf("model: %s, %d layer(s), %zu module(s)\n",
	       mods->shape.arch ? mods->shape.arch : mods->n_guessed ? "(from the tensors)" : "(explicit)",
	       mods->shape.layers, mods->n);
	if (mods->n_guessed) {
		printf("warning: %zu module(s) added from the checkpoint's tensors with a guessed class (Linear or Embedding by name; e.g.",
		       mods->n_guessed);
		for (size_t i = 0, k = 0; i < mods->n && k < 3; i++)
			if (mods->v[i].guessed)
				printf("%s %s", k++ ? "," : "", mods->v[i].name);
		printf(")\n");
	}
	printf("\n");
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

static void print_all(const struct ctq_inspection *v)
{
	const struct ctq_modules *mods = v->mods;
	size_t w[5] = {6, 4, 6, 6, 6};
	char buf[160];
	for (size_t i = 0; i < mods->n; i++) {
		w[0] = width(w[0], mods->v[i].name);
		w[1] = width(w[1], mods->v[i].types[0]);
		for (int s = 0; s < CTQ_SEM_COUNT; s++) {
			ctq_inspect_cell(v, (enum ctq_semantics)s, i, buf, sizeof buf);
			w[2 + s] = width(w[2 + s], buf);
		}
	}
	printf("   %-*s  %-*s  %-*s  %-*s  %s\n", (int)w[0], "MODULE", (int)w[1], "TYPE",
	       (int)w[2], "STRICT", (int)w[3], "CT", "VLLM");
	size_t n_diff = 0;
	for (size_t i = 0; i < mods->n; i++) {
		bool d = ctq_inspect_disagree(v, i);
		n_diff += d;
		printf("%s  %-*s  %-*s", d ? "!" : " ", (int)w[0], mods->v[i].name,
		       (int)w[1], mods->v[i].types[0]);
		for (int s = 0; s < CTQ_SEM_COUNT; s++) {
			ctq_inspect_cell(v, (enum ctq_semantics)s, i, buf, sizeof buf);
			if (s < CTQ_SEM_COUNT - 1)
				printf("  %-*s", (int)w[2 + s], buf);
			else
				printf("  %s\n", buf);
		}
	}
	printf("\n%zu of %zu module(s) resolve differently across profiles "
	       "(cells: scheme group/rule; '!' = error)\n", n_diff, mods->n);
}

static void print_errors(const struct ctq_inspection *v, const struct ctq_modules *mods)
{
	for (int s = 0; s < CTQ_SEM_COUNT; s++) {
		if (!v->have[s] && v->errs[s].status) {
			printf("\n[%s] config error: %s at %s: %s\n",
			       ctq_semantics_name((enum ctq_semantics)s),
			       ctq_status_name(v->errs[s].status), v->errs[s].path,
			       v->errs[s].message);
			continue;
		}
		if (v->have[s] && v->plans[s].refusal.status)
			printf("\n[%s] config refused: %s at %s: %s\n",
			       ctq_semantics_name((enum ctq_semantics)s),
			       ctq_status_name(v->plans[s].refusal.status), v->plans[s].refusal.path,
			       v->plans[s].refusal.message);
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
	struct ctq_inspection v;
	memset(&v, 0, sizeof v);
	int rc = CTQ_EXIT_OK;
	enum ctq_status st = ctq_target_load_config(path, &opt, arch, layers, prefix, &cfg,
					     &mods, &err);
	if (st) {
		ctq_print_error("inspect", &err);
		rc = ctq_status_exit_code(st);
		goto out;
	}
	if (ctq_inspect_resolve(&v, path, &cfg, &mods, all, only, &err)) {
		rc = ctq_print_error_exit("inspect", &err);
		goto out;
	}
	enum ctq_semantics primary = ctq_inspect_primary(&v);
	if (!v.have[primary] && !all) {
		ctq_print_error("inspect", &v.errs[primary]);
		rc = ctq_status_exit_code(v.errs[primary].status);
		goto out;
	}
	if (tp && ctq_inspect_shards(&v, (int)tp, &err)) {
		rc = ctq_print_error_exit("inspect", &err);
		goto out;
	}
	if (json) {
		cJSON *root = ctq_inspect_json(&v, path);
		char *text = cJSON_Print(root);
		cJSON_Delete(root);
		if (text)
			puts(text);
		else
			fprintf(stderr, "ctq inspect: out of memory\n");
		rc = text ? CTQ_EXIT_OK : CTQ_EXIT_USAGE;
		free(text);
	} else {
		print_header(path, &cfg, &mods);
		if (all)
			print_all(&v);
		else
			print_single(&v.plans[only], &cfg, &mods);
		print_errors(&v, &mods);
		if (tp)
			print_shards(&v.sp, &mods);
	}
	if (!v.have[primary])
		rc = ctq_status_exit_code(v.errs[primary].status);
	else if (check && v.have[CTQ_SEM_STRICT] && !ctq_plan_executable(&v.plans[CTQ_SEM_STRICT]))
		rc = CTQ_EXIT_FAIL;
out:
	ctq_inspect_free(&v);
	ctq_modules_free(&mods);
	ctq_qconfig_free(&cfg);
	return rc;
}
