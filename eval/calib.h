/* ctq calibration: the activation statistics a calibrating recipe needs
 * (ctq quantize --recipe smoothquant), from the BF16 model itself run on the
 * reference backend over windows of a calibration text.
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
 * What it is not: a data set loader (one text file), or GPTQ's Hessians.
 */
#ifndef CTQ_EVAL_CALIB_H
#define CTQ_EVAL_CALIB_H

#include <stdint.h>

#include "core/status.h"
#include "checkpoint/smooth.h"

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

/* Runs the model in dir (unquantized) on the reference backend over the n
 * windows ids (n, len) and fills stats (initialised here; freed with
 * ctq_smooth_stats_free whatever the result). Errors: usage (an id outside
 * the model's vocabulary, a quantized checkpoint), the runner's (config,
 * checkpoint), out-of-memory. */
enum ctq_status ctq_calib_smooth_stats(const char *dir, const int32_t *ids, int64_t n, int64_t len,
				       struct ctq_smooth_stats *stats, struct ctq_error *err);

#endif
