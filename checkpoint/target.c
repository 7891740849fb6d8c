#include "checkpoint/target.h"

#include <stdio.h>
#include <string.h>

#include "core/fileio.h"
#include "core/json.h"

void ctq_target_init(struct ctq_target *t)
{
	memset(t, 0, sizeof *t);
	ctq_modules_init(&t->mods);
}

bool ctq_target_has_tensors(const char *path)
{
	if (!ctq_path_is_dir(path))
		return false;
	char p[CTQ_PATH_MAX];
	snprintf(p, sizeof p, "%s/%s", path, CTQ_ST_INDEX_NAME);
	if (ctq_path_exists(p))
		return true;
	snprintf(p, sizeof p, "%s/%s", path, CTQ_ST_SINGLE_NAME);
	if (ctq_path_exists(p))
		return true;
	snprintf(p, sizeof p, "%s/%s.safetensors.index.json", path, CTQ_ST_DIFFUSERS_STEM);
	if (ctq_path_exists(p))
		return true;
	snprintf(p, sizeof p, "%s/%s.safetensors", path, CTQ_ST_DIFFUSERS_STEM);
	return ctq_path_exists(p);
}

enum ctq_status ctq_target_modules(const struct ctq_checkpoint *ck, const cJSON *config,
				   struct ctq_modules *mods, struct ctq_error *err)
{
	size_t n = ctq_checkpoint_count(ck);
	struct ctq_tensor_name *names = ctq_malloc((n ? n : 1) * sizeof *names);
	if (!names)
		return ctq_error_set(err, CTQ_ERR_NOMEM, ck->dir, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const struct ctq_st_tensor *t = ctq_checkpoint_at(ck, i, NULL);
		names[i] = (struct ctq_tensor_name){t->name, t->ndim, t->shape};
	}
	enum ctq_status st = ctq_modules_from_tensors(mods, config, "", names, n, err);
	ctq_free(names);
	return st;
}

/* The module tree of the checkpoint in dir (ctq_target_modules). */
static enum ctq_status modules_from_checkpoint(const char *dir, const cJSON *config,
					       struct ctq_modules *mods, struct ctq_error *err)
{
	struct ctq_checkpoint ck;
	memset(&ck, 0, sizeof ck);
	enum ctq_status st = ctq_checkpoint_open(&ck, dir, err);
	if (!st)
		st = ctq_target_modules(&ck, config, mods, err);
	ctq_checkpoint_close(&ck);
	return st;
}

enum ctq_status ctq_target_load_config(const char *path, const struct ctq_parse_options *opt,
				       const char *arch, long layers, const char *prefix,
				       struct ctq_qconfig *cfg, struct ctq_modules *mods,
				       struct ctq_error *err)
{
	ctq_modules_init(mods);
	enum ctq_status st = ctq_qconfig_load(cfg, path, opt, err);
	if (st)
		return st;
	if (arch || layers) {
		if (!arch || !layers)
			return ctq_error_set(err, CTQ_ERR_USAGE, "--arch/--layers",
					     "give both --arch and --layers, or neither");
		const char *slash = strrchr(path, '/');
		const char *file = ctq_path_is_dir(path) ? "config.json" : slash ? slash + 1 : path;
		if ((st = ctq_modules_check_arch(cfg->raw, arch, "--arch", file, err)))
			return st;
		return ctq_modules_from_arch(mods, arch, (int)layers, prefix, err);
	}
	if (ctq_target_has_tensors(path))
		return modules_from_checkpoint(path, cfg->raw, mods, err);
	const cJSON *tc = ctq_json_get(cfg->raw, "text_config");
	if (!ctq_json_get(cfg->raw, "num_hidden_layers") &&
	    !ctq_json_get(tc, "num_hidden_layers") && !ctq_json_get(cfg->raw, "num_layers") /* a DiT's */)
		return ctq_error_set(err, CTQ_ERR_USAGE, path,
				     "has no model_type / num_hidden_layers (a standalone quantization config?); name the model with --arch A --layers N");
	return ctq_modules_from_config(mods, cfg->raw, "", prefix, err);
}

enum ctq_status ctq_target_open(struct ctq_target *t, const char *dir, enum ctq_semantics sem,
				unsigned flags, struct ctq_error *err)
{
	ctq_target_init(t);
	enum ctq_status st;
	if ((st = ctq_qconfig_load(&t->cfg, dir, NULL, err)))
		return st;
	if (ctq_target_has_tensors(dir)) {
		/* The tensors give the tree; the shards stay open only when asked for. */
		if ((st = ctq_checkpoint_open(&t->ck, dir, err)) ||
		    (st = ctq_target_modules(&t->ck, t->cfg.raw, &t->mods, err)))
			return st;
		if (!(flags & CTQ_TARGET_TENSORS))
			ctq_checkpoint_close(&t->ck);
	} else if ((st = ctq_modules_from_config(&t->mods, t->cfg.raw, "", NULL, err))) {
		return st;
	}
	if ((st = ctq_plan_resolve(&t->plan, &t->cfg, &t->mods, sem, NULL, err)))
		return st;
	if ((flags & CTQ_TARGET_EXECUTABLE) && t->plan.refusal.status)
		return ctq_error_set(err, t->plan.refusal.status, t->plan.refusal.path,
				     "the %s plan cannot execute this checkpoint: %s",
				     ctq_semantics_name(sem), t->plan.refusal.message);
	if (flags & CTQ_TARGET_EXECUTABLE)
		for (size_t i = 0; i < t->plan.n; i++)
			if (t->plan.entries[i].error)
				return ctq_error_set(err, t->plan.entries[i].error, t->mods.v[i].name,
						     "the %s plan cannot execute this checkpoint: %s",
						     ctq_semantics_name(sem), t->plan.entries[i].message);
	if ((flags & CTQ_TARGET_TENSORS) && !t->ck.n_files)
		return ctq_checkpoint_open(&t->ck, dir, err);
	return CTQ_OK;
}

enum ctq_status ctq_target_open_plan(struct ctq_target *t, const char *dir,
				     struct ctq_error *err)
{
	ctq_target_init(t);
	enum ctq_status st = ctq_target_load_config(dir, NULL, NULL, 0, NULL, &t->cfg, &t->mods, err);
	return st ? st : ctq_plan_resolve(&t->plan, &t->cfg, &t->mods, CTQ_SEM_STRICT, NULL, err);
}

void ctq_target_close(struct ctq_target *t)
{
	ctq_checkpoint_close(&t->ck);
	ctq_plan_free(&t->plan);
	ctq_modules_free(&t->mods);
	ctq_qconfig_free(&t->cfg);
}
