/* ctq quantize --scheme w8a16 | w4a16: weight-only int weights in
 * compressed-tensors' pack-quantized format (checkpoint/packed.h), as
 * llm-compressor's W8A16 / W4A16 / W4A16_ASYM presets write them: the
 * quantization_config block, and one weight matrix quantized, per group of
 * columns or per channel, symmetric or with zero points. ctq_quantize_checkpoint
 * (checkpoint/quantize.h) drives it: the same module selection, ignore
 * rules, tensor copying, sharding and self-check as W8A8.
 *
 * The rules (core/numerics.h):
 *   symmetric:  s = max(amax_group / (2^(b-1) - 1), f32 eps) rounded to the
 *               weight dtype, q = clamp(rint(w / s), -qmax, qmax) (ctq's
 *               N-bit grid, ctq_weight_scale_bits; 8 bits is W8A8's rule)
 *   asymmetric: s = (max(hi,0) - min(lo,0)) / (2^b - 1) rounded likewise,
 *               z = clamp(rint(qmin - lo / s)), q = clamp(rint(w / s) + z)
 *   dequantized w^ = (q - z) * s.
 * What it is not: GPTQ or any calibrated producer (round to nearest).
 */
#ifndef CTQ_CHECKPOINT_QUANTIZE_WNA16_H
#define CTQ_CHECKPOINT_QUANTIZE_WNA16_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "checkpoint/packed.h"
#include "core/dtype.h"

/* The default group size of the W4A16 presets. */
#define CTQ_WNA16_GROUP_DEFAULT 128

/* The scheme's name as ctq's resolver gives it (w4a16, w8a16,
 * w4a16-asym, w8a16-asym) and the compressed-tensors preset that writes
 * exactly a (W4A16 with group 128, W4A16_ASYM with group 128, W8A16
 * per channel, as of CTQ_QUANTIZE_CT_VERSION), or NULL when none does. */
const char *ctq_wna16_scheme_name(const struct ctq_packed_args *a);
const char *ctq_wna16_preset(const struct ctq_packed_args *a);

/* quantization_config for a on every Linear but ignore (names, borrowed):
 * group_0 with format pack-quantized, no activations, the weights' args
 * expanded; top-level format pack-quantized. Returned owned; NULL when
 * out of memory. */
cJSON *ctq_wna16_config_block(const struct ctq_packed_args *a, const char *const *ignore,
			      size_t n_ignore);

/* Quantizes w (N, K) of dtype BF16, F16 or F32 (possibly unaligned) under
 * a: packed (N, ctq_pack_words(K, bits)) int32, scale (N, G) in dtype,
 * zero_packed (ctq_pack_words(N, bits), G) int32 when a->asym (else
 * unused, may be NULL), err2 / norm2 (N): per row sum (w^ - w)^2 and sum
 * w^2 in f64. Rows in parallel (OpenMP). Returns -1 when done, the first
 * row holding a NaN or Inf (its err2 NaN), or -2 when out of memory. */
int64_t ctq_wna16_quantize_weight(const void *w, enum ctq_dtype dtype, int64_t N, int64_t K,
				  const struct ctq_packed_args *a, int32_t *packed, void *scale,
				  int32_t *zero_packed, double *err2, double *norm2);

#endif
