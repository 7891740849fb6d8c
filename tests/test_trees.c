/* Criterion tests for the module tree a plan covers (quant/modules.h,
 * checkpoint/target.h; DESIGN.md "Module trees"):
 *   - an architecture named beside a config (--arch, a suite's model.arch)
 *     that contradicts its model_type is refused, naming both;
 *   - `ctq inspect --arch` on such a config exits 2;
 *   - a *ForSequenceClassification config has the head score (vLLM
 *     ReplicatedLinear, hidden -> num_labels) and no lm_head. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoint/target.h"
#include "quant/modules.h"
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
