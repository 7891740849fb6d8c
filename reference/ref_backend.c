/* ctq reference backend: the ops table over host memory and reference/ops,
 * plus the test-only defect hooks (applied here, never in the oracle). */
#include "backend/backend.h"
#include "core/arena.h"
#include "core/dtype.h"
#include "core/numerics.h"
#include "reference/ref_model_ops.h"
#include "reference/ref_ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void ref_destroy(struct ctq_backend *b) { (void)b; }

static void ref_describe(struct ctq_backend *b, char *buf, size_t cap)
{
	(void)b;
	snprintf(buf, cap, "reference (CPU)");
}

static enum ctq_status ref_alloc(struct ctq_backend *b, size_t n, void **out,
				 struct ctq_error *err)
{
	(void)b;
	*out = ctq_malloc(n);
	if (!*out)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "reference", "out of memory (%zu bytes)", n);
	return CTQ_OK;
}

static void ref_free(struct ctq_backend *b, void *p)
{
	(void)b;
	free(p);
}

static enum ctq_status ref_copy(struct ctq_backend *b, void *dst, const void *src, size_t n,
				struct ctq_error *err)
{
	(void)b;
	(void)err;
	if (n)
		memmove(dst, src, n);
	return CTQ_OK;
}

static enum ctq_status ref_sync(struct ctq_backend *b, struct ctq_error *err)
{
	(void)b;
	(void)err;
	return CTQ_OK;
}

static enum ctq_status ref_quantize(struct ctq_backend *b, const void *x, int64_t M, int64_t K,
				    void *q, void *s, struct ctq_error *err)
{
	(void)err;
	if (b->act_numerics == CTQ_ACT_NUMERICS_TRANSFORMERS)
		ctq_ref_quantize_ct_bf16(x, M, K, q, s);
	else
		ctq_ref_quantize_bf16(x, M, K, q, s);
	return CTQ_OK;
}

static enum ctq_status ref_gemm_i8(struct ctq_backend *b, const void *q, const void *w,
				   int64_t M, int64_t N, int64_t K, void *acc,
				   struct ctq_error *err)
{
	if (!(b->defects & CTQ_DEFECT_TRANSPOSED_W))
		return ctq_ref_gemm_i8(q, w, M, N, K, acc, err);
	const int8_t *qq = q, *ww = w;
	int32_t *a = acc;
	for (int64_t m = 0; m < M; m++)
		for (int64_t n = 0; n < N; n++) {
			int32_t sum = 0;
			for (int64_t k = 0; k < K; k++)
				sum += (int32_t)qq[m * K + k] * (int32_t)ww[k * N + n];
			a[m * N + n] = sum;
		}
	return CTQ_OK;
}

static enum ctq_status ref_epilogue(struct ctq_backend *b, const void *acc, const void *s_a,
				    const void *s_w, const void *bias, int64_t M, int64_t N,
				    void *y, struct ctq_error *err)
{
	(void)err;
	const int32_t *a = acc;
	const float *sa = s_a, *sw = s_w, *bi = bias;
	uint16_t *out = y;
	for (int64_t m = 0; m < M; m++)
		for (int64_t n = 0; n < N; n++) {
			int64_t ns = ctq_defect_scale_col(b->defects, n, N);
			uint16_t v = ctq_w8a8_epilogue(a[m * N + n], sa[m], sw[ns], bi ? bi[n] : 0.0f);
			out[m * N + n] = ctq_defect_output(b->defects, m, n, M, N, v);
		}
	return CTQ_OK;
}

/* w8a8_linear under transformers' numerics for BF16 activations:
 * compressed-tensors' q and s (BF16 arithmetic) into the workspace, x^ and
 * w^ rounded to BF16, then x^ . w^T + bias accumulated in f32 and rounded
 * to BF16 once (a BF16 GEMM with f32 accumulation). */
static enum ctq_status linear_ct(const uint16_t *x, const int8_t *w, const float *s_w,
				 const float *bias, int64_t M, int64_t N, int64_t K, uint16_t *y,
				 int8_t *q, float *s, struct ctq_error *err)
{
	float *xd = ctq_malloc((size_t)(M * K) * sizeof *xd + 1);  /* (M, K) */
	float *wd = ctq_malloc((size_t)(N * K) * sizeof *wd + 1);  /* (N, K) */
	float *yf = ctq_malloc((size_t)(M * N) * sizeof *yf + 1);  /* (M, N) */
	enum ctq_status st = CTQ_OK;
	if (!xd || !wd || !yf) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, "reference", "out of memory");
	} else {
		ctq_ref_quantize_ct_bf16(x, M, K, q, s);
		ctq_ref_dequantize_ct(q, s, M, K, true, xd);
		ctq_ref_dequantize_ct(w, s_w, N, K, true, wd);
		ctq_ref_gemm_f32(xd, wd, bias, M, N, K, yf);
		ctq_convert_f32_to_bf16(yf, (size_t)(M * N), y);
	}
	free(xd), free(wd), free(yf);
	return st;
}

static enum ctq_status ref_linear(struct ctq_backend *b, const void *x, const void *w,
				  const void *s_w, const void *bias, int64_t M, int64_t N,
				  int64_t K, void *y, void *ws, struct ctq_error *err)
{
	int8_t *q = ws;
	float *s = (float *)((char *)ws + (ctq_w8a8_workspace_bytes(M, K) - (size_t)M * sizeof(float)));
	if (b->act_numerics == CTQ_ACT_NUMERICS_TRANSFORMERS)
		return linear_ct(x, w, s_w, bias, M, N, K, y, q, s, err);
	int32_t *acc = ctq_malloc((size_t)(M * N) * sizeof *acc);
	if (!acc)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "reference", "out of memory");
	ctq_ref_quantize_bf16(x, M, K, q, s);
	enum ctq_status st = ref_gemm_i8(b, q, w, M, N, K, acc, err);
	if (!st)
		st = ref_epilogue(b, acc, s, s_w, bias, M, N, y, err);
	free(acc);
	return st;
}

static enum ctq_status ref_gemm_bf16(struct ctq_backend *b, const void *x, const void *w,
				     const void *bias, int64_t M, int64_t N, int64_t K, void *y,
				     struct ctq_error *err)
{
	(void)b;
	(void)err;
	ctq_ref_gemm_bf16(x, w, bias, M, N, K, y);
	return CTQ_OK;
}

static const struct ctq_backend_ops ref_ops = {
	.name = "reference",
	.destroy = ref_destroy,
	.describe = ref_describe,
	.alloc = ref_alloc,
	.free = ref_free,
	.upload = ref_copy,
	.download = ref_copy,
	.sync = ref_sync,
	.quantize = ref_quantize,
	.gemm_i8 = ref_gemm_i8,
	.w8a8_epilogue = ref_epilogue,
	.w8a8_linear = ref_linear,
	.gemm_bf16 = ref_gemm_bf16,
	.upload_dense = ctq_refm_upload_dense,
	.embed = ctq_refm_embed,
	.rmsnorm = ctq_refm_rmsnorm,
	.add = ctq_refm_add,
	.linear_dense = ctq_refm_linear_dense,
	.linear_w8a8 = ctq_refm_linear_w8a8,
	.head_norm = ctq_refm_head_norm,
	.rope = ctq_refm_rope,
	.attention = ctq_refm_attention,
	.silu_mul = ctq_refm_silu_mul,
	.rows_to_host = ctq_refm_rows_to_host,
	.rmsnorm_quant = ctq_refm_rmsnorm_quant,
	.add_rmsnorm = ctq_refm_add_rmsnorm,
	.add_rmsnorm_quant = ctq_refm_add_rmsnorm_quant,
	.silu_mul_quant = ctq_refm_silu_mul_quant,
	.linear_w8a8_q = ctq_refm_linear_w8a8_q,
	.act_bytes = 4,
};

enum ctq_status ctq_backend_reference(struct ctq_backend *b, struct ctq_error *err)
{
	(void)err;
	memset(b, 0, sizeof *b);
	b->ops = &ref_ops;
	return CTQ_OK;
}
