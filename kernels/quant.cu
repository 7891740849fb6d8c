/* ctq per-token int8 quantization on the GPU, bit-identical to
 * ctq_ref_quantize_bf16 (core/numerics.h): s = amax / 127 per row, q =
 * clamp(rint(x / s)) ties to even.
 *
 * Launch table (ctq_quantize_launch; G = K / 8 16-byte groups of a row):
 *   K % 8 == 0, x 16-byte and q 8-byte aligned (quantize_rows_kernel<C>):
 *     M <= QR_FEW_ROWS (2048), G <= 8192: one row per block of 32 * ceil(G / C / 32)
 *       threads (latency bound), C = 1, 2, 4 or 8, the fewest that keep
 *       it <= 1024 threads: K = 2560 -> 320 x 1, 4096 -> 512 x 1,
 *       9728 -> 608 x 2, 12288 -> 768 x 2.
 *     more rows, G <= 3072: w = 1, 2, 4 or 8 warps per row, the fewest with
 *       at most 12 groups per thread (C rounded up to even), blocks of up
 *       to 256 threads with up to 8 rows but at least ~264 blocks:
 *       K = 2560 -> 1 warp x 10, 4096 -> 2 x 8, 9728 -> 4 x 10,
 *       12288 -> 4 x 12, 16384 -> 8 x 8.
 *     more rows, 3072 < G <= 8192: one row per block as for few rows.
 *   otherwise (K % 8 != 0, misaligned, K > 65536): quantize_kernel, one
 *     256-thread block per row, the row read twice.
 * In quantize_rows_kernel each thread loads all its groups before using
 * any and keeps them in registers; q is stored 8 bytes at a time. Per
 * element the work is small: the absolute maximum is an integer max over
 * two bf16 at a time (amax_bits), and q comes from ctq_quantize_fast (a
 * multiply by the row's reciprocal and three additions; the exact
 * division only next to a rounding boundary). The thresholds are chosen
 * for an H200 (132 SMs) and not yet measured. */
#include "core/dtype.h"
#include "core/numerics.h"
#include "kernels/cuda_check.h"
#include "kernels/device.cuh"
#include "kernels/pdl.cuh"
#include "kernels/kernels.h"

/* Rows of K = 8 * groups, tpr threads per row (blockDim.x = tpr * rows per
 * block), each thread holding groups g = t, t + tpr, ... (C of them at
 * most: coalesced across the row's threads). The row's amax: packed max
 * per thread, a warp reduction, and with more than one warp per row the
 * warps' maxima through shared memory (one barrier; every thread of the
 * block reaches it, rows past M included). */
template <int C, int MAX_THREADS>
__global__ void __launch_bounds__(MAX_THREADS)
quantize_rows_kernel(const uint16_t *__restrict__ x, int64_t M, int groups, int tpr,
		     int8_t *__restrict__ q, float *__restrict__ s)
{
	pdl_trigger(); /* the linear after it may start (kernels/pdl.cuh) */
	pdl_wait();
	__shared__ uint32_t warp_amax[MAX_THREADS / 32];
	const int t = (int)threadIdx.x % tpr;
	const int64_t row = (int64_t)blockIdx.x * (blockDim.x / tpr) + threadIdx.x / tpr;
	const bool live = row < M;
	const uint4 *xr = (const uint4 *)x + row * groups; /* (groups) uint4 */
	uint2 *qr = (uint2 *)q + row * groups;            /* (groups) uint2 */
	uint4 v[C];
#pragma unroll
	for (int c = 0; c < C; c++)
		if (live && c * tpr + t < groups)
			v[c] = __ldg(xr + c * tpr + t);
	uint32_t a = 0;
#pragma unroll
	for (int c = 0; c < C; c++)
		if (live && c * tpr + t < groups)
			a = amax_bits(amax_bits(amax_bits(amax_bits(a, v[c].x), v[c].y), v[c].z),
				      v[c].w);
	a = __reduce_max_sync(0xffffffffu, max(a & 0xffffu, a >> 16));
	if (tpr > 32) {
		if ((threadIdx.x & 31) == 0)
			warp_amax[threadIdx.x >> 5] = a;
		__syncthreads();
		const int w0 = (int)(threadIdx.x / tpr) * (tpr >> 5);
		for (int w = 0; w < tpr >> 5; w++)
			a = max(a, warp_amax[w0 + w]);
	}
	if (!live)
		return;
	const float sc = scale_of_bits(max(a & 0xffffu, a >> 16));
	const float inv = ctq_quantize_inv(sc);
	if (t == 0)
		s[row] = sc;
#pragma unroll
	for (int c = 0; c < C; c++)
		if (c * tpr + t < groups)
			qr[c * tpr + t] = quant_group(v[c], sc, inv);
}

/* Any K and alignment: one block per row, the row read twice (the second
 * time from L1/L2). */
#define QUANT_THREADS 256

__global__ void __launch_bounds__(QUANT_THREADS)
quantize_kernel(const uint16_t *__restrict__ x, int64_t K, int8_t *__restrict__ q,
		float *__restrict__ s)
{
	pdl_trigger();
	pdl_wait();
	const int64_t row = blockIdx.x;
	const uint16_t *xr = x + row * K; /* (K) bf16 */
	int8_t *qr = q + row * K;
	__shared__ uint32_t warp_amax[QUANT_THREADS / 32];
	uint32_t a = 0;
	for (int64_t k = threadIdx.x; k < K; k += blockDim.x)
		a = max(a, (uint32_t)(xr[k] & 0x7fffu));
	a = __reduce_max_sync(0xffffffffu, a);
	if ((threadIdx.x & 31) == 0)
		warp_amax[threadIdx.x >> 5] = a;
	__syncthreads();
	for (int w = 0; w < QUANT_THREADS / 32; w++)
		a = max(a, warp_amax[w]);
	const float sc = scale_of_bits(max(a & 0xffffu, a >> 16));
	const float inv = ctq_quantize_inv(sc);
	if (threadIdx.x == 0)
		s[row] = sc;
	for (int64_t k = threadIdx.x; k < K; k += blockDim.x)
		qr[k] = ctq_quantize_fast(ctq_bf16_to_f32(xr[k]), sc, inv);
}

/* Up to this many rows one row per block; more rows share a block. On the
 * H200 (ce8345ec4c4c) the shared blocks took 13-17 us at M = 512 against
 * 3.3-3.7 us for one row per block at M = 256; with the crossover at 2048
 * (ed329c3) M = 512 takes 4.2-10.5 us and M = 2048 10.6-31.1 us (was
 * 18-38 us). */
#define QR_FEW_ROWS 2048
/* Many rows: at most this many 16-byte groups per thread (registers) and
 * 256 threads per block. */
#define QR_MAX_C 12
#define QR_GROUP_THREADS 256

#define QR_LAUNCH(n, max_threads)                                                                \
	e = CTQ_PDL_LAUNCH((quantize_rows_kernel<n, max_threads>), grid, tpr * rpb, 0, st, x, M,   \
			   (int)groups, tpr, q, s)

extern "C" enum ctq_status ctq_quantize_launch(const uint16_t *x, int64_t M, int64_t K, int8_t *q,
					       float *s, void *stream, struct ctq_error *err)
{
	if (M <= 0)
		return CTQ_OK;
	if (M > 0x7fffffffLL)
		return ctq_error_set(err, CTQ_ERR_USAGE, "M", "is %lld; at most 2^31-1 rows",
				     (long long)M);
	cudaStream_t st = (cudaStream_t)stream;
	const bool vec = K > 0 && K % 8 == 0 && (uintptr_t)x % 16 == 0 && (uintptr_t)q % 8 == 0;
	const int64_t groups = K / 8;
	cudaError_t e;
	/* many rows: w warps per row (a power of two up to 8) so that a
	 * thread holds at most QR_MAX_C groups, their count rounded up to even */
	int w = 1;
	while (w < 8 && groups > (int64_t)32 * w * QR_MAX_C)
		w *= 2;
	const bool grouped = vec && M > QR_FEW_ROWS && groups <= (int64_t)32 * w * QR_MAX_C;
	if (grouped) {
		const int tpr = 32 * w;
		int C = (int)((groups + tpr - 1) / tpr);
		C += C > 1 && C % 2;
		/* rows per block: fill the block, but keep about 264 blocks */
		int rpb = (int)(M / (2 * 132) < 8 ? M / (2 * 132) : 8);
		if (rpb > QR_GROUP_THREADS / tpr)
			rpb = QR_GROUP_THREADS / tpr;
		if (rpb < 1)
			rpb = 1;
		const unsigned grid = (unsigned)((M + rpb - 1) / rpb);
		switch (C) {
		case 1: QR_LAUNCH(1, QR_GROUP_THREADS); break;
		case 2: QR_LAUNCH(2, QR_GROUP_THREADS); break;
		case 4: QR_LAUNCH(4, QR_GROUP_THREADS); break;
		case 6: QR_LAUNCH(6, QR_GROUP_THREADS); break;
		case 8: QR_LAUNCH(8, QR_GROUP_THREADS); break;
		case 10: QR_LAUNCH(10, QR_GROUP_THREADS); break;
		default: QR_LAUNCH(12, QR_GROUP_THREADS); break;
		}
	} else if (vec && groups <= 8 * 1024) {
		/* one row per block, up to 1024 threads with 1, 2, 4 or 8
		 * groups each: the fewest groups per thread that fit */
		int C = 1;
		while (groups > (int64_t)1024 * C)
			C *= 2;
		const int tpr = (int)((groups + C - 1) / C + 31) / 32 * 32, rpb = 1;
		const unsigned grid = (unsigned)M;
		switch (C) {
		case 1: QR_LAUNCH(1, 1024); break;
		case 2: QR_LAUNCH(2, 1024); break;
		case 4: QR_LAUNCH(4, 1024); break;
		default: QR_LAUNCH(8, 1024); break;
		}
	} else {
		e = CTQ_PDL_LAUNCH(quantize_kernel, (unsigned)M, QUANT_THREADS, 0, st, x, K, q, s);
	}
	return CTQ_CUDA(e, err);
}
