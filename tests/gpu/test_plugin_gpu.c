/* The CUDA kernel plug-in (plugins/cublaslt_w8a8.cu) through the probe's
 * backend adapter: every weight and activation pattern on shapes that are
 * and are not tile multiples, held bit for bit (it declares QUANT_EXACT
 * and GEMM_EXACT) besides NaN/Inf and rel-L2. GPU host only (make
 * test-gpu). */
#include <criterion/criterion.h>
#include <string.h>

#include "backend/plugin.h"
#include "conform/probe.h"

#ifndef CTQ_TEST_BUILD_DIR
#define CTQ_TEST_BUILD_DIR "build"
#endif
#define CUDA_PLUGIN CTQ_TEST_BUILD_DIR "/plugins/cublaslt_w8a8.so"

Test(plugin_gpu, cublaslt_plugin_passes_every_pattern_bit_exact)
{
	struct ctq_backend b;
	struct ctq_error err = {0};
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
