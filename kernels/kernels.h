/* ctq CUDA launchers (the .cu files in kernels/). C linkage, no CUDA types beyond the
 * stream handle passed as void *. All pointers are device pointers; shapes
 * are row-major as in reference/ref_ops.h. Each launcher checks its launch
 * and returns a status; none synchronizes. */
#ifndef CTQ_KERNELS_KERNELS_H
#define CTQ_KERNELS_KERNELS_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/paths.h"
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

/* The path ctq_gemm_w8a8_launch takes for these operands on the current
 * device, by the compute capability dispatch follows (kernels/arch.h). */
enum ctq_gemm_path ctq_gemm_w8a8_path(const int8_t *q, const int8_t *w, int64_t M, int64_t N,
				      int64_t K, unsigned defects);
/* ctq_gemm_w8a8_launch on one path, forced (tests, ctq bench gemm
 * --paths): usage-error naming the path when it does not take the operands
 * on this GPU (sm90-wgmma: a 9.0 GPU; sm80-mma: 8.0 or newer; both K % 16
 * == 0 and 16-byte aligned q, w; gemv: M <= 16). */
enum ctq_status ctq_gemm_w8a8_launch_on(enum ctq_gemm_path path, const int8_t *q, const int8_t *w,
					const float *s_a, const float *s_w, const float *bias,
					int64_t M, int64_t N, int64_t K, int32_t *acc, uint16_t *y,
					unsigned defects, void *stream, struct ctq_error *err);

/* The small-M path (kernels/gemv_w8a8.cu): same contract as
 * ctq_gemm_w8a8_launch, for 1 <= M <= 16. */
bool ctq_gemv_w8a8_fits(int64_t M, unsigned defects);
enum ctq_status ctq_gemv_w8a8_launch(const int8_t *q, const int8_t *w, const float *s_a,
				     const float *s_w, const float *bias, int64_t M, int64_t N,
				     int64_t K, int32_t *acc, uint16_t *y, unsigned defects,
				     void *stream, struct ctq_error *err);

/* BF16 y (M, N) = bf16(x (M, K) · w (N, K)ᵀ) with f32 accumulation for
 * decode (kernels/gemv_bf16.cu): 1 <= M <= 4, K % 8 == 0, x and w 16-byte
 * aligned. */
bool ctq_gemv_bf16_fits(const void *x, const void *w, int64_t M, int64_t K);
enum ctq_status ctq_gemv_bf16_launch(const uint16_t *x, const uint16_t *w, int64_t M, int64_t N,
				     int64_t K, uint16_t *y, void *stream, struct ctq_error *err);

/* The epilogue alone over an int32 accumulator. */
enum ctq_status ctq_w8a8_epilogue_launch(const int32_t *acc, const float *s_a, const float *s_w,
					 const float *bias, int64_t M, int64_t N, uint16_t *y,
					 unsigned defects, void *stream, struct ctq_error *err);

/* y (M, N) bf16 += bias (N) f32, rounded to bf16. */
enum ctq_status ctq_bias_bf16_launch(uint16_t *y, const float *bias, int64_t M, int64_t N,
				     void *stream, struct ctq_error *err);

/* Model ops on BF16 activations (kernels/model_ops.cu). rmsnorm: `rows`
 * vectors of H, row r at x + (r / inner) * ld + (r % inner) * H (inner = 1
 * for plain rows, = heads for per-head norms). */
/* out[r] (device int32) = the argmax of row r of x (n rows of N BF16
 * values), with ctq_argmax's rule (the first on ties; a NaN only at 0). */
enum ctq_status ctq_rows_argmax_launch(const uint16_t *x, int64_t N, int64_t n, int32_t *out,
				       void *stream, struct ctq_error *err);
enum ctq_status ctq_embed_launch(const uint16_t *table, const int32_t *ids, int64_t n, int64_t H,
				 uint16_t *out, void *stream, struct ctq_error *err);
enum ctq_status ctq_rmsnorm_launch(const uint16_t *x, int64_t ld, int64_t rows, int64_t inner,
				   const float *w, int64_t H, float eps, uint16_t *y, int64_t ldy,
				   void *stream, struct ctq_error *err);
enum ctq_status ctq_add_launch(uint16_t *x, const uint16_t *y, int64_t n, void *stream,
			       struct ctq_error *err);
enum ctq_status ctq_rope_launch(uint16_t *x, int64_t ld, const int32_t *pos, int64_t T,
				int64_t heads, int64_t d, const float *inv_freq, void *stream,
				struct ctq_error *err);
enum ctq_status ctq_attention_launch(const uint16_t *q, const uint16_t *k, const uint16_t *v,
				     int64_t ld, uint16_t *kc, uint16_t *vc, const int32_t *slot,
				     const int32_t *pos, const int32_t *host_slot, const int32_t *host_pos,
				     int64_t T, int64_t heads, int64_t kv_heads,
				     int64_t d, int64_t max_len, uint16_t *out, float *scratch,
				     size_t scratch_bytes, int sms, void *stream,
				     struct ctq_error *err);
/* The residual add fused into the RMSNorm after it (plain rows): x (M, H)
 * += res as ctq_add_launch rounds it, then ctq_rmsnorm_launch's output of
 * the new x into y (which may be res), or ctq_rmsnorm_quant_launch's q, s. */
enum ctq_status ctq_add_rmsnorm_launch(uint16_t *x, const uint16_t *res, int64_t M, const float *w,
				       int64_t H, float eps, uint16_t *y, void *stream,
				       struct ctq_error *err);
enum ctq_status ctq_add_rmsnorm_quant_launch(uint16_t *x, const uint16_t *res, int64_t M,
					     const float *w, int64_t H, float eps, int8_t *q, float *s,
					     void *stream, struct ctq_error *err);
/* Qwen3's q/k norm then RoPE, in place: the nq q heads normed by wq, the nk
 * k heads after them by wk, then all rotated; bit-identical to
 * ctq_rmsnorm_launch per head then ctq_rope_launch. */
enum ctq_status ctq_qk_norm_rope_launch(uint16_t *x, int64_t ld, int64_t T, int64_t nq, int64_t nk,
					int64_t d, const float *wq, const float *wk, float eps,
					const int32_t *pos, const float *inv_freq, void *stream,
					struct ctq_error *err);
/* ctq_qk_norm_rope_launch, and the rotated k heads and the v heads (which
 * follow the k heads in x) stored into the caches kc, vc (slot, max_len,
 * kv heads nk, d) at each token's (slot, pos), as ctq_attention_launch's own
 * store does: same bits in x and in the caches, one kernel instead of two. */
enum ctq_status ctq_qk_norm_rope_store_launch(uint16_t *x, int64_t ld, int64_t T, int64_t nq,
					      int64_t nk, int64_t d, const float *wq, const float *wk,
					      float eps, const int32_t *pos, const float *inv_freq,
					      uint16_t *kc, uint16_t *vc, const int32_t *slot,
					      int64_t max_len, void *stream, struct ctq_error *err);
enum ctq_status ctq_silu_mul_launch(const uint16_t *gu, int64_t M, int64_t I, uint16_t *out,
				    void *stream, struct ctq_error *err);

/* Fused W8A8 producers: the BF16 output of ctq_rmsnorm_launch (plain rows,
 * ld = H) or ctq_silu_mul_launch, quantized per row into q (M, K) int8 and
 * s (M) f32, never stored as BF16. Bit-identical to the op then
 * ctq_quantize_launch. */
enum ctq_status ctq_rmsnorm_quant_launch(const uint16_t *x, int64_t M, const float *w, int64_t H,
					 float eps, int8_t *q, float *s, void *stream,
					 struct ctq_error *err);
enum ctq_status ctq_silu_mul_quant_launch(const uint16_t *gu, int64_t M, int64_t I, int8_t *q,
					  float *s, void *stream, struct ctq_error *err);

#ifdef __cplusplus
}
#endif

#endif
