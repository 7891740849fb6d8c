/* ctq CUDA model ops on BF16 activations: embedding gather, RMSNorm (also per
 * head, Qwen3's q/k norm), residual add, RoPE, SiLU·mul, and attention over
 * a paged-by-slot KV cache. Every kernel computes in f32 and rounds its
 * output to BF16 once. Shapes as in reference/backend.h. */
#include "core/dtype.h"
#include "kernels/cuda_check.h"
#include "kernels/kernels.h"

#include <math.h>

__device__ __forceinline__ float ld_bf16(const uint16_t *p) { return ctq_bf16_to_f32(*p); }

__device__ __forceinline__ float block_sum(float v, float *red)
{
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	const int w = threadIdx.x >> 5, lane = threadIdx.x & 31, nw = (blockDim.x + 31) >> 5;
	__syncthreads();
	if (lane == 0)
		red[w] = v;
	__syncthreads();
	float s = 0.0f;
	for (int i = 0; i < nw; i++)
		s += red[i];
	return s;
}

__device__ __forceinline__ float block_max(float v, float *red)
{
	for (int o = 16; o > 0; o >>= 1)
		v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	const int w = threadIdx.x >> 5, lane = threadIdx.x & 31, nw = (blockDim.x + 31) >> 5;
	__syncthreads();
	if (lane == 0)
		red[w] = v;
	__syncthreads();
	float s = -INFINITY;
	for (int i = 0; i < nw; i++)
		s = fmaxf(s, red[i]);
	return s;
}

__global__ void embed_kernel(const uint16_t *table, const int32_t *ids, int64_t H, uint16_t *out)
{
	const int64_t row = blockIdx.x;
	const uint16_t *src = table + (int64_t)ids[row] * H;
	for (int64_t k = threadIdx.x; k < H; k += blockDim.x)
		out[row * H + k] = src[k];
}

/* HF RMSNorm order: normalise in f32, round to BF16, then times the weight. */
__global__ void rmsnorm_kernel(const uint16_t *x, int64_t ld, int64_t inner, const float *w,
			       int64_t H, float eps, uint16_t *y, int64_t ldy)
{
	__shared__ float red[32];
	const int64_t r = blockIdx.x;
	const int64_t off = (r / inner) * ld + (r % inner) * H;
	const int64_t offy = (r / inner) * ldy + (r % inner) * H;
	float ss = 0.0f;
	for (int64_t k = threadIdx.x; k < H; k += blockDim.x) {
		float v = ld_bf16(x + off + k);
		ss += v * v;
	}
	ss = block_sum(ss, red);
	const float inv = rsqrtf(ss / (float)H + eps);
	for (int64_t k = threadIdx.x; k < H; k += blockDim.x) {
		float n = ctq_bf16_to_f32(ctq_f32_to_bf16(ld_bf16(x + off + k) * inv));
		y[offy + k] = ctq_f32_to_bf16(n * w[k]);
	}
}

__global__ void add_kernel(uint16_t *x, const uint16_t *y, int64_t n)
{
	const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] = ctq_f32_to_bf16(ld_bf16(x + i) + ld_bf16(y + i));
}

__global__ void rope_kernel(uint16_t *x, int64_t ld, const int32_t *pos, int64_t heads, int64_t d,
			    const float *inv_freq)
{
	const int64_t t = blockIdx.x, h = blockIdx.y, half = d / 2;
	uint16_t *v = x + t * ld + h * d;
	for (int64_t i = threadIdx.x; i < half; i += blockDim.x) {
		float s, c;
		sincosf((float)pos[t] * inv_freq[i], &s, &c);
		/* cos and sin are BF16 tensors in the HF model. */
		c = ctq_bf16_to_f32(ctq_f32_to_bf16(c));
		s = ctq_bf16_to_f32(ctq_f32_to_bf16(s));
		float x1 = ld_bf16(v + i), x2 = ld_bf16(v + i + half);
		v[i] = ctq_f32_to_bf16(x1 * c - x2 * s);
		v[i + half] = ctq_f32_to_bf16(x2 * c + x1 * s);
	}
}

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

__global__ void silu_mul_kernel(const uint16_t *gu, int64_t M, int64_t I, uint16_t *out)
{
	const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= M * I)
		return;
	const int64_t m = i / I, c = i % I;
	const float g = ld_bf16(gu + m * 2 * I + c), u = ld_bf16(gu + m * 2 * I + I + c);
	/* HF: act_fn(gate) is a BF16 tensor, then times up. */
	const float s = ctq_bf16_to_f32(ctq_f32_to_bf16(g / (1.0f + __expf(-g))));
	out[i] = ctq_f32_to_bf16(s * u);
}

static unsigned blocks(int64_t n, int threads)
{
	return (unsigned)((n + threads - 1) / threads);
}

extern "C" enum ctq_status ctq_embed_launch(const uint16_t *table, const int32_t *ids, int64_t n,
					    int64_t H, uint16_t *out, void *stream,
					    struct ctq_error *err)
{
	if (n <= 0)
		return CTQ_OK;
	embed_kernel<<<(unsigned)n, 256, 0, (cudaStream_t)stream>>>(table, ids, H, out);
	return CTQ_LAUNCH(err);
}

extern "C" enum ctq_status ctq_rmsnorm_launch(const uint16_t *x, int64_t ld, int64_t rows,
					      int64_t inner, const float *w, int64_t H, float eps,
					      uint16_t *y, int64_t ldy, void *stream,
					      struct ctq_error *err)
{
	if (rows <= 0)
		return CTQ_OK;
	int threads = H >= 1024 ? 1024 : H >= 256 ? 256 : 128;
	rmsnorm_kernel<<<(unsigned)rows, threads, 0, (cudaStream_t)stream>>>(x, ld, inner, w, H, eps,
									    y, ldy);
	return CTQ_LAUNCH(err);
}

extern "C" enum ctq_status ctq_add_launch(uint16_t *x, const uint16_t *y, int64_t n, void *stream,
					  struct ctq_error *err)
{
	if (n <= 0)
		return CTQ_OK;
	add_kernel<<<blocks(n, 256), 256, 0, (cudaStream_t)stream>>>(x, y, n);
	return CTQ_LAUNCH(err);
}

extern "C" enum ctq_status ctq_rope_launch(uint16_t *x, int64_t ld, const int32_t *pos, int64_t T,
					   int64_t heads, int64_t d, const float *inv_freq,
					   void *stream, struct ctq_error *err)
{
	if (T <= 0)
		return CTQ_OK;
	rope_kernel<<<dim3((unsigned)T, (unsigned)heads), 64, 0, (cudaStream_t)stream>>>(
		x, ld, pos, heads, d, inv_freq);
	return CTQ_LAUNCH(err);
}

extern "C" enum ctq_status ctq_attention_launch(const uint16_t *q, const uint16_t *k,
						const uint16_t *v, int64_t ld, uint16_t *kc,
						uint16_t *vc, const int32_t *slot,
						const int32_t *pos, int64_t T, int64_t heads,
						int64_t kv_heads, int64_t d, int64_t max_len,
						uint16_t *out, void *stream, struct ctq_error *err)
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
	attention_kernel<<<dim3((unsigned)T, (unsigned)heads), ATT_THREADS, 0,
			   (cudaStream_t)stream>>>(q, ld, kc, vc, slot, pos, heads, kv_heads, d,
						   max_len, 1.0f / sqrtf((float)d), out);
	return CTQ_LAUNCH(err);
}

extern "C" enum ctq_status ctq_silu_mul_launch(const uint16_t *gu, int64_t M, int64_t I,
					       uint16_t *out, void *stream, struct ctq_error *err)
{
	if (M * I <= 0)
		return CTQ_OK;
	silu_mul_kernel<<<blocks(M * I, 256), 256, 0, (cudaStream_t)stream>>>(gu, M, I, out);
	return CTQ_LAUNCH(err);
}
