/* ctq reference backend, model ops (f32 activations); installed into the
 * reference ops table by ref_backend.c. */
#ifndef CTQ_REFERENCE_REF_MODEL_OPS_H
#define CTQ_REFERENCE_REF_MODEL_OPS_H

#include "backend/backend.h"

enum ctq_status ctq_refm_upload_dense(struct ctq_backend *b, const uint16_t *w, size_t n,
				      void **out, struct ctq_error *err);
enum ctq_status ctq_refm_embed(struct ctq_backend *b, const void *table, const int32_t *ids,
			       int64_t n, int64_t H, void *out, struct ctq_error *err);
enum ctq_status ctq_refm_rmsnorm(struct ctq_backend *b, const void *x, const float *w, int64_t M,
				 int64_t H, float eps, void *y, struct ctq_error *err);
enum ctq_status ctq_refm_add(struct ctq_backend *b, void *x, const void *y, int64_t n,
			     struct ctq_error *err);
enum ctq_status ctq_refm_linear_dense(struct ctq_backend *b, const void *x, const void *w,
				      const float *bias, int64_t M, int64_t N, int64_t K, void *y,
				      struct ctq_error *err);
enum ctq_status ctq_refm_linear_w8a8(struct ctq_backend *b, const void *x, const int8_t *w,
				     const float *s_w, const float *bias, int64_t M, int64_t N,
				     int64_t K, void *y, void *ws, struct ctq_error *err);
enum ctq_status ctq_refm_head_norm(struct ctq_backend *b, void *x, int64_t ld, int64_t T,
				   int64_t heads, int64_t d, const float *w, float eps,
				   struct ctq_error *err);
enum ctq_status ctq_refm_rope(struct ctq_backend *b, void *x, int64_t ld, const int32_t *pos,
			      int64_t T, int64_t heads, int64_t d, const float *inv_freq,
			      struct ctq_error *err);
enum ctq_status ctq_refm_attention(struct ctq_backend *b, const void *q, const void *k,
				   const void *v, int64_t ld, void *k_cache, void *v_cache,
				   const int32_t *slot, const int32_t *pos, const int32_t *host_slot,
				   const int32_t *host_pos, int64_t T, int64_t heads,
				   int64_t kv_heads, int64_t d, int64_t max_len, void *out,
				   struct ctq_error *err);
/* The definition of attention (reference/ref_attention.c), one token, head
 * and key at a time: the oracle ctq_refm_attention's fast path is held to
 * bit for bit (tests/test_ref_fast.c). */
enum ctq_status ctq_refm_attention_scalar(struct ctq_backend *b, const void *q, const void *k,
					  const void *v, int64_t ld, void *k_cache, void *v_cache,
					  const int32_t *slot, const int32_t *pos, int64_t T,
					  int64_t heads, int64_t kv_heads, int64_t d, int64_t max_len,
					  void *out, struct ctq_error *err);
enum ctq_status ctq_refm_silu_mul(struct ctq_backend *b, const void *gu, int64_t M, int64_t I,
				  void *out, struct ctq_error *err);
enum ctq_status ctq_refm_linear_w8a8_q(struct ctq_backend *b, const void *ws, const int8_t *w,
				       const float *s_w, const float *bias, int64_t M, int64_t N,
				       int64_t K, void *y, struct ctq_error *err);
/* add then rmsnorm / rmsnorm_quant (the fused ops of the interface, as
 * their definition). */
enum ctq_status ctq_refm_add_rmsnorm(struct ctq_backend *b, void *x, const void *res, const float *w,
				     int64_t M, int64_t H, float eps, void *y, struct ctq_error *err);
enum ctq_status ctq_refm_add_rmsnorm_quant(struct ctq_backend *b, void *x, const void *res,
					   const float *w, int64_t M, int64_t H, float eps, void *ws,
					   struct ctq_error *err);
enum ctq_status ctq_refm_rmsnorm_quant(struct ctq_backend *b, const void *x, const float *w,
				       int64_t M, int64_t H, float eps, void *ws,
				       struct ctq_error *err);
enum ctq_status ctq_refm_silu_mul_quant(struct ctq_backend *b, const void *gu, int64_t M,
					int64_t I, void *ws, struct ctq_error *err);
enum ctq_status ctq_refm_rows_to_host(struct ctq_backend *b, const void *x, int64_t N,
				      const int64_t *idx, int64_t n, float *out,
				      struct ctq_error *err);

#endif
