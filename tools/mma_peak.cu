/* mma_peak: the rate of the int8 mma.sync instruction itself on this GPU
 * (m16n8k32 s8·s8→s32, operands in registers, no memory traffic): the
 * ceiling the compute 8.x W8A8 GEMM (kernels/gemm_w8a8_sm80.cu) works
 * under, which on Hopper is below the wgmma rate the datasheet peak is
 * quoted at. Every SM runs WARPS warps, each issuing CHAINS independent
 * accumulator chains so the pipeline never waits on a result. Prints TOPS
 * (2 x 16 x 8 x 32 per mma) as the median of 9 launches. Standalone (no
 * ctq code): build/tools/mma_peak, tools/h200-session.sh tiles. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define CHAINS 8
#define ITERS 4096
#define WARPS 16

__global__ void __launch_bounds__(WARPS * 32) mma_peak_kernel(int *out, int seed)
{
	uint32_t a[4], b0 = (uint32_t)seed * 0x01010101u, b1 = b0 ^ 0x5a5a5a5au;
	for (int i = 0; i < 4; i++)
		a[i] = (uint32_t)(threadIdx.x + i) * 0x01030507u;
	int32_t d[CHAINS][4] = {};
	for (int it = 0; it < ITERS; it++) {
#pragma unroll
		for (int c = 0; c < CHAINS; c++)
			asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 "
				     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
				     : "+r"(d[c][0]), "+r"(d[c][1]), "+r"(d[c][2]), "+r"(d[c][3])
				     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
	}
	int s = 0;
	for (int c = 0; c < CHAINS; c++)
		s += d[c][0] + d[c][1] + d[c][2] + d[c][3];
	if (s == 0x7fffffff) /* keeps the chains alive; never true in practice */
		out[0] = s;
}

#define CK(x)                                                                                  \
	do {                                                                                   \
		cudaError_t e_ = (x);                                                          \
		if (e_ != cudaSuccess) {                                                       \
			fprintf(stderr, "mma_peak: %s: %s\n", #x, cudaGetErrorString(e_));     \
			return 1;                                                              \
		}                                                                              \
	} while (0)

int main(void)
{
	cudaDeviceProp p;
	CK(cudaGetDeviceProperties(&p, 0));
	int *out;
	CK(cudaMalloc(&out, 4));
	const int blocks = p.multiProcessorCount * 2;
	mma_peak_kernel<<<blocks, WARPS * 32>>>(out, 1);
	CK(cudaGetLastError());
	CK(cudaDeviceSynchronize());
	cudaEvent_t e0, e1;
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	float ms[9];
	for (int r = 0; r < 9; r++) {
		CK(cudaEventRecord(e0));
		mma_peak_kernel<<<blocks, WARPS * 32>>>(out, r + 2);
		CK(cudaEventRecord(e1));
		CK(cudaEventSynchronize(e1));
		CK(cudaEventElapsedTime(&ms[r], e0, e1));
	}
	for (int i = 1; i < 9; i++)
		for (int j = i; j > 0 && ms[j - 1] > ms[j]; j--) {
			float t = ms[j];
			ms[j] = ms[j - 1];
			ms[j - 1] = t;
		}
	const double ops = 2.0 * 16 * 8 * 32 * (double)CHAINS * ITERS * WARPS * blocks;
	printf("mma_peak: %s (sm_%d%d, %d SMs): int8 mma.sync m16n8k32 %.0f TOPS (median of 9, %.3f ms)\n",
	       p.name, p.major, p.minor, p.multiProcessorCount, ops / (ms[4] * 1e-3) / 1e12, ms[4]);
	return 0;
}
