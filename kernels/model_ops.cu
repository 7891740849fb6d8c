/* ctq CUDA model ops on BF16 activations: embedding gather, RMSNorm (also per
 * head, Qwen3's q/k norm), residual add, RoPE, SiLU·mul, attention over
 * a paged-by-slot KV cache, and the greedy pick of each logits row. Every kernel computes in f32 and rounds its
 * output to BF16 once. Shapes as in backend/backend.h. */
#include "core/dtype.h"
#include "core/numerics.h"
#include "kernels/cuda_check.h"
#include "kernels/kernels.h"

#include <math.h>
#include <stdlib.h>

#include "kernels/device.cuh"
#include "kernels/pdl.cuh"

__global__ void embed_kernel(const uint16_t *table, const int32_t *ids, int64_t H, uint16_t *out)
{
	const int64_t row = blockIdx.x;
	const uint16_t *src = table + (int64_t)ids[row] * H;
	for (int64_t k = threadIdx.x; k < H; k += blockDim.x)
		out[row * H + k] = src[k];
}

/* HF RMSNorm order: normalise in f32, round to BF16, then times the weight. */
/* The residual add: a + b in f32, rounded to BF16 once. */
__device__ __forceinline__ uint16_t add_bits(float a, float b)
{
	return ctq_f32_to_bf16(__fadd_rn(a, b));
}

__global__ void rmsnorm_kernel(uint16_t *x, int64_t ld, int64_t inner, const float *w,
			       int64_t H, float eps, uint16_t *y, int64_t ldy, const uint16_t *res)
{
	pdl_trigger(); /* the linear after it may start (kernels/pdl.cuh) */
	pdl_wait();
	__shared__ float red[32];
	const int64_t r = blockIdx.x;
	const int64_t off = (r / inner) * ld + (r % inner) * H;
	const int64_t offy = (r / inner) * ldy + (r % inner) * H;
	float ss = 0.0f;
	for (int64_t k = threadIdx.x; k < H; k += blockDim.x) {
		/* with res (plain rows, ld = H): add_kernel's sum first, stored
		 * back; y may be res (read here, written after the barrier) */
		if (res)
			x[off + k] = add_bits(ld_bf16(x + off + k), ld_bf16(res + off + k));
		float v = ld_bf16(x + off + k);
		ss = __fmaf_rn(v, v, ss); /* rmsnorm_quant_*kernel: the same steps */
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
		x[i] = add_bits(ld_bf16(x + i), ld_bf16(y + i));
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
	pdl_trigger();
	pdl_wait();
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
 * would write, computed the same way, never stored; their per-row absolute
 * maximum gives the scale and they are quantized as ctq_quantize_launch
 * would (core/numerics.h), into q (M, K) and s (M). Each thread loads its
 * inputs before using any, computes each BF16 value once and keeps its
 * bits in registers for the amax and the quantization (the *_regs_kernel
 * forms); rows past their register budget (or unaligned / K % 8 != 0 for
 * SiLU·mul) take the forms that read the row again for each pass.
 *
 * The absolute maximum is an integer max of the sign-cleared BF16 bit
 * patterns: |x| orders like (bits & 0x7fff), NaN patterns above Inf (the
 * sticky-NaN max of ctq_amax_update; kernels/device.cuh amax_bits). */
__device__ __forceinline__ uint32_t block_amax_bits(uint32_t a, uint32_t *red)
{
	a = __reduce_max_sync(0xffffffffu, a);
	const int w = threadIdx.x >> 5, lane = threadIdx.x & 31, nw = (blockDim.x + 31) >> 5;
	__syncthreads();
	if (lane == 0)
		red[w] = a;
	__syncthreads();
	a = 0;
	for (int i = 0; i < nw; i++)
		a = max(a, red[i]);
	return a;
}

/* rmsnorm_kernel's output for x = xv, weight wk, 1/rms inv: BF16 bits. */
__device__ __forceinline__ uint16_t rms_bits(float xv, float wk, float inv)
{
	const float n = ctq_bf16_to_f32(ctq_f32_to_bf16(xv * inv));
	return ctq_f32_to_bf16(n * wk);
}

__device__ __forceinline__ float rms_value(const uint16_t *xr, const float *w, int64_t k, float inv)
{
	return ctq_bf16_to_f32(rms_bits(ld_bf16(xr + k), w[k], inv));
}

/* The sum of squares in rmsnorm_kernel's order: thread t adds x[k]^2 for
 * k = t, t + blockDim.x, ... with one rounding per step (__fmaf_rn, what
 * rmsnorm_kernel's ss += v * v is), then block_sum; NPT = elements per
 * thread, the row held in registers. The launch uses rmsnorm's block size,
 * so the sum, 1/rms and every BF16 value are rmsnorm_kernel's. */
template <int NPT, int MAXT>
__global__ void __launch_bounds__(MAXT) /* MAXT: ctq_rms_threads' 256 or 1024 */
rmsnorm_quant_regs_kernel(uint16_t *x, const uint16_t *res, const float *w, int64_t H, float eps,
			  int8_t *q, float *s)
{
	pdl_trigger(); /* the linear after it may start (kernels/pdl.cuh) */
	pdl_wait();
	__shared__ float red[32];
	__shared__ uint32_t red_a[32];
	const int64_t r = blockIdx.x;
	uint16_t *xr = x + r * H; /* (H) bf16 */
	const int T = (int)blockDim.x, t = (int)threadIdx.x;
	float xv[NPT], wv[NPT];
#pragma unroll
	for (int j = 0; j < NPT; j++)
		if (t + j * T < H) {
			xv[j] = ld_bf16(xr + t + j * T);
			if (res) { /* add_kernel's sum, stored back as the residual stream */
				const uint16_t v = add_bits(xv[j], ld_bf16(res + r * H + t + j * T));
				xr[t + j * T] = v;
				xv[j] = ctq_bf16_to_f32(v);
			}
			wv[j] = w[t + j * T];
		}
	float ss = 0.0f;
#pragma unroll
	for (int j = 0; j < NPT; j++)
		if (t + j * T < H)
			ss = __fmaf_rn(xv[j], xv[j], ss);
	ss = block_sum(ss, red);
	const float inv = rsqrtf(ss / (float)H + eps);
	uint16_t vb[NPT];
	uint32_t a = 0;
#pragma unroll
	for (int j = 0; j < NPT; j++)
		if (t + j * T < H) {
			vb[j] = rms_bits(xv[j], wv[j], inv);
			a = max(a, (uint32_t)(vb[j] & 0x7fffu));
		}
	a = block_amax_bits(a, red_a);
	const float sc = scale_of_bits(a), sinv = ctq_quantize_inv(sc);
	if (t == 0)
		s[r] = sc;
#pragma unroll
	for (int j = 0; j < NPT; j++)
		if (t + j * T < H)
			q[r * H + t + j * T] = ctq_quantize_fast(ctq_bf16_to_f32(vb[j]), sc, sinv);
}

/* Any H: the row read again (L1/L2) for each pass, the same sums. */
__global__ void rmsnorm_quant_kernel(uint16_t *x, const uint16_t *res, const float *w, int64_t H,
				     float eps, int8_t *q, float *s)
{
	pdl_trigger();
	pdl_wait();
	__shared__ float red[32];
	__shared__ uint32_t red_a[32];
	const int64_t r = blockIdx.x;
	uint16_t *xr = x + r * H;
	float ss = 0.0f;
	for (int64_t k = threadIdx.x; k < H; k += blockDim.x) {
		if (res) /* each thread rereads only the elements it wrote */
			xr[k] = add_bits(ld_bf16(xr + k), ld_bf16(res + r * H + k));
		float v = ld_bf16(xr + k);
		ss = __fmaf_rn(v, v, ss);
	}
	ss = block_sum(ss, red);
	const float inv = rsqrtf(ss / (float)H + eps);
	uint32_t a = 0;
	for (int64_t k = threadIdx.x; k < H; k += blockDim.x)
		a = max(a, (uint32_t)(rms_bits(ld_bf16(xr + k), w[k], inv) & 0x7fffu));
	a = block_amax_bits(a, red_a);
	const float sc = scale_of_bits(a), sinv = ctq_quantize_inv(sc);
	if (threadIdx.x == 0)
		s[r] = sc;
	for (int64_t k = threadIdx.x; k < H; k += blockDim.x)
		q[r * H + k] = ctq_quantize_fast(rms_value(xr, w, k, inv), sc, sinv);
}

/* silu_mul_kernel's output for gate g, up u: BF16 bits (HF: act_fn(gate)
 * is a BF16 tensor, then times up; the division is kept as it is). */
__device__ __forceinline__ uint16_t silu_bits(float g, float u)
{
	const float sg = ctq_bf16_to_f32(ctq_f32_to_bf16(g / (1.0f + __expf(-g))));
	return ctq_f32_to_bf16(sg * u);
}

/* Two (gate, up) pairs packed as bf16 words to two output BF16 patterns. */
__device__ __forceinline__ uint32_t silu_pair(uint32_t g2, uint32_t u2)
{
	const uint16_t lo = silu_bits(__uint_as_float(g2 << 16), __uint_as_float(u2 << 16));
	const uint16_t hi = silu_bits(__uint_as_float(g2 & 0xffff0000u),
				      __uint_as_float(u2 & 0xffff0000u));
	return (uint32_t)lo | ((uint32_t)hi << 16);
}

/* I % 8 == 0, 16-byte aligned gu, 8-byte aligned q: one row per block,
 * thread t holding the 8-wide groups g = t, t + blockDim.x, ... (C at
 * most): gate and up loaded 16 bytes at a time, the 8 outputs kept as
 * four words of BF16 pairs, q stored 8 bytes at a time. */
template <int C>
__global__ void __launch_bounds__(1024)
silu_mul_quant_regs_kernel(const uint16_t *gu, int64_t I, int8_t *q, float *s)
{
	pdl_trigger();
	pdl_wait();
	__shared__ uint32_t red_a[32];
	const int64_t r = blockIdx.x;
	const int groups = (int)(I / 8), T = (int)blockDim.x, t = (int)threadIdx.x;
	const uint4 *gr = (const uint4 *)(gu + r * 2 * I); /* (groups) gate, then (groups) up */
	uint2 *qr = (uint2 *)(q + r * I);                  /* (groups) */
	uint4 gv[C], uv[C];
#pragma unroll
	for (int c = 0; c < C; c++)
		if (t + c * T < groups) {
			gv[c] = __ldg(gr + t + c * T);
			uv[c] = __ldg(gr + groups + t + c * T);
		}
	uint32_t a = 0;
#pragma unroll
	for (int c = 0; c < C; c++)
		if (t + c * T < groups) {
			gv[c].x = silu_pair(gv[c].x, uv[c].x);
			gv[c].y = silu_pair(gv[c].y, uv[c].y);
			gv[c].z = silu_pair(gv[c].z, uv[c].z);
			gv[c].w = silu_pair(gv[c].w, uv[c].w);
			a = __vmaxu2(a, gv[c].x & 0x7fff7fffu);
			a = __vmaxu2(a, gv[c].y & 0x7fff7fffu);
			a = __vmaxu2(a, gv[c].z & 0x7fff7fffu);
			a = __vmaxu2(a, gv[c].w & 0x7fff7fffu);
		}
	a = block_amax_bits(max(a & 0xffffu, a >> 16), red_a);
	const float sc = scale_of_bits(a), sinv = ctq_quantize_inv(sc);
	if (t == 0)
		s[r] = sc;
#pragma unroll
	for (int c = 0; c < C; c++)
		if (t + c * T < groups) {
			qr[t + c * T] = quant_group(gv[c], sc, sinv);
		}
}

/* Any I and alignment: the values computed once per pass. */
__global__ void silu_mul_quant_kernel(const uint16_t *gu, int64_t I, int8_t *q, float *s)
{
	pdl_trigger();
	pdl_wait();
	__shared__ uint32_t red_a[32];
	const int64_t r = blockIdx.x;
	const uint16_t *gr = gu + r * 2 * I;
	uint32_t a = 0;
	for (int64_t c = threadIdx.x; c < I; c += blockDim.x)
		a = max(a, (uint32_t)(silu_bits(ld_bf16(gr + c), ld_bf16(gr + I + c)) & 0x7fffu));
	a = block_amax_bits(a, red_a);
	const float sc = scale_of_bits(a), sinv = ctq_quantize_inv(sc);
	if (threadIdx.x == 0)
		s[r] = sc;
	for (int64_t c = threadIdx.x; c < I; c += blockDim.x)
		q[r * I + c] = ctq_quantize_fast(
			ctq_bf16_to_f32(silu_bits(ld_bf16(gr + c), ld_bf16(gr + I + c))), sc, sinv);
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
	const int threads = ctq_rms_threads(rows, H);
	/* x is only written with a residual (none here) */
	return CTQ_CUDA(CTQ_PDL_LAUNCH(rmsnorm_kernel, (unsigned)rows, threads, 0, stream, (uint16_t *)x,
				      ld, inner, w, H, eps, y, ldy, nullptr),
			err);
}

extern "C" enum ctq_status ctq_add_rmsnorm_launch(uint16_t *x, const uint16_t *res, int64_t M,
						  const float *w, int64_t H, float eps, uint16_t *y,
						  void *stream, struct ctq_error *err)
{
	if (M <= 0)
		return CTQ_OK;
	const int threads = ctq_rms_threads(M, H);
	return CTQ_CUDA(CTQ_PDL_LAUNCH(rmsnorm_kernel, (unsigned)M, threads, 0, stream, x, H, 1, w, H,
				      eps, y, H, res),
			err);
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
	return CTQ_CUDA(CTQ_PDL_LAUNCH(silu_mul_kernel, blocks(M * I, 256), 256, 0, stream, gu, M, I, out),
			err);
}

/* rmsnorm_quant with an optional residual added into x first */
static enum ctq_status rmsnorm_quant_any(uint16_t *x, const uint16_t *res, int64_t M, const float *w,
					 int64_t H, float eps, int8_t *q, float *s, void *stream,
					 struct ctq_error *err)
{
	if (M <= 0)
		return CTQ_OK;
	cudaStream_t st = (cudaStream_t)stream;
	/* the block size of ctq_rmsnorm_launch: the same sum of squares */
	const int threads = ctq_rms_threads(M, H);
	const int64_t npt = (H + threads - 1) / threads;
	const unsigned grid = (unsigned)M;
	cudaError_t e;
#define RQ(k) CTQ_PDL_LAUNCH(k, grid, threads, 0, st, x, res, w, H, eps, q, s)
	if (threads == 1024 && npt <= 2)
		e = RQ((rmsnorm_quant_regs_kernel<2, 1024>));
	else if (threads == 1024 && npt <= 4)
		e = RQ((rmsnorm_quant_regs_kernel<4, 1024>));
	else if (threads == 1024 && npt <= 8)
		e = RQ((rmsnorm_quant_regs_kernel<8, 1024>));
	else if (threads == 1024)
		e = RQ(rmsnorm_quant_kernel);
	else if (npt <= 2)
		e = RQ((rmsnorm_quant_regs_kernel<2, 256>));
	else if (npt <= 4)
		e = RQ((rmsnorm_quant_regs_kernel<4, 256>));
	else if (npt <= 8)
		e = RQ((rmsnorm_quant_regs_kernel<8, 256>));
	else if (npt <= 12)
		e = RQ((rmsnorm_quant_regs_kernel<12, 256>));
	else if (npt <= 16)
		e = RQ((rmsnorm_quant_regs_kernel<16, 256>));
	else
		e = RQ(rmsnorm_quant_kernel);
#undef RQ
	return CTQ_CUDA(e, err);
}

extern "C" enum ctq_status ctq_rmsnorm_quant_launch(const uint16_t *x, int64_t M, const float *w,
						    int64_t H, float eps, int8_t *q, float *s,
						    void *stream, struct ctq_error *err)
{
	/* x is only written with a residual (none here) */
	return rmsnorm_quant_any((uint16_t *)x, NULL, M, w, H, eps, q, s, stream, err);
}

extern "C" enum ctq_status ctq_add_rmsnorm_quant_launch(uint16_t *x, const uint16_t *res, int64_t M,
							const float *w, int64_t H, float eps, int8_t *q,
							float *s, void *stream, struct ctq_error *err)
{
	return rmsnorm_quant_any(x, res, M, w, H, eps, q, s, stream, err);
}

extern "C" enum ctq_status ctq_silu_mul_quant_launch(const uint16_t *gu, int64_t M, int64_t I,
						     int8_t *q, float *s, void *stream,
						     struct ctq_error *err)
{
	if (M <= 0)
		return CTQ_OK;
	cudaStream_t st = (cudaStream_t)stream;
	const unsigned grid = (unsigned)M;
	const int64_t groups = I / 8;
	cudaError_t e;
	if (I > 0 && I % 8 == 0 && (uintptr_t)gu % 16 == 0 && (uintptr_t)q % 8 == 0 &&
	    groups <= 4 * 1024) {
		/* up to 1024 threads, the fewest groups (1, 2 or 4) per thread */
		const int C = groups <= 1024 ? 1 : groups <= 2048 ? 2 : 4;
		const int threads = (int)((groups + C - 1) / C + 31) / 32 * 32;
		if (C == 1)
			e = CTQ_PDL_LAUNCH((silu_mul_quant_regs_kernel<1>), grid, threads, 0, st, gu, I, q, s);
		else if (C == 2)
			e = CTQ_PDL_LAUNCH((silu_mul_quant_regs_kernel<2>), grid, threads, 0, st, gu, I, q, s);
		else
			e = CTQ_PDL_LAUNCH((silu_mul_quant_regs_kernel<4>), grid, threads, 0, st, gu, I, q, s);
	} else {
		e = CTQ_PDL_LAUNCH(silu_mul_quant_kernel, grid, 256, 0, st, gu, I, q, s);
	}
	return CTQ_CUDA(e, err);
}

/* ---- greedy pick: the argmax of each logits row ------------------------------- */

/* (value, index) under the order of ctq_argmax's scan (model/runner.c:
 * best = 0; best = i where v[i] > v[best]): the largest value, the first
 * index on ties; a NaN is never picked, except at index 0, which no later
 * value replaces. So a NaN at 0 ranks above everything, one elsewhere below
 * everything (and below -inf, which the scan may pick). */
struct argmax_pair {
	float v;
	int rank; /* 2: NaN at 0, 1: a number, 0: NaN elsewhere */
	int64_t i;
};

__device__ __forceinline__ bool argmax_better(const argmax_pair &a, const argmax_pair &b)
{
	if (a.rank != b.rank)
		return a.rank > b.rank;
	if (a.rank == 1 && a.v != b.v)
		return a.v > b.v;
	return a.i < b.i;
}

__device__ __forceinline__ argmax_pair argmax_shfl(const argmax_pair &a, int off)
{
	argmax_pair o;
	o.v = __shfl_down_sync(0xffffffffu, a.v, off);
	o.rank = __shfl_down_sync(0xffffffffu, a.rank, off);
	o.i = __shfl_down_sync(0xffffffffu, a.i, off);
	return o;
}

/* One block per row of x (rows of N BF16 logits, ld = N). */
__global__ void rows_argmax_kernel(const uint16_t *x, int64_t N, int32_t *out)
{
	pdl_trigger();
	pdl_wait();
	__shared__ argmax_pair red[32];
	const uint16_t *row = x + (int64_t)blockIdx.x * N;
	argmax_pair best = {0.0f, -1, N};
	for (int64_t k = threadIdx.x; k < N; k += blockDim.x) {
		const float v = ctq_bf16_to_f32(row[k]);
		const argmax_pair c = {v, isnan(v) ? (k == 0 ? 2 : 0) : 1, k};
		if (best.rank < 0 || argmax_better(c, best))
			best = c;
	}
	for (int off = 16; off > 0; off >>= 1) {
		const argmax_pair o = argmax_shfl(best, off);
		if (o.rank >= 0 && (best.rank < 0 || argmax_better(o, best)))
			best = o;
	}
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	if (lane == 0)
		red[warp] = best;
	__syncthreads();
	if (warp == 0) {
		const int nw = (int)(blockDim.x + 31) / 32;
		best = lane < nw ? red[lane] : argmax_pair{0.0f, -1, N};
		for (int off = 16; off > 0; off >>= 1) {
			const argmax_pair o = argmax_shfl(best, off);
			if (o.rank >= 0 && (best.rank < 0 || argmax_better(o, best)))
				best = o;
		}
		if (lane == 0)
			out[blockIdx.x] = (int32_t)best.i;
	}
}

extern "C" enum ctq_status ctq_rows_argmax_launch(const uint16_t *x, int64_t N, int64_t n,
						  int32_t *out, void *stream, struct ctq_error *err)
{
	if (n <= 0)
		return CTQ_OK;
	return CTQ_CUDA(CTQ_PDL_LAUNCH(rows_argmax_kernel, (unsigned)n, 1024, 0, stream, x, N, out), err);
}
