/* ctq quantizer: a BF16 (or F16 / F32) Hugging Face checkpoint becomes a
 * compressed-tensors W8A8 INT8 checkpoint laid out as llm-compressor writes
 * one (scheme W8A8, targets Linear, ignore lm_head; spec §1.2, §3.1, §4.1-§4.3).
 *
 * Every Linear module of the model (quant/modules.h enumerates them from
 * config.json) except lm_head and the caller's ignore entries gets
 *   <m>.weight        I8 [N, K]     q = clamp(rint(w / s), -128, 127)
 *   <m>.weight_scale  dtype [N, 1]  s = max(amax_row / 127, f32 eps),
 *                                   rounded to the weight's dtype
 * where dtype is the dtype of the original weight. Rows are quantized with
 * the rounded scale, so dequantization (q * s) uses exactly the value on
 * disk; for BF16 weights this is bit for bit reference/ref_ops.h
 * ctq_ref_quantize_weight_rows (tests/test_quantize.c checks it), and F16 /
 * F32 weights round the scale to their own dtype, as compressed-tensors keeps
 * scales in the observed weight's dtype. Every other tensor (embeddings,
 * norms, biases, ignored and tied weights) is copied byte for byte.
 * config.json keeps every field and gains quantization_config, the whole
 * file written as json.dumps(indent=2, sort_keys=True).
 *
 * What it is not: a calibrating producer (plain round-to-nearest min-max,
 * which is what the memoryless_minmax observer does; `ctq quantize --recipe
 * smoothquant` smooths a copy first, checkpoint/smooth.h, and quantizes that
 * copy here; GPTQ's weights, checkpoint/gptq.h via eval/calib.h, come in
 * through ctq_quantize_options.weight_fn). Besides W8A8 INT8 it writes
 * weight-only pack-quantized checkpoints (opt->wna16,
 * checkpoint/quantize_wna16.h): the same modules, copies and checks, other
 * quantized tensors.
 */
#ifndef CTQ_CHECKPOINT_QUANTIZE_H
#define CTQ_CHECKPOINT_QUANTIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "core/arena.h"
#include "core/dtype.h"
#include "core/status.h"
#include "checkpoint/packed.h"
#include "checkpoint/synth.h"

/* The compressed-tensors version written in quantization_config.version:
 * the oldest release whose QuantizationArgs serialise exactly the fields
 * written here (scale_dtype and zp_dtype appeared in 0.13.0; the static
 * observer default memoryless_minmax in 0.14.0, spec §2.5). An older
 * version string would claim fields CT 0.11-0.12 rejects (extra=forbid). */
#define CTQ_QUANTIZE_CT_VERSION "0.14.0"

/* A calibrated producer's int8 weight and scales for one module, in place
 * of round to nearest (GPTQ: eval/calib.h ctq_calib_gptq_weight): the
 * contract of ctq_quantize_weight (w the source weight, q, scale, err2,
 * norm2 filled; -1 done, a row with non-finite values, -2 out of memory),
 * plus -3: the producer holds nothing for this module or shape. */
typedef int64_t (*ctq_quantize_weight_fn)(void *ctx, const char *module, const void *w,
					  enum ctq_dtype dtype, int64_t N, int64_t K, int8_t *q,
					  void *scale, double *err2, double *norm2);

struct ctq_quantize_options {
	const char *const *ignore;  /* (n_ignore) exact module names or "re:"
				     * patterns (Python re.match); borrowed */
	size_t n_ignore;
	uint64_t max_shard_bytes;   /* 0: CTQ_HF_MAX_SHARD_BYTES (5 GB) */
	int weight_bits;            /* 0 or 8: W8A8; 2..7: the weights rounded to an N-bit
				     * symmetric grid (core/numerics.h ctq_weight_scale_bits),
				     * stored as int8 and run as any W8A8 checkpoint: a
				     * simulation of lower precision; config.json gains
				     * ctq_simulated_weight_bits */
	ctq_quantize_weight_fn weight_fn; /* NULL: round to nearest; else every
					   * quantized module's weight comes
					   * from it (weight_bits must be 8) */
	void *weight_ctx;
	struct ctq_packed_args wna16; /* bits 0: W8A8 (int-quantized, the default); 4 or 8:
				     * weight-only pack-quantized (checkpoint/quantize_wna16.h)
				     * with its group size (0: per channel) and symmetry;
				     * weight_bits must then be 0 or 8 */
	ctq_progress_fn progress;   /* may be NULL */
	void *progress_ctx;
};

/* One quantized module. */
struct ctq_quantize_module {
	const char *name;
	int64_t N, K;               /* out_features, in_features */
	enum ctq_dtype dtype;       /* original weight and scale dtype */
	double rel_l2;              /* ||q * s - w||_2 / ||w||_2 (0 for w == 0) */
};

struct ctq_quantize_result {
	struct ctq_arena arena;
	struct ctq_quantize_module *modules; /* (n_modules) in model order */
	size_t n_modules;
	const char **ignore;        /* (n_ignore) quantization_config.ignore as written */
	size_t n_ignore;
	size_t n_tensors, n_copied; /* tensors written; of those copied as they were */
	uint64_t n_bytes;           /* tensor bytes written */
	double rel_l2_mean, rel_l2_max;
	const char *rel_l2_max_module;
	bool self_check_failed;     /* the written config did not resolve as intended */
};

void ctq_quantize_result_free(struct ctq_quantize_result *r);

/* The quantization_config block written for the given ignore list (module
 * names, borrowed): group_0 = W8A8 on Linear, every QuantizationArgs field
 * expanded. Returned owned; NULL when out of memory. */
cJSON *ctq_quantize_config_block(const char *const *ignore, size_t n_ignore);

/* Quantizes one weight matrix. w (N, K) of dtype BF16, F16 or F32 (the
 * bytes of a tensor, possibly unaligned); q (N, K) int8; scale (N) in dtype
 * (2 or 4 bytes each, aligned); err2 (N) and norm2 (N) receive per row
 * sum (q*s - w)^2 and sum w^2 in f64. Rows in parallel (OpenMP).
 * Returns -1 when done; the first row whose values are not all finite (err2
 * of that row is NaN, its q and scale meaningless); or -2 when out of memory
 * for the per-thread row buffers. */
int64_t ctq_quantize_weight(const void *w, enum ctq_dtype dtype, int64_t N, int64_t K,
			    int8_t *q, void *scale, double *err2, double *norm2);

/* ctq_quantize_weight on the N-bit grid (bits 2..8; 8 is ctq_quantize_weight). */
int64_t ctq_quantize_weight_bits(const void *w, enum ctq_dtype dtype, int64_t N, int64_t K,
				 int bits, int8_t *q, void *scale, double *err2, double *norm2);

/* Quantizes the checkpoint folder `in` (config.json + model.safetensors or
 * an index and shards) into `dir` (created if missing, expected empty):
 * config.json, the tensors (sharded at opt->max_shard_bytes), and
 * generation_config.json, tokenizer.json, tokenizer_config.json,
 * special_tokens_map.json, vocab.json, merges.txt, tokenizer.model,
 * added_tokens.json and chat_template.jinja when present. Then reads dir back
 * as a check: ctq_qconfig_load + ctq_plan_resolve (strict) must give
 * w8a8-int8 to every quantized module and unquantized to every other, and
 * the checkpoint must hold I8 weights with [N, 1] scales (weight-only: the
 * ct profile must give the scheme's name, which strict does not execute,
 * and ctq_packed_read must accept every quantized module's tensors).
 *
 * Ignore entries: an exact name must be a Linear module of the model; a
 * "re:" pattern must match at least one Linear module (a typo would
 * otherwise quantize silently); together they must take all or none of each
 * fused set (q/k/v, gate/up), which the strict resolver requires. The written ignore list is the explicit
 * names, in model order, lm_head included, as the producer writes it
 * (spec §5.1.7). opt may be NULL. res (may be NULL) is initialised by the
 * call, filled on success, and freed with ctq_quantize_result_free whatever
 * the result.
 * Errors: io-error, parse-error (config.json), invalid-config (config.json
 * already has a quantization block, unknown architecture, a bad regex),
 * usage (an ignore entry that names no Linear module), checkpoint-error
 * (missing or non-float weight, non-finite values, any reader error),
 * out-of-memory; a failed self-check is invalid-config at
 * quantization_config with res->self_check_failed set. dir may hold partial
 * output on failure: write into a temporary directory and rename it. */
/* Copies generation_config.json and the tokenizer files listed above from
 * in to dir, those present, byte for byte. Errors: io-error, out-of-memory. */
enum ctq_status ctq_quantize_copy_aux(const char *in, const char *dir, struct ctq_error *err);

enum ctq_status ctq_quantize_checkpoint(const char *in, const char *dir,
					const struct ctq_quantize_options *opt,
					struct ctq_quantize_result *res,
					struct ctq_error *err);

#endif
