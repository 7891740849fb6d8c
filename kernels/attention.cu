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
 * Shapes as in reference/backend.h. */
#include "core/dtype.h"
#include "core/numerics.h"
#include "kernels/block_reduce.cuh"
#include "kernels/cuda_check.h"
#include "kernels/kernels.h"

#include <math.h>
#include <stdlib.h>

__global__ void kv_store_kernel(const uint16_t *k, const uint16_t *v, int64_t ld, uint16_t *kc,
				uint16_t *vc, const int32_t *slot, const int32_t *pos, int64_t row,
				int64_t max_len)
{
	const int64_t t = blockIdx.x;
	const int64_t dst = ((int64_t)slot[t] * max_len + pos[t]) * row;
	for (int64_t i = threadIdx.x; i < row; i += blockDim.x) {
		kc[dst + i] = k[t * ld + i];
		vc[dst + i] = v[t * ld + i];
	}
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

__global__ void __launch_bounds__(128)
attention_gqa_kernel(const uint16_t *q, int64_t ld, const uint16_t *kc, const uint16_t *vc,
		     const int32_t *slot, const int32_t *pos, int heads, int kv_heads, int d,
		     int64_t max_len, float scale, int chunks, uint16_t *out, float *part_acc,
		     float *part_ml)
{
	__shared__ float qs[ATT_GMAX * ATT_MAX_D];
	__shared__ float p[ATT_GMAX][ATT_SC];
	__shared__ float alpha_s[ATT_GMAX], m_s[ATT_GMAX], sum_s[ATT_GMAX];
	const int t = blockIdx.x, kh = blockIdx.y, c = blockIdx.z;
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

/* Merges the chunks of attention_gqa_kernel: one block per (token, head),
 * one thread per dimension. */
__global__ void attention_combine_kernel(const float *part_acc, const float *part_ml, int heads,
					 int d, int chunks, uint16_t *out)
{
	const int64_t th = (int64_t)blockIdx.x * heads + blockIdx.y;
	const float *ml = part_ml + th * chunks * 2;
	float mx = -INFINITY;
	for (int c = 0; c < chunks; c++)
		mx = fmaxf(mx, ml[2 * c]);
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

extern "C" enum ctq_status ctq_attention_launch(const uint16_t *q, const uint16_t *k,
						const uint16_t *v, int64_t ld, uint16_t *kc,
						uint16_t *vc, const int32_t *slot,
						const int32_t *pos, int64_t T, int64_t heads,
						int64_t kv_heads, int64_t d, int64_t max_len,
						uint16_t *out, float *scratch, size_t scratch_bytes,
						int sms, void *stream, struct ctq_error *err)
{
	if (T <= 0)
		return CTQ_OK;
	if (d > ATT_MAX_D || heads % kv_heads)
		return ctq_error_set(err, CTQ_ERR_USAGE, "attention",
				     "head_dim %lld > %d or heads %lld not a multiple of kv heads %lld",
				     (long long)d, ATT_MAX_D, (long long)heads, (long long)kv_heads);
	kv_store_kernel<<<(unsigned)T, 128, 0, (cudaStream_t)stream>>>(k, v, ld, kc, vc, slot, pos,
								       kv_heads * d, max_len);
	enum ctq_status st = CTQ_LAUNCH(err);
	if (st)
		return st;
	const float scale = 1.0f / sqrtf((float)d);
	const int64_t G = heads / kv_heads;
	const bool gqa = d % 2 == 0 && d / 2 <= 128 && 128 % (d / 2) == 0 && G <= ATT_GMAX &&
			 T <= 0x7fffffff && heads <= 0x7fffffff && !getenv("CTQ_ATTENTION_SIMPLE");
	if (!gqa) {
		attention_kernel<<<dim3((unsigned)T, (unsigned)heads), ATT_THREADS, 0,
				   (cudaStream_t)stream>>>(q, ld, kc, vc, slot, pos, heads, kv_heads, d,
							   max_len, scale, out);
		return CTQ_LAUNCH(err);
	}
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

