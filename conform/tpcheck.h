/* ctq numeric tensor-parallel conformance on the CPU reference: one linear
 * module of a checkpoint computed as tp ranks from the loader's shards
 * (checkpoint/loader.h) against the same module at tp 1.
 *
 *   column-parallel  each rank's output columns are the TP1 columns: int32
 *                    accumulators and BF16 outputs identical;
 *   row-parallel     the int32 partial sums of the ranks add up to the TP1
 *                    accumulator exactly (activations quantized per token over
 *                    the full row, as one scale); the BF16 partial outputs,
 *                    bias on rank 0 only, summed in f32 and rounded once,
 *                    stay within bf16_rel_l2_max of TP1.
 */
#ifndef CTQ_CONFORM_TPCHECK_H
#define CTQ_CONFORM_TPCHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"
#include "quant/resolve.h"
#include "checkpoint/safetensors.h"

/* Each BF16 partial is rounded once and the sum once: at most (tp + 1) / 2
 * BF16 ulps apart per element; as rel-L2 over a tensor well under 2^-8 ×
 * sqrt(tp). 0.01 covers tp <= 8 with margin. */
#define CTQ_TP_BF16_REL_L2_MAX 0.01

struct ctq_tp_result {
	char module[256];
	int tp;
	const char *kind;       /* column, row, replicated */
	bool quantized;
	bool int32_exact;       /* quantized modules: accumulators identical */
	bool bf16_exact;        /* outputs bit-identical */
	double bf16_rel_l2;
	bool covered;           /* column-parallel ranks cover every output row */
	bool passed;
	char reason[320];
};

enum ctq_status ctq_tp_check_linear(const struct ctq_checkpoint *ck, const struct ctq_plan *plan,
				    size_t module, int tp, int64_t M, uint64_t seed,
				    struct ctq_tp_result *r, struct ctq_error *err);

#endif
