/* ctq reference backend, model ops: f32 activations, f32 dense weights,
 * straightforward loops (the CPU backend runs tiny models and checks the CUDA
 * one). Shapes as in backend/backend.h. */
#include "reference/ref_model_ops.h"
#include "core/arena.h"
#include "core/dtype.h"
#include "reference/ref_ops.h"
#include "reference/ref_threads.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum ctq_status ctq_refm_upload_dense(struct ctq_backend *b, const uint16_t *w, size_t n,
				      void **out, struct ctq_error *err)
{
	(void)b;
	float *f = ctq_malloc((n ? n : 1) * sizeof *f);
	if (!f)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "reference", "out of memory (%zu weights)", n);
	ctq_convert_to_f32(w, CTQ_DTYPE_BF16, n, f);
	*out = f;
	return CTQ_OK;
}

enum ctq_status ctq_refm_embed(struct ctq_backend *b, const void *table, const int32_t *ids,
			       int64_t n, int64_t H, void *out, struct ctq_error *err)
{
	(void)b;
	(void)err;
	const float *t = table;
	float *o = out;
	for (int64_t i = 0; i < n; i++)
		memcpy(o + i * H, t + (int64_t)ids[i] * H, (size_t)H * sizeof *o);
	return CTQ_OK;
}

static void rms_row(const float *x, const float *w, int64_t H, float eps, float *y)
{
	double ss = 0;
	for (int64_t k = 0; k < H; k++)
		ss += (double)x[k] * x[k];
	float inv = 1.0f / sqrtf((float)(ss / (double)H) + eps);
	for (int64_t k = 0; k < H; k++)
		y[k] = x[k] * inv * w[k];
}

enum ctq_status ctq_refm_rmsnorm(struct ctq_backend *b, const void *x, const float *w, int64_t M,
				 int64_t H, float eps, void *y, struct ctq_error *err)
{
	(void)b;
	(void)err;
#pragma omp parallel for schedule(static) num_threads(ctq_ref_threads(2 * M * H))
	for (int64_t m = 0; m < M; m++)
		rms_row((const float *)x + m * H, w, H, eps, (float *)y + m * H);
	return CTQ_OK;
}

enum ctq_status ctq_refm_add(struct ctq_backend *b, void *x, const void *y, int64_t n,
			     struct ctq_error *err)
{
	(void)b;
	(void)err;
	float *a = x;
	const float *c = y;
	for (int64_t i = 0; i < n; i++)
		a[i] += c[i];
	return CTQ_OK;
}

enum ctq_status ctq_refm_linear_dense(struct ctq_backend *b, const void *x, const void *w,
				      const float *bias, int64_t M, int64_t N, int64_t K, void *y,
				      struct ctq_error *err)
{
	(void)b;
	(void)err;
	ctq_ref_gemm_f32(x, w, bias, M, N, K, y);
	return CTQ_OK;
}

/* Per-token quantization of f32 activations x (M, K) into a w8a8
 * workspace, under b's activation numerics. */
static void quantize_ws(const struct ctq_backend *b, const float *x, int64_t M, int64_t K, void *ws)
{
	if (b->act_numerics == CTQ_ACT_NUMERICS_TRANSFORMERS)
		ctq_ref_quantize_ct_f32(x, M, K, ws, ctq_w8a8_workspace_scales(ws, M, K));
	else
		ctq_ref_quantize_f32(x, M, K, ws, ctq_w8a8_workspace_scales(ws, M, K));
}

/* transformers' product on the reference's f32 activations (a model run
 * in float32): x^ = q * s_a and w^ = w * s_w, y = x^ . w^T + bias in f32. */
static enum ctq_status linear_ct(const void *ws, const int8_t *w, const float *s_w,
				 const float *bias, int64_t M, int64_t N, int64_t K, float *y,
				 struct ctq_error *err)
{
	float *xd = ctq_malloc((size_t)(M * K) * sizeof *xd + 1); /* (M, K) */
	float *wd = ctq_malloc((size_t)(N * K) * sizeof *wd + 1); /* (N, K) */
	if (!xd || !wd) {
		free(xd), free(wd);
		return ctq_error_set(err, CTQ_ERR_NOMEM, "reference", "out of memory");
	}
	ctq_ref_dequantize_ct(ws, ctq_w8a8_workspace_scales((void *)ws, M, K), M, K, false, xd);
	ctq_ref_dequantize_ct(w, s_w, N, K, false, wd);
	ctq_ref_gemm_f32(xd, wd, bias, M, N, K, y);
	free(xd), free(wd);
	return CTQ_OK;
}

enum ctq_status ctq_refm_linear_w8a8_q(struct ctq_backend *b, const void *ws, const int8_t *w,
				       const float *s_w, const float *bias, int64_t M, int64_t N,
				       int64_t K, void *y, struct ctq_error *err)
{
	if (b->act_numerics == CTQ_ACT_NUMERICS_TRANSFORMERS)
		return linear_ct(ws, w, s_w, bias, M, N, K, y, err);
	const float *s = ctq_w8a8_workspace_scales((void *)ws, M, K);
	int32_t *acc = ctq_malloc((size_t)(M * N) * sizeof *acc + 1);
	if (!acc)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "reference", "out of memory");
	enum ctq_status st = ctq_ref_gemm_i8(ws, w, M, N, K, acc, err);
	if (!st)
		ctq_ref_w8a8_epilogue_f32(acc, s, s_w, bias, M, N, y);
	free(acc);
	return st;
}

enum ctq_status ctq_refm_linear_w8a8(struct ctq_backend *b, const void *x, const int8_t *w,
				     const float *s_w, const float *bias, int64_t M, int64_t N,
				     int64_t K, void *y, void *ws, struct ctq_error *err)
{
	quantize_ws(b, x, M, K, ws);
	return ctq_refm_linear_w8a8_q(b, ws, w, s_w, bias, M, N, K, y, err);
}

/* The fused producers: the op into a scratch row block, then quantized as
 * linear_w8a8 would quantize it (so bit-identical to the unfused pair). */
enum ctq_status ctq_refm_add_rmsnorm(struct ctq_backend *b, void *x, const void *res, const float *w,
				     int64_t M, int64_t H, float eps, void *y, struct ctq_error *err)
{
	enum ctq_status st = ctq_refm_add(b, x, res, M * H, err);
	return st ? st : ctq_refm_rmsnorm(b, x, w, M, H, eps, y, err);
}

enum ctq_status ctq_refm_add_rmsnorm_quant(struct ctq_backend *b, void *x, const void *res,
					   const float *w, int64_t M, int64_t H, float eps, void *ws,
					   struct ctq_error *err)
{
	enum ctq_status st = ctq_refm_add(b, x, res, M * H, err);
	return st ? st : ctq_refm_rmsnorm_quant(b, x, w, M, H, eps, ws, err);
}

enum ctq_status ctq_refm_rmsnorm_quant(struct ctq_backend *b, const void *x, const float *w,
				       int64_t M, int64_t H, float eps, void *ws,
				       struct ctq_error *err)
{
	float *tmp = ctq_malloc((size_t)(M * H) * sizeof *tmp + 1);
	if (!tmp)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "reference", "out of memory");
	enum ctq_status st = ctq_refm_rmsnorm(b, x, w, M, H, eps, tmp, err);
	if (!st)
		quantize_ws(b, tmp, M, H, ws);
	free(tmp);
	return st;
}

enum ctq_status ctq_refm_silu_mul_quant(struct ctq_backend *b, const void *gu, int64_t M,
					int64_t I, void *ws, struct ctq_error *err)
{
	float *tmp = ctq_malloc((size_t)(M * I) * sizeof *tmp + 1);
	if (!tmp)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "reference", "out of memory");
	enum ctq_status st = ctq_refm_silu_mul(b, gu, M, I, tmp, err);
	if (!st)
		quantize_ws(b, tmp, M, I, ws);
	free(tmp);
	return st;
}

enum ctq_status ctq_refm_head_norm(struct ctq_backend *b, void *x, int64_t ld, int64_t T,
				   int64_t heads, int64_t d, const float *w, float eps,
				   struct ctq_error *err)
{
	(void)b;
	(void)err;
	float *f = x;
	for (int64_t t = 0; t < T; t++)
		for (int64_t h = 0; h < heads; h++) {
			float *v = f + t * ld + h * d;
			rms_row(v, w, d, eps, v);
		}
	return CTQ_OK;
}

enum ctq_status ctq_refm_rope(struct ctq_backend *b, void *x, int64_t ld, const int32_t *pos,
			      int64_t T, int64_t heads, int64_t d, const float *inv_freq,
			      struct ctq_error *err)
{
	(void)b;
	(void)err;
	float *f = x;
	const int64_t half = d / 2;
	for (int64_t t = 0; t < T; t++)
		for (int64_t i = 0; i < half; i++) {
			float a = (float)pos[t] * inv_freq[i];
			float c = cosf(a), s = sinf(a);
			for (int64_t h = 0; h < heads; h++) {
				float *v = f + t * ld + h * d;
				float x1 = v[i], x2 = v[i + half];
				v[i] = x1 * c - x2 * s;
				v[i + half] = x2 * c + x1 * s;
			}
		}
	return CTQ_OK;
}

enum ctq_status ctq_refm_silu_mul(struct ctq_backend *b, const void *gu, int64_t M, int64_t I,
				  void *out, struct ctq_error *err)
{
	(void)b;
	(void)err;
	const float *g = gu;
	float *o = out;
	for (int64_t m = 0; m < M; m++)
		for (int64_t i = 0; i < I; i++) {
			float a = g[m * 2 * I + i], u = g[m * 2 * I + I + i];
			o[m * I + i] = a / (1.0f + expf(-a)) * u;
		}
	return CTQ_OK;
}

enum ctq_status ctq_refm_rows_to_host(struct ctq_backend *b, const void *x, int64_t N,
				      const int64_t *idx, int64_t n, float *out,
				      struct ctq_error *err)
{
	(void)b;
	(void)err;
	for (int64_t i = 0; i < n; i++)
		memcpy(out + i * N, (const float *)x + idx[i] * N, (size_t)N * sizeof *out);
	return CTQ_OK;
}
