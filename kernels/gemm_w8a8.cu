/* ctq W8A8 GEMM, first version: a tiled int8 GEMM on the dp4a path with the
 * epilogue of core/numerics.h fused (per-token scale, per-channel scale, bias,
 * BF16 rounding, each step rounded separately), or the raw int32
 * accumulators for bit-exact checks. Correct for every M, N, K (edges are
 * zero-filled in shared memory). ctq_gemm_w8a8_launch dispatches
 * (ctq_gemm_w8a8_path; the path names are backend/paths.h's): by the
 * compute capability dispatch follows (kernels/arch.h), 9.0 to the wgmma
 * kernel (sm90-wgmma, kernels/gemm_w8a8_sm90.cu), 8.0 and newer otherwise
 * to the mma.sync kernel (sm80-mma, kernels/gemm_w8a8_sm80.cu), each for K
 * % 16 == 0 and aligned operands; decode-sized M to the weight-streaming
 * GEMV (gemv, kernels/gemv_w8a8.cu); the rest here (dp4a).
 *
 * Tiles: 64 (M) × 64 (N) × 64 (K) bytes, 256 threads, 4×4 outputs per thread.
 * Shared rows are padded to 68 bytes so the 32-bit reads of one warp spread
 * over banks. */
#include <stdlib.h>

#include "core/dtype.h"
#include "core/numerics.h"
#include "kernels/cuda_check.h"
#include "kernels/gemm_sm80.h"
#include "kernels/gemm_sm90.h"
#include "kernels/kernels.h"
#include "backend/backend.h"
#include "backend/knobs.h"
#include "backend/paths.h"

#define BM 64
#define BN 64
#define BK 64
#define ROW (BK + 4)

__device__ __forceinline__ void load_tile(int8_t (*dst)[ROW], const int8_t *__restrict__ src,
					  int64_t rows, int64_t K, int64_t r0, int64_t k0,
					  bool vec, bool transposed, int64_t ld_t)
{
	const int t = threadIdx.x;
	const int r = t >> 2, c = (t & 3) * 16;
	const int64_t gr = r0 + r, gk = k0 + c;
	int *d = (int *)&dst[r][c];
	if (!transposed && vec && gr < rows && gk + 16 <= K) {
		int4 v = *(const int4 *)(src + gr * K + gk);
		d[0] = v.x;
		d[1] = v.y;
		d[2] = v.z;
		d[3] = v.w;
		return;
	}
	for (int i = 0; i < 16; i++) {
		int8_t v = 0;
		if (gr < rows && gk + i < K)
			v = transposed ? src[(gk + i) * ld_t + gr] : src[gr * K + gk + i];
		dst[r][c + i] = v;
	}
}

__global__ void __launch_bounds__(256)
gemm_w8a8_kernel(const int8_t *__restrict__ q, const int8_t *__restrict__ w,
		 const float *__restrict__ s_a, const float *__restrict__ s_w,
		 const float *__restrict__ bias, int64_t M, int64_t N, int64_t K,
		 int32_t *__restrict__ acc_out, uint16_t *__restrict__ y, unsigned defects, bool vec)
{
	__shared__ __align__(16) int8_t As[BM][ROW];
	__shared__ __align__(16) int8_t Bs[BN][ROW];
	const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
	const int64_t m0 = (int64_t)blockIdx.y * BM, n0 = (int64_t)blockIdx.x * BN;
	const bool transposed = defects & CTQ_DEFECT_TRANSPOSED_W;
	int32_t c[4][4];
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 4; j++)
			c[i][j] = 0;
	for (int64_t k0 = 0; k0 < K; k0 += BK) {
		load_tile(As, q, M, K, m0, k0, vec, false, 0);
		load_tile(Bs, w, N, K, n0, k0, vec, transposed, N);
		__syncthreads();
#pragma unroll
		for (int kk = 0; kk < BK; kk += 4) {
			int a[4], b[4];
#pragma unroll
			for (int i = 0; i < 4; i++) {
				a[i] = *(const int *)&As[ty * 4 + i][kk];
				b[i] = *(const int *)&Bs[tx * 4 + i][kk];
			}
#pragma unroll
			for (int i = 0; i < 4; i++)
#pragma unroll
				for (int j = 0; j < 4; j++)
					c[i][j] = __dp4a(a[i], b[j], c[i][j]);
		}
		__syncthreads();
	}
	for (int i = 0; i < 4; i++) {
		const int64_t m = m0 + ty * 4 + i;
		if (m >= M)
			continue;
		for (int j = 0; j < 4; j++) {
			const int64_t n = n0 + tx * 4 + j;
			if (n >= N)
				continue;
			if (acc_out) {
				acc_out[m * N + n] = c[i][j];
				continue;
			}
			const int64_t ns = ctq_defect_scale_col(defects, n, N);
			uint16_t v = ctq_w8a8_epilogue(c[i][j], s_a[m], s_w[ns], bias ? bias[n] : 0.0f);
			y[m * N + n] = ctq_defect_output(defects, m, n, M, N, v);
		}
	}
}

__global__ void w8a8_epilogue_kernel(const int32_t *__restrict__ acc, const float *__restrict__ s_a,
				     const float *__restrict__ s_w, const float *__restrict__ bias,
				     int64_t M, int64_t N, uint16_t *__restrict__ y, unsigned defects)
{
	const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= M * N)
		return;
	const int64_t m = i / N, n = i % N;
	const int64_t ns = ctq_defect_scale_col(defects, n, N);
	uint16_t v = ctq_w8a8_epilogue(acc[i], s_a[m], s_w[ns], bias ? bias[n] : 0.0f);
	y[i] = ctq_defect_output(defects, m, n, M, N, v);
}

__global__ void bias_bf16_kernel(uint16_t *__restrict__ y, const float *__restrict__ bias,
				 int64_t M, int64_t N)
{
	const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= M * N)
		return;
	y[i] = ctq_f32_to_bf16(__fadd_rn(ctq_bf16_to_f32(y[i]), bias[i % N]));
}

/* Where a tensor-core kernel takes the operands, the GEMV takes only M =
 * 1; CTQ_GEMV_MAX_M overrides it (backend/knobs.h). Measured on the H200
 * (bench gemm --paths, Qwen3-4B shapes): the wgmma kernel wins from M =
 * 2, and so does the sm80 kernel's 16-row tile (M = 16: 7.5-15.8 us
 * against the GEMV's 26.7-62.8; M = 1: the GEMV 4.7-14.2 against
 * 6.9-15.3; docs/kernels.md). */
static int64_t gemv_max_m(void)
{
	return ctq_knobs()->gemv_max_m;
}

extern "C" enum ctq_gemm_path ctq_gemm_w8a8_path(const int8_t *q, const int8_t *w, int64_t M,
						 int64_t N, int64_t K, unsigned defects)
{
	enum ctq_gemm_path tc = CTQ_GEMM_PATH_DP4A;
	if (ctq_gemm_sm90_fits(q, w, M, N, K, defects))
		tc = CTQ_GEMM_PATH_SM90_WGMMA;
	else if (ctq_gemm_sm80_available() && ctq_gemm_sm80_fits(q, w, M, N, K, defects))
		tc = CTQ_GEMM_PATH_SM80_MMA;
	if (ctq_gemv_w8a8_fits(M, defects) && (tc == CTQ_GEMM_PATH_DP4A || M <= gemv_max_m()))
		return CTQ_GEMM_PATH_GEMV;
	return tc;
}

static enum ctq_status dp4a_launch(const int8_t *q, const int8_t *w, const float *s_a,
				   const float *s_w, const float *bias, int64_t M, int64_t N,
				   int64_t K, int32_t *acc, uint16_t *y, unsigned defects, void *stream,
				   struct ctq_error *err)
{
	if ((M + BM - 1) / BM > 65535)
		return ctq_error_set(err, CTQ_ERR_USAGE, "M", "is %lld; at most %d rows",
				     (long long)M, 65535 * BM);
	const bool vec = K % 16 == 0 && ((uintptr_t)q % 16) == 0 && ((uintptr_t)w % 16) == 0;
	dim3 grid((unsigned)((N + BN - 1) / BN), (unsigned)((M + BM - 1) / BM));
	gemm_w8a8_kernel<<<grid, 256, 0, (cudaStream_t)stream>>>(q, w, s_a, s_w, bias, M, N, K, acc,
								  y, defects, vec);
	return CTQ_LAUNCH(err);
}

extern "C" enum ctq_status ctq_gemm_w8a8_launch_on(enum ctq_gemm_path path, const int8_t *q,
						   const int8_t *w, const float *s_a,
						   const float *s_w, const float *bias, int64_t M,
						   int64_t N, int64_t K, int32_t *acc, uint16_t *y,
						   unsigned defects, void *stream,
						   struct ctq_error *err)
{
	if (K > CTQ_K_MAX)
		return ctq_error_set(err, CTQ_ERR_USAGE, "K",
				     "is %lld; int32 accumulation is exact only for K <= %ld",
				     (long long)K, CTQ_K_MAX);
	if (M <= 0 || N <= 0)
		return CTQ_OK;
	enum ctq_status st = ctq_knobs_check(err);
	if (st)
		return st;
	bool fits = true;
	switch (path) {
	case CTQ_GEMM_PATH_SM90_WGMMA: fits = ctq_gemm_sm90_fits(q, w, M, N, K, defects); break;
	case CTQ_GEMM_PATH_SM80_MMA: fits = ctq_gemm_sm80_fits(q, w, M, N, K, defects); break;
	case CTQ_GEMM_PATH_GEMV: fits = ctq_gemv_w8a8_fits(M, defects); break;
	case CTQ_GEMM_PATH_DP4A: break;
	default:
		return ctq_error_set(err, CTQ_ERR_USAGE, "path", "is %d; not a W8A8 GEMM path", (int)path);
	}
	if (!fits)
		return ctq_error_set(err, CTQ_ERR_USAGE, ctq_gemm_path_name(path),
				     "does not take M=%lld N=%lld K=%lld on this GPU", (long long)M,
				     (long long)N, (long long)K);
	ctq_kpath_note(CTQ_KOP_GEMM_W8A8, (int)path);
	switch (path) {
	case CTQ_GEMM_PATH_SM90_WGMMA:
		return ctq_gemm_sm90_launch(q, w, s_a, s_w, bias, M, N, K, acc, y, -1, stream, err);
	case CTQ_GEMM_PATH_SM80_MMA:
		return ctq_gemm_sm80_launch(q, w, s_a, s_w, bias, M, N, K, acc, y, -1, stream, err);
	case CTQ_GEMM_PATH_GEMV:
		return ctq_gemv_w8a8_launch(q, w, s_a, s_w, bias, M, N, K, acc, y, defects, stream, err);
	default:
		return dp4a_launch(q, w, s_a, s_w, bias, M, N, K, acc, y, defects, stream, err);
	}
}

extern "C" enum ctq_status ctq_gemm_w8a8_launch(const int8_t *q, const int8_t *w,
						const float *s_a, const float *s_w,
						const float *bias, int64_t M, int64_t N, int64_t K,
						int32_t *acc, uint16_t *y, unsigned defects,
						void *stream, struct ctq_error *err)
{
	if (M <= 0 || N <= 0 || K > CTQ_K_MAX)
		return ctq_gemm_w8a8_launch_on(CTQ_GEMM_PATH_DP4A, q, w, s_a, s_w, bias, M, N, K, acc, y,
					       defects, stream, err);
	enum ctq_status st = ctq_knobs_check(err);
	if (st)
		return st;
	return ctq_gemm_w8a8_launch_on(ctq_gemm_w8a8_path(q, w, M, N, K, defects), q, w, s_a, s_w, bias,
				       M, N, K, acc, y, defects, stream, err);
}

extern "C" enum ctq_status ctq_w8a8_epilogue_launch(const int32_t *acc, const float *s_a,
						    const float *s_w, const float *bias, int64_t M,
						    int64_t N, uint16_t *y, unsigned defects,
						    void *stream, struct ctq_error *err)
{
	const int64_t n = M * N;
	if (n <= 0)
		return CTQ_OK;
	w8a8_epilogue_kernel<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)stream>>>(
		acc, s_a, s_w, bias, M, N, y, defects);
	return CTQ_LAUNCH(err);
}

extern "C" enum ctq_status ctq_bias_bf16_launch(uint16_t *y, const float *bias, int64_t M,
						int64_t N, void *stream, struct ctq_error *err)
{
	const int64_t n = M * N;
	if (n <= 0 || !bias)
		return CTQ_OK;
	bias_bf16_kernel<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)stream>>>(y, bias, M, N);
	return CTQ_LAUNCH(err);
}
