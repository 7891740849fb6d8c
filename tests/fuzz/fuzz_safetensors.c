/* Fuzz target: a safetensors file through ctq_st_open, the checkpoint
 * folder loader and plan-driven module loading (checkpoint/loader.h) at tp 1 and
 * tp 2. Input: a 4-byte little-endian length L, L bytes of config.json,
 * then the model.safetensors bytes; when L does not fit, the whole input is
 * the safetensors file and the config is the 1-layer W8A8 qwen3 of
 * tests/test_loader.c. Both files go into the target's temporary folder. */
#include "tests/fuzz/fuzz.h"

#include "core/json.h"
#include "checkpoint/loader.h"
#include "quant/modules.h"
#include "quant/qconfig.h"
#include "quant/resolve.h"
#include "checkpoint/safetensors.h"
#include "quant/shard.h"

static const char default_config[] =
	"{\"model_type\": \"qwen3\", \"num_hidden_layers\": 1, \"hidden_size\": 8, "
	"\"num_attention_heads\": 2, \"num_key_value_heads\": 1, \"head_dim\": 4, "
	"\"intermediate_size\": 16, \"vocab_size\": 32, \"tie_word_embeddings\": true, "
	"\"quantization_config\": {\"format\": \"int-quantized\", \"config_groups\": "
	"{\"group_0\": {\"targets\": [\"Linear\"], \"weights\": {\"num_bits\": 8, \"type\": "
	"\"int\", \"symmetric\": true, \"strategy\": \"channel\", \"dynamic\": false}, "
	"\"input_activations\": {\"num_bits\": 8, \"type\": \"int\", \"symmetric\": true, "
	"\"strategy\": \"token\", \"dynamic\": true}}}, \"ignore\": [\"lm_head\"]}}";

/* Touches the first and last byte of every tensor (the mapping's bounds). */
static unsigned touch(const struct ctq_st_tensor *t)
{
	unsigned char a = 0, b = 0;
	if (t->n_bytes) {
		memcpy(&a, t->data, 1);
		memcpy(&b, (const unsigned char *)t->data + t->n_bytes - 1, 1);
	}
	return (unsigned)a + b;
}

static void load_modules(const struct ctq_checkpoint *ck, const struct ctq_plan *plan, int tp)
{
	struct ctq_shard_plan sp;
	struct ctq_error err = {0};
	memset(&sp, 0, sizeof sp);
	if (!ctq_shard_plan_build(&sp, plan, tp, &err)) {
		for (size_t m = 0; m < plan->n; m++) {
			for (int r = 0; r < tp; r++) {
				struct ctq_linear l;
				struct ctq_error lerr = {0};
				memset(&l, 0, sizeof l);
				if (ctq_shard_at(&sp, m, r)->kind != CTQ_SHARD_NONE)
					ctq_load_linear(ck, plan, &sp, m, r, &l, &lerr);
				ctq_linear_free(&l);
			}
		}
	}
	ctq_shard_plan_free(&sp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > CTQ_FUZZ_MAX_BYTES)
		return -1;
	const char *cfg_text = default_config;
	size_t cfg_len = sizeof default_config - 1;
	const uint8_t *st = data;
	size_t st_len = size;
	if (size >= 4) {
		uint32_t l = (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 |
			     (uint32_t)data[3] << 24;
		if (l <= size - 4) {
			cfg_text = (const char *)data + 4;
			cfg_len = l;
			st = data + 4 + l;
			st_len = size - 4 - l;
		}
	}
	char file[512];
	snprintf(file, sizeof file, "%s", ctq_fuzz_path("model.safetensors"));
	ctq_fuzz_write(file, st, st_len);
	ctq_fuzz_write(ctq_fuzz_path("config.json"), cfg_text, cfg_len);

	volatile unsigned sink = 0;
	struct ctq_error err = {0};
	struct ctq_st_file f;
	memset(&f, 0, sizeof f);
	if (!ctq_st_open(&f, file, &err)) {
		for (size_t i = 0; i < f.n_tensors; i++) {
			const struct ctq_st_tensor *t = ctq_st_find(&f, f.tensors[i].name);
			if (t)
				sink += touch(t);
		}
		(void)ctq_st_metadata(&f, "format");
	}
	ctq_st_close(&f);

	struct ctq_checkpoint ck;
	struct ctq_qconfig cfg;
	struct ctq_modules mods;
	struct ctq_plan plan;
	cJSON *root = NULL;
	memset(&ck, 0, sizeof ck);
	memset(&cfg, 0, sizeof cfg);
	memset(&plan, 0, sizeof plan);
	ctq_modules_init(&mods);
	struct ctq_error cerr = {0};
	if (ctq_checkpoint_open(&ck, ctq_fuzz_dir(), &cerr))
		goto out;
	for (size_t i = 0; i < ctq_checkpoint_count(&ck); i++) {
		const char *shard = NULL;
		const struct ctq_st_tensor *t = ctq_checkpoint_at(&ck, i, &shard);
		if (t && ctq_checkpoint_find(&ck, t->name, NULL) == t)
			sink += touch(t);
	}
	struct ctq_error perr = {0};
	if (ctq_json_parse(cfg_text, cfg_len, "config.json", NULL, &root, &perr) ||
	    ctq_qconfig_parse(&cfg, root, NULL, &perr) ||
	    ctq_modules_from_config(&mods, cfg.raw, "", NULL, &perr) ||
	    ctq_plan_resolve(&plan, &cfg, &mods, CTQ_SEM_STRICT, NULL, &perr))
		goto out;
	float *emb = NULL;
	int64_t shape[2] = {-1, -1};
	if (!ctq_load_f32(&ck, "model.embed_tokens.weight", 2, shape, &emb, &perr))
		free(emb);
	if (ctq_plan_executable(&plan)) {
		size_t n_loaded = 0;
		struct ctq_error lerr = {0};
		ctq_load_check(&ck, &plan, &n_loaded, &lerr);
		load_modules(&ck, &plan, 1);
		load_modules(&ck, &plan, 2);
	}
out:
	ctq_plan_free(&plan);
	ctq_modules_free(&mods);
	ctq_qconfig_free(&cfg);
	cJSON_Delete(root);
	ctq_checkpoint_close(&ck);
	(void)sink;
	return 0;
}
