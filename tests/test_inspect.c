/* Criterion tests for what `ctq inspect` shows (quant/inspect.h), without
 * its printing:
 *   - the regex entries counted and the cost bound refused as invalid-config
 *     naming the path, before anything resolves;
 *   - one profile or all three resolved; the primary profile;
 *   - each module's cell and whether the profiles disagree, a profile with
 *     a config error included;
 *   - the shard plan over the primary profile, and its refusal;
 *   - the --json document: the profiles shown, profiles_disagree only under
 *     all, shards only with a shard plan, config errors, engine refusals;
 *   - `ctq inspect --check` (the binary): exit 1 on a config an engine
 *     refuses as a whole, 0 without --check. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"
#include "quant/inspect.h"
#include "tests/command.h"

/* examples/precedence.json's groups: Linear (G1, W8A8), re:.*down_proj
 * (G2, W4A16), layer 0's down_proj by name (G3, W8A8); lm_head ignored. */
#define PRECEDENCE                                                                                 \
	"{\"quantization_config\": {\"format\": \"int-quantized\", \"config_groups\": {"           \
	"\"G1\": " W8A8_SCHEME("[\"Linear\"]") ", \"G2\": " W4A16_SCHEME("[\"re:.*down_proj\"]")   \
	", \"G3\": " W8A8_SCHEME("[\"model.layers.0.mlp.down_proj\"]") "}, \"ignore\": [\"lm_head\"]}}"

struct fixture {
	struct ctq_qconfig cfg;
	struct ctq_modules mods;
};

static void fixture_load(struct fixture *f, const char *text, const char *arch, int layers)
{
	struct ctq_error err = {0};
	ctq_modules_init(&f->mods);
	cr_assert_eq(parse_text(&f->cfg, text, NULL, &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(ctq_modules_from_arch(&f->mods, arch, layers, NULL, &err), CTQ_OK, "%s",
		     err.message);
}

static void fixture_free(struct fixture *f)
{
	ctq_modules_free(&f->mods);
	ctq_qconfig_free(&f->cfg);
}

static size_t module(const struct fixture *f, const char *name)
{
	for (size_t i = 0; i < f->mods.n; i++)
		if (!strcmp(f->mods.v[i].name, name))
			return i;
	cr_assert_fail("no module %s", name);
	return 0;
}

TestSuite(inspect);

Test(inspect, regex_entries_and_the_cost_bound)
{
	static const struct {
		const char *config;
		size_t n;
	} cases[] = {
		{PRECEDENCE, 1},
		{"{\"quantization_config\": {\"config_groups\": {\"g\": " W8A8_SCHEME("[\"Linear\", \"re:a\", \"re:b\"]")
		 "}, \"ignore\": [\"re:c\", \"lm_head\"]}}",
		 3},
		{"{\"quantization_config\": {\"config_groups\": {\"g\": " W8A8_SCHEME("[\"Linear\"]") "}}}", 0},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		struct fixture f;
		fixture_load(&f, cases[i].config, "qwen3", 1);
		cr_expect_eq(ctq_inspect_regex_entries(&f.cfg), cases[i].n, "case %zu", i);
		fixture_free(&f);
	}
	/* 201 re: entries x the largest model (4096 layers) is over the bound;
	 * 200 would not be */
	char text[16384];
	size_t len = (size_t)snprintf(text, sizeof text,
				      "{\"quantization_config\": {\"config_groups\": {\"g\": {\"targets\": [");
	for (int i = 0; i < 201; i++)
		len += (size_t)snprintf(text + len, sizeof text - len, "%s\"re:x%d$\"", i ? ", " : "", i);
	snprintf(text + len, sizeof text - len, "], \"weights\": " W8A8_WEIGHTS "}}}}");
	struct fixture f;
	fixture_load(&f, text, "qwen3", 4096);
	cr_assert_eq(f.mods.n, 32770);
	struct ctq_inspection v;
	struct ctq_error err = {0};
	cr_expect_eq(ctq_inspect_resolve(&v, "cfg.json", &f.cfg, &f.mods, true, CTQ_SEM_STRICT, &err),
		     CTQ_ERR_INVALID_CONFIG);
	cr_expect_str_eq(err.path, "cfg.json");
	cr_expect(strstr(err.message, "201 re: targets and ignore entries x 32770 modules"), "%s",
		  err.message);
	for (int s = 0; s < CTQ_SEM_COUNT; s++)
		cr_expect(!v.have[s], "nothing resolves past the bound");
	ctq_inspect_free(&v);
	fixture_free(&f);
	cr_expect_eq(CTQ_INSPECT_MAX_REGEX_PAIRS / 32770, 200);
}

Test(inspect, one_profile_or_all)
{
	struct fixture f;
	fixture_load(&f, PRECEDENCE, "qwen3", 2);
	struct ctq_inspection v;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_inspect_resolve(&v, "p", &f.cfg, &f.mods, false, CTQ_SEM_VLLM, &err), CTQ_OK);
	cr_expect_eq(ctq_inspect_primary(&v), CTQ_SEM_VLLM);
	cr_expect(v.have[CTQ_SEM_VLLM] && !v.have[CTQ_SEM_STRICT] && !v.have[CTQ_SEM_CT]);
	ctq_inspect_free(&v);
	cr_assert_eq(ctq_inspect_resolve(&v, "p", &f.cfg, &f.mods, true, CTQ_SEM_VLLM, &err), CTQ_OK);
	cr_expect_eq(ctq_inspect_primary(&v), CTQ_SEM_STRICT, "all: strict decides");
	for (int s = 0; s < CTQ_SEM_COUNT; s++)
		cr_expect(v.have[s]);
	ctq_inspect_free(&v);
	fixture_free(&f);
}

Test(inspect, cells_and_disagreements)
{
	struct fixture f;
	fixture_load(&f, PRECEDENCE, "qwen3", 2);
	struct ctq_inspection v;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_inspect_resolve(&v, "p", &f.cfg, &f.mods, true, CTQ_SEM_STRICT, &err), CTQ_OK);
	char buf[160];
	static const struct {
		const char *module;
		enum ctq_semantics sem;
		const char *cell;
	} cells[] = {
		{"model.layers.0.self_attn.q_proj", CTQ_SEM_STRICT, "w8a8-int8 G1/type"},
		{"model.layers.0.mlp.down_proj", CTQ_SEM_STRICT, "w8a8-int8 G3/name"},
		{"model.layers.1.mlp.down_proj", CTQ_SEM_STRICT, "!unsupported-scheme"},
		{"model.layers.1.mlp.down_proj", CTQ_SEM_CT, "w4a16 G2/regex"},
		{"model.embed_tokens", CTQ_SEM_CT, "unquantized -/default"},
		{"lm_head", CTQ_SEM_VLLM, "unquantized -/ignore"},
	};
	for (size_t i = 0; i < sizeof cells / sizeof *cells; i++) {
		ctq_inspect_cell(&v, cells[i].sem, module(&f, cells[i].module), buf, sizeof buf);
		cr_expect_str_eq(buf, cells[i].cell, "%s under %s", cells[i].module,
				 ctq_semantics_name(cells[i].sem));
	}
	size_t q = module(&f, "model.layers.0.self_attn.q_proj");
	cr_expect(!ctq_inspect_disagree(&v, q), "q_proj is G1 everywhere");
	cr_expect(ctq_inspect_disagree(&v, module(&f, "model.layers.1.mlp.down_proj")),
		  "strict cannot execute W4A16, ct and vllm resolve it");
	/* a profile that failed: its cells say so, and every module disagrees
	 * with the profiles that resolved */
	ctq_plan_free(&v.plans[CTQ_SEM_CT]);
	v.have[CTQ_SEM_CT] = false;
	ctq_error_set(&v.errs[CTQ_SEM_CT], CTQ_ERR_INVALID_CONFIG, "quantization_config", "test");
	ctq_inspect_cell(&v, CTQ_SEM_CT, q, buf, sizeof buf);
	cr_expect_str_eq(buf, "!config-error");
	cr_expect(ctq_inspect_disagree(&v, q));
	cJSON *doc = ctq_inspect_json(&v, "p.json");
	cr_assert(doc);
	const cJSON *ce = ctq_json_get(ctq_json_get(doc, "config_errors"), "ct");
	cr_assert(ce, "no config error for ct in the JSON");
	cr_expect_str_eq(ctq_json_get(ce, "class")->valuestring, "invalid-config");
	cr_expect_str_eq(ctq_json_get(ce, "message")->valuestring, "test");
	const cJSON *m0 = cJSON_GetArrayItem(ctq_json_get(doc, "modules"), (int)q);
	cr_expect_null(ctq_json_get(m0, "ct"), "a failed profile has no entries");
	cr_expect(cJSON_IsTrue(ctq_json_get(m0, "profiles_disagree")));
	cJSON_Delete(doc);
	ctq_inspect_free(&v);
	fixture_free(&f);
}

Test(inspect, json_shows_the_profiles_and_shards_asked_for)
{
	struct fixture f;
	fixture_load(&f, PRECEDENCE, "qwen3", 2);
	struct ctq_inspection v;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_inspect_resolve(&v, "p", &f.cfg, &f.mods, false, CTQ_SEM_CT, &err), CTQ_OK);
	cJSON *doc = ctq_inspect_json(&v, "p.json");
	cr_assert(doc);
	cr_expect_str_eq(ctq_json_get(doc, "path")->valuestring, "p.json");
	const cJSON *cfg = ctq_json_get(doc, "config");
	cr_expect_eq(cJSON_GetArraySize(ctq_json_get(cfg, "groups")), 3);
	const cJSON *mods = ctq_json_get(doc, "modules");
	cr_assert_eq(cJSON_GetArraySize(mods), (int)f.mods.n);
	size_t d = module(&f, "model.layers.1.mlp.down_proj");
	const cJSON *m = cJSON_GetArrayItem(mods, (int)d);
	cr_expect_str_eq(ctq_json_get(m, "name")->valuestring, "model.layers.1.mlp.down_proj");
	const cJSON *ct = ctq_json_get(m, "ct");
	cr_assert(ct);
	cr_expect_str_eq(ctq_json_get(ct, "group")->valuestring, "G2");
	cr_expect_str_eq(ctq_json_get(ct, "by")->valuestring, "regex");
	cr_expect_null(ctq_json_get(m, "strict"), "only the profile shown");
	cr_expect_null(ctq_json_get(m, "profiles_disagree"), "only under all");
	cr_expect_null(ctq_json_get(m, "shards"), "no shard plan asked for");
	cr_expect_eq(cJSON_GetArraySize(ctq_json_get(doc, "config_errors")), 0);
	cJSON_Delete(doc);

	/* qwen3 tiny-like shape from arch: the shard plan needs the model's
	 * sizes, which an architecture name alone does not give */
	struct ctq_error serr = {0};
	cr_expect_neq(ctq_inspect_shards(&v, 2, &serr), CTQ_OK);
	cr_expect(!v.have_sp);
	ctq_inspect_free(&v);
	fixture_free(&f);
}

Test(inspect, shards_over_the_primary_profile)
{
	/* a config.json with the model's shape: tp 2 divides its 4 heads and 2
	 * kv heads, tp 3 does not */
	static const char *const text =
		"{\"model_type\": \"qwen3\", \"num_hidden_layers\": 1, \"hidden_size\": 64,"
		" \"intermediate_size\": 176, \"vocab_size\": 512, \"num_attention_heads\": 4,"
		" \"num_key_value_heads\": 2, \"head_dim\": 16,"
		" \"quantization_config\": {\"config_groups\": {\"g\": " W8A8_SCHEME("[\"Linear\"]")
		"}, \"ignore\": [\"lm_head\"]}}";
	struct fixture f;
	struct ctq_error err = {0};
	ctq_modules_init(&f.mods);
	cr_assert_eq(parse_text(&f.cfg, text, NULL, &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(ctq_modules_from_config(&f.mods, f.cfg.raw, "", NULL, &err), CTQ_OK, "%s",
		     err.message);
	struct ctq_inspection v;
	cr_assert_eq(ctq_inspect_resolve(&v, "c", &f.cfg, &f.mods, true, CTQ_SEM_VLLM, &err), CTQ_OK);
	cr_assert_eq(ctq_inspect_shards(&v, 2, &err), CTQ_OK, "%s", err.message);
	cr_expect(v.have_sp);
	cr_expect_eq(v.sp.tp, 2);
	cJSON *doc = ctq_inspect_json(&v, "c");
	cr_assert(doc);
	size_t q = module(&f, "model.layers.0.self_attn.q_proj");
	const cJSON *sh = ctq_json_get(cJSON_GetArrayItem(ctq_json_get(doc, "modules"), (int)q), "shards");
	cr_assert(cJSON_IsArray(sh), "q_proj has no shards");
	cr_expect_eq(cJSON_GetArraySize(sh), 2);
	const cJSON *r1 = cJSON_GetArrayItem(sh, 1);
	cr_expect_eq(ctq_json_get(r1, "rank")->valueint, 1);
	const cJSON *rows = ctq_json_get(r1, "weight_rows");
	cr_expect_eq(cJSON_GetArrayItem(rows, 0)->valueint, 32);
	cr_expect_eq(cJSON_GetArrayItem(rows, 1)->valueint, 64);
	cJSON_Delete(doc);
	ctq_inspect_free(&v);
	cr_assert_eq(ctq_inspect_resolve(&v, "c", &f.cfg, &f.mods, true, CTQ_SEM_STRICT, &err), CTQ_OK);
	err = (struct ctq_error){0};
	cr_expect_eq(ctq_inspect_shards(&v, 3, &err), CTQ_ERR_SHARD_INVALID);
	cr_expect(!v.have_sp);
	ctq_inspect_free(&v);
	fixture_free(&f);
}

/* A layer count out of range is named with the value as written and the
 * limit: 1e9 once read "is 4097" (the clamp's value, not the config's). */
Test(inspect, layer_count_out_of_range_says_the_value_and_the_limit)
{
	static const struct {
		const char *layers, *says;
	} cases[] = {
		{"1e9", "is 1000000000; expected an integer in [1, 4096]"},
		{"4097", "is 4097; expected an integer in [1, 4096]"},
		{"3e10", "is 30000000000; expected an integer in [1, 4096]"},
		{"0", "is 0; expected an integer in [1, 4096]"},
		{"2.5", "is 2.5; expected an integer"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char text[256];
		snprintf(text, sizeof text, "{\"model_type\": \"qwen3\", \"num_hidden_layers\": %s}",
			 cases[i].layers);
		cJSON *cfg = cJSON_Parse(text);
		cr_assert(cfg);
		struct ctq_modules mods;
		ctq_modules_init(&mods);
		struct ctq_error err = {0};
		cr_expect_eq(ctq_modules_from_config(&mods, cfg, "config.json", NULL, &err),
			     CTQ_ERR_INVALID_CONFIG, "%s", cases[i].layers);
		cr_expect(strstr(err.path, "num_hidden_layers"), "%s: path %s", cases[i].layers, err.path);
		cr_expect_str_eq(err.message, cases[i].says, "%s", cases[i].layers);
		ctq_modules_free(&mods);
		cJSON_Delete(cfg);
	}
	/* the limit itself is accepted */
	cJSON *cfg = cJSON_Parse("{\"model_type\": \"llama\", \"num_hidden_layers\": 4096}");
	struct ctq_modules mods;
	ctq_modules_init(&mods);
	struct ctq_error err = {0};
	cr_expect_eq(ctq_modules_from_config(&mods, cfg, "config.json", NULL, &err), CTQ_OK, "%s",
		     err.message);
	cr_expect_eq(mods.shape.layers, 4096);
	ctq_modules_free(&mods);
	cJSON_Delete(cfg);
}

/* vLLM refuses a preset-list group as a whole (TypeError in from_config);
 * compressed-tensors loads it and, its only target ignored, quantizes
 * nothing: no module diverges, the refusal alone fails --check. */
#define REFUSED_BY_VLLM                                                                            \
	"{\"model_type\": \"llama\", \"num_hidden_layers\": 1, \"quantization_config\": {"         \
	"\"format\": \"pack-quantized\", \"config_groups\": {\"W4A16\": [\"lm_head\"]}, "          \
	"\"ignore\": [\"lm_head\"]}}"

Test(inspect, json_shows_an_engine_refusal)
{
	struct fixture f;
	fixture_load(&f, REFUSED_BY_VLLM, "llama", 1);
	struct ctq_inspection v;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_inspect_resolve(&v, "p", &f.cfg, &f.mods, true, CTQ_SEM_STRICT, &err), CTQ_OK);
	cJSON *doc = ctq_inspect_json(&v, "p.json");
	cr_assert(doc);
	const cJSON *r = ctq_json_get(ctq_json_get(doc, "config_refusals"), "strict");
	cr_assert(r, "strict's refusal is in config_refusals");
	cr_expect_str_eq(ctq_json_get(r, "class")->valuestring, "engine-divergent");
	cr_expect_str_eq(ctq_json_get(r, "path")->valuestring, "quantization_config.config_groups.W4A16");
	cr_expect(strstr(ctq_json_get(r, "message")->valuestring, "vLLM refuses the whole config"));
	const cJSON *ve = ctq_json_get(ctq_json_get(doc, "config_errors"), "vllm");
	cr_assert(ve, "vllm's own config error stays in config_errors");
	cr_expect_str_eq(ctq_json_get(ve, "class")->valuestring, "invalid-config");
	cr_expect_null(ctq_json_get(ctq_json_get(doc, "config_refusals"), "ct"));
	cJSON_Delete(doc);
	ctq_inspect_free(&v);
	fixture_free(&f);
}

Test(inspect, check_exits_1_when_an_engine_refuses_the_config)
{
	char path[] = "/tmp/ctq-inspect-XXXXXX";
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	FILE *fp = fdopen(fd, "w");
	cr_assert(fp);
	fputs(REFUSED_BY_VLLM, fp);
	fclose(fp);
	char cmd[512], out[8192];
	snprintf(cmd, sizeof cmd, "%s inspect %s --check 2>&1", test_ctq_bin(), path);
	cr_expect_eq(test_command(cmd, out, sizeof out), 1, "%s", out);
	cr_expect(strstr(out, "[strict] config refused: engine-divergent at quantization_config.config_groups.W4A16"),
		  "%s", out);
	snprintf(cmd, sizeof cmd, "%s inspect %s 2>&1", test_ctq_bin(), path);
	cr_expect_eq(test_command(cmd, out, sizeof out), 0, "shown, not checked: %s", out);
	snprintf(cmd, sizeof cmd, "%s inspect %s --semantics all --check 2>&1", test_ctq_bin(), path);
	cr_expect_eq(test_command(cmd, out, sizeof out), 1, "%s", out);
	cr_expect(strstr(out, "[strict] config refused: engine-divergent") &&
		  strstr(out, "[vllm] config error: invalid-config at quantization_config.config_groups.W4A16"),
		  "%s", out);
	unlink(path);
}
