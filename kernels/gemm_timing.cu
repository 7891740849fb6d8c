/* ctq GEMM benchmark driver (see bench_gemm.h): buffers rotated against the
 * L2, CUDA graphs of consecutive calls, CUDA events between graph launches.
 * ctq's kernels are called through kernels/kernels.h only, as the runner
 * calls them; the baselines are cublasGemmEx (BF16) and cuBLASLt (int8). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>

#include "kernels/gemm_timing.h"
#include "kernels/cuda_check.h"
#include "kernels/arch.h"
#include "kernels/cublas_stream.h"
#include "kernels/kernels.h"
#include "backend/plugin.h"
#include "include/ctq_kernel_plugin.h"

/* cuBLAS and cuBLASLt share one workspace: they run on one stream, in turn,
 * and a workspace set up front keeps graph capture free of allocations. */
#define WS_BYTES ((size_t)64 << 20)
/* Graph size bound: a launch of this many nodes instantiates in milliseconds. */
#define MAX_CALLS 4096
/* The kernel plug-in's ids in call() and capture(), beside enum ctq_gemm_impl:
 * its quantize + gemm_w8a8, and its gemm_wna16. */
#define PLUGIN_IMPL CTQ_GEMM_IMPL_COUNT
#define WNA16_IMPL (CTQ_GEMM_IMPL_COUNT + 1)

/* `count` copies of one buffer, each `stride` bytes (a multiple of 256). */
struct buf {
	char *base;
	size_t bytes, stride;
	int count;
};

struct ctq_gemm_bench {
	int device;
	cudaStream_t stream;
	cublasHandle_t cublas;
	cublasLtHandle_t lt;
	void *ws;
	int64_t M, N, K;
	int copies[CTQ_GEMM_IMPL_COUNT];
	struct buf x;    /* (M, K) bf16 */
	struct buf q;    /* (M, K) int8 */
	struct buf s;    /* (M) f32 */
	struct buf w;    /* (N, K) int8 */
	struct buf wbf;  /* (N, K) bf16 */
	struct buf sw;   /* (N) f32 */
	struct buf bias; /* (N) f32 */
	struct buf y;    /* (M, N) bf16 */
	struct buf acc;  /* (M, N) int32 */
	cublasLtMatmulDesc_t lt_op;
	cublasLtMatrixLayout_t lt_a, lt_b, lt_c;
	cublasLtMatmulAlgo_t lt_algo;
	bool lt_ok;
	char lt_note[200];
	int path; /* the W8A8 GEMM path forced (enum ctq_gemm_path), -1: dispatch's */
	const struct ctq_kernel_plugin *plugin; /* or NULL (--impl) */
	const char *plugin_path;                /* the file it came from */
	void *pws;                              /* its gemm_w8a8 workspace */
	size_t pws_bytes;
	/* its gemm_wna16's weights (ctq_gemm_bench_wna16_load) */
	struct buf wpk;  /* (N, words) int32 */
	struct buf wsc;  /* (N, groups) f32 */
	struct buf wzp;  /* (zrows, groups) int32, or empty: symmetric */
	int wbits;
	int64_t wgroup;
};

static void *at(const struct buf *b, int copy)
{
	return b->base + (size_t)(copy % b->count) * b->stride;
}

static void buf_free(struct buf *b)
{
	if (b->base)
		cudaFree(b->base);
	memset(b, 0, sizeof *b);
}

static enum ctq_status buf_alloc(struct buf *b, size_t bytes, int count, struct ctq_error *err)
{
	b->bytes = bytes;
	b->stride = (bytes + 255) & ~(size_t)255;
	b->count = count < 1 ? 1 : count;
	enum ctq_status st = CTQ_CUDA(cudaMalloc((void **)&b->base, b->stride * (size_t)b->count), err);
	if (st)
		b->base = NULL;
	return st;
}

/* Uploads src into copy 0, then copies it device-side into the others. */
static enum ctq_status buf_fill(struct ctq_gemm_bench *b, struct buf *d, const void *src,
				struct ctq_error *err)
{
	enum ctq_status st = CTQ_CUDA(cudaMemcpyAsync(d->base, src, d->bytes, cudaMemcpyHostToDevice,
						      b->stream), err);
	for (int c = 1; c < d->count && !st; c++)
		st = CTQ_CUDA(cudaMemcpyAsync(at(d, c), d->base, d->bytes, cudaMemcpyDeviceToDevice,
					      b->stream), err);
	return st ? st : CTQ_CUDA(cudaStreamSynchronize(b->stream), err);
}

/* int8 -> bf16 bits, exact: |v| <= 128 needs 8 significant bits. */
__global__ void i8_to_bf16_kernel(const int8_t *__restrict__ w, int64_t n, uint16_t *__restrict__ out)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * blockDim.x)
		out[i] = (uint16_t)(__float_as_uint((float)w[i]) >> 16);
}

static void lt_free(struct ctq_gemm_bench *b)
{
	cublasLtMatrixLayout_t *lay[] = {&b->lt_a, &b->lt_b, &b->lt_c};
	for (size_t i = 0; i < sizeof lay / sizeof *lay; i++) {
		if (*lay[i])
			cublasLtMatrixLayoutDestroy(*lay[i]);
		*lay[i] = NULL;
	}
	if (b->lt_op)
		cublasLtMatmulDescDestroy(b->lt_op);
	b->lt_op = NULL;
	b->lt_ok = false;
}

static void point_free(struct ctq_gemm_bench *b)
{
	struct buf *all[] = {&b->x, &b->q, &b->s, &b->w, &b->wbf, &b->sw, &b->bias, &b->y, &b->acc,
			     &b->wpk, &b->wsc, &b->wzp};
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		buf_free(all[i]);
	if (b->pws)
		cudaFree(b->pws);
	b->pws = NULL;
	b->pws_bytes = 0;
	lt_free(b);
	b->M = b->N = b->K = 0;
}

/* Row-major acc (M, N) = q (M, K) · w (N, K)ᵀ is column-major accᵀ (N, M) =
 * op(A) · op(B) with A = w seen as (K, N) column-major, op T (the "T" of the
 * TN layout the int8 tensor-core kernels support), B = q seen as (K, M),
 * op N. A refused shape becomes a note, not an error. */
static void lt_setup(struct ctq_gemm_bench *b)
{
	cublasStatus_t s;
	const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
	cublasLtMatmulPreference_t pref = NULL;
	const size_t ws = WS_BYTES;
	cublasLtMatmulHeuristicResult_t res;
	int found = 0;
	const char *what = "cublasLtMatmulDescCreate";
	if ((s = cublasLtMatmulDescCreate(&b->lt_op, CUBLAS_COMPUTE_32I, CUDA_R_32I)))
		goto fail;
	what = "cublasLtMatmulDescSetAttribute";
	if ((s = cublasLtMatmulDescSetAttribute(b->lt_op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta)) ||
	    (s = cublasLtMatmulDescSetAttribute(b->lt_op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb)))
		goto fail;
	what = "cublasLtMatrixLayoutCreate";
	if ((s = cublasLtMatrixLayoutCreate(&b->lt_a, CUDA_R_8I, (uint64_t)b->K, (uint64_t)b->N, b->K)) ||
	    (s = cublasLtMatrixLayoutCreate(&b->lt_b, CUDA_R_8I, (uint64_t)b->K, (uint64_t)b->M, b->K)) ||
	    (s = cublasLtMatrixLayoutCreate(&b->lt_c, CUDA_R_32I, (uint64_t)b->N, (uint64_t)b->M, b->N)))
		goto fail;
	what = "cublasLtMatmulPreferenceCreate";
	if ((s = cublasLtMatmulPreferenceCreate(&pref)) ||
	    (s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
						      sizeof ws)))
		goto fail;
	what = "cublasLtMatmulAlgoGetHeuristic";
	s = cublasLtMatmulAlgoGetHeuristic(b->lt, b->lt_op, b->lt_a, b->lt_b, b->lt_c, b->lt_c, pref, 1,
					   &res, &found);
	if (s == CUBLAS_STATUS_SUCCESS && found == 0)
		s = CUBLAS_STATUS_NOT_SUPPORTED;
	if (s)
		goto fail;
	cublasLtMatmulPreferenceDestroy(pref);
	b->lt_algo = res.algo;
	b->lt_ok = true;
	b->lt_note[0] = '\0';
	return;
fail:
	if (pref)
		cublasLtMatmulPreferenceDestroy(pref);
	lt_free(b);
	snprintf(b->lt_note, sizeof b->lt_note, "cuBLASLt int8 TN (N %lld, M %lld, K %lld): %s: %s (%d)",
		 (long long)b->N, (long long)b->M, (long long)b->K, what, cublasGetStatusName(s), (int)s);
}

extern "C" enum ctq_status ctq_gemm_bench_open(struct ctq_gemm_bench **out, int device,
					       struct ctq_gemm_device *info, struct ctq_error *err)
{
	*out = NULL;
	memset(info, 0, sizeof *info);
	int n = 0;
	enum ctq_status st = ctq_cuda_device_count("--device", &n, err);
	if (st)
		return st;
	if (device < 0 || device >= n)
		return ctq_error_set(err, CTQ_ERR_ENV, "--device", "is %d; %d device(s) visible", device, n);
	struct ctq_gemm_bench *b = (struct ctq_gemm_bench *)calloc(1, sizeof *b);
	if (!b)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "bench gemm", "out of memory");
	b->device = device;
	b->path = -1;
	cudaDeviceProp p;
	if ((st = CTQ_CUDA(cudaSetDevice(device), err)) ||
	    (st = CTQ_CUDA(cudaGetDeviceProperties(&p, device), err)) ||
	    (st = ctq_cublas_stream_open(&b->stream, &b->cublas, &b->ws, WS_BYTES, err)) ||
	    (st = CTQ_CUBLAS(cublasLtCreate(&b->lt), err))) {
		ctq_gemm_bench_close(b);
		return st;
	}
	snprintf(info->name, sizeof info->name, "%s", p.name);
	info->major = p.major;
	info->minor = p.minor;
	info->sms = p.multiProcessorCount;
	info->l2_bytes = p.l2CacheSize;
	info->mem_bytes = (int64_t)p.totalGlobalMem;
	if ((st = ctq_cuda_arch_check(device, err))) {
		ctq_gemm_bench_close(b);
		return st;
	}
	*out = b;
	return CTQ_OK;
}

extern "C" void ctq_gemm_bench_close(struct ctq_gemm_bench *b)
{
	if (!b)
		return;
	cudaSetDevice(b->device);
	point_free(b);
	if (b->lt)
		cublasLtDestroy(b->lt);
	ctq_cublas_stream_close(b->stream, b->cublas, b->ws);
	free(b);
}

static int max_copies(const int *c, unsigned mask)
{
	int m = 1;
	for (int i = 0; i < CTQ_GEMM_IMPL_COUNT; i++)
		if ((mask >> i) & 1u && c[i] > m)
			m = c[i];
	return m;
}

#define BIT(i) (1u << (i))

extern "C" enum ctq_status ctq_gemm_bench_load(struct ctq_gemm_bench *b,
					       const struct ctq_gemm_inputs *in,
					       struct ctq_error *err)
{
	point_free(b);
	const int64_t M = in->M, N = in->N, K = in->K;
	if (M < 1 || N < 1 || K < 1 || M > 0x7fffffff || N > 0x7fffffff || K > 0x7fffffff)
		return ctq_error_set(err, CTQ_ERR_USAGE, "bench gemm", "M %lld, N %lld, K %lld out of range",
				     (long long)M, (long long)N, (long long)K);
	b->M = M, b->N = N, b->K = K;
	for (int i = 0; i < CTQ_GEMM_IMPL_COUNT; i++)
		b->copies[i] = in->copies[i] < 1 ? 1 : in->copies[i];
	const int *c = b->copies;
	/* Each buffer has as many copies as the implementation that cycles
	 * through it most; copy 0 also serves the untimed checks. */
	const unsigned uses_x = BIT(CTQ_GEMM_W8A8) | BIT(CTQ_GEMM_QUANTIZE) | BIT(CTQ_GEMM_BF16);
	const unsigned uses_q = BIT(CTQ_GEMM_W8A8) | BIT(CTQ_GEMM_GEMM) | BIT(CTQ_GEMM_QUANTIZE) |
				BIT(CTQ_GEMM_I8);
	const unsigned uses_w = BIT(CTQ_GEMM_W8A8) | BIT(CTQ_GEMM_GEMM) | BIT(CTQ_GEMM_I8);
	const unsigned uses_sw = BIT(CTQ_GEMM_W8A8) | BIT(CTQ_GEMM_GEMM);
	const unsigned uses_y = BIT(CTQ_GEMM_W8A8) | BIT(CTQ_GEMM_GEMM) | BIT(CTQ_GEMM_BF16);
	const size_t mk = (size_t)M * (size_t)K, nk = (size_t)N * (size_t)K, mn = (size_t)M * (size_t)N;
	enum ctq_status st;
	if ((st = buf_alloc(&b->x, 2 * mk, max_copies(c, uses_x), err)) ||
	    (st = buf_alloc(&b->q, mk, max_copies(c, uses_q), err)) ||
	    (st = buf_alloc(&b->s, 4 * (size_t)M, max_copies(c, uses_q), err)) ||
	    (st = buf_alloc(&b->w, nk, max_copies(c, uses_w), err)) ||
	    (st = buf_alloc(&b->wbf, 2 * nk, c[CTQ_GEMM_BF16], err)) ||
	    (st = buf_alloc(&b->sw, 4 * (size_t)N, max_copies(c, uses_sw), err)) ||
	    (st = buf_alloc(&b->bias, 4 * (size_t)N, max_copies(c, uses_sw), err)) ||
	    (st = buf_alloc(&b->y, 2 * mn, max_copies(c, uses_y), err)) ||
	    (st = buf_alloc(&b->acc, 4 * mn, c[CTQ_GEMM_I8], err)) ||
	    (st = buf_fill(b, &b->x, in->x, err)) || (st = buf_fill(b, &b->w, in->w, err)) ||
	    (st = buf_fill(b, &b->sw, in->s_w, err)) || (st = buf_fill(b, &b->bias, in->bias, err)))
		goto fail;
	for (int k = 0; k < b->q.count && !st; k++)
		st = ctq_quantize_launch((const uint16_t *)at(&b->x, k), M, K, (int8_t *)at(&b->q, k),
					 (float *)at(&b->s, k), b->stream, err);
	for (int k = 0; k < b->wbf.count && !st; k++) {
		const int8_t *src = (const int8_t *)at(&b->w, k);
		i8_to_bf16_kernel<<<1024, 256, 0, b->stream>>>(src, (int64_t)nk, (uint16_t *)at(&b->wbf, k));
		st = CTQ_LAUNCH(err);
	}
	if (st || (st = CTQ_CUDA(cudaStreamSynchronize(b->stream), err)))
		goto fail;
	/* The plug-in's answer checked first: a size near SIZE_MAX is a broken
	 * plug-in, refused naming it and the field. */
	if (b->plugin &&
	    ((st = ctq_kernel_plugin_workspace(b->plugin, b->plugin_path, M, N, K, &b->pws_bytes, err)) ||
	     (b->pws_bytes > 0 && (st = CTQ_CUDA(cudaMalloc(&b->pws, b->pws_bytes), err))))) {
		b->pws = NULL;
		goto fail;
	}
	lt_setup(b);
	return CTQ_OK;
fail:
	point_free(b);
	return st;
}

/* A plug-in's non-zero return as an error with its message. */
static enum ctq_status plugin_failed(const struct ctq_kernel_plugin *p, const char *fn, int rc,
				     char *msg, size_t cap, struct ctq_error *err)
{
	msg[cap - 1] = '\0';
	return ctq_error_set(err, CTQ_ERR_ENV, "--impl", "plug-in %s: %s returned %d: %s", p->name, fn,
			     rc, msg[0] ? msg : "(no message)");
}

/* The plug-in end to end on copy k (quantize_only: its quantize alone). */
static enum ctq_status plugin_call(struct ctq_gemm_bench *b, int k, bool quantize_only,
				   struct ctq_error *err)
{
	const struct ctq_kernel_plugin *p = b->plugin;
	int8_t *q = (int8_t *)at(&b->q, k);
	float *s = (float *)at(&b->s, k);
	char msg[512] = "";
	/* In ctq's process (a CUDA context does not survive fork): a crash
	 * inside the call at least names the plug-in, the call and the
	 * geometry before ctq ends (backend/plugin.h). */
	ctq_kernel_plugin_call_begin(p, b->plugin_path, "quantize", b->M, -1, b->K, 0);
	int rc = p->quantize((const uint16_t *)at(&b->x, k), b->M, b->K, q, s, b->stream, msg, sizeof msg);
	ctq_kernel_plugin_call_end();
	if (rc)
		return plugin_failed(p, "quantize", rc, msg, sizeof msg, err);
	if (quantize_only)
		return CTQ_OK;
	ctq_kernel_plugin_call_begin(p, b->plugin_path, "gemm_w8a8", b->M, b->N, b->K, 0);
	rc = p->gemm_w8a8(q, s, (const int8_t *)at(&b->w, k), (const float *)at(&b->sw, k),
			  (const float *)at(&b->bias, k), b->M, b->N, b->K, (uint16_t *)at(&b->y, k),
			  b->pws, b->pws_bytes, b->stream, msg, sizeof msg);
	ctq_kernel_plugin_call_end();
	return rc ? plugin_failed(p, "gemm_w8a8", rc, msg, sizeof msg, err) : CTQ_OK;
}

/* The plug-in's gemm_wna16 on copy k: activations and output as the other
 * implementations cycle them, weights through their own copies. */
static enum ctq_status wna16_call(struct ctq_gemm_bench *b, int k, struct ctq_error *err)
{
	const struct ctq_kernel_plugin *p = b->plugin;
	if (!b->wpk.base)
		return ctq_error_set(err, CTQ_ERR_USAGE, "bench gemm", "no weight-only weights loaded");
	char msg[512] = "";
	ctq_kernel_plugin_call_begin(p, b->plugin_path, "gemm_wna16", b->M, b->N, b->K, 0);
	int rc = p->gemm_wna16((const uint16_t *)at(&b->x, k), (const int32_t *)at(&b->wpk, k),
			       (const float *)at(&b->wsc, k),
			       b->wzp.base ? (const int32_t *)at(&b->wzp, k) : NULL,
			       (const float *)at(&b->bias, k), b->M, b->N, b->K, b->wbits, b->wgroup,
			       (uint16_t *)at(&b->y, k), b->stream, msg, sizeof msg);
	ctq_kernel_plugin_call_end();
	return rc ? plugin_failed(p, "gemm_wna16", rc, msg, sizeof msg, err) : CTQ_OK;
}

/* ctq's W8A8 GEMM on the path forced, or dispatch's. */
static enum ctq_status gemm(struct ctq_gemm_bench *b, const int8_t *q, const int8_t *w,
			    const float *s, const float *sw, const float *bias, int32_t *acc,
			    uint16_t *y, struct ctq_error *err)
{
	if (b->path >= 0)
		return ctq_gemm_w8a8_launch_on((enum ctq_gemm_path)b->path, q, w, s, sw, bias, b->M, b->N,
					       b->K, acc, y, 0, b->stream, err);
	return ctq_gemm_w8a8_launch(q, w, s, sw, bias, b->M, b->N, b->K, acc, y, 0, b->stream, err);
}

extern "C" void ctq_gemm_bench_set_path(struct ctq_gemm_bench *b, int path)
{
	b->path = path >= 0 && path < CTQ_GEMM_PATH_COUNT ? path : -1;
}

extern "C" int ctq_gemm_bench_path(struct ctq_gemm_bench *b)
{
	if (b->path >= 0)
		return b->path;
	return (int)ctq_gemm_w8a8_path((const int8_t *)b->q.base, (const int8_t *)b->w.base, b->M, b->N,
				       b->K, 0);
}

/* One call of impl (or PLUGIN_IMPL) on copy k, enqueued on the stream
 * (also during capture). */
static enum ctq_status call(struct ctq_gemm_bench *b, int impl, int k, struct ctq_error *err)
{
	const int64_t M = b->M, N = b->N, K = b->K;
	const uint16_t *x = (const uint16_t *)at(&b->x, k);
	int8_t *q = (int8_t *)at(&b->q, k);
	float *s = (float *)at(&b->s, k);
	const int8_t *w = (const int8_t *)at(&b->w, k);
	const float *sw = (const float *)at(&b->sw, k), *bias = (const float *)at(&b->bias, k);
	uint16_t *y = (uint16_t *)at(&b->y, k);
	enum ctq_status st;
	switch (impl) {
	case CTQ_GEMM_W8A8:
		if ((st = ctq_quantize_launch(x, M, K, q, s, b->stream, err)))
			return st;
		return gemm(b, q, w, s, sw, bias, NULL, y, err);
	case CTQ_GEMM_GEMM:
		return gemm(b, q, w, s, sw, bias, NULL, y, err);
	case CTQ_GEMM_QUANTIZE:
		return ctq_quantize_launch(x, M, K, q, s, b->stream, err);
	case CTQ_GEMM_BF16: {
		/* Row-major y (M, N) = x (M, K) · w (N, K)ᵀ, as the CUDA backend
		 * calls it (kernels/backend_cuda.cu). */
		const float alpha = 1.0f, beta = 0.0f;
		return CTQ_CUBLAS(cublasGemmEx(b->cublas, CUBLAS_OP_T, CUBLAS_OP_N, (int)N, (int)M, (int)K,
					       &alpha, at(&b->wbf, k), CUDA_R_16BF, (int)K, x, CUDA_R_16BF,
					       (int)K, &beta, y, CUDA_R_16BF, (int)N, CUBLAS_COMPUTE_32F,
					       CUBLAS_GEMM_DEFAULT),
				  err);
	}
	case CTQ_GEMM_I8: {
		const int32_t alpha = 1, beta = 0;
		void *acc = at(&b->acc, k);
		return CTQ_CUBLAS(cublasLtMatmul(b->lt, b->lt_op, &alpha, w, b->lt_a, q, b->lt_b, &beta, acc,
						 b->lt_c, acc, b->lt_c, &b->lt_algo, b->ws, WS_BYTES,
						 b->stream),
				  err);
	}
	case PLUGIN_IMPL:
		return plugin_call(b, k, false, err);
	case WNA16_IMPL:
		return wna16_call(b, k, err);
	default:
		return ctq_error_set(err, CTQ_ERR_USAGE, "bench gemm", "unknown implementation %d", (int)impl);
	}
}

/* Rows of a (M, row_bytes) device matrix into a dense host array. */
static enum ctq_status read_rows(struct ctq_gemm_bench *b, const void *dev, size_t row_bytes,
				 const int64_t *rows, int64_t n, void *host, struct ctq_error *err)
{
	enum ctq_status st = CTQ_OK;
	for (int64_t i = 0; i < n && !st; i++)
		st = CTQ_CUDA(cudaMemcpyAsync((char *)host + (size_t)i * row_bytes,
					      (const char *)dev + (size_t)rows[i] * row_bytes, row_bytes,
					      cudaMemcpyDeviceToHost, b->stream),
			      err);
	return st ? st : CTQ_CUDA(cudaStreamSynchronize(b->stream), err);
}

static enum ctq_status poison(struct ctq_gemm_bench *b, struct buf *d, struct ctq_error *err)
{
	return CTQ_CUDA(cudaMemsetAsync(d->base, 0xff, d->bytes, b->stream), err);
}

extern "C" enum ctq_status ctq_gemm_bench_run_once(struct ctq_gemm_bench *b,
						   struct ctq_gemm_outputs *o, struct ctq_error *err)
{
	const int64_t M = b->M, N = b->N, K = b->K;
	for (int64_t i = 0; i < o->n_rows; i++)
		if (o->rows[i] < 0 || o->rows[i] >= M)
			return ctq_error_set(err, CTQ_ERR_USAGE, "bench gemm", "row %lld outside [0, %lld)",
					     (long long)o->rows[i], (long long)M);
	const size_t yrow = 2 * (size_t)N, arow = 4 * (size_t)N;
	enum ctq_status st;
	/* Quantization (into copy 0 again, after poisoning it). */
	if ((st = poison(b, &b->q, err)) || (st = poison(b, &b->s, err)) ||
	    (st = call(b, CTQ_GEMM_QUANTIZE, 0, err)) ||
	    (st = read_rows(b, b->q.base, (size_t)K, o->rows, o->n_rows, o->q, err)) ||
	    (st = read_rows(b, b->s.base, 4, o->rows, o->n_rows, o->s, err)))
		return st;
	/* The int32 accumulators (acc != NULL: the debug path). */
	if ((st = poison(b, &b->acc, err)) ||
	    (st = gemm(b, (const int8_t *)b->q.base, (const int8_t *)b->w.base, NULL, NULL, NULL,
		       (int32_t *)b->acc.base, NULL, err)) ||
	    (st = read_rows(b, b->acc.base, arow, o->rows, o->n_rows, o->acc, err)))
		return st;
	/* End to end, then the GEMM alone on the quantized input. */
	if ((st = poison(b, &b->y, err)) || (st = call(b, CTQ_GEMM_W8A8, 0, err)) ||
	    (st = read_rows(b, b->y.base, yrow, o->rows, o->n_rows, o->y_w8a8, err)) ||
	    (st = poison(b, &b->y, err)) || (st = call(b, CTQ_GEMM_GEMM, 0, err)) ||
	    (st = read_rows(b, b->y.base, yrow, o->rows, o->n_rows, o->y_gemm, err)))
		return st;
	/* cuBLASLt int8; cuBLAS BF16 once, so a failing baseline shows here. */
	o->i8_ok = b->lt_ok;
	snprintf(o->i8_note, sizeof o->i8_note, "%s", b->lt_note);
	if (b->lt_ok && ((st = poison(b, &b->acc, err)) || (st = call(b, CTQ_GEMM_I8, 0, err)) ||
			 (st = read_rows(b, b->acc.base, arow, o->rows, o->n_rows, o->acc_i8, err))))
		return st;
	if ((st = call(b, CTQ_GEMM_BF16, 0, err)))
		return st;
	return CTQ_CUDA(cudaStreamSynchronize(b->stream), err);
}

/* Captures `calls` consecutive calls (call j on copy j % copies) into an
 * executable graph. */
static enum ctq_status capture(struct ctq_gemm_bench *b, int impl, int copies,
			       int calls, cudaGraphExec_t *exec, struct ctq_error *err)
{
	*exec = NULL;
	cudaGraph_t g = NULL;
	enum ctq_status st = CTQ_CUDA(cudaStreamBeginCapture(b->stream, cudaStreamCaptureModeThreadLocal), err);
	if (st)
		return st;
	for (int j = 0; j < calls && !st; j++)
		st = call(b, impl, j % copies, err);
	/* End the capture even after a failed call, so the stream is usable. */
	enum ctq_status st2 = CTQ_CUDA(cudaStreamEndCapture(b->stream, &g), st ? NULL : err);
	if (!st)
		st = st2;
	if (!st)
		st = CTQ_CUDA(cudaGraphInstantiate(exec, g, 0), err);
	if (g)
		cudaGraphDestroy(g);
	if (st) {
		*exec = NULL;
		(void)cudaGetLastError();
	}
	return st;
}

static enum ctq_status time_impl(struct ctq_gemm_bench *b, int impl, int n_copies,
				 struct ctq_gemm_timing *t, struct ctq_error *err);

extern "C" enum ctq_status ctq_gemm_bench_time(struct ctq_gemm_bench *b, enum ctq_gemm_impl impl,
					       struct ctq_gemm_timing *t, struct ctq_error *err)
{
	t->copies = t->calls = 0;
	t->supported = true;
	t->note[0] = '\0';
	if (impl < 0 || impl >= CTQ_GEMM_IMPL_COUNT || t->samples < 1)
		return ctq_error_set(err, CTQ_ERR_USAGE, "bench gemm", "implementation %d, %d samples",
				     (int)impl, t->samples);
	if (impl == CTQ_GEMM_I8 && !b->lt_ok) {
		t->supported = false;
		snprintf(t->note, sizeof t->note, "%s", b->lt_note);
		return CTQ_OK;
	}
	return time_impl(b, impl, b->copies[impl], t, err);
}

extern "C" void ctq_gemm_bench_set_plugin(struct ctq_gemm_bench *b, const struct ctq_kernel_plugin *p,
					  const char *path)
{
	b->plugin = p;
	b->plugin_path = path && path[0] ? path : "--impl";
}

extern "C" enum ctq_status ctq_gemm_bench_plugin_time(struct ctq_gemm_bench *b, struct ctq_gemm_timing *t,
						      struct ctq_error *err)
{
	t->copies = t->calls = 0;
	t->supported = true;
	t->note[0] = '\0';
	if (!b->plugin || t->samples < 1)
		return ctq_error_set(err, CTQ_ERR_USAGE, "bench gemm", "no plug-in set, or %d samples",
				     t->samples);
	return time_impl(b, PLUGIN_IMPL, b->copies[CTQ_GEMM_W8A8], t, err);
}

extern "C" enum ctq_status ctq_gemm_bench_plugin_run_once(struct ctq_gemm_bench *b, const int64_t *rows,
							  int64_t n_rows, int8_t *q, float *s, uint16_t *y,
							  struct ctq_error *err)
{
	if (!b->plugin)
		return ctq_error_set(err, CTQ_ERR_USAGE, "bench gemm", "no plug-in set");
	for (int64_t i = 0; i < n_rows; i++)
		if (rows[i] < 0 || rows[i] >= b->M)
			return ctq_error_set(err, CTQ_ERR_USAGE, "bench gemm", "row %lld outside [0, %lld)",
					     (long long)rows[i], (long long)b->M);
	enum ctq_status st;
	if ((st = poison(b, &b->q, err)) || (st = poison(b, &b->s, err)) ||
	    (st = plugin_call(b, 0, true, err)) ||
	    (st = read_rows(b, b->q.base, (size_t)b->K, rows, n_rows, q, err)) ||
	    (st = read_rows(b, b->s.base, 4, rows, n_rows, s, err)) || (st = poison(b, &b->y, err)) ||
	    (st = plugin_call(b, 0, false, err)) ||
	    (st = read_rows(b, b->y.base, 2 * (size_t)b->N, rows, n_rows, y, err)))
		cudaStreamSynchronize(b->stream);
	/* ctq's own q and s in copy 0 again (ctq_gemm reads them). */
	if (!st)
		st = call(b, CTQ_GEMM_QUANTIZE, 0, err);
	return st ? st : CTQ_CUDA(cudaStreamSynchronize(b->stream), err);
}

extern "C" enum ctq_status ctq_gemm_bench_wna16_load(struct ctq_gemm_bench *b,
						     const struct ctq_gemm_wna16_weights *w,
						     struct ctq_error *err)
{
	struct buf *mine[] = {&b->wpk, &b->wsc, &b->wzp};
	for (size_t i = 0; i < sizeof mine / sizeof *mine; i++)
		buf_free(mine[i]);
	if (!b->plugin || !b->plugin->gemm_wna16 || !b->M)
		return ctq_error_set(err, CTQ_ERR_USAGE, "bench gemm",
				     "no weight-only plug-in set, or no point loaded");
	if ((w->bits != 4 && w->bits != 8) || w->words < 1 || w->groups < 1 ||
	    (w->zero && w->zrows < 1))
		return ctq_error_set(err, CTQ_ERR_USAGE, "bench gemm",
				     "weight-only layout: %d bits, %lld words, %lld groups",
				     w->bits, (long long)w->words, (long long)w->groups);
	const int copies = w->copies < 1 ? 1 : w->copies > MAX_CALLS ? MAX_CALLS : w->copies;
	b->wbits = w->bits;
	b->wgroup = w->group_size;
	enum ctq_status st;
	if ((st = buf_alloc(&b->wpk, 4 * (size_t)(b->N * w->words), copies, err)) ||
	    (st = buf_alloc(&b->wsc, 4 * (size_t)(b->N * w->groups), copies, err)) ||
	    (w->zero && (st = buf_alloc(&b->wzp, 4 * (size_t)(w->zrows * w->groups), copies, err))) ||
	    (st = buf_fill(b, &b->wpk, w->packed, err)) || (st = buf_fill(b, &b->wsc, w->scale, err)) ||
	    (w->zero && (st = buf_fill(b, &b->wzp, w->zero, err))))
		for (size_t i = 0; i < sizeof mine / sizeof *mine; i++)
			buf_free(mine[i]);
	return st;
}

extern "C" enum ctq_status ctq_gemm_bench_wna16_run_once(struct ctq_gemm_bench *b, const int64_t *rows,
							 int64_t n_rows, uint16_t *y, struct ctq_error *err)
{
	for (int64_t i = 0; i < n_rows; i++)
		if (rows[i] < 0 || rows[i] >= b->M)
			return ctq_error_set(err, CTQ_ERR_USAGE, "bench gemm", "row %lld outside [0, %lld)",
					     (long long)rows[i], (long long)b->M);
	enum ctq_status st;
	if ((st = poison(b, &b->y, err)) || (st = wna16_call(b, 0, err)) ||
	    (st = read_rows(b, b->y.base, 2 * (size_t)b->N, rows, n_rows, y, err)))
		cudaStreamSynchronize(b->stream);
	return st;
}

extern "C" enum ctq_status ctq_gemm_bench_wna16_time(struct ctq_gemm_bench *b, struct ctq_gemm_timing *t,
						     struct ctq_error *err)
{
	t->copies = t->calls = 0;
	t->supported = true;
	t->note[0] = '\0';
	if (!b->wpk.base || t->samples < 1)
		return ctq_error_set(err, CTQ_ERR_USAGE, "bench gemm",
				     "no weight-only weights loaded, or %d samples", t->samples);
	return time_impl(b, WNA16_IMPL, b->wpk.count, t, err);
}

/* Times `impl` cycling through n_copies buffer sets. */
static enum ctq_status time_impl(struct ctq_gemm_bench *b, int impl, int n_copies,
				 struct ctq_gemm_timing *t, struct ctq_error *err)
{
	const int copies = n_copies > MAX_CALLS ? MAX_CALLS : n_copies;
	int calls = copies;
	cudaGraphExec_t exec = NULL;
	cudaEvent_t *ev = (cudaEvent_t *)calloc((size_t)t->samples + 1, sizeof *ev);
	if (!ev)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "bench gemm", "out of memory");
	enum ctq_status st = CTQ_OK;
	for (int i = 0; i <= t->samples && !st; i++)
		st = CTQ_CUDA(cudaEventCreate(&ev[i]), err);
	if (st || (st = capture(b, impl, copies, calls, &exec, err)))
		goto done;
	/* Calibration: one launch to warm up, one timed; then whole cycles are
	 * added until a launch lasts min_graph_us. */
	if (t->min_graph_us > 0) {
		float ms = 0;
		if ((st = CTQ_CUDA(cudaGraphLaunch(exec, b->stream), err)) ||
		    (st = CTQ_CUDA(cudaEventRecord(ev[0], b->stream), err)) ||
		    (st = CTQ_CUDA(cudaGraphLaunch(exec, b->stream), err)) ||
		    (st = CTQ_CUDA(cudaEventRecord(ev[1], b->stream), err)) ||
		    (st = CTQ_CUDA(cudaEventSynchronize(ev[1]), err)) ||
		    (st = CTQ_CUDA(cudaEventElapsedTime(&ms, ev[0], ev[1]), err)))
			goto done;
		const double us = 1e3 * (double)ms;
		if (us > 0 && us < t->min_graph_us) {
			long cycles = (long)ceil(t->min_graph_us / us);
			if ((long)copies * cycles > MAX_CALLS)
				cycles = MAX_CALLS / copies;
			if (cycles > 1) {
				cudaGraphExecDestroy(exec);
				exec = NULL;
				calls = copies * (int)cycles;
				if ((st = capture(b, impl, copies, calls, &exec, err)))
					goto done;
			}
		}
	}
	for (int i = 0; i < t->warmup && !st; i++)
		st = CTQ_CUDA(cudaGraphLaunch(exec, b->stream), err);
	/* Back to back: the host enqueues far faster than a launch runs, so the
	 * device never idles between samples. */
	if (st || (st = CTQ_CUDA(cudaEventRecord(ev[0], b->stream), err)))
		goto done;
	for (int i = 0; i < t->samples && !st; i++)
		if (!(st = CTQ_CUDA(cudaGraphLaunch(exec, b->stream), err)))
			st = CTQ_CUDA(cudaEventRecord(ev[i + 1], b->stream), err);
	if (st || (st = CTQ_CUDA(cudaEventSynchronize(ev[t->samples]), err)))
		goto done;
	for (int i = 0; i < t->samples && !st; i++) {
		float ms = 0;
		st = CTQ_CUDA(cudaEventElapsedTime(&ms, ev[i], ev[i + 1]), err);
		t->time_us[i] = 1e3 * (double)ms / (double)calls;
	}
	t->copies = copies;
	t->calls = calls;
done:
	if (exec)
		cudaGraphExecDestroy(exec);
	for (int i = 0; i <= t->samples; i++)
		if (ev[i])
			cudaEventDestroy(ev[i]);
	free(ev);
	if (st)
		cudaStreamSynchronize(b->stream);
	return st;
}
