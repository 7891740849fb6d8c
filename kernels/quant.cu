/* ctq per-token int8 quantization on the GPU: one block per row (token).
 * Two passes over the row — the absolute maximum (a sticky-NaN max,
 * core/numerics.h), then x / s rounded to nearest even and saturated. The
 * second pass reads the row from L1/L2. Bit-identical to
 * ctq_ref_quantize_bf16. */
#include "core/dtype.h"
#include "core/numerics.h"
#include "kernels/cuda_check.h"
#include "kernels/kernels.h"

#define QUANT_THREADS 256

__global__ void quantize_kernel(const uint16_t *__restrict__ x, int64_t K, int8_t *__restrict__ q,
				float *__restrict__ s)
{
	const int64_t row = blockIdx.x;
	const uint16_t *xr = x + row * K;
	int8_t *qr = q + row * K;
	__shared__ float warp_amax[QUANT_THREADS / 32];
	__shared__ float row_scale;

	float amax = 0.0f;
	for (int64_t k = threadIdx.x; k < K; k += blockDim.x)
		amax = ctq_amax_update(amax, ctq_bf16_to_f32(xr[k]));
	for (int off = 16; off > 0; off >>= 1)
		amax = ctq_amax_update(amax, __shfl_xor_sync(0xffffffffu, amax, off));
	if ((threadIdx.x & 31) == 0)
		warp_amax[threadIdx.x >> 5] = amax;
	__syncthreads();
	if (threadIdx.x == 0) {
		float a = 0.0f;
		for (int w = 0; w < (int)(blockDim.x >> 5); w++)
			a = ctq_amax_update(a, warp_amax[w]);
		float sc = a == 0.0f ? 0.0f : ctq_act_scale(a);
		row_scale = sc;
		s[row] = sc;
	}
	__syncthreads();
	const float sc = row_scale;
	for (int64_t k = threadIdx.x; k < K; k += blockDim.x)
		qr[k] = ctq_quantize(ctq_bf16_to_f32(xr[k]), sc);
}

extern "C" enum ctq_status ctq_quantize_launch(const uint16_t *x, int64_t M, int64_t K, int8_t *q,
					       float *s, void *stream, struct ctq_error *err)
{
	if (M <= 0)
		return CTQ_OK;
	if (M > 0x7fffffffLL)
		return ctq_error_set(err, CTQ_ERR_USAGE, "M", "is %lld; at most 2^31-1 rows",
				     (long long)M);
	quantize_kernel<<<(unsigned)M, QUANT_THREADS, 0, (cudaStream_t)stream>>>(x, K, q, s);
	return CTQ_LAUNCH(err);
}
