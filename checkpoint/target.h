/* A model folder opened for use: its quantization config, the modules its
 * config.json enumerates, the plan they resolve to and (optionally) the
 * checkpoint's tensors. The one way the runner, quantize's self-check, the
 * probe, bench gemm and the numeric conformance cases open a folder, so
 * that the order (config, modules, plan, tensors) and the clean-up live in
 * one place. */
#ifndef CTQ_CHECKPOINT_TARGET_H
#define CTQ_CHECKPOINT_TARGET_H

#include <stdbool.h>

#include "checkpoint/safetensors.h"
#include "core/status.h"
#include "quant/modules.h"
#include "quant/qconfig.h"
#include "quant/resolve.h"

struct ctq_target {
	struct ctq_qconfig cfg;
	struct ctq_modules mods;
	struct ctq_plan plan;
	struct ctq_checkpoint ck;
};

/* What ctq_target_open does beyond the config, the modules and the plan. */
enum {
	CTQ_TARGET_TENSORS = 1u << 0,    /* open the safetensors shards into ck */
	CTQ_TARGET_EXECUTABLE = 1u << 1, /* a plan that cannot execute fails the open */
};

/* Zeroes t: ctq_target_close is safe on it from then on. */
void ctq_target_init(struct ctq_target *t);

/* Whether path is a folder holding safetensors (model.safetensors.index.json
 * or model.safetensors). */
bool ctq_target_has_tensors(const char *path);

/* Reads PATH's quantization config (a model folder or a config.json file)
 * into cfg and enumerates its modules into mods: from arch + layers when
 * both are given (one without the other is usage; arch must agree with the
 * config's model_type); else, for a folder with safetensors, from its
 * tensors and config (ctq_modules_from_tensors: every module the checkpoint
 * holds, the ones outside the known tree with a guessed class; prefix
 * unused, the tensors give it); else from the file's model_type /
 * num_hidden_layers. prefix is prepended to module names (NULL: the
 * default); opt NULL: the default parser options. */
enum ctq_status ctq_target_load_config(const char *path, const struct ctq_parse_options *opt,
				       const char *arch, long layers, const char *prefix,
				       struct ctq_qconfig *cfg, struct ctq_modules *mods,
				       struct ctq_error *err);

/* The module tree of the open checkpoint ck with its config.json
 * (ctq_modules_from_tensors over ck's tensor names and shapes). Errors:
 * those of ctq_modules_from_tensors. */
enum ctq_status ctq_target_modules(const struct ctq_checkpoint *ck, const cJSON *config,
				   struct ctq_modules *mods, struct ctq_error *err);

/* Initialises t and opens the model folder dir: config, the modules of its
 * tensors with its config.json (ctq_target_modules; its config.json alone when
 * it holds no safetensors, and then a folder without model_type /
 * num_hidden_layers fails there), the plan
 * under sem and, with CTQ_TARGET_TENSORS, the tensors. With
 * CTQ_TARGET_EXECUTABLE a whole-config engine refusal (plan.refusal) or
 * else the first plan entry in error fails the open with that status, at
 * the refusal's config path or the module named. On error t holds what was opened
 * and ctq_target_close frees it. */
enum ctq_status ctq_target_open(struct ctq_target *t, const char *dir, enum ctq_semantics sem,
				unsigned flags, struct ctq_error *err);

/* Initialises t and reads model folder dir's quantization config, modules
 * and strict plan into it, not yet its tensors (probe and bench gemm, which
 * look at the plan first). The config goes through ctq_target_load_config,
 * so a folder without num_hidden_layers is told to name --arch. On error t
 * holds what was read; ctq_target_close frees it. */
enum ctq_status ctq_target_open_plan(struct ctq_target *t, const char *dir,
				     struct ctq_error *err);

void ctq_target_close(struct ctq_target *t);

#endif
