/* Criterion tests for the host side of `ctq bench gemm` (bench/gemm.h,
 * harness/cmd_bench_gemm.c): the operation and byte counts per
 * implementation, rotation copies against the L2, the peak table, sample
 * statistics, the metrics of a row, the bit-exact row check against the CPU
 * reference (first mismatch named), bench_gemm.csv / samples / manifest /
 * plots written from synthetic timing rows and read back, the targets on a
 * row set that meets them and on sets that miss each one, the GEMM section
 * of `ctq report`, and the command refusing cleanly without a GPU. The CUDA
 * driver itself runs in tests/gpu/test_bench_gemm_gpu.c. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/fileio.h"
#include "core/json.h"
#include "core/rng.h"
#include "harness/commands.h"
#include "reference/ref_ops.h"
#include "bench/gemm.h"
#include "results/env.h"
#include "results/plot.h"
#include "reports/report.h"
#include "results/run.h"
#include "results/table.h"
#include "tests/model_fixture.h"

TestSuite(bench_gemm);

static const struct ctq_gemm_peaks h200 = {1979, 4800, "test"};

static bool close_rel(double a, double b, double tol)
{
	return fabs(a - b) <= tol * fabs(b);
}

Test(bench_gemm, ops_and_bytes_per_impl)
{
	/* M 3, N 5, K 7: MK 21, NK 35, MN 15. */
	cr_expect_eq(ctq_gemm_ops(CTQ_GEMM_GEMM, 3, 5, 7), 210);
	cr_expect_eq(ctq_gemm_ops(CTQ_GEMM_BF16, 3, 5, 7), 210);
	cr_expect_eq(ctq_gemm_ops(CTQ_GEMM_QUANTIZE, 3, 5, 7), 0);
	cr_expect_eq(ctq_gemm_bytes(CTQ_GEMM_W8A8, 3, 5, 7), 42 + 35 + 40 + 30);
	cr_expect_eq(ctq_gemm_bytes(CTQ_GEMM_GEMM, 3, 5, 7), 21 + 12 + 35 + 40 + 30);
	cr_expect_eq(ctq_gemm_bytes(CTQ_GEMM_QUANTIZE, 3, 5, 7), 42 + 21 + 12);
	cr_expect_eq(ctq_gemm_bytes(CTQ_GEMM_BF16, 3, 5, 7), 42 + 70 + 30);
	cr_expect_eq(ctq_gemm_bytes(CTQ_GEMM_I8, 3, 5, 7), 21 + 35 + 60);
	cr_expect_eq(ctq_gemm_weight_bytes(CTQ_GEMM_GEMM, 5, 7), 35);
	cr_expect_eq(ctq_gemm_weight_bytes(CTQ_GEMM_BF16, 5, 7), 70);
	cr_expect_eq(ctq_gemm_weight_bytes(CTQ_GEMM_QUANTIZE, 5, 7), 0);
	/* ctq_w8a8 also touches q and s twice between its kernels. */
	cr_expect_eq(ctq_gemm_touched_bytes(CTQ_GEMM_W8A8, 3, 5, 7), 147 + 2 * (21 + 12));
	cr_expect_eq(ctq_gemm_touched_bytes(CTQ_GEMM_GEMM, 3, 5, 7), 138);
	for (int i = 0; i < CTQ_GEMM_IMPL_COUNT; i++) {
		enum ctq_gemm_impl back;
		cr_expect(ctq_gemm_impl_parse(ctq_gemm_impl_name((enum ctq_gemm_impl)i), &back) && (int)back == i);
	}
	enum ctq_gemm_impl x;
	cr_expect(!ctq_gemm_impl_parse("cublas", &x));
	cr_expect_str_eq(ctq_gemm_impl_name(CTQ_GEMM_I8), "cublaslt_i8");
}

Test(bench_gemm, copies_exceed_a_multiple_of_the_l2)
{
	const int64_t l2 = 50 << 20;
	static const double touched[] = {15.7e6, 10.5e6, 1.0e6, 150e6, 1e9};
	for (size_t i = 0; i < sizeof touched / sizeof *touched; i++) {
		int c = ctq_gemm_copies(touched[i], l2);
		cr_expect(c >= 1);
		cr_expect((double)c * touched[i] >= CTQ_GEMM_L2_FACTOR * (double)l2 || c == 1,
			  "%g bytes: %d copies", touched[i], c);
		/* The fewest that do: one less would not. */
		cr_expect(c == 1 || (double)(c - 1) * touched[i] < CTQ_GEMM_L2_FACTOR * (double)l2);
	}
	cr_expect_eq(ctq_gemm_copies(15.7e6, l2), 11);
	cr_expect_eq(ctq_gemm_copies(1e9, l2), 1);
	cr_expect_eq(ctq_gemm_copies(100, l2), CTQ_GEMM_MAX_COPIES);
	cr_expect_eq(ctq_gemm_copies(1e6, 0), 1);
}

Test(bench_gemm, peaks_by_device_name_and_overrides)
{
	struct ctq_gemm_peaks p;
	ctq_gemm_peaks_for("NVIDIA H200", 0, 0, &p);
	cr_expect_eq(p.int8_tops, 1979);
	cr_expect_eq(p.hbm_gbps, 4800);
	ctq_gemm_peaks_for("NVIDIA H100 80GB HBM3", 0, 0, &p);
	cr_expect_eq(p.int8_tops, 1979);
	cr_expect_eq(p.hbm_gbps, 3350);
	/* Not invented for a device the table does not know (an H200 NVL is not an H200 SXM). */
	ctq_gemm_peaks_for("NVIDIA H200 NVL", 0, 0, &p);
	cr_expect(isnan(p.int8_tops) && isnan(p.hbm_gbps));
	cr_expect(strstr(p.source, "unknown device") && strstr(p.source, "--peak-tops"), "%s", p.source);
	ctq_gemm_peaks_for("NVIDIA H200 NVL", 1671, 4800, &p);
	cr_expect_eq(p.int8_tops, 1671);
	cr_expect_eq(p.hbm_gbps, 4800);
	cr_expect(strstr(p.source, "--peak-tops") && strstr(p.source, "--hbm-gbps"), "%s", p.source);
	ctq_gemm_peaks_for("NVIDIA H200", 0, 4000, &p);
	cr_expect_eq(p.int8_tops, 1979);
	cr_expect_eq(p.hbm_gbps, 4000);
}

Test(bench_gemm, sample_statistics)
{
	struct ctq_gemm_stats s;
	const double v[] = {5, 1, 3, 2, 4};
	ctq_gemm_stats(v, 5, &s);
	cr_expect_eq(s.median, 3);
	cr_expect_eq(s.min, 1);
	cr_expect_eq(s.mean, 3);
	cr_expect(close_rel(s.stddev, sqrt(2.5), 1e-12));
	cr_expect(close_rel(s.cv, sqrt(2.5) / 3, 1e-12));
	cr_expect_eq(v[0], 5, "the samples are not reordered");
	const double e[] = {4, 1, 3, 2};
	ctq_gemm_stats(e, 4, &s);
	cr_expect_eq(s.median, 2.5);
	ctq_gemm_stats(e, 0, &s);
	cr_expect(isnan(s.median) && isnan(s.cv));
}

static struct ctq_gemm_row row(const char *shape, int64_t K, int64_t N, int64_t M, enum ctq_gemm_impl impl,
			       double median_us)
{
	struct ctq_gemm_row r;
	memset(&r, 0, sizeof r);
	snprintf(r.shape, sizeof r.shape, "%s", shape);
	r.K = K, r.N = N, r.M = M, r.impl = impl;
	snprintf(r.check, sizeof r.check, "%s", ctq_gemm_impl_is_ctq(impl) ? "pass" : "-");
	r.samples = isnan(median_us) ? 0 : 30;
	r.copies = 2, r.calls = 4;
	r.time_us_median = median_us;
	r.time_us_min = 0.95 * median_us;
	r.time_cv = 0.01;
	return r;
}

Test(bench_gemm, row_metrics_and_speedup)
{
	const int64_t M = 1024, N = 2560, K = 4096;
	struct ctq_gemm_row r[3] = {row("o", K, N, M, CTQ_GEMM_GEMM, 20), row("o", K, N, M, CTQ_GEMM_BF16, 40),
				    row("o", K, N, M, CTQ_GEMM_QUANTIZE, 5)};
	for (int i = 0; i < 3; i++)
		ctq_gemm_row_metrics(&r[i], &h200);
	ctq_gemm_rows_speedup(r, 3);
	const double ops = 2.0 * M * N * K, t = 20e-6;
	cr_expect(close_rel(r[0].ops, ops, 0));
	cr_expect(close_rel(r[0].tops, ops / t / 1e12, 1e-12), "%g", r[0].tops);
	cr_expect(close_rel(r[0].pct_int8_peak, 100 * ops / t / 1e12 / 1979, 1e-12));
	const double bytes = (double)M * K + 4.0 * M + (double)N * K + 8.0 * N + 2.0 * M * N;
	cr_expect(close_rel(r[0].bytes, bytes, 0));
	cr_expect(close_rel(r[0].gbps, bytes / t / 1e9, 1e-12));
	cr_expect(close_rel(r[0].pct_hbm, 100 * bytes / t / 1e9 / 4800, 1e-12));
	cr_expect(close_rel(r[0].pct_hbm_weights, 100 * (double)N * K / t / 1e9 / 4800, 1e-12));
	cr_expect_eq(r[0].peak_tops, 1979);
	cr_expect_eq(r[0].speedup_vs_bf16, 2.0);
	cr_expect_eq(r[1].speedup_vs_bf16, 1.0);
	cr_expect(isnan(r[2].tops) && isnan(r[2].speedup_vs_bf16), "no TOPS or speedup for the quantization");
	cr_expect(close_rel(r[2].gbps, (3.0 * M * K + 4.0 * M) / 5e-6 / 1e9, 1e-12));
	/* Unknown peaks: no percentages, TOPS still. */
	struct ctq_gemm_peaks none = {NAN, NAN, ""};
	ctq_gemm_row_metrics(&r[0], &none);
	cr_expect(!isnan(r[0].tops) && isnan(r[0].pct_int8_peak) && isnan(r[0].pct_hbm_weights));
}

Test(bench_gemm, check_rows_include_first_and_last)
{
	int64_t rows[64];
	cr_expect_eq(ctq_gemm_check_rows(1, 32, rows), 1);
	cr_expect_eq(rows[0], 0);
	cr_expect_eq(ctq_gemm_check_rows(5, 32, rows), 5);
	cr_expect_eq(rows[4], 4);
	cr_expect_eq(ctq_gemm_check_rows(8192, 32, rows), 32);
	cr_expect_eq(rows[0], 0);
	cr_expect_eq(rows[31], 8191);
	for (int i = 1; i < 32; i++)
		cr_expect(rows[i] > rows[i - 1]);
	cr_expect_eq(ctq_gemm_check_rows(33, 32, rows), 32);
	cr_expect_eq(rows[31], 32);
}

/* A point's inputs and the outputs a correct device would return for rows. */
struct point {
	int64_t M, N, K, rows[8], nr;
	uint16_t *x, *y, *yw;
	int8_t *w, *q;
	float *sw, *bias, *s;
	int32_t *acc, *acc_i8;
};

static void point_make(struct point *p, int64_t M, int64_t N, int64_t K, int64_t n_check)
{
	memset(p, 0, sizeof *p);
	p->M = M, p->N = N, p->K = K;
	p->nr = ctq_gemm_check_rows(M, n_check, p->rows);
	p->x = malloc((size_t)(M * K) * 2);
	p->w = malloc((size_t)(N * K));
	p->sw = malloc((size_t)N * 4);
	p->bias = malloc((size_t)N * 4);
	struct ctq_rng r;
	ctq_rng_seed(&r, 7);
	for (int64_t i = 0; i < M * K; i++)
		p->x[i] = ctq_f32_to_bf16((float)(4 * ctq_rng_uniform(&r) - 2));
	for (int64_t i = 0; i < N * K; i++)
		p->w[i] = (int8_t)((int)ctq_rng_below(&r, 255) - 127);
	for (int64_t i = 0; i < N; i++) {
		p->sw[i] = (float)(1e-3 * (0.5 + ctq_rng_uniform(&r)));
		p->bias[i] = (float)(0.1 * ctq_rng_uniform(&r));
	}
	const int64_t n = p->nr;
	uint16_t *xr = malloc((size_t)(n * K) * 2);
	p->q = malloc((size_t)(n * K));
	p->s = malloc((size_t)n * 4);
	p->acc = malloc((size_t)(n * N) * 4);
	p->acc_i8 = malloc((size_t)(n * N) * 4);
	p->y = malloc((size_t)(n * N) * 2);
	p->yw = malloc((size_t)(n * N) * 2);
	for (int64_t i = 0; i < n; i++)
		memcpy(xr + i * K, p->x + p->rows[i] * K, (size_t)K * 2);
	struct ctq_error err = {0};
	ctq_ref_quantize_bf16(xr, n, K, p->q, p->s);
	cr_assert_eq(ctq_ref_gemm_i8(p->q, p->w, n, N, K, p->acc, &err), CTQ_OK);
	memcpy(p->acc_i8, p->acc, (size_t)(n * N) * 4);
	ctq_ref_w8a8_epilogue(p->acc, p->s, p->sw, p->bias, n, N, p->y);
	memcpy(p->yw, p->y, (size_t)(n * N) * 2);
	free(xr);
}

static void point_free(struct point *p)
{
	free(p->x), free(p->w), free(p->sw), free(p->bias), free(p->q), free(p->s);
	free(p->acc), free(p->acc_i8), free(p->y), free(p->yw);
}

static void check(const struct point *p, char *ctq, char *i8)
{
	struct ctq_gemm_check_in in = {.M = p->M, .N = p->N, .K = p->K, .x = p->x, .w = p->w, .s_w = p->sw,
				       .bias = p->bias, .rows = p->rows, .n_rows = p->nr, .q = p->q, .s = p->s,
				       .acc = p->acc, .y_gemm = p->y, .y_w8a8 = p->yw, .acc_i8 = p->acc_i8};
	struct ctq_error err = {0};
	cr_assert_eq(ctq_gemm_check(&in, ctq, 300, i8, 300, &err), CTQ_OK, "%s", err.message);
}

Test(bench_gemm, check_is_bit_exact_and_names_the_first_mismatch)
{
	struct point p;
	/* 100 rows, 4 checked: 0, 33, 66, 99; device rows are packed in that order. */
	point_make(&p, 100, 9, 48, 4);
	cr_assert_eq(p.nr, 4);
	cr_assert_eq(p.rows[1], 33);
	char ctq[300], i8[300];
	check(&p, ctq, i8);
	cr_expect_str_empty(ctq, "%s", ctq);
	cr_expect_str_empty(i8, "%s", i8);

	/* One ulp on one BF16 output of ctq_gemm: packed row 1 (row 33), col 2. */
	uint16_t want = p.y[1 * 9 + 2];
	p.y[1 * 9 + 2] = (uint16_t)(want + 1);
	check(&p, ctq, i8);
	char expect[200];
	snprintf(expect, sizeof expect, "ctq_gemm bf16 output row 33 col 2: got 0x%04x", want + 1);
	cr_expect(strstr(ctq, expect), "%s", ctq);
	snprintf(expect, sizeof expect, "want 0x%04x", want);
	cr_expect(strstr(ctq, expect), "%s", ctq);
	p.y[1 * 9 + 2] = want;

	/* The end-to-end output, then the accumulators (named before outputs). */
	p.yw[3 * 9 + 8] ^= 0x8000;
	check(&p, ctq, i8);
	cr_expect(strstr(ctq, "ctq_w8a8 bf16 output row 99 col 8"), "%s", ctq);
	p.acc[2 * 9 + 0] += 1;
	check(&p, ctq, i8);
	cr_expect(strstr(ctq, "ctq_gemm int32 accumulator row 66 col 0: got"), "%s", ctq);
	p.acc[2 * 9 + 0] -= 1;
	p.yw[3 * 9 + 8] ^= 0x8000;

	/* Quantization: q, then the scale. */
	p.q[5] = (int8_t)(p.q[5] == 127 ? 126 : p.q[5] + 1);
	check(&p, ctq, i8);
	cr_expect(strstr(ctq, "ctq_quantize q row 0 col 5"), "%s", ctq);
	p.q[5] = (int8_t)(p.q[5] == 126 ? 127 : p.q[5] - 1);
	check(&p, ctq, i8);
	cr_expect_str_empty(ctq, "restored: %s", ctq);
	p.s[2] = nextafterf(p.s[2], 1.0f);
	check(&p, ctq, i8);
	cr_expect(strstr(ctq, "ctq_quantize scale row 66"), "%s", ctq);
	p.s[2] = nextafterf(p.s[2], 0.0f);

	/* cuBLASLt's accumulators: reported apart, ctq unaffected. */
	p.acc_i8[9 + 4] = -p.acc_i8[9 + 4] - 1;
	check(&p, ctq, i8);
	cr_expect_str_empty(ctq, "%s", ctq);
	cr_expect(strstr(i8, "cublaslt_i8 int32 row 33 col 4"), "%s", i8);
	point_free(&p);
}

/* ---- synthetic timing rows --------------------------------------------------- */

static const int64_t Ms[] = {1, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192};
#define N_M (sizeof Ms / sizeof *Ms)

/* A shape's five rows per M from a roofline model that meets every target:
 * ctq_gemm at 80% of the INT8 peak or 80% of HBM for its weights, BF16 twice
 * as slow, the quantization at 85% of HBM with a 2 us floor. */
static size_t model_rows(struct ctq_gemm_row *out, const char *shape, int64_t K, int64_t N)
{
	size_t n = 0;
	for (size_t i = 0; i < N_M; i++) {
		const int64_t M = Ms[i];
		double gemm = fmax((double)N * K / (0.8 * 4800e9), 2.0 * M * N * K / (0.8 * 1979e12)) * 1e6;
		double quant = fmax(2.0, ctq_gemm_bytes(CTQ_GEMM_QUANTIZE, M, N, K) / (0.85 * 4800e9) * 1e6);
		out[n++] = row(shape, K, N, M, CTQ_GEMM_W8A8, gemm + quant);
		out[n++] = row(shape, K, N, M, CTQ_GEMM_GEMM, gemm);
		out[n++] = row(shape, K, N, M, CTQ_GEMM_QUANTIZE, quant);
		out[n++] = row(shape, K, N, M, CTQ_GEMM_BF16, 2 * gemm);
		out[n++] = row(shape, K, N, M, CTQ_GEMM_I8, 1.1 * gemm);
	}
	return n;
}

static void finish(struct ctq_gemm_row *r, size_t n, const struct ctq_gemm_peaks *p)
{
	for (size_t i = 0; i < n; i++)
		ctq_gemm_row_metrics(&r[i], p);
	ctq_gemm_rows_speedup(r, n);
}

static struct ctq_gemm_row *find(struct ctq_gemm_row *r, size_t n, const char *shape, int64_t M,
				 enum ctq_gemm_impl impl)
{
	for (size_t i = 0; i < n; i++)
		if (r[i].M == M && r[i].impl == impl && !strcmp(r[i].shape, shape))
			return &r[i];
	cr_assert_fail("no row %s M=%lld %s", shape, (long long)M, ctq_gemm_impl_name(impl));
	return NULL;
}

static const struct ctq_gemm_target *target(const struct ctq_gemm_target *t, size_t n,
					    enum ctq_gemm_target_id id, const char *shape)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].id == id && !strcmp(t[i].shape, shape))
			return &t[i];
	cr_assert_fail("no target %d for %s", (int)id, shape);
	return NULL;
}

static struct ctq_gemm_target *targets_of(struct ctq_gemm_row *r, size_t n, size_t *nt)
{
	struct ctq_gemm_target *t = NULL;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_gemm_targets(r, n, &t, nt, &err), CTQ_OK, "%s", err.message);
	return t;
}

Test(bench_gemm, targets_met_by_a_roofline_model)
{
	struct ctq_gemm_row r[2 * 5 * N_M];
	size_t n = model_rows(r, "o_proj", 4096, 2560);
	n += model_rows(r + n, "qkv_proj", 2560, 6144);
	finish(r, n, &h200);
	size_t nt;
	struct ctq_gemm_target *t = targets_of(r, n, &nt);
	cr_assert_eq(nt, 2 * CTQ_GEMM_TGT_COUNT);
	for (size_t i = 0; i < nt; i++)
		cr_expect_eq(t[i].verdict, CTQ_GEMM_PASS, "%s %s: %s %s", t[i].shape,
			     ctq_gemm_target_text(t[i].id), ctq_gemm_verdict_name(t[i].verdict), t[i].detail);
	const struct ctq_gemm_target *s = target(t, nt, CTQ_GEMM_TGT_SPEEDUP, "o_proj");
	cr_expect(strstr(s->detail, "worst 2x at M=") && strstr(s->detail, "over 4 points"), "%s", s->detail);
	const char *detail, *shape;
	cr_expect_eq(ctq_gemm_target_overall(t, nt, CTQ_GEMM_TGT_JUMP, &detail, &shape), CTQ_GEMM_PASS);
	free(t);
}

Test(bench_gemm, targets_missed_one_at_a_time)
{
	static const struct {
		enum ctq_gemm_target_id id;
		int64_t M;
		enum ctq_gemm_impl impl;
		double factor; /* on the median time */
		const char *detail;
	} cases[] = {
		{CTQ_GEMM_TGT_SPEEDUP, 2048, CTQ_GEMM_BF16, 0.75, "1.5x at M=2048"},
		{CTQ_GEMM_TGT_PEAK, 4096, CTQ_GEMM_GEMM, 1.6, "50% at M=4096"},
		{CTQ_GEMM_TGT_WEIGHTS, 1, CTQ_GEMM_GEMM, 2.0, "40% at M=1"},
		{CTQ_GEMM_TGT_JUMP, 256, CTQ_GEMM_GEMM, 1.5, "ctq_gemm M=256"},
		{CTQ_GEMM_TGT_JUMP, 64, CTQ_GEMM_W8A8, 1.2, "ctq_w8a8 M=64"},
		{CTQ_GEMM_TGT_QUANT_BW, 8192, CTQ_GEMM_QUANTIZE, 85.0 / 70.0, "70% at M=8192"},
		{CTQ_GEMM_TGT_QUANT_LAT, 64, CTQ_GEMM_QUANTIZE, 1.6, "3.2 us at M=64"},
	};
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		struct ctq_gemm_row r[5 * N_M];
		size_t n = model_rows(r, "down_proj", 9728, 2560);
		find(r, n, "down_proj", cases[c].M, cases[c].impl)->time_us_median *= cases[c].factor;
		finish(r, n, &h200);
		size_t nt;
		struct ctq_gemm_target *t = targets_of(r, n, &nt);
		for (size_t i = 0; i < nt; i++) {
			/* A bump in ctq_gemm also lowers its TOPS at that M; only the named target is asked. */
			if (t[i].id != cases[c].id)
				continue;
			cr_expect_eq(t[i].verdict, CTQ_GEMM_MISS, "case %zu: %s: %s", c, ctq_gemm_target_text(t[i].id),
				     t[i].detail);
			cr_expect(strstr(t[i].detail, cases[c].detail), "case %zu: \"%s\" lacks \"%s\"", c, t[i].detail,
				  cases[c].detail);
		}
		const char *detail, *shape;
		cr_expect_eq(ctq_gemm_target_overall(t, nt, cases[c].id, &detail, &shape), CTQ_GEMM_MISS);
		cr_expect_str_eq(shape, "down_proj");
		free(t);
	}
}

Test(bench_gemm, targets_unmeasured_without_peaks_or_points)
{
	struct ctq_gemm_row r[5 * N_M];
	size_t n = model_rows(r, "s", 2560, 6144);
	struct ctq_gemm_peaks none = {NAN, NAN, ""};
	finish(r, n, &none);
	size_t nt;
	struct ctq_gemm_target *t = targets_of(r, n, &nt);
	cr_expect_eq(target(t, nt, CTQ_GEMM_TGT_PEAK, "s")->verdict, CTQ_GEMM_UNMEASURED);
	cr_expect_eq(target(t, nt, CTQ_GEMM_TGT_WEIGHTS, "s")->verdict, CTQ_GEMM_UNMEASURED);
	cr_expect_eq(target(t, nt, CTQ_GEMM_TGT_QUANT_BW, "s")->verdict, CTQ_GEMM_UNMEASURED);
	/* Peaks do not matter to these. */
	cr_expect_eq(target(t, nt, CTQ_GEMM_TGT_SPEEDUP, "s")->verdict, CTQ_GEMM_PASS);
	cr_expect_eq(target(t, nt, CTQ_GEMM_TGT_QUANT_LAT, "s")->verdict, CTQ_GEMM_PASS);
	free(t);
	/* Only M = 1 and 16: nothing at M >= 1024 and no interior point for the trend. */
	t = targets_of(r, 10, &nt);
	cr_expect_eq(target(t, nt, CTQ_GEMM_TGT_SPEEDUP, "s")->verdict, CTQ_GEMM_UNMEASURED);
	cr_expect_eq(target(t, nt, CTQ_GEMM_TGT_JUMP, "s")->verdict, CTQ_GEMM_UNMEASURED);
	free(t);
}

Test(bench_gemm, plot_script_has_the_gemm_lines_and_the_peak)
{
	struct ctq_gemm_row r[5 * N_M];
	size_t n = model_rows(r, "qkv_proj", 2560, 6144);
	finish(r, n, &h200);
	struct ctq_strbuf body, data;
	ctq_strbuf_init(&body);
	ctq_strbuf_init(&data);
	cr_expect_eq(ctq_gemm_plot(r, n, "qkv_proj", "gemm_qkv_proj", 1979, &body, &data), 4);
	const char *b = ctq_strbuf_str(&body), *d = ctq_strbuf_str(&data);
	cr_expect(strstr(b, "set logscale x 2"), "%s", b);
	cr_expect(strstr(b, "\"gemm_qkv_proj.dat\" index 3 using 1:2"), "%s", b);
	for (int i = 0; i < CTQ_GEMM_IMPL_COUNT; i++)
		if (i != CTQ_GEMM_QUANTIZE)
			cr_expect(strstr(b, ctq_gemm_impl_name((enum ctq_gemm_impl)i)), "%s", b);
	cr_expect(!strstr(b, "ctq_quantize") && !strstr(d, "ctq_quantize"), "no TOPS line for the quantization");
	cr_expect(strstr(b, "1979 with lines dt 2"), "%s", b);
	cr_expect(strstr(d, "\n8192 "), "%s", d);
	ctq_strbuf_reset(&body);
	ctq_strbuf_reset(&data);
	cr_expect_eq(ctq_gemm_plot(r, n, "qkv_proj", "g", NAN, &body, &data), 4);
	cr_expect(!strstr(ctq_strbuf_str(&body), "dt 2"), "no peak line when the peak is unknown");
	cr_expect_eq(ctq_gemm_plot(r, n, "other", "g", 1979, &body, &data), 0);
	ctq_strbuf_free(&body);
	ctq_strbuf_free(&data);
	char name[64];
	ctq_gemm_plot_name(name, sizeof name, "2560:6144+x.y");
	cr_expect_str_eq(name, "gemm_2560_6144_x_y");
}

/* ---- the run directory and the report --------------------------------------- */

/* A run directory as ctq bench gemm writes it, from rows. */
static void write_run(const char *out, struct ctq_gemm_row *r, size_t n)
{
	static const long m[] = {1, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192};
	double *samples = calloc(n * 3, sizeof *samples);
	for (size_t i = 0; i < n; i++) {
		r[i].samples = isnan(r[i].time_us_median) ? 0 : 3;
		for (int k = 0; k < r[i].samples; k++)
			samples[i * 3 + (size_t)k] = r[i].time_us_median * (1 + 0.01 * k);
	}
	struct ctq_run run;
	struct ctq_error err = {0};
	char *argv[] = {"bench", "gemm"};
	cr_assert_eq(ctq_run_begin(&run, out, false, "bench-gemm", 2, argv, &err), CTQ_OK, "%s", err.message);
	struct ctq_gemm_run_info info = {
		.device = "NVIDIA H200 (sm_90, 132 SMs, L2 60.0 MiB, 139.8 GiB)", .device_name = "NVIDIA H200",
		.l2_bytes = 60 << 20, .peaks = h200, .samples = 3, .warmup = 1, .check_rows = 32,
		.min_graph_us = 1000, .seed = 1, .shapes_from = "--shapes test", .m = m, .n_m = 11,
		.points = n / 5};
	char note[300];
	cr_assert_eq(ctq_gemm_write(run.tmp_dir, run.manifest, &info, r, n, samples, 3, note, sizeof note, &err),
		     CTQ_OK, "%s", err.message);
	cr_assert_eq(ctq_run_commit(&run, &err), CTQ_OK, "%s", err.message);
	free(samples);
}

static char *slurp(const char *dir, const char *name)
{
	char path[300], *text = NULL;
	size_t len = 0;
	struct ctq_error err = {0};
	snprintf(path, sizeof path, "%s/%s", dir, name);
	cr_assert_eq(ctq_file_read(path, (size_t)16 << 20, &text, &len, &err), CTQ_OK, "%s", err.message);
	return text;
}

Test(bench_gemm, csv_samples_manifest_and_plots_round_trip)
{
	char dir[] = "/tmp/ctq-gemm-XXXXXX";
	cr_assert(mkdtemp(dir));
	char out[64];
	snprintf(out, sizeof out, "%s/run", dir);
	struct ctq_gemm_row r[2 * 5 * N_M];
	size_t n = model_rows(r, "o_proj", 4096, 2560);
	n += model_rows(r + n, "gate_up_proj", 2560, 19456);
	/* cuBLASLt refused one point: no timing, a note. */
	struct ctq_gemm_row *lt = find(r, n, "o_proj", 1, CTQ_GEMM_I8);
	lt->time_us_median = lt->time_us_min = lt->time_cv = NAN;
	snprintf(lt->note, sizeof lt->note, "cuBLASLt int8 TN: CUBLAS_STATUS_NOT_SUPPORTED (15), \"quoted\"");
	finish(r, n, &h200);
	unsetenv("CTQ_GNUPLOT");
	write_run(out, r, n);

	/* bench_gemm.csv: the fixed header, one row per shape x M x impl, values back. */
	char path[128];
	snprintf(path, sizeof path, "%s/bench_gemm.csv", out);
	struct ctq_table t;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_table_load(&t, path, &err), CTQ_OK, "%s", err.message);
	cr_expect_eq(t.n_cols, ctq_gemm_csv_cols);
	for (size_t i = 0; i < t.n_cols; i++)
		cr_expect_str_eq(t.header[i], ctq_gemm_csv_header[i]);
	cr_expect_eq(t.n_rows, n);
	ctq_table_free(&t);
	struct ctq_gemm_row *back = NULL;
	size_t nb = 0;
	cr_assert_eq(ctq_gemm_rows_load(path, &back, &nb, &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(nb, n);
	for (size_t i = 0; i < n; i++) {
		cr_expect_str_eq(back[i].shape, r[i].shape);
		cr_expect(back[i].M == r[i].M && back[i].N == r[i].N && back[i].K == r[i].K && back[i].impl == r[i].impl);
		cr_expect_str_eq(back[i].check, r[i].check);
		cr_expect_str_eq(back[i].note, r[i].note);
		static const size_t f[] = {offsetof(struct ctq_gemm_row, time_us_median),
					   offsetof(struct ctq_gemm_row, tops),
					   offsetof(struct ctq_gemm_row, pct_hbm_weights),
					   offsetof(struct ctq_gemm_row, speedup_vs_bf16)};
		for (size_t k = 0; k < 4; k++) {
			double a = *(const double *)((const char *)&back[i] + f[k]);
			double b = *(const double *)((const char *)&r[i] + f[k]);
			cr_expect((isnan(a) && isnan(b)) || close_rel(a, b, 1e-8), "row %zu field %zu: %g vs %g", i, k, a, b);
		}
	}
	free(back);
	/* Samples: 3 per timed row. */
	size_t timed = 0;
	for (size_t i = 0; i < n; i++)
		timed += !isnan(r[i].time_us_median);
	snprintf(path, sizeof path, "%s/%s", out, CTQ_GEMM_SAMPLES_FILE);
	cr_assert_eq(ctq_table_load(&t, path, &err), CTQ_OK, "%s", err.message);
	cr_expect_eq(t.n_rows, 3 * timed);
	ctq_table_free(&t);

	/* The manifest: device, peaks, method, targets per shape. */
	cJSON *m = NULL;
	snprintf(path, sizeof path, "%s/manifest.json", out);
	cr_assert_eq(ctq_json_load_file(path, 1 << 20, NULL, &m, &err), CTQ_OK, "%s", err.message);
	const cJSON *g = ctq_json_get(m, "bench_gemm");
	cr_expect_str_eq(ctq_json_str_at(m, "command", ""), "bench-gemm");
	cr_expect_str_eq(ctq_json_str_at(g, "device_name", ""), "NVIDIA H200");
	cr_expect_eq(ctq_json_get(ctq_json_get(g, "peaks"), "int8_dense_tops")->valuedouble, 1979);
	cr_expect(strstr(ctq_json_str_at(g, "method.timing", ""), "CUDA graph"));
	cr_expect(strstr(ctq_json_str_at(g, "method.cache", ""), "L2"));
	cr_expect_eq(cJSON_GetArraySize(ctq_json_get(g, "targets")), 2 * CTQ_GEMM_TGT_COUNT);
	cr_expect_eq(cJSON_GetArraySize(ctq_json_get(g, "shapes")), 2);
	cJSON_Delete(m);

	/* Plots per shape, when gnuplot is here. */
	struct ctq_plotter p;
	ctq_plot_init(&p);
	snprintf(path, sizeof path, "%s/plots/gemm_gate_up_proj.gp", out);
	if (!p.available) {
		fprintf(stderr, "[WARN] no gnuplot (%s): plots not checked\n", p.why); /* not cr_log_warn: it makes Criterion exit 1 */
	} else {
		cr_expect(ctq_path_exists(path), "%s", path);
		snprintf(path, sizeof path, "%s/plots/gemm_o_proj.png", out);
		cr_expect(ctq_path_exists(path), "%s", path);
	}
	ctq_remove_tree(dir);
}

Test(bench_gemm, report_lists_targets_and_fails_on_a_mismatch)
{
	char dir[] = "/tmp/ctq-gemm-XXXXXX";
	cr_assert(mkdtemp(dir));
	char good[64], bad[64];
	snprintf(good, sizeof good, "%s/good", dir);
	snprintf(bad, sizeof bad, "%s/bad", dir);
	unsetenv("CTQ_GNUPLOT");
	struct ctq_gemm_row r[5 * N_M];
	size_t n = model_rows(r, "down_proj", 9728, 2560);
	finish(r, n, &h200);
	write_run(good, r, n);
	struct ctq_report_summary s;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_report_write(good, NULL, &s, &err), CTQ_OK, "%s", err.message);
	cr_expect_str_eq(s.verdict, "PASS");
	char *md = slurp(good, "summary.md");
	cr_expect(strstr(md, "## GEMM throughput"), "%s", md);
	cr_expect(strstr(md, "Hardware: NVIDIA H200"), "no nvidia-smi here: the bench's device names the hardware");
	cr_expect(strstr(md, "| M >= 1024: ctq_gemm >= 1.7x cuBLAS BF16 | pass | pass: worst 2x at M="), "%s", md);
	cr_expect(strstr(md, "| M <= 128: ctq_quantize < 3 us | pass |"), "%s", md);
	cr_expect(strstr(md, "#### down_proj: K=9728, N=2560"), "%s", md);
	if (!s.plot_note[0]) {
		char png[128];
		snprintf(png, sizeof png, "%s/plots/gemm_down_proj.png", good);
		cr_expect(ctq_path_exists(png), "%s", png);
	}
	free(md);

	/* A missed target is a miss line, not a failed run; a ctq mismatch fails it. */
	find(r, n, "down_proj", 2048, CTQ_GEMM_BF16)->time_us_median *= 0.75;
	struct ctq_gemm_row *f = find(r, n, "down_proj", 512, CTQ_GEMM_W8A8);
	snprintf(f->check, sizeof f->check, "fail");
	f->time_us_median = NAN;
	snprintf(f->note, sizeof f->note, "not timed: ctq_w8a8 bf16 output row 3 col 4: got 0x3f81, want 0x3f80");
	finish(r, n, &h200);
	write_run(bad, r, n);
	cr_assert_eq(ctq_report_write(bad, NULL, &s, &err), CTQ_OK, "%s", err.message);
	cr_expect_str_eq(s.verdict, "FAIL");
	md = slurp(bad, "summary.md");
	cr_expect(strstr(md, "| M >= 1024: ctq_gemm >= 1.7x cuBLAS BF16 | miss | miss: worst 1.5x at M=2048"), "%s", md);
	cr_expect(strstr(md, "FAILED: down_proj M=512 ctq_w8a8 differs from the reference"), "%s", md);
	free(md);
	ctq_remove_tree(dir);
}

/* ctq bench gemm --paths: rows impl ctq_gemm@PATH beside the dispatched
 * ones; they round-trip with their kernel path, stay out of the targets
 * and the ctq_gemm series, and the report sets them side by side with
 * cuBLASLt int8 and says what dispatch picked; an untimed path says why. */
Test(bench_gemm, forced_kernel_paths_round_trip_and_are_tabled)
{
	char dir[] = "/tmp/ctq-gemm-XXXXXX";
	cr_assert(mkdtemp(dir));
	char out[64];
	snprintf(out, sizeof out, "%s/run", dir);
	unsetenv("CTQ_GNUPLOT");
	struct ctq_gemm_row r[8 * N_M];
	size_t n = model_rows(r, "qkv_proj", 2560, 6144);
	const size_t n_disp = n;
	for (size_t i = 0; i < n_disp; i++)
		if (r[i].impl == CTQ_GEMM_GEMM || r[i].impl == CTQ_GEMM_W8A8)
			snprintf(r[i].kernel_path, sizeof r[i].kernel_path, "%s", r[i].M == 1 ? "gemv" : "sm90-wgmma");
	for (size_t i = 0; i < N_M; i++) {
		const struct ctq_gemm_row *g = find(r, n_disp, "qkv_proj", Ms[i], CTQ_GEMM_GEMM);
		static const char *const paths[] = {"sm90-wgmma", "sm80-mma", "gemv"};
		for (int k = 0; k < 3; k++) {
			struct ctq_gemm_row x = *g;
			x.forced = true;
			snprintf(x.impl_label, sizeof x.impl_label, "ctq_gemm@%s", paths[k]);
			snprintf(x.kernel_path, sizeof x.kernel_path, "%s", paths[k]);
			/* sm80-mma 1.5x slower than the dispatched kernel: would miss the targets */
			x.time_us_median = g->time_us_median * (k == 1 ? 1.5 : 1.0);
			if (k == 2 && Ms[i] > 16) {
				x.time_us_median = x.time_us_min = x.time_cv = NAN;
				snprintf(x.check, sizeof x.check, "-");
				snprintf(x.note, sizeof x.note, "not run: gemv: does not take M=%lld", (long long)Ms[i]);
			}
			r[n++] = x;
		}
	}
	finish(r, n, &h200);
	size_t nt = 0;
	struct ctq_gemm_target *t = targets_of(r, n, &nt);
	cr_expect_eq(target(t, nt, CTQ_GEMM_TGT_PEAK, "qkv_proj")->verdict, CTQ_GEMM_PASS,
		     "forced rows stay out of the targets: %s", target(t, nt, CTQ_GEMM_TGT_PEAK, "qkv_proj")->detail);
	free(t);
	write_run(out, r, n);

	char path[128];
	snprintf(path, sizeof path, "%s/bench_gemm.csv", out);
	struct ctq_gemm_row *back = NULL;
	size_t nb = 0;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_gemm_rows_load(path, &back, &nb, &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(nb, n);
	for (size_t i = 0; i < n; i++) {
		cr_expect_eq(back[i].forced, r[i].forced, "row %zu", i);
		cr_expect_str_eq(back[i].kernel_path, r[i].kernel_path, "row %zu", i);
		cr_expect_str_eq(back[i].impl_label, r[i].impl_label, "row %zu", i);
		cr_expect_eq(back[i].impl, r[i].impl, "row %zu", i);
	}
	free(back);

	struct ctq_report_summary s;
	cr_assert_eq(ctq_report_write(out, NULL, &s, &err), CTQ_OK, "%s", err.message);
	char *md = slurp(out, "summary.md");
	cr_expect(strstr(md, "| M | sm90-wgmma us | sm90-wgmma / cublaslt_i8 | sm80-mma us | sm80-mma / cublaslt_i8 | "
			     "gemv us | gemv / cublaslt_i8 | cublaslt_i8 us | dispatch picks |"),
		  "%s", md);
	/* M = 1024: sm80-mma at 1.5x the dispatched time, cuBLASLt at 1.1x: 1.36x */
	cr_expect(strstr(md, "| 1024 |"), "%s", md);
	cr_expect(strstr(md, "| 30.52 | 1.364 |"), "%s", md);
	cr_expect(strstr(md, "| sm90-wgmma |"), "the dispatched path is named: %s", md);
	free(md);

	/* A bench_gemm.csv from before kernel paths (24 columns) still reads. */
	snprintf(path, sizeof path, "%s/old.csv", dir);
	FILE *f = fopen(path, "w");
	cr_assert(f);
	for (size_t i = 0; i < CTQ_BENCH_GEMM_CSV_REQUIRED; i++)
		fprintf(f, "%s%s", i ? "," : "", ctq_gemm_csv_header[i]);
	fprintf(f, "\nqkv_proj,2560,6144,16,ctq_gemm,pass,3,4,100,7.5,7.4,0.01,,,,,,,,,,,,\n");
	fclose(f);
	cr_assert_eq(ctq_gemm_rows_load(path, &back, &nb, &err), CTQ_OK, "%s", err.message);
	cr_expect(nb == 1 && back[0].impl == CTQ_GEMM_GEMM && !back[0].forced && !back[0].kernel_path[0]);
	free(back);
	/* an unknown path after @ is no implementation */
	f = fopen(path, "a");
	fprintf(f, "qkv_proj,2560,6144,16,ctq_gemm@sm75-hmma,pass,3,4,100,7.5,7.4,0.01,,,,,,,,,,,,\n");
	fclose(f);
	cr_expect_eq(ctq_gemm_rows_load(path, &back, &nb, &err), CTQ_ERR_PARSE);
	cr_expect(strstr(err.message, "ctq_gemm@sm75-hmma"), "%s", err.message);
	ctq_remove_tree(dir);
}

/* ---- the command line ------------------------------------------------------------ */

/* ctq bench ARGS with stdout and stderr into files under dir; the exit code. */
static int run_cli(const char *dir, const char *const *args, char **out_text, char **err_text)
{
	char *argv[32];
	int argc = 0;
	for (; args[argc]; argc++)
		argv[argc] = (char *)args[argc];
	argv[argc] = NULL;
	char o[128], e[128];
	snprintf(o, sizeof o, "%s/stdout", dir);
	snprintf(e, sizeof e, "%s/stderr", dir);
	fflush(stdout);
	fflush(stderr);
	cr_assert(freopen(o, "w", stdout));
	cr_assert(freopen(e, "w", stderr));
	int rc = ctq_cmd_bench(argc, argv);
	fflush(stdout);
	fflush(stderr);
	*out_text = slurp(dir, "stdout");
	*err_text = slurp(dir, "stderr");
	return rc;
}

Test(bench_gemm, cli_refuses_bad_usage)
{
	char dir[] = "/tmp/ctq-gemm-XXXXXX";
	cr_assert(mkdtemp(dir));
	static const char *const cases[][8] = {
		{"bench", "gemm", "--shapes", "qwen9", NULL},
		{"bench", "gemm", "--shapes", "64:0", NULL},
		{"bench", "gemm", "--m", "1,0", NULL},
		{"bench", "gemm", "--samples", "0", NULL},
		{"bench", "gemm", "--peak-tops", "-5", NULL},
		{"bench", "gemm", "--shapes", "qwen3-4b", "--model", "/nonexistent", NULL},
		{"bench", "gemm", "--frobnicate", "1", NULL},
		{"bench", "gemm", "--model", "/nonexistent/ctq-model", NULL},
		{"bench", "gemm", "--paths", "sm80-mma,sm75", NULL},
		{"bench", "gemm", "--paths", ",", NULL},
	};
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		char *o, *e;
		int rc = run_cli(dir, cases[c], &o, &e);
		cr_expect_eq(rc, CTQ_EXIT_USAGE, "case %zu: exit %d (%s)", c, rc, e);
		cr_expect(strstr(e, "ctq bench gemm") || strstr(e, "ctq: option"), "case %zu: %s", c, e);
		free(o);
		free(e);
	}
	char *o, *e;
	static const char *const help[] = {"bench", "gemm", "--help", NULL};
	cr_expect_eq(run_cli(dir, help, &o, &e), 0);
	cr_expect(strstr(o, "--peak-tops") && strstr(o, "cublaslt_i8") && strstr(o, "--paths"), "%s", o);
	free(o);
	free(e);
	ctq_remove_tree(dir);
}

Test(bench_gemm, cli_without_a_gpu_exits_3_before_writing)
{
	if (ctq_env_nvidia_smi_has_gpu())
		cr_skip_test("a GPU is present here; tests/gpu/test_bench_gemm_gpu.c runs the benchmark");
	struct fixture f;
	fixture_make(&f, "gemm", 0, 5);
	static const char *args_shapes[] = {"bench", "gemm", "--shapes", "64:128", "--m", "1,3", "--out", NULL, NULL};
	args_shapes[7] = f.out;
	char *o, *e;
	int rc = run_cli(f.dir, args_shapes, &o, &e);
	cr_expect_eq(rc, CTQ_EXIT_ENV, "exit %d: %s", rc, e);
	/* a CUDA build says why there is no device as the CUDA backend does
	 * (kernels/arch.cu ctq_cuda_device_count): without libcuda that no
	 * NVIDIA driver is installed, not the runtime's "CUDA driver version is
	 * insufficient" */
	cr_expect(strstr(e, "ctq bench gemm: environment at --device: ") &&
			  (strstr(e, "no CUDA device: ") || strstr(e, "built without CUDA")),
		  "%s", e);
	cr_expect(!strstr(e, "insufficient"), "%s", e);
	cr_expect(!ctq_path_exists(f.out), "no run directory without a device");
	free(o);
	free(e);
	/* --model: the checkpoint's linear shapes, fused as served, are read
	 * (and printed) before the device is asked for. */
	static const char *args_model[] = {"bench", "gemm", "--model", NULL, "--out", NULL, NULL};
	args_model[3] = f.w8a8;
	args_model[5] = f.out;
	rc = run_cli(f.dir, args_model, &o, &e);
	cr_expect_eq(rc, CTQ_EXIT_ENV, "exit %d: %s", rc, e);
	cr_expect(strstr(o, "4 shape(s) from checkpoint") &&
			  strstr(o, "qkv_proj K=64 N=128, o_proj K=64 N=64, gate_up_proj K=64 N=352, down_proj K=176 N=64"),
		  "%s", o);
	free(o);
	free(e);
	fixture_drop(&f);
}

/* bench_gemm_samples.csv names each sample's implementation as
 * bench_gemm.csv names its row: a forced path (ctq_gemm@PATH) keeps its
 * samples apart from the dispatched ctq_gemm's, which ctq compare pairs by
 * that key. */
Test(bench_gemm, samples_carry_the_row_label)
{
	char dir[] = "/tmp/ctq-gemm-XXXXXX";
	cr_assert(mkdtemp(dir));
	static const char *const header[] = {CTQ_BENCH_GEMM_SAMPLES_CSV_COLUMNS};
	char path[128];
	snprintf(path, sizeof path, "%s/s.csv", dir);
	struct ctq_csv w;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_csv_open(&w, path, header, sizeof header / sizeof *header, &err), CTQ_OK, "%s",
		     err.message);
	struct ctq_gemm_row r;
	memset(&r, 0, sizeof r);
	snprintf(r.shape, sizeof r.shape, "qkv_proj");
	r.K = 2560, r.N = 6144, r.M = 64, r.impl = CTQ_GEMM_GEMM;
	ctq_fam_bench_gemm_samples_csv_row(&w, &r, 0, 10.5);
	snprintf(r.impl_label, sizeof r.impl_label, "ctq_gemm@sm80-mma");
	ctq_fam_bench_gemm_samples_csv_row(&w, &r, 0, 15.25);
	cr_assert_eq(ctq_csv_close(&w, &err), CTQ_OK, "%s", err.message);
	char *csv = slurp(dir, "s.csv");
	cr_expect(strstr(csv, "\"qkv_proj\",\"2560\",\"6144\",\"64\",\"ctq_gemm\",\"0\",\"10.5\""), "%s", csv);
	cr_expect(strstr(csv, "\"qkv_proj\",\"2560\",\"6144\",\"64\",\"ctq_gemm@sm80-mma\",\"0\",\"15.25\""), "%s",
		  csv);
	free(csv);
	ctq_remove_tree(dir);
}
