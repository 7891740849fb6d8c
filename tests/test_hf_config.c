/* core/hf_config: the one reader of config.json and its layout rules (the
 * object at the root, text_config, the context length). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/hf_config.h"
#include "core/sha256.h"

static char dir[64];

static void make_dir(void)
{
	snprintf(dir, sizeof dir, "/tmp/ctq-hfconfig-XXXXXX");
	cr_assert(mkdtemp(dir));
}

static void write_config(const char *text)
{
	char p[128];
	snprintf(p, sizeof p, "%s/config.json", dir);
	FILE *f = fopen(p, "w");
	cr_assert(f);
	fputs(text, f);
	fclose(f);
}

static void drop_dir(void)
{
	char p[128];
	snprintf(p, sizeof p, "%s/config.json", dir);
	unlink(p);
	rmdir(dir);
}

static cJSON *parse(const char *text)
{
	cJSON *j = cJSON_Parse(text);
	cr_assert(j, "bad test JSON: %s", text);
	return j;
}

Test(hf_config, loads_a_folder_or_its_file_with_the_digest, .init = make_dir, .fini = drop_dir)
{
	const char *text = "{\"model_type\": \"qwen3\", \"max_position_embeddings\": 4096}";
	write_config(text);
	unsigned char d[CTQ_SHA256_BYTES];
	char want[CTQ_SHA256_HEX], got[CTQ_SHA256_HEX], file[256];
	ctq_sha256(text, strlen(text), d);
	ctq_sha256_hex(d, want);
	cJSON *root = NULL;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_hf_config_load(dir, &root, got, file, sizeof file, &err), CTQ_OK, "%s", err.message);
	cr_expect_str_eq(got, want);
	char expect_file[128];
	snprintf(expect_file, sizeof expect_file, "%s/config.json", dir);
	cr_expect_str_eq(file, expect_file);
	cr_expect(cJSON_IsObject(root));
	cJSON_Delete(root);
	root = NULL;
	cr_assert_eq(ctq_hf_config_load(expect_file, &root, NULL, NULL, 0, &err), CTQ_OK, "%s", err.message);
	cJSON_Delete(root);
}

/* Every command reads config.json here: a root that is not an object is
 * one error (invalid-config) naming the file, whichever command asks. */
Test(hf_config, a_root_that_is_not_an_object_names_the_file, .init = make_dir, .fini = drop_dir)
{
	static const char *const texts[] = {"[1, 2]", "\"qwen3\"", "7", "null"};
	static const char *const names[] = {"array", "string", "number", "null"};
	char expect_file[128];
	snprintf(expect_file, sizeof expect_file, "%s/config.json", dir);
	for (size_t i = 0; i < 4; i++) {
		write_config(texts[i]);
		cJSON *root = (cJSON *)1;
		struct ctq_error err = {0};
		cr_expect_eq(ctq_hf_config_load(dir, &root, NULL, NULL, 0, &err), CTQ_ERR_INVALID_CONFIG, "%s",
			     texts[i]);
		cr_expect_null(root);
		cr_expect_str_eq(err.path, expect_file);
		cr_expect(strstr(err.message, names[i]), "%s: %s", texts[i], err.message);
	}
	write_config("{\"a\": ");
	cJSON *root = NULL;
	struct ctq_error err = {0};
	cr_expect_eq(ctq_hf_config_load(dir, &root, NULL, NULL, 0, &err), CTQ_ERR_PARSE);
	cr_expect(strstr(err.path, "config.json"), "%s", err.path);
	struct ctq_error err2 = {0};
	cr_expect_eq(ctq_hf_config_load("/nonexistent-ctq-model", &root, NULL, NULL, 0, &err2), CTQ_ERR_IO);
	cr_expect(strstr(err2.path, "/nonexistent-ctq-model"), "%s", err2.path);
}

Test(hf_config, text_config_holds_the_language_model_when_it_has_its_layers)
{
	cJSON *vlm = parse("{\"model_type\": \"qwen2_5_vl\", \"text_config\": {\"model_type\": \"qwen2\", "
			   "\"num_hidden_layers\": 28}, \"vision_config\": {\"depth\": 32}}");
	const char *where = NULL;
	cr_expect_eq(ctq_hf_config_text(vlm, &where), ctq_json_get(vlm, "text_config"));
	cr_expect_str_eq(where, "text_config");
	/* a text_config without the fields (a stub some exporters write) is not it */
	cJSON *stub = parse("{\"model_type\": \"qwen3\", \"num_hidden_layers\": 2, \"text_config\": {}}");
	cr_expect_eq(ctq_hf_config_text(stub, &where), stub);
	cr_expect_str_eq(where, "");
	cJSON *plain = parse("{\"model_type\": \"llama\", \"num_hidden_layers\": 2}");
	cr_expect_eq(ctq_hf_config_text(plain, NULL), plain);
	cJSON_Delete(vlm);
	cJSON_Delete(stub);
	cJSON_Delete(plain);
}

/* One context rule: the language model's max_position_embeddings, the
 * root's when text_config lacks it, 0 when neither has one; a bad value
 * names its field. */
Test(hf_config, one_context_rule)
{
	static const struct {
		const char *json;
		enum ctq_status st;
		int64_t ctx;
		const char *path;
	} c[] = {
		{"{\"max_position_embeddings\": 40960}", CTQ_OK, 40960, NULL},
		{"{\"max_position_embeddings\": 8192, \"text_config\": {\"num_hidden_layers\": 2, "
		 "\"max_position_embeddings\": 128000}}",
		 CTQ_OK, 128000, NULL},
		{"{\"max_position_embeddings\": 8192, \"text_config\": {\"num_hidden_layers\": 2}}", CTQ_OK, 8192,
		 NULL},
		{"{\"num_hidden_layers\": 2}", CTQ_OK, 0, NULL},
		{"{\"max_position_embeddings\": \"4096\"}", CTQ_ERR_INVALID_CONFIG, 0, "max_position_embeddings"},
		{"{\"text_config\": {\"num_hidden_layers\": 2, \"max_position_embeddings\": 0}}",
		 CTQ_ERR_INVALID_CONFIG, 0, "text_config.max_position_embeddings"},
		{"{\"max_position_embeddings\": 4096.5}", CTQ_ERR_INVALID_CONFIG, 0, "max_position_embeddings"},
	};
	for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
		cJSON *j = parse(c[i].json);
		int64_t ctx = -1;
		struct ctq_error err = {0};
		cr_expect_eq(ctq_hf_config_context(j, &ctx, &err), c[i].st, "%s: %s", c[i].json, err.message);
		cr_expect_eq(ctx, c[i].ctx, "%s: %lld", c[i].json, (long long)ctx);
		if (c[i].path)
			cr_expect_str_eq(err.path, c[i].path, "%s", c[i].json);
		cJSON_Delete(j);
	}
}
