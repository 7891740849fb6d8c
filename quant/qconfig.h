/* ctq compressed-tensors quantization config: locating the block in a
 * config.json, parsing and validating it (spec §1–§4), preset expansion.
 *
 * What it is: a faithful, fail-closed reader of the metadata, with every
 * QuantizationArgs normalised as compressed-tensors HEAD does (§2.3).
 * What it is not: it does not decide what a module executes as; that is
 * quant/resolve.h, which reads the struct built here.
 */
#ifndef CTQ_QUANT_QCONFIG_H
#define CTQ_QUANT_QCONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "core/arena.h"
#include "core/status.h"

enum ctq_qtype { CTQ_QTYPE_INT, CTQ_QTYPE_FLOAT };

enum ctq_strategy {
	CTQ_STRATEGY_TENSOR,
	CTQ_STRATEGY_CHANNEL,
	CTQ_STRATEGY_GROUP,
	CTQ_STRATEGY_BLOCK,
	CTQ_STRATEGY_TOKEN,
	CTQ_STRATEGY_TENSOR_GROUP,
	CTQ_STRATEGY_ATTN_HEAD,
};

enum ctq_dynamic { CTQ_DYNAMIC_FALSE, CTQ_DYNAMIC_TRUE, CTQ_DYNAMIC_LOCAL };
enum ctq_actorder { CTQ_ACTORDER_NONE, CTQ_ACTORDER_GROUP, CTQ_ACTORDER_WEIGHT };

/* One normalised QuantizationArgs (§2.3). */
struct ctq_qargs {
	int num_bits;
	enum ctq_qtype type;
	bool symmetric;
	bool symmetric_given;      /* the key was in the file (vLLM reads the raw dict) */
	bool has_group_size;
	int group_size;            /* valid when has_group_size */
	enum ctq_strategy strategy; /* inferred when absent */
	bool has_block;
	int block[2];              /* [rows, cols] when has_block */
	enum ctq_dynamic dynamic;
	enum ctq_actorder actorder;
	const char *observer;      /* after defaulting; NULL for dynamic=true */
	const char *scale_dtype;   /* NULL when absent */
	const char *zp_dtype;      /* after defaulting */
	const char *path;          /* JSON path of this args object */
};

/* One QuantizationScheme (§2.2). */
struct ctq_qscheme {
	const char **targets; /* (n_targets) */
	const char **target_paths;
	size_t n_targets;
	const struct ctq_qargs *weights; /* NULL when absent or null */
	const struct ctq_qargs *input;
	const struct ctq_qargs *output;
	const char *format;   /* group format; NULL when absent or null */
	/* A group format compressed-tensors' QuantizationScheme refuses
	 * (mixed-precision, a value outside CompressionFormat): an error of
	 * the config under strict and ct, resolved at plan time; vLLM never
	 * validates a group's format and compares it by value. NULL: fine. */
	const char *format_error;
	const char *format_error_path;
	/* What compressed-tensors refuses (invalid-config) and vLLM never reads:
	 * any args of a group vLLM drops unread (from_config: exactly one target
	 * ending in "Attention"; the args are left out), and QuantizationScheme's
	 * own checks of the activations (channel / block input strategies,
	 * actorder; quant_scheme.py validate_model_after: vLLM builds
	 * QuantizationArgs only; the args are kept). An error of the config
	 * under strict and ct, resolved at plan time. NULL: fine. */
	const char *args_error;
	const char *args_error_path;
};

struct ctq_qgroup {
	const char *name;
	const char *path;     /* JSON path of the group value */
	bool preset_form;     /* the value was a list of targets (§3.3) */
	const char *preset;   /* upper-cased preset name when preset_form */
	struct ctq_qscheme scheme;
};

enum ctq_qlocation {
	CTQ_QLOC_NONE,        /* no block: the model is not quantized */
	CTQ_QLOC_ROOT,        /* quantization_config */
	CTQ_QLOC_TEXT_CONFIG, /* text_config.quantization_config */
	CTQ_QLOC_LEGACY,      /* compression_config */
	CTQ_QLOC_BARE,        /* the file is the block (quantization_config.json) */
};

struct ctq_parse_options {
	bool accept_unknown_keys; /* pre-0.11 producers: drop unknown args/scheme keys */
	const char *ct_version;   /* preset table version; NULL: the config's `version`, else HEAD */
};

struct ctq_qconfig {
	struct ctq_arena arena;
	cJSON *raw;                 /* whole file, owned; for diagnostics */
	enum ctq_qlocation location;
	bool nested;                /* an inner quantization_config was unwrapped */
	const char *block_path;     /* "quantization_config", "" for bare, ... */
	const char *quant_method;   /* normalised */
	const char *format;         /* global format; NULL when absent */
	const char *status;         /* quantization_status; NULL when absent */
	const char *version;        /* NULL when absent */
	int preset_version;         /* major*10000 + minor*100 + patch used for presets */
	struct ctq_qgroup *groups;  /* (n_groups) in file order */
	size_t n_groups;
	const char **ignore;        /* (n_ignore) */
	const char **ignore_paths;
	size_t n_ignore;
	const struct ctq_qargs *kv_cache; /* NULL when absent or null */
	/* A kv_cache_scheme compressed-tensors refuses (invalid-config; kv_cache
	 * then NULL): an error of the config under strict and ct, and under
	 * vllm where the tree has an Attention layer (whose KV-cache method
	 * reads the scheme); vLLM never reads it otherwise (MLA, DiT). */
	const char *kv_error;
	const char *kv_error_path;
	bool sparsity_targets;      /* sparsity_config with non-empty targets */
	bool transform_groups;      /* transform_config with config_groups */
	size_t n_unknown_top_keys;  /* kept, not interpreted */
};

const char *ctq_qlocation_name(enum ctq_qlocation loc);
const char *ctq_strategy_name(enum ctq_strategy s);
const char *ctq_qtype_name(enum ctq_qtype t);

/* Parses a config.json body (or a standalone quantization_config.json) that
 * the caller owns; `root` is deep-copied into cfg->raw. opt may be NULL.
 * Errors: parse-error, invalid-config, unknown-preset, unsupported-format,
 * out-of-memory. On error cfg is left freeable. */
enum ctq_status ctq_qconfig_parse(struct ctq_qconfig *cfg, const cJSON *root,
				  const struct ctq_parse_options *opt,
				  struct ctq_error *err);

/* Reads PATH: a config.json, a quantization_config.json, or a checkpoint
 * directory holding config.json. */
enum ctq_status ctq_qconfig_load(struct ctq_qconfig *cfg, const char *path,
				 const struct ctq_parse_options *opt,
				 struct ctq_error *err);

void ctq_qconfig_free(struct ctq_qconfig *cfg);

/* The format in force for a group: its own, else the global one; NULL if
 * neither exists. */
const char *ctq_qconfig_group_format(const struct ctq_qconfig *cfg,
				     const struct ctq_qgroup *g);

/* Preset expansion (§3.1/§3.2) for an upper-cased name at a CT version
 * (major*10000 + minor*100 + patch). Fills scheme (targets untouched) and
 * the preset's inferred format. Returns false when the name is not a preset
 * of that version. Storage comes from arena; on exhaustion scheme->weights
 * is left NULL for a quantized preset (the caller reports out-of-memory). */
bool ctq_preset_expand(const char *name, int version, struct ctq_arena *arena,
		       struct ctq_qscheme *scheme, const char **format);

/* Parses "X.Y" / "X.Y.Z" (an optional leading 'v'); -1 when malformed. */
int ctq_version_parse(const char *s);

#define CTQ_CT_VERSION_HEAD 2000

#endif
