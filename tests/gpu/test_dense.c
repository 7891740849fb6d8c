/* The BF16 decode linear (kernels/gemv_bf16.cu, M <= 4) against the CPU
 * reference linear (f32) on the Qwen3-4B shapes and odd ones, beside the
 * cuBLAS path it leaves to (K % 8 != 0, M > 4): rel-L2 within 1e-2 on
 * every row. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "core/dtype.h"
#include "core/rng.h"
#include "kernels/kernels.h"
#include "backend/backend.h"

static double row_rel(const float *a, const float *ref, int64_t n)
{
	double e = 0, r = 0;
	for (int64_t i = 0; i < n; i++) {
		e += ((double)a[i] - ref[i]) * ((double)a[i] - ref[i]);
		r += (double)ref[i] * ref[i];
	}
	return sqrt(e / (r > 0 ? r : 1));
}

static void check(int64_t M, int64_t N, int64_t K, bool with_bias)
{
	struct ctq_backend gpu, ref;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_backend_cuda(&gpu, 0, &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(ctq_backend_reference(&ref, &err), CTQ_OK, "%s", err.message);
	struct ctq_rng r;
	ctq_rng_seed(&r, (uint64_t)(M * 7 + N * 13 + K));
	uint16_t *xb = malloc((size_t)(M * K) * 2), *wb = malloc((size_t)(N * K) * 2);
	float *x = malloc((size_t)(M * K) * 4), *w = malloc((size_t)(N * K) * 4), *bias = malloc((size_t)N * 4);
	for (int64_t i = 0; i < M * K; i++)
		x[i] = ctq_bf16_to_f32(xb[i] = ctq_f32_to_bf16((float)ctq_rng_normal(&r)));
	for (int64_t i = 0; i < N * K; i++)
		w[i] = ctq_bf16_to_f32(wb[i] = ctq_f32_to_bf16((float)ctq_rng_normal(&r) * 0.05f));
	for (int64_t i = 0; i < N; i++)
		bias[i] = (float)ctq_rng_normal(&r);
	/* reference, in f32 */
	float *yr = malloc((size_t)(M * N) * 4);
	void *rw = NULL;
	cr_assert_eq(ref.ops->upload_dense(&ref, wb, (size_t)(N * K), &rw, &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(ref.ops->linear_dense(&ref, x, rw, with_bias ? bias : NULL, M, N, K, yr, &err), CTQ_OK,
		     "%s", err.message);
	/* GPU */
	void *dx = NULL, *dw = NULL, *dy = NULL, *db = NULL;
	cr_assert_eq(gpu.ops->alloc(&gpu, (size_t)(M * K) * 2, &dx, &err), CTQ_OK);
	cr_assert_eq(gpu.ops->upload(&gpu, dx, xb, (size_t)(M * K) * 2, &err), CTQ_OK);
	cr_assert_eq(gpu.ops->upload_dense(&gpu, wb, (size_t)(N * K), &dw, &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(gpu.ops->alloc(&gpu, (size_t)N * 4, &db, &err), CTQ_OK);
	cr_assert_eq(gpu.ops->upload(&gpu, db, bias, (size_t)N * 4, &err), CTQ_OK);
	cr_assert_eq(gpu.ops->alloc(&gpu, (size_t)(M * N) * 2, &dy, &err), CTQ_OK);
	cr_assert_eq(gpu.ops->linear_dense(&gpu, dx, dw, with_bias ? db : NULL, M, N, K, dy, &err), CTQ_OK, "%s",
		     err.message);
	uint16_t *yb = malloc((size_t)(M * N) * 2);
	float *yg = malloc((size_t)(M * N) * 4);
	cr_assert_eq(gpu.ops->download(&gpu, yb, dy, (size_t)(M * N) * 2, &err), CTQ_OK);
	for (int64_t i = 0; i < M * N; i++)
		yg[i] = ctq_bf16_to_f32(yb[i]);
	double worst = 0;
	for (int64_t m = 0; m < M; m++) {
		const double e = row_rel(yg + m * N, yr + m * N, N);
		worst = e > worst ? e : worst;
	}
	cr_log_info("linear_dense M=%lld N=%lld K=%lld%s (%s): worst row rel-L2 %.3e", (long long)M, (long long)N,
		    (long long)K, with_bias ? " +bias" : "", ctq_gemv_bf16_fits(dx, dw, M, K) ? "gemv_bf16" : "cuBLAS",
		    worst);
	/* BF16 outputs of f32 sums: a few 1e-3 */
	cr_expect(worst < 1e-2, "M=%lld N=%lld K=%lld: worst row rel-L2 %.3e", (long long)M, (long long)N,
		  (long long)K, worst);
	gpu.ops->free(&gpu, dx), gpu.ops->free(&gpu, dw), gpu.ops->free(&gpu, dy), gpu.ops->free(&gpu, db);
	ref.ops->free(&ref, rw);
	free(xb), free(wb), free(x), free(w), free(bias), free(yr), free(yb), free(yg);
	ctq_backend_close(&gpu);
	ctq_backend_close(&ref);
}

Test(dense, decode_shapes_match_the_reference, .timeout = 300)
{
	/* M 5..8: cuBLAS (a gemv_bf16 up to M = 8 halved BF16 decode at batch 8:
	 * docs/kernels.md) */
	for (int64_t M = 1; M <= 8; M++)
		check(M, 6144, 2560, false); /* qkv */
	check(1, 2560, 4096, false);         /* o */
	check(1, 19456, 2560, false);        /* gate/up */
	check(1, 2560, 9728, true);          /* down, with a bias */
	check(2, 7, 24, true);               /* N odd, K = 3 loads */
	check(1, 33, 8, false);              /* K = one load */
	check(1, 16, 20, false);             /* K % 8 != 0: cuBLAS */
	check(9, 64, 64, false);             /* M = 9: cuBLAS */
}
