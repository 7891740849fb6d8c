/* CUDA kernel tests (run on a GPU host with `make test-gpu`, one worker:
 * Criterion forks, and CUDA is touched only here). Every integer result
 * (q, s, acc) and the BF16 output of the W8A8 path must be bit-identical to
 * reference/ref_ops; the BF16 GEMM (cuBLAS) is compared with a tolerance. */
#include <criterion/criterion.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/numerics.h"
#include "core/rng.h"
#include "conform/probe.h"
#include "kernels/arch.h"
#include "kernels/gemm_sm80.h"
#include "kernels/gemm_sm90.h"
#include "kernels/kernels.h"
#include "backend/backend.h"
#include "reference/ref_ops.h"
#include "model/runner.h"

static struct ctq_backend gpu;

static void setup(void)
{
	struct ctq_error err = {0};
	cr_assert_eq(ctq_backend_cuda(&gpu, 0, &err), CTQ_OK, "no CUDA backend: %s", err.message);
}

static void teardown(void)
{
	ctq_backend_close(&gpu);
}

/* P_NAN_INF (not in the loops up to P_TIES): rows with a NaN, an Inf, both
 * or neither, whose scales the CPU and the GPU write as different NaNs. */
enum pattern { P_GAUSS, P_ZERO_ROWS, P_HUGE, P_DENORMAL, P_TIES, P_NAN_INF };

static void fill_x(uint16_t *x, int64_t M, int64_t K, enum pattern p, uint64_t seed)
{
	struct ctq_rng r;
	ctq_rng_seed(&r, seed);
	for (int64_t m = 0; m < M; m++)
		for (int64_t k = 0; k < K; k++) {
			float v = (float)ctq_rng_normal(&r);
			if (p == P_ZERO_ROWS && m % 3 == 0)
				v = 0.0f;
			if (p == P_HUGE && k == (m * 7) % K)
				v = 3.0e38f;
			uint16_t h = ctq_f32_to_bf16(v);
			if (p == P_DENORMAL)
				h = (uint16_t)((ctq_rng_next(&r) & 0x8000) | (1 + ctq_rng_below(&r, 0x7f)));
			if (p == P_TIES) /* amax 127 -> s = 1: k + 0.5 values hit ties */
				h = ctq_f32_to_bf16(k == 0 ? 127.0f : (float)((int)ctq_rng_below(&r, 200) - 100) + 0.5f);
			if (p == P_NAN_INF && ((m % 4 == 1 && k == (m * 5) % K) ||
					       (m % 4 == 2 && k == (m * 3) % K)))
				h = m % 8 == 1 ? 0x7fc0 : m % 8 == 5 ? 0xffa1 : 0x7f80;
			if (p == P_NAN_INF && m % 4 == 3 && k == (m * 11) % K)
				h = 0xff80;
			if (p == P_NAN_INF && m % 4 == 3 && k == (m * 13 + 1) % K)
				h = 0x7fd3;
			x[m * K + k] = h;
		}
}

static void *dev_copy(const void *src, size_t n)
{
	struct ctq_error err = {0};
	void *d = NULL;
	cr_assert_eq(gpu.ops->alloc(&gpu, n, &d, &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(gpu.ops->upload(&gpu, d, src, n, &err), CTQ_OK, "%s", err.message);
	return d;
}

static void from_dev(void *dst, const void *d, size_t n)
{
	struct ctq_error err = {0};
	cr_assert_eq(gpu.ops->download(&gpu, dst, d, n, &err), CTQ_OK, "%s", err.message);
}

/* Rows of the output to check against the CPU oracle: all of them up to
 * 512, otherwise the first, last and 61 spread rows. */
static int64_t pick_rows(int64_t M, int64_t *rows)
{
	if (M <= 512) {
		for (int64_t i = 0; i < M; i++)
			rows[i] = i;
		return M;
	}
	int64_t n = 0;
	rows[n++] = 0;
	for (int64_t i = 1; i <= 61; i++)
		rows[n++] = i * (M - 1) / 62;
	rows[n++] = M - 1;
	return n;
}

static void check_quantize(int64_t M, int64_t K, enum pattern p)
{
	size_t mk = (size_t)(M * K);
	uint16_t *x = malloc(mk * 2);
	int8_t *q = malloc(mk), *q_ref = malloc(mk);
	float *s = malloc((size_t)M * 4), *s_ref = malloc((size_t)M * 4);
	fill_x(x, M, K, p, (uint64_t)(M * 1000 + K));
	ctq_ref_quantize_bf16(x, M, K, q_ref, s_ref);
	void *dx = dev_copy(x, mk * 2), *dq = NULL, *ds = NULL;
	struct ctq_error err = {0};
	cr_assert_eq(gpu.ops->alloc(&gpu, mk, &dq, &err), CTQ_OK);
	cr_assert_eq(gpu.ops->alloc(&gpu, (size_t)M * 4, &ds, &err), CTQ_OK);
	cr_assert_eq(gpu.ops->quantize(&gpu, dx, M, K, dq, ds, &err), CTQ_OK, "%s", err.message);
	from_dev(q, dq, mk);
	from_dev(s, ds, (size_t)M * 4);
	for (int64_t m = 0; m < M; m++) {
		cr_assert(!memcmp(&s[m], &s_ref[m], 4), "quantize M=%lld K=%lld p=%d: s[%lld] %a vs %a",
			  (long long)M, (long long)K, p, (long long)m, s[m], s_ref[m]);
		for (int64_t k = 0; k < K; k++)
			cr_assert_eq(q[m * K + k], q_ref[m * K + k],
				     "quantize M=%lld K=%lld p=%d: q[%lld,%lld] %d vs %d", (long long)M,
				     (long long)K, p, (long long)m, (long long)k, q[m * K + k],
				     q_ref[m * K + k]);
	}
	gpu.ops->free(&gpu, dx);
	gpu.ops->free(&gpu, dq);
	gpu.ops->free(&gpu, ds);
	free(x);
	free(q);
	free(q_ref);
	free(s);
	free(s_ref);
}

Test(kernels, quantize_is_bit_exact, .init = setup, .fini = teardown)
{
	/* M <= 256: one row per block; M = 300, 4096: warps per row
	 * (kernels/quant.cu); K % 8 != 0: the scalar kernel */
	static const int64_t Ms[] = {1, 2, 7, 64, 129, 300, 4096};
	static const int64_t Ks[] = {1, 3, 8, 17, 255, 1024, 2048, 2560, 3072, 4096, 9728};
	for (size_t i = 0; i < sizeof Ms / sizeof *Ms; i++)
		for (size_t j = 0; j < sizeof Ks / sizeof *Ks; j++)
			for (int p = P_GAUSS; p <= P_TIES; p++)
				check_quantize(Ms[i], Ks[j], (enum pattern)p);
}

/* ctq_quantize_launch straight, x and q at element offsets x_off / q_off
 * into their buffers (misaligned: the scalar kernel). Scales must be equal
 * bit for bit, except that a NaN scale only has to be a NaN: the CPU
 * division keeps the amax's NaN payload, the GPU's gives its canonical
 * NaN. */
static void check_quantize_launch(const char *id, int64_t M, int64_t K, enum pattern p,
				  int64_t x_off, int64_t q_off)
{
	size_t mk = (size_t)(M * K);
	uint16_t *x = malloc(mk * 2);
	int8_t *q = malloc(mk), *q_ref = malloc(mk);
	float *s = malloc((size_t)M * 4), *s_ref = malloc((size_t)M * 4);
	fill_x(x, M, K, p, (uint64_t)(M * 1000 + K + 7 * p));
	ctq_ref_quantize_bf16(x, M, K, q_ref, s_ref);
	struct ctq_error err = {0};
	void *dx = NULL, *dq = NULL, *ds = NULL;
	cr_assert_eq(gpu.ops->alloc(&gpu, (mk + 16) * 2, &dx, &err), CTQ_OK);
	cr_assert_eq(gpu.ops->alloc(&gpu, mk + 16, &dq, &err), CTQ_OK);
	cr_assert_eq(gpu.ops->alloc(&gpu, (size_t)M * 4, &ds, &err), CTQ_OK);
	uint16_t *dxo = (uint16_t *)dx + x_off;
	int8_t *dqo = (int8_t *)dq + q_off;
	cr_assert_eq(gpu.ops->upload(&gpu, dxo, x, mk * 2, &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(gpu.ops->sync(&gpu, &err), CTQ_OK);
	cr_assert_eq(ctq_quantize_launch(dxo, M, K, dqo, ds, NULL, &err), CTQ_OK, "%s: %s", id,
		     err.message);
	cr_assert_eq(cudaDeviceSynchronize(), cudaSuccess, "%s: %s", id,
		     cudaGetErrorString(cudaGetLastError()));
	from_dev(q, dqo, mk);
	from_dev(s, ds, (size_t)M * 4);
	int64_t nan_rows = 0;
	for (int64_t m = 0; m < M; m++) {
		const bool both_nan = isnan(s[m]) && isnan(s_ref[m]);
		nan_rows += both_nan;
		cr_assert(both_nan || !memcmp(&s[m], &s_ref[m], 4), "%s p=%d: s[%lld] %a vs %a", id,
			  p, (long long)m, s[m], s_ref[m]);
		for (int64_t k = 0; k < K; k++)
			cr_assert_eq(q[m * K + k], q_ref[m * K + k], "%s p=%d: q[%lld,%lld] %d vs %d",
				     id, p, (long long)m, (long long)k, q[m * K + k], q_ref[m * K + k]);
	}
	if (p == P_NAN_INF && M >= 2)
		cr_assert_gt(nan_rows, 0, "%s: no NaN row", id);
	gpu.ops->free(&gpu, dx), gpu.ops->free(&gpu, dq), gpu.ops->free(&gpu, ds);
	free(x), free(q), free(q_ref), free(s), free(s_ref);
}

Test(kernels, quantize_launch_paths_bit_exact, .init = setup, .fini = teardown, .timeout = 600)
{
	/* kernels/quant.cu: M <= 256 one row per block, 1 to 8 16-byte
	 * groups per thread (K = 2560: 320 threads x 1; 9728: 608 x 2;
	 * 12288: 768 x 2; 40000: 640 x 8); more rows: 1-8 warps per
	 * row, up to 12 groups per thread (K = 2560: 1 warp x 10; 4096: 2 x 8;
	 * 9728: 4 x 10; 12288: 4 x 12; 16384: 8 x 8); K past 24576 with many
	 * rows: one row per block again; K % 8 != 0, misaligned x or q, or K
	 * past 65536: the scalar kernel. */
	static const struct { int64_t M, K, x_off, q_off; } c[] = {
		{1, 2560, 0, 0},  {1, 4096, 0, 0},   {1, 9728, 0, 0},  {1, 12288, 0, 0},
		{1, 40000, 0, 0}, {1, 65544, 0, 0},  {2, 2560, 0, 0},  {3, 9728, 0, 0},
		{4, 4096, 0, 0},  {5, 12288, 0, 0},  {6, 2560, 0, 0},  {7, 9728, 0, 0},
		{8, 9728, 0, 0},  {8, 2561, 0, 0},   {3, 9730, 0, 0},  {1, 2567, 0, 0},
		{128, 9728, 0, 0}, {256, 2560, 0, 0}, {257, 9728, 0, 0}, {300, 12288, 0, 0},
		{1000, 2560, 0, 0}, {1000, 4096, 0, 0}, {600, 16384, 0, 0}, {600, 32768, 0, 0},
		{4096, 9728, 0, 0}, {8192, 9728, 0, 0}, {8192, 2560, 0, 0}, {300, 40, 0, 0},
		{300, 8, 0, 0},   {2, 9728, 1, 0},   {2, 9728, 0, 1},  {4096, 2560, 1, 0},
	};
	for (size_t i = 0; i < sizeof c / sizeof *c; i++)
		for (int p = P_GAUSS; p <= P_NAN_INF; p++) {
			if (c[i].M * c[i].K > 8192 * 2560 && p != P_GAUSS && p != P_NAN_INF)
				continue; /* time: the largest shapes with two patterns */
			char id[96];
			snprintf(id, sizeof id, "quantize M=%lld K=%lld x_off=%lld q_off=%lld",
				 (long long)c[i].M, (long long)c[i].K, (long long)c[i].x_off,
				 (long long)c[i].q_off);
			check_quantize_launch(id, c[i].M, c[i].K, (enum pattern)p, c[i].x_off,
					      c[i].q_off);
		}
}

/* The fused producers against the unfused kernels + ctq_quantize_launch on
 * the same device, q and s bit for bit: rmsnorm_quant (x (M, H) bf16, w
 * (H) f32) and silu_mul_quant (gu (M, 2I) bf16). Row 1 of each is zero
 * (scale 0). off: element offset of the inputs (misaligned: the scalar
 * forms). */
static void check_fused(const char *id, bool silu, int64_t M, int64_t K, int64_t off)
{
	const int64_t in_cols = silu ? 2 * K : K;
	size_t n_in = (size_t)(M * in_cols), mk = (size_t)(M * K);
	uint16_t *x = malloc(n_in * 2);
	float *w = malloc((size_t)K * 4);
	int8_t *q = malloc(mk), *q_ref = malloc(mk);
	float *s = malloc((size_t)M * 4), *s_ref = malloc((size_t)M * 4);
	struct ctq_rng r;
	ctq_rng_seed(&r, (uint64_t)(M * 7919 + K * 31 + silu));
	for (size_t i = 0; i < n_in; i++)
		x[i] = ctq_f32_to_bf16((float)(2.0 * ctq_rng_normal(&r)));
	if (M > 1)
		memset(x + in_cols, 0, (size_t)in_cols * 2);
	for (int64_t k = 0; k < K; k++)
		w[k] = (float)(1.0 + 0.25 * ctq_rng_normal(&r));
	struct ctq_error err = {0};
	void *dx = NULL, *dw = dev_copy(w, (size_t)K * 4), *dy = NULL, *dq = NULL, *ds = NULL;
	void *dq2 = NULL, *ds2 = NULL;
	cr_assert_eq(gpu.ops->alloc(&gpu, (n_in + 16) * 2, &dx, &err), CTQ_OK);
	cr_assert_eq(gpu.ops->alloc(&gpu, mk * 2, &dy, &err), CTQ_OK);
	cr_assert_eq(gpu.ops->alloc(&gpu, mk, &dq, &err), CTQ_OK);
	cr_assert_eq(gpu.ops->alloc(&gpu, mk, &dq2, &err), CTQ_OK);
	cr_assert_eq(gpu.ops->alloc(&gpu, (size_t)M * 4, &ds, &err), CTQ_OK);
	cr_assert_eq(gpu.ops->alloc(&gpu, (size_t)M * 4, &ds2, &err), CTQ_OK);
	const uint16_t *dxo = (uint16_t *)dx + off;
	cr_assert_eq(gpu.ops->upload(&gpu, (uint16_t *)dx + off, x, n_in * 2, &err), CTQ_OK);
	cr_assert_eq(gpu.ops->sync(&gpu, &err), CTQ_OK);
	const float eps = 1e-6f;
	if (silu) {
		cr_assert_eq(ctq_silu_mul_launch(dxo, M, K, dy, NULL, &err), CTQ_OK, "%s", err.message);
		cr_assert_eq(ctq_silu_mul_quant_launch(dxo, M, K, dq2, ds2, NULL, &err), CTQ_OK, "%s",
			     err.message);
	} else {
		cr_assert_eq(ctq_rmsnorm_launch(dxo, K, M, 1, dw, K, eps, dy, K, NULL, &err), CTQ_OK,
			     "%s", err.message);
		cr_assert_eq(ctq_rmsnorm_quant_launch(dxo, M, dw, K, eps, dq2, ds2, NULL, &err), CTQ_OK,
			     "%s", err.message);
	}
	cr_assert_eq(ctq_quantize_launch(dy, M, K, dq, ds, NULL, &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(cudaDeviceSynchronize(), cudaSuccess, "%s: %s", id,
		     cudaGetErrorString(cudaGetLastError()));
	from_dev(q_ref, dq, mk), from_dev(q, dq2, mk);
	from_dev(s_ref, ds, (size_t)M * 4), from_dev(s, ds2, (size_t)M * 4);
	int64_t nonzero = 0;
	for (int64_t m = 0; m < M; m++) {
		cr_assert(!memcmp(&s[m], &s_ref[m], 4), "%s: s[%lld] %a vs unfused %a", id,
			  (long long)m, s[m], s_ref[m]);
		nonzero += s[m] != 0.0f;
		for (int64_t k = 0; k < K; k++)
			cr_assert_eq(q[m * K + k], q_ref[m * K + k], "%s: q[%lld,%lld] %d vs unfused %d",
				     id, (long long)m, (long long)k, q[m * K + k], q_ref[m * K + k]);
	}
	cr_assert_eq(nonzero, M > 1 ? M - 1 : M, "%s: %lld rows of nonzero scale", id,
		     (long long)nonzero);
	gpu.ops->free(&gpu, dx), gpu.ops->free(&gpu, dw), gpu.ops->free(&gpu, dy);
	gpu.ops->free(&gpu, dq), gpu.ops->free(&gpu, dq2), gpu.ops->free(&gpu, ds);
	gpu.ops->free(&gpu, ds2);
	free(x), free(w), free(q), free(q_ref), free(s), free(s_ref);
}

Test(kernels, fused_producers_match_unfused_then_quantize, .init = setup, .fini = teardown,
     .timeout = 300)
{
	/* rmsnorm_quant: H = 2560 (1024 threads x 3 in registers), 1000 (256
	 * x 4), 100 (128 x 1), 5120 (x 5 of 8), 20000 (the re-reading form);
	 * silu_mul_quant: I = 9728 (608 threads x 2 groups), 3072 (384 x 1),
	 * 20480 (640 x 4), 1003 and a misaligned gu (the scalar form) */
	static const struct { bool silu; int64_t K, off; } c[] = {
		{false, 2560, 0}, {false, 1000, 0}, {false, 100, 0}, {false, 5120, 0},
		{false, 20000, 0}, {false, 2560, 1}, {true, 9728, 0}, {true, 3072, 0},
		{true, 20480, 0}, {true, 1003, 0}, {true, 9728, 1},
	};
	static const int64_t Ms[] = {1, 3, 64};
	for (size_t i = 0; i < sizeof c / sizeof *c; i++)
		for (size_t j = 0; j < sizeof Ms / sizeof *Ms; j++) {
			char id[96];
			snprintf(id, sizeof id, "%s M=%lld %s=%lld off=%lld",
				 c[i].silu ? "silu_mul_quant" : "rmsnorm_quant", (long long)Ms[j],
				 c[i].silu ? "I" : "H", (long long)c[i].K, (long long)c[i].off);
			check_fused(id, c[i].silu, Ms[j], c[i].K, c[i].off);
		}
}

/* End to end: bf16 x -> quantize -> GEMM -> epilogue, and the int32
 * accumulators through the debug path; both bit-exact. */
static void check_linear(int64_t M, int64_t N, int64_t K, enum pattern p, bool bias, bool extreme_w)
{
	size_t mk = (size_t)(M * K), nk = (size_t)(N * K), mn = (size_t)(M * N);
	uint16_t *x = malloc(mk * 2), *y = malloc(mn * 2);
	int8_t *w = malloc(nk);
	float *sw = malloc((size_t)N * 4), *b = bias ? malloc((size_t)N * 4) : NULL;
	int32_t *acc = malloc(mn * 4);
	struct ctq_rng r;
	ctq_rng_seed(&r, (uint64_t)(M * 31 + N * 7 + K));
	fill_x(x, M, K, p, (uint64_t)(M + N + K));
	for (size_t i = 0; i < nk; i++)
		w[i] = extreme_w ? (int8_t)((ctq_rng_next(&r) & 1) ? 127 : -128)
				 : (int8_t)((int)ctq_rng_below(&r, 256) - 128);
	for (int64_t n = 0; n < N; n++) {
		sw[n] = (float)((0.5 + ctq_rng_uniform(&r)) * 4e-4);
		if (b)
			b[n] = (float)(0.1 * ctq_rng_normal(&r));
	}
	void *dx = dev_copy(x, mk * 2), *dw = dev_copy(w, nk), *dsw = dev_copy(sw, (size_t)N * 4);
	void *db = b ? dev_copy(b, (size_t)N * 4) : NULL, *dy = NULL, *dws = NULL, *dacc = NULL;
	struct ctq_error err = {0};
	size_t ws = ctq_w8a8_workspace_bytes(M, K);
	cr_assert_eq(gpu.ops->alloc(&gpu, mn * 2, &dy, &err), CTQ_OK);
	cr_assert_eq(gpu.ops->alloc(&gpu, ws, &dws, &err), CTQ_OK);
	cr_assert_eq(gpu.ops->alloc(&gpu, mn * 4, &dacc, &err), CTQ_OK);
	cr_assert_eq(gpu.ops->w8a8_linear(&gpu, dx, dw, dsw, db, M, N, K, dy, dws, &err), CTQ_OK,
		     "%s", err.message);
	from_dev(y, dy, mn * 2);
	/* The accumulators from the same quantized activations. */
	cr_assert_eq(gpu.ops->gemm_i8(&gpu, dws, dw, M, N, K, dacc, &err), CTQ_OK, "%s", err.message);
	from_dev(acc, dacc, mn * 4);

	int64_t rows[64];
	int64_t nr = M <= 512 ? 0 : pick_rows(M, rows);
	int64_t n_rows = M <= 512 ? M : nr;
	uint16_t *xs = malloc((size_t)(n_rows * K) * 2);
	for (int64_t i = 0; i < n_rows; i++)
		memcpy(xs + i * K, x + (M <= 512 ? i : rows[i]) * K, (size_t)K * 2);
	int8_t *q = malloc((size_t)(n_rows * K));
	float *sa = malloc((size_t)n_rows * 4);
	int32_t *acc_ref = malloc((size_t)(n_rows * N) * 4);
	uint16_t *y_ref = malloc((size_t)(n_rows * N) * 2);
	ctq_ref_quantize_bf16(xs, n_rows, K, q, sa);
	cr_assert_eq(ctq_ref_gemm_i8(q, w, n_rows, N, K, acc_ref, &err), CTQ_OK);
	ctq_ref_w8a8_epilogue(acc_ref, sa, sw, b, n_rows, N, y_ref);
	for (int64_t i = 0; i < n_rows; i++) {
		int64_t m = M <= 512 ? i : rows[i];
		for (int64_t n = 0; n < N; n++) {
			cr_assert_eq(acc[m * N + n], acc_ref[i * N + n],
				     "acc M=%lld N=%lld K=%lld p=%d at [%lld,%lld]: %d vs %d",
				     (long long)M, (long long)N, (long long)K, p, (long long)m,
				     (long long)n, acc[m * N + n], acc_ref[i * N + n]);
			cr_assert_eq(y[m * N + n], y_ref[i * N + n],
				     "y M=%lld N=%lld K=%lld p=%d at [%lld,%lld]: %#06x vs %#06x",
				     (long long)M, (long long)N, (long long)K, p, (long long)m,
				     (long long)n, y[m * N + n], y_ref[i * N + n]);
		}
	}
	gpu.ops->free(&gpu, dx);
	gpu.ops->free(&gpu, dw);
	gpu.ops->free(&gpu, dsw);
	gpu.ops->free(&gpu, db);
	gpu.ops->free(&gpu, dy);
	gpu.ops->free(&gpu, dws);
	gpu.ops->free(&gpu, dacc);
	free(x), free(y), free(w), free(sw), free(b), free(acc);
	free(xs), free(q), free(sa), free(acc_ref), free(y_ref);
}

Test(kernels, w8a8_odd_shapes_bit_exact, .init = setup, .fini = teardown)
{
	static const int64_t dims[][3] = {
		{1, 1, 1}, {1, 7, 13}, {3, 65, 63}, {17, 100, 257}, {33, 129, 1000},
		{64, 64, 64}, {65, 127, 129}, {127, 255, 511}, {16, 1, 4096},
	};
	for (size_t i = 0; i < sizeof dims / sizeof *dims; i++)
		for (int p = P_GAUSS; p <= P_TIES; p++)
			check_linear(dims[i][0], dims[i][1], dims[i][2], (enum pattern)p, i % 2 == 0, false);
}

Test(kernels, w8a8_qwen3_4b_shapes_bit_exact, .init = setup, .fini = teardown, .timeout = 600)
{
	static const int64_t shapes[][2] = {{2560, 6144}, {4096, 2560}, {2560, 19456}, {9728, 2560}};
	static const int64_t Ms[] = {1, 16, 128, 1024, 8192};
	for (size_t s = 0; s < 4; s++)
		for (size_t m = 0; m < sizeof Ms / sizeof *Ms; m++)
			check_linear(Ms[m], shapes[s][1], shapes[s][0], m % 2 ? P_ZERO_ROWS : P_GAUSS,
				     s == 0, false);
}

Test(kernels, int32_accumulation_exact_at_extremes, .init = setup, .fini = teardown)
{
	/* ±127/-128 weights against saturated activations at K = 9728. */
	check_linear(8, 64, 9728, P_HUGE, false, true);
	check_linear(8, 64, 9728, P_GAUSS, true, true);
}

/* rows_argmax (the device's greedy pick) follows ctq_argmax's scan to the
 * index: the first of equal maxima, a NaN never picked but at index 0,
 * -inf rows, a maximum in the last position, a full 151,936-token row. */
Test(kernels, rows_argmax_follows_the_host_rule, .init = setup, .fini = teardown)
{
	const int64_t Ns[2] = {1000, 151936};
	for (int t = 0; t < 2; t++) {
		const int64_t N = Ns[t], n = 10;
		uint16_t *x = malloc((size_t)(n * N) * 2);
		float *f = malloc((size_t)(n * N) * 4);
		cr_assert(x && f);
		struct ctq_rng r;
		ctq_rng_seed(&r, 7 + (uint64_t)t);
		for (int64_t i = 0; i < n * N; i++)
			x[i] = ctq_f32_to_bf16((float)ctq_rng_normal(&r));
		uint16_t *row;
		row = x + 1 * N; /* all equal: 0 */
		for (int64_t k = 0; k < N; k++)
			row[k] = ctq_f32_to_bf16(1.5f);
		row = x + 2 * N; /* two equal maxima: the first */
		row[N / 2] = row[N / 3] = ctq_f32_to_bf16(99.0f);
		x[3 * N] = 0x7fc0; /* NaN at 0: 0 */
		x[3 * N + 17] = ctq_f32_to_bf16(99.0f);
		row = x + 4 * N; /* NaNs elsewhere: skipped */
		row[5] = 0x7fc0, row[9] = 0xffc1, row[10] = ctq_f32_to_bf16(50.0f), row[N - 2] = 0x7f81;
		row = x + 5 * N; /* all -inf: 0 */
		for (int64_t k = 0; k < N; k++)
			row[k] = 0xff80;
		row = x + 6 * N; /* -inf at 0, NaN everywhere else: 0 */
		row[0] = 0xff80;
		for (int64_t k = 1; k < N; k++)
			row[k] = 0x7fc0;
		x[7 * N + N - 1] = 0x7f80; /* +inf last */
		x[8 * N + N - 1] = ctq_f32_to_bf16(1000.0f); /* maximum last */
		row = x + 9 * N; /* -0.0 and +0.0 equal: the first */
		for (int64_t k = 0; k < N; k++)
			row[k] = ctq_f32_to_bf16(-1.0f);
		row[3] = 0x8000, row[4] = 0x0000;
		ctq_convert_to_f32(x, CTQ_DTYPE_BF16, (size_t)(n * N), f);
		struct ctq_error err = {0};
		void *d = NULL;
		cr_assert_eq(gpu.ops->alloc(&gpu, (size_t)(n * N) * 2, &d, &err), CTQ_OK, "%s", err.message);
		cr_assert_eq(gpu.ops->upload(&gpu, d, x, (size_t)(n * N) * 2, &err), CTQ_OK, "%s", err.message);
		int32_t got[10];
		cr_assert_eq(gpu.ops->rows_argmax(&gpu, d, N, n, got, &err), CTQ_OK, "%s", err.message);
		const int32_t fixed[10] = {-1, 0, -1, 0, -1, 0, 0, (int32_t)(N - 1), (int32_t)(N - 1), 3};
		for (int64_t i = 0; i < n; i++) {
			int32_t want = ctq_argmax(f + i * N, N);
			cr_expect_eq(got[i], want, "N %lld row %lld: device %d, ctq_argmax %d", (long long)N,
				     (long long)i, got[i], want);
			if (fixed[i] >= 0)
				cr_expect_eq(want, fixed[i], "N %lld row %lld: ctq_argmax %d, expected %d",
					     (long long)N, (long long)i, want, fixed[i]);
		}
		cr_expect_eq(got[2], (int32_t)(N / 3));
		cr_expect_eq(got[4] >= 0 && got[4] != 5 && got[4] != 9 && got[4] != N - 2, 1);
		gpu.ops->free(&gpu, d);
		free(x), free(f);
	}
}

Test(kernels, bf16_gemm_within_tolerance, .init = setup, .fini = teardown)
{
	static const int64_t dims[][3] = {{1, 2560, 6144}, {7, 100, 257}, {128, 4096, 2560}};
	for (size_t i = 0; i < 3; i++) {
		int64_t M = dims[i][0], K = dims[i][1], N = dims[i][2];
		size_t mk = (size_t)(M * K), nk = (size_t)(N * K), mn = (size_t)(M * N);
		uint16_t *x = malloc(mk * 2), *w = malloc(nk * 2), *y = malloc(mn * 2), *yr = malloc(mn * 2);
		float *b = malloc((size_t)N * 4);
		struct ctq_rng r;
		ctq_rng_seed(&r, 7 + i);
		for (size_t j = 0; j < mk; j++)
			x[j] = ctq_f32_to_bf16((float)ctq_rng_normal(&r));
		for (size_t j = 0; j < nk; j++)
			w[j] = ctq_f32_to_bf16((float)(0.02 * ctq_rng_normal(&r)));
		for (int64_t n = 0; n < N; n++)
			b[n] = (float)(0.1 * ctq_rng_normal(&r));
		void *dx = dev_copy(x, mk * 2), *dw = dev_copy(w, nk * 2), *db = dev_copy(b, (size_t)N * 4);
		void *dy = NULL;
		struct ctq_error err = {0};
		cr_assert_eq(gpu.ops->alloc(&gpu, mn * 2, &dy, &err), CTQ_OK);
		cr_assert_eq(gpu.ops->gemm_bf16(&gpu, dx, dw, db, M, N, K, dy, &err), CTQ_OK, "%s", err.message);
		from_dev(y, dy, mn * 2);
		ctq_ref_gemm_bf16(x, w, b, M, N, K, yr);
		double num = 0, den = 0;
		for (size_t j = 0; j < mn; j++) {
			double d = (double)ctq_bf16_to_f32(y[j]) - ctq_bf16_to_f32(yr[j]);
			num += d * d;
			den += (double)ctq_bf16_to_f32(yr[j]) * ctq_bf16_to_f32(yr[j]);
		}
		/* Different accumulation order and two roundings (GEMM, then bias):
		 * within a few BF16 ulps, 2^-7 relative. */
		cr_assert(den > 0 && sqrt(num / den) < 0.0078, "bf16 GEMM rel-L2 %g", sqrt(num / den));
		gpu.ops->free(&gpu, dx), gpu.ops->free(&gpu, dw), gpu.ops->free(&gpu, db), gpu.ops->free(&gpu, dy);
		free(x), free(w), free(y), free(yr), free(b);
	}
}

Test(kernels, probe_catches_planted_defects_on_the_gpu, .init = setup, .fini = teardown)
{
	static const unsigned defects[] = {CTQ_DEFECT_SCALE_SHIFT, CTQ_DEFECT_EPILOGUE_NAN,
					   CTQ_DEFECT_TRANSPOSED_W};
	struct ctq_probe_policy pol;
	ctq_probe_policy_default(&pol);
	struct ctq_probe_layer L = {.name = "model.layers.3.mlp.down_proj", .K = 176, .N = 64};
	for (size_t i = 0; i < 3; i++) {
		struct ctq_probe_result r;
		struct ctq_error err = {0};
		gpu.defects = 0;
		cr_assert_eq(ctq_probe_run(&gpu, &L, CTQ_PW_RANDOM, CTQ_PA_GAUSSIAN, 33, 1, &pol, &r, &err), CTQ_OK);
		cr_assert(r.passed, "clean kernel failed: %s", r.reason);
		gpu.defects = defects[i];
		cr_assert_eq(ctq_probe_run(&gpu, &L, CTQ_PW_RANDOM, CTQ_PA_GAUSSIAN, 33, 1, &pol, &r, &err), CTQ_OK);
		cr_assert(!r.passed, "defect %u not caught", defects[i]);
		cr_assert(strstr(r.reason, "model.layers.3.mlp.down_proj"), "reason lacks the layer: %s", r.reason);
	}
	gpu.defects = 0;
}

/* Every tile configuration of the tensor-core kernels (sm90-wgmma,
 * sm80-mma), forced, on edges the tables would not pick for them: M and N
 * off the tile grid, K a multiple of 16 but not of the stage, odd N
 * (unpaired BF16 stores), saturated operands at K = 9728. Accumulators and
 * BF16 outputs bit-exact. */
static void check_tile(enum ctq_gemm_path path, int tile, int64_t M, int64_t N, int64_t K, enum pattern p,
		       bool extreme_w)
{
	const char *pn = ctq_gemm_path_name(path);
	size_t mk = (size_t)(M * K), nk = (size_t)(N * K), mn = (size_t)(M * N);
	uint16_t *x = malloc(mk * 2), *y = malloc(mn * 2), *y_ref = malloc(mn * 2);
	int8_t *w = malloc(nk), *q = malloc(mk);
	float *sw = malloc((size_t)N * 4), *b = malloc((size_t)N * 4), *sa = malloc((size_t)M * 4);
	int32_t *acc = malloc(mn * 4), *acc_ref = malloc(mn * 4);
	struct ctq_rng r;
	ctq_rng_seed(&r, (uint64_t)(tile * 1000003 + M * 31 + N * 7 + K + (int)path * 77));
	fill_x(x, M, K, p, (uint64_t)(M + N + K + tile));
	for (size_t i = 0; i < nk; i++)
		w[i] = extreme_w ? (int8_t)((ctq_rng_next(&r) & 1) ? 127 : -128)
				 : (int8_t)((int)ctq_rng_below(&r, 256) - 128);
	for (int64_t n = 0; n < N; n++) {
		sw[n] = (float)((0.5 + ctq_rng_uniform(&r)) * 4e-4);
		b[n] = (float)(0.1 * ctq_rng_normal(&r));
	}
	struct ctq_error err = {0};
	ctq_ref_quantize_bf16(x, M, K, q, sa);
	cr_assert_eq(ctq_ref_gemm_i8(q, w, M, N, K, acc_ref, &err), CTQ_OK);
	ctq_ref_w8a8_epilogue(acc_ref, sa, sw, b, M, N, y_ref);
	void *dq = dev_copy(q, mk), *dw = dev_copy(w, nk), *dsw = dev_copy(sw, (size_t)N * 4);
	void *db = dev_copy(b, (size_t)N * 4), *dsa = dev_copy(sa, (size_t)M * 4), *dy = NULL, *dacc = NULL;
	cr_assert_eq(gpu.ops->alloc(&gpu, mn * 2, &dy, &err), CTQ_OK);
	cr_assert_eq(gpu.ops->alloc(&gpu, mn * 4, &dacc, &err), CTQ_OK);
	/* poisoned: an element the kernel does not write cannot pass */
	cr_assert_eq(cudaMemset(dy, 0xff, mn * 2), cudaSuccess);
	cr_assert_eq(cudaMemset(dacc, 0xff, mn * 4), cudaSuccess);
	cr_assert_eq(gpu.ops->sync(&gpu, &err), CTQ_OK);
	if (path == CTQ_GEMM_PATH_SM90_WGMMA) {
		cr_assert(ctq_gemm_sm90_fits(dq, dw, M, N, K, 0), "sm90 kernel refuses M=%lld N=%lld K=%lld",
			  (long long)M, (long long)N, (long long)K);
		cr_assert_eq(ctq_gemm_sm90_launch(dq, dw, NULL, NULL, NULL, M, N, K, dacc, NULL, tile, NULL, &err),
			     CTQ_OK, "%s", err.message);
		cr_assert_eq(ctq_gemm_sm90_launch(dq, dw, dsa, dsw, db, M, N, K, NULL, dy, tile, NULL, &err),
			     CTQ_OK, "%s", err.message);
	} else {
		cr_assert(ctq_gemm_sm80_fits(dq, dw, M, N, K, 0), "sm80 kernel refuses M=%lld N=%lld K=%lld",
			  (long long)M, (long long)N, (long long)K);
		cr_assert_eq(ctq_gemm_sm80_launch(dq, dw, NULL, NULL, NULL, M, N, K, dacc, NULL, tile, NULL, &err),
			     CTQ_OK, "%s", err.message);
		cr_assert_eq(ctq_gemm_sm80_launch(dq, dw, dsa, dsw, db, M, N, K, NULL, dy, tile, NULL, &err),
			     CTQ_OK, "%s", err.message);
	}
	cr_assert_eq(cudaDeviceSynchronize(), cudaSuccess, "%s tile %d M=%lld N=%lld K=%lld: %s", pn, tile,
		     (long long)M, (long long)N, (long long)K, cudaGetErrorString(cudaGetLastError()));
	from_dev(acc, dacc, mn * 4);
	from_dev(y, dy, mn * 2);
	size_t nonzero = 0;
	for (size_t i = 0; i < mn; i++) {
		nonzero += acc_ref[i] != 0;
		cr_assert_eq(acc[i], acc_ref[i], "%s tile %d M=%lld N=%lld K=%lld p=%d: acc[%zu,%zu] %d vs %d", pn,
			     tile, (long long)M, (long long)N, (long long)K, p, i / (size_t)N, i % (size_t)N, acc[i],
			     acc_ref[i]);
		cr_assert_eq(y[i], y_ref[i], "%s tile %d M=%lld N=%lld K=%lld p=%d: y[%zu,%zu] %#06x vs %#06x", pn,
			     tile, (long long)M, (long long)N, (long long)K, p, i / (size_t)N, i % (size_t)N, y[i],
			     y_ref[i]);
	}
	cr_assert(nonzero > 0 || p == P_ZERO_ROWS, "%s tile %d: an all-zero product proves nothing", pn, tile);
	gpu.ops->free(&gpu, dq), gpu.ops->free(&gpu, dw), gpu.ops->free(&gpu, dsw);
	gpu.ops->free(&gpu, db), gpu.ops->free(&gpu, dsa), gpu.ops->free(&gpu, dy);
	gpu.ops->free(&gpu, dacc);
	free(x), free(y), free(y_ref), free(w), free(q), free(sw), free(b), free(sa), free(acc);
	free(acc_ref);
}

static const int64_t tile_dims[][3] = {
	{17, 64, 16}, {64, 256, 128}, {100, 129, 144}, {129, 300, 2576},
	{257, 513, 1040}, {1000, 2560, 4096}, {512, 1024, 9728}, {3, 7, 48},
};

Test(kernels, sm90_every_tile_bit_exact, .init = setup, .fini = teardown, .timeout = 600)
{
	if (!ctq_gemm_sm90_available())
		cr_skip_test("dispatch does not follow compute capability 9.0 here (GPU or CTQ_ARCH): no sm90 kernel");
	for (int t = 0; t < ctq_gemm_sm90_tiles(); t++) {
		for (size_t i = 0; i < sizeof tile_dims / sizeof *tile_dims - 1; i++)
			check_tile(CTQ_GEMM_PATH_SM90_WGMMA, t, tile_dims[i][0], tile_dims[i][1], tile_dims[i][2],
				   (enum pattern)(i % 5), false);
		check_tile(CTQ_GEMM_PATH_SM90_WGMMA, t, 128, 256, 9728, P_HUGE, true);
	}
}

/* The small-M configurations (M <= 64: 16/32/64-row activation boxes,
 * 32-, 64- or 160-column N tiles chosen by N, 1, 2 or 4 K boxes a stage):
 * K = 144, 400, 528 and 1040 end inside a stage's first box, with the rest
 * of the stage's boxes wholly past K. */
Test(kernels, sm90_small_m_bit_exact, .init = setup, .fini = teardown, .timeout = 600)
{
	if (!ctq_gemm_sm90_available())
		cr_skip_test("dispatch does not follow compute capability 9.0 here (GPU or CTQ_ARCH): no sm90 kernel");
	static const int64_t Ms[] = {1, 2, 15, 16, 17, 32, 33, 63, 64};
	static const int64_t NK[][2] = {{2560, 2560}, {6144, 144}, {136, 9728}, {19456, 256},
					{8192, 528},  {2560, 1040}, {19456, 400}};
	for (size_t i = 0; i < sizeof Ms / sizeof *Ms; i++)
		for (size_t j = 0; j < sizeof NK / sizeof *NK; j++)
			check_tile(CTQ_GEMM_PATH_SM90_WGMMA, ctq_gemm_sm90_tiles() - 1, Ms[i], NK[j][0], NK[j][1],
				   (enum pattern)((i + j) % 5), (i + j) % 7 == 0);
}

/* The compute 8.x kernel runs on every GPU of capability 8.0 or newer (an
 * H200 included, whatever dispatch follows): each tile on the edges, and
 * the small tiles at the decode and prefill M of Qwen3-4B shapes. */
Test(kernels, sm80_every_tile_bit_exact, .init = setup, .fini = teardown, .timeout = 600)
{
	static const int8_t aligned[16] __attribute__((aligned(16)));
	if (!ctq_gemm_sm80_fits(aligned, aligned, 1, 1, 16, 0))
		cr_skip_test("not a compute capability 8.0+ GPU: no sm80 kernel");
	for (int t = 0; t < ctq_gemm_sm80_tiles(); t++) {
		for (size_t i = 0; i < sizeof tile_dims / sizeof *tile_dims; i++)
			check_tile(CTQ_GEMM_PATH_SM80_MMA, t, tile_dims[i][0], tile_dims[i][1], tile_dims[i][2],
				   (enum pattern)(i % 5), false);
		check_tile(CTQ_GEMM_PATH_SM80_MMA, t, 128, 256, 9728, P_HUGE, true);
		check_tile(CTQ_GEMM_PATH_SM80_MMA, t, 33, 2560, 9728, P_GAUSS, true);
	}
}

Test(kernels, sm80_picked_tiles_bit_exact, .init = setup, .fini = teardown, .timeout = 600)
{
	static const int8_t aligned[16] __attribute__((aligned(16)));
	if (!ctq_gemm_sm80_fits(aligned, aligned, 1, 1, 16, 0))
		cr_skip_test("not a compute capability 8.0+ GPU: no sm80 kernel");
	static const int64_t Ms[] = {1, 2, 8, 15, 16, 17, 31, 32, 33, 64, 65, 128, 200, 513, 1024};
	static const int64_t NK[][2] = {{6144, 2560}, {2560, 4096}, {19456, 2560}, {2560, 9728}, {136, 528}};
	for (size_t i = 0; i < sizeof Ms / sizeof *Ms; i++)
		for (size_t j = 0; j < sizeof NK / sizeof *NK; j++)
			check_tile(CTQ_GEMM_PATH_SM80_MMA, -1, Ms[i], NK[j][0], NK[j][1], (enum pattern)((i + j) % 5),
				   (i + j) % 7 == 0);
}

/* ctq_gemm_w8a8_launch_on: each path this GPU has, forced through the one
 * entry point the backend and the benchmark use, against the reference;
 * a path that cannot take the operands is a usage error naming it. */
Test(kernels, every_path_forced_bit_exact, .init = setup, .fini = teardown, .timeout = 600)
{
	static const int64_t dims[][3] = {{1, 2560, 2560}, {16, 136, 528}, {64, 6144, 2560}, {300, 2560, 9728}};
	int ran = 0;
	for (int p = 0; p < CTQ_GEMM_PATH_COUNT; p++)
		for (size_t i = 0; i < sizeof dims / sizeof *dims; i++) {
			const int64_t M = dims[i][0], N = dims[i][1], K = dims[i][2];
			size_t mk = (size_t)(M * K), nk = (size_t)(N * K), mn = (size_t)(M * N);
			uint16_t *x = malloc(mk * 2), *y = malloc(mn * 2), *y_ref = malloc(mn * 2);
			int8_t *w = malloc(nk), *q = malloc(mk);
			float *sw = malloc((size_t)N * 4), *sa = malloc((size_t)M * 4);
			int32_t *acc_ref = malloc(mn * 4);
			struct ctq_rng r;
			ctq_rng_seed(&r, (uint64_t)(p * 131 + (int)i));
			fill_x(x, M, K, P_GAUSS, (uint64_t)(M + N));
			for (size_t k = 0; k < nk; k++)
				w[k] = (int8_t)((int)ctq_rng_below(&r, 256) - 128);
			for (int64_t n = 0; n < N; n++)
				sw[n] = (float)((0.5 + ctq_rng_uniform(&r)) * 4e-4);
			struct ctq_error err = {0};
			ctq_ref_quantize_bf16(x, M, K, q, sa);
			cr_assert_eq(ctq_ref_gemm_i8(q, w, M, N, K, acc_ref, &err), CTQ_OK);
			ctq_ref_w8a8_epilogue(acc_ref, sa, sw, NULL, M, N, y_ref);
			void *dq = dev_copy(q, mk), *dw = dev_copy(w, nk), *dsw = dev_copy(sw, (size_t)N * 4);
			void *dsa = dev_copy(sa, (size_t)M * 4), *dy = NULL;
			cr_assert_eq(gpu.ops->alloc(&gpu, mn * 2, &dy, &err), CTQ_OK);
			cr_assert_eq(cudaMemset(dy, 0xff, mn * 2), cudaSuccess);
			const enum ctq_gemm_path path = (enum ctq_gemm_path)p;
			const bool fits = path == CTQ_GEMM_PATH_SM90_WGMMA ? ctq_gemm_sm90_fits(dq, dw, M, N, K, 0)
					  : path == CTQ_GEMM_PATH_SM80_MMA   ? ctq_gemm_sm80_fits(dq, dw, M, N, K, 0)
					  : path == CTQ_GEMM_PATH_GEMV	     ? M <= 16
									     : true;
			enum ctq_status st = ctq_gemm_w8a8_launch_on(path, dq, dw, dsa, dsw, NULL, M, N, K, NULL, dy, 0,
								     NULL, &err);
			if (!fits) {
				cr_expect_eq(st, CTQ_ERR_USAGE, "%s M=%lld", ctq_gemm_path_name(path), (long long)M);
				cr_expect_str_eq(err.path, ctq_gemm_path_name(path));
			} else {
				ran++;
				cr_assert_eq(st, CTQ_OK, "%s: %s", ctq_gemm_path_name(path), err.message);
				cr_assert_eq(cudaDeviceSynchronize(), cudaSuccess);
				from_dev(y, dy, mn * 2);
				for (size_t k = 0; k < mn; k++)
					cr_assert_eq(y[k], y_ref[k], "%s M=%lld N=%lld K=%lld: y[%zu] %#06x vs %#06x",
						     ctq_gemm_path_name(path), (long long)M, (long long)N, (long long)K, k,
						     y[k], y_ref[k]);
			}
			gpu.ops->free(&gpu, dq), gpu.ops->free(&gpu, dw), gpu.ops->free(&gpu, dsw);
			gpu.ops->free(&gpu, dsa), gpu.ops->free(&gpu, dy);
			free(x), free(y), free(y_ref), free(w), free(q), free(sw), free(sa), free(acc_ref);
		}
	cr_expect(ran >= 8, "only %d forced runs", ran);
}

/* CTQ_ARCH: the dispatch of another generation on this GPU. sm_86 on an
 * H200 takes sm80-mma above the GEMV's M and never PDL; an architecture
 * whose choices the GPU cannot execute is refused at backend open. */
Test(kernels, arch_knob_dispatches_as_that_generation, .timeout = 120)
{
	int dev = 0, major = 0;
	cr_assert_eq(cudaGetDevice(&dev), cudaSuccess);
	cr_assert_eq(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev), cudaSuccess);
	if (major < 8)
		cr_skip_test("compute capability below 8.0");
	setenv("CTQ_ARCH", "sm_86", 1);
	struct ctq_error err = {0};
	cr_assert_eq(ctq_backend_cuda(&gpu, 0, &err), CTQ_OK, "%s", err.message);
	static const int8_t aligned[16] __attribute__((aligned(16)));
	cr_expect_eq(ctq_gemm_w8a8_path(aligned, aligned, 1024, 2560, 2560, 0), CTQ_GEMM_PATH_SM80_MMA);
	cr_expect_eq(ctq_gemm_w8a8_path(aligned, aligned, 8, 2560, 2560, 0), CTQ_GEMM_PATH_SM80_MMA);
	cr_expect_eq(ctq_gemm_w8a8_path(aligned, aligned, 1, 2560, 2560, 0), CTQ_GEMM_PATH_GEMV);
	cr_expect_eq(ctq_gemm_w8a8_path(aligned, aligned, 1024, 2560, 2568 + 1, 0), CTQ_GEMM_PATH_DP4A,
		     "K %% 16 != 0: dp4a");
	cr_expect(!ctq_gemm_sm90_available());
	cr_expect_eq(ctq_cuda_dispatch_cc(), 86);
	char desc[256];
	gpu.ops->describe(&gpu, desc, sizeof desc);
	cr_expect(strstr(desc, "dispatching as sm_86 (CTQ_ARCH)"), "%s", desc);
	ctq_backend_close(&gpu);
}

Test(kernels, arch_knob_refuses_what_the_gpu_cannot_run, .timeout = 120)
{
	int dev = 0, major = 0, minor = 0;
	cr_assert_eq(cudaGetDevice(&dev), cudaSuccess);
	cr_assert_eq(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev), cudaSuccess);
	cr_assert_eq(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev), cudaSuccess);
	/* wgmma exists on 9.0 alone: sm_90a elsewhere, sm_100 below 9.0 */
	setenv("CTQ_ARCH", major * 10 + minor == 90 ? "sm_120" : "sm_90a", 1);
	struct ctq_error err = {0};
	enum ctq_status st = ctq_backend_cuda(&gpu, 0, &err);
	if (major * 10 + minor == 90) {
		cr_expect_eq(st, CTQ_OK, "sm_120 dispatch (sm80-mma with PDL) runs on a 9.0 GPU: %s", err.message);
		static const int8_t aligned[16] __attribute__((aligned(16)));
		cr_expect_eq(ctq_gemm_w8a8_path(aligned, aligned, 1024, 2560, 2560, 0), CTQ_GEMM_PATH_SM80_MMA);
		ctq_backend_close(&gpu);
	} else {
		cr_expect_eq(st, CTQ_ERR_USAGE);
		cr_expect_str_eq(err.path, "CTQ_ARCH");
		cr_expect(strstr(err.message, "wgmma"), "%s", err.message);
	}
}

/* Attention on the GPU against the CPU reference op: a prefill of L tokens
 * into slot 1 of the cache, then one decode token at position L (the split-
 * key path with partials merged when the context is long and the tokens
 * few). Outputs are BF16 on the GPU, f32 on the CPU: rel-L2 within 1e-2. */
static void check_attention(int64_t L, int64_t heads, int64_t kv_heads, int64_t d)
{
	struct ctq_backend ref;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_backend_reference(&ref, &err), CTQ_OK, "%s", err.message);
	const int64_t ld = (heads + 2 * kv_heads) * d, slots = 2, max_len = L + 8;
	const int64_t tokens = L + 1;
	float *x = malloc((size_t)(tokens * ld) * sizeof(float));
	uint16_t *xb = malloc((size_t)(tokens * ld) * 2);
	struct ctq_rng r;
	ctq_rng_seed(&r, (uint64_t)(L * 131 + heads * 7 + kv_heads * 3 + d));
	for (int64_t i = 0; i < tokens * ld; i++) {
		xb[i] = ctq_f32_to_bf16((float)ctq_rng_normal(&r));
		x[i] = ctq_bf16_to_f32(xb[i]);
	}
	int32_t *slot = malloc((size_t)tokens * 4), *pos = malloc((size_t)tokens * 4);
	for (int64_t t = 0; t < tokens; t++) {
		slot[t] = 1;
		pos[t] = (int32_t)t;
	}
	const size_t cache_elems = (size_t)(slots * max_len * kv_heads * d);
	const size_t out_elems = (size_t)(tokens * heads * d);
	float *out_ref = malloc(out_elems * sizeof(float)), *out_gpu = malloc(out_elems * sizeof(float));
	uint16_t *outb = malloc(out_elems * 2);
	/* reference */
	float *kc = calloc(cache_elems, sizeof(float)), *vc = calloc(cache_elems, sizeof(float));
	cr_assert_eq(ref.ops->attention(&ref, x, x + heads * d, x + (heads + kv_heads) * d, ld, kc, vc,
					slot, pos, NULL, NULL, L, heads, kv_heads, d, max_len, out_ref, &err),
		     CTQ_OK, "%s", err.message);
	cr_assert_eq(ref.ops->attention(&ref, x + L * ld, x + L * ld + heads * d,
					x + L * ld + (heads + kv_heads) * d, ld, kc, vc, slot + L, pos + L,
					NULL, NULL, 1, heads, kv_heads, d, max_len, out_ref + L * heads * d, &err),
		     CTQ_OK, "%s", err.message);
	/* GPU */
	void *dx = dev_copy(xb, (size_t)(tokens * ld) * 2), *dslot = dev_copy(slot, (size_t)tokens * 4);
	void *dpos = dev_copy(pos, (size_t)tokens * 4), *dkc = NULL, *dvc = NULL, *dout = NULL;
	cr_assert_eq(gpu.ops->alloc(&gpu, cache_elems * 2, &dkc, &err), CTQ_OK);
	cr_assert_eq(gpu.ops->alloc(&gpu, cache_elems * 2, &dvc, &err), CTQ_OK);
	cr_assert_eq(gpu.ops->alloc(&gpu, out_elems * 2, &dout, &err), CTQ_OK);
	uint16_t *bx = dx;
	cr_assert_eq(gpu.ops->attention(&gpu, bx, bx + heads * d, bx + (heads + kv_heads) * d, ld, dkc, dvc,
					dslot, dpos, slot, pos, L, heads, kv_heads, d, max_len, dout, &err),
		     CTQ_OK, "%s", err.message);
	cr_assert_eq(gpu.ops->attention(&gpu, bx + L * ld, bx + L * ld + heads * d,
					bx + L * ld + (heads + kv_heads) * d, ld, dkc, dvc,
					(int32_t *)dslot + L, (int32_t *)dpos + L, slot + L, pos + L, 1, heads, kv_heads, d,
					max_len, (uint16_t *)dout + L * heads * d, &err),
		     CTQ_OK, "%s", err.message);
	from_dev(outb, dout, out_elems * 2);
	for (size_t i = 0; i < out_elems; i++)
		out_gpu[i] = ctq_bf16_to_f32(outb[i]);
	/* prefill rows, then the decode row */
	const size_t np = (size_t)(L * heads * d), nd = (size_t)(heads * d);
	double e[2] = {0, 0}, n2[2] = {0, 0};
	for (size_t i = 0; i < out_elems; i++) {
		const int w = i >= np;
		e[w] += (double)(out_gpu[i] - out_ref[i]) * (out_gpu[i] - out_ref[i]);
		n2[w] += (double)out_ref[i] * out_ref[i];
	}
	const double rp = sqrt(e[0] / n2[0]), rd = sqrt(e[1] / n2[1]);
	cr_log_info("attention L=%lld heads=%lld kv=%lld d=%lld: prefill rel-L2 %.3e, decode %.3e",
		    (long long)L, (long long)heads, (long long)kv_heads, (long long)d, rp, rd);
	cr_assert(rp < 1e-2 && rd < 1e-2,
		  "attention L=%lld heads=%lld kv=%lld d=%lld: prefill rel-L2 %.3e, decode %.3e (%zu values)",
		  (long long)L, (long long)heads, (long long)kv_heads, (long long)d, rp, rd, nd);
	gpu.ops->free(&gpu, dx), gpu.ops->free(&gpu, dslot), gpu.ops->free(&gpu, dpos);
	gpu.ops->free(&gpu, dkc), gpu.ops->free(&gpu, dvc), gpu.ops->free(&gpu, dout);
	free(x), free(xb), free(slot), free(pos), free(out_ref), free(out_gpu), free(outb), free(kc), free(vc);
	ctq_backend_close(&ref);
}

Test(kernels, attention_matches_reference, .init = setup, .fini = teardown, .timeout = 600)
{
	check_attention(1024, 32, 8, 128); /* Qwen3-4B heads: decode splits the keys */
	check_attention(100, 16, 16, 64);  /* no grouping */
	check_attention(37, 16, 2, 128);   /* groups of 8 */
	check_attention(300, 12, 4, 256);  /* d = 256 */
	check_attention(65, 9, 3, 64);     /* SmolLM2's heads */
	check_attention(50, 8, 4, 80);     /* d = 80: the per-head kernel */
}
