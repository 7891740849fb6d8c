/* Criterion tests for kernel plug-ins (include/ctq_kernel_plugin.h,
 * backend/plugin.h): the CPU plug-in passes `ctq probe --kernel-lib`; its
 * planted NaN fails naming the layer in the output and probe.csv; a wrong
 * ABI version, a missing entry symbol and an unloadable file exit 2 with
 * a message naming the file; a plug-in that declares bit-exact
 * quantization but is not is caught by the bit-exact check alone; `ctq
 * bench gemm --impl` validates its plug-in before wanting a GPU. ABI
 * version 2: a version-1 plug-in runs unchanged; the weight-only CPU
 * plug-in passes every layout bit for bit, its planted group-stride bug
 * fails every layer, named. The .so files come from the Makefile
 * ($(BUILD)/plugins, $(BUILD)/tests/plugins). */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/plugin.h"
#include "conform/probe.h"
#include "core/fileio.h"
#include "core/time.h"
#include "harness/commands.h"

#ifndef CTQ_TEST_BUILD_DIR
#define CTQ_TEST_BUILD_DIR "build"
#endif
#define CPU_PLUGIN CTQ_TEST_BUILD_DIR "/plugins/cpu_w8a8.so"
#define BAD_ABI CTQ_TEST_BUILD_DIR "/tests/plugins/bad_abi.so"
#define NO_ENTRY CTQ_TEST_BUILD_DIR "/tests/plugins/no_entry.so"
#define RECIP CTQ_TEST_BUILD_DIR "/tests/plugins/recip_scale.so"

static char *slurp(const char *dir, const char *name)
{
	char path[300], *text = NULL;
	size_t len = 0;
	struct ctq_error err = {0};
	snprintf(path, sizeof path, "%s/%s", dir, name);
	cr_assert_eq(ctq_file_read(path, (size_t)16 << 20, &text, &len, &err), CTQ_OK, "%s", err.message);
	return text;
}

/* ctq ARGS (probe or bench) with stdout and stderr into files under dir. */
static int run_cli(int (*cmd)(int, char **), const char *dir, const char *const *args,
		   char **out_text, char **err_text)
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
	int rc = cmd(argc, argv);
	fflush(stdout);
	fflush(stderr);
	*out_text = slurp(dir, "stdout");
	*err_text = slurp(dir, "stderr");
	return rc;
}

/* Rows of probe.csv (every field quoted) in run directory out with the
 * backend column `backend`, the outcome `outcome` (quoted) and needle. */
static int csv_rows(const char *out, const char *backend, const char *outcome, const char *needle)
{
	char *csv = slurp(out, "probe.csv");
	int n = 0;
	char key[64];
	snprintf(key, sizeof key, ",\"%s\",", backend);
	for (char *line = strtok(csv, "\n"); line; line = strtok(NULL, "\n"))
		if (strstr(line, key) && strstr(line, outcome) && (!needle || strstr(line, needle)))
			n++;
	free(csv);
	return n;
}

Test(plugin, cpu_plugin_passes_the_probe)
{
	char dir[] = "/tmp/ctq-plugin-XXXXXX";
	cr_assert(mkdtemp(dir));
	char out[64];
	snprintf(out, sizeof out, "%s/run", dir);
	const char *args[] = {"probe", "--kernel-lib", CPU_PLUGIN, "--shapes", "tiny", "--m", "1,17",
			      "--out", out, NULL};
	char *o, *e;
	int rc = run_cli(ctq_cmd_probe, dir, args, &o, &e);
	cr_expect_eq(rc, CTQ_EXIT_OK, "exit %d: %s%s", rc, o, e);
	cr_expect(strstr(o, "kernel plug-in cpu_w8a8") && strstr(o, "bit-exact: quantize, gemm"), "%s", o);
	/* 4 layers x 4 weight patterns x 4 activation patterns x 2 M, all
	 * through the plug-in: no reference backend row. */
	cr_expect(strstr(o, "probe: 128 passed, 0 failed"), "%s", o);
	cr_expect_eq(csv_rows(out, "cpu_w8a8", "\"pass\"", NULL), 128);
	cr_expect_eq(csv_rows(out, "reference", "\"pass\"", NULL), 0);
	char *json = slurp(out, "probe.json");
	cr_expect(strstr(json, "\"q_mismatch\":\t0") && strstr(json, "\"y_mismatch\":\t0"), "%.400s", json);
	free(json);
	char *man = slurp(out, "manifest.json");
	cr_expect(strstr(man, "\"kernel_plugin\":\t\"cpu_w8a8\""), "%s", man);
	free(man);
	free(o);
	free(e);
	ctq_remove_tree(dir);
}

Test(plugin, cpu_plugin_beside_the_reference)
{
	char dir[] = "/tmp/ctq-plugin-XXXXXX";
	cr_assert(mkdtemp(dir));
	char out[64];
	snprintf(out, sizeof out, "%s/run", dir);
	const char *args[] = {"probe", "--kernel-lib", CPU_PLUGIN, "--backend", "reference", "--shapes",
			      "64:32", "--weights", "random", "--acts", "gaussian", "--out", out, NULL};
	char *o, *e;
	int rc = run_cli(ctq_cmd_probe, dir, args, &o, &e);
	cr_expect_eq(rc, CTQ_EXIT_OK, "exit %d: %s%s", rc, o, e);
	cr_expect_eq(csv_rows(out, "cpu_w8a8", "\"pass\"", NULL), 1);
	cr_expect_eq(csv_rows(out, "reference", "\"pass\"", NULL), 1);
	free(o);
	free(e);
	ctq_remove_tree(dir);
}

Test(plugin, planted_nan_fails_naming_the_layer)
{
	/* tiny's down_proj is K 176, N 64; the plug-in sees only geometry. */
	cr_assert_eq(setenv("CTQ_PLUGIN_PLANT_NAN", "176:64", 1), 0);
	char dir[] = "/tmp/ctq-plugin-XXXXXX";
	cr_assert(mkdtemp(dir));
	char out[64];
	snprintf(out, sizeof out, "%s/run", dir);
	const char *args[] = {"probe", "--kernel-lib", CPU_PLUGIN, "--shapes", "tiny", "--weights",
			      "random", "--acts", "gaussian,zero-rows", "--out", out, NULL};
	char *o, *e;
	int rc = run_cli(ctq_cmd_probe, dir, args, &o, &e);
	unsetenv("CTQ_PLUGIN_PLANT_NAN");
	cr_expect_eq(rc, CTQ_EXIT_FAIL, "exit %d: %s%s", rc, o, e);
	cr_expect(strstr(o, "down_proj: 1 output(s) NaN/Inf where the reference is finite"), "%s", o);
	cr_expect(strstr(o, "probe: 6 passed, 2 failed"), "%s", o);
	cr_expect_eq(csv_rows(out, "cpu_w8a8", "\"fail\"", "down_proj"), 2);
	cr_expect_eq(csv_rows(out, "cpu_w8a8", "\"fail\"", NULL), 2);
	free(o);
	free(e);
	ctq_remove_tree(dir);
}

/* The plug-in files the loader must refuse, each with what the message says. */
Test(plugin, bad_plugins_exit_2_naming_the_file)
{
	static const struct {
		const char *path, *says;
	} cases[] = {
		{BAD_ABI, "implements kernel plug-in ABI version 3; this ctq speaks versions 1 and 2"},
		{NO_ENTRY, "is not a ctq kernel plug-in: no entry symbol ctq_kernel_plugin"},
		{"/nonexistent/libnothing.so", "cannot load the kernel plug-in"},
		{CTQ_TEST_BUILD_DIR "/ctq", "cannot load the kernel plug-in"},
	};
	char dir[] = "/tmp/ctq-plugin-XXXXXX";
	cr_assert(mkdtemp(dir));
	char out[64];
	snprintf(out, sizeof out, "%s/run", dir);
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		const char *args[] = {"probe", "--kernel-lib", cases[i].path, "--shapes", "tiny", "--out", out, NULL};
		char *o, *e;
		int rc = run_cli(ctq_cmd_probe, dir, args, &o, &e);
		cr_expect_eq(rc, CTQ_EXIT_USAGE, "%s: exit %d", cases[i].path, rc);
		cr_expect(strstr(e, cases[i].path) && strstr(e, cases[i].says), "%s: %s", cases[i].path, e);
		free(o);
		free(e);
		/* No run directory is left behind. */
		char man[128];
		snprintf(man, sizeof man, "%s/manifest.json", out);
		cr_expect(!ctq_path_exists(man), "%s: a run directory was written", cases[i].path);
	}
	ctq_remove_tree(dir);
}

Test(plugin, declared_exact_quantize_is_checked_bit_for_bit)
{
	struct ctq_backend b;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_backend_plugin(&b, RECIP, &err), CTQ_OK, "%s", err.message);
	cr_expect_eq(b.exact, CTQ_EXACT_QUANT);
	struct ctq_probe_policy pol;
	ctq_probe_policy_default(&pol);
	const struct ctq_probe_layer L = {.name = "layers.0.mlp.up_proj", .K = 96, .N = 40};
	struct ctq_probe_result r;
	cr_assert_eq(ctq_probe_run(&b, &L, CTQ_PW_RANDOM, CTQ_PA_GAUSSIAN, 64, 5, &pol, &r, &err), CTQ_OK,
		     "%s", err.message);
	cr_expect(!r.passed, "a scale off by one ulp passed");
	cr_expect(r.s_mismatch > 0, "s mismatches %lld", (long long)r.s_mismatch);
	cr_expect(strstr(r.reason, "layers.0.mlp.up_proj: bit-exact quantize"), "%s", r.reason);
	/* rel-L2 alone would have passed it. */
	cr_expect(r.kernel_rel_l2 <= pol.kernel_rel_l2_max, "kernel rel-L2 %g", r.kernel_rel_l2);
	cr_expect_eq(r.y_mismatch, -1, "output checked without GEMM_EXACT");
	ctq_backend_close(&b);
}

Test(plugin, declared_exact_output_catches_a_wrong_epilogue)
{
	/* The bit-exact output check on a backend that declares it, against
	 * the reference's own scale-shift defect. */
	struct ctq_backend b;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_backend_reference(&b, &err), CTQ_OK);
	b.exact = CTQ_EXACT_QUANT | CTQ_EXACT_OUTPUT;
	struct ctq_probe_policy pol;
	ctq_probe_policy_default(&pol);
	const struct ctq_probe_layer L = {.name = "o_proj", .K = 64, .N = 48};
	struct ctq_probe_result r;
	cr_assert_eq(ctq_probe_run(&b, &L, CTQ_PW_RANDOM, CTQ_PA_GAUSSIAN, 8, 1, &pol, &r, &err), CTQ_OK);
	cr_expect(r.passed && r.q_mismatch == 0 && r.s_mismatch == 0 && r.y_mismatch == 0, "%s", r.reason);
	b.defects = CTQ_DEFECT_SCALE_SHIFT;
	cr_assert_eq(ctq_probe_run(&b, &L, CTQ_PW_RANDOM, CTQ_PA_GAUSSIAN, 8, 1, &pol, &r, &err), CTQ_OK);
	cr_expect(!r.passed && r.y_mismatch > 0 && strstr(r.reason, "o_proj: bit-exact output"), "%s",
		  r.reason);
	ctq_backend_close(&b);
}

Test(plugin, probe_kernel_lib_refuses_defect_injection)
{
	char dir[] = "/tmp/ctq-plugin-XXXXXX";
	cr_assert(mkdtemp(dir));
	const char *args[] = {"probe", "--kernel-lib", CPU_PLUGIN, "--inject-defect", "epilogue-nan", NULL};
	char *o, *e;
	cr_expect_eq(run_cli(ctq_cmd_probe, dir, args, &o, &e), CTQ_EXIT_USAGE);
	cr_expect(strstr(e, "--kernel-lib takes neither --inject-defect"), "%s", e);
	free(o);
	free(e);
	const char *help[] = {"probe", "--help", NULL};
	cr_expect_eq(run_cli(ctq_cmd_probe, dir, help, &o, &e), 0);
	cr_expect(strstr(o, "--kernel-lib LIB"), "%s", o);
	free(o);
	free(e);
	ctq_remove_tree(dir);
}

/* bench gemm times on the GPU only (CUDA graphs and events; it has no CPU
 * timing path), so on a CPU host the option's validation is what can be
 * tested: a CPU plug-in is refused pointing at the probe, a broken one is
 * refused as the probe refuses it, each exit 2 before any device or run
 * directory. Timing a CUDA plug-in: tests/gpu and the commands of docs/probing.md. */
Test(plugin, bench_gemm_impl_validates_the_plugin)
{
	static const struct {
		const char *path, *says;
	} cases[] = {
		{CPU_PLUGIN, "is the CPU plug-in cpu_w8a8; this benchmark times CUDA kernels"},
		{BAD_ABI, "implements kernel plug-in ABI version 3; this ctq speaks versions 1 and 2"},
		{NO_ENTRY, "no entry symbol ctq_kernel_plugin"},
		{CTQ_TEST_BUILD_DIR "/plugins/cpu_wna16.so", "is the CPU plug-in cpu_wna16; this benchmark times CUDA"},
	};
	char dir[] = "/tmp/ctq-plugin-XXXXXX";
	cr_assert(mkdtemp(dir));
	char out[64];
	snprintf(out, sizeof out, "%s/run", dir);
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		const char *args[] = {"bench", "gemm", "--impl", cases[i].path, "--shapes", "64:128", "--m", "1",
				      "--out", out, NULL};
		char *o, *e;
		int rc = run_cli(ctq_cmd_bench, dir, args, &o, &e);
		cr_expect_eq(rc, CTQ_EXIT_USAGE, "%s: exit %d: %s", cases[i].path, rc, e);
		cr_expect(strstr(e, cases[i].path) && strstr(e, cases[i].says), "%s: %s", cases[i].path, e);
		cr_expect(!ctq_path_exists(out), "%s: a run directory was written", cases[i].path);
		free(o);
		free(e);
	}
	const char *help[] = {"bench", "gemm", "--help", NULL};
	char *o, *e;
	cr_expect_eq(run_cli(ctq_cmd_bench, dir, help, &o, &e), 0);
	cr_expect(strstr(o, "--impl LIB") && strstr(o, "bench_gemm_plugin.csv") && strstr(o, "--wna16 LIST") &&
			  strstr(o, "gemm_wna16"),
		  "%s", o);
	free(o);
	free(e);
	/* weight-only layouts belong to a plug-in */
	const char *lone[] = {"bench", "gemm", "--wna16", "w4a16-g128", "--shapes", "64:128", "--out", out, NULL};
	cr_expect_eq(run_cli(ctq_cmd_bench, dir, lone, &o, &e), CTQ_EXIT_USAGE);
	cr_expect(strstr(e, "--wna16") && strstr(e, "needs --impl"), "%s", e);
	cr_expect(!ctq_path_exists(out));
	free(o);
	free(e);
	ctq_remove_tree(dir);
}

#define SEGV_GEMM CTQ_TEST_BUILD_DIR "/tests/plugins/segv_gemm.so"
#define HANG_GEMM CTQ_TEST_BUILD_DIR "/tests/plugins/hang_gemm.so"
#define HUGE_WS CTQ_TEST_BUILD_DIR "/tests/plugins/huge_ws.so"

/* Hostile plug-ins: each call of a CPU plug-in runs in a child process,
 * so one that crashes or hangs in gemm_w8a8, or asks for a workspace no
 * allocation can hold, ends the probe with exit 3 and one message naming
 * the file, the plug-in, the function and the geometry; no run directory
 * is left. Without the isolation the segfault kills this test process and
 * the hang runs into the test's timeout. */
Test(plugin, hostile_plugins_exit_3_naming_plugin_op_and_geometry, .timeout = 60)
{
	static const struct {
		const char *path, *timeout;
		const char *says[3];
	} cases[] = {
		{SEGV_GEMM, "600",
		 {"plug-in segv_gemm: gemm_w8a8 at M=3 N=32 K=64 crashed", "signal 11", NULL}},
		{HANG_GEMM, "1",
		 {"plug-in hang_gemm: gemm_w8a8 at M=3 N=32 K=64 did not return within 1 s",
		  "--kernel-timeout", NULL}},
		{HUGE_WS, "600",
		 {"plug-in huge_ws: gemm_workspace_bytes(M=3, N=32, K=64) returned "
		  "18446744073709551607 bytes",
		  "more than the 1099511627776 (1 TiB)", NULL}},
	};
	char dir[] = "/tmp/ctq-plugin-XXXXXX";
	cr_assert(mkdtemp(dir));
	char out[64];
	snprintf(out, sizeof out, "%s/run", dir);
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		const char *args[] = {"probe", "--kernel-lib", cases[i].path, "--kernel-timeout",
				      cases[i].timeout, "--shapes", "64:32", "--weights", "random",
				      "--acts", "gaussian", "--m", "3", "--out", out, NULL};
		char *o, *e;
		double t0 = ctq_now_s();
		int rc = run_cli(ctq_cmd_probe, dir, args, &o, &e);
		double took = ctq_now_s() - t0;
		cr_expect_eq(rc, CTQ_EXIT_ENV, "%s: exit %d: %s", cases[i].path, rc, e);
		char at[128];
		snprintf(at, sizeof at, "ctq probe: environment at %s: plug-in ", cases[i].path);
		cr_expect(strstr(e, at), "%s: wants \"%s\": %s", cases[i].path, at, e);
		for (int k = 0; cases[i].says[k]; k++)
			cr_expect(strstr(e, cases[i].says[k]), "%s: wants \"%s\": %s", cases[i].path,
				  cases[i].says[k], e);
		cr_expect(strstr(e, cases[i].path), "%s: %s", cases[i].path, e);
		cr_expect(took < 20, "%s took %.1f s", cases[i].path, took);
		cr_expect(!ctq_path_exists(out), "%s: a run directory was left", cases[i].path);
		free(o);
		free(e);
	}
	ctq_remove_tree(dir);
}

/* The workspace size check alone, on the adapter (no child process
 * involved): the answer is refused before anything is allocated. */
Test(plugin, huge_workspace_is_refused_before_allocation)
{
	struct ctq_kernel_lib l;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_kernel_lib_open(&l, HUGE_WS, &err), CTQ_OK, "%s", err.message);
	size_t n = 1;
	cr_expect_eq(ctq_kernel_plugin_workspace(l.t, l.path, 1, 2, 3, &n, &err), CTQ_ERR_ENV);
	cr_expect_eq(n, 0);
	cr_expect(strstr(err.message, "gemm_workspace_bytes(M=1, N=2, K=3)"), "%s", err.message);
	cr_expect_str_eq(err.path, HUGE_WS);
	ctq_kernel_lib_close(&l);
	/* a plug-in without the member: no workspace, no error */
	cr_assert_eq(ctq_kernel_lib_open(&l, CPU_PLUGIN, &err), CTQ_OK);
	struct ctq_error e2 = {0};
	cr_expect_eq(ctq_kernel_plugin_workspace(l.t, l.path, 1, 2, 3, &n, &e2), CTQ_OK, "%s", e2.message);
	ctq_kernel_lib_close(&l);
}

/* Under `ctq run` the probe runs in ctq's process: a crashing plug-in
 * once took the whole run down. Now the step is an error with exit 3, its
 * reason in the manifest, the plug-in's message in logs/<id>.txt, and the
 * run goes on to the next step. */
Test(plugin, crashing_plugin_fails_its_plan_step, .timeout = 60)
{
	char dir[] = "/tmp/ctq-plugin-XXXXXX";
	cr_assert(mkdtemp(dir));
	char plan[128], out[128], text[1024];
	snprintf(plan, sizeof plan, "%s/plan.json", dir);
	snprintf(out, sizeof out, "%s/run", dir);
	snprintf(text, sizeof text,
		 "{\"name\": \"hostile\", \"about\": \"a crashing plug-in, then a step that passes\",\n"
		 " \"steps\": [\n"
		 "  {\"id\": \"probe-segv\", \"command\": \"probe\", \"about\": \"crashes\",\n"
		 "   \"args\": [\"--kernel-lib\", \"%s\", \"--shapes\", \"64:32\", \"--weights\", \"random\",\n"
		 "            \"--acts\", \"gaussian\", \"--m\", \"3\"]},\n"
		 "  {\"id\": \"probe-ref\", \"command\": \"probe\", \"about\": \"passes\",\n"
		 "   \"args\": [\"--shapes\", \"64:32\", \"--weights\", \"random\", \"--acts\", \"gaussian\",\n"
		 "            \"--m\", \"3\"]}]}\n",
		 SEGV_GEMM);
	struct ctq_error err = {0};
	cr_assert_eq(ctq_file_write_atomic(plan, text, strlen(text), &err), CTQ_OK, "%s", err.message);
	const char *args[] = {"run", plan, "--out", out, "--gpu", "off", NULL};
	char *o, *e;
	int rc = run_cli(ctq_cmd_run, dir, args, &o, &e);
	cr_expect_neq(rc, CTQ_EXIT_OK, "the run passed: %s%s", o, e);
	char *man = slurp(out, "manifest.json");
	cr_expect(strstr(man, "\"status\":\t\"error\"") && strstr(man, "exit 3; see logs/probe-segv.txt"),
		  "%s", man);
	cr_expect(strstr(man, "\"status\":\t\"passed\""), "the next step did not run: %s", man);
	free(man);
	char *log = slurp(out, "logs/probe-segv.txt");
	cr_expect(strstr(log, SEGV_GEMM) && strstr(log, "gemm_w8a8 at M=3 N=32 K=64 crashed"), "%s", log);
	free(log);
	free(o);
	free(e);
	ctq_remove_tree(dir);
}

/* A plug-in in ctq's process (a CUDA plug-in always; here a CPU one with
 * its isolation off) that crashes or hangs still ends ctq, but its last
 * word names the plug-in, the call and the geometry first. Run in a child
 * of this test, whose stderr goes to a file. */
static void in_process_probe(const char *plugin, double timeout_s, const char *errfile)
{
	cr_assert(freopen(errfile, "w", stderr));
	struct ctq_backend b;
	struct ctq_error err = {0};
	if (ctq_backend_plugin(&b, plugin, &err))
		_exit(100);
	ctq_backend_plugin_set_isolated(&b, false);
	ctq_backend_plugin_set_timeout(&b, timeout_s);
	if (ctq_backend_plugin_isolated(&b))
		_exit(101);
	struct ctq_probe_policy pol;
	ctq_probe_policy_default(&pol);
	const struct ctq_probe_layer L = {.name = "x", .K = 64, .N = 32};
	struct ctq_probe_result r;
	ctq_probe_run(&b, &L, CTQ_PW_RANDOM, CTQ_PA_GAUSSIAN, 3, 1, &pol, &r, &err);
	_exit(102); /* the plug-in returned */
}

Test(plugin, in_process_crash_and_hang_leave_a_last_word, .timeout = 60)
{
	static const struct {
		const char *path;
		double timeout_s;
		int sig;
		const char *says;
	} cases[] = {
		{SEGV_GEMM, 600, SIGSEGV,
		 "ctq: kernel plug-in segv_gemm (" SEGV_GEMM "): gemm_w8a8 at M=3 N=32 K=64 crashed ctq's process"},
		{HANG_GEMM, 1, SIGTERM,
		 "ctq: kernel plug-in hang_gemm (" HANG_GEMM "): gemm_w8a8 at M=3 N=32 K=64 did not finish within 1 s"},
	};
	char dir[] = "/tmp/ctq-plugin-XXXXXX";
	cr_assert(mkdtemp(dir));
	char errfile[64];
	snprintf(errfile, sizeof errfile, "%s/stderr", dir);
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		fflush(NULL);
		pid_t pid = fork();
		cr_assert_geq(pid, 0);
		if (pid == 0)
			in_process_probe(cases[i].path, cases[i].timeout_s, errfile);
		int status = 0;
		cr_assert_eq(waitpid(pid, &status, 0), pid);
#if defined(__SANITIZE_ADDRESS__)
		/* In ctq's process the action that was there before takes the
		 * signal after the last word (backend/plugin.c): under the
		 * sanitizer build that is the sanitizer's, which reports and exits. */
		if (cases[i].sig == SIGSEGV)
			cr_expect(WIFEXITED(status) && WEXITSTATUS(status) != 0, "%s: status 0x%x",
				  cases[i].path, status);
		else
#endif
			cr_expect(WIFSIGNALED(status) && WTERMSIG(status) == cases[i].sig, "%s: status 0x%x",
				  cases[i].path, status);
		char *e = slurp(dir, "stderr");
		cr_expect(strstr(e, cases[i].says), "%s: %s", cases[i].path, e);
		free(e);
	}
	ctq_remove_tree(dir);
}

/* ---- ABI version 2: version-1 plug-ins, weight-only plug-ins ---------------- */

#define V1_PLUGIN CTQ_TEST_BUILD_DIR "/tests/plugins/v1_w8a8.so"
#define WNA16_PLUGIN CTQ_TEST_BUILD_DIR "/plugins/cpu_wna16.so"
#define WNA16_NO_CAPS CTQ_TEST_BUILD_DIR "/tests/plugins/wna16_no_caps.so"

Test(plugin, version_1_plugin_still_runs_unchanged)
{
	char dir[] = "/tmp/ctq-plugin-XXXXXX";
	cr_assert(mkdtemp(dir));
	char out[64];
	snprintf(out, sizeof out, "%s/run", dir);
	const char *args[] = {"probe", "--kernel-lib", V1_PLUGIN, "--shapes", "tiny", "--m", "1,17",
			      "--out", out, NULL};
	char *o, *e;
	int rc = run_cli(ctq_cmd_probe, dir, args, &o, &e);
	cr_expect_eq(rc, CTQ_EXIT_OK, "exit %d: %s%s", rc, o, e);
	/* read up to its struct_size: the bytes past it (a gemm_wna16 that
	 * fails) are not a member of its table */
	cr_expect(strstr(o, "kernel plug-in v1_w8a8") && strstr(o, "ABI 1") &&
		  strstr(o, "weight-only gemm: no"), "%s", o);
	cr_expect(strstr(o, "probe: 128 passed, 0 failed"), "%s", o);
	cr_expect_eq(csv_rows(out, "v1_w8a8", "\"pass\"", NULL), 128);
	struct ctq_kernel_lib l;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_kernel_lib_open(&l, V1_PLUGIN, &err), CTQ_OK, "%s", err.message);
	cr_expect_eq(l.t->abi_version, 1);
	cr_expect_null(l.t->gemm_wna16);
	ctq_kernel_lib_close(&l);
	free(o);
	free(e);
	ctq_remove_tree(dir);
}

Test(plugin, weight_only_plugin_passes_every_layout)
{
	char dir[] = "/tmp/ctq-plugin-XXXXXX";
	cr_assert(mkdtemp(dir));
	char out[64];
	snprintf(out, sizeof out, "%s/run", dir);
	const char *args[] = {"probe", "--kernel-lib", WNA16_PLUGIN, "--shapes", "tiny", "--m", "17",
			      "--wna16", "w4a16-g16,w4a16-asym-g16,w8a16,w8a16-asym-g16", "--out", out,
			      NULL};
	char *o, *e;
	int rc = run_cli(ctq_cmd_probe, dir, args, &o, &e);
	cr_expect_eq(rc, CTQ_EXIT_OK, "exit %d: %s%s", rc, o, e);
	cr_expect(strstr(o, "kernel plug-in cpu_wna16") &&
		  strstr(o, "weight-only gemm: int4+int8, groups, zero points, bit-exact"), "%s", o);
	/* 4 layouts x 4 layers x 4 weight patterns x 4 activation patterns,
	 * each output bit for bit the reference's */
	cr_expect(strstr(o, "probe: 256 passed, 0 failed"), "%s", o);
	cr_expect_eq(csv_rows(out, "cpu_wna16", "\"pass\"", NULL), 256);
	char *json = slurp(out, "probe.json");
	cr_expect(strstr(json, "\"y_mismatch\":\t0") && !strstr(json, "\"y_mismatch\":\t-1"), "%.400s", json);
	free(json);
	/* the default layouts: w4a16-g128 does not divide tiny's K, w8a16 does */
	char out2[64];
	snprintf(out2, sizeof out2, "%s/run2", dir);
	const char *dflt[] = {"probe", "--kernel-lib", WNA16_PLUGIN, "--shapes", "128:32", "--weights",
			      "random", "--acts", "gaussian", "--out", out2, NULL};
	free(o);
	free(e);
	rc = run_cli(ctq_cmd_probe, dir, dflt, &o, &e);
	cr_expect_eq(rc, CTQ_EXIT_OK, "exit %d: %s%s", rc, o, e);
	cr_expect(strstr(o, "w4a16-g128:random") && strstr(o, "w4a16-asym-g128:random") &&
		  strstr(o, "w8a16:random") && strstr(o, "probe: 3 passed, 0 failed"), "%s", o);
	free(o);
	free(e);
	ctq_remove_tree(dir);
}

Test(plugin, planted_group_stride_fails_every_layer)
{
	cr_assert_eq(setenv("CTQ_WNA16_PLANT", "group-stride", 1), 0);
	char dir[] = "/tmp/ctq-plugin-XXXXXX";
	cr_assert(mkdtemp(dir));
	char out[64];
	snprintf(out, sizeof out, "%s/run", dir);
	const char *args[] = {"probe", "--kernel-lib", WNA16_PLUGIN, "--shapes", "tiny", "--m", "17",
			      "--wna16", "w4a16-g16", "--weights", "random", "--out", out, NULL};
	char *o, *e;
	int rc = run_cli(ctq_cmd_probe, dir, args, &o, &e);
	unsetenv("CTQ_WNA16_PLANT");
	cr_expect_eq(rc, CTQ_EXIT_FAIL, "exit %d: %s%s", rc, o, e);
	cr_expect(strstr(o, "probe: 0 passed, 16 failed"), "%s", o);
	static const char *const layers[] = {"qkv_proj", "o_proj", "gate_up_proj", "down_proj"};
	for (int l = 0; l < 4; l++) {
		char needle[64];
		snprintf(needle, sizeof needle, "%s (w4a16-g16): ", layers[l]);
		cr_expect(strstr(o, needle), "%s not named: %s", layers[l], o);
		cr_expect_eq(csv_rows(out, "cpu_wna16", "\"fail\"", layers[l]), 4, "%s", layers[l]);
	}
	free(o);
	free(e);
	ctq_remove_tree(dir);
}

Test(plugin, weight_only_refusals_exit_2)
{
	char dir[] = "/tmp/ctq-plugin-XXXXXX";
	cr_assert(mkdtemp(dir));
	char out[64];
	snprintf(out, sizeof out, "%s/run", dir);
	static const struct {
		const char *lib, *wna16, *needle;
	} cases[] = {
		{WNA16_NO_CAPS, NULL, "declares neither CTQ_KERNEL_PLUGIN_WNA16_INT4 nor _INT8"},
		{CPU_PLUGIN, "w4a16-g128", "the plug-in cpu_w8a8 has no gemm_wna16"},
		{WNA16_PLUGIN, "w5a16", "\"w5a16\" is not a layout"},
		{WNA16_PLUGIN, "w4a16-g128,,w8a16", "--wna16 is \"w4a16-g128,,w8a16\"; an entry is empty"},
		{WNA16_PLUGIN, "w8a16,w8a16,w8a16,w8a16,w8a16,w8a16,w8a16,w8a16,w8a16",
		 "expected at most 8 entries"},
		{NULL, "w4a16", "--wna16 probes a weight-only plug-in: it needs --kernel-lib"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		const char *args[12] = {"probe", "--shapes", "tiny", "--out", out};
		int n = 5;
		if (cases[i].lib) {
			args[n++] = "--kernel-lib";
			args[n++] = cases[i].lib;
		}
		if (cases[i].wna16) {
			args[n++] = "--wna16";
			args[n++] = cases[i].wna16;
		}
		args[n] = NULL;
		char *o, *e;
		int rc = run_cli(ctq_cmd_probe, dir, args, &o, &e);
		cr_expect_eq(rc, CTQ_EXIT_USAGE, "case %zu: exit %d", i, rc);
		cr_expect(strstr(e, cases[i].needle), "case %zu: %s", i, e);
		cr_expect(!ctq_path_exists(out), "case %zu left %s", i, out);
		free(o);
		free(e);
	}
	ctq_remove_tree(dir);
}

Test(plugin, weight_only_plugin_probes_a_checkpoints_stored_weights)
{
	char dir[] = "/tmp/ctq-plugin-XXXXXX";
	cr_assert(mkdtemp(dir));
	char bf16[64], w4[64], out[64];
	snprintf(bf16, sizeof bf16, "%s/bf16", dir);
	snprintf(w4, sizeof w4, "%s/w4", dir);
	snprintf(out, sizeof out, "%s/run", dir);
	const char *mk[] = {"make-model", "--arch", "qwen3", "--preset", "tiny", "--quiet", bf16, NULL};
	char *o, *e;
	cr_assert_eq(run_cli(ctq_cmd_make_model, dir, mk, &o, &e), CTQ_EXIT_OK, "%s", e);
	free(o);
	free(e);
	const char *q[] = {"quantize", bf16, w4, "--quiet", "--scheme", "w4a16", "--group-size", "16",
			   "--asym", NULL};
	cr_assert_eq(run_cli(ctq_cmd_quantize, dir, q, &o, &e), CTQ_EXIT_OK, "%s", e);
	free(o);
	free(e);
	/* 14 quantized linears x 2 real activation patterns x M 17 */
	const char *args[] = {"probe", "--kernel-lib", WNA16_PLUGIN, "--model", w4, "--m", "17",
			      "--out", out, NULL};
	int rc = run_cli(ctq_cmd_probe, dir, args, &o, &e);
	cr_expect_eq(rc, CTQ_EXIT_OK, "exit %d: %s%s", rc, o, e);
	cr_expect(strstr(o, "probe: 28 passed, 0 failed"), "%s", o);
	cr_expect(strstr(o, "model.layers.1.mlp.down_proj") && strstr(o, "w4a16-asym-g16:checkpoint"), "%s", o);
	free(o);
	free(e);
	/* the planted group stride fails every module, each named */
	cr_assert_eq(setenv("CTQ_WNA16_PLANT", "group-stride", 1), 0);
	const char *again[] = {"probe", "--kernel-lib", WNA16_PLUGIN, "--model", w4, "--m", "17",
			       "--real-acts", "gaussian", "--out", out, "--force", NULL};
	rc = run_cli(ctq_cmd_probe, dir, again, &o, &e);
	unsetenv("CTQ_WNA16_PLANT");
	cr_expect_eq(rc, CTQ_EXIT_FAIL, "exit %d: %s%s", rc, o, e);
	cr_expect(strstr(o, "probe: 0 passed, 14 failed"), "%s", o);
	cr_expect(strstr(o, "model.layers.0.self_attn.q_proj (w4a16-asym-g16): "), "%s", o);
	free(o);
	free(e);
	ctq_remove_tree(dir);
}
