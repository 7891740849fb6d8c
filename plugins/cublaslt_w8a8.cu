// cublaslt_w8a8: a CUDA W8A8 kernel plug-in (include/ctq_kernel_plugin.h),
// written against the public header alone: its own per-token quantization
// kernel, cuBLASLt's int8 x int8 -> int32 GEMM (CUBLAS_COMPUTE_32I, the TN
// layout of the int8 tensor-core kernels) into an int32 workspace, then an
// epilogue kernel applying the per-token and per-channel scales and the
// bias into BF16. Every float step is a separately rounded intrinsic
// (__fdiv_rn, __fmul_rn, __fadd_rn), so it declares QUANT_EXACT and
// GEMM_EXACT and ctq probes it bit for bit.
//
// Build (make CUDA=1 builds it into build/plugins/cublaslt_w8a8.so):
//   nvcc -O3 -std=c++17 -arch=sm_90 -Iinclude -Xcompiler -fPIC -shared
//        plugins/cublaslt_w8a8.cu -o cublaslt_w8a8.so -lcublasLt -lcudart
//
// Graph capture: quantize and gemm_w8a8 only enqueue kernels and a
// cuBLASLt matmul on the caller's stream; the matmul descriptors and the
// algorithm are chosen on the host and cached per (M, N, K), so a call
// inside a capture allocates nothing.
#include "ctq_kernel_plugin.h"

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#define LT_WS_BYTES ((size_t)32 << 20) /* cuBLASLt's own scratch */
#define ALIGN256(n) (((n) + 255) & ~(size_t)255)

static cublasLtHandle_t g_lt;

struct lt_plan {
	int64_t M, N, K;
	cublasLtMatmulDesc_t op;
	cublasLtMatrixLayout_t a, b, c;
	cublasLtMatmulAlgo_t algo;
	bool ok;
};
static struct lt_plan g_plan;

static void plan_free(struct lt_plan *p)
{
	if (p->a)
		cublasLtMatrixLayoutDestroy(p->a);
	if (p->b)
		cublasLtMatrixLayoutDestroy(p->b);
	if (p->c)
		cublasLtMatrixLayoutDestroy(p->c);
	if (p->op)
		cublasLtMatmulDescDestroy(p->op);
	memset(p, 0, sizeof *p);
}

static int lt_init(char *msg, size_t cap)
{
	cublasStatus_t s = cublasLtCreate(&g_lt);
	if (s != CUBLAS_STATUS_SUCCESS) {
		snprintf(msg, cap, "cublasLtCreate: %s", cublasGetStatusName(s));
		return 1;
	}
	return 0;
}

static void lt_fini(void)
{
	plan_free(&g_plan);
	if (g_lt)
		cublasLtDestroy(g_lt);
	g_lt = NULL;
}

// ---- quantize: one block per token row ---------------------------------

#define QBLOCK 256

__device__ static float bf16_to_f32(uint16_t h)
{
	return __uint_as_float((uint32_t)h << 16);
}

__global__ void quantize_kernel(const uint16_t *x, int64_t K, int8_t *q, float *s_tok)
{
	__shared__ float red[QBLOCK];
	__shared__ float s_sh;
	const int64_t m = blockIdx.x;
	const uint16_t *xr = x + m * K; // (K) bf16
	float amax = 0.0f;
	for (int64_t k = threadIdx.x; k < K; k += QBLOCK) {
		float a = fabsf(bf16_to_f32(xr[k]));
		amax = (a > amax || a != a) ? a : amax; // NaN is sticky
	}
	red[threadIdx.x] = amax;
	__syncthreads();
	for (int w = QBLOCK / 2; w > 0; w >>= 1) {
		if (threadIdx.x < w) {
			float o = red[threadIdx.x + w];
			float a = red[threadIdx.x];
			red[threadIdx.x] = (o > a || o != o) ? o : a;
		}
		__syncthreads();
	}
	if (threadIdx.x == 0) {
		float a = red[0];
		s_sh = a == 0.0f ? 0.0f : __fdiv_rn(a, 127.0f);
		s_tok[m] = s_sh;
	}
	__syncthreads();
	const float s = s_sh;
	for (int64_t k = threadIdx.x; k < K; k += QBLOCK) {
		int8_t v = 0;
		if (s != 0.0f) {
			float r = rintf(__fdiv_rn(bf16_to_f32(xr[k]), s)); // ties to even
			v = r != r ? 0 : r > 127.0f ? 127 : r < -128.0f ? -128 : (int8_t)r;
		}
		q[m * K + k] = v;
	}
}

static int cu_failed(cudaError_t e, const char *what, char *msg, size_t cap)
{
	snprintf(msg, cap, "%s: %s", what, cudaGetErrorString(e));
	return 1;
}

static int plugin_quantize(const uint16_t *x, int64_t M, int64_t K, int8_t *q, float *s_tok,
			   void *stream, char *msg, size_t cap)
{
	quantize_kernel<<<(unsigned)M, QBLOCK, 0, (cudaStream_t)stream>>>(x, K, q, s_tok);
	cudaError_t e = cudaGetLastError();
	return e == cudaSuccess ? 0 : cu_failed(e, "quantize_kernel launch", msg, cap);
}

// ---- the epilogue: acc (M, N) int32 -> y (M, N) bf16 --------------------

__device__ static uint16_t f32_to_bf16(float f)
{
	uint32_t u = __float_as_uint(f);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x0040u);
	u += 0x7fffu + ((u >> 16) & 1u); // round to nearest even
	return (uint16_t)(u >> 16);
}

__global__ void epilogue_kernel(const int32_t *acc, const float *s_tok, const float *s_ch,
				const float *bias, int64_t M, int64_t N, uint16_t *y)
{
	const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= M * N)
		return;
	const int64_t m = i / N, n = i % N;
	float v = __fmul_rn(__fmul_rn(__int2float_rn(acc[i]), s_tok[m]), s_ch[n]);
	v = __fadd_rn(v, bias ? bias[n] : 0.0f); // added even when 0: -0 -> +0
	y[i] = f32_to_bf16(v);
}

// ---- the GEMM --------------------------------------------------------------

static size_t plugin_ws_bytes(int64_t M, int64_t N, int64_t K)
{
	(void)K;
	return ALIGN256((size_t)M * (size_t)N * sizeof(int32_t)) + LT_WS_BYTES;
}

// Row-major acc (M, N) = q (M, K) · w (N, K)ᵀ as column-major acc (N, M) =
// op(A) · B with A = w seen as (K, N) column-major under op T and B = q
// seen as (K, M) column-major.
static int plan_for(int64_t M, int64_t N, int64_t K, char *msg, size_t cap)
{
	struct lt_plan *p = &g_plan;
	if (p->ok && p->M == M && p->N == N && p->K == K)
		return 0;
	plan_free(p);
	const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
	const size_t ws = LT_WS_BYTES;
	cublasLtMatmulPreference_t pref = NULL;
	cublasLtMatmulHeuristicResult_t res;
	int found = 0;
	cublasStatus_t s;
	const char *what = "cublasLtMatmulDescCreate";
	if ((s = cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32I, CUDA_R_32I)))
		goto fail;
	what = "cublasLtMatmulDescSetAttribute";
	if ((s = cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta)) ||
	    (s = cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb)))
		goto fail;
	what = "cublasLtMatrixLayoutCreate";
	if ((s = cublasLtMatrixLayoutCreate(&p->a, CUDA_R_8I, (uint64_t)K, (uint64_t)N, K)) ||
	    (s = cublasLtMatrixLayoutCreate(&p->b, CUDA_R_8I, (uint64_t)K, (uint64_t)M, K)) ||
	    (s = cublasLtMatrixLayoutCreate(&p->c, CUDA_R_32I, (uint64_t)N, (uint64_t)M, N)))
		goto fail;
	what = "cublasLtMatmulPreferenceCreate";
	if ((s = cublasLtMatmulPreferenceCreate(&pref)) ||
	    (s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
						      sizeof ws)))
		goto fail;
	what = "cublasLtMatmulAlgoGetHeuristic";
	s = cublasLtMatmulAlgoGetHeuristic(g_lt, p->op, p->a, p->b, p->c, p->c, pref, 1, &res, &found);
	if (s == CUBLAS_STATUS_SUCCESS && found == 0)
		s = CUBLAS_STATUS_NOT_SUPPORTED;
	if (s)
		goto fail;
	cublasLtMatmulPreferenceDestroy(pref);
	p->algo = res.algo;
	p->M = M, p->N = N, p->K = K;
	p->ok = true;
	return 0;
fail:
	if (pref)
		cublasLtMatmulPreferenceDestroy(pref);
	plan_free(p);
	snprintf(msg, cap, "cuBLASLt int8 TN for M %lld, N %lld, K %lld: %s: %s (int8 needs K and N "
		 "multiples of 4)", (long long)M, (long long)N, (long long)K, what, cublasGetStatusName(s));
	return 1;
}

static int plugin_gemm(const int8_t *q, const float *s_tok, const int8_t *w, const float *s_ch,
		       const float *bias, int64_t M, int64_t N, int64_t K, uint16_t *y, void *ws,
		       size_t ws_bytes, void *stream, char *msg, size_t cap)
{
	if (!ws || ws_bytes < plugin_ws_bytes(M, N, K)) {
		snprintf(msg, cap, "workspace of %zu bytes; %zu needed", ws_bytes, plugin_ws_bytes(M, N, K));
		return 1;
	}
	if (plan_for(M, N, K, msg, cap))
		return 1;
	int32_t *acc = (int32_t *)ws; // (M, N) int32
	void *lt_ws = (char *)ws + ALIGN256((size_t)M * (size_t)N * sizeof(int32_t));
	const int32_t alpha = 1, beta = 0;
	cudaStream_t st = (cudaStream_t)stream;
	cublasStatus_t s = cublasLtMatmul(g_lt, g_plan.op, &alpha, w, g_plan.a, q, g_plan.b, &beta, acc,
					  g_plan.c, acc, g_plan.c, &g_plan.algo, lt_ws, LT_WS_BYTES, st);
	if (s != CUBLAS_STATUS_SUCCESS) {
		snprintf(msg, cap, "cublasLtMatmul (M %lld, N %lld, K %lld): %s", (long long)M, (long long)N,
			 (long long)K, cublasGetStatusName(s));
		return 1;
	}
	const int64_t n = M * N;
	epilogue_kernel<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(acc, s_tok, s_ch, bias, M, N, y);
	cudaError_t e = cudaGetLastError();
	return e == cudaSuccess ? 0 : cu_failed(e, "epilogue_kernel launch", msg, cap);
}

static const struct ctq_kernel_plugin table = {
	CTQ_KERNEL_PLUGIN_ABI_VERSION,
	(uint32_t)sizeof(struct ctq_kernel_plugin),
	"cublaslt_w8a8",
	CTQ_KERNEL_PLUGIN_DEVICE_CUDA,
	CTQ_KERNEL_PLUGIN_QUANT_EXACT | CTQ_KERNEL_PLUGIN_GEMM_EXACT,
	lt_init,
	lt_fini,
	plugin_quantize,
	plugin_ws_bytes,
	plugin_gemm,
	NULL, // gemm_bf16: not provided
};

extern "C" __attribute__((visibility("default"))) const struct ctq_kernel_plugin *
ctq_kernel_plugin(uint32_t abi_version)
{
	return abi_version == CTQ_KERNEL_PLUGIN_ABI_VERSION ? &table : NULL;
}
