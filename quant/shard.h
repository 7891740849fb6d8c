/* ctq tensor-parallel shard planner: for every module and rank, which slice
 * of each checkpoint tensor the rank holds, the way vLLM shards W8A8
 * checkpoints (spec §7):
 *
 *   column-parallel  q/k/v (GQA; kv heads replicated when tp > kv heads),
 *                    gate/up: weight rows, per-channel scale rows and bias
 *                    rows sliced alike;
 *   row-parallel     o/down: weight columns sliced, per-channel scales and
 *                    bias full on every rank (bias added by rank 0 only);
 *   replicated       embeddings and lm_head (ctq does not shard the vocabulary).
 *
 * Other trees (quant/arch.c) carry each module's (out, in): MoE experts are
 * split as the dense MLP is (FusedMoE: every expert's gate/up rows and down
 * columns over the ranks, expert parallelism out of scope); routers,
 * shared_expert_gate and DeepSeek's q_a_proj / kv_a_proj_with_mqa
 * (ReplicatedLinear, fused_qkv_a_proj with disable_tp) are whole; other
 * Linears follow their vLLM class (column or row parallel). Stored-fused
 * q/k/v or gate/up (Phi-3, Qwen3-VL's attn.qkv) and diffusion transformers
 * have no layout ctq plans beyond one rank.
 *
 * Per-tensor weight scales ([1]) are replicated and expanded per channel by
 * the loader. Sizes that do not divide are shard-invalid.
 */
#ifndef CTQ_QUANT_SHARD_H
#define CTQ_QUANT_SHARD_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"
#include "quant/resolve.h"

enum ctq_shard_kind { CTQ_SHARD_NONE, CTQ_SHARD_REPLICATED, CTQ_SHARD_COLUMN, CTQ_SHARD_ROW };

enum ctq_scale_layout {
	CTQ_SCALE_NONE,        /* unquantized: no weight_scale */
	CTQ_SCALE_SLICED,      /* per-channel scale rows sliced like the weight */
	CTQ_SCALE_REPLICATED,  /* the full scale tensor on every rank */
};

enum ctq_bias_layout { CTQ_BIAS_NONE, CTQ_BIAS_SLICED, CTQ_BIAS_RANK0, CTQ_BIAS_REPLICATED };

/* One module on one rank. Ranges are half-open [start, end) in the
 * checkpoint tensor. */
struct ctq_shard {
	enum ctq_shard_kind kind;
	int64_t rows[2];          /* weight rows (output features) */
	int64_t cols[2];          /* weight columns (input features) */
	enum ctq_scale_layout scale;
	int64_t scale_rows[2];    /* when CTQ_SCALE_SLICED */
	enum ctq_bias_layout bias;
	int64_t bias_rows[2];     /* when CTQ_BIAS_SLICED */
};

struct ctq_shard_plan {
	int tp;
	size_t n_modules;
	struct ctq_shard *v;      /* (n_modules, tp) row-major: v[m * tp + r] */
	int64_t *out_features;    /* (n_modules) full checkpoint shape [O, I] */
	int64_t *in_features;
	long heads_per_rank, kv_heads_per_rank, kv_replicas;
};

/* Plans tp ranks for every module of a resolved plan. The model shape must
 * be known (hidden_size, intermediate_size, vocab_size, heads, kv heads,
 * head_dim). Errors: shard-invalid (path names the config field, message the
 * arithmetic), out-of-memory. */
enum ctq_status ctq_shard_plan_build(struct ctq_shard_plan *sp,
				     const struct ctq_plan *plan, int tp,
				     struct ctq_error *err);
void ctq_shard_plan_free(struct ctq_shard_plan *sp);

static inline const struct ctq_shard *
ctq_shard_at(const struct ctq_shard_plan *sp, size_t module, int rank)
{
	return &sp->v[module * (size_t)sp->tp + (size_t)rank];
}

const char *ctq_shard_kind_name(enum ctq_shard_kind k);

#endif
