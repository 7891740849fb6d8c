/* ctq attention on the GPU over a paged-by-slot KV cache: the K and V rows
 * of the new tokens are stored at (slot, position), then every token t
 * attends causally to positions 0..pos[t] of its slot.
 *   - attention_mma_kernel: prefill (many tokens). Flash-attention with BF16
 *     tensor cores (mma.sync m16n8k16, f32 accumulators, online softmax in
 *     f32, P rounded to BF16 for P·V), grouped-query: a block takes one KV
 *     head and 64 query rows (64 / G tokens x the G heads of the group), so
 *     each K and V tile feeds every head of the group. Tiles of a block
 *     whose tokens are not one run of positions of one slot (the seams of a
 *     continuous-batching step) take the scalar path per token.
 *   - attention_gqa_kernel: decode (few tokens). Flash-decoding: one block
 *     per (token, KV head, chunk of keys), partials merged by
 *     attention_combine_kernel.
 *   - attention_kernel: any other head shape (one block per token and head).
 * Shapes as in backend/backend.h. */
#include "core/dtype.h"
#include "core/numerics.h"
#include "kernels/device.cuh"
#include "kernels/cuda_check.h"
#include "backend/knobs.h"
#include "backend/paths.h"
#include "kernels/kernels.h"
#include "kernels/pdl.cuh"

#include <math.h>
#include <stdlib.h>

__global__ void kv_store_kernel(const uint16_t *k, const uint16_t *v, int64_t ld, uint16_t *kc,
				uint16_t *vc, const int32_t *slot, const int32_t *pos, int64_t row,
				int64_t max_len)
{
	pdl_trigger();
	pdl_wait();
	const int64_t t = blockIdx.x;
	const int64_t dst = ((int64_t)slot[t] * max_len + pos[t]) * row;
	for (int64_t i = threadIdx.x; i < row; i += blockDim.x) {
		kc[dst + i] = k[t * ld + i];
		vc[dst + i] = v[t * ld + i];
	}
}

/* The keys and values of tokens 0..T-1 (rows of `row` BF16 at stride ld)
 * into the caches at (slot, pos). */
static enum ctq_status kv_store(const uint16_t *k, const uint16_t *v, int64_t ld, uint16_t *kc,
				uint16_t *vc, const int32_t *slot, const int32_t *pos, int64_t T,
				int64_t row, int64_t max_len, void *stream, struct ctq_error *err)
{
	if (T <= 0)
		return CTQ_OK;
	return CTQ_CUDA(CTQ_PDL_LAUNCH(kv_store_kernel, (unsigned)T, 128, 0, stream, k, v, ld, kc, vc,
				      slot, pos, row, max_len),
			err);
}

#define ATT_THREADS 128
#define ATT_MAX_D 256

/* One block per (token, head); keys in chunks of ATT_THREADS, one key per
 * thread for the scores, one output dimension (two for d > 128) per thread
 * for the weighted sum; an online softmax carries max and sum across
 * chunks. */
__global__ void __launch_bounds__(ATT_THREADS)
attention_kernel(const uint16_t *q, int64_t ld, const uint16_t *kc, const uint16_t *vc,
		 const int32_t *slot, const int32_t *pos, int64_t heads, int64_t kv_heads, int64_t d,
		 int64_t max_len, float scale, uint16_t *out)
{
	__shared__ float qs[ATT_MAX_D];
	__shared__ float p[ATT_THREADS];
	__shared__ float red[32];
	const int64_t t = blockIdx.x, h = blockIdx.y;
	const int64_t kh = h / (heads / kv_heads), row = kv_heads * d;
	const int64_t n = (int64_t)pos[t] + 1;
	const uint16_t *kb = kc + (int64_t)slot[t] * max_len * row + kh * d;
	const uint16_t *vb = vc + (int64_t)slot[t] * max_len * row + kh * d;
	for (int64_t i = threadIdx.x; i < d; i += ATT_THREADS)
		qs[i] = ld_bf16(q + t * ld + h * d + i) * scale;
	__syncthreads();
	float m = -INFINITY, l = 0.0f, acc0 = 0.0f, acc1 = 0.0f;
	const int d0 = threadIdx.x, d1 = threadIdx.x + ATT_THREADS;
	const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
	for (int64_t j0 = 0; j0 < n; j0 += ATT_THREADS) {
		/* Scores: each warp takes 32 keys, its lanes spanning the head
		 * dimension, so every key row is read coalesced. */
		for (int i = 0; i < 32; i++) {
			const int64_t jj = j0 + warp * 32 + i;
			float part = 0.0f;
			if (jj < n) {
				const uint16_t *kr = kb + jj * row;
				for (int64_t e = lane; e < d; e += 32)
					part += qs[e] * ld_bf16(kr + e);
			}
			for (int o = 16; o > 0; o >>= 1)
				part += __shfl_xor_sync(0xffffffffu, part, o);
			if (lane == 0)
				p[warp * 32 + i] = jj < n ? part : -INFINITY;
		}
		__syncthreads();
		const int64_t j = j0 + threadIdx.x;
		const float sc = p[threadIdx.x];
		const float cm = block_max(sc, red);
		const float nm = fmaxf(m, cm);
		const float e = j < n ? __expf(sc - nm) : 0.0f;
		__syncthreads();
		p[threadIdx.x] = e;
		const float cs = block_sum(e, red);
		const float alpha = __expf(m - nm);
		l = l * alpha + cs;
		acc0 *= alpha;
		acc1 *= alpha;
		const int64_t cnt = n - j0 < ATT_THREADS ? n - j0 : ATT_THREADS;
		for (int64_t jj = 0; jj < cnt; jj++) {
			const uint16_t *vr = vb + (j0 + jj) * row;
			const float pj = p[jj];
			if (d0 < d)
				acc0 += pj * ld_bf16(vr + d0);
			if (d1 < d)
				acc1 += pj * ld_bf16(vr + d1);
		}
		m = nm;
		__syncthreads();
	}
	uint16_t *o = out + (t * heads + h) * d;
	if (d0 < d)
		o[d0] = ctq_f32_to_bf16(acc0 / l);
	if (d1 < d)
		o[d1] = ctq_f32_to_bf16(acc1 / l);
}

/* Grouped-query attention, split over the key range (flash-decoding). One
 * block per (token, KV head, chunk of keys) serves all heads / kv_heads
 * query heads of the group, so each K and V row is read once for the
 * group; keys go in sub-chunks of ATT_SC with an online softmax. With one
 * chunk the block writes the output; with several it writes unnormalised
 * partials (acc, running max m, sum l) that attention_combine_kernel
 * merges. Decode (few tokens) gets enough chunks to cover the SMs.
 * Needs d even, d / 2 dividing 128 (d = 64, 128, 256) and a group of at
 * most ATT_GMAX heads; other shapes keep attention_kernel. */
#define ATT_SC 64
#define ATT_GMAX 8

/* The block (128 threads) for token t, KV head kh, chunk c of chunks; also
 * the per-token path of attention_mma_kernel (c = 0, chunks = 1). */
__device__ void gqa_block(const uint16_t *q, int64_t ld, const uint16_t *kc, const uint16_t *vc,
			  const int32_t *slot, const int32_t *pos, int heads, int kv_heads, int d,
			  int64_t max_len, float scale, int chunks, uint16_t *out, float *part_acc,
			  float *part_ml, int t, int kh, int c)
{
	__shared__ float qs[ATT_GMAX * ATT_MAX_D];
	__shared__ float p[ATT_GMAX][ATT_SC];
	__shared__ float alpha_s[ATT_GMAX], m_s[ATT_GMAX], sum_s[ATT_GMAX];
	const int G = heads / kv_heads, row = kv_heads * d;
	const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
	const int64_t n = (int64_t)pos[t] + 1;
	const int64_t per = (n + chunks - 1) / chunks;
	const int64_t j_begin = (int64_t)c * per;
	const int64_t j_end = j_begin + per < n ? j_begin + per : n;
	const uint16_t *kb = kc + (int64_t)slot[t] * max_len * row + (int64_t)kh * d;
	const uint16_t *vb = vc + (int64_t)slot[t] * max_len * row + (int64_t)kh * d;
	for (int i = tid; i < G * d; i += 128)
		qs[i] = ld_bf16(q + (int64_t)t * ld + (int64_t)(kh * G) * d + i) * scale;
	/* V: thread owns the dimension pair `pair` for the heads g = grp,
	 * grp + groups, ... */
	const int pairs = d / 2, groups = 128 / pairs;
	const int pair = tid % pairs, grp = tid / pairs;
	float acc[ATT_GMAX][2];
	float m[ATT_GMAX], l[ATT_GMAX];
#pragma unroll
	for (int g = 0; g < ATT_GMAX; g++) {
		acc[g][0] = acc[g][1] = 0.0f;
		m[g] = -INFINITY;
		l[g] = 0.0f;
	}
	__syncthreads();
	for (int64_t j0 = j_begin; j0 < j_end; j0 += ATT_SC) {
		/* scores: a warp per key (16 keys per warp), lanes across d */
		for (int kk = warp; kk < ATT_SC; kk += 4) {
			const int64_t j = j0 + kk;
			float part[ATT_GMAX];
#pragma unroll
			for (int g = 0; g < ATT_GMAX; g++)
				part[g] = 0.0f;
			if (j < j_end) {
				const uint16_t *kr = kb + j * row;
				for (int e = lane; e < d; e += 32) {
					const float kv = ld_bf16(kr + e);
#pragma unroll
					for (int g = 0; g < ATT_GMAX; g++)
						if (g < G)
							part[g] += qs[g * d + e] * kv;
				}
			}
#pragma unroll
			for (int g = 0; g < ATT_GMAX; g++) {
				if (g >= G)
					break;
				float v = part[g];
				for (int o = 16; o > 0; o >>= 1)
					v += __shfl_xor_sync(0xffffffffu, v, o);
				if (lane == 0)
					p[g][kk] = j < j_end ? v : -INFINITY;
			}
		}
		__syncthreads();
		/* softmax bookkeeping: warp w takes heads w, w + 4 */
		for (int g = warp; g < G; g += 4) {
			const float a = p[g][lane], b = p[g][lane + 32];
			float mx = fmaxf(a, b);
			for (int o = 16; o > 0; o >>= 1)
				mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
			const float mo = m[g];
			const float mn = fmaxf(mo, mx);
			const float ea = a == -INFINITY ? 0.0f : __expf(a - mn);
			const float eb = b == -INFINITY ? 0.0f : __expf(b - mn);
			p[g][lane] = ea;
			p[g][lane + 32] = eb;
			float sm = ea + eb;
			for (int o = 16; o > 0; o >>= 1)
				sm += __shfl_xor_sync(0xffffffffu, sm, o);
			if (lane == 0) {
				alpha_s[g] = mo == -INFINITY ? 0.0f : __expf(mo - mn);
				m_s[g] = mn;
				sum_s[g] = sm;
			}
		}
		__syncthreads();
#pragma unroll
		for (int g = 0; g < ATT_GMAX; g++) {
			if (g >= G)
				break;
			const float al = alpha_s[g];
			l[g] = l[g] * al + sum_s[g];
			m[g] = m_s[g];
			acc[g][0] *= al;
			acc[g][1] *= al;
		}
		const int cnt = (int)(j_end - j0 < ATT_SC ? j_end - j0 : ATT_SC);
		for (int kk = 0; kk < cnt; kk++) {
			const uint32_t v2 = *(const uint32_t *)(vb + (j0 + kk) * row + 2 * pair);
			const float v0 = ctq_bf16_to_f32((uint16_t)(v2 & 0xffff));
			const float v1 = ctq_bf16_to_f32((uint16_t)(v2 >> 16));
#pragma unroll
			for (int g = 0; g < ATT_GMAX; g++) {
				if (g < G && g % groups == grp) {
					const float pj = p[g][kk];
					acc[g][0] += pj * v0;
					acc[g][1] += pj * v1;
				}
			}
		}
		__syncthreads();
	}
#pragma unroll
	for (int g = 0; g < ATT_GMAX; g++) {
		if (g >= G || g % groups != grp)
			continue;
		const int64_t h = (int64_t)kh * G + g;
		if (chunks == 1) {
			uint16_t *o = out + ((int64_t)t * heads + h) * d + 2 * pair;
			o[0] = ctq_f32_to_bf16(acc[g][0] / l[g]);
			o[1] = ctq_f32_to_bf16(acc[g][1] / l[g]);
		} else {
			const int64_t e = ((int64_t)t * heads + h) * chunks + c;
			part_acc[e * d + 2 * pair] = acc[g][0];
			part_acc[e * d + 2 * pair + 1] = acc[g][1];
			if (pair == 0) {
				part_ml[2 * e] = m[g];
				part_ml[2 * e + 1] = l[g];
			}
		}
	}
}

__global__ void __launch_bounds__(128)
attention_gqa_kernel(const uint16_t *q, int64_t ld, const uint16_t *kc, const uint16_t *vc,
		     const int32_t *slot, const int32_t *pos, int heads, int kv_heads, int d,
		     int64_t max_len, float scale, int chunks, uint16_t *out, float *part_acc,
		     float *part_ml)
{
	gqa_block(q, ld, kc, vc, slot, pos, heads, kv_heads, d, max_len, scale, chunks, out, part_acc,
		  part_ml, blockIdx.x, blockIdx.y, blockIdx.z);
}

/* Qwen3's q/k norm and RoPE in one pass: block (token, head) of a qkv view;
 * the head's RMSNorm exactly as rmsnorm_kernel computes it for rows of d
 * (same block size, same sum of squares, BF16 rounding twice), the BF16
 * result kept in shared memory, then rope_kernel's rotation of it. With kc
 * set, the token's keys and values also go into the caches at (slot, pos)
 * as kv_store_kernel stores them: each k head's block writes its rotated
 * head to kc beside x, and nk more blocks (heads nq + nk ..) copy the v
 * heads to vc, so the attention that follows needs no store of its own. */
__global__ void qk_norm_rope_kernel(uint16_t *x, int64_t ld, int nq, int nk, int d, const float *wq,
				    const float *wk, float eps, const int32_t *pos,
				    const float *inv_freq, uint16_t *kc, uint16_t *vc,
				    const int32_t *slot, int64_t max_len)
{
	pdl_trigger(); /* the attention may start (kernels/pdl.cuh) */
	pdl_wait();
	__shared__ float red[32];
	__shared__ uint16_t yb[ATT_MAX_D];
	const int64_t t = blockIdx.x;
	const int h = blockIdx.y;
	uint16_t *v = x + t * ld + (int64_t)h * d;
	/* the cache row of this token: (kv heads, d) */
	const int64_t dst = kc ? ((int64_t)slot[t] * max_len + pos[t]) * nk * d : 0;
	if (h >= nq + nk) {
		/* a v head (the whole block takes this branch: no barrier is split) */
		uint16_t *o = vc + dst + (int64_t)(h - nq - nk) * d;
		for (int k = threadIdx.x; k < d; k += blockDim.x)
			o[k] = v[k];
		return;
	}
	const float *w = h < nq ? wq : wk;
	uint16_t *kd = kc && h >= nq ? kc + dst + (int64_t)(h - nq) * d : NULL;
	float ss = 0.0f;
	for (int k = threadIdx.x; k < d; k += blockDim.x) {
		const float a = ld_bf16(v + k);
		ss += a * a;
	}
	ss = block_sum(ss, red);
	const float inv = rsqrtf(ss / (float)d + eps);
	for (int k = threadIdx.x; k < d; k += blockDim.x) {
		const float n = ctq_bf16_to_f32(ctq_f32_to_bf16(ld_bf16(v + k) * inv));
		yb[k] = ctq_f32_to_bf16(n * w[k]);
	}
	__syncthreads();
	const int half = d / 2;
	for (int i = threadIdx.x; i < half; i += blockDim.x) {
		float s, c;
		sincosf((float)pos[t] * inv_freq[i], &s, &c);
		c = ctq_bf16_to_f32(ctq_f32_to_bf16(c));
		s = ctq_bf16_to_f32(ctq_f32_to_bf16(s));
		const float x1 = ctq_bf16_to_f32(yb[i]), x2 = ctq_bf16_to_f32(yb[i + half]);
		const uint16_t r1 = ctq_f32_to_bf16(x1 * c - x2 * s), r2 = ctq_f32_to_bf16(x2 * c + x1 * s);
		v[i] = r1;
		v[i + half] = r2;
		if (kd) {
			kd[i] = r1;
			kd[i + half] = r2;
		}
	}
}

static enum ctq_status qk_norm_rope(uint16_t *x, int64_t ld, int64_t T, int64_t nq, int64_t nk,
				    int64_t d, const float *wq, const float *wk, float eps,
				    const int32_t *pos, const float *inv_freq, uint16_t *kc,
				    uint16_t *vc, const int32_t *slot, int64_t max_len, void *stream,
				    struct ctq_error *err)
{
	if (T <= 0)
		return CTQ_OK;
	if (d > ATT_MAX_D || d % 2)
		return ctq_error_set(err, CTQ_ERR_USAGE, "qk_norm_rope", "head_dim %lld: even and at most %d",
				     (long long)d, ATT_MAX_D);
	/* the block size of ctq_rmsnorm_launch for rows of d: the same sum */
	/* d <= ATT_MAX_D < 1024: the rule does not depend on the row count */
	const int threads = ctq_rms_threads(T * nq, d);
	const unsigned blocks_y = (unsigned)(nq + nk + (kc ? nk : 0));
	return CTQ_CUDA(CTQ_PDL_LAUNCH(qk_norm_rope_kernel, dim3((unsigned)T, blocks_y), threads, 0, stream,
				      x, ld, (int)nq, (int)nk, (int)d, wq, wk, eps, pos, inv_freq, kc,
				      vc, slot, max_len),
			err);
}

extern "C" enum ctq_status ctq_qk_norm_rope_launch(uint16_t *x, int64_t ld, int64_t T, int64_t nq,
						   int64_t nk, int64_t d, const float *wq,
						   const float *wk, float eps, const int32_t *pos,
						   const float *inv_freq, void *stream,
						   struct ctq_error *err)
{
	return qk_norm_rope(x, ld, T, nq, nk, d, wq, wk, eps, pos, inv_freq, nullptr, nullptr, nullptr,
			    0, stream, err);
}

extern "C" enum ctq_status ctq_qk_norm_rope_store_launch(uint16_t *x, int64_t ld, int64_t T,
							 int64_t nq, int64_t nk, int64_t d,
							 const float *wq, const float *wk, float eps,
							 const int32_t *pos, const float *inv_freq,
							 uint16_t *kc, uint16_t *vc, const int32_t *slot,
							 int64_t max_len, void *stream,
							 struct ctq_error *err)
{
	enum ctq_status st = ctq_knobs_check(err);
	if (st)
		return st;
	return qk_norm_rope(x, ld, T, nq, nk, d, wq, wk, eps, pos, inv_freq, kc, vc, slot, max_len, stream,
			    err);
}

/* ---- prefill: flash-attention on BF16 tensor cores ----
 * Block: 4 warps, 64 query rows (row r: token t0 + r / G, head kh * G +
 * r % G), one KV head. Keys in tiles of AM_BK, K and V tiles double-
 * buffered in shared memory by cp.async, rows of D BF16 stored with the
 * 16-byte chunk index XOR (row & 7) so ldmatrix reads are conflict-free.
 * Per warp and tile: S (16 x AM_BK) = Q Kᵀ by mma.m16n8k16 (Q held in
 * registers), scaled to log2 units, causally masked (key j visible to a row
 * of position p iff j <= p), online softmax (running max and sum per row),
 * P rounded to BF16 and O (16 x D) += P V with V read by ldmatrix.trans.
 * Tiles past a warp's last visible key are skipped by that warp. */
#define AM_ROWS 64
#define AM_BK 64
#define AM_MIN_T 64 /* fewer tokens: decode batches of distinct slots */

__device__ __forceinline__ uint32_t am_smem_addr(const void *p)
{
	return (uint32_t)__cvta_generic_to_shared(p);
}

/* element offset of (row, chunk) in a swizzled tile of rows of D BF16 */
template <int D> __device__ __forceinline__ int am_off(int row, int chunk)
{
	return row * D + ((chunk ^ (row & 7)) << 3);
}

template <int D>
__device__ __forceinline__ void am_load_tile(uint16_t *dst, const uint16_t *base, int64_t row_stride,
					     int64_t j0, int64_t jmax)
{
	constexpr int CH = D / 8;
	for (int i = threadIdx.x; i < AM_BK * CH; i += 128) {
		const int r = i / CH, c = i % CH;
		const int64_t j = j0 + r;
		const bool ok = j <= jmax;
		const uint16_t *src = ok ? base + j * row_stride + c * 8 : base;
		asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(
				     am_smem_addr(dst + am_off<D>(r, c))),
			     "l"(src), "r"(ok ? 16 : 0));
	}
	asm volatile("cp.async.commit_group;\n" ::);
}

__device__ __forceinline__ void am_mma(float *c, const uint32_t *a, uint32_t b0, uint32_t b1)
{
	asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
		     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
		     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
		     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* two f32 -> BF16 pair (round to nearest even), lo in the low half */
__device__ __forceinline__ uint32_t am_pack_bf16(float lo, float hi)
{
	uint32_t r;
	asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
	return r;
}

/* One function on purpose (~180 lines): the Q fragments, the S and O
 * accumulators and the running max and sum stay in registers across the
 * whole key loop, and the double-buffered cp.async pipeline interleaves
 * the next tile's loads with this tile's MMAs and softmax. Helpers for
 * the loop's phases would each take most of that state by reference, and
 * whether nvcc then keeps it in registers under __launch_bounds__(128)
 * is a question for the SASS, not the source; the leaf steps are helpers
 * already (am_load_tile, am_mma, am_pack_bf16). */
template <int D>
__global__ void __launch_bounds__(128)
attention_mma_kernel(const uint16_t *q, int64_t ld, const uint16_t *kc, const uint16_t *vc,
		     const int32_t *slot, const int32_t *pos, int T, int heads, int kv_heads,
		     int64_t max_len, float scale, uint16_t *out)
{
	extern __shared__ __align__(128) uint16_t am_smem[];
	uint16_t *ks = am_smem, *vs = am_smem + 2 * AM_BK * D;
	const int G = heads / kv_heads, BT = AM_ROWS / G;
	const int kh = blockIdx.y;
	const int t0 = (gridDim.x - 1 - blockIdx.x) * BT; /* the longest tiles first */
	const int nt = T - t0 < BT ? T - t0 : BT;
	const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
	const int s0 = slot[t0], p0 = pos[t0];
	const bool run = tid >= nt || (slot[t0 + tid] == s0 && pos[t0 + tid] == p0 + tid);
	if (!__syncthreads_and(run)) {
		for (int i = 0; i < nt; i++) {
			__syncthreads();
			gqa_block(q, ld, kc, vc, slot, pos, heads, kv_heads, D, max_len, scale, 1, out,
				  NULL, NULL, t0 + i, kh, 0);
		}
		return;
	}
	const int64_t row_stride = (int64_t)kv_heads * D;
	const uint16_t *kb = kc + (int64_t)s0 * max_len * row_stride + (int64_t)kh * D;
	const uint16_t *vb = vc + (int64_t)s0 * max_len * row_stride + (int64_t)kh * D;
	const int64_t jmax = (int64_t)p0 + nt - 1; /* the last key any row sees */
	const int ntiles = (int)(jmax / AM_BK) + 1;

	/* this thread's rows: r_lo = warp * 16 + g and r_lo + 8 */
	const int g = lane >> 2, tq = lane & 3;
	const int r_lo = warp * 16 + g, r_hi = r_lo + 8;
	const int tok_lo = r_lo / G, tok_hi = r_hi / G;
	const int64_t plo = (int64_t)p0 + tok_lo, phi = (int64_t)p0 + tok_hi;
	const int wfirst = (warp * 16) / G, wlast = (warp * 16 + 15) / G;
	const int64_t wmin = (int64_t)p0 + wfirst;
	const int64_t wmax = (int64_t)p0 + (wlast < nt - 1 ? wlast : nt - 1);
	const bool wlive = wfirst < nt;

	/* Q fragments, straight from global memory */
	constexpr int KS = D / 16;
	uint32_t qa[KS][4];
	{
		const bool vlo = tok_lo < nt, vhi = tok_hi < nt;
		const uint16_t *qlo = q + (int64_t)(t0 + tok_lo) * ld + (int64_t)(kh * G + r_lo % G) * D;
		const uint16_t *qhi = q + (int64_t)(t0 + tok_hi) * ld + (int64_t)(kh * G + r_hi % G) * D;
#pragma unroll
		for (int k = 0; k < KS; k++) {
			const int c = k * 16 + 2 * tq;
			qa[k][0] = vlo ? *(const uint32_t *)(qlo + c) : 0u;
			qa[k][1] = vhi ? *(const uint32_t *)(qhi + c) : 0u;
			qa[k][2] = vlo ? *(const uint32_t *)(qlo + c + 8) : 0u;
			qa[k][3] = vhi ? *(const uint32_t *)(qhi + c + 8) : 0u;
		}
	}
	float o[D / 8][4];
#pragma unroll
	for (int n = 0; n < D / 8; n++)
		o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
	float m_lo = -INFINITY, m_hi = -INFINITY, l_lo = 0.0f, l_hi = 0.0f;
	const float sl2 = scale * 1.4426950408889634f;

	am_load_tile<D>(ks, kb, row_stride, 0, jmax);
	am_load_tile<D>(vs, vb, row_stride, 0, jmax);
	for (int kt = 0; kt < ntiles; kt++) {
		const int buf = kt & 1;
		if (kt + 1 < ntiles) {
			am_load_tile<D>(ks + (buf ^ 1) * AM_BK * D, kb, row_stride, (int64_t)(kt + 1) * AM_BK, jmax);
			am_load_tile<D>(vs + (buf ^ 1) * AM_BK * D, vb, row_stride, (int64_t)(kt + 1) * AM_BK, jmax);
			asm volatile("cp.async.wait_group 2;\n" ::);
		} else {
			asm volatile("cp.async.wait_group 0;\n" ::);
		}
		__syncthreads();
		const int64_t j0 = (int64_t)kt * AM_BK;
		if (wlive && j0 <= wmax) {
			const uint16_t *kt_s = ks + buf * AM_BK * D, *vt_s = vs + buf * AM_BK * D;
			float sc[AM_BK / 8][4];
#pragma unroll
			for (int n = 0; n < AM_BK / 8; n++) {
				sc[n][0] = sc[n][1] = sc[n][2] = sc[n][3] = 0.0f;
#pragma unroll
				for (int k = 0; k < KS; k += 2) {
					/* matrices (keys n*8.., chunks 2k .. 2k+3) */
					uint32_t b[4];
					const int r = n * 8 + (lane & 7), ch = 2 * k + (lane >> 3);
					asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
						     : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3])
						     : "r"(am_smem_addr(kt_s + am_off<D>(r, ch))));
					am_mma(sc[n], qa[k], b[0], b[1]);
					am_mma(sc[n], qa[k + 1], b[2], b[3]);
				}
			}
			/* scale, mask, row maxima */
			const bool mask = j0 + AM_BK - 1 > wmin;
			float mx_lo = -INFINITY, mx_hi = -INFINITY;
#pragma unroll
			for (int n = 0; n < AM_BK / 8; n++) {
				const int64_t j = j0 + n * 8 + 2 * tq;
#pragma unroll
				for (int e = 0; e < 2; e++) {
					float a = sc[n][e] * sl2, b2 = sc[n][2 + e] * sl2;
					if (mask) {
						if (j + e > plo)
							a = -INFINITY;
						if (j + e > phi)
							b2 = -INFINITY;
					}
					sc[n][e] = a;
					sc[n][2 + e] = b2;
					mx_lo = fmaxf(mx_lo, a);
					mx_hi = fmaxf(mx_hi, b2);
				}
			}
#pragma unroll
			for (int off = 1; off <= 2; off <<= 1) {
				mx_lo = fmaxf(mx_lo, __shfl_xor_sync(0xffffffffu, mx_lo, off));
				mx_hi = fmaxf(mx_hi, __shfl_xor_sync(0xffffffffu, mx_hi, off));
			}
			const float mn_lo = fmaxf(m_lo, mx_lo), mn_hi = fmaxf(m_hi, mx_hi);
			/* a row with nothing visible yet keeps everything at zero */
			const float base_lo = mn_lo == -INFINITY ? 0.0f : mn_lo;
			const float base_hi = mn_hi == -INFINITY ? 0.0f : mn_hi;
			const float al_lo = exp2f(m_lo - base_lo), al_hi = exp2f(m_hi - base_hi);
			m_lo = mn_lo;
			m_hi = mn_hi;
			float sum_lo = 0.0f, sum_hi = 0.0f;
			uint32_t pa[AM_BK / 16][4];
#pragma unroll
			for (int n = 0; n < AM_BK / 8; n++) {
				const float e0 = exp2f(sc[n][0] - base_lo), e1 = exp2f(sc[n][1] - base_lo);
				const float e2 = exp2f(sc[n][2] - base_hi), e3 = exp2f(sc[n][3] - base_hi);
				sum_lo += e0 + e1;
				sum_hi += e2 + e3;
				/* C fragment of n-tile n -> A fragment of k-step n / 2 */
				pa[n >> 1][(n & 1) * 2 + 0] = am_pack_bf16(e0, e1);
				pa[n >> 1][(n & 1) * 2 + 1] = am_pack_bf16(e2, e3);
			}
			l_lo = l_lo * al_lo + sum_lo;
			l_hi = l_hi * al_hi + sum_hi;
#pragma unroll
			for (int n = 0; n < D / 8; n++) {
				o[n][0] *= al_lo;
				o[n][1] *= al_lo;
				o[n][2] *= al_hi;
				o[n][3] *= al_hi;
			}
			/* O += P V: k-steps of 16 keys, n-tiles of 8 dimensions */
#pragma unroll
			for (int k = 0; k < AM_BK / 16; k++) {
#pragma unroll
				for (int n = 0; n < D / 8; n += 2) {
					uint32_t b[4];
					const int mi = lane >> 3;
					const int r = k * 16 + (mi & 1) * 8 + (lane & 7), ch = n + (mi >> 1);
					asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
						     : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3])
						     : "r"(am_smem_addr(vt_s + am_off<D>(r, ch))));
					am_mma(o[n], pa[k], b[0], b[1]);
					am_mma(o[n + 1], pa[k], b[2], b[3]);
				}
			}
		}
		__syncthreads();
	}
	/* the sums over the quad, then O / l */
#pragma unroll
	for (int off = 1; off <= 2; off <<= 1) {
		l_lo += __shfl_xor_sync(0xffffffffu, l_lo, off);
		l_hi += __shfl_xor_sync(0xffffffffu, l_hi, off);
	}
	const float inv_lo = 1.0f / l_lo, inv_hi = 1.0f / l_hi;
	uint16_t *olo = out + ((int64_t)(t0 + tok_lo) * heads + kh * G + r_lo % G) * D;
	uint16_t *ohi = out + ((int64_t)(t0 + tok_hi) * heads + kh * G + r_hi % G) * D;
#pragma unroll
	for (int n = 0; n < D / 8; n++) {
		const int c = n * 8 + 2 * tq;
		if (tok_lo < nt)
			*(uint32_t *)(olo + c) = am_pack_bf16(o[n][0] * inv_lo, o[n][1] * inv_lo);
		if (tok_hi < nt)
			*(uint32_t *)(ohi + c) = am_pack_bf16(o[n][2] * inv_hi, o[n][3] * inv_hi);
	}
}

/* ---- decode: split-key attention, keys streamed with 16-byte loads ----
 * Block (128 threads) per (token, KV head, chunk of kpc keys); chunks past
 * the token's context exit at once, so one launch shape (fixed at graph
 * capture) serves every context length. A key row of D BF16 is read by D / 8
 * lanes, 16 bytes each; a warp holds 32 / (D / 8) such streams, the block
 * 4x that, each stream walking the chunk's keys with stride `streams`,
 * AD_U keys per step with all their K and V loads issued first. Each
 * stream keeps the G heads' running max (log2 units), sum and 8-dimension
 * slice of the weighted sum; streams merge in shared memory, chunks in
 * attention_decode_combine_kernel. */
#define AD_U 4

/* The 8 BF16 of one 16-byte load as f32, in memory order. */
__device__ __forceinline__ static void ad_unpack8(uint4 v, float f[8])
{
	const uint32_t w4[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
	for (int e = 0; e < 4; e++) {
		f[2 * e] = ctq_bf16_to_f32((uint16_t)(w4[e] & 0xffff));
		f[2 * e + 1] = ctq_bf16_to_f32((uint16_t)(w4[e] >> 16));
	}
}

template <int D, int G>
__global__ void __launch_bounds__(128)
attention_decode_kernel(const uint16_t *q, int64_t ld, const uint16_t *kc, const uint16_t *vc,
			const int32_t *slot, const int32_t *pos, int heads, int kv_heads, int64_t max_len,
			float sl2, int kpc, uint16_t *out, float *part_acc, float *part_ml)
{
	pdl_trigger(); /* o_proj (or the combine) may start (kernels/pdl.cuh) */
	pdl_wait();
	constexpr int LPR = D / 8, RPW = 32 / LPR, NS = 4 * RPW;
	__shared__ float sm_acc[NS][G][D];
	__shared__ float sm_m[NS][G], sm_l[NS][G];
	const int t = blockIdx.x, kh = blockIdx.y, c = blockIdx.z, chunks = gridDim.z;
	const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
	const int sub = lane / LPR, li = lane % LPR, sidx = warp * RPW + sub;
	const int64_t n = (int64_t)pos[t] + 1;
	const int64_t j_begin = (int64_t)c * kpc;
	if (j_begin >= n)
		return;
	const int64_t j_end = j_begin + kpc < n ? j_begin + kpc : n;
	const int64_t row = (int64_t)kv_heads * D;
	const uint16_t *kb = kc + (int64_t)slot[t] * max_len * row + (int64_t)kh * D + li * 8;
	const uint16_t *vb = vc + (int64_t)slot[t] * max_len * row + (int64_t)kh * D + li * 8;
	float qf[G][8], acc[G][8], m[G], l[G];
#pragma unroll
	for (int g = 0; g < G; g++) {
		const uint4 qv = *(const uint4 *)(q + (int64_t)t * ld + (int64_t)(kh * G + g) * D + li * 8);
		ad_unpack8(qv, qf[g]);
#pragma unroll
		for (int e = 0; e < 8; e++) {
			qf[g][e] *= sl2;
			acc[g][e] = 0.0f;
		}
		m[g] = -INFINITY;
		l[g] = 0.0f;
	}
	/* The step loop is warp-uniform (its bound is the warp's first stream),
	 * so every lane reaches the shuffles; a stream's keys past the chunk
	 * score -inf and are skipped. */
	for (int64_t b0 = j_begin + (int64_t)warp * RPW; b0 < j_end; b0 += (int64_t)NS * AD_U) {
		const int64_t j0 = b0 + sub;
		uint4 kr[AD_U], vr[AD_U];
#pragma unroll
		for (int u = 0; u < AD_U; u++) {
			const int64_t j = j0 + (int64_t)u * NS;
			if (j < j_end) {
				kr[u] = *(const uint4 *)(kb + j * row);
				vr[u] = *(const uint4 *)(vb + j * row);
			} else {
				kr[u] = make_uint4(0u, 0u, 0u, 0u);
				vr[u] = kr[u];
			}
		}
		float sc[AD_U][G];
#pragma unroll
		for (int u = 0; u < AD_U; u++) {
			float kf[8];
			ad_unpack8(kr[u], kf);
#pragma unroll
			for (int g = 0; g < G; g++) {
				float a = 0.0f;
#pragma unroll
				for (int e = 0; e < 8; e++)
					a += qf[g][e] * kf[e];
#pragma unroll
				for (int off = LPR / 2; off > 0; off >>= 1)
					a += __shfl_xor_sync(0xffffffffu, a, off);
				sc[u][g] = j0 + (int64_t)u * NS < j_end ? a : -INFINITY;
			}
		}
		if (j0 >= j_end)
			continue; /* nothing of this stream in the step (no shuffles below) */
#pragma unroll
		for (int g = 0; g < G; g++) {
			float mx = m[g];
#pragma unroll
			for (int u = 0; u < AD_U; u++)
				mx = fmaxf(mx, sc[u][g]);
			/* the stream's first key of the step is visible: mx is finite */
			const float al = exp2f(m[g] - mx);
			l[g] *= al;
#pragma unroll
			for (int e = 0; e < 8; e++)
				acc[g][e] *= al;
			m[g] = mx;
		}
#pragma unroll
		for (int u = 0; u < AD_U; u++) {
			if (j0 + (int64_t)u * NS >= j_end)
				break;
			float vf[8];
			ad_unpack8(vr[u], vf);
#pragma unroll
			for (int g = 0; g < G; g++) {
				const float p = exp2f(sc[u][g] - m[g]);
				l[g] += p;
#pragma unroll
				for (int e = 0; e < 8; e++)
					acc[g][e] += p * vf[e];
			}
		}
	}
	/* merge the NS streams */
#pragma unroll
	for (int g = 0; g < G; g++) {
#pragma unroll
		for (int e = 0; e < 8; e++)
			sm_acc[sidx][g][li * 8 + e] = acc[g][e];
		if (li == 0) {
			sm_m[sidx][g] = m[g];
			sm_l[sidx][g] = l[g];
		}
	}
	__syncthreads();
	const bool single = kpc >= max_len || j_begin + kpc >= n && c == 0;
	for (int i = tid; i < G * D; i += 128) {
		const int g = i / D, e = i % D;
		float M = -INFINITY;
#pragma unroll
		for (int s2 = 0; s2 < NS; s2++)
			M = fmaxf(M, sm_m[s2][g]);
		float L = 0.0f, A = 0.0f;
#pragma unroll
		for (int s2 = 0; s2 < NS; s2++) {
			const float w = sm_m[s2][g] == -INFINITY ? 0.0f : exp2f(sm_m[s2][g] - M);
			L += w * sm_l[s2][g];
			A += w * sm_acc[s2][g][e];
		}
		const int64_t h = (int64_t)kh * G + g;
		if (single) {
			out[((int64_t)t * heads + h) * D + e] = ctq_f32_to_bf16(A / L);
		} else {
			const int64_t pe = ((int64_t)t * heads + h) * chunks + c;
			part_acc[pe * D + e] = A;
			if (e == 0) {
				part_ml[2 * pe] = M;
				part_ml[2 * pe + 1] = L;
			}
		}
	}
}

/* The largest of the n chunks' running maxima in ml (pairs max, sum). */
__device__ __forceinline__ static float chunks_max(const float *ml, int n)
{
	float mx = -INFINITY;
	for (int c = 0; c < n; c++)
		mx = fmaxf(mx, ml[2 * c]);
	return mx;
}

/* Merges the chunks of attention_decode_kernel that the token's context
 * reaches: one block per (token, head), one thread per dimension. */
__global__ void attention_decode_combine_kernel(const float *part_acc, const float *part_ml,
						const int32_t *pos, int heads, int d, int chunks, int kpc,
						uint16_t *out)
{
	pdl_trigger();
	pdl_wait();
	const int64_t th = (int64_t)blockIdx.x * heads + blockIdx.y;
	const int64_t n = (int64_t)pos[blockIdx.x] + 1;
	const int live = (int)((n + kpc - 1) / kpc);
	if (live <= 1)
		return; /* chunk 0 wrote the output itself */
	const float *ml = part_ml + th * chunks * 2;
	const float mx = chunks_max(ml, live);
	for (int i = threadIdx.x; i < d; i += blockDim.x) {
		float num = 0.0f, den = 0.0f;
		for (int c = 0; c < live; c++) {
			const float w = exp2f(ml[2 * c] - mx);
			num += w * part_acc[(th * chunks + c) * d + i];
			den += w * ml[2 * c + 1];
		}
		out[th * d + i] = ctq_f32_to_bf16(num / den);
	}
}

/* Merges the chunks of attention_gqa_kernel: one block per (token, head),
 * one thread per dimension. */
__global__ void attention_combine_kernel(const float *part_acc, const float *part_ml, int heads,
					 int d, int chunks, uint16_t *out)
{
	const int64_t th = (int64_t)blockIdx.x * heads + blockIdx.y;
	const float *ml = part_ml + th * chunks * 2;
	const float mx = chunks_max(ml, chunks);
	for (int i = threadIdx.x; i < d; i += blockDim.x) {
		float num = 0.0f, den = 0.0f;
		for (int c = 0; c < chunks; c++) {
			const float mc = ml[2 * c];
			if (mc == -INFINITY)
				continue;
			const float w = __expf(mc - mx);
			num += w * part_acc[(th * chunks + c) * d + i];
			den += w * ml[2 * c + 1];
		}
		out[th * d + i] = ctq_f32_to_bf16(num / den);
	}
}

/* Whether a call of T tokens may take the GQA kernels (gqa_block and the
 * kernels built on it) rather than the per-(token, head) attention_kernel. */
static bool gqa_fits(int64_t T, int64_t heads, int64_t kv_heads, int64_t d)
{
	const int64_t G = heads / kv_heads;
	return d % 2 == 0 && d / 2 <= 128 && 128 % (d / 2) == 0 && G <= ATT_GMAX && T <= 0x7fffffff &&
	       heads <= 0x7fffffff && !ctq_knobs()->attention_simple;
}

/* The tokens of one attention_mma_kernel tile when a call of T tokens
 * takes it (0: it does not): D = 64 / 128, groups of 1, 2, 4 or 8, and the
 * conditions of the GQA kernels whose per-token path it falls back on. */
static int64_t am_tile_tokens(int64_t T, int64_t heads, int64_t kv_heads, int64_t d)
{
	const int64_t G = heads / kv_heads;
	if (!gqa_fits(T, heads, kv_heads, d) || T < AM_MIN_T || (d != 64 && d != 128) || (G != 1 && G != 2 && G != 4 && G != 8) ||
	    ctq_knobs()->attention_no_mma)
		return 0;
	return AM_ROWS / G;
}

/* The attention of tokens 0..T-1 over caches that already hold their
 * keys and values: the kernel is chosen for the call as a whole. */
static enum ctq_status attention_run(const uint16_t *q, int64_t ld, const uint16_t *kc,
				     const uint16_t *vc, const int32_t *slot, const int32_t *pos,
				     int64_t T, int64_t heads, int64_t kv_heads, int64_t d,
				     int64_t max_len, uint16_t *out, float *scratch,
				     size_t scratch_bytes, int sms, void *stream, struct ctq_error *err)
{
	enum ctq_status st = CTQ_OK;
	const float scale = 1.0f / sqrtf((float)d);
	const int64_t G = heads / kv_heads;
	if (!gqa_fits(T, heads, kv_heads, d)) {
		ctq_kpath_note(CTQ_KOP_ATTENTION, CTQ_ATT_PATH_SIMPLE);
		attention_kernel<<<dim3((unsigned)T, (unsigned)heads), ATT_THREADS, 0,
				   (cudaStream_t)stream>>>(q, ld, kc, vc, slot, pos, heads, kv_heads, d,
							   max_len, scale, out);
		return CTQ_LAUNCH(err);
	}
	/* prefill: tensor cores for D = 64 / 128 and groups of 1, 2, 4 or 8
	 * (the per-token fallback inside needs what gqa_block needs) */
	if (am_tile_tokens(T, heads, kv_heads, d)) {
		ctq_kpath_note(CTQ_KOP_ATTENTION, CTQ_ATT_PATH_PREFILL_MMA);
		const int BT = AM_ROWS / (int)G;
		const dim3 grid((unsigned)((T + BT - 1) / BT), (unsigned)kv_heads);
		const size_t smem = (size_t)4 * AM_BK * (size_t)d * 2;
		if (d == 128) {
			cudaFuncSetAttribute(attention_mma_kernel<128>, cudaFuncAttributeMaxDynamicSharedMemorySize,
					     (int)smem);
			attention_mma_kernel<128><<<grid, 128, smem, (cudaStream_t)stream>>>(
				q, ld, kc, vc, slot, pos, (int)T, (int)heads, (int)kv_heads, max_len, scale, out);
		} else {
			cudaFuncSetAttribute(attention_mma_kernel<64>, cudaFuncAttributeMaxDynamicSharedMemorySize,
					     (int)smem);
			attention_mma_kernel<64><<<grid, 128, smem, (cudaStream_t)stream>>>(
				q, ld, kc, vc, slot, pos, (int)T, (int)heads, (int)kv_heads, max_len, scale, out);
		}
		return CTQ_LAUNCH(err);
	}
	/* decode: key chunks of kpc (64 doubled while the grid would pass 16
	 * blocks per SM or the partials the scratch) */
	if ((d == 64 || d == 128) && (G == 1 || G == 2 || G == 4 || G == 8) && scratch &&
	    !ctq_knobs()->attention_no_gqa) {
		int64_t kpc = 64, chunks = (max_len + kpc - 1) / kpc;
		while (kpc < max_len && (T * kv_heads * chunks > 16 * (int64_t)sms ||
					 (size_t)(T * heads * chunks) * (size_t)(d + 2) * sizeof(float) > scratch_bytes)) {
			kpc *= 2;
			chunks = (max_len + kpc - 1) / kpc;
		}
		if (chunks > 1 && (size_t)(T * heads * chunks) * (size_t)(d + 2) * sizeof(float) > scratch_bytes)
			goto gqa; /* no room for partials at this batch: the older kernel */
		ctq_kpath_note(CTQ_KOP_ATTENTION, CTQ_ATT_PATH_DECODE_SPLIT);
		const float sl2 = scale * 1.4426950408889634f;
		float *pa = scratch, *pm = scratch + T * heads * chunks * d;
		const dim3 grid((unsigned)T, (unsigned)kv_heads, (unsigned)chunks);
		cudaStream_t s = (cudaStream_t)stream;
		cudaError_t e;
#define AD_LAUNCH(DD, GG)                                                                          \
	e = CTQ_PDL_LAUNCH((attention_decode_kernel<DD, GG>), grid, 128, 0, s, q, ld, kc, vc, slot,  \
			   pos, (int)heads, (int)kv_heads, max_len, sl2, (int)kpc, out, pa, pm)
		if (d == 128)
			switch (G) {
			case 1: AD_LAUNCH(128, 1); break;
			case 2: AD_LAUNCH(128, 2); break;
			case 4: AD_LAUNCH(128, 4); break;
			default: AD_LAUNCH(128, 8); break;
			}
		else
			switch (G) {
			case 1: AD_LAUNCH(64, 1); break;
			case 2: AD_LAUNCH(64, 2); break;
			case 4: AD_LAUNCH(64, 4); break;
			default: AD_LAUNCH(64, 8); break;
			}
#undef AD_LAUNCH
		if ((st = CTQ_CUDA(e, err)) != CTQ_OK || chunks == 1)
			return st;
		return CTQ_CUDA(CTQ_PDL_LAUNCH(attention_decode_combine_kernel, dim3((unsigned)T, (unsigned)heads),
					      (unsigned)d, 0, s, pa, pm, pos, (int)heads, (int)d,
					      (int)chunks, (int)kpc, out),
				err);
	}
gqa:;
	/* chunks: enough (token, KV head, chunk) blocks for two per SM, each
	 * chunk at least one sub-chunk of keys long, partials within scratch */
	int64_t chunks = 1;
	const int64_t units = T * kv_heads;
	if (scratch && units < 2 * (int64_t)sms) {
		chunks = (2 * (int64_t)sms + units - 1) / units;
		const int64_t by_len = (max_len + ATT_SC - 1) / ATT_SC;
		if (chunks > by_len)
			chunks = by_len;
		if (chunks > 64)
			chunks = 64;
		while (chunks > 1 && (size_t)(T * heads * chunks) * (size_t)(d + 2) * sizeof(float) > scratch_bytes)
			chunks--;
	}
	ctq_kpath_note(CTQ_KOP_ATTENTION, CTQ_ATT_PATH_GQA);
	float *part_acc = scratch;
	float *part_ml = scratch ? scratch + T * heads * chunks * d : NULL;
	attention_gqa_kernel<<<dim3((unsigned)T, (unsigned)kv_heads, (unsigned)chunks), 128, 0,
			       (cudaStream_t)stream>>>(q, ld, kc, vc, slot, pos, (int)heads,
						       (int)kv_heads, (int)d, max_len, scale,
						       (int)chunks, out, part_acc, part_ml);
	if ((st = CTQ_LAUNCH(err)) != CTQ_OK || chunks == 1)
		return st;
	attention_combine_kernel<<<dim3((unsigned)T, (unsigned)heads), d < 128 ? 64 : 128, 0,
				   (cudaStream_t)stream>>>(part_acc, part_ml, (int)heads, (int)d,
							   (int)chunks, out);
	return CTQ_LAUNCH(err);
}

/* The end of the run of consecutive positions of one slot from token t. */
static int64_t run_end(const int32_t *slot, const int32_t *pos, int64_t t, int64_t T)
{
	int64_t e = t + 1;
	while (e < T && slot[e] == slot[e - 1] && pos[e] == pos[e - 1] + 1)
		e++;
	return e;
}

/* Whether every tile of BT tokens of [t0, t1), from t0, lies in one run. */
static bool whole_tiles(const int32_t *slot, const int32_t *pos, int64_t t0, int64_t t1, int64_t BT)
{
	for (int64_t a = t0; a < t1; a += BT) {
		const int64_t b = a + BT < t1 ? a + BT : t1;
		if (run_end(slot, pos, a, b) < b)
			return false;
	}
	return true;
}

/* A call of T >= AM_MIN_T tokens goes to attention_mma_kernel, whose tiles
 * of BT tokens run on tensor cores only when a tile is one run of
 * consecutive positions of one slot; any other tile takes its tokens one
 * at a time (gqa_block), serially inside one block. In a serving step the
 * decode tokens of many sequences and the seams between prompt chunks make
 * such tiles, and on a long context each costs a serial walk of its keys
 * per token: the critical path of the whole call. With the layout on the
 * host, a call whose tiles are all whole stays one launch (prefill of
 * whole prompts); any other is cut into groups: runs of >= AM_MIN_T tokens
 * that each start on a tile boundary of the group (so every tile is
 * whole), and shorter runs (decode tokens, short chunks) gathered below
 * AM_MIN_T tokens for the decode kernels. Every key and value
 * is stored first, as in one call, so the split changes which kernel
 * computes a token, never what it may see. */
extern "C" enum ctq_status ctq_attention_launch(const uint16_t *q, const uint16_t *k,
						const uint16_t *v, int64_t ld, uint16_t *kc,
						uint16_t *vc, const int32_t *slot,
						const int32_t *pos, const int32_t *host_slot,
						const int32_t *host_pos, int64_t T, int64_t heads,
						int64_t kv_heads, int64_t d, int64_t max_len,
						uint16_t *out, float *scratch, size_t scratch_bytes,
						int sms, void *stream, struct ctq_error *err)
{
	if (T <= 0)
		return CTQ_OK;
	enum ctq_status st = ctq_knobs_check(err);
	if (st)
		return st;
	if (d > ATT_MAX_D || heads % kv_heads)
		return ctq_error_set(err, CTQ_ERR_USAGE, "attention",
				     "head_dim %lld > %d or heads %lld not a multiple of kv heads %lld",
				     (long long)d, ATT_MAX_D, (long long)heads, (long long)kv_heads);
	/* k = v = NULL: stored already (ctq_qk_norm_rope_store_launch) */
	if (k && v && (st = kv_store(k, v, ld, kc, vc, slot, pos, T, kv_heads * d, max_len, stream, err)))
		return st;
	const int64_t BT = host_slot && host_pos ? am_tile_tokens(T, heads, kv_heads, d) : 0;
	if (!BT || whole_tiles(host_slot, host_pos, 0, T, BT))
		return attention_run(q, ld, kc, vc, slot, pos, T, heads, kv_heads, d, max_len, out,
				     scratch, scratch_bytes, sms, stream, err);
	const int64_t row = heads * d; /* out (T, heads, d) */
	for (int64_t t = 0; t < T && !st;) {
		/* [g, t): long runs that each start on a tile of the group (every
		 * tile whole), or short runs gathered below AM_MIN_T tokens */
		int64_t g = t;
		while (t < T) {
			const int64_t e = run_end(host_slot, host_pos, t, T);
			const bool run_long = e - t >= AM_MIN_T, group_long = t > g && t - g >= AM_MIN_T;
			if (t > g && (run_long != group_long || (run_long && (t - g) % BT) ||
				      (!run_long && e - g >= AM_MIN_T)))
				break;
			t = e;
			if (run_long && (t - g) % BT)
				break; /* a partial last tile: nothing may follow it */
		}
		st = attention_run(q + g * ld, ld, kc, vc, slot + g, pos + g, t - g, heads, kv_heads, d,
				   max_len, out + g * row, scratch, scratch_bytes, sms, stream, err);
	}
	return st;
}

