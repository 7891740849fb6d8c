/* Criterion tests for the plug-in host (backend/plugin_host.h): a plug-in
 * served from a process of its own (ctq's program exec'd) passes the probe
 * bit for bit as in process; a crash, an _exit and a hang in it are
 * env-errors naming the plug-in, the op and the geometry while this
 * process goes on; later calls name the first failure; a host program that
 * cannot start is an env-error naming it; a weight-only (ABI 2) plug-in
 * hosted gives the rows it gives in process. CPU plug-ins stand in for
 * CUDA ones (the host serves either; tests/gpu/test_plugin_gpu.c hosts the
 * CUDA plug-in). Needs build/ctq ($(BUILD)/ctq, built by `make test`). */
#include <criterion/criterion.h>
#include <string.h>
#include <unistd.h>

#include "backend/plugin.h"
#include "backend/plugin_host.h"
#include "conform/probe.h"
#include "conform/probe_wna16.h"
#include "core/time.h"

#ifndef CTQ_TEST_BUILD_DIR
#define CTQ_TEST_BUILD_DIR "build"
#endif
#define CTQ_EXE CTQ_TEST_BUILD_DIR "/ctq"
#define CPU_PLUGIN CTQ_TEST_BUILD_DIR "/plugins/cpu_w8a8.so"
#define SEGV_GEMM CTQ_TEST_BUILD_DIR "/tests/plugins/segv_gemm.so"
#define HANG_GEMM CTQ_TEST_BUILD_DIR "/tests/plugins/hang_gemm.so"
#define EXIT_GEMM CTQ_TEST_BUILD_DIR "/tests/plugins/exit_gemm.so"

static const struct ctq_probe_layer L = {.name = "x", .K = 64, .N = 32};

Test(plugin_host, hosted_plugin_passes_like_in_process)
{
	struct ctq_backend hosted, local;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_backend_plugin_hosted(&hosted, CPU_PLUGIN, CTQ_EXE, 60, &err), CTQ_OK, "%s",
		     err.message);
	cr_assert_eq(ctq_backend_plugin(&local, CPU_PLUGIN, &err), CTQ_OK, "%s", err.message);
	cr_expect(ctq_backend_plugin_is_hosted(&hosted) && !ctq_backend_plugin_is_hosted(&local));
	cr_expect(ctq_backend_plugin_isolated(&hosted));
	cr_expect_str_eq(hosted.ops->name, local.ops->name);
	cr_expect_eq(hosted.exact, local.exact);
	char d[1024];
	hosted.ops->describe(&hosted, d, sizeof d);
	cr_expect(strstr(d, "in a process of its own"), "%s", d);
	struct ctq_probe_policy pol;
	ctq_probe_policy_default(&pol);
	static const int64_t ms[] = {1, 3, 17};
	for (size_t m = 0; m < sizeof ms / sizeof *ms; m++)
		for (int a = 0; a < CTQ_PA_COUNT; a++) {
			struct ctq_probe_result rh, rl;
			cr_assert_eq(ctq_probe_run(&hosted, &L, CTQ_PW_RANDOM, (enum ctq_probe_acts)a, ms[m], 3,
						   &pol, &rh, &err),
				     CTQ_OK, "%s", err.message);
			cr_assert_eq(ctq_probe_run(&local, &L, CTQ_PW_RANDOM, (enum ctq_probe_acts)a, ms[m], 3,
						   &pol, &rl, &err),
				     CTQ_OK, "%s", err.message);
			cr_expect(rh.passed == rl.passed && rh.passed, "M=%lld: %s", (long long)ms[m], rh.reason);
			cr_expect(rh.kernel_rel_l2 == rl.kernel_rel_l2, "M=%lld: %g against %g", (long long)ms[m],
				  rh.kernel_rel_l2, rl.kernel_rel_l2);
			cr_expect(rh.q_mismatch == rl.q_mismatch && rh.y_mismatch == rl.y_mismatch);
		}
	ctq_backend_close(&hosted);
	ctq_backend_close(&local);
}

Test(plugin_host, a_crash_exit_or_hang_is_named_and_ctq_goes_on, .timeout = 60)
{
	static const struct {
		const char *path;
		double timeout_s;
		const char *says;
	} cases[] = {
		{SEGV_GEMM, 60, "plug-in segv_gemm: gemm_w8a8 at M=3 N=32 K=64 crashed its process: killed by signal 11"},
		{EXIT_GEMM, 60, "plug-in exit_gemm: gemm_w8a8 at M=3 N=32 K=64 ended its process (exit status 7) instead of returning"},
		{HANG_GEMM, 1, "plug-in hang_gemm: gemm_w8a8 at M=3 N=32 K=64 did not return within 1 s (hung; its process was killed"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		struct ctq_backend b;
		struct ctq_error err = {0};
		cr_assert_eq(ctq_backend_plugin_hosted(&b, cases[i].path, CTQ_EXE, cases[i].timeout_s, &err),
			     CTQ_OK, "%s: %s", cases[i].path, err.message);
		struct ctq_probe_policy pol;
		ctq_probe_policy_default(&pol);
		struct ctq_probe_result r;
		const double t0 = ctq_now_s();
		enum ctq_status st = ctq_probe_run(&b, &L, CTQ_PW_RANDOM, CTQ_PA_GAUSSIAN, 3, 1, &pol, &r, &err);
		cr_expect_eq(st, CTQ_ERR_ENV, "%s: status %d", cases[i].path, st);
		cr_expect(strstr(err.message, cases[i].says), "%s: %s", cases[i].path, err.message);
		cr_expect_str_eq(err.path, cases[i].path);
		cr_expect_lt(ctq_now_s() - t0, 30.0);
		/* The host and its buffers are gone: the next call says why. */
		struct ctq_error again = {0};
		st = ctq_probe_run(&b, &L, CTQ_PW_RANDOM, CTQ_PA_GAUSSIAN, 3, 1, &pol, &r, &again);
		cr_expect_eq(st, CTQ_ERR_ENV);
		cr_expect(strstr(again.message, "no further calls: its process ended earlier") &&
				  strstr(again.message, "gemm_w8a8 at M=3 N=32 K=64"),
			  "%s", again.message);
		ctq_backend_close(&b);
	}
}

Test(plugin_host, a_host_that_cannot_start_is_named)
{
	struct ctq_backend b;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_backend_plugin_hosted(&b, CPU_PLUGIN, "/nonexistent/ctq", 10, &err), CTQ_ERR_ENV);
	cr_expect(strstr(err.message, "/nonexistent/ctq __plugin-host") && strstr(err.message, "did not start") &&
			  strstr(err.message, "exit status 127"),
		  "%s", err.message);
	/* A plug-in the host cannot open: the host's own error, as usage. */
	memset(&err, 0, sizeof err);
	cr_assert_eq(ctq_backend_plugin_hosted(&b, CTQ_TEST_BUILD_DIR "/tests/plugins/bad_abi.so", CTQ_EXE, 10,
					       &err),
		     CTQ_ERR_USAGE);
	cr_expect(strstr(err.message, "ABI version"), "%s", err.message);
	cr_expect_str_eq(err.path, CTQ_TEST_BUILD_DIR "/tests/plugins/bad_abi.so");
}

Test(plugin_host, the_host_refuses_to_be_started_by_hand)
{
	char *argv[] = {"ctq", CTQ_PLUGIN_HOST_ARG, "1", NULL};
	cr_expect_eq(ctq_plugin_host_main(3, argv), 2);
	char *bad_fd[] = {"ctq", CTQ_PLUGIN_HOST_ARG, "x", "p.so", NULL};
	cr_expect_eq(ctq_plugin_host_main(4, bad_fd), 2);
}

#define WNA16_PLUGIN CTQ_TEST_BUILD_DIR "/plugins/cpu_wna16.so"

Test(plugin_host, hosted_weight_only_plugin_passes_like_in_process)
{
	struct ctq_backend hosted, local;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_backend_plugin_hosted(&hosted, WNA16_PLUGIN, CTQ_EXE, 60, &err), CTQ_OK, "%s",
		     err.message);
	cr_assert_eq(ctq_backend_plugin(&local, WNA16_PLUGIN, &err), CTQ_OK, "%s", err.message);
	const struct ctq_kernel_plugin *th = ctq_backend_plugin_table(&hosted);
	const struct ctq_kernel_plugin *tl = ctq_backend_plugin_table(&local);
	cr_assert(th && tl && th->gemm_wna16);
	cr_expect_eq(th->caps, tl->caps);
	struct ctq_wna16_cfg cfgs[3];
	int n = ctq_wna16_cfg_defaults(th->caps, cfgs);
	cr_assert_gt(n, 0);
	struct ctq_probe_policy pol;
	ctq_probe_policy_default(&pol);
	const struct ctq_probe_layer W = {.name = "w", .K = 256, .N = 48};
	for (int c = 0; c < n; c++) {
		struct ctq_probe_result rh, rl;
		cr_assert_eq(ctq_probe_wna16_run(&hosted, &W, &cfgs[c], CTQ_PW_RANDOM, CTQ_PA_GAUSSIAN, 5, 2,
						 &pol, &rh, &err),
			     CTQ_OK, "%s: %s", cfgs[c].name, err.message);
		cr_assert_eq(ctq_probe_wna16_run(&local, &W, &cfgs[c], CTQ_PW_RANDOM, CTQ_PA_GAUSSIAN, 5, 2,
						 &pol, &rl, &err),
			     CTQ_OK, "%s: %s", cfgs[c].name, err.message);
		cr_expect(rh.passed && rl.passed, "%s: %s / %s", cfgs[c].name, rh.reason, rl.reason);
		cr_expect(rh.kernel_rel_l2 == rl.kernel_rel_l2, "%s: %g against %g", cfgs[c].name,
			  rh.kernel_rel_l2, rl.kernel_rel_l2);
	}
	ctq_backend_close(&hosted);
	ctq_backend_close(&local);
}
