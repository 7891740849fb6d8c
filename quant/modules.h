/* ctq module enumeration: the modules a checkpoint's model has, named as
 * Hugging Face names them, with their class hierarchy (most derived first),
 * the vLLM runtime class, and the fused sets (q/k/v, gate/up) serving
 * engines execute as one GEMM.
 *
 * Only modules that quantization can touch are listed: Linear, Embedding and
 * attention modules (for KV-cache and attention schemes).
 */
#ifndef CTQ_QUANT_MODULES_H
#define CTQ_QUANT_MODULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "core/arena.h"
#include "core/status.h"

enum ctq_module_kind {
	CTQ_MODULE_LINEAR,
	CTQ_MODULE_EMBEDDING,
	CTQ_MODULE_ATTENTION,
	CTQ_MODULE_OTHER,
};

struct ctq_module {
	const char *name;
	const char **types;    /* (n_types) class names, most derived first */
	size_t n_types;
	const char *vllm_type; /* vLLM runtime class of the layer it lives in */
	enum ctq_module_kind kind;
	int fused;             /* index into ctq_modules.fused, or -1 */
	bool guessed;          /* found in the checkpoint's tensors only: its
				* class (Linear or Embedding) is a guess */
	int64_t out_features;  /* the (out, in) of its X.weight: from the tensors, */
	int64_t in_features;   /* or the config's shape; 0 when not known */
	/* Mixture of experts: the block (index into ctq_modules.moe), the
	 * expert and its projection (0 gate, 1 up, 2 down); -1 elsewhere. */
	int moe, expert, expert_proj;
	/* transformers 5 holds this expert in a fused 3-D experts module (no
	 * Linear of its own): compressed-tensors gives it no scheme. */
	bool ct_fused;
	/* vLLM builds it with quant_config=None (MoE routers, Qwen2-MoE's
	 * shared_expert_gate): never quantized there. */
	bool vllm_unquantized;
	bool router;           /* a MoE block's router (<parent>.gate) */
	/* The name transformers 5.23 gives the module, where it renames the
	 * checkpoint's at load (conversion_mapping.py; NULL: the same):
	 * compressed-tensors matches targets and ignore against the model's
	 * names, so the ct profile does. Llava's CLIP tower:
	 * CLIPVisionModel's PrefixChange(prefix_to_remove="vision_model"). */
	const char *ct_name;
};

/* A mixture-of-experts block as vLLM runs it: one FusedMoE layer named
 * <parent>.experts holding every expert's gate, up and down. */
struct ctq_moe_block {
	const char *runtime_name; /* e.g. model.layers.1.mlp.experts */
	size_t n_experts;
	long *member;             /* (n_experts, 3) module index of gate, up, down; -1 absent */
};

/* A fused runtime layer: q/k/v -> <parent>.qkv_proj, gate/up -> gate_up_proj. */
struct ctq_fused_set {
	const char *runtime_name; /* e.g. model.layers.0.self_attn.qkv_proj */
	const char *runtime_type; /* QKVParallelLinear, MergedColumnParallelLinear */
	const char *key;          /* qkv_proj, gate_up_proj */
	size_t members[3];        /* module indices, in shard order */
	size_t n_members;
	bool unpacked;            /* not in vLLM's packed_modules_mapping */
};

/* Model shape needed by the TP planner (zero when unknown). */
struct ctq_arch;

struct ctq_model_shape {
	const char *arch;  /* the row's model_type (qwen3, qwen3_moe, ...) */
	const struct ctq_arch *row; /* quant/arch.h; NULL for explicit modules */
	int layers;
	long hidden_size, intermediate_size, vocab_size;
	long num_attention_heads, num_key_value_heads, head_dim;
	bool tie_word_embeddings;
	bool attention_bias;  /* qwen2: q/k/v carry a bias */
	/* *ForSequenceClassification: the head is `score` (hidden_size ->
	 * num_labels), not lm_head; num_labels from the config (num_labels, or
	 * id2label's size; transformers' default 2). */
	bool seq_cls;
	long num_labels;
	/* Mixture of experts (n_experts 0: dense): num_experts,
	 * num_local_experts or n_routed_experts; the experts' intermediate size
	 * (moe_intermediate_size, Mixtral's intermediate_size); the shared
	 * experts' (Qwen2-MoE shared_expert_intermediate_size, DeepSeek
	 * moe_intermediate_size * n_shared_experts). */
	long n_experts, moe_intermediate_size, shared_intermediate_size;
	/* DeepSeek-V3 MLA: q_lora_rank (0: q_proj), kv_lora_rank, head dims. */
	long q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim;
	/* vLLM's packed_modules_mapping lacks gate_up_proj (qwen3_moe.py
	 * Qwen3MoeForCausalLM adds it only when mlp_only_layers is set): a
	 * dense layer's mlp.gate_up_proj is then matched by its own name alone
	 * (no shard ignore check, no shard fallback). */
	bool vllm_gate_up_unpacked;
};

/* The seven linear modules of a decoder layer of the Llama family (Llama,
 * Qwen2, Qwen3), named as Hugging Face names them, in model order: the one
 * table the module enumeration, the shard planner, the quantizer's shape
 * check and the runner read their names and layouts from. */
enum ctq_hf_linear {
	CTQ_HF_Q,
	CTQ_HF_K,
	CTQ_HF_V,
	CTQ_HF_O,
	CTQ_HF_GATE,
	CTQ_HF_UP,
	CTQ_HF_DOWN,
	CTQ_HF_LINEARS
};

struct ctq_hf_linear_info {
	const char *parent; /* within the layer: "self_attn" or "mlp" */
	const char *leaf;   /* "q_proj", ... */
	bool row_parallel;  /* tensor parallelism splits its input (o, down), else its output */
};

extern const struct ctq_hf_linear_info ctq_hf_linears[CTQ_HF_LINEARS];

/* The linear named leaf (the last component of a module name); -1 when it
 * is none of the seven. */
int ctq_hf_linear_find(const char *leaf);

struct ctq_modules;
struct ctq_module;

/* Which of the seven linears module m of mods is, as the Llama layout
 * places it (a direct child of a layer's self_attn / mlp in a tree with
 * separate q/k/v: its features and split from the model's heads and
 * intermediate size), or -1 (experts, shared experts, MLA, stored-fused,
 * guessed and other modules, which carry their own (out, in)). */
int ctq_hf_linear_of(const struct ctq_modules *mods, const struct ctq_module *m);

/* The (out, in) features of linear l's weight in a model of shape s. */
void ctq_hf_linear_features(const struct ctq_model_shape *s, enum ctq_hf_linear l, long *out,
			    long *in);

/* vLLM's names for a model whose layers it names otherwise (Llava, Qwen3-VL):
 * the model class's hf_to_vllm_mapper orig_to_new_prefix (apply_vllm_mapper
 * maps the targets and ignore entries that are layer paths, "." in them and
 * no "re:"; regexes stay and are matched against vLLM's layer names), and
 * the runtime name of the head. */
struct ctq_vllm_names {
	const char *const (*prefix)[2]; /* (from, to), first match wins */
	size_t n_prefix;
	const char *lm_head;            /* vLLM's layer for HF "lm_head" */
};

struct ctq_modules {
	struct ctq_arena arena;
	struct ctq_module *v;
	size_t n, cap;
	/* Modules of the model that no scheme is ever assigned to but that
	 * compressed-tensors' tree tests see (is_narrow_match looks at an
	 * attention module's parent and at all of its children): the decoder
	 * layers and qwen3's q_norm / k_norm. Empty for explicit module lists. */
	struct ctq_module *aux;
	size_t n_aux, cap_aux;
	struct ctq_fused_set *fused;
	size_t n_fused;
	size_t n_guessed;     /* modules with guessed set: from the tensors only */
	struct ctq_moe_block *moe;
	size_t n_moe;
	struct ctq_model_shape shape;
	const struct ctq_vllm_names *vnames; /* NULL: vLLM's names are HF's */
};

void ctq_modules_init(struct ctq_modules *m);
void ctq_modules_free(struct ctq_modules *m);

/* Adds one module; types are copied. vllm_type may be NULL (derived). */
enum ctq_status ctq_modules_add(struct ctq_modules *m, const char *name,
				const char *const *types, size_t n_types,
				const char *vllm_type, struct ctq_error *err);

/* Adds one structural module (see aux above); types are copied. */
enum ctq_status ctq_modules_add_aux(struct ctq_modules *m, const char *name,
				    const char *const *types, size_t n_types,
				    struct ctq_error *err);

/* A module or structural module by name, or NULL. */
const struct ctq_module *ctq_modules_lookup(const struct ctq_modules *m,
					    const char *name);

/* The most decoder layers ctq enumerates. */
#define CTQ_MODULES_MAX_LAYERS 4096

/* Enumerates an architecture (qwen3, qwen2, llama) with `layers` decoder
 * layers (1 to CTQ_MODULES_MAX_LAYERS). prefix replaces the leading
 * "model." (NULL: "model."). */
enum ctq_status ctq_modules_from_arch(struct ctq_modules *m, const char *arch,
				      int layers, const char *prefix,
				      struct ctq_error *err);

/* Reads model_type / architectures and the shape fields of a config.json
 * (text_config when present) and enumerates. path names the object in errors.
 * An architectures[0] of Qwen3/Qwen2/Llama ForSequenceClassification gives
 * the head `score` (transformers: nn.Linear(hidden_size, num_labels); vLLM's
 * as_seq_cls_model: a ReplicatedLinear built with quant_config) and no
 * lm_head. */
enum ctq_status ctq_modules_from_config(struct ctq_modules *m,
					const cJSON *config, const char *path,
					const char *prefix, struct ctq_error *err);

/* One tensor of a checkpoint as the module tree reads it: its name and
 * rank (checkpoint/target.c fills these from the safetensors headers, a
 * suite case from its "tensors"). Borrowed. */
struct ctq_tensor_name {
	const char *name;
	int ndim;
	const int64_t *shape; /* (ndim) or NULL */
};

/* The module tree of a checkpoint whose tensors are t[0..n): every 2-D
 * tensor X.weight (or X.weight_packed, compressed-tensors' packed formats)
 * is a module X. When the config names a known architecture (qwen3, qwen2,
 * llama; ctq_modules_from_config) its tree comes first, under the prefix
 * the tensors use for embed_tokens (language_model.model., model.
 * language_model., ...): a Linear or Embedding of it that the checkpoint
 * lacks is a checkpoint-error (a tree of another model), except a tied
 * lm_head (the resolvers' tied-head rules need it; the runner uses the
 * embedding) and an lm_head the checkpoint holds under a prefix
 * (language_model.lm_head), which takes that name. Every other module of
 * the tensors is added after it with a guessed class (guessed, n_guessed):
 * Embedding when its name says so (embed_tokens, wte, wpe,
 * word_embeddings, an "embeddings" component), else Linear, with the
 * hierarchy Linear, Module compressed-tensors would see for an nn.Linear.
 * With an unknown model_type every module is guessed. Norms (1-D) and
 * convolutions (4-D) are no modules. path names the config in errors.
 * Errors: invalid-config (the config, as ctq_modules_from_config),
 * checkpoint-error (no 2-D weight at all; a known module missing),
 * out-of-memory. */
enum ctq_status ctq_modules_from_tensors(struct ctq_modules *m, const cJSON *config,
					 const char *path, const struct ctq_tensor_name *t,
					 size_t n, struct ctq_error *err);

/* Derives fused sets and vLLM classes; call after the last add. */
enum ctq_status ctq_modules_finish(struct ctq_modules *m, struct ctq_error *err);

/* Index of a module by name, or -1. */
long ctq_modules_find(const struct ctq_modules *m, const char *name);

/* Maps a model_type or architectures[0] to qwen3/qwen2/llama; NULL if not. */
const char *ctq_arch_normalise(const char *model_type);

/* Refuses an architecture named beside a config (--arch, a suite case's
 * model.arch) that contradicts the config's model_type (text_config's when
 * present): qwen3 on a qwen3_moe config would list dense MLP modules the
 * checkpoint does not have. A config without model_type accepts any arch.
 * file names the config in the message (e.g. "config.json"); flag names
 * the option ("--arch"). Errors: invalid-config at the model_type's path
 * ("model_type" or "text_config.model_type"). */
enum ctq_status ctq_modules_check_arch(const cJSON *config, const char *arch,
				       const char *flag, const char *file,
				       struct ctq_error *err);

#endif
