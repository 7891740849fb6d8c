/* ctq checkpoint loader: what the plan says each module needs, read from a
 * Hugging Face checkpoint and validated before use (spec §4.2, §7.3):
 *
 *   w8a8-int8    weight I8 [N, K]; weight_scale [N, 1], [N] or per-tensor [1]
 *                in BF16, F16 or F32, converted to FP32 and expanded per
 *                channel; optional bias. Stale all-zero zero points are
 *                ignored; non-zero ones, and static input scales on the
 *                dynamic scheme, are errors.
 *   unquantized  weight BF16, F16 or F32 (converted to BF16); no
 *                quantization tensors allowed; lm_head may be tied to the
 *                embeddings.
 *
 * With a shard plan, rank r receives its slice: column-parallel rows (and
 * scale and bias rows), row-parallel columns (full scales; the bias on rank
 * 0 only). Every failure is a checkpoint-error naming the module, the tensor
 * and what is wrong.
 */
#ifndef CTQ_CHECKPOINT_LOADER_H
#define CTQ_CHECKPOINT_LOADER_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"
#include "quant/resolve.h"
#include "checkpoint/safetensors.h"
#include "quant/shard.h"

struct ctq_linear {
	size_t module;          /* index into the plan's modules */
	const char *name;       /* borrowed from the modules */
	bool quantized;         /* w8a8-int8 */
	int64_t N, K;           /* this rank's weight shape */
	const int8_t *w_i8;     /* (N, K) when quantized */
	const uint16_t *w_bf16; /* (N, K) bf16 when unquantized */
	float *scale;           /* (N) f32 per output channel when quantized */
	float *bias;            /* (N) f32, or NULL (none, or not this rank's to add) */
	void *owned[4];         /* buffers this struct frees */
};

/* Loads one linear module for rank `rank` of sp (sp built over the same
 * plan). The plan must be executable. Weights are borrowed from the
 * checkpoint mapping when no copy is needed, so ck must outlive out.
 * Errors: checkpoint-error, out-of-memory, usage (plan not executable). */
enum ctq_status ctq_load_linear(const struct ctq_checkpoint *ck, const struct ctq_plan *plan,
				const struct ctq_shard_plan *sp, size_t module, int rank,
				struct ctq_linear *out, struct ctq_error *err);
void ctq_linear_free(struct ctq_linear *l);

/* Loads every linear module of the plan for rank 0 of a tp=1 plan and frees
 * it again: the whole checkpoint validated against the plan. n_loaded
 * receives the number of linear modules checked. */
enum ctq_status ctq_load_check(const struct ctq_checkpoint *ck, const struct ctq_plan *plan,
			       size_t *n_loaded, struct ctq_error *err);

/* A non-linear tensor (embedding, norm weight) as f32, checked against an
 * expected shape (ndim dims; -1 matches any size). *out is malloc'ed. */
enum ctq_status ctq_load_f32(const struct ctq_checkpoint *ck, const char *name, int ndim,
			     const int64_t *shape, float **out, struct ctq_error *err);

#endif
