/* Criterion tests for the GPU code a build carries and the kernel paths a
 * run records: which compute capabilities a CUDA_ARCH list covers (machine
 * code within a major version, "a" targets on their own capability alone,
 * PTX from its version up), the names and JSON of the path registry
 * (backend/paths.h), the manifest's kernel_paths limited to the run, and
 * the report lines that say which code a run qualified. */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/paths.h"
#include "core/fileio.h"
#include "core/json.h"
#include "core/version.h"
#include "reports/report.h"
#include "results/run.h"
#include "tests/command.h"

#define FAT "sm_80 sm_86 sm_89 sm_90a sm_100 sm_120 compute_120"

Test(paths, fat_build_covers_each_generation)
{
	static const struct {
		int major, minor;
		const char *how; /* NULL: not covered */
	} cases[] = {
		{8, 0, "sm_80"},   {8, 6, "sm_86"},   {8, 7, "sm_86"},   {8, 9, "sm_89"},
		{9, 0, "sm_90a"},  {10, 0, "sm_100"}, {10, 3, "sm_100"}, {12, 0, "sm_120"},
		{12, 1, "sm_120"}, {7, 5, NULL},      {11, 0, NULL},     {6, 1, NULL},
		{13, 0, "compute_120 (PTX, compiled by the driver)"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char how[96] = "x";
		int ok = ctq_archs_run_on(FAT, cases[i].major, cases[i].minor, how, sizeof how);
		cr_expect_eq(ok, cases[i].how != NULL, "%d.%d", cases[i].major, cases[i].minor);
		cr_expect_str_eq(how, cases[i].how ? cases[i].how : "", "%d.%d", cases[i].major, cases[i].minor);
	}
}

Test(paths, arch_specific_targets_cover_their_capability_alone)
{
	char how[96];
	cr_expect(ctq_archs_run_on("sm_90a", 9, 0, how, sizeof how));
	cr_expect(!ctq_archs_run_on("sm_90a", 10, 0, how, sizeof how), "sm_90a SASS is not forward compatible");
	cr_expect(!ctq_archs_run_on("sm_100a", 10, 3, how, sizeof how));
	cr_expect(!ctq_archs_run_on("compute_90a", 10, 0, how, sizeof how), "nor is compute_90a PTX");
	cr_expect(ctq_archs_run_on("compute_80", 9, 0, how, sizeof how));
	cr_expect_str_eq(how, "compute_80 (PTX, compiled by the driver)");
	cr_expect(ctq_archs_run_on("compute_80 sm_90a", 9, 0, how, sizeof how));
	cr_expect_str_eq(how, "sm_90a", "machine code preferred to PTX");
	cr_expect(!ctq_archs_run_on("sm_86", 8, 0, how, sizeof how), "sm_86 code needs 8.6 or a later 8.x");
	cr_expect(!ctq_archs_run_on("", 9, 0, how, sizeof how));
	cr_expect(!ctq_archs_run_on("bogus sm_ compute_x", 9, 0, how, sizeof how));
}

Test(paths, names_are_stable)
{
	static const char *const g[] = {"sm90-wgmma", "sm80-mma", "gemv", "dp4a"};
	for (int p = 0; p < CTQ_GEMM_PATH_COUNT; p++) {
		cr_expect_str_eq(ctq_gemm_path_name((enum ctq_gemm_path)p), g[p]);
		enum ctq_gemm_path back;
		cr_expect(ctq_gemm_path_parse(g[p], &back) && back == (enum ctq_gemm_path)p);
	}
	enum ctq_gemm_path x;
	cr_expect(!ctq_gemm_path_parse("sm80", &x) && !ctq_gemm_path_parse("", &x));
	cr_expect_str_eq(ctq_kop_name(CTQ_KOP_ATTENTION), "attention");
	cr_expect_str_eq(ctq_kpath_name(CTQ_KOP_LINEAR_BF16, CTQ_BF16_PATH_GEMV), "gemv");
	cr_expect_null(ctq_kpath_name(CTQ_KOP_COUNT, 0));
	cr_expect_null(ctq_kpath_name(CTQ_KOP_GEMM_W8A8, CTQ_KPATH_MAX));
}

Test(paths, json_and_line_list_what_ran_since_a_snapshot)
{
	ctq_kpath_note(CTQ_KOP_ATTENTION, CTQ_ATT_PATH_GQA);
	struct ctq_kpath_counts since;
	ctq_kpaths_snapshot(&since);
	ctq_kpath_note(CTQ_KOP_GEMM_W8A8, CTQ_GEMM_PATH_GEMV);
	ctq_kpath_note(CTQ_KOP_GEMM_W8A8, CTQ_GEMM_PATH_SM80_MMA);
	ctq_kpath_note(CTQ_KOP_GEMM_W8A8, CTQ_GEMM_PATH_SM80_MMA);
	ctq_kpath_note(CTQ_KOP_LAUNCH, CTQ_LAUNCH_PLAIN);
	ctq_kpath_note(CTQ_KOP_COUNT, 0); /* ignored */
	cJSON *o = cJSON_CreateObject();
	ctq_kpaths_to_json(o, &since);
	char *text = cJSON_PrintUnformatted(o);
	cr_expect_str_eq(text, "{\"kernel_paths\":{\"gemm_w8a8\":[\"sm80-mma\",\"gemv\"],\"launch\":[\"plain\"]}}");
	free(text);
	cJSON_Delete(o);
	char line[128];
	ctq_kpaths_line(line, sizeof line, &since);
	cr_expect_str_eq(line, "gemm_w8a8 sm80-mma+gemv; launch plain");
	ctq_kpaths_line(line, sizeof line, NULL);
	cr_expect_str_eq(line, "gemm_w8a8 sm80-mma+gemv; attention gqa; launch plain");
	ctq_kpaths_line(line, 12, NULL); /* cut, not overrun */
	cr_expect(strlen(line) < 12);
	struct ctq_kpath_counts now;
	ctq_kpaths_snapshot(&now);
	o = cJSON_CreateObject();
	ctq_kpaths_to_json(o, &now);
	text = cJSON_PrintUnformatted(o);
	cr_expect_str_eq(text, "{\"kernel_paths\":{}}", "nothing ran since");
	free(text);
	cJSON_Delete(o);
}

/* A run directory's manifest carries the GPU code of the build and the
 * kernel paths taken during the run only; the report shows both, with the
 * dispatch knobs set. */
Test(paths, manifest_and_report_say_which_code_ran)
{
	ctq_kpath_note(CTQ_KOP_GEMM_W8A8, CTQ_GEMM_PATH_DP4A); /* before the run: not its own */
	char dir[] = "/tmp/ctq-paths-XXXXXX";
	cr_assert(mkdtemp(dir));
	char out[64];
	snprintf(out, sizeof out, "%s/run", dir);
	setenv("CTQ_ARCH", "sm_86", 1);
	struct ctq_run run;
	struct ctq_error err = {0};
	char *argv[] = {"probe"};
	cr_assert_eq(ctq_run_begin(&run, out, false, "probe", 1, argv, &err), CTQ_OK, "%s", err.message);
	cJSON_AddStringToObject(run.manifest, "cuda_device",
				"NVIDIA H200 (sm_90, 132 SMs, 139.8 GiB; runs sm_90a machine code, dispatching as sm_86 (CTQ_ARCH))");
	/* every manifest records the knobs, CTQ_ARCH among them */
	cr_expect_str_eq(cJSON_GetStringValue(ctq_json_get(ctq_json_get(run.manifest, "knobs"), "CTQ_ARCH")),
			 "sm_86");
	ctq_kpath_note(CTQ_KOP_GEMM_W8A8, CTQ_GEMM_PATH_SM80_MMA);
	ctq_kpath_note(CTQ_KOP_ATTENTION, CTQ_ATT_PATH_PREFILL_MMA);
	cr_assert_eq(ctq_run_commit(&run, &err), CTQ_OK, "%s", err.message);
	char path[128];
	snprintf(path, sizeof path, "%s/manifest.json", out);
	cJSON *m = NULL;
	cr_assert_eq(ctq_json_load_file(path, 1 << 20, NULL, &m, &err), CTQ_OK, "%s", err.message);
	const cJSON *archs = ctq_json_get(ctq_json_get(m, "ctq"), "cuda_archs");
	cr_assert(cJSON_IsArray(archs));
	/* what this build carries: the list it was compiled with */
	char joined[256] = "";
	const cJSON *a;
	cJSON_ArrayForEach(a, archs)
		snprintf(joined + strlen(joined), sizeof joined - strlen(joined), "%s%s", joined[0] ? " " : "",
			 a->valuestring);
	cr_expect_str_eq(joined, ctq_build_cuda_archs());
	const cJSON *kp = ctq_json_get(m, "kernel_paths");
	char *text = cJSON_PrintUnformatted(kp);
	cr_expect_str_eq(text, "{\"gemm_w8a8\":[\"sm80-mma\"],\"attention\":[\"prefill-mma\"]}");
	free(text);
	cJSON_Delete(m);
	struct ctq_report_summary s;
	cr_assert_eq(ctq_report_write(out, NULL, &s, &err), CTQ_OK, "%s", err.message);
	char *md = NULL;
	size_t len = 0;
	snprintf(path, sizeof path, "%s/summary.md", out);
	cr_assert_eq(ctq_file_read(path, 1 << 20, &md, &len, &err), CTQ_OK, "%s", err.message);
	cr_expect(strstr(md, "| kernel paths run | gemm_w8a8: sm80-mma; attention: prefill-mma |"), "%s", md);
	cr_expect(strstr(md, "| dispatch knobs | CTQ_ARCH=sm_86 |"), "%s", md);
	cr_expect(strstr(md, "| GPU code carried | "), "%s", md);
	cr_expect(strstr(md, "runs sm_90a machine code, dispatching as sm_86 (CTQ_ARCH)"), "%s", md);
	free(md);
	unsetenv("CTQ_ARCH");
	ctq_remove_tree(dir);
}

/* ctq --version names the GPU code the binary carries (CTQ_BIN: the binary
 * of the build under test, tools/run-tests.sh). */
Test(paths, version_lists_the_gpu_code)
{
	const char *bin = test_ctq_bin();
	char cmd[512];
	snprintf(cmd, sizeof cmd, "%s --version", bin);
	char out[2048];
	cr_assert_eq(test_command(cmd, out, sizeof out), 0, "%s: %s", cmd, out);
	cr_expect(strstr(out, "GPU code: "), "%s", out);
	if (ctq_build_cuda_archs()[0]) {
		/* every sm_ entry of the build is named, in order */
		char want[256];
		snprintf(want, sizeof want, "%s", ctq_build_cuda_archs());
		for (char *t = strtok(want, " "); t; t = strtok(NULL, " "))
			cr_expect(strstr(out, t), "%s missing from: %s", t, out);
		cr_expect(strstr(out, "sm80-mma") && strstr(out, "sm90-wgmma"), "%s", out);
	} else {
		cr_expect(strstr(out, "none (built without CUDA"), "%s", out);
	}
}
