/* Does compute-sanitizer's initcheck see cuBLAS's stores? (Step 11)
 *
 * initcheck reported uninitialized global reads in bias_bf16_kernel right
 * after the cuBLAS BF16 GEMM of cu_linear_dense (kernels/backend_cuda.cu).
 * This program makes the same calls on one stream: y is written only by
 * cublasGemmEx (as in ctq), then read by a kernel.
 *   ./initcheck-cublas fresh     y straight from cudaMalloc
 *   ./initcheck-cublas sentinel  y = 0xffff (cudaMemset) before the GEMM
 * Both check on the host that the GEMM overwrote every element (no sentinel
 * left in the second) and that y equals an f32 CPU product to BF16
 * precision. If initcheck reports reads in `fresh` and none in `sentinel`
 * while both checks pass, the reports are initcheck not seeing cuBLAS's
 * stores, not data ctq reads before it is written.
 * build: nvcc -O2 -arch=sm_90 tools/initcheck-cublas.cu -lcublas -o initcheck-cublas */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); exit(2); } } while (0)
#define CB(x) do { cublasStatus_t s_ = (x); if (s_ != CUBLAS_STATUS_SUCCESS) { \
	fprintf(stderr, "%s: status %d\n", #x, (int)s_); exit(2); } } while (0)

__global__ void read_add(const __nv_bfloat16 *y, const float *bias, int64_t M, int64_t N, float *out)
{
	int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < M * N)
		out[i] = __bfloat162float(y[i]) + bias[i % N];
}

static float bf(uint16_t v) { uint32_t u = (uint32_t)v << 16; float f; memcpy(&f, &u, 4); return f; }

int main(int argc, char **argv)
{
	const int sentinel = argc > 1 && !strcmp(argv[1], "sentinel");
	const int64_t M = 64, N = 896, K = 896;
	uint16_t *hx = (uint16_t *)malloc(M * K * 2), *hw = (uint16_t *)malloc(N * K * 2), *hy = (uint16_t *)malloc(M * N * 2);
	float *hb = (float *)malloc(N * 4);
	srand(1);
	for (int64_t i = 0; i < M * K; i++) hx[i] = (uint16_t)(0x3c00 + rand() % 0x200) ^ (rand() & 1 ? 0x8000 : 0);
	for (int64_t i = 0; i < N * K; i++) hw[i] = (uint16_t)(0x3c00 + rand() % 0x200) ^ (rand() & 1 ? 0x8000 : 0);
	for (int64_t i = 0; i < N; i++) hb[i] = (float)(i % 7) * 0.25f;
	void *x, *w, *y, *b, *o;
	CK(cudaMalloc(&x, M * K * 2)); CK(cudaMalloc(&w, N * K * 2)); CK(cudaMalloc(&y, M * N * 2));
	CK(cudaMalloc(&b, N * 4)); CK(cudaMalloc(&o, M * N * 4));
	CK(cudaMemcpy(x, hx, M * K * 2, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(w, hw, N * K * 2, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(b, hb, N * 4, cudaMemcpyHostToDevice));
	cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	cublasHandle_t h; CB(cublasCreate(&h)); CB(cublasSetStream(h, s));
	void *ws; CK(cudaMalloc(&ws, 32 << 20)); CB(cublasSetWorkspace(h, ws, 32 << 20));
	if (sentinel)
		CK(cudaMemsetAsync(y, 0xff, M * N * 2, s));
	const float alpha = 1.0f, beta = 0.0f;
	CB(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, (int)N, (int)M, (int)K, &alpha, w, CUDA_R_16BF, (int)K,
			x, CUDA_R_16BF, (int)K, &beta, y, CUDA_R_16BF, (int)N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
	read_add<<<(unsigned)((M * N + 255) / 256), 256, 0, s>>>((const __nv_bfloat16 *)y, (const float *)b, M, N, (float *)o);
	CK(cudaStreamSynchronize(s));
	CK(cudaMemcpy(hy, y, M * N * 2, cudaMemcpyDeviceToHost));
	int64_t left = 0, bad = 0;
	double worst = 0;
	for (int64_t m = 0; m < M; m++)
		for (int64_t n = 0; n < N; n++) {
			uint16_t v = hy[m * N + n];
			if (v == 0xffff) left++;
			double ref = 0;
			for (int64_t k = 0; k < K; k++) ref += (double)bf(hx[m * K + k]) * bf(hw[n * K + k]);
			double d = fabs(bf(v) - ref) / (fabs(ref) + 1);
			if (d > worst) worst = d;
			if (d > 1.0 / 64) bad++;
		}
	printf("initcheck-cublas %s: M %lld N %lld K %lld, sentinels left %lld, elements off by > 1/64: %lld, worst rel %.2e\n",
	       sentinel ? "sentinel" : "fresh", (long long)M, (long long)N, (long long)K, (long long)left, (long long)bad, worst);
	return left || bad ? 1 : 0;
}
