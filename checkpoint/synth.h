/* ctq synthetic models: Hugging Face checkpoints (config.json,
 * generation_config.json, BF16 safetensors with the transformers tensor
 * names) of Qwen3, Qwen2 and Llama shapes with random weights, so that the
 * quantizer, loader, kernels and runner can be exercised at real geometry
 * without downloading a model. Plus the streaming sharded writer those
 * checkpoints and the quantizer's output go through.
 *
 * Weights follow transformers' initialisation (initializer_range 0.02):
 * linear and embedding weights and biases N(0, 0.02); RMSNorm weights
 * 1 + N(0, 0.02). With outliers, CTQ_SYNTH_N_OUTLIERS hidden channels
 * (chosen by the seed, the same in every layer) of every input_layernorm and
 * post_attention_layernorm weight are multiplied by CTQ_SYNTH_OUTLIER_GAIN,
 * so the activations entering q/k/v and gate/up carry outlier channels as
 * trained LLMs' do. Values are drawn in f64 and rounded once to BF16.
 *
 * Determinism: every row of every tensor has its own generator, seeded from
 * (seed, FNV-1a hash of the tensor name, row), so a model is bit-identical
 * for a seed whatever the thread count, shard size or tensor order. (The
 * normal draws use libm log/sqrt; another libm may differ in a last bit.)
 *
 * What it is not: a trained model (its outputs are noise), or a tokenizer.
 */
#ifndef CTQ_CHECKPOINT_SYNTH_H
#define CTQ_CHECKPOINT_SYNTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "core/dtype.h"
#include "core/status.h"
#include "checkpoint/safetensors.h"

#define CTQ_SYNTH_N_OUTLIERS 4
#define CTQ_SYNTH_OUTLIER_GAIN 50.0
#define CTQ_SYNTH_INIT_STD 0.02 /* transformers' initializer_range */
/* transformers' save_pretrained default max_shard_size "5GB" (10^9 bytes
 * per GB, as huggingface_hub parses it). */
#define CTQ_HF_MAX_SHARD_BYTES 5000000000ULL

/* A model to make. ctq_synth_spec_init fills it from an architecture and a
 * preset; a caller may then change layers, seed, outliers, tie, logit gain. */
struct ctq_synth_spec {
	/* "qwen3", "qwen2", "llama"; or, for inspect / probe / quantize only
	 * (the runner does not execute them), "qwen3_moe" and "qwen_image_dit"
	 * (static strings) */
	const char *arch;
	const char *preset; /* "tiny", "qwen3-0.6b-shape", "qwen3-4b-shape" */
	long hidden_size, intermediate_size, num_hidden_layers;
	long num_attention_heads, num_key_value_heads, head_dim;
	long vocab_size, max_position_embeddings;
	long bos_token_id, eos_token_id;
	double rope_theta, rms_norm_eps;
	bool tie_word_embeddings;
	bool attention_bias; /* q/k/v biases: qwen2 */
	bool qk_norm;        /* q_norm / k_norm weights: qwen3 */
	uint64_t seed;
	bool outliers;
	/* model.norm.weight x logit_gain (0 or 1: none). The logits are linear
	 * in the final norm's weight, so the gain multiplies every logit: a
	 * random model's N(0, 0.02) weights give next-token distributions near
	 * uniform, a gain of ~30 gives them a trained model's peak (perplexity
	 * on text in the tens to hundreds, not the vocabulary size). */
	double logit_gain;
	/* qwen3_moe: every layer sparse (decoder_sparse_step 1) */
	long num_experts, num_experts_per_tok, moe_intermediate_size;
	/* qwen_image_dit (diffusers QwenImageTransformer2DModel): num_layers =
	 * num_hidden_layers, heads x head_dim = hidden_size */
	long in_channels, out_channels, joint_attention_dim, patch_size;
};

/* Presets (hidden, layers, heads, kv heads, head_dim, intermediate, vocab;
 * all tie the embeddings):
 *   tiny              64, 2, 4, 2, 16, 176, 512 (runs in milliseconds)
 *   qwen3-0.6b-shape  1024, 28, 16, 8, 128, 3072, 151936
 *   qwen3-4b-shape    2560, 36, 32, 8, 128, 9728, 151936
 * rope_theta: qwen3 and qwen2 1e6, llama 5e5; rms_norm_eps 1e-6; seed 0.
 * qwen3_moe takes tiny (tiny's qwen3 with 8 experts of
 * moe_intermediate_size 32, 2 per token) or qwen3-30b-a3b-shape (hidden
 * 2048, 48 layers, 32/4 heads of 128, 128 experts of 768, 8 per token,
 * vocab 151936); qwen_image_dit tiny (2 blocks, 4 heads of 16:
 * inner 64, 16 in / 4 out channels, joint attention dim 64, patch 2) or
 * qwen-image-shape (60 blocks, 24 heads of 128, 64 / 16 channels, joint
 * attention dim 3584). Their tensors are those of the module
 * tree quant/modules.c enumerates for the config (Linear and router
 * weights, biases for the DiT's Linears, the norms).
 * Errors: usage (unknown arch or preset, naming the accepted ones). */
enum ctq_status ctq_synth_spec_init(struct ctq_synth_spec *s, const char *arch,
				    const char *preset, struct ctq_error *err);

/* The outlier hidden channels of a spec, ascending and distinct, in
 * [0, hidden_size) (a function of seed and hidden_size only). */
void ctq_synth_outlier_channels(const struct ctq_synth_spec *s,
				long out[CTQ_SYNTH_N_OUTLIERS]);

/* config.json and generation_config.json bodies (Hugging Face field names
 * for the architecture, plus "ctq_synthetic": {preset, seed, outliers,
 * outlier_channels} for provenance). Both returned owned (cJSON_Delete).
 * Errors: usage (a shape that does not hold together: zero sizes, kv heads
 * not dividing heads), out-of-memory. */
enum ctq_status ctq_synth_config(const struct ctq_synth_spec *s, cJSON **config,
				 cJSON **generation, struct ctq_error *err);

/* Progress of a long write: called after each tensor is produced, with its
 * name, and after each safetensors file is written, with the file name
 * (ending in ".safetensors"); bytes_done counts the tensor data produced so
 * far out of bytes_total. ctx is the caller's. */
typedef void (*ctq_progress_fn)(void *ctx, const char *tensor,
				uint64_t bytes_done, uint64_t bytes_total);

/* Writes the model into dir (created if missing; expected empty): the two
 * JSON files (indent 2, sorted keys, "\n" as transformers writes them) and
 * the weights in state-dict order (embed_tokens; per layer q, k, v, o (with
 * their biases), q_norm, k_norm, gate, up, down, input_layernorm,
 * post_attention_layernorm; norm; lm_head when untied), sharded at
 * max_shard_bytes (0: CTQ_HF_MAX_SHARD_BYTES) as ctq_stream_write does.
 * Memory: one shard's tensors at a time. progress may be NULL.
 * Errors: usage (bad spec), io-error, out-of-memory. A failed write may
 * leave files in dir: write into a temporary directory and rename it. */
enum ctq_status ctq_synth_write(const struct ctq_synth_spec *s, const char *dir,
				uint64_t max_shard_bytes, ctq_progress_fn progress,
				void *ctx, struct ctq_error *err);

/* ---- streaming sharded writer --------------------------------------------
 *
 * ctq_checkpoint_write (checkpoint/safetensors.h) needs every tensor in memory at
 * once; this writes the same layout while holding one shard's data at a time:
 * tensors are produced shard by shard into buffers it allocates, or borrowed
 * (e.g. from a mapped input checkpoint). */

struct ctq_stream_tensor {
	const char *name;                /* borrowed */
	enum ctq_dtype dtype;
	int ndim;
	int64_t shape[CTQ_ST_MAX_NDIM];
	uint64_t n_bytes;                /* dtype size x product(shape) */
	const void *borrowed;            /* (n_bytes) written as is, or NULL:
					  * produce() fills a buffer */
};

/* Fills dst (t->n_bytes, malloc-aligned) with tensor i of the list. Called
 * once per tensor; see ctq_stream_write for the order. */
typedef enum ctq_status (*ctq_stream_produce_fn)(void *ctx, size_t i,
						 const struct ctq_stream_tensor *t,
						 void *dst, struct ctq_error *err);

/* Writes tensors t[0..n) into dir (created if missing) exactly as
 * ctq_checkpoint_write would lay out the same tensors added in this order:
 * huggingface_hub's split at max_shard_bytes (0: no limit), one
 * model.safetensors or model-0000i-of-0000N.safetensors shards plus
 * model.safetensors.index.json ({"metadata": {"total_size"}, "weight_map"},
 * indent 2, sorted keys). Every shard carries __metadata__ {"format": "pt"}
 * as transformers writes it (stem: the files' names, CTQ_ST_STEM or
 * diffusers' CTQ_ST_DIFFUSERS_STEM; NULL is CTQ_ST_STEM). Each shard's produced buffers are freed once
 * the shard is written; progress (may be NULL) is called after each tensor
 * and each file written (ctq_progress_fn). Tensors are produced shard by
 * shard, in list order within a shard.
 * Errors: those of produce(), checkpoint-error (a tensor the safetensors
 * writer refuses), io-error, out-of-memory. */
enum ctq_status ctq_stream_write(const char *dir, const char *stem, const struct ctq_stream_tensor *t,
				 size_t n, uint64_t max_shard_bytes,
				 ctq_stream_produce_fn produce, void *produce_ctx,
				 ctq_progress_fn progress, void *progress_ctx,
				 struct ctq_error *err);

/* Writes v as transformers writes a JSON file: json.dumps(indent=2,
 * sort_keys=True) + "\n", atomically. Errors: io-error, out-of-memory,
 * parse-error (v holds what Python cannot write). */
enum ctq_status ctq_json_save_hf(const char *path, const cJSON *v,
				 struct ctq_error *err);

#endif
