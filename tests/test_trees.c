/* Criterion tests for the module tree a plan covers (quant/modules.h,
 * checkpoint/target.h; DESIGN.md "Module trees"):
 *   - an architecture named beside a config (--arch, a suite's model.arch)
 *     that contradicts its model_type is refused, naming both;
 *   - `ctq inspect --arch` on such a config exits 2;
 *   - a *ForSequenceClassification config has the head score (vLLM
 *     ReplicatedLinear, hidden -> num_labels) and no lm_head;
 *   - a checkpoint folder's tree comes from its tensors: a Llava's text
 *     tree under the tensors' prefix plus its vision tower and projector
 *     Linears (guessed), a module outside the known tree guessed with a
 *     warning, a known module the checkpoint lacks refused, a MoE with no
 *     dense MLP. The checkpoints are written here with ctq's own writer. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoint/loader.h"
#include "checkpoint/quantize.h"
#include "checkpoint/safetensors.h"
#include "checkpoint/synth.h"
#include "checkpoint/target.h"
#include "model/runner.h"
#include "quant/arch.h"
#include "quant/modules.h"
#include "quant/shard.h"
#include "tests/command.h"

TestSuite(trees);

/* Writes text to a fresh temporary file; path receives its name. */
static void write_temp(char *path, const char *text)
{
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	FILE *fp = fdopen(fd, "w");
	cr_assert(fp);
	fputs(text, fp);
	fclose(fp);
}

Test(trees, arch_that_contradicts_model_type_is_refused)
{
	static const struct {
		const char *id, *config, *arch, *path, *says; /* says NULL: accepted */
	} cases[] = {
		{"moe", "{\"model_type\": \"qwen3_moe\"}", "qwen3", "model_type",
		 "--arch qwen3 contradicts config.json's model_type \"qwen3_moe\""},
		{"other-family", "{\"model_type\": \"llama\"}", "qwen2", "model_type",
		 "--arch qwen2 contradicts config.json's model_type \"llama\""},
		{"text-config", "{\"model_type\": \"llava\", \"text_config\": {\"model_type\": \"qwen2\", \"num_hidden_layers\": 1}}",
		 "llama", "text_config.model_type", "--arch llama contradicts config.json's model_type \"qwen2\""},
		{"unknown-arch", "{\"model_type\": \"qwen3\"}", "gpt2", "model_type",
		 "--arch gpt2 contradicts config.json's model_type \"qwen3\""},
		{"same", "{\"model_type\": \"qwen3\"}", "qwen3", NULL, NULL},
		{"class-name", "{\"model_type\": \"qwen2\"}", "Qwen2ForCausalLM", NULL, NULL},
		{"mistral-is-llama", "{\"model_type\": \"mistral\"}", "llama", NULL, NULL},
		{"no-model-type", "{\"quantization_config\": {}}", "qwen3", NULL, NULL},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		cJSON *cfg = cJSON_Parse(cases[i].config);
		cr_assert(cfg, "%s", cases[i].id);
		struct ctq_error err = {0};
		enum ctq_status st = ctq_modules_check_arch(cfg, cases[i].arch, "--arch", "config.json", &err);
		if (!cases[i].says) {
			cr_expect_eq(st, CTQ_OK, "%s: %s", cases[i].id, err.message);
		} else {
			cr_expect_eq(st, CTQ_ERR_INVALID_CONFIG, "%s", cases[i].id);
			cr_expect_str_eq(err.path, cases[i].path, "%s", cases[i].id);
			cr_expect_str_eq(err.message, cases[i].says, "%s", cases[i].id);
		}
		cJSON_Delete(cfg);
	}
}

Test(trees, inspect_arch_on_a_contradicting_config_exits_2)
{
	char path[] = "/tmp/ctq-trees-XXXXXX";
	write_temp(path, "{\"architectures\": [\"Qwen3MoeForCausalLM\"], \"model_type\": \"qwen3_moe\", "
			 "\"num_hidden_layers\": 2}");
	char cmd[512], out[8192];
	snprintf(cmd, sizeof cmd, "%s inspect %s --arch qwen3 --layers 2 2>&1", test_ctq_bin(), path);
	cr_expect_eq(test_command(cmd, out, sizeof out), 2, "%s", out);
	cr_expect(strstr(out, "--arch qwen3 contradicts") && strstr(out, "model_type \"qwen3_moe\""), "%s",
		  out);
	/* the library call the commands share says the same */
	struct ctq_qconfig cfg;
	struct ctq_modules mods;
	struct ctq_error err = {0};
	cr_expect_eq(ctq_target_load_config(path, NULL, "qwen3", 2, NULL, &cfg, &mods, &err),
		     CTQ_ERR_INVALID_CONFIG);
	cr_expect(strstr(err.message, "contradicts"), "%s", err.message);
	ctq_modules_free(&mods);
	ctq_qconfig_free(&cfg);
	unlink(path);
}

Test(trees, sequence_classifier_has_score_and_no_lm_head)
{
	static const struct {
		const char *arch, *labels; /* labels: the config's num_labels / id2label text */
		long num_labels;
	} cases[] = {
		{"Qwen3ForSequenceClassification", "\"num_labels\": 5", 5},
		{"Qwen2ForSequenceClassification", "\"id2label\": {\"0\": \"no\", \"1\": \"yes\", \"2\": \"maybe\"}", 3},
		{"LlamaForSequenceClassification", "\"hidden_act\": \"silu\"", 2},
		{"LlamaForCausalLM", "\"num_labels\": 5", 0},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char text[512];
		snprintf(text, sizeof text,
			 "{\"architectures\": [\"%s\"], \"num_hidden_layers\": 2, \"hidden_size\": 64, %s}",
			 cases[i].arch, cases[i].labels);
		cJSON *cfg = cJSON_Parse(text);
		cr_assert(cfg, "%s", text);
		struct ctq_modules mods;
		ctq_modules_init(&mods);
		struct ctq_error err = {0};
		cr_assert_eq(ctq_modules_from_config(&mods, cfg, "", NULL, &err), CTQ_OK, "%s: %s",
			     cases[i].arch, err.message);
		const struct ctq_module *score = ctq_modules_lookup(&mods, "score");
		const struct ctq_module *head = ctq_modules_lookup(&mods, "lm_head");
		if (cases[i].num_labels) {
			cr_expect(score && !head, "%s: score %p, lm_head %p", cases[i].arch, (void *)score,
				  (void *)head);
			cr_expect(mods.shape.seq_cls);
			cr_expect_eq(mods.shape.num_labels, cases[i].num_labels, "%s", cases[i].arch);
			if (score) {
				cr_expect_eq(score->kind, CTQ_MODULE_LINEAR);
				cr_expect_str_eq(score->types[0], "Linear");
				cr_expect_str_eq(score->vllm_type, "ReplicatedLinear");
				cr_expect(!score->guessed);
			}
		} else {
			cr_expect(!score && head && !mods.shape.seq_cls, "%s", cases[i].arch);
		}
		cr_expect_eq(mods.n, 1 + 2 * 8 + 1, "%s: %zu modules", cases[i].arch, mods.n);
		ctq_modules_free(&mods);
		cJSON_Delete(cfg);
	}
}

/* ---- checkpoints written by the test ------------------------------------ */

#define H 8   /* hidden size of every fixture */
#define V 16  /* vocabulary */

/* Data enough for the largest fixture tensor: BF16 1, -1, 2, ... (non-zero
 * rows, so that quantizing them is no degenerate case). */
static uint16_t data[V * H * 4];

static void fill_data(void)
{
	static const uint16_t v[3] = {0x3f80, 0xbf80, 0x4000};
	for (size_t i = 0; i < sizeof data / sizeof *data; i++)
		data[i] = v[i % 3];
}

static void add(struct ctq_st_writer *w, const char *name, int ndim, int64_t d0, int64_t d1)
{
	struct ctq_error err = {0};
	if (!data[0])
		fill_data();
	const int64_t shape[4] = {d0, d1, 2, 2};
	uint64_t n = (uint64_t)d0 * (ndim > 1 ? (uint64_t)d1 : 1) * (ndim > 2 ? 4u : 1u);
	cr_assert(n * 2 <= sizeof data, "%s", name);
	cr_assert_eq(ctq_st_writer_add(w, name, CTQ_DTYPE_BF16, ndim == 3 ? 4 : ndim, shape, data, n * 2,
				       &err),
		     CTQ_OK, "%s: %s", name, err.message);
}

/* One Llama/Qwen decoder layer's tensors (norms 1-D) under prefix P
 * ("model."), with the dense MLP or two experts. */
static void add_text(struct ctq_st_writer *w, const char *p, bool moe)
{
	char n[256];
	snprintf(n, sizeof n, "%sembed_tokens.weight", p);
	add(w, n, 2, V, H);
	snprintf(n, sizeof n, "%snorm.weight", p);
	add(w, n, 1, H, 0);
	static const char *const attn[] = {"q_proj", "k_proj", "v_proj", "o_proj"};
	for (int i = 0; i < 4; i++) {
		snprintf(n, sizeof n, "%slayers.0.self_attn.%s.weight", p, attn[i]);
		add(w, n, 2, H, H);
	}
	snprintf(n, sizeof n, "%slayers.0.input_layernorm.weight", p);
	add(w, n, 1, H, 0);
	static const char *const mlp[] = {"gate_proj", "up_proj", "down_proj"};
	for (int e = 0; e < (moe ? 2 : 1); e++)
		for (int i = 0; i < 3; i++) {
			if (moe)
				snprintf(n, sizeof n, "%slayers.0.mlp.experts.%d.%s.weight", p, e, mlp[i]);
			else
				snprintf(n, sizeof n, "%slayers.0.mlp.%s.weight", p, mlp[i]);
			add(w, n, 2, H, H);
		}
	if (moe) {
		snprintf(n, sizeof n, "%slayers.0.mlp.gate.weight", p);
		add(w, n, 2, 2, H);
	}
}

/* A SigLIP-style vision tower (a 4-D patch convolution, a position
 * Embedding, one encoder layer) under p and a two-Linear projector under q. */
static void add_vision(struct ctq_st_writer *w, const char *p, const char *q)
{
	char n[256];
	snprintf(n, sizeof n, "%sembeddings.patch_embedding.weight", p);
	add(w, n, 3, H, 3);
	snprintf(n, sizeof n, "%sembeddings.position_embedding.weight", p);
	add(w, n, 2, 4, H);
	static const char *const lin[] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
					  "self_attn.out_proj", "mlp.fc1", "mlp.fc2"};
	for (int i = 0; i < 6; i++) {
		snprintf(n, sizeof n, "%sencoder.layers.0.%s.weight", p, lin[i]);
		add(w, n, 2, H, H);
		snprintf(n, sizeof n, "%sencoder.layers.0.%s.bias", p, lin[i]);
		add(w, n, 1, H, 0);
	}
	snprintf(n, sizeof n, "%sencoder.layers.0.layer_norm1.weight", p);
	add(w, n, 1, H, 0);
	snprintf(n, sizeof n, "%slinear_1.weight", q);
	add(w, n, 2, H, H);
	snprintf(n, sizeof n, "%slinear_2.weight", q);
	add(w, n, 2, H, H);
}

/* A W8A8 config.json body: Linear targets, nothing ignored. */
#define W8A8_LINEAR                                                                                \
	"\"quantization_config\": {\"quant_method\": \"compressed-tensors\", \"format\": "        \
	"\"int-quantized\", \"config_groups\": {\"group_0\": {\"targets\": [\"Linear\"], "        \
	"\"weights\": {\"num_bits\": 8, \"type\": \"int\", \"symmetric\": true, \"strategy\": "  \
	"\"channel\", \"dynamic\": false}, \"input_activations\": {\"num_bits\": 8, \"type\": "   \
	"\"int\", \"symmetric\": true, \"strategy\": \"token\", \"dynamic\": true}}}}"

/* Writes w and config into a fresh folder dir (/tmp/ctq-trees-XXXXXX). */
static void write_checkpoint(char *dir, struct ctq_st_writer *w, const char *config)
{
	cr_assert(mkdtemp(dir));
	struct ctq_error err = {0};
	cr_assert_eq(ctq_checkpoint_write(dir, w, 0, &err), CTQ_OK, "%s", err.message);
	char p[256];
	snprintf(p, sizeof p, "%s/config.json", dir);
	FILE *fp = fopen(p, "w");
	cr_assert(fp);
	fputs(config, fp);
	fclose(fp);
	ctq_st_writer_free(w);
}

static void remove_checkpoint(const char *dir)
{
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}

/* Loads dir's tree as inspect, probe and quantize do. */
static enum ctq_status load(const char *dir, struct ctq_qconfig *cfg, struct ctq_modules *mods,
			    struct ctq_error *err)
{
	return ctq_target_load_config(dir, NULL, NULL, 0, NULL, cfg, mods, err);
}

static const struct ctq_module *expect_module(const struct ctq_modules *m, const char *name,
					      const char *type, bool guessed)
{
	const struct ctq_module *x = ctq_modules_lookup(m, name);
	cr_expect(x, "no module %s", name);
	if (x) {
		cr_expect_str_eq(x->types[0], type, "%s", name);
		cr_expect_eq(x->guessed, guessed, "%s: guessed %d", name, x->guessed);
	}
	return x;
}

Test(trees, llava_has_its_vision_tower_and_projector)
{
	static const struct {
		const char *layout, *text, *vision, *projector, *head;
	} cases[] = {
		/* transformers >= 4.52 */
		{"model.language_model", "model.language_model.", "model.vision_tower.vision_model.",
		 "model.multi_modal_projector.", "lm_head"},
		/* earlier checkpoints */
		{"language_model.model", "language_model.model.", "vision_tower.vision_model.",
		 "multi_modal_projector.", "language_model.lm_head"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		struct ctq_st_writer w;
		ctq_st_writer_init(&w);
		add_text(&w, cases[i].text, false);
		add_vision(&w, cases[i].vision, cases[i].projector);
		char head[128];
		snprintf(head, sizeof head, "%s.weight", cases[i].head);
		add(&w, head, 2, V, H);
		char dir[] = "/tmp/ctq-trees-XXXXXX";
		write_checkpoint(dir, &w,
				 "{\"architectures\": [\"LlavaForConditionalGeneration\"], \"model_type\": \"llava\", "
				 "\"text_config\": {\"model_type\": \"llama\", \"num_hidden_layers\": 1, "
				 "\"hidden_size\": 8, \"intermediate_size\": 8, \"num_attention_heads\": 2, \"head_dim\": 4}, \"vision_config\": {\"model_type\": \"siglip_vision_model\"}, " W8A8_LINEAR "}");
		struct ctq_qconfig cfg;
		struct ctq_modules mods;
		struct ctq_error err = {0};
		cr_assert_eq(load(dir, &cfg, &mods, &err), CTQ_OK, "%s: %s", cases[i].layout, err.message);
		char n[256];
		snprintf(n, sizeof n, "%slayers.0.self_attn.q_proj", cases[i].text);
		expect_module(&mods, n, "Linear", false);
		snprintf(n, sizeof n, "%sembed_tokens", cases[i].text);
		expect_module(&mods, n, "Embedding", false);
		expect_module(&mods, cases[i].head, "Linear", false);
		cr_expect(!strcmp(cases[i].head, "lm_head") || !ctq_modules_lookup(&mods, "lm_head"), "%s",
			  cases[i].layout);
		snprintf(n, sizeof n, "%sencoder.layers.0.self_attn.q_proj", cases[i].vision);
		expect_module(&mods, n, "Linear", true);
		snprintf(n, sizeof n, "%sencoder.layers.0.mlp.fc2", cases[i].vision);
		expect_module(&mods, n, "Linear", true);
		snprintf(n, sizeof n, "%sembeddings.position_embedding", cases[i].vision);
		expect_module(&mods, n, "Embedding", true);
		snprintf(n, sizeof n, "%sembeddings.patch_embedding", cases[i].vision);
		cr_expect(!ctq_modules_lookup(&mods, n), "a 4-D convolution is no module: %s", n);
		snprintf(n, sizeof n, "%slinear_1", cases[i].projector);
		expect_module(&mods, n, "Linear", true);
		snprintf(n, sizeof n, "%slinear_2", cases[i].projector);
		expect_module(&mods, n, "Linear", true);
		/* 6 tower Linears, the position Embedding, 2 projector Linears */
		cr_expect_eq(mods.n_guessed, 9, "%s: %zu guessed", cases[i].layout, mods.n_guessed);
		cr_expect_eq(mods.n, 1 + 1 + 7 + 1 + 9, "%s: %zu modules", cases[i].layout, mods.n);
		/* compressed-tensors quantizes the tower's Linears: a Linear target reaches them */
		struct ctq_plan plan;
		cr_assert_eq(ctq_plan_resolve(&plan, &cfg, &mods, CTQ_SEM_CT, NULL, &err), CTQ_OK, "%s",
			     err.message);
		snprintf(n, sizeof n, "%slinear_1", cases[i].projector);
		const struct ctq_plan_entry *e = ctq_plan_find(&plan, n);
		cr_expect(e && e->scheme && !strcmp(e->scheme, "w8a8-int8"), "%s", n);
		/* one rank: a guessed module whole, its features from its tensor;
		 * more ranks: no layout is known for it (not the text q_proj's) */
		struct ctq_shard_plan sp;
		cr_expect_eq(ctq_shard_plan_build(&sp, &plan, 1, &err), CTQ_OK, "%s", err.message);
		long k = ctq_modules_find(&mods, n);
		cr_expect(k >= 0 && sp.out_features && sp.out_features[k] == H && sp.in_features[k] == H);
		ctq_shard_plan_free(&sp);
		cr_expect_eq(ctq_shard_plan_build(&sp, &plan, 2, &err), CTQ_ERR_SHARD_INVALID);
		cr_expect(strstr(err.message, "guessed"), "%s", err.message);
		ctq_shard_plan_free(&sp);
		ctq_plan_free(&plan);
		ctq_modules_free(&mods);
		ctq_qconfig_free(&cfg);
		remove_checkpoint(dir);
	}
}

Test(trees, unknown_module_is_guessed_with_a_warning)
{
	struct ctq_st_writer w;
	ctq_st_writer_init(&w);
	add_text(&w, "model.", false);
	add(&w, "lm_head.weight", 2, V, H);
	add(&w, "model.layers.0.mlp.extra_proj.weight", 2, H, H);
	add(&w, "model.layers.0.mlp.extra_proj.weight_scale", 2, H, 1);
	char dir[] = "/tmp/ctq-trees-XXXXXX";
	write_checkpoint(&dir[0], &w,
			 "{\"model_type\": \"qwen3\", \"num_hidden_layers\": 1, " W8A8_LINEAR "}");
	struct ctq_qconfig cfg;
	struct ctq_modules mods;
	struct ctq_error err = {0};
	cr_assert_eq(load(dir, &cfg, &mods, &err), CTQ_OK, "%s", err.message);
	expect_module(&mods, "model.layers.0.mlp.extra_proj", "Linear", true);
	cr_expect(!ctq_modules_lookup(&mods, "model.layers.0.mlp.extra_proj.weight_scale"));
	cr_expect_eq(mods.n_guessed, 1);
	ctq_modules_free(&mods);
	ctq_qconfig_free(&cfg);
	char cmd[512], out[16384];
	snprintf(cmd, sizeof cmd, "%s inspect %s --semantics all 2>&1", test_ctq_bin(), dir);
	cr_expect_eq(test_command(cmd, out, sizeof out), 0, "%s", out);
	cr_expect(strstr(out, "warning: 1 module(s) added from the checkpoint's tensors with a guessed class"),
		  "%s", out);
	cr_expect(strstr(out, "model.layers.0.mlp.extra_proj"), "%s", out);
	snprintf(cmd, sizeof cmd, "%s inspect %s --json 2>&1", test_ctq_bin(), dir);
	cr_expect_eq(test_command(cmd, out, sizeof out), 0, "%s", out);
	cr_expect(strstr(out, "\"guessed_modules\":\t1") && strstr(out, "\"guessed\":\ttrue"), "%s", out);
	/* --arch keeps today's tree: no tensors read */
	snprintf(cmd, sizeof cmd, "%s inspect %s --arch qwen3 --layers 1 2>&1", test_ctq_bin(), dir);
	cr_expect_eq(test_command(cmd, out, sizeof out), 0, "%s", out);
	cr_expect(!strstr(out, "extra_proj") && !strstr(out, "warning"), "%s", out);
	remove_checkpoint(dir);
}

Test(trees, moe_checkpoint_has_no_dense_mlp)
{
	/* qwen3_moe: the known tree (quant/arch.c), its expert count from the
	 * tensors; per-expert tensors are transformers 4's layout, so the
	 * router is an nn.Linear and the experts Linears compressed-tensors sees */
	struct ctq_st_writer w;
	ctq_st_writer_init(&w);
	add_text(&w, "model.", true);
	add(&w, "lm_head.weight", 2, V, H);
	char dir[] = "/tmp/ctq-trees-XXXXXX";
	write_checkpoint(dir, &w, "{\"model_type\": \"qwen3_moe\", \"num_hidden_layers\": 1}");
	struct ctq_qconfig cfg;
	struct ctq_modules mods;
	struct ctq_error err = {0};
	cr_assert_eq(load(dir, &cfg, &mods, &err), CTQ_OK, "%s", err.message);
	cr_expect(!ctq_modules_lookup(&mods, "model.layers.0.mlp.gate_proj"));
	const struct ctq_module *d = expect_module(&mods, "model.layers.0.mlp.experts.1.down_proj",
						   "Linear", false);
	const struct ctq_module *g = expect_module(&mods, "model.layers.0.mlp.gate", "Linear", false);
	expect_module(&mods, "model.embed_tokens", "Embedding", false);
	expect_module(&mods, "model.layers.0.self_attn", "Qwen3MoeAttention", false);
	cr_expect_eq(mods.n_guessed, 0);
	cr_expect_eq(mods.n, 1 + 1 + 4 + 1 + 6 + 1, "%zu modules", mods.n);
	cr_assert(d && g);
	cr_expect(d->moe == 0 && d->expert == 1 && d->expert_proj == 2 && !d->ct_fused);
	cr_expect_str_eq(d->vllm_type, "FusedMoE");
	/* vLLM qwen3_moe.py builds this router with quant_config=quant_config
	 * (a ReplicatedLinear a Linear target reaches); ctq quantize still
	 * keeps routers in BF16 (the router flag) */
	cr_expect(!g->vllm_unquantized && g->router && g->moe < 0);
	cr_expect_str_eq(g->vllm_type, "ReplicatedLinear");
	cr_expect_eq(mods.n_moe, 1);
	cr_expect_str_eq(mods.moe[0].runtime_name, "model.layers.0.mlp.experts");
	cr_expect_eq(mods.moe[0].n_experts, 2);
	ctq_modules_free(&mods);
	ctq_qconfig_free(&cfg);
	remove_checkpoint(dir);
	/* the same tensors under a dense model_type: the dense MLP is refused */
	ctq_st_writer_init(&w);
	add_text(&w, "model.", true);
	add(&w, "lm_head.weight", 2, V, H);
	char dir2[] = "/tmp/ctq-trees-XXXXXX";
	write_checkpoint(dir2, &w, "{\"model_type\": \"qwen3\", \"num_hidden_layers\": 1}");
	cr_expect_eq(load(dir2, &cfg, &mods, &err), CTQ_ERR_CHECKPOINT);
	cr_expect_str_eq(err.path, "model.layers.0.mlp.gate_proj");
	cr_expect(strstr(err.message, "holds no model.layers.0.mlp.gate_proj.weight"), "%s", err.message);
	ctq_modules_free(&mods);
	ctq_qconfig_free(&cfg);
	remove_checkpoint(dir2);
}

Test(trees, classifier_checkpoint_has_score)
{
	struct ctq_st_writer w;
	ctq_st_writer_init(&w);
	add_text(&w, "model.", false);
	add(&w, "score.weight", 2, 3, H);
	char dir[] = "/tmp/ctq-trees-XXXXXX";
	write_checkpoint(dir, &w,
			 "{\"architectures\": [\"Qwen3ForSequenceClassification\"], \"model_type\": \"qwen3\", "
			 "\"num_hidden_layers\": 1, \"num_labels\": 3, \"tie_word_embeddings\": true}");
	struct ctq_qconfig cfg;
	struct ctq_modules mods;
	struct ctq_error err = {0};
	cr_assert_eq(load(dir, &cfg, &mods, &err), CTQ_OK, "%s", err.message);
	expect_module(&mods, "score", "Linear", false);
	cr_expect(!ctq_modules_lookup(&mods, "lm_head"));
	cr_expect_eq(mods.n_guessed, 0);
	ctq_modules_free(&mods);
	ctq_qconfig_free(&cfg);
	remove_checkpoint(dir);
}

/* A tree from tensors lists modules in name order: k_proj before q_proj.
 * vLLM's fused layer is still resolved once, by its lead, for all members. */
Test(trees, vllm_fused_members_in_any_order)
{
	cJSON *root = cJSON_Parse("{" W8A8_LINEAR "}");
	cr_assert(root);
	struct ctq_qconfig cfg;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_qconfig_parse(&cfg, root, NULL, &err), CTQ_OK, "%s", err.message);
	struct ctq_modules mods;
	ctq_modules_init(&mods);
	static const char *const linear[] = {"Linear", "Module"};
	static const char *const names[] = {"tower.attn.k_proj", "tower.attn.out_proj", "tower.attn.q_proj",
					    "tower.attn.v_proj"};
	for (size_t i = 0; i < 4; i++)
		cr_assert_eq(ctq_modules_add(&mods, names[i], linear, 2, NULL, &err), CTQ_OK);
	cr_assert_eq(ctq_modules_finish(&mods, &err), CTQ_OK);
	cr_assert_eq(mods.n_fused, 1);
	for (int s = 0; s < CTQ_SEM_COUNT; s++) {
		struct ctq_plan plan;
		cr_assert_eq(ctq_plan_resolve(&plan, &cfg, &mods, (enum ctq_semantics)s, NULL, &err), CTQ_OK,
			     "%s", err.message);
		for (size_t i = 0; i < plan.n; i++)
			cr_expect(plan.entries[i].scheme && !strcmp(plan.entries[i].scheme, "w8a8-int8"),
				  "%s %s: %s", ctq_semantics_name((enum ctq_semantics)s), names[i],
				  plan.entries[i].error ? plan.entries[i].message : "no scheme");
		ctq_plan_free(&plan);
	}
	ctq_modules_free(&mods);
	ctq_qconfig_free(&cfg);
	cJSON_Delete(root);
}

/* ctq quantize covers the tensors' tree: a Linear outside the known tree is
 * quantized too (a Linear target would claim it), and the written
 * checkpoint's own tree (ctq_target_open, the self-check) agrees. */
Test(trees, quantize_covers_a_guessed_linear)
{
	struct ctq_st_writer w;
	ctq_st_writer_init(&w);
	add_text(&w, "model.", false);
	add(&w, "lm_head.weight", 2, V, H);
	add(&w, "model.layers.0.mlp.extra_proj.weight", 2, H, H);
	char dir[] = "/tmp/ctq-trees-XXXXXX";
	write_checkpoint(dir, &w,
			 "{\"architectures\": [\"Qwen3ForCausalLM\"], \"model_type\": \"qwen3\", "
			 "\"num_hidden_layers\": 1, \"hidden_size\": 8, \"intermediate_size\": 8, "
			 "\"num_attention_heads\": 2, \"num_key_value_heads\": 2, \"head_dim\": 4, "
			 "\"vocab_size\": 16, \"torch_dtype\": \"bfloat16\"}");
	char out[64];
	snprintf(out, sizeof out, "%s/w8a8", dir);
	struct ctq_quantize_result res;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_quantize_checkpoint(dir, out, NULL, &res, &err), CTQ_OK, "%s at %s",
		     err.message, err.path);
	cr_expect_eq(res.n_modules, 8, "7 layer Linears and extra_proj: %zu", res.n_modules);
	ctq_quantize_result_free(&res);
	struct ctq_target t;
	cr_assert_eq(ctq_target_open(&t, out, CTQ_SEM_STRICT, CTQ_TARGET_TENSORS, &err), CTQ_OK, "%s",
		     err.message);
	const struct ctq_plan_entry *e = ctq_plan_find(&t.plan, "model.layers.0.mlp.extra_proj");
	cr_expect(e && e->scheme && !strcmp(e->scheme, "w8a8-int8"), "extra_proj");
	const struct ctq_st_tensor *wt = ctq_checkpoint_find(&t.ck, "model.layers.0.mlp.extra_proj.weight", NULL);
	cr_expect(wt && wt->dtype == CTQ_DTYPE_I8);
	ctq_target_close(&t);
	remove_checkpoint(dir);
}

/* ---- the architecture table (quant/arch.c) ------------------------------ */

Test(trees, arch_table_rows_by_model_type_and_class)
{
	size_t n = 0;
	const char *list = ctq_arch_list();
	for (const struct ctq_arch *a; (a = ctq_arch_at(n)); n++) {
		cr_expect_eq(ctq_arch_find(a->model_type), a, "%s", a->model_type);
		cr_expect_eq(ctq_arch_find(a->causal_lm), a, "%s", a->causal_lm);
		char cls[128];
		snprintf(cls, sizeof cls, "%.*sForSequenceClassification",
			 (int)(strlen(a->causal_lm) - strlen("ForCausalLM")), a->causal_lm);
		cr_expect_eq(ctq_arch_find(cls), a, "%s", cls);
		cr_expect(strstr(list, a->model_type), "%s missing from ctq_arch_list()", a->model_type);
		cr_expect(a->attention_class && a->layer_class && a->norm_class && a->source, "%s",
			  a->model_type);
		cr_expect(!a->moe_parent || (a->moe_class && a->expert_leaf[2]), "%s", a->model_type);
	}
	cr_expect_eq(n, 13);
	cr_expect_null(ctq_arch_find("falcon"));
	cr_expect_null(ctq_arch_find("ForSequenceClassification"));
	/* the runner's families only */
	cr_expect_str_eq(ctq_arch_normalise("Qwen2ForSequenceClassification"), "qwen2");
	cr_expect_null(ctq_arch_normalise("mistral"));
	cr_expect_null(ctq_arch_normalise("qwen3_moe"));
}

/* Every dense row enumerates its layout: the Linears of one layer. */
Test(trees, dense_rows_enumerate_their_layout)
{
	static const struct {
		const char *cfg;
		const char *present[4], *absent[2];
		size_t n; /* modules: embed + attention + linears + head */
		bool tied_head_is_embedding;
	} cases[] = {
		{"{\"model_type\": \"mistral\", \"num_hidden_layers\": 1}",
		 {"model.layers.0.self_attn.v_proj", "lm_head"}, {"score"}, 1 + 1 + 7 + 1, false},
		{"{\"model_type\": \"gemma\", \"num_hidden_layers\": 1}",
		 {"model.layers.0.mlp.up_proj"}, {"model.layers.0.self_attn.q_norm"}, 1 + 1 + 7 + 1, true},
		{"{\"model_type\": \"gemma3_text\", \"num_hidden_layers\": 2}",
		 {"model.layers.1.self_attn.o_proj"}, {NULL}, 1 + 2 * 8 + 1, true},
		{"{\"model_type\": \"phi3\", \"num_hidden_layers\": 1, \"hidden_size\": 64, "
		 "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"intermediate_size\": 96}",
		 {"model.layers.0.self_attn.qkv_proj", "model.layers.0.mlp.gate_up_proj"},
		 {"model.layers.0.self_attn.k_proj", "model.layers.0.mlp.up_proj"}, 1 + 1 + 4 + 1, false},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		cJSON *cfg = cJSON_Parse(cases[i].cfg);
		struct ctq_modules mods;
		ctq_modules_init(&mods);
		struct ctq_error err = {0};
		cr_assert_eq(ctq_modules_from_config(&mods, cfg, "", NULL, &err), CTQ_OK, "%s: %s",
			     cases[i].cfg, err.message);
		for (int k = 0; k < 4 && cases[i].present[k]; k++)
			cr_expect(ctq_modules_lookup(&mods, cases[i].present[k]), "%s: no %s", cases[i].cfg,
				  cases[i].present[k]);
		for (int k = 0; k < 2 && cases[i].absent[k]; k++)
			cr_expect(ctq_modules_find(&mods, cases[i].absent[k]) < 0, "%s: %s listed",
				  cases[i].cfg, cases[i].absent[k]);
		cr_expect_eq(mods.n, cases[i].n, "%s: %zu modules", cases[i].cfg, mods.n);
		cr_expect_eq(mods.shape.row->vllm_head_is_embedding, cases[i].tied_head_is_embedding, "%s",
			     cases[i].cfg);
		ctq_modules_free(&mods);
		cJSON_Delete(cfg);
	}
	/* Phi-3's stored-fused Linears: their vLLM classes and features */
	cJSON *cfg = cJSON_Parse(cases[3].cfg);
	struct ctq_modules mods;
	ctq_modules_init(&mods);
	struct ctq_error err = {0};
	cr_assert_eq(ctq_modules_from_config(&mods, cfg, "", NULL, &err), CTQ_OK);
	const struct ctq_module *qkv = ctq_modules_lookup(&mods, "model.layers.0.self_attn.qkv_proj");
	const struct ctq_module *gu = ctq_modules_lookup(&mods, "model.layers.0.mlp.gate_up_proj");
	cr_assert(qkv && gu);
	cr_expect_str_eq(qkv->vllm_type, "QKVParallelLinear");
	cr_expect_str_eq(gu->vllm_type, "MergedColumnParallelLinear");
	cr_expect_eq(qkv->out_features, (4 + 2 * 2) * 16);
	cr_expect_eq(gu->out_features, 2 * 96);
	cr_expect_eq(mods.n_fused, 0);
	ctq_modules_free(&mods);
	cJSON_Delete(cfg);
}

/* The runner refuses a tree it does not execute with "inspect and probe
 * only", exit 2 through invalid-config. */
Test(trees, runner_refuses_other_trees_clearly)
{
	cJSON *cfg = cJSON_Parse("{\"model_type\": \"qwen3_moe\", \"num_hidden_layers\": 1, \"hidden_size\": 8}");
	struct ctq_model_config mc;
	struct ctq_error err = {0};
	cr_expect_eq(ctq_model_config_parse(&mc, cfg, &err), CTQ_ERR_INVALID_CONFIG);
	cr_expect(strstr(err.message, "inspect and probe only"), "%s", err.message);
	cr_expect_str_eq(err.path, "model_type");
	cJSON_Delete(cfg);
}

/* transformers 5's fused expert tensors: each expert listed with its
 * features, held fused (compressed-tensors sees no Linear), the router no
 * Linear; the vLLM profile runs the block from expert 0, strict refuses. */
Test(trees, fused_expert_tensors_are_listed_per_expert)
{
	struct ctq_st_writer w;
	ctq_st_writer_init(&w);
	add_text(&w, "model.", false);
	/* drop-in MoE block beside the dense layer's tensors: layer 1 */
	struct ctq_error err = {0};
	static const int64_t gu[3] = {3, 2 * 4, H}, dn[3] = {3, H, 4};
	cr_assert_eq(ctq_st_writer_add(&w, "model.layers.1.mlp.experts.gate_up_proj", CTQ_DTYPE_BF16, 3, gu,
				       data, 3 * 8 * H * 2, &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(ctq_st_writer_add(&w, "model.layers.1.mlp.experts.down_proj", CTQ_DTYPE_BF16, 3, dn,
				       data, 3 * H * 4 * 2, &err), CTQ_OK, "%s", err.message);
	add(&w, "model.layers.1.mlp.gate.weight", 2, 3, H);
	static const char *const attn[] = {"q_proj", "k_proj", "v_proj", "o_proj"};
	char n[128];
	for (int i = 0; i < 4; i++) {
		snprintf(n, sizeof n, "model.layers.1.self_attn.%s.weight", attn[i]);
		add(&w, n, 2, H, H);
	}
	add(&w, "lm_head.weight", 2, V, H);
	char dir[] = "/tmp/ctq-trees-XXXXXX";
	write_checkpoint(dir, &w,
			 "{\"model_type\": \"qwen3_moe\", \"num_hidden_layers\": 2, \"mlp_only_layers\": [0], "
			 "\"hidden_size\": 8, \"intermediate_size\": 8, \"moe_intermediate_size\": 4, \"vocab_size\": 16, "
			 "\"num_attention_heads\": 2, "
			 "\"head_dim\": 4, " W8A8_LINEAR "}");
	struct ctq_qconfig cfg;
	struct ctq_modules mods;
	cr_assert_eq(load(dir, &cfg, &mods, &err), CTQ_OK, "%s", err.message);
	cr_expect_eq(mods.n_guessed, 0);
	cr_expect_eq(mods.n_moe, 1);
	cr_expect_eq(mods.moe[0].n_experts, 3);
	const struct ctq_module *up = expect_module(&mods, "model.layers.1.mlp.experts.2.up_proj", "Linear", false);
	const struct ctq_module *dp = expect_module(&mods, "model.layers.1.mlp.experts.0.down_proj", "Linear", false);
	const struct ctq_module *g = expect_module(&mods, "model.layers.1.mlp.gate", "Qwen3MoeTopKRouter", false);
	expect_module(&mods, "model.layers.0.mlp.down_proj", "Linear", false);
	cr_assert(up && dp && g);
	cr_expect(up->ct_fused && up->out_features == 4 && up->in_features == H);
	cr_expect(dp->out_features == H && dp->in_features == 4);
	cr_expect_eq(g->kind, CTQ_MODULE_OTHER);
	struct ctq_plan p[3];
	for (int s = 0; s < 3; s++)
		cr_assert_eq(ctq_plan_resolve(&p[s], &cfg, &mods, (enum ctq_semantics)s, NULL, &err), CTQ_OK,
			     "%s", err.message);
	const long i = ctq_modules_find(&mods, "model.layers.1.mlp.experts.2.up_proj");
	cr_expect_str_eq(p[CTQ_SEM_CT].entries[i].scheme, "unquantized");
	cr_expect_str_eq(p[CTQ_SEM_VLLM].entries[i].scheme, "w8a8-int8");
	cr_expect_str_eq(p[CTQ_SEM_VLLM].entries[i].vllm_class, "CompressedTensorsW8A8Int8MoEMethod");
	cr_expect_eq(p[CTQ_SEM_STRICT].entries[i].error, CTQ_ERR_ENGINE_DIVERGENT);
	cr_expect(!ctq_plan_executable(&p[CTQ_SEM_STRICT]));
	/* the loader reads a fused expert's rows of the 3-D tensor: expert 2's
	 * up_proj is rows [2 x 8 + 4, 2 x 8 + 8) of gate_up_proj viewed
	 * [3 x 8, H]; experts.1.down_proj rows [8, 16) of down_proj [3 x H, 4] */
	struct ctq_checkpoint ck;
	struct ctq_shard_plan sp;
	cr_assert_eq(ctq_checkpoint_open(&ck, dir, &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(ctq_shard_plan_build(&sp, &p[CTQ_SEM_CT], 1, &err), CTQ_OK, "%s", err.message);
	static const struct {
		const char *name;
		int64_t first; /* element offset of row 0 in the written data */
		int64_t n, k;
	} slices[] = {
		{"model.layers.1.mlp.experts.2.up_proj", (2 * 8 + 4) * H, 4, H},
		{"model.layers.1.mlp.experts.2.gate_proj", (2 * 8) * H, 4, H},
		{"model.layers.1.mlp.experts.1.down_proj", (1 * H) * 4, H, 4},
	};
	for (size_t k = 0; k < sizeof slices / sizeof *slices; k++) {
		struct ctq_linear lin;
		const long mi = ctq_modules_find(&mods, slices[k].name);
		cr_assert_eq(ctq_load_linear(&ck, &p[CTQ_SEM_CT], &sp, (size_t)mi, 0, &lin, &err), CTQ_OK, "%s: %s",
			     slices[k].name, err.message);
		cr_expect(lin.N == slices[k].n && lin.K == slices[k].k && lin.w_bf16, "%s", slices[k].name);
		for (int64_t x = 0; lin.w_bf16 && x < lin.N * lin.K; x++)
			cr_expect_eq(lin.w_bf16[x], data[slices[k].first + x], "%s [%lld]", slices[k].name,
				     (long long)x);
		ctq_linear_free(&lin);
	}
	ctq_shard_plan_free(&sp);
	ctq_checkpoint_close(&ck);
	for (int s = 0; s < 3; s++)
		ctq_plan_free(&p[s]);
	ctq_modules_free(&mods);
	ctq_qconfig_free(&cfg);
	remove_checkpoint(dir);
}

/* A vision-language config without tensors lists its tower and projector
 * (Llava: CLIP from vision_config; Qwen3-VL: visual blocks and mergers);
 * a DiT config its transformer blocks; each Linear with its features. */
Test(trees, vision_and_dit_configs_list_every_linear)
{
	static const struct {
		const char *cfg;
		const char *name;
		long out, in;
		size_t n;
	} cases[] = {
		{"{\"model_type\": \"llava\", \"text_config\": {\"model_type\": \"llama\", \"num_hidden_layers\": 1, "
		 "\"hidden_size\": 16}, \"vision_config\": {\"model_type\": \"clip_vision_model\", "
		 "\"num_hidden_layers\": 2, \"hidden_size\": 8, \"intermediate_size\": 24, \"image_size\": 16, "
		 "\"patch_size\": 4}, \"vision_feature_layer\": [-2, -1]}",
		 "model.multi_modal_projector.linear_1", 16, 2 * 8,
		 /* text 1+1+7+1, tower 1 + 2 x 6, projector 2 */ 10 + 13 + 2},
		{"{\"model_type\": \"llava\", \"text_config\": {\"model_type\": \"llama\", \"num_hidden_layers\": 1}, "
		 "\"vision_config\": {\"model_type\": \"clip_vision_model\", \"num_hidden_layers\": 1, "
		 "\"hidden_size\": 8, \"image_size\": 16, \"patch_size\": 4}}",
		 "model.vision_tower.vision_model.embeddings.position_embedding", 4 * 4 + 1, 8, 10 + 7 + 2},
		{"{\"model_type\": \"qwen3_vl\", \"text_config\": {\"model_type\": \"qwen3_vl_text\", "
		 "\"num_hidden_layers\": 1}, \"vision_config\": {\"depth\": 3, \"hidden_size\": 8, "
		 "\"out_hidden_size\": 16, \"deepstack_visual_indexes\": [0, 1]}, \"model_type\": \"qwen3_vl\"}",
		 "model.visual.deepstack_merger_list.1.linear_fc2", 16, 4 * 8, 10 + 1 + 3 * 4 + 3 * 2},
		{"{\"_class_name\": \"QwenImageTransformer2DModel\", \"num_layers\": 3, \"num_attention_heads\": 2, "
		 "\"attention_head_dim\": 8, \"out_channels\": 4, \"patch_size\": 2}",
		 "transformer_blocks.2.txt_mod.1", 6 * 16, 16, 4 + 3 * 14 + 2},
		{"{\"_class_name\": \"QwenImageTransformer2DModel\", \"num_layers\": 1, \"num_attention_heads\": 2, "
		 "\"attention_head_dim\": 8, \"out_channels\": 4, \"patch_size\": 2}",
		 "proj_out", 2 * 2 * 4, 16, 4 + 14 + 2},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		cJSON *cfg = cJSON_Parse(cases[i].cfg);
		cr_assert(cfg, "case %zu", i);
		struct ctq_modules mods;
		ctq_modules_init(&mods);
		struct ctq_error err = {0};
		cr_assert_eq(ctq_modules_from_config(&mods, cfg, "", NULL, &err), CTQ_OK, "case %zu: %s", i,
			     err.message);
		const struct ctq_module *x = ctq_modules_lookup(&mods, cases[i].name);
		cr_expect(x, "case %zu: no %s", i, cases[i].name);
		if (x)
			cr_expect(x->out_features == cases[i].out && x->in_features == cases[i].in,
				  "case %zu: %s is (%lld, %lld)", i, cases[i].name, (long long)x->out_features,
				  (long long)x->in_features);
		cr_expect_eq(mods.n, cases[i].n, "case %zu: %zu modules", i, mods.n);
		cr_expect_eq(mods.n_guessed, 0);
		ctq_modules_free(&mods);
		cJSON_Delete(cfg);
	}
	/* the runner refuses a DiT as inspect and probe only */
	cJSON *cfg = cJSON_Parse(cases[3].cfg);
	struct ctq_model_config mc;
	struct ctq_error err = {0};
	cr_expect_eq(ctq_model_config_parse(&mc, cfg, &err), CTQ_ERR_INVALID_CONFIG);
	cr_expect(strstr(err.message, "inspect and probe only"), "%s", err.message);
	cJSON_Delete(cfg);
}

/* ---- synthetic MoE and DiT checkpoints (make-model) --------------------- */

/* make-model writes a qwen3_moe and a qwen_image_dit whose tensors are the
 * config's tree (nothing guessed); quantize writes W8A8 for them (routers
 * left to vLLM's unquantized ReplicatedLinear) and the strict plan of the
 * result executes; probe --model runs every Linear on the reference; the
 * runner's commands refuse them as inspect and probe only. */
Test(trees, make_model_quantize_probe_moe_and_dit)
{
	static const struct {
		const char *arch;
		size_t n_modules, n_quantized;
		const char *linear; /* one module and its (out, in) */
		long out, in;
	} cases[] = {
		/* embed, 2 x (attention + 4 + router + 8 x 3), lm_head */
		{"qwen3_moe", 1 + 2 * (1 + 4 + 1 + 24) + 1, 2 * (4 + 24), "model.layers.1.mlp.experts.7.down_proj",
		 64, 32},
		/* 4 around, 2 x 14 per block, 2 out */
		{"qwen_image_dit", 4 + 2 * 14 + 2, 4 + 2 * 14 + 2, "transformer_blocks.1.img_mod.1", 6 * 64, 64},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char dir[] = "/tmp/ctq-trees-XXXXXX";
		cr_assert(mkdtemp(dir));
		char in[256], qout[256], cmd[1024], out[16384];
		snprintf(in, sizeof in, "%s/bf16", dir);
		snprintf(qout, sizeof qout, "%s/w8a8", dir);
		struct ctq_synth_spec spec;
		struct ctq_error err = {0};
		cr_assert_eq(ctq_synth_spec_init(&spec, cases[i].arch, "tiny", &err), CTQ_OK, "%s", err.message);
		cr_assert_eq(ctq_synth_write(&spec, in, 0, NULL, NULL, &err), CTQ_OK, "%s: %s", cases[i].arch,
			     err.message);
		struct ctq_qconfig cfg;
		struct ctq_modules mods;
		cr_assert_eq(load(in, &cfg, &mods, &err), CTQ_OK, "%s: %s", cases[i].arch, err.message);
		cr_expect_eq(mods.n_guessed, 0, "%s", cases[i].arch);
		cr_expect_eq(mods.n, cases[i].n_modules, "%s: %zu modules", cases[i].arch, mods.n);
		const struct ctq_module *x = ctq_modules_lookup(&mods, cases[i].linear);
		cr_expect(x && x->out_features == cases[i].out && x->in_features == cases[i].in, "%s: %s",
			  cases[i].arch, cases[i].linear);
		ctq_modules_free(&mods);
		ctq_qconfig_free(&cfg);
		snprintf(cmd, sizeof cmd, "%s quantize --quiet %s %s 2>&1", test_ctq_bin(), in, qout);
		cr_expect_eq(test_command(cmd, out, sizeof out), 0, "%s", out);
		char want[64];
		snprintf(want, sizeof want, " %zu module(s) quantized", cases[i].n_quantized);
		cr_expect(strstr(out, want), "%s: %s", want, out);
		snprintf(cmd, sizeof cmd, "%s inspect %s --check --semantics all 2>&1", test_ctq_bin(), qout);
		cr_expect_eq(test_command(cmd, out, sizeof out), 0, "%s", out);
		snprintf(cmd, sizeof cmd,
			 "%s probe --model %s --m 1,5 --weights random --acts gaussian --out %s/probe > %s/probe.log 2>&1",
			 test_ctq_bin(), qout, dir, dir);
		cr_expect_eq(test_command(cmd, out, sizeof out), 0, "%s", out);
		/* the module probed on its own geometry, and the verdict line */
		snprintf(cmd, sizeof cmd, "grep -c '^%s ' %s/probe.log; tail -1 %s/probe.log", cases[i].linear, dir, dir);
		cr_expect_eq(test_command(cmd, out, sizeof out), 0, "%s", out);
		cr_expect(atoi(out) >= 2 && strstr(out, " 0 failed"), "%s", out);
		snprintf(cmd, sizeof cmd, "%s generate --model %s --ids 1,2 2>&1", test_ctq_bin(), qout);
		cr_expect_eq(test_command(cmd, out, sizeof out), 2, "%s", out);
		cr_expect(strstr(out, "inspect and probe only"), "%s", out);
		remove_checkpoint(dir);
	}
}

/* An expert whose tensor has another shape than the config's tree gives is
 * refused where the tree is read (transformers' size mismatch). */
Test(trees, expert_shape_mismatch_is_a_checkpoint_error)
{
	struct ctq_st_writer w;
	ctq_st_writer_init(&w);
	add_text(&w, "model.", true);
	add(&w, "lm_head.weight", 2, V, H);
	char dir[] = "/tmp/ctq-trees-XXXXXX";
	write_checkpoint(dir, &w,
			 "{\"model_type\": \"qwen3_moe\", \"num_hidden_layers\": 1, \"hidden_size\": 8, "
			 "\"moe_intermediate_size\": 4}");
	struct ctq_qconfig cfg;
	struct ctq_modules mods;
	struct ctq_error err = {0};
	cr_expect_eq(load(dir, &cfg, &mods, &err), CTQ_ERR_CHECKPOINT);
	cr_expect_str_eq(err.path, "model.layers.0.mlp.experts.0.gate_proj");
	cr_expect(strstr(err.message, "[8, 8]") && strstr(err.message, "[4, 8]"), "%s", err.message);
	ctq_modules_free(&mods);
	ctq_qconfig_free(&cfg);
	remove_checkpoint(dir);
}

/* The MoE and DiT presets at real geometry (written only on the GPU host:
 * ~1.9 GB and ~0.8 GB per layer). */
Test(trees, moe_and_dit_presets_at_real_geometry)
{
	struct ctq_synth_spec s;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_synth_spec_init(&s, "qwen3_moe", "qwen3-30b-a3b-shape", &err), CTQ_OK, "%s", err.message);
	cr_expect(s.hidden_size == 2048 && s.num_hidden_layers == 48 && s.num_attention_heads == 32 &&
		  s.num_key_value_heads == 4 && s.head_dim == 128 && s.vocab_size == 151936);
	cr_expect(s.num_experts == 128 && s.num_experts_per_tok == 8 && s.moe_intermediate_size == 768);
	cr_assert_eq(ctq_synth_spec_init(&s, "qwen_image_dit", "qwen-image-shape", &err), CTQ_OK, "%s", err.message);
	cr_expect(s.num_hidden_layers == 60 && s.num_attention_heads * s.head_dim == 3072);
	cr_expect(s.in_channels == 64 && s.out_channels == 16 && s.joint_attention_dim == 3584);
	cr_assert_eq(ctq_synth_spec_init(&s, "qwen3_moe", "tiny", &err), CTQ_OK);
	cr_expect(s.num_experts == 8 && s.moe_intermediate_size == 32 && s.hidden_size == 64);
	cr_expect_eq(ctq_synth_spec_init(&s, "qwen3_moe", "qwen3-4b-shape", &err), CTQ_ERR_USAGE);
	cr_expect(strstr(err.message, "qwen3-30b-a3b-shape"), "%s", err.message);
	cr_expect_eq(ctq_synth_spec_init(&s, "qwen3", "qwen3-30b-a3b-shape", &err), CTQ_ERR_USAGE);
}

/* --arch without a config: a MoE row takes its configuration class's
 * defaults (Qwen3MoeConfig: 128 experts; DeepseekV3Config: 3 dense layers,
 * q_a_proj with q_lora_rank 1536, 256 experts, one shared expert). */
Test(trees, moe_arch_without_config_takes_the_class_defaults)
{
	static const struct {
		const char *arch;
		int layers;
		size_t n_moe, experts;
		const char *present, *absent;
	} cases[] = {
		{"qwen3_moe", 2, 2, 128, "model.layers.1.mlp.experts.127.up_proj", "model.layers.0.mlp.gate_proj"},
		{"mixtral", 1, 1, 8, "model.layers.0.block_sparse_moe.experts.7.w3", "model.layers.0.mlp.gate_proj"},
		{"deepseek_v3", 4, 1, 256, "model.layers.3.self_attn.q_a_proj", "model.layers.2.mlp.experts.0.up_proj"},
		{"qwen2_moe", 1, 1, 60, "model.layers.0.mlp.shared_expert_gate", "model.layers.0.mlp.experts.60.up_proj"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		struct ctq_modules mods;
		ctq_modules_init(&mods);
		struct ctq_error err = {0};
		cr_assert_eq(ctq_modules_from_arch(&mods, cases[i].arch, cases[i].layers, NULL, &err), CTQ_OK,
			     "%s: %s", cases[i].arch, err.message);
		cr_expect_eq(mods.n_moe, cases[i].n_moe, "%s", cases[i].arch);
		cr_expect(mods.n_moe && mods.moe[mods.n_moe - 1].n_experts == cases[i].experts, "%s", cases[i].arch);
		cr_expect(ctq_modules_lookup(&mods, cases[i].present), "%s: no %s", cases[i].arch, cases[i].present);
		cr_expect(!ctq_modules_lookup(&mods, cases[i].absent), "%s: %s listed", cases[i].arch,
			  cases[i].absent);
		ctq_modules_free(&mods);
	}
}

/* make-model's tree-only models carry every decoder layer's norms, the
 * last layer's too when a tied lm_head ends the module list (they were
 * missing, and transformers initialised them at random on load). */
Test(trees, synthetic_moe_has_every_layer_norm)
{
	char dir[] = "/tmp/ctq-trees-XXXXXX", cmd[512], out[4096];
	cr_assert(mkdtemp(dir));
	snprintf(cmd, sizeof cmd, "%s make-model --arch qwen3_moe --preset tiny --layers 3 --seed 1 --quiet %s/m 2>&1",
		 test_ctq_bin(), dir);
	cr_assert_eq(test_command(cmd, out, sizeof out), 0, "%s", out);
	char m[600];
	snprintf(m, sizeof m, "%s/m", dir);
	struct ctq_checkpoint ck;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_checkpoint_open(&ck, m, &err), CTQ_OK, "%s", err.message);
	for (int l = 0; l < 3; l++) {
		static const char *const norms[] = {"input_layernorm", "post_attention_layernorm",
						    "self_attn.q_norm", "self_attn.k_norm"};
		for (int i = 0; i < 4; i++) {
			char name[128];
			snprintf(name, sizeof name, "model.layers.%d.%s.weight", l, norms[i]);
			cr_expect(ctq_checkpoint_find(&ck, name, NULL) != NULL, "%s is missing", name);
		}
	}
	cr_expect(ctq_checkpoint_find(&ck, "model.norm.weight", NULL) != NULL);
	ctq_checkpoint_close(&ck);
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	cr_expect_eq(test_command(cmd, out, sizeof out), 0);
}

/* A DiT is a diffusers folder: make-model writes diffusion_pytorch_model.safetensors
 * (diffusers' name; it loads there), ctq opens it by that name, and quantize
 * keeps the name its input had. */
Test(trees, dit_checkpoint_keeps_diffusers_file_names)
{
	char dir[] = "/tmp/ctq-trees-XXXXXX", cmd[1024], out[4096];
	cr_assert(mkdtemp(dir));
	snprintf(cmd, sizeof cmd,
		 "%s make-model --arch qwen_image_dit --preset tiny --seed 1 --quiet %s/bf16 2>&1 && "
		 "%s quantize %s/bf16 %s/w8a8 --quiet 2>&1",
		 test_ctq_bin(), dir, test_ctq_bin(), dir, dir);
	cr_assert_eq(test_command(cmd, out, sizeof out), 0, "%s", out);
	static const char *const sub[] = {"bf16", "w8a8"};
	for (int i = 0; i < 2; i++) {
		char m[600], f[700];
		snprintf(m, sizeof m, "%s/%s", dir, sub[i]);
		snprintf(f, sizeof f, "%s/diffusion_pytorch_model.safetensors", m);
		cr_expect(access(f, F_OK) == 0, "%s is missing", f);
		snprintf(f, sizeof f, "%s/model.safetensors", m);
		cr_expect(access(f, F_OK) != 0, "%s was written", f);
		cr_expect(ctq_target_has_tensors(m));
		struct ctq_checkpoint ck;
		struct ctq_error err = {0};
		cr_assert_eq(ctq_checkpoint_open(&ck, m, &err), CTQ_OK, "%s", err.message);
		cr_expect_str_eq(ck.stem, CTQ_ST_DIFFUSERS_STEM);
		cr_expect(ctq_checkpoint_find(&ck, "transformer_blocks.0.attn.to_q.weight", NULL) != NULL);
		ctq_checkpoint_close(&ck);
	}
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	cr_expect_eq(test_command(cmd, out, sizeof out), 0);
}
