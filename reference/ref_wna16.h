/* CPU reference of the weight-only GEMM (ABI version 2's gemm_wna16,
 * include/ctq_kernel_plugin.h): BF16 activations times int4 / int8 weights
 * in compressed-tensors' pack-quantized layout, dequantized exactly
 * (core/numerics.h ctq_wna16_dequant) and accumulated in f32 in the fixed
 * order k = 0 .. K-1, each product and sum rounded (no fused multiply-add),
 * then bias and one rounding to BF16. The oracle of `ctq probe` for
 * weight-only plug-ins; a plug-in that follows the same order is
 * bit-identical to it (CTQ_KERNEL_PLUGIN_WNA16_EXACT).
 *
 * What it is not: a fast kernel (it parallelises over output channels and
 * vectorises over tokens, never reassociates a sum), or a GEMM of ctq's
 * runner (strict executes W8A8 only). */
#ifndef CTQ_REFERENCE_REF_WNA16_H
#define CTQ_REFERENCE_REF_WNA16_H

#include <stdint.h>

#include "core/status.h"

/* x (M, K) bf16; w_packed (N, ceil(K / (32 / bits))) int32; scale (N,
 * n_groups) f32 with n_groups = ceil(K / group_size) (group_size 0: per
 * channel, one group); zero_packed (ceil(N / (32 / bits)), n_groups) int32
 * or NULL; bias (N) f32 or NULL -> y (M, N) bf16. bits 4 or 8. Results do
 * not depend on the thread count. Errors: usage (bits or sizes out of
 * range), out-of-memory. */
enum ctq_status ctq_ref_gemm_wna16(const uint16_t *x, const int32_t *w_packed, const float *scale,
				   const int32_t *zero_packed, const float *bias, int64_t M, int64_t N,
				   int64_t K, int bits, int64_t group_size, uint16_t *y,
				   struct ctq_error *err);

/* Row n of the dequantized weight: w (K) f32. */
void ctq_ref_wna16_dequant_row(const int32_t *w_packed, const float *scale,
			       const int32_t *zero_packed, int64_t N, int64_t K, int bits,
			       int64_t group_size, int64_t n, float *w);

#endif
