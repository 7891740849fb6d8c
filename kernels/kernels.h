/* ctq CUDA launchers (kernels/*.cu). C linkage, no CUDA types beyond the
 * stream handle passed as void *. All pointers are device pointers; shapes
 * are row-major as in reference/ref_ops.h. Each launcher checks its launch
 * and returns a status; none synchronizes. */
#ifndef CTQ_KERNELS_KERNELS_H
#define CTQ_KERNELS_KERNELS_H

#include <stdint.h>

#include "core/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* x (M, K) bf16 -> q (M, K) int8, s (M) f32 (core/numerics.h). */
enum ctq_status ctq_quantize_launch(const uint16_t *x, int64_t M, int64_t K, int8_t *q, float *s,
				    void *stream, struct ctq_error *err);

/* W8A8 GEMM, q (M, K) int8 · w (N, K) int8ᵀ. With acc != NULL the int32
 * accumulators are written (debug path); otherwise the epilogue is fused:
 * y (M, N) bf16 = bf16(((float)acc * s_a[m]) * s_w[n] + bias[n]).
 * defects: enum ctq_defect bits (tests only). */
enum ctq_status ctq_gemm_w8a8_launch(const int8_t *q, const int8_t *w, const float *s_a,
				     const float *s_w, const float *bias, int64_t M, int64_t N,
				     int64_t K, int32_t *acc, uint16_t *y, unsigned defects,
				     void *stream, struct ctq_error *err);

/* The epilogue alone over an int32 accumulator. */
enum ctq_status ctq_w8a8_epilogue_launch(const int32_t *acc, const float *s_a, const float *s_w,
					 const float *bias, int64_t M, int64_t N, uint16_t *y,
					 unsigned defects, void *stream, struct ctq_error *err);

/* y (M, N) bf16 += bias (N) f32, rounded to bf16. */
enum ctq_status ctq_bias_bf16_launch(uint16_t *y, const float *bias, int64_t M, int64_t N,
				     void *stream, struct ctq_error *err);

#ifdef __cplusplus
}
#endif

#endif
