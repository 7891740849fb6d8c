/* ctq CUDA model ops on BF16 activations: embedding gather, RMSNorm (also per
 * head, Qwen3's q/k norm), residual add, RoPE, SiLU·mul, and attention over
 * a paged-by-slot KV cache. Every kernel computes in f32 and rounds its
 * output to BF16 once. Shapes as in reference/backend.h. */
#include "core/dtype.h"
#include "core/numerics.h"
#include "kernels/cuda_check.h"
#include "kernels/kernels.h"

#include <math.h>
#include <stdlib.h>

#include "kernels/block_reduce.cuh"

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

/* Fused W8A8 producers: the BF16 values rmsnorm_kernel / silu_mul_kernel
 * would write, computed the same way (the same block size and reduction
 * for the sum of squares), never stored; their per-row absolute maximum
 * gives the scale and they are quantized as quantize_kernel would (core/
 * numerics.h), into q (M, K) and s (M). Each row is read again from L1/L2
 * for each pass instead of being kept. */
__device__ __forceinline__ float block_amax(float v, float *red)
{
	for (int o = 16; o > 0; o >>= 1)
		v = ctq_amax_update(v, __shfl_xor_sync(0xffffffffu, v, o));
	const int w = threadIdx.x >> 5, lane = threadIdx.x & 31, nw = (blockDim.x + 31) >> 5;
	__syncthreads();
	if (lane == 0)
		red[w] = v;
	__syncthreads();
	float a = 0.0f;
	for (int i = 0; i < nw; i++)
		a = ctq_amax_update(a, red[i]);
	return a;
}

__device__ __forceinline__ float rms_value(const uint16_t *xr, const float *w, int64_t k, float inv)
{
	const float n = ctq_bf16_to_f32(ctq_f32_to_bf16(ld_bf16(xr + k) * inv));
	return ctq_bf16_to_f32(ctq_f32_to_bf16(n * w[k]));
}

__global__ void rmsnorm_quant_kernel(const uint16_t *x, const float *w, int64_t H, float eps,
				     int8_t *q, float *s)
{
	__shared__ float red[32];
	const int64_t r = blockIdx.x;
	const uint16_t *xr = x + r * H;
	float ss = 0.0f;
	for (int64_t k = threadIdx.x; k < H; k += blockDim.x) {
		float v = ld_bf16(xr + k);
		ss += v * v;
	}
	ss = block_sum(ss, red);
	const float inv = rsqrtf(ss / (float)H + eps);
	float amax = 0.0f;
	for (int64_t k = threadIdx.x; k < H; k += blockDim.x)
		amax = ctq_amax_update(amax, rms_value(xr, w, k, inv));
	amax = block_amax(amax, red);
	const float sc = amax == 0.0f ? 0.0f : ctq_act_scale(amax);
	if (threadIdx.x == 0)
		s[r] = sc;
	for (int64_t k = threadIdx.x; k < H; k += blockDim.x)
		q[r * H + k] = ctq_quantize(rms_value(xr, w, k, inv), sc);
}

__device__ __forceinline__ float silu_value(const uint16_t *gr, int64_t I, int64_t c)
{
	const float g = ld_bf16(gr + c), u = ld_bf16(gr + I + c);
	const float sg = ctq_bf16_to_f32(ctq_f32_to_bf16(g / (1.0f + __expf(-g))));
	return ctq_bf16_to_f32(ctq_f32_to_bf16(sg * u));
}

__global__ void silu_mul_quant_kernel(const uint16_t *gu, int64_t I, int8_t *q, float *s)
{
	__shared__ float red[32];
	const int64_t r = blockIdx.x;
	const uint16_t *gr = gu + r * 2 * I;
	float amax = 0.0f;
	for (int64_t c = threadIdx.x; c < I; c += blockDim.x)
		amax = ctq_amax_update(amax, silu_value(gr, I, c));
	amax = block_amax(amax, red);
	const float sc = amax == 0.0f ? 0.0f : ctq_act_scale(amax);
	if (threadIdx.x == 0)
		s[r] = sc;
	for (int64_t c = threadIdx.x; c < I; c += blockDim.x)
		q[r * I + c] = ctq_quantize(silu_value(gr, I, c), sc);
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

extern "C" enum ctq_status ctq_silu_mul_launch(const uint16_t *gu, int64_t M, int64_t I,
					       uint16_t *out, void *stream, struct ctq_error *err)
{
	if (M * I <= 0)
		return CTQ_OK;
	silu_mul_kernel<<<blocks(M * I, 256), 256, 0, (cudaStream_t)stream>>>(gu, M, I, out);
	return CTQ_LAUNCH(err);
}

extern "C" enum ctq_status ctq_rmsnorm_quant_launch(const uint16_t *x, int64_t M, const float *w,
						    int64_t H, float eps, int8_t *q, float *s,
						    void *stream, struct ctq_error *err)
{
	if (M <= 0)
		return CTQ_OK;
	/* the block size of ctq_rmsnorm_launch: the same sum of squares */
	int threads = H >= 1024 ? 1024 : H >= 256 ? 256 : 128;
	rmsnorm_quant_kernel<<<(unsigned)M, threads, 0, (cudaStream_t)stream>>>(x, w, H, eps, q, s);
	return CTQ_LAUNCH(err);
}

extern "C" enum ctq_status ctq_silu_mul_quant_launch(const uint16_t *gu, int64_t M, int64_t I,
						     int8_t *q, float *s, void *stream,
						     struct ctq_error *err)
{
	if (M <= 0)
		return CTQ_OK;
	silu_mul_quant_kernel<<<(unsigned)M, 256, 0, (cudaStream_t)stream>>>(gu, I, q, s);
	return CTQ_LAUNCH(err);
}
