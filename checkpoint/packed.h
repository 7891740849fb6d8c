/* compressed-tensors `pack-quantized` weights (spec §4.2, §4.4): int4 and
 * int8 weights packed into int32 words, as the library's
 * PackedQuantizationCompressor writes them. One quantized Linear module
 * M of the format holds
 *   M.weight_packed      I32 [N, ceil(K / (32/b))]  packed along K
 *   M.weight_scale       float dtype [N, G]          G = ceil(K / group) or 1
 *   M.weight_shape       I64 [2]                     (N, K)
 *   M.weight_zero_point  I32 [ceil(N / (32/b)), G]   asymmetric only,
 *                                                    packed along N
 * The element formulas (offset, bit positions, dequantization) are in
 * core/numerics.h (ctq_pack_get, ctq_wna16_dequant), which reference/ and
 * kernels/ use too; this file packs and unpacks whole tensors and reads one
 * module's tensors from a checkpoint, validating them.
 *
 * What it is not: a quantizer (checkpoint/quantize_wna16.c computes q, s
 * and z), or a reader of CT >= 0.18's dense cross-word packing for 3, 5, 6
 * and 7 bits (for 4 and 8 bits both layouts are the same bytes).
 */
#ifndef CTQ_CHECKPOINT_PACKED_H
#define CTQ_CHECKPOINT_PACKED_H

#include <stdbool.h>
#include <stdint.h>

#include "checkpoint/safetensors.h"
#include "core/status.h"
#include "quant/qconfig.h"

/* The layout of one module's packed weight. */
struct ctq_packed_args {
	int bits;           /* 4 or 8 */
	int64_t group_size; /* > 0: groups of that many columns; 0: per channel */
	bool asym;          /* weight_zero_point present */
};

/* The layout of a module whose weights' args are w (NULL: none) and whose
 * group's format is format: pack-quantized int4 / int8 per channel or
 * group (*packed true), or int-quantized / naive-quantized symmetric int8
 * as W8A8 stores it (*packed false, a->bits 8). NULL when a is filled,
 * else why ctq cannot read the module's weights (float weights, another
 * strategy, an activation order, other bits). */
const char *ctq_packed_layout(const struct ctq_qargs *w, const char *format,
			      struct ctq_packed_args *a, bool *packed);

/* Groups per row: ceil(K / group_size), or 1 per channel. */
int64_t ctq_packed_groups(int64_t K, int64_t group_size);

/* q (rows, cols) int8 in [qmin, qmax] of bits -> out (rows,
 * ctq_pack_words(cols, bits)) int32, packed along the last dimension. */
void ctq_pack_rows(const int8_t *q, int64_t rows, int64_t cols, int bits, int32_t *out);
/* The inverse: p (rows, ctq_pack_words(cols, bits)) -> q (rows, cols). */
void ctq_unpack_rows(const int32_t *p, int64_t rows, int64_t cols, int bits, int8_t *q);
/* z (rows, cols) int8 -> out (ctq_pack_words(rows, bits), cols) int32,
 * packed along dimension 0 (zero points). */
void ctq_pack_dim0(const int8_t *z, int64_t rows, int64_t cols, int bits, int32_t *out);
/* The inverse: p (ctq_pack_words(rows, bits), cols) -> z (rows, cols). */
void ctq_unpack_dim0(const int32_t *p, int64_t rows, int64_t cols, int bits, int8_t *z);

/* One module's weight, unpacked; every array owned (ctq_packed_free). */
struct ctq_packed_module {
	struct ctq_packed_args a;
	int64_t N, K, n_groups;
	int8_t *q;            /* (N, K) */
	float *scale;         /* (N, n_groups) f32, from the stored dtype */
	int8_t *zero;         /* (N, n_groups), NULL when symmetric */
	int32_t *packed;      /* (N, ctq_pack_words(K, bits)) as stored */
	int32_t *zero_packed; /* (ctq_pack_words(N, bits), n_groups) as stored, or NULL */
	enum ctq_dtype scale_dtype;
};

/* Reads module's pack-quantized tensors from ck under the layout a and
 * validates them: dtypes and shapes as above, weight_shape (N, K) positive,
 * the packed row length matching K, a zero point tensor exactly when a.asym
 * (a symmetric module's all-zero zero point, which producers before CT 0.10
 * wrote, is accepted and ignored), scales finite and positive. Errors: checkpoint-error naming the tensor (missing, wrong dtype
 * or shape, bad values), out-of-memory. On error out is freed. */
enum ctq_status ctq_packed_read(const struct ctq_checkpoint *ck, const char *module,
				const struct ctq_packed_args *a, struct ctq_packed_module *out,
				struct ctq_error *err);

/* Dequantized row n: w (K) f32 = (q - z) * s of its group. */
void ctq_packed_dequant_row(const struct ctq_packed_module *m, int64_t n, float *w);

void ctq_packed_free(struct ctq_packed_module *m);

#endif
