/* Criterion tests for the module tree a plan covers (quant/modules.h,
 * checkpoint/target.h; DESIGN.md "Module trees"):
 *   - an architecture named beside a config (--arch, a suite's model.arch)
 *     that contradicts its model_type is refused, naming both;
 *   - `ctq inspect --arch` on such a config exits 2. */
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
