/* ctq W8A8 for small M (decode): a weight-streaming kernel. One warp per
 * output channel n reads its int8 weight row once with 16-byte loads (the
 * whole matrix crosses HBM exactly once), multiplies it against the M <= 16
 * quantized token rows (L1/L2 resident) with dp4a, reduces across the warp,
 * and applies the epilogue of core/numerics.h. Bit-identical to the tiled
 * kernel and the reference: integer sums are exact in any order. */
#include "core/dtype.h"
#include "core/numerics.h"
#include "kernels/cuda_check.h"
#include "kernels/kernels.h"
#include "backend/backend.h"
#include "kernels/pdl.cuh"

#define GEMV_MAX_M 16
#define GEMV_WARPS 8
#define GEMV_U 4

/* a weight row is read once: stream it past L1 (ld.global.nc.L1::no_allocate) */
__device__ __forceinline__ int4 ld_stream(const int8_t *p)
{
	int4 v;
	asm volatile("ld.global.nc.L1::no_allocate.v4.s32 {%0,%1,%2,%3}, [%4];\n"
		     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
		     : "l"(p));
	return v;
}

template <int MT>
__global__ void __launch_bounds__(GEMV_WARPS * 32)
gemv_w8a8_kernel(const int8_t *__restrict__ q, const int8_t *__restrict__ w,
		 const float *__restrict__ s_a, const float *__restrict__ s_w,
		 const float *__restrict__ bias, int M, int64_t N, int64_t K,
		 int32_t *__restrict__ acc_out, uint16_t *__restrict__ y, unsigned defects, bool vec)
{
	const int lane = threadIdx.x & 31;
	const int64_t n = (int64_t)blockIdx.x * GEMV_WARPS + (threadIdx.x >> 5);
	if (n >= N)
		return;
	int32_t acc[MT];
#pragma unroll
	for (int m = 0; m < MT; m++)
		acc[m] = 0;
	const int8_t *wr = w + n * K;
	if (vec) {
		/* GEMV_U weight loads per lane in flight before any is used: the
		 * bytes in flight per SM, not the warps, bound a weight stream
		 * when N is small (N = 2560: about 19 warps per SM). The first
		 * GEMV_U are issued before pdl_wait: launched with PDL
		 * (kernels/pdl.cuh) they load while q's producer still runs (the
		 * weights are constant); q and s_a are read only after it. */
		int4 wv[GEMV_U];
#pragma unroll
		for (int u = 0; u < GEMV_U; u++) {
			const int64_t k = (int64_t)lane * 16 + (int64_t)u * 32 * 16;
			if (k < K)
				wv[u] = ld_stream(wr + k);
		}
		pdl_wait();
		for (int64_t k0 = (int64_t)lane * 16; k0 < K; k0 += 32 * 16 * GEMV_U) {
			if (k0 != (int64_t)lane * 16) {
#pragma unroll
				for (int u = 0; u < GEMV_U; u++) {
					const int64_t k = k0 + (int64_t)u * 32 * 16;
					if (k < K)
						wv[u] = ld_stream(wr + k);
				}
			}
#pragma unroll
			for (int u = 0; u < GEMV_U; u++) {
				const int64_t k = k0 + (int64_t)u * 32 * 16;
				if (k >= K)
					break;
#pragma unroll
				for (int m = 0; m < MT; m++) {
					if (m >= M)
						break;
					const int4 qv = __ldg((const int4 *)(q + (int64_t)m * K + k));
					int a = acc[m];
					a = __dp4a(qv.x, wv[u].x, a);
					a = __dp4a(qv.y, wv[u].y, a);
					a = __dp4a(qv.z, wv[u].z, a);
					a = __dp4a(qv.w, wv[u].w, a);
					acc[m] = a;
				}
			}
		}
	} else {
		pdl_wait();
		for (int64_t k = lane; k < K; k += 32) {
			const int wk = wr[k];
#pragma unroll
			for (int m = 0; m < MT; m++)
				if (m < M)
					acc[m] += (int32_t)q[(int64_t)m * K + k] * wk;
		}
	}
#pragma unroll
	for (int m = 0; m < MT; m++)
		for (int o = 16; o > 0; o >>= 1)
			acc[m] += __shfl_xor_sync(0xffffffffu, acc[m], o);
	if (lane != 0)
		return;
	for (int m = 0; m < M && m < MT; m++) {
		if (acc_out) {
			acc_out[(int64_t)m * N + n] = acc[m];
			continue;
		}
		const int64_t ns = ctq_defect_scale_col(defects, n, N);
		uint16_t v = ctq_w8a8_epilogue(acc[m], s_a[m], s_w[ns], bias ? bias[n] : 0.0f);
		y[(int64_t)m * N + n] = ctq_defect_output(defects, m, n, M, N, v);
	}
}

extern "C" bool ctq_gemv_w8a8_fits(int64_t M, unsigned defects)
{
	/* The transposed-weight defect is only modelled by the tiled kernel. */
	return M >= 1 && M <= GEMV_MAX_M && !(defects & CTQ_DEFECT_TRANSPOSED_W);
}

extern "C" enum ctq_status ctq_gemv_w8a8_launch(const int8_t *q, const int8_t *w,
						const float *s_a, const float *s_w,
						const float *bias, int64_t M, int64_t N, int64_t K,
						int32_t *acc, uint16_t *y, unsigned defects,
						void *stream, struct ctq_error *err)
{
	const bool vec = K % 16 == 0 && ((uintptr_t)q % 16) == 0 && ((uintptr_t)w % 16) == 0;
	const unsigned blocks = (unsigned)((N + GEMV_WARPS - 1) / GEMV_WARPS);
	cudaStream_t s = (cudaStream_t)stream;
	const int m = (int)M;
	auto k = M <= 1 ? gemv_w8a8_kernel<1> : M <= 4 ? gemv_w8a8_kernel<4> : M <= 8 ? gemv_w8a8_kernel<8>
										   : gemv_w8a8_kernel<16>;
	return CTQ_CUDA(ctq_launch_pdl(k, dim3(blocks), dim3(GEMV_WARPS * 32), 0, s, q, w, s_a, s_w, bias, m,
				       N, K, acc, y, defects, vec),
			err);
}
