/* ctq CPU reference of every numeric op: the oracle the CUDA kernels are
 * checked against, and the compute of the CPU backend. Formulas come from
 * core/numerics.h; loops are blocked for cache and parallel over rows with
 * OpenMP when available. Buffers are row-major; every function documents its
 * shapes. These functions do not allocate and cannot fail, except where a
 * status is returned (K beyond the int32-exact bound).
 */
#ifndef CTQ_REFERENCE_REF_OPS_H
#define CTQ_REFERENCE_REF_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/numerics.h"
#include "core/status.h"

/* Per-token quantization of BF16 activations.
 * x (M, K) bf16 bits; q (M, K) int8; s (M) f32. */
void ctq_ref_quantize_bf16(const uint16_t *x, int64_t M, int64_t K, int8_t *q, float *s);

/* The same from f32 activations (the CPU backend's activations). */
void ctq_ref_quantize_f32(const float *x, int64_t M, int64_t K, int8_t *q, float *s);

/* compressed-tensors' per-token quantization (core/numerics.h ctq_ct_*)
 * in the dtype of x: f32 as transformers computes it for a float32 model,
 * BF16 (every step rounded to BF16) for a BF16 one.
 * x (M, K) f32 or bf16 bits; q (M, K) int8; s (M) f32. */
void ctq_ref_quantize_ct_f32(const float *x, int64_t M, int64_t K, int8_t *q, float *s);
void ctq_ref_quantize_ct_bf16(const uint16_t *x, int64_t M, int64_t K, int8_t *q, float *s);

/* compressed-tensors' dequantization of int8 rows, y[r,k] = q[r,k] * s[r]
 * (rounded to BF16 when bf16), for activations (s per token) and weights
 * (s per channel) alike. q (R, K) int8; s (R) f32; y (R, K) f32. */
void ctq_ref_dequantize_ct(const int8_t *q, const float *s, int64_t R, int64_t K, bool bf16,
			   float *y);

/* CTQ_WEIGHT_SCALE_MIN and ctq_weight_scale: core/numerics.h. */

/* Per-channel symmetric weight quantization as a producer writes it: the
 * scale of each row is rounded to BF16 (the model dtype) first and the row
 * quantized with that stored scale, so dequantization uses exactly the scale
 * on disk. w (N, K) f32; q (N, K) int8; s_bf16 (N) bf16 bits. */
void ctq_ref_quantize_weight_rows(const float *w, int64_t N, int64_t K, int8_t *q,
				  uint16_t *s_bf16);

/* acc = q · wᵀ in int32. q (M, K) int8; w (N, K) int8; acc (M, N) int32.
 * K above CTQ_K_MAX is refused (invalid-config-free usage error). SIMD
 * where the CPU has it (reference/ref_gemm.c), exact either way. */
enum ctq_status ctq_ref_gemm_i8(const int8_t *q, const int8_t *w, int64_t M, int64_t N,
				int64_t K, int32_t *acc, struct ctq_error *err);
/* The definition, one dot product at a time: the oracle the fast path is
 * tested against bit for bit. */
enum ctq_status ctq_ref_gemm_i8_scalar(const int8_t *q, const int8_t *w, int64_t M, int64_t N,
				       int64_t K, int32_t *acc, struct ctq_error *err);

/* The SIMD code the reference runs on this CPU (GEMMs, the per-token
 * quantization, attention): "scalar", "avx2" or "avx2+avx512vnni"
 * (recorded in run manifests), and as a level 0, 1, 2. */
const char *ctq_ref_simd(void);
int ctq_ref_simd_level(void);

/* Test hook: run at most SIMD level `level` (0 scalar, 1 AVX2, 2 AVX-512
 * VNNI) from now on, so one CPU tests every path against the others bit
 * for bit; a level the CPU lacks stays off. Returns the level in effect.
 * Process-wide and not synchronised: set it before calling the ops. */
int ctq_ref_simd_cap(int level);

/* y = bf16(((float)acc * s_a[m]) * s_w[n] + bias[n]). acc (M, N); s_a (M);
 * s_w (N); bias (N) f32 or NULL; y (M, N) bf16 bits. */
void ctq_ref_w8a8_epilogue(const int32_t *acc, const float *s_a, const float *s_w,
			   const float *bias, int64_t M, int64_t N, uint16_t *y);

/* The same epilogue kept in f32 (the CPU backend's activations). */
void ctq_ref_w8a8_epilogue_f32(const int32_t *acc, const float *s_a, const float *s_w,
			       const float *bias, int64_t M, int64_t N, float *y);

/* BF16 GEMM with f32 accumulation in k order, then + bias, rounded to BF16.
 * x (M, K) bf16; w (N, K) bf16; bias (N) f32 or NULL; y (M, N) bf16. */
void ctq_ref_gemm_bf16(const uint16_t *x, const uint16_t *w, const float *bias, int64_t M,
		       int64_t N, int64_t K, uint16_t *y);

/* f32 GEMM (the CPU backend's unquantized linear). x (M, K); w (N, K) f32;
 * bias (N) or NULL; y (M, N). */
void ctq_ref_gemm_f32(const float *x, const float *w, const float *bias, int64_t M,
		      int64_t N, int64_t K, float *y);
/* The definition, one output at a time (ref_ops.c dot_lanes): the oracle
 * the SIMD path (reference/ref_gemm.c) is tested against bit for bit. */
void ctq_ref_gemm_f32_scalar(const float *x, const float *w, const float *bias, int64_t M,
			     int64_t N, int64_t K, float *y);

/* The unquantized product in f64, the yardstick of quantization error.
 * x (M, K) f32; w (N, K) f32; bias (N) or NULL; y (M, N) f64. Each output
 * sums its products in k order (no FMA), then adds its bias; SIMD across
 * outputs where the CPU has it, the same bits either way. */
void ctq_ref_gemm_f64(const float *x, const float *w, const float *bias, int64_t M,
		      int64_t N, int64_t K, double *y);
/* The definition, one output at a time (the oracle). */
void ctq_ref_gemm_f64_scalar(const float *x, const float *w, const float *bias, int64_t M,
			     int64_t N, int64_t K, double *y);

#endif
