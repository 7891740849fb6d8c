// cuda_wna16: a CUDA weight-only kernel plug-in (include/ctq_kernel_plugin.h,
// ABI version 2), written against the public header alone: a straightforward
// dequantize-in-registers GEMM. Each thread owns one output channel n and up
// to MT tokens; for k = 0 .. K-1 in order it unpacks q from the int32 word,
// subtracts the zero point, multiplies by the group's scale (one rounding,
// __fmul_rn) and adds x * w to each token's sum (__fmul_rn then __fadd_rn:
// never a fused multiply-add), then adds the bias and rounds once to BF16.
// That is the ABI's summation order, so it declares WNA16_EXACT and ctq
// probes it bit for bit. It is a correctness plug-in, not a fast one: no
// tensor cores, and the ABI's one summation order leaves K a serial chain
// per output (the field report's question is whether a weight-only kernel
// computes the right numbers per geometry). Shared-memory tiles keep its
// weight reads coalesced (docs/probing.md has its bench gemm times).
//
// Build (make CUDA=1 builds it into build/plugins/cuda_wna16.so):
//   nvcc -O3 -std=c++17 -arch=sm_90 -Iinclude -Xcompiler -fPIC -shared
//        plugins/cuda_wna16.cu -o cuda_wna16.so -lcudart
//
// Graph capture: gemm_wna16 only enqueues one kernel on the caller's stream.
#include "ctq_kernel_plugin.h"

#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#define MT 8          // tokens per thread (register accumulators)
#define THREADS 128   // output channels per block
#define LKT 6
#define KT (1 << LKT) // k per shared-memory tile (a multiple of 8: whole int32 words)

static int cu_failed(cudaError_t e, const char *what, char *msg, size_t cap)
{
	snprintf(msg, cap, "%s: %s", what, cudaGetErrorString(e));
	return 1;
}

// Round to nearest even; NaN stays a quiet NaN.
__device__ static uint16_t f32_to_bf16(float f)
{
	uint32_t u = __float_as_uint(f);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x0040u);
	u += 0x7fffu + ((u >> 16) & 1u);
	return (uint16_t)(u >> 16);
}

__device__ static float bf16_to_f32(uint16_t h)
{
	return __uint_as_float((uint32_t)h << 16);
}

// grid (ceil(N / THREADS), ceil(M / MT)); thread: channel n, tokens m0 .. m0 + MT - 1.
// K is walked in tiles of KT: the block's THREADS rows of packed words and
// its MT tokens' activations are first copied into shared memory with
// consecutive threads on consecutive words (coalesced: a thread's own row
// is K / pf words away from its neighbour's), then each thread runs its
// tile's k in order from there.
__global__ void gemm_wna16_kernel(const uint16_t *__restrict__ x, const int32_t *__restrict__ w_packed,
				  const float *__restrict__ scale, const int32_t *__restrict__ zero_packed,
				  const float *__restrict__ bias, int64_t M, int64_t N, int64_t K,
				  int bits, int64_t G, uint16_t *__restrict__ y)
{
	__shared__ uint32_t ws[THREADS * (KT / 4 + 1)]; // (THREADS, wpt + 1): padded rows
	__shared__ float xs[MT * KT];
	const int tid = threadIdx.x;
	const int64_t n0 = (int64_t)blockIdx.x * THREADS, n = n0 + tid;
	const int64_t m0 = (int64_t)blockIdx.y * MT;
	const int pf = 32 / bits, lpf = bits == 4 ? 3 : 2; // pf = 1 << lpf
	const int wpt = KT / pf, wstride = wpt + 1;
	const uint32_t mask = (1u << bits) - 1u;
	const int off = 1 << (bits - 1);
	const int64_t n_groups = (K + G - 1) / G, words = (K + pf - 1) / pf;
	const int mt = (int)(M - m0 < MT ? M - m0 : MT);
	const int nt = (int)(N - n0 < THREADS ? N - n0 : THREADS);
	float acc[MT];
	for (int i = 0; i < MT; i++)
		acc[i] = 0.0f;
	int64_t g = -1, gend = 0; // the current group and where it ends
	float s = 0.0f;
	int z = 0;
	for (int64_t kt = 0; kt < K; kt += KT) {
		const int64_t w0 = kt / pf;
		__syncthreads(); // the previous tile is read
		for (int idx = tid; idx < THREADS * wpt; idx += THREADS) {
			const int r = idx >> (LKT - lpf), c = idx & (wpt - 1);
			ws[r * wstride + c] = r < nt && w0 + c < words ? (uint32_t)w_packed[(n0 + r) * words + w0 + c] : 0u;
		}
		for (int idx = tid; idx < MT * KT; idx += THREADS) {
			const int i = idx / KT, c = idx % KT;
			xs[idx] = i < mt && kt + c < K ? bf16_to_f32(x[(m0 + i) * K + kt + c]) : 0.0f;
		}
		__syncthreads();
		if (n >= N)
			continue;
		const int kn = (int)(K - kt < KT ? K - kt : KT);
		for (int c = 0; c < kn; c++) {
			if (kt + c == gend) { // no division on the k loop
				g++;
				gend += G;
				s = scale[n * n_groups + g];
				if (zero_packed) {
					const uint32_t zw = (uint32_t)zero_packed[(n >> lpf) * n_groups + g];
					z = (int)((zw >> ((n & (pf - 1)) * bits)) & mask) - off;
				}
			}
			const uint32_t word = ws[tid * wstride + (c >> lpf)];
			const int q = (int)((word >> ((c & (pf - 1)) * bits)) & mask) - off;
			const float w = __fmul_rn(__int2float_rn(q - z), s);
			for (int i = 0; i < MT; i++)
				if (i < mt)
					acc[i] = __fadd_rn(acc[i], __fmul_rn(xs[i * KT + c], w));
		}
	}
	if (n >= N)
		return;
	const float b = bias ? bias[n] : 0.0f;
	for (int i = 0; i < mt; i++)
		y[(m0 + i) * N + n] = f32_to_bf16(__fadd_rn(acc[i], b));
}

static int plugin_gemm_wna16(const uint16_t *x, const int32_t *w_packed, const float *scale,
			     const int32_t *zero_packed, const float *bias, int64_t M, int64_t N,
			     int64_t K, int32_t bits, int64_t group_size, uint16_t *y, void *stream,
			     char *msg, size_t cap)
{
	if (bits != 4 && bits != 8) {
		snprintf(msg, cap, "bits %d; this plug-in serves 4 and 8", (int)bits);
		return 1;
	}
	const int64_t G = group_size > 0 ? group_size : K;
	const int64_t gy = (M + MT - 1) / MT;
	if (gy > 65535) {
		snprintf(msg, cap, "M = %lld needs more than 65535 blocks of %d tokens", (long long)M, MT);
		return 1;
	}
	dim3 grid((unsigned)((N + THREADS - 1) / THREADS), (unsigned)gy);
	gemm_wna16_kernel<<<grid, THREADS, 0, (cudaStream_t)stream>>>(x, w_packed, scale, zero_packed,
								       bias, M, N, K, bits, G, y);
	cudaError_t e = cudaGetLastError();
	return e == cudaSuccess ? 0 : cu_failed(e, "gemm_wna16_kernel launch", msg, cap);
}

static const struct ctq_kernel_plugin table = {
	CTQ_KERNEL_PLUGIN_ABI_VERSION,
	(uint32_t)sizeof(struct ctq_kernel_plugin),
	"cuda_wna16",
	CTQ_KERNEL_PLUGIN_DEVICE_CUDA,
	CTQ_KERNEL_PLUGIN_WNA16_INT4 | CTQ_KERNEL_PLUGIN_WNA16_INT8 | CTQ_KERNEL_PLUGIN_WNA16_GROUPS |
		CTQ_KERNEL_PLUGIN_WNA16_ASYM | CTQ_KERNEL_PLUGIN_WNA16_EXACT,
	NULL, // init
	NULL, // fini
	NULL, // quantize: no W8A8 pair
	NULL, // gemm_workspace_bytes
	NULL, // gemm_w8a8
	NULL, // gemm_bf16
	plugin_gemm_wna16,
};

extern "C" __attribute__((visibility("default"))) const struct ctq_kernel_plugin *
ctq_kernel_plugin(uint32_t abi_version)
{
	return abi_version == CTQ_KERNEL_PLUGIN_ABI_VERSION ? &table : NULL;
}
