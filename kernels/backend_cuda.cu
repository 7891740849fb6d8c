/* ctq CUDA backend: fills the ops table of backend/backend.h with the
 * kernels of this folder and cuBLAS (BF16 GEMM). One stream per backend;
 * every op is asynchronous on it until sync or download. */
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "kernels/cuda_check.h"
#include "kernels/cublas_stream.h"
#ifndef CTQ_NO_NCCL
#include <nccl.h>
#else
typedef void *ncclComm_t;
#endif
#include "kernels/arch.h"
#include "kernels/kernels.h"
#include "backend/backend.h"
#include "backend/knobs.h"

struct cuda_impl {
	int device;
	cudaStream_t stream;
	cublasHandle_t cublas;
	void *cublas_ws; /* cuBLAS workspace: set explicitly so graph capture never allocates */
	float *att_scratch; /* split-key attention partials (decode), allocated once */
	ncclComm_t comm; /* tensor-parallel communicator, or NULL */
	cudaDeviceProp prop;
	bool no_gemv_bf16; /* CTQ_NO_GEMV_BF16 set: cuBLAS for every BF16 linear (A/B) */
	bool sanitize_memset_cublas; /* CTQ_SANITIZE_MEMSET_CUBLAS: clear cuBLAS outputs first (initcheck) */
	uint16_t *rows_pinned; /* page-locked staging of rows_to_host (logits), grown on demand */
	size_t rows_pinned_cap; /* elements */
	int32_t *argmax_dev, *argmax_pinned; /* rows_argmax's picks, device and page-locked */
	int64_t argmax_cap; /* rows */
};

#define CUBLAS_WS_BYTES ((size_t)32 << 20)
#define ATT_SCRATCH_BYTES ((size_t)16 << 20)

static struct cuda_impl *impl(struct ctq_backend *b)
{
	return (struct cuda_impl *)b->impl;
}

static void cu_destroy(struct ctq_backend *b)
{
	struct cuda_impl *c = impl(b);
	if (!c)
		return;
	/* Guarded: a cudaFree(NULL) would create the context a failed open
	 * never made. */
	void *dev[] = {c->att_scratch, c->argmax_dev};
	for (size_t i = 0; i < sizeof dev / sizeof *dev; i++)
		if (dev[i])
			cudaFree(dev[i]);
	void *pinned[] = {c->rows_pinned, c->argmax_pinned};
	for (size_t i = 0; i < sizeof pinned / sizeof *pinned; i++)
		if (pinned[i])
			cudaFreeHost(pinned[i]);
#ifndef CTQ_NO_NCCL
	if (c->comm)
		ncclCommDestroy(c->comm);
#endif
	ctq_cublas_stream_close(c->stream, c->cublas, c->cublas_ws);
	free(c);
	b->impl = NULL;
}

static void cu_describe(struct ctq_backend *b, char *buf, size_t cap)
{
	struct cuda_impl *c = impl(b);
	char code[160];
	ctq_cuda_code_describe(c->device, code, sizeof code);
	/* "runs ..." after the capability: which of the build's code runs */
	const char *runs = strstr(code, " runs ");
	snprintf(buf, cap, "%.200s (sm_%d%d, %d SMs, %.1f GiB;%s)", c->prop.name, c->prop.major,
		 c->prop.minor, c->prop.multiProcessorCount,
		 (double)c->prop.totalGlobalMem / (1024.0 * 1024.0 * 1024.0), runs ? runs : code);
}

static enum ctq_status cu_alloc(struct ctq_backend *b, size_t n, void **out, struct ctq_error *err)
{
	(void)b;
	*out = NULL;
	return CTQ_CUDA(cudaMalloc(out, n ? n : 1), err);
}

static void cu_free(struct ctq_backend *b, void *p)
{
	(void)b;
	if (p)
		cudaFree(p);
}

/* A copy of n bytes on b's stream, waited for: the host buffer may go
 * as soon as it returns. */
static enum ctq_status cu_copy(struct ctq_backend *b, void *dst, const void *src, size_t n,
			       cudaMemcpyKind kind, struct ctq_error *err)
{
	if (!n)
		return CTQ_OK;
	enum ctq_status st = CTQ_CUDA(cudaMemcpyAsync(dst, src, n, kind, impl(b)->stream), err);
	return st ? st : CTQ_CUDA(cudaStreamSynchronize(impl(b)->stream), err);
}

static enum ctq_status cu_upload(struct ctq_backend *b, void *dst, const void *src, size_t n,
				 struct ctq_error *err)
{
	return cu_copy(b, dst, src, n, cudaMemcpyHostToDevice, err);
}

static enum ctq_status cu_download(struct ctq_backend *b, void *dst, const void *src, size_t n,
				   struct ctq_error *err)
{
	return cu_copy(b, dst, src, n, cudaMemcpyDeviceToHost, err);
}

static enum ctq_status cu_sync(struct ctq_backend *b, struct ctq_error *err)
{
	return CTQ_CUDA(cudaStreamSynchronize(impl(b)->stream), err);
}

static enum ctq_status cu_quantize(struct ctq_backend *b, const void *x, int64_t M, int64_t K,
				   void *q, void *s, struct ctq_error *err)
{
	return ctq_quantize_launch((const uint16_t *)x, M, K, (int8_t *)q, (float *)s,
				   impl(b)->stream, err);
}

static enum ctq_status cu_gemm_i8(struct ctq_backend *b, const void *q, const void *w, int64_t M,
				  int64_t N, int64_t K, void *acc, struct ctq_error *err)
{
	return ctq_gemm_w8a8_launch((const int8_t *)q, (const int8_t *)w, NULL, NULL, NULL, M, N, K,
				    (int32_t *)acc, NULL, b->defects, impl(b)->stream, err);
}

static enum ctq_status cu_epilogue(struct ctq_backend *b, const void *acc, const void *s_a,
				   const void *s_w, const void *bias, int64_t M, int64_t N, void *y,
				   struct ctq_error *err)
{
	return ctq_w8a8_epilogue_launch((const int32_t *)acc, (const float *)s_a,
					(const float *)s_w, (const float *)bias, M, N, (uint16_t *)y,
					b->defects, impl(b)->stream, err);
}

static enum ctq_status cu_linear(struct ctq_backend *b, const void *x, const void *w,
				 const void *s_w, const void *bias, int64_t M, int64_t N, int64_t K,
				 void *y, void *ws, struct ctq_error *err)
{
	int8_t *q = (int8_t *)ws;
	float *s = (float *)((char *)ws + (ctq_w8a8_workspace_bytes(M, K) - (size_t)M * sizeof(float)));
	enum ctq_status st = ctq_quantize_launch((const uint16_t *)x, M, K, q, s, impl(b)->stream, err);
	if (st)
		return st;
	return ctq_gemm_w8a8_launch(q, (const int8_t *)w, s, (const float *)s_w, (const float *)bias,
				    M, N, K, NULL, (uint16_t *)y, b->defects, impl(b)->stream, err);
}

static enum ctq_status cu_gemm_bf16(struct ctq_backend *b, const void *x, const void *w,
				    const void *bias, int64_t M, int64_t N, int64_t K, void *y,
				    struct ctq_error *err)
{
	if (M <= 0 || N <= 0)
		return CTQ_OK;
	if (M > 0x7fffffff || N > 0x7fffffff || K > 0x7fffffff)
		return ctq_error_set(err, CTQ_ERR_USAGE, "gemm_bf16", "dimension beyond int32");
	enum ctq_status st0;
	/* decode: the weight-streaming kernel (kernels/gemv_bf16.cu) */
	if (ctq_gemv_bf16_fits(x, w, M, K) && !impl(b)->no_gemv_bf16) {
		ctq_kpath_note(CTQ_KOP_LINEAR_BF16, CTQ_BF16_PATH_GEMV);
		enum ctq_status st = ctq_gemv_bf16_launch((const uint16_t *)x, (const uint16_t *)w, M, N, K,
							  (uint16_t *)y, impl(b)->stream, err);
		if (st || !bias)
			return st;
		return ctq_bias_bf16_launch((uint16_t *)y, (const float *)bias, M, N, impl(b)->stream, err);
	}
	/* compute-sanitizer's initcheck does not see cuBLAS's stores (measured
	 * on the H200: tools/initcheck-cublas.cu), so every read of a cuBLAS
	 * output reports as uninitialized. Under CTQ_SANITIZE_MEMSET_CUBLAS
	 * (tools/gpu-sanitize.sh sets it for initcheck only) the output is
	 * cleared first, which initcheck does see; the values are cuBLAS's. */
	if (impl(b)->sanitize_memset_cublas &&
	    (st0 = CTQ_CUDA(cudaMemsetAsync(y, 0, (size_t)M * (size_t)N * 2, impl(b)->stream), err)))
		return st0;
	const float alpha = 1.0f, beta = 0.0f;
	ctq_kpath_note(CTQ_KOP_LINEAR_BF16, CTQ_BF16_PATH_CUBLAS);
	/* Row-major y (M, N) = x (M, K) · w (N, K)ᵀ is column-major
	 * yᵀ (N, M) = wᵀᵀ · xᵀ: op(A) = T on w (ld K), op(B) = N on x (ld K). */
	enum ctq_status st = CTQ_CUBLAS(
		cublasGemmEx(impl(b)->cublas, CUBLAS_OP_T, CUBLAS_OP_N, (int)N, (int)M, (int)K, &alpha,
			     w, CUDA_R_16BF, (int)K, x, CUDA_R_16BF, (int)K, &beta, y, CUDA_R_16BF,
			     (int)N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
		err);
	if (st || !bias)
		return st;
	return ctq_bias_bf16_launch((uint16_t *)y, (const float *)bias, M, N, impl(b)->stream, err);
}

/* The W8A8 GEMM path of an M × N × K linear on this backend's device
 * (operands from cudaMalloc: aligned). */
static const char *cu_w8a8_path(struct ctq_backend *b, int64_t M, int64_t N, int64_t K)
{
	if (cudaSetDevice(impl(b)->device) != cudaSuccess)
		return "?";
	static const int8_t aligned[16] __attribute__((aligned(16))) = {0};
	return ctq_gemm_path_name(ctq_gemm_w8a8_path(aligned, aligned, M, N, K, b->defects));
}

static enum ctq_status cu_upload_dense(struct ctq_backend *b, const uint16_t *w, size_t n,
				       void **out, struct ctq_error *err)
{
	enum ctq_status st = cu_alloc(b, n * 2, out, err);
	if (!st && (st = cu_upload(b, *out, w, n * 2, err))) {
		cu_free(b, *out);
		*out = NULL;
	}
	return st;
}

static enum ctq_status cu_embed(struct ctq_backend *b, const void *table, const int32_t *ids,
				int64_t n, int64_t H, void *out, struct ctq_error *err)
{
	return ctq_embed_launch((const uint16_t *)table, ids, n, H, (uint16_t *)out, impl(b)->stream,
				err);
}

static enum ctq_status cu_rmsnorm(struct ctq_backend *b, const void *x, const float *w, int64_t M,
				  int64_t H, float eps, void *y, struct ctq_error *err)
{
	return ctq_rmsnorm_launch((const uint16_t *)x, H, M, 1, w, H, eps, (uint16_t *)y, H,
				  impl(b)->stream, err);
}

static enum ctq_status cu_add(struct ctq_backend *b, void *x, const void *y, int64_t n,
			      struct ctq_error *err)
{
	return ctq_add_launch((uint16_t *)x, (const uint16_t *)y, n, impl(b)->stream, err);
}

static enum ctq_status cu_linear_dense(struct ctq_backend *b, const void *x, const void *w,
				       const float *bias, int64_t M, int64_t N, int64_t K, void *y,
				       struct ctq_error *err)
{
	return cu_gemm_bf16(b, x, w, bias, M, N, K, y, err);
}

static enum ctq_status cu_linear_w8a8(struct ctq_backend *b, const void *x, const int8_t *w,
				      const float *s_w, const float *bias, int64_t M, int64_t N,
				      int64_t K, void *y, void *ws, struct ctq_error *err)
{
	return cu_linear(b, x, w, s_w, bias, M, N, K, y, ws, err);
}

static enum ctq_status cu_head_norm(struct ctq_backend *b, void *x, int64_t ld, int64_t T,
				    int64_t heads, int64_t d, const float *w, float eps,
				    struct ctq_error *err)
{
	return ctq_rmsnorm_launch((const uint16_t *)x, ld, T * heads, heads, w, d, eps, (uint16_t *)x,
				  ld, impl(b)->stream, err);
}

static enum ctq_status cu_rope(struct ctq_backend *b, void *x, int64_t ld, const int32_t *pos,
			       int64_t T, int64_t heads, int64_t d, const float *inv_freq,
			       struct ctq_error *err)
{
	return ctq_rope_launch((uint16_t *)x, ld, pos, T, heads, d, inv_freq, impl(b)->stream, err);
}

static enum ctq_status cu_add_rmsnorm(struct ctq_backend *b, void *x, const void *res, const float *w,
				      int64_t M, int64_t H, float eps, void *y, struct ctq_error *err)
{
	return ctq_add_rmsnorm_launch((uint16_t *)x, (const uint16_t *)res, M, w, H, eps, (uint16_t *)y,
				      impl(b)->stream, err);
}

static enum ctq_status cu_add_rmsnorm_quant(struct ctq_backend *b, void *x, const void *res,
					    const float *w, int64_t M, int64_t H, float eps, void *ws,
					    struct ctq_error *err)
{
	return ctq_add_rmsnorm_quant_launch((uint16_t *)x, (const uint16_t *)res, M, w, H, eps, (int8_t *)ws,
					    ctq_w8a8_workspace_scales(ws, M, H), impl(b)->stream, err);
}

static enum ctq_status cu_qk_norm_rope(struct ctq_backend *b, void *x, int64_t ld, int64_t T,
				       int64_t nq, int64_t nk, int64_t d, const float *wq,
				       const float *wk, float eps, const int32_t *pos,
				       const float *inv_freq, struct ctq_error *err)
{
	return ctq_qk_norm_rope_launch((uint16_t *)x, ld, T, nq, nk, d, wq, wk, eps, pos, inv_freq,
				       impl(b)->stream, err);
}

static enum ctq_status cu_qk_norm_rope_store(struct ctq_backend *b, void *x, int64_t ld, int64_t T,
					     int64_t nq, int64_t nk, int64_t d, const float *wq,
					     const float *wk, float eps, const int32_t *pos,
					     const float *inv_freq, void *k_cache, void *v_cache,
					     const int32_t *slot, int64_t max_len,
					     struct ctq_error *err)
{
	return ctq_qk_norm_rope_store_launch((uint16_t *)x, ld, T, nq, nk, d, wq, wk, eps, pos,
					     inv_freq, (uint16_t *)k_cache, (uint16_t *)v_cache, slot,
					     max_len, impl(b)->stream, err);
}

static enum ctq_status cu_attention(struct ctq_backend *b, const void *q, const void *k,
				    const void *v, int64_t ld, void *k_cache, void *v_cache,
				    const int32_t *slot, const int32_t *pos, const int32_t *host_slot,
				    const int32_t *host_pos, int64_t T, int64_t heads,
				    int64_t kv_heads, int64_t d, int64_t max_len, void *out,
				    struct ctq_error *err)
{
	return ctq_attention_launch((const uint16_t *)q, (const uint16_t *)k, (const uint16_t *)v, ld,
				    (uint16_t *)k_cache, (uint16_t *)v_cache, slot, pos, host_slot,
				    host_pos, T, heads,
				    kv_heads, d, max_len, (uint16_t *)out, impl(b)->att_scratch,
				    ATT_SCRATCH_BYTES, impl(b)->prop.multiProcessorCount, impl(b)->stream,
				    err);
}

static enum ctq_status cu_rmsnorm_quant(struct ctq_backend *b, const void *x, const float *w,
				       int64_t M, int64_t H, float eps, void *ws, struct ctq_error *err)
{
	return ctq_rmsnorm_quant_launch((const uint16_t *)x, M, w, H, eps, (int8_t *)ws,
					ctq_w8a8_workspace_scales(ws, M, H), impl(b)->stream, err);
}

static enum ctq_status cu_silu_mul_quant(struct ctq_backend *b, const void *gu, int64_t M,
					 int64_t I, void *ws, struct ctq_error *err)
{
	return ctq_silu_mul_quant_launch((const uint16_t *)gu, M, I, (int8_t *)ws,
					 ctq_w8a8_workspace_scales(ws, M, I), impl(b)->stream, err);
}

static enum ctq_status cu_linear_w8a8_q(struct ctq_backend *b, const void *ws, const int8_t *w,
					const float *s_w, const float *bias, int64_t M, int64_t N,
					int64_t K, void *y, struct ctq_error *err)
{
	return ctq_gemm_w8a8_launch((const int8_t *)ws, w, ctq_w8a8_workspace_scales((void *)ws, M, K),
				    s_w, bias, M, N, K, NULL, (uint16_t *)y, b->defects, impl(b)->stream,
				    err);
}

static enum ctq_status cu_silu_mul(struct ctq_backend *b, const void *gu, int64_t M, int64_t I,
				   void *out, struct ctq_error *err)
{
	return ctq_silu_mul_launch((const uint16_t *)gu, M, I, (uint16_t *)out, impl(b)->stream, err);
}

/* The logits of a decode step come back here every step: into page-locked
 * staging kept across calls, in one copy when the rows are contiguous, then
 * widened to f32 on the host. */
static enum ctq_status cu_rows_to_host(struct ctq_backend *b, const void *x, int64_t N,
				       const int64_t *idx, int64_t n, float *out,
				       struct ctq_error *err)
{
	struct cuda_impl *c = impl(b);
	const size_t need = (size_t)(n * N);
	if (need > c->rows_pinned_cap) {
		if (c->rows_pinned)
			cudaFreeHost(c->rows_pinned);
		c->rows_pinned = NULL;
		c->rows_pinned_cap = 0;
		enum ctq_status ast = CTQ_CUDA(cudaMallocHost((void **)&c->rows_pinned, need * 2 + 2), err);
		if (ast)
			return ast;
		c->rows_pinned_cap = need;
	}
	uint16_t *tmp = c->rows_pinned;
	bool contiguous = true;
	for (int64_t i = 1; i < n && contiguous; i++)
		contiguous = idx[i] == idx[0] + i;
	enum ctq_status st = CTQ_OK;
	if (n && contiguous)
		st = CTQ_CUDA(cudaMemcpyAsync(tmp, (const uint16_t *)x + idx[0] * N, need * 2,
					      cudaMemcpyDeviceToHost, c->stream),
			      err);
	else
		for (int64_t i = 0; i < n && !st; i++)
			st = CTQ_CUDA(cudaMemcpyAsync(tmp + i * N, (const uint16_t *)x + idx[i] * N,
						      (size_t)N * 2, cudaMemcpyDeviceToHost, c->stream),
				      err);
	if (!st)
		st = CTQ_CUDA(cudaStreamSynchronize(c->stream), err);
	if (!st)
		ctq_convert_to_f32(tmp, CTQ_DTYPE_BF16, need, out);
	return st;
}

/* Greedy decoding's pick on the device: n int32 come back instead of n rows
 * of logits (2.4 MB a step at batch 8 on a 151,936-token vocabulary). */
static enum ctq_status cu_rows_argmax(struct ctq_backend *b, const void *x, int64_t N, int64_t n,
				      int32_t *out, struct ctq_error *err)
{
	struct cuda_impl *c = impl(b);
	enum ctq_status st = CTQ_OK;
	if (n > c->argmax_cap) {
		if (c->argmax_dev)
			cudaFree(c->argmax_dev);
		if (c->argmax_pinned)
			cudaFreeHost(c->argmax_pinned);
		c->argmax_dev = c->argmax_pinned = NULL;
		c->argmax_cap = 0;
		const int64_t cap = n < 64 ? 64 : n;
		if ((st = CTQ_CUDA(cudaMalloc((void **)&c->argmax_dev, (size_t)cap * 4), err)) ||
		    (st = CTQ_CUDA(cudaMallocHost((void **)&c->argmax_pinned, (size_t)cap * 4), err)))
			return st;
		c->argmax_cap = cap;
	}
	if ((st = ctq_rows_argmax_launch((const uint16_t *)x, N, n, c->argmax_dev, c->stream, err)) ||
	    (st = CTQ_CUDA(cudaMemcpyAsync(c->argmax_pinned, c->argmax_dev, (size_t)n * 4,
					   cudaMemcpyDeviceToHost, c->stream),
			   err)) ||
	    (st = CTQ_CUDA(cudaStreamSynchronize(c->stream), err)))
		return st;
	memcpy(out, c->argmax_pinned, (size_t)n * 4);
	return CTQ_OK;
}

static enum ctq_status cu_graph_begin(struct ctq_backend *b, struct ctq_error *err)
{
	return CTQ_CUDA(cudaStreamBeginCapture(impl(b)->stream, cudaStreamCaptureModeThreadLocal), err);
}

static enum ctq_status cu_graph_end(struct ctq_backend *b, void **graph, struct ctq_error *err)
{
	cudaGraph_t g = NULL;
	cudaGraphExec_t e = NULL;
	*graph = NULL;
	enum ctq_status st = CTQ_CUDA(cudaStreamEndCapture(impl(b)->stream, &g), err);
	if (!st)
		st = CTQ_CUDA(cudaGraphInstantiate(&e, g, 0), err);
	if (g)
		cudaGraphDestroy(g);
	if (!st)
		*graph = e;
	return st;
}

static enum ctq_status cu_graph_launch(struct ctq_backend *b, void *graph, struct ctq_error *err)
{
	return CTQ_CUDA(cudaGraphLaunch((cudaGraphExec_t)graph, impl(b)->stream), err);
}

static void cu_graph_destroy(struct ctq_backend *b, void *graph)
{
	(void)b;
	if (graph)
		cudaGraphExecDestroy((cudaGraphExec_t)graph);
}

static enum ctq_status cu_mem_info(struct ctq_backend *b, size_t *free_bytes, size_t *total_bytes,
				   struct ctq_error *err)
{
	(void)b;
	return CTQ_CUDA(cudaMemGetInfo(free_bytes, total_bytes), err);
}

static enum ctq_status cu_bind(struct ctq_backend *b, struct ctq_error *err)
{
	return CTQ_CUDA(cudaSetDevice(impl(b)->device), err);
}

static enum ctq_status cu_allreduce_sum(struct ctq_backend *b, void *buf, int64_t n,
					struct ctq_error *err)
{
	struct cuda_impl *c = impl(b);
	if (!c->comm)
		return ctq_error_set(err, CTQ_ERR_USAGE, "tp", "no NCCL communicator on this backend");
#ifndef CTQ_NO_NCCL
	ncclResult_t r = ncclAllReduce(buf, buf, (size_t)n, ncclBfloat16, ncclSum, c->comm, c->stream);
	if (r != ncclSuccess)
		return ctq_error_set(err, CTQ_ERR_ENV, "nccl", "ncclAllReduce: %s", ncclGetErrorString(r));
	return CTQ_OK;
#else
	(void)buf;
	(void)n;
	return ctq_error_set(err, CTQ_ERR_ENV, "tp", "this ctq was built without NCCL");
#endif
}

static void *cu_stream(struct ctq_backend *b)
{
	return (void *)impl(b)->stream;
}

static struct ctq_backend_ops make_cuda_ops(void)
{
	struct ctq_backend_ops o;
	memset(&o, 0, sizeof o);
	o.name = "cuda";
	o.destroy = cu_destroy;
	o.describe = cu_describe;
	o.alloc = cu_alloc;
	o.free = cu_free;
	o.upload = cu_upload;
	o.download = cu_download;
	o.sync = cu_sync;
	o.quantize = cu_quantize;
	o.gemm_i8 = cu_gemm_i8;
	o.w8a8_epilogue = cu_epilogue;
	o.w8a8_linear = cu_linear;
	o.gemm_bf16 = cu_gemm_bf16;
	o.upload_dense = cu_upload_dense;
	o.embed = cu_embed;
	o.rmsnorm = cu_rmsnorm;
	o.add = cu_add;
	o.linear_dense = cu_linear_dense;
	o.linear_w8a8 = cu_linear_w8a8;
	o.head_norm = cu_head_norm;
	o.rope = cu_rope;
	o.qk_norm_rope = cu_qk_norm_rope;
	o.qk_norm_rope_store = cu_qk_norm_rope_store;
	o.add_rmsnorm = cu_add_rmsnorm;
	o.add_rmsnorm_quant = cu_add_rmsnorm_quant;
	o.attention = cu_attention;
	o.silu_mul = cu_silu_mul;
	o.rows_to_host = cu_rows_to_host;
	o.rows_argmax = cu_rows_argmax;
	o.graph_begin = cu_graph_begin;
	o.graph_end = cu_graph_end;
	o.graph_launch = cu_graph_launch;
	o.graph_destroy = cu_graph_destroy;
	o.mem_info = cu_mem_info;
	o.bind = cu_bind;
	o.allreduce_sum = cu_allreduce_sum;
	o.rmsnorm_quant = cu_rmsnorm_quant;
	o.silu_mul_quant = cu_silu_mul_quant;
	o.linear_w8a8_q = cu_linear_w8a8_q;
	o.stream = cu_stream;
	o.w8a8_path = cu_w8a8_path;
	o.act_bytes = 2;
	return o;
}

static const struct ctq_backend_ops cuda_ops = make_cuda_ops();

extern "C" enum ctq_status ctq_backend_cuda(struct ctq_backend *b, int device,
					    struct ctq_error *err)
{
	memset(b, 0, sizeof *b);
	int n = 0;
	enum ctq_status st = ctq_cuda_device_count("--backend cuda", &n, err);
	if (st)
		return st;
	if (device < 0 || device >= n)
		return ctq_error_set(err, CTQ_ERR_ENV, "--device", "is %d; %d device(s) visible",
				     device, n);
	struct cuda_impl *c = (struct cuda_impl *)calloc(1, sizeof *c);
	if (!c)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "cuda", "out of memory");
	b->impl = c;
	b->ops = &cuda_ops;
	c->device = device;
	c->no_gemv_bf16 = ctq_knobs()->no_gemv_bf16;
	c->sanitize_memset_cublas = ctq_knobs()->sanitize_memset_cublas;
	if ((st = ctq_knobs_check(err)) || (st = CTQ_CUDA(cudaSetDevice(device), err)) ||
	    (st = CTQ_CUDA(cudaGetDeviceProperties(&c->prop, device), err)) ||
	    (st = ctq_cublas_stream_open(&c->stream, &c->cublas, &c->cublas_ws, CUBLAS_WS_BYTES, err)) ||
	    (st = CTQ_CUDA(cudaMalloc((void **)&c->att_scratch, ATT_SCRATCH_BYTES), err))) {
		cu_destroy(b);
		b->ops = NULL;
		return st;
	}
	if ((st = ctq_cuda_arch_check(device, err))) {
		cu_destroy(b);
		b->ops = NULL;
		return st;
	}
	return CTQ_OK;
}

extern "C" enum ctq_status ctq_backend_cuda_tp_init(struct ctq_backend *ranks, int tp,
						    struct ctq_error *err)
{
	if (tp < 2 || tp > 64)
		return ctq_error_set(err, CTQ_ERR_USAGE, "--tp", "is %d; expected 2..64 ranks", tp);
	ncclComm_t comms[64];
	int devs[64];
	for (int k = 0; k < tp; k++) {
		if (!ranks[k].ops || strcmp(ranks[k].ops->name, "cuda"))
			return ctq_error_set(err, CTQ_ERR_USAGE, "--tp", "rank %d is not a CUDA backend", k);
		devs[k] = impl(&ranks[k])->device;
	}
#ifdef CTQ_NO_NCCL
	return ctq_error_set(err, CTQ_ERR_ENV, "--tp", "this ctq was built without NCCL (libnccl not found)");
#else
	/* NVLink multicast (NVLS) stays off: it can take shared hosts' GPUs out
	 * of service; ctq needs plain ring/tree all-reduce only. */
	setenv("NCCL_NVLS_ENABLE", "0", 1);
	ncclResult_t r = ncclCommInitAll(comms, tp, devs);
	if (r != ncclSuccess)
		return ctq_error_set(err, CTQ_ERR_ENV, "nccl", "ncclCommInitAll over %d GPUs: %s", tp,
				     ncclGetErrorString(r));
	for (int k = 0; k < tp; k++)
		impl(&ranks[k])->comm = comms[k];
	return CTQ_OK;
#endif
}
