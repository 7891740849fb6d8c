/* Criterion tests for quant/resolve: precedence, ambiguity, ignore, fused
 * sets, fail-closed schemes, per profile (docs/semantics.md, spec §5–§6). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "helpers.h"
#include "core/arena.h"

#define CFG(groups, extra) "{\"quantization_config\": {\"format\": \"int-quantized\"" extra ", \"config_groups\": {" groups "}}}"
#define L0DOWN "model.layers.0.mlp.down_proj"
#define L1DOWN "model.layers.1.mlp.down_proj"
#define L0Q "model.layers.0.self_attn.q_proj"
#define L0K "model.layers.0.self_attn.k_proj"
#define L0V "model.layers.0.self_attn.v_proj"

/* M6/M7: Linear (G1), re:.*down_proj (G2), exact layer-0 down_proj (G3). */
#define PRECEDENCE CFG("\"G1\": " W8A8_SCHEME("[\"Linear\"]") ", \"G2\": " W8A8_SCHEME("[\"re:.*down_proj\"]") ", \"G3\": " W8A8_SCHEME("[\"" L0DOWN "\"]"), "")
#define PRECEDENCE_REVERSED CFG("\"G3\": " W8A8_SCHEME("[\"" L0DOWN "\"]") ", \"G2\": " W8A8_SCHEME("[\"re:.*down_proj\"]") ", \"G1\": " W8A8_SCHEME("[\"Linear\"]"), "")

static void expect_entry(const struct resolved *r, const char *module, const char *scheme,
			 const char *group, const char *by)
{
	const struct ctq_plan_entry *e = entry(r, module);
	cr_expect_eq(e->error, CTQ_OK, "%s: %s", module, e->message ? e->message : "");
	if (e->error)
		return;
	cr_expect_str_eq(e->scheme, scheme, "%s scheme", module);
	cr_expect_str_eq(group_of(r, e), group, "%s group", module);
	cr_expect_str_eq(ctq_match_by_name(e->by), by, "%s by", module);
}

static void expect_error(const struct resolved *r, const char *module, enum ctq_status cls,
			 const char *contains)
{
	const struct ctq_plan_entry *e = entry(r, module);
	cr_expect_eq(e->error, cls, "%s: %s (%s)", module, ctq_status_name(e->error),
		     e->message ? e->message : e->scheme);
	if (contains && e->message)
		cr_expect(strstr(e->message, contains), "%s: message lacks '%s': %s", module,
			  contains, e->message);
}

Test(resolve, strict_exact_beats_regex_beats_type)
{
	const char *cfgs[] = {PRECEDENCE, PRECEDENCE_REVERSED};
	for (int i = 0; i < 2; i++) {
		struct resolved r;
		resolve_text(&r, cfgs[i], "qwen3", 2, CTQ_SEM_STRICT);
		cr_assert_eq(r.st, CTQ_OK, "%s", r.err.message);
		expect_entry(&r, L0DOWN, "w8a8-int8", "G3", "name");
		expect_entry(&r, L1DOWN, "w8a8-int8", "G2", "regex");
		expect_entry(&r, L0Q, "w8a8-int8", "G1", "type");
		/* lm_head through Linear: compressed-tensors quantizes it,
		 * vLLM's ParallelLMHead is no "linear" substring. */
		expect_error(&r, "lm_head", CTQ_ERR_ENGINE_DIVERGENT,
			     "compressed-tensors gives w8a8-int8");
		expect_entry(&r, "model.embed_tokens", "unquantized", "-", "default");
		resolved_free(&r);
	}
}

Test(resolve, ct_and_vllm_precedence_differ)
{
	struct resolved r;
	resolve_text(&r, PRECEDENCE, "qwen3", 2, CTQ_SEM_CT);
	cr_assert_eq(r.st, CTQ_OK, "%s", r.err.message);
	expect_entry(&r, L0DOWN, "w8a8-int8", "G3", "name");
	expect_entry(&r, L1DOWN, "w8a8-int8", "G2", "regex");
	resolved_free(&r);
	resolve_text(&r, PRECEDENCE, "qwen3", 2, CTQ_SEM_VLLM);
	cr_assert_eq(r.st, CTQ_OK, "%s", r.err.message);
	expect_entry(&r, L0DOWN, "w8a8-int8", "G2", "regex");
	expect_entry(&r, L1DOWN, "w8a8-int8", "G2", "regex");
	expect_entry(&r, L0Q, "w8a8-int8", "G1", "type");
	resolved_free(&r);
}

Test(resolve, regex_ranking_ct_alphabetical_vllm_file_order)
{
	/* M8: A re:.*proj, B re:.*down_proj; M9: A re:.*_proj. */
	struct resolved r;
	const char *m8 = CFG("\"A\": " W8A8_SCHEME("[\"re:.*proj\"]") ", \"B\": " W8A8_SCHEME("[\"re:.*down_proj\"]"), "");
	resolve_text(&r, m8, "qwen3", 1, CTQ_SEM_CT);
	expect_entry(&r, L0DOWN, "w8a8-int8", "B", "regex");
	resolved_free(&r);
	resolve_text(&r, m8, "qwen3", 1, CTQ_SEM_VLLM);
	expect_entry(&r, L0DOWN, "w8a8-int8", "A", "regex");
	resolved_free(&r);
	resolve_text(&r, m8, "qwen3", 1, CTQ_SEM_STRICT);
	expect_error(&r, L0DOWN, CTQ_ERR_AMBIGUOUS_MATCH, "A (\"re:.*proj\")");
	expect_error(&r, L0DOWN, CTQ_ERR_AMBIGUOUS_MATCH, "B (\"re:.*down_proj\")");
	resolved_free(&r);
	const char *m9 = CFG("\"A\": " W8A8_SCHEME("[\"re:.*_proj\"]") ", \"B\": " W8A8_SCHEME("[\"re:.*down_proj\"]"), "");
	resolve_text(&r, m9, "qwen3", 1, CTQ_SEM_CT);
	expect_entry(&r, L0DOWN, "w8a8-int8", "A", "regex");
	resolved_free(&r);
}

Test(resolve, same_target_in_two_groups)
{
	/* M10: G0 Linear (w8a8), G1 Linear (w4a16). */
	const char *t = CFG("\"G0\": " W8A8_SCHEME("[\"Linear\"]") ", \"G1\": " W4A16_SCHEME("[\"Linear\"]"), "");
	struct resolved r;
	resolve_text(&r, t, "llama", 1, CTQ_SEM_STRICT);
	expect_error(&r, L0Q, CTQ_ERR_AMBIGUOUS_MATCH, "G0");
	expect_error(&r, L0Q, CTQ_ERR_AMBIGUOUS_MATCH, "G1");
	resolved_free(&r);
	for (int s = CTQ_SEM_CT; s <= CTQ_SEM_VLLM; s++) {
		resolve_text(&r, t, "llama", 1, (enum ctq_semantics)s);
		expect_entry(&r, L0Q, "w4a16", "G1", "type");
		resolved_free(&r);
	}
}

Test(resolve, two_class_targets_ambiguous_under_strict)
{
	const char *t = CFG("\"G0\": " W8A8_SCHEME("[\"Module\"]") ", \"G1\": " W8A8_SCHEME("[\"Linear\"]"), "");
	struct resolved r;
	resolve_text(&r, t, "qwen2", 1, CTQ_SEM_STRICT);
	expect_error(&r, L0DOWN, CTQ_ERR_AMBIGUOUS_MATCH, "type");
	resolved_free(&r);
	resolve_text(&r, t, "qwen2", 1, CTQ_SEM_CT);
	expect_entry(&r, L0DOWN, "w8a8-int8", "G1", "type"); /* "Linear" < "Module" */
	resolved_free(&r);
}

Test(resolve, same_group_several_targets_not_ambiguous)
{
	const char *t = CFG("\"G0\": " W8A8_SCHEME("[\"re:.*proj\", \"re:.*down_proj\"]"), "");
	struct resolved r;
	resolve_text(&r, t, "qwen3", 1, CTQ_SEM_STRICT);
	expect_entry(&r, L0DOWN, "w8a8-int8", "G0", "regex");
	resolved_free(&r);
}

Test(resolve, regex_is_re_match)
{
	struct resolved r;
	/* M2: re:q_proj never matches a dotted path; M18: '.' is a wildcard. */
	resolve_text(&r, CFG("\"G\": " W8A8_SCHEME("[\"re:q_proj\", \"re:model.layers.0.self_attn.o.proj\"]"), ""),
		     "qwen3", 1, CTQ_SEM_STRICT);
	expect_entry(&r, L0Q, "unquantized", "-", "default");
	expect_entry(&r, "model.layers.0.self_attn.o_proj", "w8a8-int8", "G", "regex");
	resolved_free(&r);
	/* M4: an explicit end anchor. */
	resolve_text(&r, CFG("\"G\": " W8A8_SCHEME("[\"re:.*self_attn$\"]"), ""), "qwen3", 1, CTQ_SEM_CT);
	expect_entry(&r, L0Q, "unquantized", "-", "default");
	resolved_free(&r);
}

Test(resolve, ignore_wins_and_can_be_a_class)
{
	const char *t = CFG("\"G\": " W8A8_SCHEME("[\"lm_head\", \"Linear\"]"), ", \"ignore\": [\"lm_head\", \"re:.*layers\\\\.1\\\\..*\"]");
	struct resolved r;
	resolve_text(&r, t, "qwen3", 2, CTQ_SEM_STRICT);
	cr_assert_eq(r.st, CTQ_OK, "%s", r.err.message);
	expect_entry(&r, "lm_head", "unquantized", "-", "ignore");
	expect_entry(&r, L1DOWN, "unquantized", "-", "ignore");
	expect_entry(&r, L0DOWN, "w8a8-int8", "G", "type");
	resolved_free(&r);
	/* M16: class names in ignore work in ct, not in vllm. */
	const char *m16 = CFG("\"G\": " W8A8_SCHEME("[\"Linear\"]"), ", \"ignore\": [\"Linear\"]");
	resolve_text(&r, m16, "qwen3", 1, CTQ_SEM_CT);
	expect_entry(&r, L0DOWN, "unquantized", "-", "ignore");
	resolved_free(&r);
	resolve_text(&r, m16, "qwen3", 1, CTQ_SEM_VLLM);
	expect_entry(&r, L0DOWN, "w8a8-int8", "G", "type");
	resolved_free(&r);
}

Test(resolve, strict_fused_members_must_agree)
{
	const char *t = CFG("\"G\": " W8A8_SCHEME("[\"Linear\"]"), ", \"ignore\": [\"" L0Q "\"]");
	struct resolved r;
	resolve_text(&r, t, "qwen3", 2, CTQ_SEM_STRICT);
	expect_error(&r, L0Q, CTQ_ERR_FUSED_MISMATCH, "k_proj w8a8-int8");
	expect_error(&r, L0K, CTQ_ERR_FUSED_MISMATCH, "q_proj unquantized");
	expect_error(&r, L0V, CTQ_ERR_FUSED_MISMATCH, "qkv_proj");
	expect_entry(&r, "model.layers.1.self_attn.q_proj", "w8a8-int8", "G", "type");
	cr_expect(!ctq_plan_executable(&r.plan));
	resolved_free(&r);
	/* ct resolves each HF module alone. */
	resolve_text(&r, t, "qwen3", 2, CTQ_SEM_CT);
	expect_entry(&r, L0Q, "unquantized", "-", "ignore");
	expect_entry(&r, L0K, "w8a8-int8", "G", "type");
	resolved_free(&r);
	/* M12: vLLM raises for disagreeing shards. */
	resolve_text(&r, t, "llama", 1, CTQ_SEM_VLLM);
	expect_error(&r, L0Q, CTQ_ERR_FUSED_MISMATCH, "vLLM requires all to use the same scheme");
	expect_error(&r, L0V, CTQ_ERR_FUSED_MISMATCH, "vLLM requires all to use the same scheme");
	resolved_free(&r);
}

Test(resolve, vllm_fused_name_and_shards)
{
	struct resolved r;
	/* M15: a regex on the fused name matches in vLLM, never in ct. */
	const char *m15 = CFG("\"G\": " W8A8_SCHEME("[\"re:.*qkv_proj\"]"), "");
	resolve_text(&r, m15, "llama", 1, CTQ_SEM_VLLM);
	expect_entry(&r, L0K, "w8a8-int8", "G", "regex");
	resolved_free(&r);
	resolve_text(&r, m15, "llama", 1, CTQ_SEM_CT);
	expect_entry(&r, L0K, "unquantized", "-", "default");
	resolved_free(&r);
	/* M1: re:.*q_proj only covers one shard: vLLM leaves qkv unquantized. */
	const char *m1 = CFG("\"G\": " W8A8_SCHEME("[\"re:.*q_proj\"]"), "");
	resolve_text(&r, m1, "llama", 1, CTQ_SEM_VLLM);
	expect_entry(&r, L0Q, "unquantized", "-", "default");
	resolved_free(&r);
	resolve_text(&r, m1, "llama", 1, CTQ_SEM_CT);
	expect_entry(&r, L0Q, "w8a8-int8", "G", "regex");
	resolved_free(&r);
	/* M20: class step (G_A Linear) shadows the exact shard names of G_B. */
	const char *m20 = CFG("\"G_A\": " W8A8_SCHEME("[\"Linear\"]") ", \"G_B\": " W4A16_SCHEME("[\"" L0Q "\", \"" L0K "\", \"" L0V "\"]"), "");
	resolve_text(&r, m20, "llama", 1, CTQ_SEM_VLLM);
	expect_entry(&r, L0V, "w8a8-int8", "G_A", "type");
	resolved_free(&r);
	resolve_text(&r, m20, "llama", 1, CTQ_SEM_CT);
	expect_entry(&r, L0V, "w4a16", "G_B", "name");
	resolved_free(&r);
}

Test(resolve, vllm_class_is_case_insensitive_substring)
{
	const char *t = CFG("\"G\": " W8A8_SCHEME("[\"linear\"]"), "");
	struct resolved r;
	resolve_text(&r, t, "qwen3", 1, CTQ_SEM_VLLM);
	expect_entry(&r, L0DOWN, "w8a8-int8", "G", "type");
	/* ParallelLMHead does not contain "linear". */
	expect_entry(&r, "lm_head", "unquantized", "-", "default");
	resolved_free(&r);
	resolve_text(&r, t, "qwen3", 1, CTQ_SEM_CT);
	expect_entry(&r, L0DOWN, "unquantized", "-", "default");
	resolved_free(&r);
}

Test(resolve, strict_fails_closed_with_field_paths)
{
	const char *t = CFG("\"group_0\": " W8A8_SCHEME("[\"Linear\"]") ", \"group_1\": " W4A16_SCHEME("[\"re:.*down_proj\"]"), "");
	struct resolved r;
	resolve_text(&r, t, "qwen3", 4, CTQ_SEM_STRICT);
	expect_error(&r, "model.layers.3.mlp.down_proj", CTQ_ERR_UNSUPPORTED_SCHEME,
		     "model.layers.3.mlp.down_proj: config_groups.group_1 (w4a16, format pack-quantized): weights.num_bits is 4; executable schemes need 8");
	expect_entry(&r, "model.layers.3.mlp.up_proj", "w8a8-int8", "group_0", "type");
	resolved_free(&r);
	/* The same args stored pack-quantized cannot run as w8a8-int8. */
	const char *f = "{\"quantization_config\": {\"format\": \"pack-quantized\", \"config_groups\": {\"g\": "
			"{\"targets\": [\"Linear\"], \"weights\": " W8A8_WEIGHTS ", \"input_activations\": " W8A8_INPUTS "}}}}";
	resolve_text(&r, f, "qwen3", 1, CTQ_SEM_STRICT);
	expect_error(&r, L0DOWN, CTQ_ERR_UNSUPPORTED_FORMAT, "pack-quantized");
	resolved_free(&r);
	resolve_text(&r, f, "qwen3", 1, CTQ_SEM_VLLM);
	const struct ctq_plan_entry *e = entry(&r, L0DOWN);
	/* vLLM 0.26.0 _is_wNaM_int: dynamic symmetric int8 token activations -> WNA8Int. */
	cr_expect_str_eq(e->vllm_class, "CompressedTensorsWNA8Int");
	resolved_free(&r);
}

Test(resolve, embeddings_and_attention_execute_unquantized)
{
	struct resolved r;
	resolve_text(&r, CFG("\"G\": " W8A8_SCHEME("[\"re:.*\"]"), ""), "qwen3", 1, CTQ_SEM_STRICT);
	expect_error(&r, "model.embed_tokens", CTQ_ERR_UNSUPPORTED_SCHEME, "embedding");
	/* re:.* also matches the attention's children: not a narrow match. */
	expect_entry(&r, "model.layers.0.self_attn", "unquantized", "-", "default");
	expect_entry(&r, "lm_head", "w8a8-int8", "G", "regex");
	resolved_free(&r);
	resolve_text(&r, CFG("\"G\": " W8A8_SCHEME("[\"Qwen3Attention\"]"), ""), "qwen3", 1, CTQ_SEM_STRICT);
	expect_error(&r, "model.layers.0.self_attn", CTQ_ERR_UNSUPPORTED_SCHEME, "attention");
	resolved_free(&r);
}

#define KV(args) CFG("\"G\": " W8A8_SCHEME("[\"Linear\"]"), ", \"kv_cache_scheme\": " args)

Test(resolve, kv_cache_scheme)
{
	const char *fp8 = KV("{\"num_bits\": 8, \"type\": \"float\", \"symmetric\": true, \"strategy\": \"tensor\", \"dynamic\": false}");
	struct resolved r;
	resolve_text(&r, fp8, "qwen3", 1, CTQ_SEM_STRICT);
	expect_error(&r, "model.layers.0.self_attn", CTQ_ERR_UNSUPPORTED_SCHEME, "kv_cache_scheme");
	resolved_free(&r);
	resolve_text(&r, fp8, "qwen3", 1, CTQ_SEM_VLLM);
	expect_entry(&r, "model.layers.0.self_attn", "kv-float8", "-", "default");
	resolved_free(&r);
	resolve_text(&r, KV("{\"num_bits\": 8, \"type\": \"int\", \"strategy\": \"tensor\"}"), "qwen3", 1,
		     CTQ_SEM_VLLM);
	expect_error(&r, "model.layers.0.self_attn", CTQ_ERR_UNSUPPORTED_SCHEME, "type=int");
	resolved_free(&r);
	/* vLLM's validate_kv_cache_scheme reads the raw dict: no "symmetric"
	 * key is None, which it refuses. */
	resolve_text(&r, KV("{\"num_bits\": 8, \"type\": \"float\", \"strategy\": \"tensor\"}"), "qwen3", 1,
		     CTQ_SEM_VLLM);
	expect_error(&r, "model.layers.0.self_attn", CTQ_ERR_UNSUPPORTED_SCHEME, "symmetric: None");
	resolved_free(&r);
}

Test(resolve, config_level_errors_per_profile)
{
	struct resolved r;
	const char *preset = "{\"quantization_config\": {\"config_groups\": {\"W8A8\": [\"Linear\"]}}}";
	resolve_text(&r, preset, "qwen3", 1, CTQ_SEM_VLLM);
	cr_expect_eq(r.st, CTQ_ERR_INVALID_CONFIG);
	cr_expect_str_eq(r.err.path, "quantization_config.config_groups.W8A8");
	resolved_free(&r);
	/* strict: what vLLM refuses as a whole and CT runs diverges. */
	resolve_text(&r, preset, "qwen3", 1, CTQ_SEM_STRICT);
	cr_assert_eq(r.st, CTQ_OK, "%s", r.err.message);
	expect_error(&r, L0Q, CTQ_ERR_ENGINE_DIVERGENT, "vLLM refuses the whole config");
	resolved_free(&r);
	resolve_text(&r, preset, "qwen3", 1, CTQ_SEM_CT);
	cr_assert_eq(r.st, CTQ_OK, "%s", r.err.message);
	expect_entry(&r, L0Q, "w8a8-int8", "W8A8", "type");
	resolved_free(&r);
	const char *noweights = "{\"quantization_config\": {\"config_groups\": {\"g\": {\"targets\": [\"Linear\"], \"input_activations\": " W8A8_INPUTS "}}}}";
	resolve_text(&r, noweights, "qwen3", 1, CTQ_SEM_VLLM);
	cr_expect_eq(r.st, CTQ_ERR_INVALID_CONFIG);
	cr_expect_str_eq(r.err.path, "quantization_config.config_groups.g.weights");
	resolved_free(&r);
	const char *weight_only_int = "{\"quantization_config\": {\"format\": \"int-quantized\", \"config_groups\": {\"g\": {\"targets\": [\"Linear\"], \"weights\": " W8A8_WEIGHTS "}}}}";
	resolve_text(&r, weight_only_int, "qwen3", 1, CTQ_SEM_VLLM);
	cr_expect_eq(r.st, CTQ_ERR_INVALID_CONFIG);
	resolved_free(&r);
	const char *sparse = CFG("\"G\": " W8A8_SCHEME("[\"Linear\"]"), ", \"sparsity_config\": {\"format\": \"sparse-24-bitmask\", \"targets\": [\"Linear\"]}");
	resolve_text(&r, sparse, "qwen3", 1, CTQ_SEM_CT);
	cr_expect_eq(r.st, CTQ_ERR_UNSUPPORTED_FORMAT);
	cr_expect_str_eq(r.err.path, "quantization_config.sparsity_config.targets");
	resolved_free(&r);
}

/* Resolves a whole config.json (model_type, num_hidden_layers,
 * tie_word_embeddings) as `ctq inspect` does. */
static void resolve_model(struct resolved *r, const char *config, enum ctq_semantics sem)
{
	memset(r, 0, sizeof *r);
	ctq_modules_init(&r->mods);
	r->st = parse_text(&r->cfg, config, NULL, &r->err);
	cr_assert_eq(r->st, CTQ_OK, "%s", r->err.message);
	r->st = ctq_modules_from_config(&r->mods, r->cfg.raw, "", NULL, &r->err);
	cr_assert_eq(r->st, CTQ_OK, "%s", r->err.message);
	r->st = ctq_plan_resolve(&r->plan, &r->cfg, &r->mods, sem, NULL, &r->err);
}

#define TIED_MODEL(type, tied) "{\"model_type\": \"" type "\", \"num_hidden_layers\": 1, \"tie_word_embeddings\": " tied ", "
/* lm_head targeted by its exact name; the embedding untargeted. */
#define HEAD_BY_NAME "\"quantization_config\": {\"format\": \"int-quantized\", \"config_groups\": {\"head\": " W8A8_SCHEME("[\"lm_head\"]") "}}}"

Test(resolve, vllm_tied_lm_head_by_architecture)
{
	/* qwen2.py / qwen3.py: tied, lm_head = model.embed_tokens (the
	 * untargeted embedding); llama.py: a ParallelLMHead named lm_head in
	 * every case, its weight tied afterwards. */
	static const struct {
		const char *config;
		bool head_is_embedding;
	} cases[] = {
		{TIED_MODEL("qwen3", "true") HEAD_BY_NAME, true},
		{TIED_MODEL("qwen2", "true") HEAD_BY_NAME, true},
		{TIED_MODEL("llama", "true") HEAD_BY_NAME, false},
		{TIED_MODEL("qwen3", "false") HEAD_BY_NAME, false},
		{TIED_MODEL("llama", "false") HEAD_BY_NAME, false},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct resolved r;
		resolve_model(&r, cases[i].config, CTQ_SEM_VLLM);
		cr_assert_eq(r.st, CTQ_OK, "case %zu: %s", i, r.err.message);
		if (cases[i].head_is_embedding)
			expect_entry(&r, "lm_head", "unquantized", "-", "default");
		else
			expect_entry(&r, "lm_head", "w8a8-int8", "head", "name");
		resolved_free(&r);
		/* compressed-tensors sees the nn.Linear lm_head in every case:
		 * strict runs it where vLLM agrees and refuses it elsewhere. */
		resolve_model(&r, cases[i].config, CTQ_SEM_STRICT);
		cr_assert_eq(r.st, CTQ_OK, "case %zu: %s", i, r.err.message);
		if (cases[i].head_is_embedding)
			expect_error(&r, "lm_head", CTQ_ERR_ENGINE_DIVERGENT,
				     "vLLM gives unquantized");
		else
			expect_entry(&r, "lm_head", "w8a8-int8", "head", "name");
		resolved_free(&r);
	}
}

/* Configs vLLM 0.26.0 refuses as a whole while compressed-tensors loads
 * them, each with its only target ignored so that no module diverges: the
 * strict plan resolves, records the refusal and cannot execute. */
Test(resolve, strict_records_whole_config_refusals)
{
	static const struct {
		const char *config, *path, *why;
	} cases[] = {
		{"{\"quantization_config\": {\"format\": \"pack-quantized\", \"config_groups\": {\"W4A16\": [\"lm_head\"]}, \"ignore\": [\"lm_head\"]}}",
		 "quantization_config.config_groups.W4A16", "TypeError"},
		{"{\"quantization_config\": {\"format\": \"int-quantized\", \"config_groups\": {\"g\": {\"targets\": [\"lm_head\"], \"weights\": " W8A8_WEIGHTS "}}, \"ignore\": [\"lm_head\"]}}",
		 "quantization_config.config_groups.g.input_activations", "AssertionError"},
		{"{\"quantization_config\": {\"format\": \"int-quantized\", \"config_groups\": {\"g\": {\"targets\": [\"lm_head\"], \"weights\": null, \"input_activations\": " W8A8_INPUTS "}}, \"ignore\": [\"lm_head\"]}}",
		 "quantization_config.config_groups.g.weights", "ValidationError"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct resolved r;
		resolve_text(&r, cases[i].config, "llama", 1, CTQ_SEM_VLLM);
		cr_expect_eq(r.st, CTQ_ERR_INVALID_CONFIG, "case %zu", i);
		cr_expect_str_eq(r.err.path, cases[i].path, "case %zu", i);
		resolved_free(&r);
		resolve_text(&r, cases[i].config, "llama", 1, CTQ_SEM_CT);
		cr_assert_eq(r.st, CTQ_OK, "case %zu: %s", i, r.err.message);
		cr_expect_eq(r.plan.refusal.status, CTQ_OK, "only strict records refusals");
		cr_expect(ctq_plan_executable(&r.plan));
		resolved_free(&r);
		resolve_text(&r, cases[i].config, "llama", 1, CTQ_SEM_STRICT);
		cr_assert_eq(r.st, CTQ_OK, "case %zu: %s", i, r.err.message);
		cr_expect_eq(r.plan.n_errors, 0, "case %zu: no module diverges", i);
		expect_entry(&r, "lm_head", "unquantized", "-", "ignore");
		cr_expect_eq(r.plan.refusal.status, CTQ_ERR_ENGINE_DIVERGENT, "case %zu", i);
		cr_expect_str_eq(r.plan.refusal.path, cases[i].path, "case %zu", i);
		cr_expect(strstr(r.plan.refusal.message, "vLLM refuses the whole config") &&
			  strstr(r.plan.refusal.message, cases[i].why) &&
			  strstr(r.plan.refusal.message, "compressed-tensors loads it"),
			  "case %zu: %s", i, r.plan.refusal.message);
		cr_expect(!ctq_plan_executable(&r.plan), "case %zu", i);
		resolved_free(&r);
	}
	/* Both engines load the producers' usual config: nothing recorded. */
	struct resolved r;
	resolve_text(&r, CFG("\"g\": " W8A8_SCHEME("[\"Linear\"]"), ", \"ignore\": [\"lm_head\"]"),
		     "llama", 1, CTQ_SEM_STRICT);
	cr_assert_eq(r.st, CTQ_OK, "%s", r.err.message);
	cr_expect_eq(r.plan.refusal.status, CTQ_OK, "%s", r.plan.refusal.message);
	cr_expect(ctq_plan_executable(&r.plan));
	resolved_free(&r);
}

Test(resolve, no_block_means_unquantized)
{
	struct resolved r;
	resolve_text(&r, "{\"model_type\": \"qwen3\"}", "qwen3", 1, CTQ_SEM_STRICT);
	cr_assert_eq(r.st, CTQ_OK);
	expect_entry(&r, L0DOWN, "unquantized", "-", "default");
	cr_expect(ctq_plan_executable(&r.plan));
	resolved_free(&r);
}

Test(resolve, catastrophic_regex_is_bounded, .timeout = 20)
{
	struct ctq_qconfig cfg;
	struct ctq_modules mods;
	struct ctq_plan plan;
	struct ctq_error err = {0};
	ctq_modules_init(&mods);
	cr_assert_eq(parse_text(&cfg, CFG("\"G\": " W8A8_SCHEME("[\"re:(a+)+$\"]"), ""), NULL, &err), CTQ_OK);
	char name[4096];
	memset(name, 'a', 4000);
	name[4000] = '!';
	name[4001] = '\0';
	const char *types[] = {"Linear", "Module"};
	cr_assert_eq(ctq_modules_add(&mods, name, types, 2, NULL, &err), CTQ_OK);
	cr_assert_eq(ctq_modules_finish(&mods, &err), CTQ_OK);
	enum ctq_status st = ctq_plan_resolve(&plan, &cfg, &mods, CTQ_SEM_STRICT, NULL, &err);
	if (st) {
		cr_expect_eq(st, CTQ_ERR_INVALID_CONFIG);
		cr_expect_str_eq(err.path, "quantization_config.config_groups.G.targets[0]");
		cr_expect(strstr(err.message, "limit"), "%s", err.message);
	} else {
		cr_expect_str_eq(plan.entries[0].scheme, "unquantized");
	}
	ctq_plan_free(&plan);
	ctq_modules_free(&mods);
	ctq_qconfig_free(&cfg);
}

Test(resolve, bad_regex_is_invalid_config)
{
	struct resolved r;
	resolve_text(&r, CFG("\"G\": " W8A8_SCHEME("[\"re:(unclosed\"]"), ""), "qwen3", 1, CTQ_SEM_STRICT);
	cr_expect_eq(r.st, CTQ_ERR_INVALID_CONFIG);
	cr_expect_str_eq(r.err.path, "quantization_config.config_groups.G.targets[0]");
	resolved_free(&r);
}

Test(resolve, every_allocation_failure_is_reported)
{
	const char *t = CFG("\"G1\": " W8A8_SCHEME("[\"Linear\"]") ", \"G2\": " W4A16_SCHEME("[\"re:.*down_proj\"]"), ", \"ignore\": [\"lm_head\"]");
	bool succeeded = false;
	for (long n = 0; n < 100000 && !succeeded; n++) {
		struct resolved r;
		ctq_alloc_fail_after(n);
		memset(&r, 0, sizeof r);
		ctq_modules_init(&r.mods);
		enum ctq_status st = parse_text(&r.cfg, t, NULL, &r.err);
		if (!st)
			st = ctq_modules_from_arch(&r.mods, "qwen3", 2, NULL, &r.err);
		if (!st)
			st = ctq_plan_resolve(&r.plan, &r.cfg, &r.mods, CTQ_SEM_STRICT, NULL, &r.err);
		ctq_alloc_fail_after(-1);
		cr_assert(st == CTQ_OK || st == CTQ_ERR_NOMEM || st == CTQ_ERR_PARSE,
			  "fail after %ld: %s (%s)", n, ctq_status_name(st), r.err.message);
		succeeded = st == CTQ_OK;
		resolved_free(&r);
	}
	cr_expect(succeeded);
}
