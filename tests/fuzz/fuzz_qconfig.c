/* Fuzz target: a config.json (or standalone quantization config) through
 * the parser, module enumeration, the resolver under the three profiles
 * (strict, ct, vllm) and the tensor-parallel shard plan — the path of
 * `ctq inspect --semantics all --tp N` (quant/inspect.c, harness/cmd_inspect.c),
 * from memory.
 * The last byte of the input picks the parser options and the tp size. */
#include "tests/fuzz/fuzz.h"

#include "core/json.h"
#include "quant/modules.h"
#include "quant/qconfig.h"
#include "quant/regex.h"
#include "quant/resolve.h"
#include "quant/shard.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > CTQ_FUZZ_MAX_BYTES)
		return -1;
	uint8_t knob = size ? data[size - 1] : 0;
	struct ctq_parse_options opt = {.accept_unknown_keys = knob & 1,
					.ct_version = (knob & 2) ? "0.9.0" : NULL};
	static const int tps[4] = {1, 2, 4, 8};
	int tp = tps[(knob >> 2) & 3];

	struct ctq_error err = {0};
	cJSON *root = NULL;
	struct ctq_qconfig cfg;
	struct ctq_modules mods;
	struct ctq_plan plans[CTQ_SEM_COUNT];
	memset(&cfg, 0, sizeof cfg);
	memset(plans, 0, sizeof plans);
	ctq_modules_init(&mods);
	if (ctq_json_parse((const char *)data, size, "fuzz.json", NULL, &root, &err))
		goto out;
	if (ctq_qconfig_parse(&cfg, root, &opt, &err))
		goto out;
	/* As ctq_target_load_config: the model from the config when it has a shape,
	 * else a small named architecture. */
	const cJSON *tc = ctq_json_get(cfg.raw, "text_config");
	enum ctq_status st;
	if (ctq_json_get(cfg.raw, "num_hidden_layers") || ctq_json_get(tc, "num_hidden_layers"))
		st = ctq_modules_from_config(&mods, cfg.raw, "", NULL, &err);
	else
		st = ctq_modules_from_arch(&mods, (knob & 0x10) ? "llama" : "qwen3", 2, NULL, &err);
	if (st)
		goto out;
	struct ctq_regex_cache rc;
	ctq_regex_cache_init(&rc);
	for (int s = 0; s < CTQ_SEM_COUNT; s++) {
		struct ctq_error perr = {0};
		if (ctq_plan_resolve(&plans[s], &cfg, &mods, (enum ctq_semantics)s, &rc, &perr))
			continue;
		for (size_t i = 0; i < plans[s].n && i < mods.n; i++)
			(void)ctq_plan_find(&plans[s], mods.v[i].name);
		(void)ctq_plan_executable(&plans[s]);
		struct ctq_shard_plan sp;
		struct ctq_error serr = {0};
		memset(&sp, 0, sizeof sp);
		if (!ctq_shard_plan_build(&sp, &plans[s], tp, &serr)) {
			for (size_t m = 0; m < mods.n; m++)
				for (int r = 0; r < tp; r++)
					(void)ctq_shard_kind_name(ctq_shard_at(&sp, m, r)->kind);
		}
		ctq_shard_plan_free(&sp);
	}
	ctq_regex_cache_free(&rc);
out:
	for (int s = 0; s < CTQ_SEM_COUNT; s++)
		ctq_plan_free(&plans[s]);
	ctq_modules_free(&mods);
	ctq_qconfig_free(&cfg);
	cJSON_Delete(root);
	return 0;
}
