/* ctq BF16 linear for decode (M <= 4): a weight-streaming kernel for BF16
 * checkpoints and the lm_head, where cuBLAS reads the weights at 45-72% of
 * the H200's bandwidth. One warp per output channel n streams its BF16
 * weight row once with 16-byte loads (GEMVB_U per lane in flight, past
 * L1), multiplies it against the M token rows (L1/L2 resident) with f32
 * FMAs, reduces across the warp and rounds to BF16 once, like a GEMM with
 * f32 accumulation (the order of the sum differs from cuBLAS's). */
#include "core/dtype.h"
#include "kernels/cuda_check.h"
#include "kernels/kernels.h"
#include "kernels/pdl.cuh"

#define GEMVB_WARPS 8
#define GEMVB_U 4
#define GEMVB_MAX_M 4

__device__ __forceinline__ uint4 ldb_stream(const uint16_t *p)
{
	uint4 v;
	asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];\n"
		     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
		     : "l"(p));
	return v;
}

__device__ __forceinline__ float bf_lo(uint32_t w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float bf_hi(uint32_t w) { return __uint_as_float(w & 0xffff0000u); }

__device__ __forceinline__ float dot8(uint4 w, uint4 x, float a)
{
	a = fmaf(bf_lo(w.x), bf_lo(x.x), a);
	a = fmaf(bf_hi(w.x), bf_hi(x.x), a);
	a = fmaf(bf_lo(w.y), bf_lo(x.y), a);
	a = fmaf(bf_hi(w.y), bf_hi(x.y), a);
	a = fmaf(bf_lo(w.z), bf_lo(x.z), a);
	a = fmaf(bf_hi(w.z), bf_hi(x.z), a);
	a = fmaf(bf_lo(w.w), bf_lo(x.w), a);
	a = fmaf(bf_hi(w.w), bf_hi(x.w), a);
	return a;
}

template <int MT>
__global__ void __launch_bounds__(GEMVB_WARPS * 32)
gemv_bf16_kernel(const uint16_t *__restrict__ x, const uint16_t *__restrict__ w, int64_t N, int64_t K,
		 uint16_t *__restrict__ y)
{
	const int lane = threadIdx.x & 31;
	const int64_t n = (int64_t)blockIdx.x * GEMVB_WARPS + (threadIdx.x >> 5);
	if (n >= N)
		return;
	float acc[MT];
#pragma unroll
	for (int m = 0; m < MT; m++)
		acc[m] = 0.0f;
	const uint16_t *wr = w + n * K;
	/* the first GEMVB_U loads before pdl_wait: launched with PDL
	 * (kernels/pdl.cuh) they overlap x's producer; x only after it */
	uint4 wv[GEMVB_U];
#pragma unroll
	for (int u = 0; u < GEMVB_U; u++) {
		const int64_t k = (int64_t)lane * 8 + (int64_t)u * 32 * 8;
		if (k < K)
			wv[u] = ldb_stream(wr + k);
	}
	pdl_wait();
	for (int64_t k0 = (int64_t)lane * 8; k0 < K; k0 += 32 * 8 * GEMVB_U) {
		if (k0 != (int64_t)lane * 8) {
#pragma unroll
			for (int u = 0; u < GEMVB_U; u++) {
				const int64_t k = k0 + (int64_t)u * 32 * 8;
				if (k < K)
					wv[u] = ldb_stream(wr + k);
			}
		}
#pragma unroll
		for (int u = 0; u < GEMVB_U; u++) {
			const int64_t k = k0 + (int64_t)u * 32 * 8;
			if (k >= K)
				break;
#pragma unroll
			for (int m = 0; m < MT; m++)
				acc[m] = dot8(wv[u], __ldg((const uint4 *)(x + (int64_t)m * K + k)), acc[m]);
		}
	}
#pragma unroll
	for (int m = 0; m < MT; m++) {
		float a = acc[m];
		for (int o = 16; o > 0; o >>= 1)
			a += __shfl_xor_sync(0xffffffffu, a, o);
		if (lane == 0)
			y[(int64_t)m * N + n] = ctq_f32_to_bf16(a);
	}
}

extern "C" bool ctq_gemv_bf16_fits(const void *x, const void *w, int64_t M, int64_t K)
{
	return M >= 1 && M <= GEMVB_MAX_M && K % 8 == 0 && (uintptr_t)x % 16 == 0 && (uintptr_t)w % 16 == 0;
}

extern "C" enum ctq_status ctq_gemv_bf16_launch(const uint16_t *x, const uint16_t *w, int64_t M,
						int64_t N, int64_t K, uint16_t *y, void *stream,
						struct ctq_error *err)
{
	if (!ctq_gemv_bf16_fits(x, w, M, K))
		return ctq_error_set(err, CTQ_ERR_USAGE, "gemv_bf16",
				     "M %lld, K %lld: needs 1 <= M <= %d, K %% 8 == 0 and 16-byte aligned operands",
				     (long long)M, (long long)K, GEMVB_MAX_M);
	const unsigned blocks = (unsigned)((N + GEMVB_WARPS - 1) / GEMVB_WARPS);
	cudaStream_t s = (cudaStream_t)stream;
	auto k = M == 1 ? gemv_bf16_kernel<1> : M == 2 ? gemv_bf16_kernel<2> : M == 3 ? gemv_bf16_kernel<3>
										       : gemv_bf16_kernel<4>;
	return CTQ_CUDA(ctq_launch_pdl(k, dim3(blocks), dim3(GEMVB_WARPS * 32), 0, s, x, w, N, K, y), err);
}
