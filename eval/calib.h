/* ctq calibration: the activation statistics a calibrating recipe needs
 * (ctq quantize --recipe smoothquant), from the BF16 model itself run on the
 * reference backend (f32 activations) or on CUDA (BF16 activations, as
 * llm-compressor's BF16 model runs; the runner hands its observer a host
 * f32 copy) over windows of a calibration text.
 *
 * Windows: the text (UTF-8) is tokenised with the model folder's
 * tokenizer.json, without special tokens; each of the n windows is len
 * consecutive tokens starting at a seeded uniform position in the token
 * stream (core/rng.h; windows may overlap). Where the tokenizer's
 * post-processor adds a BOS (Llama), each window starts with it and holds
 * len - 1 text tokens, as a tokenised calibration sample does.
 *
 * Statistics: the runner's activation observer (model/runner.h) sees the
 * output of every input_layernorm and post_attention_layernorm, which is
 * what llm-compressor's SmoothQuantModifier hooks; their per-channel min
 * and max go into a struct ctq_smooth_stats (checkpoint/smooth.h).
 *
 * GPTQ (ctq_calib_gptq): llm-compressor's sequential pipeline with its
 * GPTQModifier (src/llmcompressor/pipelines/sequential/pipeline.py and
 * modifiers/gptq/base.py at ab1ba3e), one decoder layer at a time. As the
 * library calibrates under DisableQuantization, the model runs unquantized
 * (BF16 weights, f32 activations on the reference backend, no activation
 * quantization); for layer l, every window's input to layer l (cached)
 * runs through layer l alone while an observer sums the Hessian of each
 * linear's input (q/k/v and gate/up share theirs; o_proj's is the
 * attention output, down_proj's act(gate) * up); each of the layer's
 * linears is then rounded by GPTQ (checkpoint/gptq.h), its weight in the
 * running model replaced by the rounded one dequantized (q * s in BF16, as
 * the library writes the compressed weight back), and layer l runs again
 * to give layer l + 1 its inputs: later layers calibrate on what the
 * already-rounded earlier ones compute. The runner's layer_end hook starts
 * each call at layer l from the cache and ends it after layer l, so the
 * whole costs about two forward passes.
 *
 * What it is not: a data set loader (one text file).
 */
#ifndef CTQ_EVAL_CALIB_H
#define CTQ_EVAL_CALIB_H

#include <stdint.h>

#include "core/status.h"
#include "checkpoint/smooth.h"
#include "checkpoint/gptq.h"
#include "checkpoint/synth.h"

/* The calibration windows of the text file text_path for the model folder
 * dir: *ids (n, len) host int32, returned owned (ctq_free), *n_text the
 * tokens of the whole text. Errors: usage (dir has no tokenizer.json, the
 * text tokenises to fewer tokens than a window, n or len < 1; the message
 * names the path), io-error (the text cannot be read), the tokenizer's. */
enum ctq_status ctq_calib_windows(const char *dir, const char *text_path, int64_t n, int64_t len,
				  uint64_t seed, int32_t **ids, int64_t *n_text,
				  struct ctq_error *err);

/* The same windows cut from a token stream given as ids: the file ids_path
 * holds decimal token ids separated by white space (e.g. a tokenizer's
 * output written one id a line, so that another tool calibrates on the same
 * tokens); no tokenizer is needed and no BOS is added. Errors: usage (a
 * token that is no integer in 0..2^31-1, fewer ids than a window; the
 * message names the file and byte), io-error, out-of-memory. The model
 * refuses ids outside its vocabulary when it runs them. */
enum ctq_status ctq_calib_windows_ids(const char *ids_path, int64_t n, int64_t len, uint64_t seed,
				      int32_t **ids, int64_t *n_text, struct ctq_error *err);

/* Writes the windows ids (n, len) to path, one window a line, its ids in
 * decimal separated by single spaces: the exact token windows a calibrating
 * recipe saw (BOS included where the tokenizer adds one), for another tool
 * to calibrate on the same samples (ctq quantize --save-calib; the oracle
 * tests/oracle/llmc_recipes.py feeds them to llm-compressor). Errors:
 * io-error. */
enum ctq_status ctq_calib_windows_write(const char *path, const int32_t *ids, int64_t n, int64_t len,
					struct ctq_error *err);

/* Runs the model in dir (unquantized) on backend ("reference", NULL for
 * it, or "cuda": BF16 activations, as a BF16 model runs in PyTorch) over
 * the n windows ids (n, len) and fills stats (initialised here; freed with
 * ctq_smooth_stats_free whatever the result). Errors: usage (an id outside
 * the model's vocabulary, a quantized checkpoint, an unknown backend), the
 * runner's (config, checkpoint), the backend's, out-of-memory. */
enum ctq_status ctq_calib_smooth_stats(const char *dir, const char *backend, const int32_t *ids,
				       int64_t n, int64_t len,
				       struct ctq_smooth_stats *stats, struct ctq_error *err);

struct ctq_calib_gptq_options {
	double dampening_frac;    /* [0, 1]; CTQ_GPTQ_DEFAULT_DAMPENING */
	int64_t block_size;       /* >= 1; CTQ_GPTQ_DEFAULT_BLOCK */
	bool actorder;            /* static activation ordering (ctq_gptq_hinv_init) */
	const char *backend;      /* the calibration forwards': NULL or "reference", or "cuda" */
	ctq_progress_fn progress; /* may be NULL: after each module, with its name */
	void *progress_ctx;
};

/* One module's GPTQ weight. */
struct ctq_calib_gptq_module {
	char *name;               /* "model.layers.L.self_attn.q_proj", owned */
	int64_t N, K;
	enum ctq_dtype dtype;     /* the unquantized weight's, and the scale's */
	int8_t *q;                /* (N, K) owned */
	void *scale;              /* (N) in dtype, owned */
	double loss;              /* the library's GPTQ loss */
	double rel_l2;            /* ||q * s - w|| / ||w|| */
};

struct ctq_calib_gptq_result {
	struct ctq_calib_gptq_module *mods; /* (n_mods) in model order, owned */
	size_t n_mods;
	int64_t n_fallback;       /* Hessians whose Cholesky failed (RTN used) */
	int64_t n_dead;           /* dead input columns, over every Hessian */
	int64_t n_tokens;         /* calibration tokens per Hessian */
};

void ctq_calib_gptq_result_free(struct ctq_calib_gptq_result *r);

/* GPTQ of the linears of the unquantized checkpoint src named in modules
 * (n_modules names, borrowed, e.g. a quantize result's; NULL: every
 * linear of the decoder layers; a fused set is taken by its first member)
 * over the n windows ids (n, len), on the reference backend, layer by
 * layer as above; the linears not named keep their weights. res is
 * initialised here and freed with ctq_calib_gptq_result_free whatever the
 * result. Errors: usage (an id outside the vocabulary, options out of
 * range, a quantized src), checkpoint-error (a weight of src missing or
 * not [N, K] float), the runner's, out-of-memory. */
enum ctq_status ctq_calib_gptq(const char *src, const char *const *modules, size_t n_modules,
			       const int32_t *ids, int64_t n, int64_t len,
			       const struct ctq_calib_gptq_options *opt, struct ctq_calib_gptq_result *res,
			       struct ctq_error *err);

/* ctq_quantize_options.weight_fn over a result (ctx): the module's GPTQ
 * weight and scale, err2 / norm2 against w; -3 when the result has no such
 * module or its shape or dtype differ. */
int64_t ctq_calib_gptq_weight(void *ctx, const char *module, const void *w, enum ctq_dtype dtype,
			      int64_t N, int64_t K, int8_t *q, void *scale, double *err2,
			      double *norm2);

#endif
