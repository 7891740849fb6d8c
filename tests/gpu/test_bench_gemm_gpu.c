/* `ctq bench gemm` on a GPU (make test-gpu, one worker): two small shapes
 * (one with K not a multiple of 16 and N not a tile multiple) at three M,
 * every ctq output checked bit-exact against the reference and every
 * implementation timed; and the driver's rotation (kernels/gemm_timing.h):
 * graphs hold whole cycles of the requested copies and last at least
 * min_graph_us. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "harness/commands.h"
#include "kernels/gemm_timing.h"
#include "bench/gemm.h"
#include "reports/report.h"

Test(bench_gemm_gpu, small_shapes_checked_and_timed)
{
	char dir[] = "/tmp/ctq-gemm-gpu-XXXXXX", out[64], csv[96];
	cr_assert(mkdtemp(dir));
	snprintf(out, sizeof out, "%s/run", dir);
	char *argv[] = {"bench", "gemm", "--shapes", "512:768,100:200", "--m", "1,33,256", "--samples", "3",
			"--warmup", "1", "--out", out, NULL};
	fflush(stdout);
	int rc = ctq_cmd_bench(12, argv);
	cr_assert_eq(rc, 0, "ctq bench gemm exited %d", rc);
	snprintf(csv, sizeof csv, "%s/bench_gemm.csv", out);
	struct ctq_gemm_row *r = NULL;
	size_t n = 0;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_gemm_rows_load(csv, &r, &n, &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(n, 2 * 3 * CTQ_GEMM_IMPL_COUNT);
	for (size_t i = 0; i < n; i++) {
		const char *impl = ctq_gemm_impl_name(r[i].impl);
		if (ctq_gemm_impl_is_ctq(r[i].impl))
			cr_expect_str_eq(r[i].check, "pass", "%s M=%lld %s: %s", r[i].shape, (long long)r[i].M, impl,
					 r[i].note);
		if (r[i].impl == CTQ_GEMM_I8 && isnan(r[i].time_us_median)) {
			cr_log_warn("%s M=%lld: cublaslt_i8 not timed: %s", r[i].shape, (long long)r[i].M, r[i].note);
			continue;
		}
		cr_expect(r[i].time_us_median > 0 && r[i].time_us_min <= r[i].time_us_median, "%s M=%lld %s",
			  r[i].shape, (long long)r[i].M, impl);
		cr_expect(r[i].copies >= 1 && r[i].calls >= r[i].copies && r[i].calls % r[i].copies == 0,
			  "%s: %d calls over %d copies", impl, r[i].calls, r[i].copies);
		if (r[i].impl == CTQ_GEMM_GEMM)
			cr_expect(r[i].tops > 0 && r[i].speedup_vs_bf16 > 0);
	}
	free(r);
	struct ctq_report_summary s;
	cr_assert_eq(ctq_report_write(out, NULL, &s, &err), CTQ_OK, "%s", err.message);
	cr_expect_str_eq(s.verdict, "PASS");
	ctq_remove_tree(dir);
}

Test(bench_gemm_gpu, driver_cycles_whole_copies_for_min_graph_time)
{
	struct ctq_gemm_bench *b = NULL;
	struct ctq_gemm_device dev;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_gemm_bench_open(&b, 0, &dev, &err), CTQ_OK, "%s", err.message);
	cr_expect(dev.l2_bytes > 0 && dev.sms > 0);
	const int64_t M = 64, N = 256, K = 512;
	uint16_t *x = calloc((size_t)(M * K), 2);
	int8_t *w = calloc((size_t)(N * K), 1);
	float *sw = calloc((size_t)N, 4), *bias = calloc((size_t)N, 4);
	for (int64_t i = 0; i < M * K; i++)
		x[i] = 0x3f80; /* 1.0 */
	for (int64_t i = 0; i < N * K; i++)
		w[i] = (int8_t)(i % 7 - 3);
	for (int64_t i = 0; i < N; i++)
		sw[i] = 1e-3f;
	struct ctq_gemm_inputs in = {.M = M, .N = N, .K = K, .x = x, .w = w, .s_w = sw, .bias = bias};
	for (int i = 0; i < CTQ_GEMM_IMPL_COUNT; i++)
		in.copies[i] = 3;
	cr_assert_eq(ctq_gemm_bench_load(b, &in, &err), CTQ_OK, "%s", err.message);
	double t_us[5];
	struct ctq_gemm_timing t = {.warmup = 1, .samples = 5, .min_graph_us = 300, .time_us = t_us};
	cr_assert_eq(ctq_gemm_bench_time(b, CTQ_GEMM_GEMM, &t, &err), CTQ_OK, "%s", err.message);
	cr_expect(t.supported);
	cr_expect_eq(t.copies, 3);
	cr_expect(t.calls >= 3 && t.calls % 3 == 0, "%d calls", t.calls);
	/* A graph lasts min_graph_us or more, unless capped at 4096 calls. */
	cr_expect(t.calls == 4095 || t.calls * t_us[0] >= 0.5 * 300, "%d calls x %g us", t.calls, t_us[0]);
	ctq_gemm_bench_close(b);
	free(x), free(w), free(sw), free(bias);
}
