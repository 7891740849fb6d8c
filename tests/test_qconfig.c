/* Criterion tests for quant/qconfig: locations, args normalisation (§2.3),
 * scheme rules (§2.2), presets (§3), hygiene. */
#include <criterion/criterion.h>
#include <unistd.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <string.h>

#include "helpers.h"
#include "quant/scheme.h"

/* ---- locations (§1) ----------------------------------------------------- */

struct loc_case {
	const char *id;
	const char *text;
	enum ctq_qlocation loc;
	bool nested;
	const char *block_path;
};

static const struct loc_case loc_cases[] = {
	{"root", "{\"quantization_config\": {\"config_groups\": {}}}", CTQ_QLOC_ROOT, false,
	 "quantization_config"},
	{"text_config", "{\"text_config\": {\"quantization_config\": {\"config_groups\": {}}}}",
	 CTQ_QLOC_TEXT_CONFIG, false, "text_config.quantization_config"},
	{"legacy", "{\"compression_config\": {\"config_groups\": {}}}", CTQ_QLOC_LEGACY, false,
	 "compression_config"},
	{"root_beats_legacy",
	 "{\"compression_config\": {\"config_groups\": {}}, \"quantization_config\": {\"config_groups\": {}}}",
	 CTQ_QLOC_ROOT, false, "quantization_config"},
	{"text_config_beats_legacy",
	 "{\"compression_config\": {\"config_groups\": {}}, \"text_config\": {\"quantization_config\": {\"config_groups\": {}}}}",
	 CTQ_QLOC_TEXT_CONFIG, false, "text_config.quantization_config"},
	{"nested", "{\"quantization_config\": {\"quantization_config\": {\"config_groups\": {}}, \"sparsity_config\": {}}}",
	 CTQ_QLOC_ROOT, true, "quantization_config.quantization_config"},
	{"bare", "{\"config_groups\": {}, \"format\": \"dense\"}", CTQ_QLOC_BARE, false, ""},
	{"none", "{\"model_type\": \"qwen3\"}", CTQ_QLOC_NONE, false, ""},
	{"null_block", "{\"quantization_config\": null}", CTQ_QLOC_NONE, false, ""},
};

Test(qconfig, locations)
{
	for (size_t i = 0; i < sizeof loc_cases / sizeof *loc_cases; i++) {
		const struct loc_case *c = &loc_cases[i];
		struct ctq_qconfig cfg;
		struct ctq_error err = {0};
		cr_assert_eq(parse_text(&cfg, c->text, NULL, &err), CTQ_OK, "%s: %s", c->id,
			     err.message);
		cr_expect_eq(cfg.location, c->loc, "%s: location %d", c->id, cfg.location);
		cr_expect_eq(cfg.nested, c->nested, "%s", c->id);
		cr_expect_str_eq(cfg.block_path, c->block_path, "%s", c->id);
		ctq_qconfig_free(&cfg);
	}
}

Test(qconfig, quant_method_normalised_and_checked)
{
	struct ctq_qconfig cfg;
	struct ctq_error err = {0};
	cr_assert_eq(parse_text(&cfg, "{\"quantization_config\": {\"quant_method\": \"Compressed_Tensors\", \"config_groups\": {}}}",
				NULL, &err), CTQ_OK);
	cr_expect_str_eq(cfg.quant_method, "compressed-tensors");
	ctq_qconfig_free(&cfg);
	cr_assert_eq(parse_text(&cfg, "{\"quantization_config\": {\"quant_method\": \"awq\", \"config_groups\": {}}}",
				NULL, &err), CTQ_ERR_UNSUPPORTED_FORMAT);
	cr_expect_str_eq(err.path, "quantization_config.quant_method");
	ctq_qconfig_free(&cfg);
}

Test(qconfig, groups_keep_file_order)
{
	struct ctq_qconfig cfg;
	struct ctq_error err = {0};
	const char *t = "{\"quantization_config\": {\"config_groups\": {\"group_10\": " W8A8_SCHEME("[\"a\"]")
			", \"group_2\": " W8A8_SCHEME("[\"b\"]") ", \"group_1\": " W8A8_SCHEME("[\"c\"]") "}}}";
	cr_assert_eq(parse_text(&cfg, t, NULL, &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(cfg.n_groups, 3);
	cr_expect_str_eq(cfg.groups[0].name, "group_10");
	cr_expect_str_eq(cfg.groups[1].name, "group_2");
	cr_expect_str_eq(cfg.groups[2].name, "group_1");
	cr_expect_str_eq(cfg.groups[1].scheme.targets[0], "b");
	ctq_qconfig_free(&cfg);
}

/* ---- args normalisation (§2.3) -------------------------------------------- */

struct args_case {
	const char *id;
	const char *args;            /* a QuantizationArgs object */
	enum ctq_status status;
	const char *path_leaf;       /* error path's last component */
	enum ctq_strategy strategy;  /* when OK */
};

#define ARGS_OK(id, a, s) {id, a, CTQ_OK, NULL, s}
#define ARGS_BAD(id, a, leaf) {id, a, CTQ_ERR_INVALID_CONFIG, leaf, 0}

static const struct args_case args_cases[] = {
	ARGS_OK("defaults_tensor", "{}", CTQ_STRATEGY_TENSOR),
	ARGS_OK("group_size_infers_group", "{\"group_size\": 128}", CTQ_STRATEGY_GROUP),
	ARGS_OK("group_size_minus1_infers_channel", "{\"group_size\": -1}", CTQ_STRATEGY_CHANNEL),
	ARGS_BAD("group_size_zero_without_strategy", "{\"group_size\": 0}", "group_size"),
	ARGS_BAD("group_size_below_minus1", "{\"group_size\": -2}", "group_size"),
	ARGS_OK("enum_case_insensitive", "{\"type\": \"InT\", \"strategy\": \"GROUP\", \"group_size\": 64}",
		CTQ_STRATEGY_GROUP),
	ARGS_BAD("type_unknown", "{\"type\": \"fixed\"}", "type"),
	ARGS_BAD("strategy_unknown", "{\"strategy\": \"row\"}", "strategy"),
	ARGS_BAD("static_token", "{\"strategy\": \"token\", \"dynamic\": false}", "dynamic"),
	ARGS_OK("dynamic_token", "{\"strategy\": \"token\", \"dynamic\": true}", CTQ_STRATEGY_TOKEN),
	ARGS_BAD("group_without_size", "{\"strategy\": \"group\"}", "group_size"),
	ARGS_BAD("tensor_group_without_size", "{\"strategy\": \"tensor_group\"}", "group_size"),
	ARGS_BAD("tensor_with_group_size", "{\"strategy\": \"tensor\", \"group_size\": 128}", "group_size"),
	ARGS_OK("channel_with_minus1", "{\"strategy\": \"channel\", \"group_size\": -1}", CTQ_STRATEGY_CHANNEL),
	ARGS_OK("channel_with_zero", "{\"strategy\": \"channel\", \"group_size\": 0}", CTQ_STRATEGY_CHANNEL),
	ARGS_OK("block_list", "{\"strategy\": \"block\", \"block_structure\": [128, 128]}", CTQ_STRATEGY_BLOCK),
	ARGS_OK("block_string", "{\"strategy\": \"block\", \"block_structure\": \"2x4\"}", CTQ_STRATEGY_BLOCK),
	ARGS_BAD("block_without_structure", "{\"strategy\": \"block\"}", "block_structure"),
	ARGS_BAD("structure_without_block", "{\"block_structure\": [2, 4]}", "block_structure"),
	ARGS_BAD("block_three_dims_string", "{\"strategy\": \"block\", \"block_structure\": \"2x4x8\"}", "block_structure"),
	ARGS_BAD("block_three_dims_list", "{\"strategy\": \"block\", \"block_structure\": [2, 4, 8]}", "block_structure"),
	ARGS_BAD("block_not_a_number", "{\"strategy\": \"block\", \"block_structure\": \"2xfoo\"}", "block_structure"),
	ARGS_BAD("block_zero", "{\"strategy\": \"block\", \"block_structure\": [0, 4]}", "block_structure"),
	ARGS_BAD("block_negative", "{\"strategy\": \"block\", \"block_structure\": [-1, 4]}", "block_structure"),
	ARGS_BAD("block_zero_string", "{\"strategy\": \"block\", \"block_structure\": \"4x0\"}", "block_structure"),
	/* compressed-tensors 0.20.0 (the HEAD table) removed actorder group,
	 * its alias dynamic and true (validate_actorder raises); the 0.19
	 * table takes them (suites/fail-closed/args-accepted.json). */
	ARGS_BAD("actorder_group", "{\"group_size\": 128, \"actorder\": \"group\"}", "actorder"),
	ARGS_BAD("actorder_dynamic_alias", "{\"group_size\": 128, \"actorder\": \"DYNAMIC\"}", "actorder"),
	ARGS_BAD("actorder_true", "{\"group_size\": 128, \"actorder\": true}", "actorder"),
	ARGS_BAD("actorder_group_needs_group", "{\"strategy\": \"channel\", \"actorder\": \"group\"}", "actorder"),
	ARGS_BAD("actorder_true_needs_group", "{\"strategy\": \"channel\", \"actorder\": true}", "actorder"),
	ARGS_OK("actorder_weight_any_strategy", "{\"strategy\": \"channel\", \"actorder\": \"weight\"}", CTQ_STRATEGY_CHANNEL),
	ARGS_OK("actorder_static_alias", "{\"strategy\": \"channel\", \"actorder\": \"static\"}", CTQ_STRATEGY_CHANNEL),
	ARGS_OK("actorder_false", "{\"strategy\": \"channel\", \"actorder\": false}", CTQ_STRATEGY_CHANNEL),
	ARGS_BAD("actorder_unknown", "{\"actorder\": \"random\"}", "actorder"),
	ARGS_BAD("dynamic_channel", "{\"strategy\": \"channel\", \"dynamic\": true}", "strategy"),
	ARGS_BAD("dynamic_block", "{\"strategy\": \"block\", \"block_structure\": [2, 2], \"dynamic\": true}", "strategy"),
	ARGS_OK("dynamic_local_tensor_group", "{\"strategy\": \"tensor_group\", \"group_size\": 16, \"dynamic\": \"LOCAL\"}",
		CTQ_STRATEGY_TENSOR_GROUP),
	ARGS_BAD("dynamic_local_needs_tensor_group", "{\"strategy\": \"group\", \"group_size\": 16, \"dynamic\": \"local\"}", "dynamic"),
	ARGS_BAD("dynamic_other_string", "{\"dynamic\": \"always\"}", "dynamic"),
	/* compressed-tensors 0.20.0 stores FP6 (E2M3); 5-bit floats have no dtype. */
	ARGS_OK("float_six_bits", "{\"type\": \"float\", \"num_bits\": 6}", CTQ_STRATEGY_TENSOR),
	ARGS_BAD("float_five_bits", "{\"type\": \"float\", \"num_bits\": 5}", "num_bits"),
	ARGS_BAD("num_bits_object", "{\"num_bits\": {\"weight\": 4}}", "num_bits"),
	ARGS_BAD("num_bits_fraction", "{\"num_bits\": 8.5}", "num_bits"),
	ARGS_BAD("num_bits_huge", "{\"num_bits\": 1e20}", "num_bits"),
	ARGS_BAD("symmetric_string", "{\"symmetric\": \"true\"}", "symmetric"),
	ARGS_BAD("observer_kwargs_list", "{\"observer_kwargs\": []}", "observer_kwargs"),
	ARGS_BAD("unknown_key", "{\"num_bits\": 8, \"bits\": 8}", "bits"),
	ARGS_OK("scale_and_zp_dtype", "{\"scale_dtype\": \"torch.float16\", \"zp_dtype\": null}", CTQ_STRATEGY_TENSOR),
};

Test(qconfig, args_normalisation_table)
{
	for (size_t i = 0; i < sizeof args_cases / sizeof *args_cases; i++) {
		const struct args_case *c = &args_cases[i];
		char text[2048];
		snprintf(text, sizeof text,
			 "{\"quantization_config\": {\"config_groups\": {\"group_0\": {\"targets\": [\"Linear\"], \"weights\": %s}}}}",
			 c->args);
		struct ctq_qconfig cfg;
		struct ctq_error err = {0};
		enum ctq_status st = parse_text(&cfg, text, NULL, &err);
		cr_expect_eq(st, c->status, "args/%s: status %s (%s)", c->id, ctq_status_name(st),
			     err.message);
		if (st == CTQ_OK && c->status == CTQ_OK) {
			cr_expect_eq(cfg.groups[0].scheme.weights->strategy, c->strategy,
				     "args/%s: strategy %s", c->id,
				     ctq_strategy_name(cfg.groups[0].scheme.weights->strategy));
		} else if (st && c->path_leaf) {
			char want[256];
			snprintf(want, sizeof want, "quantization_config.config_groups.group_0.weights.%s",
				 c->path_leaf);
			cr_expect_str_eq(err.path, want, "args/%s", c->id);
		}
		ctq_qconfig_free(&cfg);
	}
}

Test(qconfig, observer_defaults)
{
	struct ctq_qconfig cfg;
	struct ctq_error err = {0};
	const char *t = "{\"quantization_config\": {\"config_groups\": {\"g\": " W8A8_SCHEME("[\"Linear\"]") "}}}";
	cr_assert_eq(parse_text(&cfg, t, NULL, &err), CTQ_OK, "%s", err.message);
	cr_expect_str_eq(cfg.groups[0].scheme.weights->observer, "memoryless_minmax");
	cr_expect_null(cfg.groups[0].scheme.input->observer);
	cr_expect_str_eq(cfg.groups[0].scheme.weights->zp_dtype, "int8");
	ctq_qconfig_free(&cfg);
}

Test(qconfig, block_string_converted)
{
	struct ctq_qconfig cfg;
	struct ctq_error err = {0};
	const char *t = "{\"quantization_config\": {\"config_groups\": {\"g\": {\"targets\": [\"Linear\"], \"weights\": {\"type\": \"float\", \"strategy\": \"block\", \"block_structure\": \"128x64\"}}}}}";
	cr_assert_eq(parse_text(&cfg, t, NULL, &err), CTQ_OK, "%s", err.message);
	cr_expect_eq(cfg.groups[0].scheme.weights->block[0], 128);
	cr_expect_eq(cfg.groups[0].scheme.weights->block[1], 64);
	ctq_qconfig_free(&cfg);
}

/* ---- scheme rules (§2.2) and hygiene -------------------------------------- */

struct scheme_case {
	const char *id;
	const char *group;
	enum ctq_status status;
	const char *path;
	const char *message;
};

static const struct scheme_case scheme_cases[] = {
	{"targets_missing", "{\"weights\": " W8A8_WEIGHTS "}", CTQ_ERR_INVALID_CONFIG,
	 "quantization_config.config_groups.g.targets", "missing"},
	{"targets_not_list", "{\"targets\": \"Linear\"}", CTQ_ERR_INVALID_CONFIG,
	 "quantization_config.config_groups.g.targets", "list of strings"},
	{"targets_non_string", "{\"targets\": [\"Linear\", 3]}", CTQ_ERR_INVALID_CONFIG,
	 "quantization_config.config_groups.g.targets[1]", "string"},
	/* QuantizationScheme's own checks (channel / block input strategies,
	 * actorder on activations, unknown scheme keys) parse: vLLM never builds
	 * a QuantizationScheme; strict and ct refuse them at resolution
	 * (scheme_checks_are_recorded below). */
	{"channel_input_parses", "{\"targets\": [\"Linear\"], \"input_activations\": {\"strategy\": \"channel\"}}",
	 CTQ_OK, NULL, NULL},
	{"group_input_accepted", "{\"targets\": [\"Linear\"], \"input_activations\": {\"strategy\": \"group\", \"group_size\": 128, \"dynamic\": true}}",
	 CTQ_OK, NULL, NULL},
	{"input_actorder", "{\"targets\": [\"Linear\"], \"input_activations\": {\"strategy\": \"token\", \"dynamic\": true, \"actorder\": \"weight\"}}",
	 CTQ_OK, NULL, NULL},
	{"output_actorder", "{\"targets\": [\"Linear\"], \"output_activations\": {\"actorder\": \"weight\"}}",
	 CTQ_OK, NULL, NULL},
	{"mixed_precision_scheme_format", "{\"targets\": [\"Linear\"], \"format\": \"mixed-precision\"}",
	 CTQ_OK, NULL, NULL},
	/* A group format outside CompressionFormat parses (vLLM takes it as a
	 * string); strict and ct refuse it at resolution (format_error below). */
	{"unknown_scheme_format", "{\"targets\": [\"Linear\"], \"format\": \"int8-packed\"}",
	 CTQ_OK, NULL, NULL},
	{"unknown_scheme_key", "{\"targets\": [\"Linear\"], \"weight\": {}}", CTQ_OK, NULL, NULL},
	{"group_is_number", "3", CTQ_ERR_INVALID_CONFIG, "quantization_config.config_groups.g",
	 "expected a scheme object"},
	{"preset_w8a8", "[\"Linear\"]", CTQ_ERR_UNKNOWN_PRESET, "quantization_config.config_groups.g",
	 "Unknown preset scheme name G"},
};

Test(qconfig, scheme_rules_table)
{
	for (size_t i = 0; i < sizeof scheme_cases / sizeof *scheme_cases; i++) {
		const struct scheme_case *c = &scheme_cases[i];
		char text[2048];
		snprintf(text, sizeof text, "{\"quantization_config\": {\"config_groups\": {\"g\": %s}}}",
			 c->group);
		struct ctq_qconfig cfg;
		struct ctq_error err = {0};
		enum ctq_status st = parse_text(&cfg, text, NULL, &err);
		cr_expect_eq(st, c->status, "scheme/%s: %s (%s)", c->id, ctq_status_name(st), err.message);
		if (c->path)
			cr_expect_str_eq(err.path, c->path, "scheme/%s", c->id);
		if (c->message)
			cr_expect(strstr(err.message, c->message), "scheme/%s: %s", c->id, err.message);
		ctq_qconfig_free(&cfg);
	}
}

Test(qconfig, unknown_keys_accepted_on_request)
{
	const char *t = "{\"quantization_config\": {\"config_groups\": {\"g\": {\"targets\": [\"Linear\"], \"weights\": {\"num_bits\": 8, \"strategy\": \"channel\", \"legacy_field\": 1}}}}}";
	struct ctq_qconfig cfg;
	struct ctq_error err = {0};
	cr_expect_eq(parse_text(&cfg, t, NULL, &err), CTQ_ERR_INVALID_CONFIG);
	ctq_qconfig_free(&cfg);
	struct ctq_parse_options opt = {.accept_unknown_keys = true};
	ctq_error_clear(&err);
	cr_expect_eq(parse_text(&cfg, t, &opt, &err), CTQ_OK, "%s", err.message);
	ctq_qconfig_free(&cfg);
}

Test(qconfig, unknown_top_level_keys_kept)
{
	const char *t = "{\"quantization_config\": {\"provider\": \"auto-round\", \"total_num_heads\": 32, \"config_groups\": {}}}";
	struct ctq_qconfig cfg;
	struct ctq_error err = {0};
	cr_assert_eq(parse_text(&cfg, t, NULL, &err), CTQ_OK, "%s", err.message);
	cr_expect_eq(cfg.n_unknown_top_keys, 2);
	ctq_qconfig_free(&cfg);
}

Test(qconfig, config_groups_required)
{
	struct ctq_qconfig cfg;
	struct ctq_error err = {0};
	cr_expect_eq(parse_text(&cfg, "{\"quantization_config\": {\"format\": \"int-quantized\"}}", NULL, &err),
		     CTQ_ERR_INVALID_CONFIG);
	cr_expect_str_eq(err.path, "quantization_config.config_groups");
	ctq_qconfig_free(&cfg);
}

Test(qconfig, status_enum_checked)
{
	struct ctq_qconfig cfg;
	struct ctq_error err = {0};
	cr_expect_eq(parse_text(&cfg, "{\"quantization_config\": {\"quantization_status\": \"done\", \"config_groups\": {}}}", NULL, &err),
		     CTQ_ERR_INVALID_CONFIG);
	cr_expect_str_eq(err.path, "quantization_config.quantization_status");
	ctq_qconfig_free(&cfg);
}

/* ---- presets (§3) ------------------------------------------------------------ */

struct preset_case {
	const char *name;
	int version;
	const char *scheme; /* expected family name, NULL: unknown at that version */
	const char *format;
};

static const struct preset_case preset_cases[] = {
	{"W8A8", CTQ_CT_VERSION_HEAD, "w8a8-int8", "int-quantized"},
	{"INT8", CTQ_CT_VERSION_HEAD, "w8a8-int8", "int-quantized"},
	{"W4A16", CTQ_CT_VERSION_HEAD, "w4a16", "pack-quantized"},
	{"W4A16_ASYM", CTQ_CT_VERSION_HEAD, "w4a16-asym", "pack-quantized"},
	{"W8A16", CTQ_CT_VERSION_HEAD, "w8a16", "pack-quantized"},
	{"W4A8", CTQ_CT_VERSION_HEAD, "w4a8", "int-quantized"},
	{"W4AFP8", CTQ_CT_VERSION_HEAD, "w4afp8", "int-quantized"},
	{"W4AFP8", 1300, NULL, NULL},
	{"FP8", CTQ_CT_VERSION_HEAD, "fp8", "float-quantized"},
	{"FP8_DYNAMIC", CTQ_CT_VERSION_HEAD, "fp8-dynamic", "float-quantized"},
	{"FP8_BLOCK", CTQ_CT_VERSION_HEAD, "fp8-block", "float-quantized"},
	{"FP8_BLOCK", 1004, NULL, NULL},
	{"NVFP4A16", CTQ_CT_VERSION_HEAD, "nvfp4a16", "nvfp4-pack-quantized"},
	{"NVFP4", CTQ_CT_VERSION_HEAD, "nvfp4", "nvfp4-pack-quantized"},
	{"NVFP4", 904, NULL, NULL},
	{"MXFP4A16", CTQ_CT_VERSION_HEAD, "mxfp4a16", "mxfp4-pack-quantized"},
	{"MXFP4", CTQ_CT_VERSION_HEAD, "mxfp4", "mxfp4-pack-quantized"},
	{"MXFP8A16", CTQ_CT_VERSION_HEAD, "mxfp8a16", "mxfp8-quantized"},
	{"MXFP8", CTQ_CT_VERSION_HEAD, "mxfp8", "mxfp8-quantized"},
	{"MXFP8", 1400, NULL, NULL},
	{"UNQUANTIZED", CTQ_CT_VERSION_HEAD, "unquantized", "dense"},
	{"W3A16", CTQ_CT_VERSION_HEAD, "w3a16", "pack-quantized"},
	{"W3A16", 1700, NULL, NULL},
	{"W2A4", CTQ_CT_VERSION_HEAD, "w2a4", "int-quantized"},
	{"W5A4", CTQ_CT_VERSION_HEAD, NULL, NULL},
	{"W9A16", CTQ_CT_VERSION_HEAD, NULL, NULL},
	{"W8A8_FP8", CTQ_CT_VERSION_HEAD, NULL, NULL},
};

Test(presets, expansion_table)
{
	for (size_t i = 0; i < sizeof preset_cases / sizeof *preset_cases; i++) {
		const struct preset_case *c = &preset_cases[i];
		struct ctq_arena a;
		ctq_arena_init(&a);
		struct ctq_qscheme s = {0};
		const char *fmt = NULL;
		bool ok = ctq_preset_expand(c->name, c->version, &a, &s, &fmt);
		cr_expect_eq(ok, c->scheme != NULL, "preset/%s@%d", c->name, c->version);
		if (ok && c->scheme) {
			char buf[64];
			cr_expect_str_eq(ctq_scheme_name(&s, buf, sizeof buf), c->scheme, "preset/%s", c->name);
			cr_expect_str_eq(fmt, c->format, "preset/%s", c->name);
		}
		ctq_arena_free(&a);
	}
}

Test(presets, w8a16_changed_in_0_16)
{
	struct ctq_arena a;
	ctq_arena_init(&a);
	struct ctq_qscheme s = {0};
	const char *fmt;
	cr_assert(ctq_preset_expand("W8A16", 1500, &a, &s, &fmt));
	cr_expect_eq(s.weights->strategy, CTQ_STRATEGY_CHANNEL);
	cr_assert(ctq_preset_expand("W8A16", 1600, &a, &s, &fmt));
	cr_expect_eq(s.weights->strategy, CTQ_STRATEGY_GROUP);
	cr_expect_eq(s.weights->group_size, 128);
	ctq_arena_free(&a);
}

Test(presets, list_form_group_uses_name_and_version)
{
	struct ctq_qconfig cfg;
	struct ctq_error err = {0};
	cr_assert_eq(parse_text(&cfg, "{\"quantization_config\": {\"version\": \"0.15.2\", \"config_groups\": {\"w8a16\": [\"Linear\"]}}}", NULL, &err),
		     CTQ_OK, "%s", err.message);
	cr_expect(cfg.groups[0].preset_form);
	cr_expect_str_eq(cfg.groups[0].preset, "W8A16");
	cr_expect_eq(cfg.groups[0].scheme.weights->strategy, CTQ_STRATEGY_CHANNEL);
	cr_expect_str_eq(cfg.groups[0].scheme.targets[0], "Linear");
	ctq_qconfig_free(&cfg);
	struct ctq_parse_options opt = {.ct_version = "0.16.0"};
	cr_assert_eq(parse_text(&cfg, "{\"quantization_config\": {\"version\": \"0.15.2\", \"config_groups\": {\"W8A16\": [\"Linear\"]}}}", &opt, &err),
		     CTQ_OK);
	cr_expect_eq(cfg.groups[0].scheme.weights->strategy, CTQ_STRATEGY_GROUP);
	ctq_qconfig_free(&cfg);
}

Test(presets, version_parse)
{
	cr_expect_eq(ctq_version_parse("0.13.1.a20260225"), 1301);
	cr_expect_eq(ctq_version_parse("0.6.0.20240921"), 600);
	cr_expect_eq(ctq_version_parse("v1.2"), 10200);
	cr_expect_eq(ctq_version_parse("latest"), -1);
	cr_expect_eq(ctq_version_parse("1"), -1);
}

/* A config.json that is an array names its file (not just "(root)"). */
Test(qconfig, non_object_file_names_the_file)
{
	char path[] = "/tmp/ctq-qconfig-array-XXXXXX";
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, "[1, 2]", 6), 6);
	close(fd);
	struct ctq_qconfig cfg;
	struct ctq_error err = {0};
	cr_expect_eq(ctq_qconfig_load(&cfg, path, NULL, &err), CTQ_ERR_INVALID_CONFIG);
	cr_expect_str_eq(err.path, path);
	cr_expect(strstr(err.message, "array"), "%s", err.message);
	ctq_qconfig_free(&cfg);
	unlink(path);
}

/* QuantizationScheme's checks are kept with their path and reason, for the
 * profiles that refuse them (strict and ct; vLLM never builds a scheme). */
Test(qconfig, scheme_checks_are_recorded)
{
	static const struct {
		const char *group, *path, *message;
	} cases[] = {
		{"{\"targets\": [\"Linear\"], \"input_activations\": {\"strategy\": \"channel\"}}",
		 "quantization_config.config_groups.g.input_activations.strategy", "not supported for activation quantization"},
		{"{\"targets\": [\"Linear\"], \"input_activations\": {\"strategy\": \"token\", \"dynamic\": true, \"actorder\": \"weight\"}}",
		 "quantization_config.config_groups.g.input_activations.actorder", "actorder"},
		{"{\"targets\": [\"Linear\"], \"output_activations\": {\"actorder\": \"weight\"}}",
		 "quantization_config.config_groups.g.output_activations.actorder", "actorder"},
		{"{\"targets\": [\"Linear\"], \"weight\": {}}", "quantization_config.config_groups.g.weight", "unknown key"},
		/* a group vLLM drops unread: its args too */
		{"{\"targets\": [\"LlamaAttention\"], \"input_activations\": {\"strategy\": \"token\"}}",
		 "quantization_config.config_groups.g.input_activations.dynamic", "static token"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char text[1024];
		snprintf(text, sizeof text, "{\"quantization_config\": {\"config_groups\": {\"g\": %s}}}", cases[i].group);
		struct ctq_qconfig cfg;
		struct ctq_error err = {0};
		cr_assert_eq(parse_text(&cfg, text, NULL, &err), CTQ_OK, "case %zu: %s", i, err.message);
		cr_assert_eq(cfg.n_groups, 1);
		cr_expect(cfg.groups[0].scheme.args_error_path &&
			  !strcmp(cfg.groups[0].scheme.args_error_path, cases[i].path), "case %zu: %s", i,
			  cfg.groups[0].scheme.args_error_path ? cfg.groups[0].scheme.args_error_path : "(none)");
		cr_expect(cfg.groups[0].scheme.args_error && strstr(cfg.groups[0].scheme.args_error, cases[i].message),
			  "case %zu: %s", i, cfg.groups[0].scheme.args_error ? cfg.groups[0].scheme.args_error : "(none)");
		ctq_qconfig_free(&cfg);
	}
}

/* The group format compressed-tensors refuses is kept with its path and
 * reason, for the profiles that refuse it. */
Test(qconfig, group_format_error_is_recorded)
{
	struct ctq_qconfig cfg;
	struct ctq_error err = {0};
	cr_assert_eq(parse_text(&cfg, "{\"quantization_config\": {\"config_groups\": {\"g\": "
				      "{\"targets\": [\"Linear\"], \"format\": \"int8-packed\"}}}}",
				NULL, &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(cfg.n_groups, 1);
	cr_expect_str_eq(cfg.groups[0].scheme.format_error_path, "quantization_config.config_groups.g.format");
	cr_expect(strstr(cfg.groups[0].scheme.format_error, "int8-packed"));
	ctq_qconfig_free(&cfg);
}
