/* ctq SmoothQuant: the weight transform of llm-compressor's
 * SmoothQuantModifier (src/llmcompressor/modifiers/smoothquant/base.py,
 * utils.py; docs/models.md quotes the lines) applied to a BF16 / F16 / F32
 * Hugging Face checkpoint, given per-channel activation ranges from a
 * calibration run (eval/calib.h fills them).
 *
 * Mappings: the library's DEFAULT_SMOOTHQUANT_MAPPINGS, which
 * MAPPINGS_REGISTRY gives LlamaForCausalLM, MistralForCausalLM and
 * Qwen2ForCausalLM, and every architecture not listed (Qwen3 included):
 *   [q_proj, k_proj, v_proj] <- input_layernorm
 *   [gate_proj, up_proj]     <- post_attention_layernorm
 * (no down_proj <- up_proj). For each mapping of each layer, with the
 * smooth layer's output observed per hidden channel j over the calibration
 * tokens (min_j, max_j):
 *   range_j  = max_j - min_j                       (activation_scales)
 *   wmax_j   = 2 * max over the balance layers' rows |W[n, j]|
 *   s_j      = range_j^a / wmax_j^(1 - a)   (range_j where wmax_j == 0)
 *   s_j      = max(s_j, 1e-5)                       (MINIMUM_SMOOTHING_SCALE)
 *   W[n, j] *= s_j for every balance layer; norm.weight[j] /= s_j
 * Under torch every step of s runs in the model's dtype (BF16 tensors: f32
 * arithmetic rounded to BF16 after each op); the clamp against an f32
 * tensor promotes s to f32, and the in-place weight updates compute in f32
 * and round to the weight's dtype. This does the same rounding for BF16 and
 * F16 weights (none for F32).
 *
 * What it is not: a calibrator (eval/calib.h), or a quantizer (the smoothed
 * checkpoint goes through checkpoint/quantize.h as any BF16 one). Biases of
 * the balance layers stay as they are, as the library leaves them.
 */
#ifndef CTQ_CHECKPOINT_SMOOTH_H
#define CTQ_CHECKPOINT_SMOOTH_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"

#define CTQ_SMOOTH_MIN_SCALE 1e-5f /* llm-compressor MINIMUM_SMOOTHING_SCALE */
#define CTQ_SMOOTH_N_MAPPINGS 2    /* input_layernorm, post_attention_layernorm */
/* The llm-compressor W8A8 examples' smoothing_strength (the modifier's own
 * default is 0.5). */
#define CTQ_SMOOTH_DEFAULT_ALPHA 0.8

/* Per-channel min and max of each smooth layer's output, as the library's
 * forward hooks keep them (SmoothQuantScale). */
struct ctq_smooth_stats {
	int64_t layers, hidden;
	float *min, *max;  /* (layers, CTQ_SMOOTH_N_MAPPINGS, hidden) owned */
	int64_t n_rows;    /* tokens observed per (layer, mapping), summed */
};

/* Allocates stats for layers x hidden with min = +inf, max = -inf.
 * Errors: usage (non-positive sizes), out-of-memory. */
enum ctq_status ctq_smooth_stats_init(struct ctq_smooth_stats *s, int64_t layers, int64_t hidden,
				      struct ctq_error *err);
void ctq_smooth_stats_free(struct ctq_smooth_stats *s);

/* Folds the rows x (M, hidden) host f32, borrowed, of the output of the
 * smooth layer `mapping` (0 input_layernorm, 1 post_attention_layernorm) of
 * layer l into s. Out-of-range l or mapping is ignored. */
void ctq_smooth_stats_add(struct ctq_smooth_stats *s, int64_t l, int mapping, const float *x,
			  int64_t M);

struct ctq_smooth_result {
	int64_t n_norms;        /* smooth layers rescaled */
	int64_t n_linears;      /* balance weights rescaled */
	float scale_min, scale_max; /* over every s_j */
};

/* The smoothing scales s (hidden) of one mapping: range (hidden) the
 * activation ranges max - min, wmax (hidden) the balance layers' 2 x column
 * amax, alpha, and dtype the model dtype their arithmetic rounds to (BF16,
 * F16 or F32; core/dtype.h values). */
void ctq_smooth_scales(const float *range, const float *wmax, int64_t hidden, double alpha,
		       int dtype, float *s);

/* Writes the smoothed copy of the checkpoint folder in (config.json and
 * safetensors, BF16 / F16 / F32 weights) into dir (created if missing,
 * expected empty): every tensor copied byte for byte but the balance
 * weights and the norms of the mappings, rescaled as above and written in
 * their own dtype; config.json and the tokenizer and generation files are
 * copied as they are. stats must cover every layer of the checkpoint
 * (model.layers.L.*) with its hidden size and hold observations.
 * Errors: usage (alpha outside [0, 1], stats without observations or not
 * matching the checkpoint), checkpoint-error (a missing or non-float
 * tensor, a shape that does not match), io-error, out-of-memory. dir may
 * hold partial output on failure. res may be NULL. */
enum ctq_status ctq_smooth_checkpoint(const char *in, const char *dir,
				      const struct ctq_smooth_stats *stats, double alpha,
				      struct ctq_smooth_result *res, struct ctq_error *err);

#endif
