/* The CUDA kernel plug-in (plugins/cublaslt_w8a8.cu) through the probe's
 * backend adapter, in this process and in a host process of its own
 * (backend/plugin_host.h, as `ctq probe` runs it): every weight and
 * activation pattern on shapes that are and are not tile multiples, held
 * bit for bit (it declares QUANT_EXACT and GEMM_EXACT) besides NaN/Inf and
 * rel-L2. Hostile CUDA plug-ins (a host-side SIGSEGV, a hang) in a host:
 * env-errors naming plug-in, op and geometry, and this process's own CUDA
 * work goes on; `ctq probe --kernel-lib` of one exits 3 naming it. GPU
 * host only (make test-gpu). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "backend/plugin.h"
#include "backend/plugin_host.h"
#include "conform/probe.h"

#ifndef CTQ_TEST_BUILD_DIR
#define CTQ_TEST_BUILD_DIR "build"
#endif
#define CUDA_PLUGIN CTQ_TEST_BUILD_DIR "/plugins/cublaslt_w8a8.so"
#define CTQ_EXE CTQ_TEST_BUILD_DIR "/ctq"
#define SEGV_CUDA CTQ_TEST_BUILD_DIR "/tests/plugins/segv_gemm_cuda.so"
#define HANG_CUDA CTQ_TEST_BUILD_DIR "/tests/plugins/hang_gemm_cuda.so"

static void every_pattern_bit_exact(bool hosted)
{
	struct ctq_backend b;
	struct ctq_error err = {0};
	if (hosted)
		cr_assert_eq(ctq_backend_plugin_hosted(&b, CUDA_PLUGIN, CTQ_EXE, 120, &err), CTQ_OK, "%s",
			     err.message);
	else
		cr_assert_eq(ctq_backend_plugin(&b, CUDA_PLUGIN, &err), CTQ_OK, "%s", err.message);
	cr_expect_eq(b.exact, CTQ_EXACT_QUANT | CTQ_EXACT_OUTPUT);
	struct ctq_probe_policy pol;
	ctq_probe_policy_default(&pol);
	static const struct ctq_probe_layer layers[] = {
		{.name = "o_proj", .K = 4096, .N = 2560},
		{.name = "odd", .K = 176, .N = 68},
	};
	static const int64_t ms[] = {1, 17, 256};
	for (size_t l = 0; l < sizeof layers / sizeof *layers; l++)
		for (int w = CTQ_PW_RANDOM; w < CTQ_PW_COUNT; w++)
			for (int a = 0; a < CTQ_PA_COUNT; a++)
				for (size_t m = 0; m < sizeof ms / sizeof *ms; m++) {
					struct ctq_probe_result r;
					cr_assert_eq(ctq_probe_run(&b, &layers[l], (enum ctq_probe_weights)w,
								   (enum ctq_probe_acts)a, ms[m], 7, &pol, &r, &err),
						     CTQ_OK, "%s", err.message);
					cr_expect(r.passed, "%s %s/%s M=%lld: %s", r.layer,
						  ctq_probe_weights_name(r.weights), ctq_probe_acts_name(r.acts),
						  (long long)ms[m], r.reason);
					cr_expect(r.q_mismatch == 0 && r.s_mismatch == 0 && r.y_mismatch == 0,
						  "%s M=%lld: q %lld s %lld y %lld", r.layer, (long long)ms[m],
						  (long long)r.q_mismatch, (long long)r.s_mismatch,
						  (long long)r.y_mismatch);
				}
	ctq_backend_close(&b);
}

Test(plugin_gpu, cublaslt_plugin_passes_every_pattern_bit_exact)
{
	every_pattern_bit_exact(false);
}

Test(plugin_gpu, cublaslt_plugin_hosted_passes_every_pattern_bit_exact)
{
	every_pattern_bit_exact(true);
}

Test(plugin_gpu, hostile_cuda_plugins_in_a_host_are_named_and_ctq_goes_on, .timeout = 120)
{
	static const struct {
		const char *path;
		double timeout_s;
		const char *says;
	} cases[] = {
		{SEGV_CUDA, 60, "gemm_w8a8 at M=3 N=32 K=64 crashed its process: killed by signal 11"},
		{HANG_CUDA, 2, "gemm_w8a8 at M=3 N=32 K=64 did not return within 2 s (hung"},
	};
	const struct ctq_probe_layer L = {.name = "x", .K = 64, .N = 32};
	struct ctq_probe_policy pol;
	ctq_probe_policy_default(&pol);
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		struct ctq_backend b;
		struct ctq_error err = {0};
		cr_assert_eq(ctq_backend_plugin_hosted(&b, cases[i].path, CTQ_EXE, cases[i].timeout_s, &err),
			     CTQ_OK, "%s", err.message);
		struct ctq_probe_result r;
		cr_expect_eq(ctq_probe_run(&b, &L, CTQ_PW_RANDOM, CTQ_PA_GAUSSIAN, 3, 1, &pol, &r, &err),
			     CTQ_ERR_ENV);
		cr_expect(strstr(err.message, cases[i].says), "%s", err.message);
		ctq_backend_close(&b);
		/* This process's CUDA work is untouched: the in-process plug-in
		 * still passes. */
		struct ctq_backend ok;
		cr_assert_eq(ctq_backend_plugin(&ok, CUDA_PLUGIN, &err), CTQ_OK, "%s", err.message);
		cr_expect_eq(ctq_probe_run(&ok, &L, CTQ_PW_RANDOM, CTQ_PA_GAUSSIAN, 3, 1, &pol, &r, &err), CTQ_OK,
			     "%s", err.message);
		cr_expect(r.passed, "%s", r.reason);
		ctq_backend_close(&ok);
	}
	/* ctq probe hosts a CUDA plug-in by itself. */
	char cmd[512];
	snprintf(cmd, sizeof cmd,
		 "%s probe --kernel-lib %s --shapes 64:32 --weights random --acts gaussian --m 3 "
		 ">/tmp/ctq-plugin-gpu.out 2>/tmp/ctq-plugin-gpu.err",
		 CTQ_EXE, SEGV_CUDA);
	int status = system(cmd);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 3, "status 0x%x", status);
	FILE *f = fopen("/tmp/ctq-plugin-gpu.err", "r");
	cr_assert(f);
	char text[4096] = "";
	size_t n = fread(text, 1, sizeof text - 1, f);
	text[n] = '\0';
	fclose(f);
	cr_expect(strstr(text, SEGV_CUDA) && strstr(text, "gemm_w8a8 at M=3 N=32 K=64 crashed its process"),
		  "%s", text);
}
