/* mma_peak: the rate of the int8 mma.sync instruction itself on this GPU
 * (m16n8k32 s8·s8→s32, operands in registers, no memory traffic): the
 * ceiling the compute 8.x W8A8 GEMM (kernels/gemm_w8a8_sm80.cu) works
 * under, which on Hopper is below the wgmma rate the datasheet peak is
 * quoted at. Each warp issues CHAINS independent accumulator chains; the
 * first line is the instruction's peak (16 warps a block, two blocks an
 * SM, 8 chains), then a sweep over resident warps per SM (blocks of four
 * warps, as many blocks an SM as asked) and chains per warp: how many warps
 * a scheduler needs to keep the tensor pipe busy at the GEMM's 24 or 32
 * accumulators a warp. Prints TOPS (2 x 16 x 8 x 32 per mma) as the median
 * of 9 launches. Standalone (no ctq code): build/tools/mma_peak,
 * tools/h200-session.sh tiles. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define ITERS 2048

template <int CHAINS> __global__ void mma_peak_kernel(int *out, int seed, int iters)
{
	uint32_t a[4], b0 = (uint32_t)seed * 0x01010101u, b1 = b0 ^ 0x5a5a5a5au;
	for (int i = 0; i < 4; i++)
		a[i] = (uint32_t)(threadIdx.x + i) * 0x01030507u;
	int32_t d[CHAINS][4] = {};
	for (int it = 0; it < iters; it++) {
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

/* The GEMM's inner loop without memory: a warp's 4 m16 activation and 8
 * n8 weight fragments, 32 accumulators, in order ORDER (0: m16 blocks
 * outer, 1: n8 blocks outer, 2: serpentine over n8). */
template <int ORDER> __global__ void __launch_bounds__(128, 2) mma_tile_kernel(int *out, int seed, int iters)
{
	uint32_t a[4][4], b[8][2];
	for (int i = 0; i < 4; i++)
		for (int e = 0; e < 4; e++)
			a[i][e] = (uint32_t)(threadIdx.x + 4 * i + e + seed) * 0x01030507u;
	for (int j = 0; j < 8; j++)
		for (int e = 0; e < 2; e++)
			b[j][e] = (uint32_t)(threadIdx.x * 3 + 2 * j + e + seed) * 0x05030101u;
	int32_t d[4][8][4] = {};
	for (int it = 0; it < iters; it++) {
#pragma unroll
		for (int x = 0; x < 32; x++) {
			const int i = ORDER == 1 ? x % 4 : x / 8;
			const int j = ORDER == 1 ? x / 4 : ORDER == 2 && (i & 1) ? 7 - x % 8 : x % 8;
			asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 "
				     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
				     : "+r"(d[i][j][0]), "+r"(d[i][j][1]), "+r"(d[i][j][2]), "+r"(d[i][j][3])
				     : "r"(a[i][0]), "r"(a[i][1]), "r"(a[i][2]), "r"(a[i][3]), "r"(b[j][0]),
				       "r"(b[j][1]));
		}
	}
	int s = 0;
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 8; j++)
			s += d[i][j][0] + d[i][j][1] + d[i][j][2] + d[i][j][3];
	if (s == 0x7fffffff)
		out[0] = s;
}

#define CK(x)                                                                                  \
	do {                                                                                   \
		cudaError_t e_ = (x);                                                          \
		if (e_ != cudaSuccess) {                                                       \
			fprintf(stderr, "mma_peak: %s: %s\n", #x, cudaGetErrorString(e_));     \
			exit(1);                                                               \
		}                                                                              \
	} while (0)

/* TOPS of blocks x threads of kernel k, each warp issuing chains mma an
 * iteration for iters iterations */
static double tops_of(void (*k)(int *, int, int), int chains, int blocks, int threads, int iters, int *out)
{
	k<<<blocks, threads>>>(out, 1, iters);
	CK(cudaGetLastError());
	CK(cudaDeviceSynchronize());
	cudaEvent_t e0, e1;
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	float ms[9];
	for (int r = 0; r < 9; r++) {
		CK(cudaEventRecord(e0));
		k<<<blocks, threads>>>(out, r + 2, iters);
		CK(cudaEventRecord(e1));
		CK(cudaEventSynchronize(e1));
		CK(cudaEventElapsedTime(&ms[r], e0, e1));
	}
	CK(cudaEventDestroy(e0));
	CK(cudaEventDestroy(e1));
	for (int i = 1; i < 9; i++)
		for (int j = i; j > 0 && ms[j - 1] > ms[j]; j--) {
			float t = ms[j];
			ms[j] = ms[j - 1];
			ms[j - 1] = t;
		}
	const double ops = 2.0 * 16 * 8 * 32 * (double)chains * iters * (threads / 32) * (double)blocks;
	return ops / (ms[4] * 1e-3) / 1e12;
}

template <int CHAINS> static double tops(int blocks, int threads, int iters, int *out)
{
	return tops_of(mma_peak_kernel<CHAINS>, CHAINS, blocks, threads, iters, out);
}

/* resident blocks of this kernel an SM holds at threads a block */
template <int CHAINS> static int resident(int threads)
{
	int b = 0;
	CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, mma_peak_kernel<CHAINS>, threads, 0));
	return b;
}

template <int CHAINS> static void sweep(const cudaDeviceProp &p, int *out)
{
	static const int per_sm[] = {1, 2, 3, 4, 6, 8};
	printf("mma_peak: %2d chains a warp:", CHAINS);
	for (int i = 0; i < (int)(sizeof per_sm / sizeof *per_sm); i++) {
		const int b = per_sm[i];
		if (b > resident<CHAINS>(128)) {
			printf("  %2d warps/SM -", 4 * b);
			continue;
		}
		printf("  %2d warps/SM %5.0f", 4 * b, tops<CHAINS>(p.multiProcessorCount * b, 128, ITERS, out));
	}
	printf(" TOPS\n");
}

int main(void)
{
	cudaDeviceProp p;
	CK(cudaGetDeviceProperties(&p, 0));
	int *out;
	CK(cudaMalloc(&out, 4));
	printf("mma_peak: %s (sm_%d%d, %d SMs): int8 mma.sync m16n8k32 %.0f TOPS (32 warps/SM, 8 chains; median of 9)\n",
	       p.name, p.major, p.minor, p.multiProcessorCount,
	       tops<8>(p.multiProcessorCount * 2, 512, 2 * ITERS, out));
	sweep<8>(p, out);
	sweep<24>(p, out);
	sweep<32>(p, out);
	static const char *const order[] = {"m16 outer", "n8 outer", "serpentine"};
	void (*const tk[])(int *, int, int) = {mma_tile_kernel<0>, mma_tile_kernel<1>, mma_tile_kernel<2>};
	for (int o = 0; o < 3; o++)
		printf("mma_peak: a 64 x 64 warp tile's 32 mma (4 A, 8 B fragments), %s: 8 warps/SM %.0f TOPS\n",
		       order[o], tops_of(tk[o], 32, p.multiProcessorCount * 2, 128, ITERS, out));
	return 0;
}
