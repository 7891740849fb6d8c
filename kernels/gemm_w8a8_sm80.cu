/* ctq W8A8 GEMM for compute capability 8.0 and newer (Ampere, Ada, and
 * Blackwell, where wgmma does not exist): int8 tensor cores through
 * mma.sync m16n8k32 s8·s8→s32, operands staged in shared memory by a
 * multi-stage cp.async pipeline and read into fragments with ldmatrix, and
 * the epilogue of core/numerics.h fused (per-token scale, per-channel
 * scale, bias, BF16, each step rounded separately) — or the raw int32
 * accumulators for the bit-exact checks. Integer accumulation is exact, so
 * the result is bit-identical to the reference, to the sm90 kernel and to
 * the dp4a kernel whatever the tile.
 *
 * Layout: q (M, K) and w (N, K) are both K-major (row-major), which is
 * what mma.sync's row.col form wants for A and B: no transposes. A CTA
 * computes a BM × BN output tile with warps of WM × WN each; per K step of
 * BK bytes it copies the BM × BK activation and BN × BK weight tiles into
 * one of STAGES shared-memory stages (16-byte cp.async.cg, zero-filled
 * beyond M, N and K), while the warps multiply the stage loaded
 * STAGES - 1 steps earlier. Rows of a stage are BK bytes; their 16-byte
 * chunks are XOR-swizzled so that the eight row addresses of one ldmatrix
 * phase fall in eight different 16-byte bank groups.
 *
 * Fragments (PTX ISA, mma.m16n8k32 .s8): lane l, g = l / 4, t = l % 4.
 * A (16 × 32): a0 row g, k 4t..4t+3; a1 row g+8; a2 row g, k 16+4t..; a3
 * row g+8, k 16+4t.. — one ldmatrix.x4 over the four 8 × 16-byte quadrants
 * (rows 0-7 / 8-15 × k 0-15 / 16-31). B (32 × 8, col): b0 n g, k 4t..;
 * b1 n g, k 16+4t.. — one ldmatrix.x4 covers two n8 blocks. C: c0, c1 row
 * g, n 2t, 2t+1; c2, c3 row g+8.
 *
 * Needs K % 16 == 0 and 16-byte aligned q and w (whole 16-byte copies);
 * ctq_gemm_w8a8_launch falls back to the dp4a kernel otherwise. */
#include <stdint.h>
#include <stdlib.h>

#include "backend/knobs.h"
#include "core/dtype.h"
#include "core/numerics.h"
#include "kernels/arch.h"
#include "kernels/cuda_check.h"
#include "kernels/epilogue.cuh"
#include "kernels/gemm_sm80.h"
#include "kernels/pdl.cuh"

__device__ __forceinline__ uint32_t s80_smem(const void *p)
{
	return (uint32_t)__cvta_generic_to_shared(p);
}

/* 16 bytes global -> shared, bypassing L1; src_bytes 0 writes zeros (the
 * source is then not read). */
__device__ __forceinline__ void cp_async16(void *dst, const void *src, int src_bytes)
{
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s80_smem(dst)), "l"(src),
		     "r"(src_bytes)
		     : "memory");
}

__device__ __forceinline__ void cp_async_commit(void)
{
	asm volatile("cp.async.commit_group;\n" ::: "memory");
}

template <int N> __device__ __forceinline__ void cp_async_wait(void)
{
	asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void *p)
{
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
		     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
		     : "r"(s80_smem(p)));
}

/* d (16 × 8 s32) += a (16 × 32 s8) · b (32 × 8 s8) */
__device__ __forceinline__ void mma_s8(int32_t (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
	asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 "
		     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
		     : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
		     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* Byte offset of 16-byte chunk c of row r in a stage of BK-byte rows. BK
 * 128: a row is one 128-byte line of the 32 banks, chunk c at c ^ (r % 8).
 * BK 64: two rows share a line, chunk c at c ^ ((r / 2) % 4). Either way
 * rows r0..r0+7 (r0 % 8 == 0) of one chunk land in eight distinct bank
 * groups, so an ldmatrix phase is conflict-free. */
template <int BK> __device__ __forceinline__ int swz(int r, int c)
{
	if constexpr (BK == 128)
		return r * 128 + ((c ^ (r & 7)) << 4);
	else
		return r * 64 + ((c ^ ((r >> 1) & 3)) << 4);
}

template <int BM_, int BN_, int BK_, int WM_, int WN_, int STAGES_, bool PRED_ = false> struct Sm80Config {
	static constexpr int BM = BM_, BN = BN_, BK = BK_, WM = WM_, WN = WN_, STAGES = STAGES_;
	/* the copies past K's last tile: predicated off (zero-filling a stage
	 * no step reads), which leaves the loop body one basic block the
	 * compiler interleaves with the mma, or skipped behind a branch */
	static constexpr bool PRED = PRED_;
	static constexpr int WARPS_M = BM / WM, WARPS_N = BN / WN;
	static constexpr int THREADS = 32 * WARPS_M * WARPS_N;
	static constexpr int MT = WM / 16, NT = WN / 8; /* m16 and n8 blocks per warp */
	static constexpr int CH = BK / 16;              /* 16-byte chunks per row */
	static constexpr int A_BYTES = BM * BK, B_BYTES = BN * BK;
	static constexpr int STAGE_BYTES = A_BYTES + B_BYTES;
	static constexpr int SMEM = STAGES * STAGE_BYTES;
	static_assert(BK == 64 || BK == 128, "BK: 64 or 128 bytes");
	static_assert(WM % 16 == 0 && WN % 16 == 0 && BM % WM == 0 && BN % WN == 0, "warp tiles");
	static_assert(STAGES >= 2, "a pipeline needs two stages");
	/* every architecture of the build: 8.6 / 8.9 / 12.0 allow 99 KiB per block */
	static_assert(SMEM <= 99 * 1024, "shared memory beyond what compute 8.6 allows a block");
};

/* The copies of one thread into a stage: the BM × BK activation and BN ×
 * BK weight tiles are 16-byte chunks, thread t taking chunk t % CH of rows
 * t / CH, t / CH + RS, t / CH + 2 RS... (RS = THREADS / CH rows apart, a
 * multiple of 8, so every copy of a thread has the same swizzle and its
 * shared-memory offset is the first one's plus a constant). Everything
 * that does not change along K is worked out once: the source of the first
 * copy, which copies fall inside M (N), the chunk's K offset. A copy per
 * K step is then one predicate and one address: rows beyond M or N and
 * chunks beyond K are zero-filled (the source is then the operand's base,
 * not read). */
template <class C> struct StageCopier {
	static constexpr int RS = C::THREADS / C::CH;
	static constexpr int NA = C::BM / RS, NB = C::BN / RS;
	static_assert(C::THREADS % C::CH == 0 && RS % 8 == 0, "one swizzle per thread");
	static_assert(C::BM % RS == 0 && C::BN % RS == 0, "whole copies per thread");
	static_assert(NA <= 32 && NB <= 32, "row masks");
	const int8_t *a, *b; /* the first copy's source at k = 0 */
	int64_t stride;      /* RS rows */
	uint32_t a_rows, b_rows;
	int kc, soff;

	__device__ __forceinline__ StageCopier(const int8_t *q, const int8_t *w, int M, int N, int K, int m0,
					       int n0)
	{
		const int r0 = (int)threadIdx.x / C::CH, ch = (int)threadIdx.x % C::CH;
		kc = ch * 16;
		soff = swz<C::BK>(r0, ch);
		stride = (int64_t)RS * K;
		a = q + (int64_t)(m0 + r0) * K + kc;
		b = w + (int64_t)(n0 + r0) * K + kc;
		a_rows = b_rows = 0;
#pragma unroll
		for (int i = 0; i < NA; i++)
			a_rows |= (uint32_t)(m0 + r0 + i * RS < M) << i;
#pragma unroll
		for (int i = 0; i < NB; i++)
			b_rows |= (uint32_t)(n0 + r0 + i * RS < N) << i;
	}

	/* One K tile at k0 into stage st; live false zero-fills it. */
	__device__ __forceinline__ void load(uint8_t *st, const int8_t *q, const int8_t *w, int K, int k0,
					     bool live = true) const
	{
		const bool kin = live && k0 + kc < K;
		uint8_t *sa = st + soff, *sb = st + C::A_BYTES + soff;
#pragma unroll
		for (int i = 0; i < NA; i++) {
			const bool in = kin && ((a_rows >> i) & 1u);
			cp_async16(sa + i * RS * C::BK, in ? a + k0 + i * stride : q, in ? 16 : 0);
		}
#pragma unroll
		for (int i = 0; i < NB; i++) {
			const bool in = kin && ((b_rows >> i) & 1u);
			cp_async16(sb + i * RS * C::BK, in ? b + k0 + i * stride : w, in ? 16 : 0);
		}
	}
};

/* The fragments of k32 step kk of a stage for this warp: MT m16 blocks of
 * activations at rows wm0.., NT n8 blocks of weights at rows wn0.. (one
 * ldmatrix.x4 each for an m16 block and for a pair of n8 blocks). Lane l
 * addresses row l % 16, chunk l / 16 of an m16 block (the four 8 × 16-byte
 * quadrants in a0..a3 order), and row l % 8 + 8 (l / 16), chunk (l / 8) % 2
 * of an n16 block (b0, b1 of the first n8, then of the second). */
template <class C>
__device__ __forceinline__ void load_frags(uint32_t (&a)[C::MT][4], uint32_t (&b)[C::NT][2],
					   const uint8_t *st, int kk, int wm0, int wn0, int lane)
{
	const uint8_t *sa = st, *sb = st + C::A_BYTES;
#pragma unroll
	for (int i = 0; i < C::MT; i++)
		ldmatrix_x4(a[i], sa + swz<C::BK>(wm0 + i * 16 + (lane & 15), kk * 2 + (lane >> 4)));
#pragma unroll
	for (int j = 0; j < C::NT; j += 2) {
		uint32_t r[4];
		ldmatrix_x4(r, sb + swz<C::BK>(wn0 + j * 8 + (lane & 7) + ((lane >> 4) << 3),
					       kk * 2 + ((lane >> 3) & 1)));
		b[j][0] = r[0];
		b[j][1] = r[1];
		b[j + 1][0] = r[2];
		b[j + 1][1] = r[3];
	}
}

template <int BM, int BN, int BK, int WM, int WN, int STAGES, bool PRED>
__global__ void __launch_bounds__(32 * (BM / WM) * (BN / WN))
gemm_w8a8_sm80_kernel(const int8_t *__restrict__ q, const int8_t *__restrict__ w,
		      const float *__restrict__ s_a, const float *__restrict__ s_w,
		      const float *__restrict__ bias, int M, int N, int K,
		      int32_t *__restrict__ acc_out, uint16_t *__restrict__ y, bool pair_stores)
{
	using C = Sm80Config<BM, BN, BK, WM, WN, STAGES, PRED>;
	extern __shared__ __align__(128) uint8_t smem80[];
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const int wm0 = (warp / C::WARPS_N) * WM, wn0 = (warp % C::WARPS_N) * WN;
	/* M fastest across the grid: CTAs that run together share weight tiles in L2 */
	const int m0 = (int)blockIdx.x * BM, n0 = (int)blockIdx.y * BN;
	const int k_tiles = (K + BK - 1) / BK;

	/* launched with PDL (kernels/pdl.cuh) only where the GPU has it: q,
	 * s_a and y belong to the kernels around this one */
	pdl_wait();

	const StageCopier<C> copier(q, w, M, N, K, m0, n0);
	int32_t acc[C::MT][C::NT][4];
#pragma unroll
	for (int i = 0; i < C::MT; i++)
#pragma unroll
		for (int j = 0; j < C::NT; j++)
#pragma unroll
			for (int e = 0; e < 4; e++)
				acc[i][j][e] = 0;

#pragma unroll
	for (int s = 0; s < STAGES - 1; s++) {
		if (s < k_tiles)
			copier.load(smem80 + s * C::STAGE_BYTES, q, w, K, s * BK);
		cp_async_commit(); /* empty groups too: the wait below counts groups */
	}

	/* Fragments are double-buffered: those of step kk + 1 are loaded
	 * before the mma of step kk is issued (both asm volatile: they stay in
	 * this order), so ldmatrix latency hides under the tensor cores. The
	 * wait for the next stage and the barrier come before the last step of
	 * a tile, whose fragments are already in registers: after that barrier
	 * no warp reads the stage read before, which the next copy (issued at
	 * step 0) overwrites. */
	constexpr int KK = BK / 32;
	uint32_t a[2][C::MT][4], b[2][C::NT][2];
	cp_async_wait<STAGES - 2>();
	__syncthreads();
	int rs = 0; /* the stage being read */
	load_frags<C>(a[0], b[0], smem80, 0, wm0, wn0, lane);
	for (int kt = 0; kt < k_tiles; kt++) {
#pragma unroll
		for (int kk = 0; kk < KK; kk++) {
			if (kk == KK - 1) {
				cp_async_wait<STAGES - 2>();
				__syncthreads();
				rs = rs + 1 == STAGES ? 0 : rs + 1;
			}
			if (kk < KK - 1 || kt + 1 < k_tiles)
				load_frags<C>(a[(kk + 1) & 1], b[(kk + 1) & 1], smem80 + rs * C::STAGE_BYTES,
					      (kk + 1) % KK, wm0, wn0, lane);
			if (kk == 0) {
				const int nk = kt + STAGES - 1;
				if (C::PRED)
					copier.load(smem80 + (nk % STAGES) * C::STAGE_BYTES, q, w, K, nk * BK,
						    nk < k_tiles);
				else if (nk < k_tiles)
					copier.load(smem80 + (nk % STAGES) * C::STAGE_BYTES, q, w, K, nk * BK);
				cp_async_commit();
			}
#pragma unroll
			for (int i = 0; i < C::MT; i++)
#pragma unroll
				for (int j = 0; j < C::NT; j++)
					mma_s8(acc[i][j], a[kk & 1][i], b[kk & 1][j][0], b[kk & 1][j][1]);
		}
	}
	cp_async_wait<0>(); /* nothing may be in flight into shared memory at exit */

	/* the epilogue from registers: row g (and g + 8) of each m16 block,
	 * columns 2t, 2t + 1 of each n8 block as one 32-bit BF16 pair */
	const int g = lane >> 2, t = lane & 3;
	if (pair_stores && !acc_out && m0 + wm0 + WM <= M && n0 + wn0 + WN <= N) {
		/* the warp's tile lies inside the output: no bounds, the scales
		 * and biases of its columns loaded once, one row address per
		 * row and the n8 blocks at constant offsets from it */
		float sw[C::NT][2], bb[C::NT][2];
#pragma unroll
		for (int j = 0; j < C::NT; j++) {
			const int n = n0 + wn0 + j * 8 + 2 * t;
			sw[j][0] = s_w ? s_w[n] : 0.0f;
			sw[j][1] = s_w ? s_w[n + 1] : 0.0f;
			bb[j][0] = bias ? bias[n] : 0.0f;
			bb[j][1] = bias ? bias[n + 1] : 0.0f;
		}
#pragma unroll
		for (int i = 0; i < C::MT; i++)
#pragma unroll
			for (int h = 0; h < 2; h++) {
				const int m = m0 + wm0 + i * 16 + g + 8 * h;
				const float sa = s_a[m];
				uint16_t *row = y + (size_t)m * (size_t)N + (size_t)(n0 + wn0 + 2 * t);
#pragma unroll
				for (int j = 0; j < C::NT; j++)
					*(uint32_t *)(row + j * 8) =
						epilogue_pair(acc[i][j][2 * h], acc[i][j][2 * h + 1], sa, sw[j][0],
							      sw[j][1], bb[j][0], bb[j][1]);
			}
		return;
	}
#pragma unroll
	for (int j = 0; j < C::NT; j++) {
		const int n = n0 + wn0 + j * 8 + 2 * t;
		if (n >= N)
			continue;
		const bool two = n + 1 < N;
		const float sw0 = s_w ? s_w[n] : 0.0f, sw1 = s_w && two ? s_w[n + 1] : 0.0f;
		const float b0 = bias ? bias[n] : 0.0f, b1 = bias && two ? bias[n + 1] : 0.0f;
#pragma unroll
		for (int i = 0; i < C::MT; i++)
#pragma unroll
			for (int h = 0; h < 2; h++) {
				const int m = m0 + wm0 + i * 16 + g + 8 * h;
				if (m >= M)
					continue;
				const size_t o = (size_t)m * (size_t)N + (size_t)n;
				const int32_t c0 = acc[i][j][2 * h], c1 = acc[i][j][2 * h + 1];
				if (acc_out) {
					acc_out[o] = c0;
					if (two)
						acc_out[o + 1] = c1;
					continue;
				}
				const float sa = s_a[m];
				if (two && pair_stores) {
					*(uint32_t *)(y + o) = epilogue_pair(c0, c1, sa, sw0, sw1, b0, b1);
				} else {
					y[o] = ctq_w8a8_epilogue(c0, sa, sw0, b0);
					if (two)
						y[o + 1] = ctq_w8a8_epilogue(c1, sa, sw1, b1);
				}
			}
	}
}

/* ---- host side ---- */

struct sm80_tile {
	const char *name;
	int bm, bn;
	double cost; /* per output element on a full GPU, relative to 128 x 128 */
	enum ctq_status (*launch)(const int8_t *, const int8_t *, const float *, const float *,
				  const float *, int64_t, int64_t, int64_t, int32_t *, uint16_t *,
				  void *, struct ctq_error *);
	int (*blocks_per_sm)(void); /* resident CTAs per SM on the current device */
};

static int sm80_sm_count(void)
{
	static int n[64];
	int dev = 0;
	if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64)
		return 1;
	if (!n[dev] && (cudaDeviceGetAttribute(&n[dev], cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
			n[dev] <= 0))
		n[dev] = 1;
	return n[dev];
}

template <class C> static auto kernel_of(void)
{
	return gemm_w8a8_sm80_kernel<C::BM, C::BN, C::BK, C::WM, C::WN, C::STAGES, C::PRED>;
}

/* The dynamic shared-memory opt-in, once per device (tensor-parallel ranks
 * run one GPU per thread in one process). */
template <class C> static enum ctq_status set_smem(struct ctq_error *err)
{
	static unsigned long long done;
	int dev = 0;
	enum ctq_status st = CTQ_CUDA(cudaGetDevice(&dev), err);
	if (st)
		return st;
	const unsigned long long bit = 1ull << (dev & 63);
	if (__atomic_load_n(&done, __ATOMIC_ACQUIRE) & bit)
		return CTQ_OK;
	st = CTQ_CUDA(cudaFuncSetAttribute(kernel_of<C>(), cudaFuncAttributeMaxDynamicSharedMemorySize,
					   C::SMEM),
		      err);
	if (!st)
		__atomic_fetch_or(&done, bit, __ATOMIC_RELEASE);
	return st;
}

template <class C> static int blocks_per_sm(void)
{
	static int n[64];
	int dev = 0;
	if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64)
		return 1;
	if (!n[dev]) {
		int b = 0;
		struct ctq_error e = {};
		if (set_smem<C>(&e) != CTQ_OK ||
		    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, kernel_of<C>(), C::THREADS, C::SMEM) !=
			    cudaSuccess ||
		    b <= 0) {
			(void)cudaGetLastError();
			b = 1;
		}
		n[dev] = b;
	}
	return n[dev];
}

template <class C>
static enum ctq_status launch(const int8_t *q, const int8_t *w, const float *s_a, const float *s_w,
			      const float *bias, int64_t M, int64_t N, int64_t K, int32_t *acc,
			      uint16_t *y, void *stream, struct ctq_error *err)
{
	enum ctq_status st = set_smem<C>(err);
	if (st)
		return st;
	const int64_t gm = (M + C::BM - 1) / C::BM, gn = (N + C::BN - 1) / C::BN;
	if (gm > 0x7fffffff || gn > 65535)
		return ctq_error_set(err, CTQ_ERR_USAGE, "N", "is %lld; at most %d columns for this tile",
				     (long long)N, 65535 * C::BN);
	const bool pair = y && (N % 2) == 0 && ((uintptr_t)y % 4) == 0;
	return CTQ_CUDA(ctq_launch_pdl(kernel_of<C>(), dim3((unsigned)gm, (unsigned)gn), dim3(C::THREADS),
				       (size_t)C::SMEM, (cudaStream_t)stream, q, w, s_a, s_w, bias, (int)M,
				       (int)N, (int)K, acc, y, pair),
			err);
}

/* The configurations, largest first. 64 × 64 warp tiles where the CTA
 * tile allows (32 mma per 8 ldmatrix.x4 per k32 step: the shared-memory
 * bandwidth a warp needs stays below what an SM gives). Every stage count
 * keeps a CTA within the 99 KiB compute 8.6 allows. */
using T0 = Sm80Config<128, 256, 64, 64, 64, 4>;        /* 8 warps, 96 KiB */
using T1 = Sm80Config<128, 128, 128, 64, 64, 3, true>; /* 4 warps, 96 KiB */
using T2 = Sm80Config<64, 128, 64, 32, 64, 4>;         /* 4 warps, 48 KiB */
using T3 = Sm80Config<64, 64, 64, 32, 32, 4>;          /* 4 warps, 32 KiB */
using T4 = Sm80Config<32, 64, 64, 16, 32, 6>;          /* 4 warps, 36 KiB: M <= 32 */
using T5 = Sm80Config<16, 64, 128, 16, 16, 6>;         /* 4 warps, 60 KiB: M <= 16 */

/* cost: time per output element on a full GPU relative to 128 x 128 x 128
 * (the fastest per element), the geometric mean over the Qwen3-4B linear
 * shapes at M = 1024, 2048, 4096, 8192 on the H200 through
 * build/tools/bench_tiles (reports/baselines/h200/2026-12-03-sm80-tiles/
 * tiles-call4.txt, the U columns for the predicated copies). Measured there
 * and dropped (docs/kernels.md, "Tuning the compute 8.x GEMM"): 256 x 128
 * (the 128 x 256 tile's time within 1%), three stages at 128 x 256 (3%
 * slower), 128 x 128 x 64/4 (3% slower than BK 128, never picked), eight
 * 32 x 64 warps under 128 registers (spills: 1.5x slower), copies spread
 * over the k32 steps (2-15% slower), predicated copies in the 128 x 256 and
 * 64 x 128 tiles (up to 24% slower there; 4-7% faster at 128 x 128 on 11
 * of 16 points). */
static const struct sm80_tile tiles[] = {
	{"128x256x64/4", 128, 256, 1.102, launch<T0>, blocks_per_sm<T0>},
	{"128x128x128/3", 128, 128, 1.000, launch<T1>, blocks_per_sm<T1>},
	{"64x128x64/4", 64, 128, 1.150, launch<T2>, blocks_per_sm<T2>},
	{"64x64x64/4", 64, 64, 1.449, launch<T3>, blocks_per_sm<T3>},
	{"32x64x64/6", 32, 64, 2.087, launch<T4>, blocks_per_sm<T4>},
	{"16x64x128/6", 16, 64, 2.573, launch<T5>, blocks_per_sm<T5>},
};
#define N_SM80_TILES ((int)(sizeof tiles / sizeof *tiles))

extern "C" int ctq_gemm_sm80_tiles(void)
{
	return N_SM80_TILES;
}

extern "C" const char *ctq_gemm_sm80_tile_name(int tile)
{
	return tile >= 0 && tile < N_SM80_TILES ? tiles[tile].name : "?";
}

/* The cheapest waves: a wave is as many CTAs as fit on every SM at once
 * (occ, the occupancy the device reports for the tile) and lasts as long
 * as one SM takes for its occ tiles, occ x BM x BN x cost; a tile taller
 * than M pays for its empty rows. On the H200 this picks the fastest tile
 * at 11 of the 16 Qwen3-4B points measured (M = 1024 to 8192; the same
 * file), one within 2% at two more, and loses 13.7% at qkv M = 1024,
 * 5.1% at down M = 2048 and 12.8% at down M = 8192. */
extern "C" int ctq_gemm_sm80_pick(int64_t M, int64_t N, int64_t K)
{
	(void)K;
	const int64_t sms = sm80_sm_count();
	int best = 0;
	double best_cost = -1;
	for (int i = 0; i < N_SM80_TILES; i++) {
		const int64_t n_tiles = ((M + tiles[i].bm - 1) / tiles[i].bm) * ((N + tiles[i].bn - 1) / tiles[i].bn);
		const int64_t wave = sms * tiles[i].blocks_per_sm();
		const double cost = (double)((n_tiles + wave - 1) / wave) * (double)tiles[i].blocks_per_sm() *
				    tiles[i].bm * tiles[i].bn * tiles[i].cost;
		if (best_cost < 0 || cost < best_cost) {
			best = i;
			best_cost = cost;
		}
	}
	return best;
}

static bool device_has_mma(void)
{
	/* the real capability, not the dispatch one: CTQ_ARCH=sm_86 on a 9.0
	 * GPU runs this kernel, and any 8.0+ GPU can */
	static int cache[64]; /* 0 unknown, 1 yes, 2 no */
	int dev = 0;
	if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64)
		return false;
	if (!cache[dev]) {
		int major = 0;
		cache[dev] = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
					     major >= 8
				     ? 1
				     : 2;
	}
	return cache[dev] == 1;
}

extern "C" bool ctq_gemm_sm80_available(void)
{
	const int cc = ctq_cuda_dispatch_cc();
	return cc >= 80 && cc != 90;
}

extern "C" bool ctq_gemm_sm80_fits(const int8_t *q, const int8_t *w, int64_t M, int64_t N, int64_t K,
				   unsigned defects)
{
	return defects == 0 && device_has_mma() && K % 16 == 0 && K > 0 && K <= CTQ_K_MAX &&
	       ((uintptr_t)q % 16) == 0 && ((uintptr_t)w % 16) == 0 && M <= 0x7fffffff &&
	       N <= 0x7fffffff;
}

extern "C" enum ctq_status ctq_gemm_sm80_launch(const int8_t *q, const int8_t *w, const float *s_a,
						const float *s_w, const float *bias, int64_t M,
						int64_t N, int64_t K, int32_t *acc, uint16_t *y,
						int tile, void *stream, struct ctq_error *err)
{
	if (!ctq_gemm_sm80_fits(q, w, M, N, K, 0))
		return ctq_error_set(err, CTQ_ERR_USAGE, "sm80-mma",
				     "does not take M=%lld N=%lld K=%lld here (needs a compute 8.0+ GPU, "
				     "K a multiple of 16, 16-byte aligned operands)",
				     (long long)M, (long long)N, (long long)K);
	if (M <= 0 || N <= 0)
		return CTQ_OK;
	if (tile < 0)
		tile = ctq_gemm_sm80_pick(M, N, K);
	if (tile >= N_SM80_TILES)
		return ctq_error_set(err, CTQ_ERR_USAGE, "tile", "is %d; the sm80 tiles are 0..%d", tile,
				     N_SM80_TILES - 1);
	return tiles[tile].launch(q, w, s_a, s_w, bias, M, N, K, acc, y, stream, err);
}
