/* ctq transformer runner: Qwen3 (q/k norm), Qwen2 (q/k/v bias) and Llama
 * (llama3 rope scaling) on any backend of backend/backend.h, one code path.
 * Every linear runs as the resolved plan says (w8a8-int8 or unquantized), so
 * a hybrid checkpoint executes mixed; q/k/v and gate/up run fused (the plan
 * guarantees the members agree).
 *
 * Batching: a forward call takes T tokens of any number of sequences, each
 * token with its KV-cache slot and position; tokens of one sequence must be
 * in position order. Logits come back only for the rows asked for.
 */
#ifndef CTQ_MODEL_RUNNER_H
#define CTQ_MODEL_RUNNER_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"
#include "quant/resolve.h"
#include "backend/backend.h"

struct ctq_model_config {
	const char *arch;       /* qwen3, qwen2, llama */
	int64_t hidden, layers, heads, kv_heads, head_dim, intermediate, vocab;
	float rms_eps;
	double rope_theta;
	bool llama3_rope;       /* rope_type llama3 (in rope_parameters or rope_scaling) */
	double rope_factor, rope_low, rope_high, rope_orig_max;
	bool tie, qk_norm, qkv_bias;
	int32_t bos_id, eos_id; /* -1 when unknown */
};

/* Tensor parallelism inside one process: one runner per rank (each on its
 * own backend), ranks run their forward passes concurrently in threads and
 * sum the row-parallel outputs (after o_proj and down_proj) through this
 * group. The sum runs in rank order, so results do not depend on timing.
 * Only backends with host-visible activations (reference) use it; GPUs use
 * NCCL (step 9). */
struct ctq_tp_group;

/* Where an observer sees a linear's input: the output of input_layernorm
 * (q/k/v's input), of post_attention_layernorm (gate/up's), of
 * act_fn(gate) * up (down's) and the attention's output (o_proj's). Each
 * site also names the runtime linear it feeds (ctq_runner_set_dense). */
enum ctq_observe_site {
	CTQ_OBSERVE_QKV = 0,
	CTQ_OBSERVE_GATE_UP = 1,
	CTQ_OBSERVE_DOWN = 2,
	CTQ_OBSERVE_O = 3,
};
#define CTQ_OBSERVE_N_SITES 4

/* Called with layer l's activations x (host f32 (M, K), borrowed for the
 * call) as they enter the linears of site, before the linear runs. On a
 * backend whose activations are BF16 in its own memory (CUDA) x is their
 * copy on the host, each value exact in f32. */
typedef void (*ctq_observe_fn)(void *ctx, int64_t layer, enum ctq_observe_site site,
			       const float *x, int64_t M, int64_t K);

/* Called at the layer boundaries of a forward call: after the embedding
 * (layer -1) and after each layer, with x the residual stream there (host
 * f32 (T, H), the call's tokens), which the hook may read and overwrite.
 * On a BF16 backend x is a host f32 copy, and what the hook leaves there
 * goes back rounded to BF16 (exact for values it read from the stream).
 * Returns the next layer to run: layer + 1 to go on, a later one to skip
 * layers, the layer count to go to the final norm, or a negative value to
 * end the call there (it then returns no logits: ask for none). Layer-wise
 * calibration (eval/calib.h) runs one layer at a time on cached inputs. */
typedef int64_t (*ctq_layer_end_fn)(void *ctx, int64_t layer, float *x, int64_t T, int64_t H);

struct ctq_runner_options {
	int64_t max_slots;   /* sequences held in the KV cache at once */
	int64_t max_len;     /* positions per sequence */
	int64_t max_tokens;  /* tokens per forward call */
	int tp, rank;        /* 0/0 or 1/0: no tensor parallelism */
	bool no_graphs;      /* never replay decode steps as device graphs */
	bool no_fuse;        /* unfused ops only: no quantization inside RMSNorm / SiLU·mul, no fused q/k norm + RoPE (A/B checks) */
	struct ctq_tp_group *group; /* required when tp > 1 */
	ctq_observe_fn observe; /* or NULL; sees every producer's output unfused
				 * (calibration, eval/calib.h) as host f32 on any
				 * backend; tp 1 only: ctq_runner_load refuses it
				 * with tensor parallelism */
	void *observe_ctx;
	ctq_layer_end_fn layer_end; /* or NULL; the observer's restrictions */
	void *layer_end_ctx;
};

struct ctq_lin {
	bool quantized;
	int64_t N, K;
	void *w;        /* int8 (N, K) or a dense weight, backend memory */
	float *scale;   /* (N) backend memory, quantized only */
	float *bias;    /* (N) backend memory or NULL */
};

struct ctq_layer {
	float *in_norm, *post_norm, *q_norm, *k_norm; /* backend f32 */
	struct ctq_lin qkv, o, gu, down;
};

struct ctq_runner {
	struct ctq_backend *b;  /* borrowed */
	struct ctq_model_config cfg;
	struct ctq_runner_options opt;
	void *embed;            /* dense (V, H) */
	struct ctq_lin lm_head; /* w == embed when tied and unquantized */
	float *final_norm;
	struct ctq_layer *layers;
	void **k_cache, **v_cache;  /* per layer (slots, max_len, kv_heads, d) */
	float *inv_freq;            /* (d/2) backend f32 */
	/* scratch, backend memory */
	void *x, *h, *qkv, *attn, *gu, *act, *ws, *rows, *logits;
	int32_t *d_ids, *d_slot, *d_pos, *d_rows;
	const int32_t *call_slot, *call_pos; /* host (T): the call in progress's, borrowed; else NULL */
	size_t ws_bytes;
	int64_t heads_local, kv_local, inter_local; /* this rank's share */
	void *graphs[65];        /* decode graphs by token count (1..64) */
	int64_t graph_replays;
	int64_t n_quantized, n_dense;  /* linear modules by scheme */
	uint64_t weight_bytes;         /* bytes of weights on the backend */
	/* an observer's host view of BF16 activations (act_bytes 2): the
	 * downloaded bits and their f32 values, obs_cap elements each */
	uint16_t *obs_bf16;
	float *obs_f32;
	int64_t obs_cap;
};

/* Loads the checkpoint in dir onto backend b under the strict plan (which
 * must be executable). Errors: any of config, plan, checkpoint, backend. */
enum ctq_status ctq_runner_load(struct ctq_runner *r, struct ctq_backend *b, const char *dir,
				const struct ctq_runner_options *opt, struct ctq_error *err);
void ctq_runner_free(struct ctq_runner *r);

/* One forward pass. ids, slot, pos: host (T). out_rows: host (n_out) indices
 * into the T tokens; logits: host f32 (n_out, vocab). */
enum ctq_status ctq_runner_forward(struct ctq_runner *r, const int32_t *ids, const int32_t *slot,
				   const int32_t *pos, int64_t T, const int64_t *out_rows,
				   int64_t n_out, float *logits, struct ctq_error *err);

/* The same forward pass, giving the greedy pick of each output row
 * (ctq_argmax of its logits) into next (host, n_out) instead of the logits:
 * on the device where the backend has rows_argmax, so that a decode step
 * brings back n_out int32 rather than n_out rows of vocab logits. */
enum ctq_status ctq_runner_forward_next(struct ctq_runner *r, const int32_t *ids,
					const int32_t *slot, const int32_t *pos, int64_t T,
					const int64_t *out_rows, int64_t n_out, int32_t *next,
					struct ctq_error *err);

/* Replaces the weight of layer l's unquantized linear `which` (fused
 * members' rows in order: q, k, v / gate, up) with w (N, K) host bf16,
 * borrowed, N and K the linear's: layer-wise calibration runs each layer
 * with its rounded weights, dequantized, as llm-compressor propagates.
 * Errors: usage (a W8A8 linear, a layer out of range), the backend's (the
 * old weight is kept then). */
enum ctq_status ctq_runner_set_dense(struct ctq_runner *r, int64_t l, enum ctq_observe_site which,
				     const uint16_t *w, struct ctq_error *err);

/* Runs ctq_runner_forward on every rank concurrently with the same inputs;
 * logits come from rank 0 (every rank computes the same ones). */
enum ctq_status ctq_runner_tp_forward(struct ctq_runner *ranks, int tp, const int32_t *ids,
				      const int32_t *slot, const int32_t *pos, int64_t T,
				      const int64_t *out_rows, int64_t n_out, float *logits,
				      struct ctq_error *err);

/* Parses the model fields of a config.json (text_config when present). */
enum ctq_status ctq_model_config_parse(struct ctq_model_config *c, const cJSON *root,
				       struct ctq_error *err);

/* The index of the largest of v[0..n-1], the first on ties (greedy decoding). */
int32_t ctq_argmax(const float *v, int64_t n);

/* The max (*max) and the log of sum(exp(logits[i] - *max)) of one row, both in
 * double: log p(i) = logits[i] - *max - the value returned. */
double ctq_log_softmax_norm(const float *logits, int64_t vocab, double *max);

/* log-softmax of one row of logits at token: log p(token). */
double ctq_logprob(const float *logits, int64_t vocab, int32_t token);

#endif
