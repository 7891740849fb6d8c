/* CPU reference of the weight-only GEMM (see ref_wna16.h). */
#include "reference/ref_wna16.h"
#include "core/arena.h"
#include "core/numerics.h"
#include "reference/ref_threads.h"

#include <string.h>

void ctq_ref_wna16_dequant_row(const int32_t *w_packed, const float *scale,
			       const int32_t *zero_packed, int64_t N, int64_t K, int bits,
			       int64_t group_size, int64_t n, float *w)
{
	const int64_t G = group_size > 0 ? group_size : K;
	const int64_t n_groups = (K + G - 1) / G, words = ctq_pack_words(K, bits);
	const int32_t *row = w_packed + n * words;
	(void)N;
	for (int64_t k = 0; k < K; k++) {
		const int64_t g = k / G;
		const int z = zero_packed ? ctq_pack_get_dim0(zero_packed, n, g, n_groups, bits) : 0;
		w[k] = ctq_wna16_dequant(ctq_pack_get(row, k, bits), z, scale[n * n_groups + g]);
	}
}

enum ctq_status ctq_ref_gemm_wna16(const uint16_t *x, const int32_t *w_packed, const float *scale,
				   const int32_t *zero_packed, const float *bias, int64_t M, int64_t N,
				   int64_t K, int bits, int64_t group_size, uint16_t *y,
				   struct ctq_error *err)
{
	if ((bits != 4 && bits != 8) || M < 1 || N < 1 || K < 1 || group_size < 0)
		return ctq_error_set(err, CTQ_ERR_USAGE, "gemm_wna16",
				     "bits %d, M %lld, N %lld, K %lld, group size %lld; expected 4 or 8 "
				     "bits, positive sizes and a group size >= 0", bits, (long long)M,
				     (long long)N, (long long)K, (long long)group_size);
	const int n_threads = ctq_ref_threads(M * N * K);
	/* xt (K, M) f32: the tokens of one k side by side, so that the inner
	 * loop runs M independent sums (vectorisable without reordering any
	 * one of them); per thread a dequantized row (K) and sums (M). */
	float *xt = ctq_malloc((size_t)(K * M) * sizeof *xt);
	float *scratch = ctq_malloc((size_t)n_threads * (size_t)(K + M) * sizeof *scratch);
	if (!xt || !scratch) {
		ctq_free(xt);
		ctq_free(scratch);
		return ctq_error_set(err, CTQ_ERR_NOMEM, "gemm_wna16", "out of memory");
	}
	for (int64_t m = 0; m < M; m++)
		for (int64_t k = 0; k < K; k++)
			xt[k * M + m] = ctq_bf16_to_f32(x[m * K + k]);
#pragma omp parallel for schedule(static) num_threads(n_threads)
	for (int64_t n = 0; n < N; n++) {
		const int tid = ctq_thread_id();
		float *w = scratch + (size_t)tid * (size_t)(K + M); /* (K) */
		float *acc = w + K;                                 /* (M) */
		ctq_ref_wna16_dequant_row(w_packed, scale, zero_packed, N, K, bits, group_size, n, w);
		memset(acc, 0, (size_t)M * sizeof *acc);
		for (int64_t k = 0; k < K; k++) {
			const float wk = w[k];
			const float *xk = xt + k * M;
			for (int64_t m = 0; m < M; m++)
				acc[m] = CTQ_FADD(acc[m], CTQ_FMUL(xk[m], wk));
		}
		const float b = bias ? bias[n] : 0.0f;
		for (int64_t m = 0; m < M; m++)
			y[m * N + n] = ctq_f32_to_bf16(CTQ_FADD(acc[m], b));
	}
	ctq_free(xt);
	ctq_free(scratch);
	return CTQ_OK;
}
