/* Criterion tests for the kernel isolation probes on the reference backend:
 * clean kernels pass every pattern; each planted defect fails and the
 * failure names the layer. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conform/probe.h"
#include "backend/backend.h"
#include "tests/command.h"

static const struct ctq_probe_layer layer = {.name = "model.layers.5.self_attn.o_proj", .K = 96, .N = 48};

Test(probe, clean_reference_passes_every_pattern)
{
	struct ctq_backend b;
	struct ctq_error err = {0};
	struct ctq_probe_policy pol;
	ctq_probe_policy_default(&pol);
	cr_assert_eq(ctq_backend_reference(&b, &err), CTQ_OK);
	for (int w = CTQ_PW_RANDOM; w < CTQ_PW_COUNT; w++)
		for (int a = 0; a < CTQ_PA_COUNT; a++) {
			struct ctq_probe_result r;
			cr_assert_eq(ctq_probe_run(&b, &layer, (enum ctq_probe_weights)w,
						   (enum ctq_probe_acts)a, 17, 3, &pol, &r, &err), CTQ_OK);
			cr_expect(r.passed, "%s/%s: %s", ctq_probe_weights_name(r.weights),
				  ctq_probe_acts_name(r.acts), r.reason);
			cr_expect_eq(r.kernel_rel_l2, 0.0);
			if (a == CTQ_PA_GAUSSIAN)
				cr_expect(r.quant_rel_l2 > 1e-4 && r.quant_rel_l2 < 0.05,
					  "quantization error %g", r.quant_rel_l2);
		}
	ctq_backend_close(&b);
}

Test(probe, planted_defects_fail_and_name_the_layer)
{
	static const unsigned defects[] = {CTQ_DEFECT_SCALE_SHIFT, CTQ_DEFECT_EPILOGUE_NAN,
					   CTQ_DEFECT_TRANSPOSED_W};
	struct ctq_probe_policy pol;
	ctq_probe_policy_default(&pol);
	for (size_t i = 0; i < 3; i++) {
		struct ctq_backend b;
		struct ctq_error err = {0};
		cr_assert_eq(ctq_backend_reference(&b, &err), CTQ_OK);
		b.defects = defects[i];
		struct ctq_probe_result r;
		cr_assert_eq(ctq_probe_run(&b, &layer, CTQ_PW_RANDOM, CTQ_PA_GAUSSIAN, 17, 3, &pol, &r, &err),
			     CTQ_OK);
		cr_expect(!r.passed, "defect %u passed", defects[i]);
		cr_expect(strstr(r.reason, layer.name), "reason lacks the layer: %s", r.reason);
		if (defects[i] == CTQ_DEFECT_EPILOGUE_NAN)
			cr_expect_eq(r.nan_count, 1);
		ctq_backend_close(&b);
	}
}

Test(probe, checkpoint_weights_are_quantized_per_channel)
{
	enum { N = 8, K = 32 };
	static float w[N * K];
	for (int i = 0; i < N * K; i++)
		w[i] = (float)((i * 37 % 101) - 50) / 1000.0f;
	struct ctq_probe_layer L = {.name = "ckpt", .K = K, .N = N, .w = w};
	struct ctq_backend b;
	struct ctq_error err = {0};
	struct ctq_probe_policy pol;
	ctq_probe_policy_default(&pol);
	cr_assert_eq(ctq_backend_reference(&b, &err), CTQ_OK);
	struct ctq_probe_result r;
	cr_assert_eq(ctq_probe_run(&b, &L, CTQ_PW_CHECKPOINT, CTQ_PA_GAUSSIAN, 5, 1, &pol, &r, &err), CTQ_OK);
	cr_expect(r.passed, "%s", r.reason);
	cr_expect(r.quant_rel_l2 > 0 && r.quant_rel_l2 < 0.05, "%g", r.quant_rel_l2);
	ctq_backend_close(&b);
}

/* Several backends in one probe share the inputs and the oracle: each
 * result equals the one its backend gets alone, and a defective backend
 * beside a clean one fails alone. */
Test(probe, many_backends_share_the_oracle)
{
	struct ctq_backend clean, bad;
	struct ctq_error err = {0};
	struct ctq_probe_policy pol;
	ctq_probe_policy_default(&pol);
	cr_assert_eq(ctq_backend_reference(&clean, &err), CTQ_OK);
	cr_assert_eq(ctq_backend_reference(&bad, &err), CTQ_OK);
	bad.defects = CTQ_DEFECT_SCALE_SHIFT;
	struct ctq_backend *bes[2] = {&bad, &clean};
	struct ctq_probe_result many[2], one[2];
	cr_assert_eq(ctq_probe_run_many(bes, 2, &layer, CTQ_PW_PM127, CTQ_PA_OUTLIERS, 9, 5, &pol, many, &err),
		     CTQ_OK, "%s", err.message);
	for (int i = 0; i < 2; i++)
		cr_assert_eq(ctq_probe_run(bes[i], &layer, CTQ_PW_PM127, CTQ_PA_OUTLIERS, 9, 5, &pol, &one[i], &err),
			     CTQ_OK);
	for (int i = 0; i < 2; i++) {
		cr_expect_eq(many[i].passed, one[i].passed, "backend %d", i);
		cr_expect_eq(many[i].kernel_rel_l2, one[i].kernel_rel_l2, "backend %d", i);
		cr_expect_eq(many[i].quant_rel_l2, one[i].quant_rel_l2, "backend %d", i);
		cr_expect_eq(many[i].max_abs_err, one[i].max_abs_err, "backend %d", i);
		cr_expect_str_eq(many[i].reason, one[i].reason, "backend %d", i);
	}
	cr_expect(!many[0].passed && many[1].passed);
	ctq_backend_close(&clean);
	ctq_backend_close(&bad);
}

/* `ctq probe` on a checkpoint that does not open: the error on stderr,
 * exit 2, and on stdout no table header (nor the backend and policy lines
 * above it), since no row follows (the ctq under test: CTQ_BIN, else
 * build/ctq). */
Test(probe, a_fatal_error_prints_no_table_header)
{
	const char *bin = test_ctq_bin();
	char dir[] = "/tmp/ctq-probe-XXXXXX";
	cr_assert(mkdtemp(dir));
	char cmd[512];
	snprintf(cmd, sizeof cmd, "%s probe --model %s/no-such-model --backend reference --out %s/run 2>%s/stderr",
		 bin, dir, dir, dir);
	char out[8192];
	const int rc = test_command(cmd, out, sizeof out);
	cr_expect(rc == 2, "%s: exit %d", cmd, rc);
	cr_expect(!strstr(out, "LAYER") && !strstr(out, "policy:") && !strstr(out, "backend "),
		  "stdout after a fatal error: %s", out);
	char path[128], err[1024] = "";
	snprintf(path, sizeof path, "%s/stderr", dir);
	FILE *f = fopen(path, "r");
	cr_assert(f);
	err[fread(err, 1, sizeof err - 1, f)] = '\0';
	fclose(f);
	cr_expect(strstr(err, "ctq probe: io-error at ") && strstr(err, "no-such-model"), "stderr: %s", err);
	remove(path);
	rmdir(dir);
}

/* Constant weights turn each output into a plain sum of the row's
 * activations: Qwen-Image's 256:3072 at M = 1 (gaussian, seed 1) loses
 * most of that sum to cancellation, so its rel-L2 to the FP64 product is
 * reported, not judged; a defect is still caught by the kernel bound. */
Test(probe, constant_weights_judge_the_kernel_not_the_cancelled_sum)
{
	static const struct ctq_probe_layer dit = {.name = "transformer_blocks.0.txt_in", .K = 256, .N = 3072};
	struct ctq_probe_policy pol;
	ctq_probe_policy_default(&pol);
	for (int defect = 0; defect < 2; defect++) {
		struct ctq_backend b;
		struct ctq_error err = {0};
		cr_assert_eq(ctq_backend_reference(&b, &err), CTQ_OK);
		b.defects = defect ? CTQ_DEFECT_SCALE_SHIFT : 0;
		struct ctq_probe_result r;
		cr_assert_eq(ctq_probe_run(&b, &dit, CTQ_PW_CONSTANT, CTQ_PA_GAUSSIAN, 1, 1, &pol, &r, &err), CTQ_OK);
		if (!defect) {
			cr_expect(r.passed, "%s", r.reason);
			cr_expect(r.quant_rel_l2 > pol.quant_rel_l2_max[CTQ_PA_GAUSSIAN],
				  "quantization rel-L2 %g: the case no longer cancels", r.quant_rel_l2);
		} else {
			cr_expect(!r.passed && strstr(r.reason, "kernel rel-L2"), "%s", r.reason);
		}
		ctq_backend_close(&b);
	}
}
