/* The CUDA weight-only plug-in (plugins/cuda_wna16.cu) through the probe's
 * plug-in backend: every layout (int4 / int8, per channel / group 128 /
 * group 32, symmetric / zero points), every weight and activation pattern,
 * M = 1, 17 and 64, on a qwen3-4b geometry and on one that is no tile or
 * pack multiple in N, held bit for bit against reference/ref_wna16 (it
 * declares WNA16_EXACT) besides NaN/Inf and rel-L2. GPU host only (make
 * test-gpu). */
#include <criterion/criterion.h>
#include <string.h>

#include "backend/plugin.h"
#include "conform/probe.h"
#include "conform/probe_wna16.h"
#include "bench/gemm.h"
#include "core/fileio.h"
#include "results/table.h"
#include "harness/commands.h"

#ifndef CTQ_TEST_BUILD_DIR
#define CTQ_TEST_BUILD_DIR "build"
#endif
#define CUDA_PLUGIN CTQ_TEST_BUILD_DIR "/plugins/cuda_wna16.so"

Test(plugin_wna16_gpu, cuda_plugin_passes_every_layout_bit_exact, .timeout = 900)
{
	struct ctq_backend b;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_backend_plugin(&b, CUDA_PLUGIN, &err), CTQ_OK, "%s", err.message);
	const struct ctq_kernel_plugin *t = ctq_backend_plugin_table(&b);
	cr_assert(t->gemm_wna16 && (t->caps & CTQ_KERNEL_PLUGIN_WNA16_EXACT));
	cr_expect_null(b.ops->w8a8_linear, "a weight-only plug-in has no W8A8 path");
	struct ctq_probe_policy pol;
	ctq_probe_policy_default(&pol);
	static const struct ctq_probe_layer layers[] = {
		{.name = "o_proj", .K = 4096, .N = 2560},
		{.name = "odd", .K = 256, .N = 67},
	};
	static const char *const layouts[] = {"w4a16-g128", "w4a16-asym-g128", "w8a16",
					      "w8a16-asym-g32", "w4a16", "w4a16-asym-g32"};
	static const int64_t ms[] = {1, 17, 64};
	size_t n = 0;
	for (size_t c = 0; c < sizeof layouts / sizeof *layouts; c++) {
		struct ctq_wna16_cfg cfg;
		cr_assert(ctq_wna16_cfg_parse(layouts[c], &cfg));
		for (size_t l = 0; l < sizeof layers / sizeof *layers; l++)
			for (int w = CTQ_PW_RANDOM; w < CTQ_PW_COUNT; w++)
				for (int a = 0; a < CTQ_PA_COUNT; a++)
					for (size_t m = 0; m < sizeof ms / sizeof *ms; m++) {
						struct ctq_probe_result r;
						cr_assert_eq(ctq_probe_wna16_run(&b, &layers[l], &cfg,
										 (enum ctq_probe_weights)w,
										 (enum ctq_probe_acts)a, ms[m], 7,
										 &pol, &r, &err),
							     CTQ_OK, "%s", err.message);
						cr_expect(r.passed, "%s %s %s/%s M=%lld: %s", r.layer, cfg.name,
							  ctq_probe_weights_name(r.weights),
							  ctq_probe_acts_name(r.acts), (long long)ms[m], r.reason);
						cr_expect_eq(r.y_mismatch, 0, "%s %s M=%lld: %lld outputs differ",
							     r.layer, cfg.name, (long long)ms[m],
							     (long long)r.y_mismatch);
						n++;
					}
	}
	cr_expect_eq(n, 6 * 2 * 4 * 4 * 3);
	ctq_backend_close(&b);
}

/* Real-shaped weights: uniform in +-0.035, quantized by ctq's producer, the
 * quantization error against the unquantized FP64 product stays what the
 * grid allows (4 bits: a few percent; 8 bits: well under one). */
Test(plugin_wna16_gpu, quantized_gaussian_weights_keep_their_error, .timeout = 300)
{
	struct ctq_backend b;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_backend_plugin(&b, CUDA_PLUGIN, &err), CTQ_OK, "%s", err.message);
	struct ctq_probe_policy pol;
	ctq_probe_policy_default(&pol);
	enum { K = 2560, N = 512 };
	static float w[N * K];
	uint64_t s = 1;
	for (size_t i = 0; i < (size_t)N * K; i++) {
		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		w[i] = (float)((double)(int64_t)(s >> 11) / 9007199254740992.0 - 0.5) * 0.07f;
	}
	const struct ctq_probe_layer L = {.name = "real", .K = K, .N = N, .w = w};
	static const char *const layouts[] = {"w4a16-g128", "w4a16-asym-g128", "w8a16"};
	static const double most[] = {0.12, 0.10, 0.01};
	for (size_t c = 0; c < 3; c++) {
		struct ctq_wna16_cfg cfg;
		cr_assert(ctq_wna16_cfg_parse(layouts[c], &cfg));
		struct ctq_probe_result r;
		cr_assert_eq(ctq_probe_wna16_run(&b, &L, &cfg, CTQ_PW_CHECKPOINT, CTQ_PA_GAUSSIAN, 64, 3, &pol,
						 &r, &err), CTQ_OK, "%s", err.message);
		cr_expect(r.passed && r.y_mismatch == 0, "%s: %s", cfg.name, r.reason);
		cr_expect(r.quant_rel_l2 > 0 && r.quant_rel_l2 < most[c], "%s: quantization rel-L2 %g",
			  cfg.name, r.quant_rel_l2);
	}
	ctq_backend_close(&b);
}

/* `ctq bench gemm --impl cuda_wna16.so`: each default layout checked bit
 * for bit against the weight-only reference, then timed, one row per
 * (shape, M, layout) in bench_gemm_plugin.csv; a layout whose group does
 * not divide K (100 is no multiple of 128) is not run on that shape. */
Test(plugin_wna16_gpu, bench_gemm_times_every_layout_after_its_check, .timeout = 300)
{
	char dir[] = "/tmp/ctq-wna16-bench-XXXXXX", out[64], csv[96];
	cr_assert(mkdtemp(dir));
	snprintf(out, sizeof out, "%s/run", dir);
	char *argv[] = {"bench", "gemm", "--impl", CUDA_PLUGIN, "--shapes", "512:768,100:200", "--m", "1,33",
			"--samples", "3", "--warmup", "1", "--out", out, NULL};
	fflush(stdout);
	int rc = ctq_cmd_bench(14, argv);
	cr_assert_eq(rc, 0, "ctq bench gemm --impl %s exited %d", CUDA_PLUGIN, rc);
	snprintf(csv, sizeof csv, "%s/bench_gemm_plugin.csv", out);
	struct ctq_table t;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_table_load(&t, csv, &err), CTQ_OK, "%s", err.message);
	const int c_shape = ctq_table_col(&t, "shape"), c_impl = ctq_table_col(&t, "impl"),
		  c_check = ctq_table_col(&t, "check"), c_time = ctq_table_col(&t, "time_us_median"),
		  c_note = ctq_table_col(&t, "note"), c_hbm = ctq_table_col(&t, "pct_hbm_weights");
	cr_assert(c_shape >= 0 && c_impl >= 0 && c_check >= 0 && c_time >= 0 && c_note >= 0 && c_hbm >= 0);
	/* 512:768 x M 1, 33 x {w4a16-g128, w4a16-asym-g128, w8a16}; 100:200 x w8a16 only */
	cr_expect_eq(t.n_rows, 2 * 3 + 2 * 1);
	size_t g128 = 0, w8 = 0;
	for (size_t i = 0; i < t.n_rows; i++) {
		const char *impl = ctq_table_get(&t, i, c_impl);
		cr_expect_str_eq(ctq_table_get(&t, i, c_check), "pass", "%s %s: %s", ctq_table_get(&t, i, c_shape),
				 impl, ctq_table_get(&t, i, c_note));
		cr_expect(ctq_table_num(&t, i, c_time) > 0 && ctq_table_num(&t, i, c_hbm) > 0, "%s %s: %s",
			  ctq_table_get(&t, i, c_shape), impl, ctq_table_get(&t, i, c_note));
		g128 += !strcmp(impl, "cuda_wna16:w4a16-g128");
		w8 += !strcmp(impl, "cuda_wna16:w8a16");
	}
	cr_expect_eq(g128, 2);
	cr_expect_eq(w8, 4);
	ctq_table_free(&t);
	ctq_remove_tree(dir);
}
