/* Criterion tests for `ctq run`, `ctq report` and the run manifest
 * (harness/cmd_run.c over plan/plan.h, reports/report.h, results/env.h,
 * results/junit_merge.h):
 *   - a plan with a GPU step reports it skipped ("no CUDA device") on a
 *     host without one, and with --gpu off everywhere;
 *   - failing steps, dependent steps, missing requirements; bad plans exit
 *     2 and write nothing;
 *   - junit.xml (a testcase per step plus the steps' suites) and the
 *     manifest's environment and checkpoint provenance (the
 *     quantization_config digest against a golden from Python's
 *     json.dumps(sort_keys=True));
 *   - report.html is self-contained and renders in headless Chromium to a
 *     page that is not blank (skipped, visibly, without chromium);
 *   - two runs of plans/default.json compare as no regression. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/json.h"
#include "harness/commands.h"
#include "backend/backend.h"
#include "results/env.h"
#include "results/plot.h"
#include "families/bench_model.h"
#include "families/family.h"
#include "reports/report.h"
#include "tests/command.h"

struct tmp {
	char root[64];
};

static void tmp_make(struct tmp *t)
{
	snprintf(t->root, sizeof t->root, "/tmp/ctq-report-XXXXXX");
	cr_assert(mkdtemp(t->root));
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	cr_assert(f, "%s", path);
	fputs(text, f);
	fclose(f);
}

static char *slurp(const char *path)
{
	char *text = NULL;
	size_t n = 0;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_file_read(path, (size_t)64 << 20, &text, &n, &err), CTQ_OK, "%s: %s", path,
		     err.message);
	return text;
}

/* `ctq run PLAN --out OUT [extra]` with stdout silenced; its exit code. */
static int run_plan(const char *plan, const char *out, const char *extra)
{
	char *argv[8] = {"run", (char *)plan, "--out", (char *)out};
	int argc = 4;
	if (extra)
		argv[argc++] = (char *)extra, argv[argc++] = "off";
	argv[argc] = NULL;
	fflush(stdout);
	FILE *saved = freopen("/dev/null", "w", stdout);
	(void)saved;
	int rc = ctq_cmd_run(argc, argv);
	fflush(stdout);
	return rc;
}

static cJSON *manifest(const char *out)
{
	char path[256];
	snprintf(path, sizeof path, "%s/manifest.json", out);
	cJSON *m = NULL;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_json_load_file(path, (size_t)16 << 20, NULL, &m, &err), CTQ_OK, "%s", err.message);
	return m;
}

static const cJSON *step(const cJSON *m, const char *id)
{
	const cJSON *s;
	cJSON_ArrayForEach(s, ctq_json_get(m, "steps"))
	{
		const cJSON *sid = ctq_json_get(s, "id");
		if (cJSON_IsString(sid) && !strcmp(sid->valuestring, id))
			return s;
	}
	cr_assert_fail("no step %s in the manifest", id);
	return NULL;
}

static const char *str(const cJSON *o, const char *key)
{
	const cJSON *v = ctq_json_get(o, key);
	return cJSON_IsString(v) ? v->valuestring : "";
}

static bool cuda_opens(void)
{
	struct ctq_backend b;
	memset(&b, 0, sizeof b);
	if (ctq_backend_open(&b, "cuda", NULL) != CTQ_OK)
		return false;
	ctq_backend_close(&b);
	return true;
}

/* The small plan most tests use: a conformance folder, tiny probes, one GPU
 * step, a tiny model made, quantized and benchmarked. */
static const char small_plan[] =
	"{\"name\": \"small\", \"about\": \"test plan\", \"steps\": ["
	"{\"id\": \"conform\", \"command\": \"conform\", \"args\": [\"--suite\", \"suites/precedence\"]},"
	"{\"id\": \"probe\", \"command\": \"probe\", \"args\": [\"--shapes\", \"64:128\", \"--backend\", \"reference\","
	" \"--weights\", \"random\", \"--acts\", \"gaussian,bf16-limit\", \"--seed\", \"3\"]},"
	"{\"id\": \"probe-gpu\", \"command\": \"probe\", \"needs\": \"gpu\", \"args\": [\"--shapes\", \"tiny\", \"--backend\", \"cuda\"]},"
	"{\"id\": \"make\", \"command\": \"make-model\", \"args\": [\"--arch\", \"qwen3\", \"--preset\", \"tiny\", \"--layers\", \"1\", \"--quiet\", \"${run}/models/bf16\"]},"
	"{\"id\": \"quantize\", \"command\": \"quantize\", \"after\": \"make\", \"args\": [\"${run}/models/bf16\", \"${run}/models/w8a8\", \"--quiet\"]},"
	"{\"id\": \"bench\", \"command\": \"bench\", \"after\": [\"quantize\"], \"args\": [\"model\", \"--model\", \"${run}/models/w8a8\", \"--backend\", \"reference\","
	" \"--input-len\", \"8\", \"--output-len\", \"4\", \"--reps\", \"3\"]}"
	"]}";

TestSuite(report);

Test(report, gpu_step_is_skipped_without_a_cuda_device)
{
	if (cuda_opens())
		cr_skip_test("a CUDA device is present here; --gpu off is tested below");
	struct tmp t;
	tmp_make(&t);
	char plan[128], out[128];
	snprintf(plan, sizeof plan, "%s/plan.json", t.root);
	snprintf(out, sizeof out, "%s/run", t.root);
	put(plan, small_plan);
	cr_expect_eq(run_plan(plan, out, NULL), 0);
	cJSON *m = manifest(out);
	const cJSON *s = step(m, "probe-gpu");
	cr_expect_str_eq(str(s, "status"), "skipped");
	cr_expect(!strncmp(str(s, "reason"), "no CUDA device", 14), "reason: %s", str(s, "reason"));
	cr_expect_str_eq(str(step(m, "bench"), "status"), "passed");
	char path[256];
	snprintf(path, sizeof path, "%s/junit.xml", out);
	char *junit = slurp(path);
	cr_expect(strstr(junit, "<skipped message=\"no CUDA device"), "%s", junit);
	free(junit);
	cJSON_Delete(m);
	ctq_remove_tree(t.root);
}

Test(report, plan_run_writes_junit_manifest_and_report)
{
	struct tmp t;
	tmp_make(&t);
	char plan[128], out[128], path[256];
	snprintf(plan, sizeof plan, "%s/plan.json", t.root);
	snprintf(out, sizeof out, "%s/run", t.root);
	put(plan, small_plan);
	cr_assert_eq(run_plan(plan, out, "--gpu"), 0);
	cJSON *m = manifest(out);
	const cJSON *gs = step(m, "probe-gpu");
	cr_expect_str_eq(str(gs, "status"), "skipped");
	cr_expect_str_eq(str(gs, "reason"), "GPU steps turned off (--gpu off)");
	static const char *const passed[] = {"conform", "probe", "make", "quantize", "bench"};
	for (size_t i = 0; i < 5; i++) {
		const cJSON *s = step(m, passed[i]);
		cr_expect_str_eq(str(s, "status"), "passed", "%s: %s", passed[i], str(s, "reason"));
		snprintf(path, sizeof path, "%s/%s", out, str(s, "log"));
		cr_expect(ctq_path_exists(path), "%s", path);
	}
	/* Results land in the step folders; ${run} resolved to the final path. */
	snprintf(path, sizeof path, "%s/conform/conform.csv", out);
	cr_expect(ctq_path_exists(path));
	snprintf(path, sizeof path, "%s/bench/bench_model.csv", out);
	cr_expect(ctq_path_exists(path));
	const cJSON *av = ctq_json_get(step(m, "bench"), "argv");
	char want[256];
	snprintf(want, sizeof want, "%s/models/w8a8", out);
	cr_expect_str_eq(cJSON_GetArrayItem(av, 3)->valuestring, want);
	cr_expect_str_eq(str(ctq_json_get(m, "seeds"), "probe"), "3");

	/* Environment. */
	const cJSON *host = ctq_json_get(m, "host"), *build = ctq_json_get(m, "build");
	cr_expect(strlen(str(host, "os")) > 0 && strcmp(str(host, "os"), "unknown"));
	cr_expect(cJSON_IsNumber(ctq_json_get(host, "memory_bytes")) &&
		  ctq_json_get(host, "memory_bytes")->valuedouble > 0);
	cr_expect(cJSON_IsNumber(ctq_json_get(host, "cpu_cores")));
	cr_expect(strstr(str(build, "flags"), "CFLAGS="), "flags: %s", str(build, "flags"));
	cr_expect(strlen(str(build, "compiler")) > 4);
	cr_expect(ctq_json_get(m, "gpus") && ctq_json_get(m, "cuda"));
	cr_expect_str_eq(str(ctq_json_get(m, "plan"), "name"), "small");
	cr_expect_eq(strlen(str(ctq_json_get(m, "plan"), "sha256")), 64);

	/* Checkpoint provenance: both models, their users, hashes. */
	const cJSON *c;
	int n_ck = 0;
	cJSON_ArrayForEach(c, ctq_json_get(m, "checkpoints"))
	{
		n_ck++;
		const cJSON *f = cJSON_GetArrayItem(ctq_json_get(c, "files"), 0);
		cr_expect_eq(strlen(str(f, "sha256")), 64);
		bool q = strstr(str(c, "path"), "w8a8") != NULL;
		cr_expect_eq(strlen(str(c, "quantization_config_sha256")), q ? 64 : 4, "%s",
			     str(c, "path"));
	}
	cr_expect_eq(n_ck, 2);

	/* One junit.xml: the run's suite and the conformance suite, prefixed. */
	snprintf(path, sizeof path, "%s/junit.xml", out);
	char *junit = slurp(path);
	cr_expect(strstr(junit, "<testsuite name=\"ctq.run\" tests=\"6\" failures=\"0\" errors=\"0\" skipped=\"1\""),
		  "%.400s", junit);
	cr_expect(strstr(junit, "<testsuite name=\"conform: ctq.conform\""));
	char cmdline[300];
	snprintf(cmdline, sizeof cmdline, "name=\"bench (ctq bench model --model %s/models/w8a8", out);
	cr_expect(strstr(junit, cmdline), "no %s", cmdline);
	free(junit);

	/* The report. */
	snprintf(path, sizeof path, "%s/summary.md", out);
	char *md = slurp(path);
	cr_expect(strstr(md, cuda_opens() ? "**Verdict: PASS**" : "**Verdict: PASS (CPU only: no GPU was qualified)**"));
	cr_expect(strstr(md, "## Conformance") && strstr(md, "## Kernel probes") &&
		  strstr(md, "## Performance") && strstr(md, "## Checkpoints"));
	cr_expect(!strstr(md, ".tmp-"), "a temporary path leaked into the report");
	free(md);
	cJSON_Delete(m);
	ctq_remove_tree(t.root);
}

Test(report, failed_steps_and_their_dependents)
{
	struct tmp t;
	tmp_make(&t);
	char plan[128], out[128], path[256];
	snprintf(plan, sizeof plan, "%s/plan.json", t.root);
	snprintf(out, sizeof out, "%s/run", t.root);
	put(plan, "{\"name\": \"broken\", \"steps\": ["
		  "{\"id\": \"probe-defect\", \"command\": \"probe\", \"args\": [\"--shapes\", \"64:64\", \"--weights\", \"random\","
		  " \"--acts\", \"gaussian\", \"--inject-defect\", \"scale-shift\"]},"
		  "{\"id\": \"bad-usage\", \"command\": \"inspect\", \"args\": [\"--no-such-option\"]},"
		  "{\"id\": \"after-defect\", \"command\": \"inspect\", \"after\": \"probe-defect\", \"args\": [\"examples/precedence.json\"]},"
		  "{\"id\": \"needs-file\", \"command\": \"inspect\", \"requires\": [\"${run}/nothing-here\"], \"args\": [\"examples/precedence.json\"]},"
		  "{\"id\": \"needs-fixture\", \"command\": \"inspect\", \"requires\": [\"fixtures/ctq-no-such-fixture\"], \"args\": [\"examples/precedence.json\"]}"
		  "]}");
	cr_expect_eq(run_plan(plan, out, "--gpu"), 1);
	cJSON *m = manifest(out);
	cr_expect_str_eq(str(step(m, "probe-defect"), "status"), "failed");
	cr_expect_str_eq(str(step(m, "bad-usage"), "status"), "error");
	cr_expect_str_eq(str(step(m, "after-defect"), "status"), "skipped");
	cr_expect_str_eq(str(step(m, "after-defect"), "reason"), "step probe-defect did not pass (failed)");
	char want[256];
	snprintf(want, sizeof want, "missing %s/nothing-here", out);
	cr_expect_str_eq(str(step(m, "needs-file"), "reason"), want);
	cr_expect_str_eq(str(step(m, "needs-fixture"), "reason"),
			 "missing fixtures/ctq-no-such-fixture (run `make fixtures`)");
	snprintf(path, sizeof path, "%s/junit.xml", out);
	char *junit = slurp(path);
	cr_expect(strstr(junit, "<failure message=\"a check failed"));
	cr_expect(strstr(junit, "<error message=\"bad usage or input (exit 2"));
	free(junit);
	snprintf(path, sizeof path, "%s/summary.md", out);
	char *md = slurp(path);
	cr_expect(strstr(md, "**Verdict: FAIL (CPU only: no GPU was qualified)**"));
	cr_expect(strstr(md, "Log of step probe-defect"));
	free(md);
	cJSON_Delete(m);
	ctq_remove_tree(t.root);
}

Test(report, bad_plans_exit_2_and_write_nothing)
{
	static const char *const bad[] = {
		"[]",
		"{\"name\": \"x\", \"steps\": []}",
		"{\"name\": \"x y\", \"steps\": [{\"id\": \"a\", \"command\": \"conform\"}]}",
		"{\"name\": \"x\", \"steps\": [{\"id\": \"a\", \"command\": \"fly\"}]}",
		"{\"name\": \"x\", \"steps\": [{\"id\": \"a\", \"command\": \"run\"}]}",
		"{\"name\": \"x\", \"steps\": [{\"id\": \"a\", \"command\": \"inspect\"}, {\"id\": \"a\", \"command\": \"inspect\"}]}",
		"{\"name\": \"x\", \"steps\": [{\"id\": \"a\", \"command\": \"inspect\", \"after\": \"b\"}, {\"id\": \"b\", \"command\": \"inspect\"}]}",
		"{\"name\": \"x\", \"steps\": [{\"id\": \"a\", \"command\": \"inspect\", \"needs\": \"tpu\"}]}",
		"{\"name\": \"x\", \"steps\": [{\"id\": \"a\", \"command\": \"inspect\", \"args\": [1]}]}",
		"{\"name\": \"x\", \"steps\": [{\"id\": \"a\", \"command\": \"inspect\", \"arg\": []}]}",
		"{\"name\": \"x\", \"steps\": [{\"id\": \"logs\", \"command\": \"inspect\"}]}",
		"{\"name\": \"x\", \"name\": \"y\", \"steps\": [{\"id\": \"a\", \"command\": \"inspect\"}]}",
		"{\"name\": \"x\", \"steps\": [{\"id\": \"a\", \"command\": \"inspect\"}], \"extra\": 1}",
		"{\"name\": \"x\", \"steps\": [{\"id\": \"a\", \"command\": \"inspect\"}",
	};
	struct tmp t;
	tmp_make(&t);
	char plan[128], out[128];
	snprintf(plan, sizeof plan, "%s/plan.json", t.root);
	snprintf(out, sizeof out, "%s/run", t.root);
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		put(plan, bad[i]);
		cr_expect_eq(run_plan(plan, out, NULL), 2, "%s", bad[i]);
		cr_expect(!ctq_path_exists(out), "%s wrote a run", bad[i]);
	}
	char missing[160];
	snprintf(missing, sizeof missing, "%s/none.json", t.root);
	cr_expect_eq(run_plan(missing, out, NULL), 2);
	ctq_remove_tree(t.root);
}

Test(report, checkpoint_provenance_matches_python_digest)
{
	struct tmp t;
	tmp_make(&t);
	char path[256];
	snprintf(path, sizeof path, "%s/config.json", t.root);
	/* The quantization_config digest is sha256(json.dumps(block,
	 * sort_keys=True)) — computed with Python 3 for this file. */
	put(path, "{\"architectures\": [\"Qwen3ForCausalLM\"], \"model_type\": \"qwen3\", \"num_hidden_layers\": 2, "
		  "\"quantization_config\": {\"quant_method\": \"compressed-tensors\", \"format\": \"int-quantized\", "
		  "\"ignore\": [\"lm_head\"], \"config_groups\": {\"group_0\": {\"targets\": [\"Linear\"], "
		  "\"weights\": {\"num_bits\": 8, \"type\": \"int\", \"symmetric\": true, \"strategy\": \"channel\", \"dynamic\": false}, "
		  "\"input_activations\": {\"num_bits\": 8, \"type\": \"int\", \"symmetric\": true, \"strategy\": \"token\", \"dynamic\": true}}}, "
		  "\"kv_cache_scheme\": null, \"version\": \"0.9.0\", \"global_compression_ratio\": 1.5, \"note\": \"caf\\u00e9\"}}");
	snprintf(path, sizeof path, "%s/model.safetensors", t.root);
	put(path, "hello tensors");
	snprintf(path, sizeof path, "%s/tokenizer.json", t.root);
	put(path, "{}");
	cJSON *o = NULL;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_env_checkpoint(t.root, "shown/path", &o, &err), CTQ_OK, "%s", err.message);
	cr_expect_str_eq(str(o, "path"), "shown/path");
	cr_expect_str_eq(str(o, "quant_method"), "compressed-tensors");
	cr_expect_str_eq(str(o, "quantization_config_sha256"),
			 "98818646d10153c055989d393afe39e56f2dee57576a449b879a02034b85d47a");
	const cJSON *files = ctq_json_get(o, "files");
	cr_assert_eq(cJSON_GetArraySize(files), 1, "only tensor files are hashed");
	const cJSON *f = cJSON_GetArrayItem(files, 0);
	cr_expect_str_eq(str(f, "name"), "model.safetensors");
	cr_expect_str_eq(str(f, "sha256"), "8a9ef160c1b90292638965b68c6b4a2489b72bd6257babc49698ab5065adbdc6");
	cJSON_Delete(o);
	snprintf(path, sizeof path, "%s/config.json", t.root);
	put(path, "{\"model_type\": \"qwen3\", \"model_type\": \"qwen2\"}");
	cr_expect_eq(ctq_env_checkpoint(t.root, NULL, &o, &err), CTQ_ERR_PARSE);
	ctq_remove_tree(t.root);
}

/* ---- rendering ---------------------------------------------------------------------- */

static bool find_chromium(char *buf, size_t cap)
{
	static const char *const names[] = {"chromium", "chromium-browser"};
	for (size_t i = 0; i < 2; i++) {
		char cmd[128];
		snprintf(cmd, sizeof cmd, "command -v %s 2>/dev/null", names[i]);
		FILE *p = popen(cmd, "r");
		if (!p)
			continue;
		bool ok = fgets(buf, (int)cap, p) != NULL;
		pclose(p);
		if (ok) {
			buf[strcspn(buf, "\n")] = '\0';
			return true;
		}
	}
	return false;
}

static long screenshot(const char *chromium, const char *html, const char *png)
{
	char cmd[3 * PATH_MAX];
	const char *abs = html; /* the tests' folders are absolute (/tmp/...) */
	unlink(png);
	snprintf(cmd, sizeof cmd,
		 "timeout 120 '%s' --headless --no-sandbox --disable-gpu --hide-scrollbars "
		 "--screenshot='%s' --window-size=1200,1600 'file://%s' >/dev/null 2>&1",
		 chromium, png, abs);
	int rc = system(cmd);
	struct stat sb;
	cr_assert(stat(png, &sb) == 0, "chromium wrote no screenshot (exit %d): %s", rc, cmd);
	return (long)sb.st_size;
}

Test(report, report_html_is_self_contained_and_renders, .timeout = 300)
{
	char chromium[512];
	if (!find_chromium(chromium, sizeof chromium)) {
		fprintf(stderr, "SKIP report::report_html_is_self_contained_and_renders: chromium is not "
				"installed (apt-get install chromium, or make deps-report)\n");
		cr_skip_test("chromium is not installed");
	}
	struct tmp t;
	tmp_make(&t);
	char plan[128], out[128], html[256], png[256], blank[256], blank_png[256];
	snprintf(plan, sizeof plan, "%s/plan.json", t.root);
	snprintf(out, sizeof out, "%s/run", t.root);
	put(plan, small_plan);
	cr_assert_eq(run_plan(plan, out, "--gpu"), 0);
	/* ctq report regenerates it in place. */
	char *argv[] = {"report", out, NULL};
	fflush(stdout);
	FILE *saved = freopen("/dev/null", "w", stdout);
	(void)saved;
	cr_assert_eq(ctq_cmd_report(2, argv), 0);
	snprintf(html, sizeof html, "%s/report.html", out);
	char *text = slurp(html);
	cr_expect(!strstr(text, "http://") && !strstr(text, "https://"), "an external resource");
	for (const char *c = strstr(text, "src=\""); c; c = strstr(c + 1, "src=\""))
		cr_expect(!strncmp(c, "src=\"data:image/png;base64,", 27), "src that is not a data URI");
	cr_expect(strstr(text, "<h2>Environment</h2>") < strstr(text, "<h2>Verdicts</h2>"));
	cr_expect(strstr(text, "<h2>Verdicts</h2>") < strstr(text, "<h2>Conformance</h2>"));
	free(text);
	/* A blank page of the same size as the control: the report's
	 * screenshot must carry far more than it (text, tables, plots). */
	snprintf(blank, sizeof blank, "%s/blank.html", t.root);
	put(blank, "<!DOCTYPE html><html><body style=\"background:#fff\"></body></html>");
	snprintf(png, sizeof png, "%s/report.png", t.root);
	snprintf(blank_png, sizeof blank_png, "%s/blank.png", t.root);
	long size = screenshot(chromium, html, png), blank_size = screenshot(chromium, blank, blank_png);
	cr_expect(size > 8 * blank_size && size > 40000,
		  "the screenshot looks blank: %ld bytes (a blank page: %ld)", size, blank_size);
	ctq_remove_tree(t.root);
}

/* ---- the default plan ---------------------------------------------------------------- */

Test(report, two_default_runs_compare_as_no_regression, .timeout = 600)
{
	struct tmp t;
	tmp_make(&t);
	char a[128], b[128], c[128];
	snprintf(a, sizeof a, "%s/a", t.root);
	snprintf(b, sizeof b, "%s/b", t.root);
	snprintf(c, sizeof c, "%s/compare", t.root);
	cr_assert_eq(run_plan("plans/default.json", a, NULL), 0);
	cr_assert_eq(run_plan("plans/default.json", b, NULL), 0);
	/* The default plan times the CPU reference while other test workers load
	 * the host (beside one, a bench serve run's TPOT went from 0.12 to 239 ms
	 * over 32 requests: a true "slower"). What this test holds fixed is the
	 * deterministic part (conformance, probes, accuracy, steps): the shipped
	 * policy (the built-in one) with timing.min_samples above any run's count
	 * keeps every timing ambiguous. */
	char policy[160];
	snprintf(policy, sizeof policy, "%s/policy.json", t.root);
	FILE *pf = fopen(policy, "w");
	cr_assert(pf, "%s", policy);
	fputs("{\"timing\": {\"min_samples\": 1000000}}", pf);
	fclose(pf);
	char *argv[] = {"compare", a, b, "--policy", policy, "--out", c, "--quiet", NULL};
	fflush(stdout);
	FILE *saved = freopen("/dev/null", "w", stdout);
	(void)saved;
	cr_expect_eq(ctq_cmd_compare(8, argv), 0);
	char path[256];
	snprintf(path, sizeof path, "%s/compare.md", c);
	char *md = slurp(path);
	cr_expect(strstr(md, "**Verdict: no regression**"), "%.600s", md);
	/* bench serve's own CSV is read and compared (latencies and errors). */
	cr_expect(strstr(md, "## Serving load") &&
		  strstr(md, "| serve-tiny-w8a8/bench_serve.csv | (all requests) | errors | 0 | 0 |"),
		  "%s", md);
	free(md);
	ctq_remove_tree(t.root);
}

/* Step 11: the verdict of a run in which no GPU step ran says so beside the
 * verdict (summary.md, report.html, junit.xml's properties); junit.xml
 * shows command lines with ${run} expanded and carries the probe rows; no
 * result file names the run's temporary folder. */
static bool file_has(const char *dir, const char *name, const char *needle)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	char *text = slurp(path);
	bool has = strstr(text, needle) != NULL;
	free(text);
	return has;
}

Test(report, cpu_only_run_says_so_and_names_only_final_paths)
{
	struct tmp t;
	tmp_make(&t);
	char plan[128], out[128];
	snprintf(plan, sizeof plan, "%s/plan.json", t.root);
	snprintf(out, sizeof out, "%s/run", t.root);
	put(plan, small_plan);
	cr_assert_eq(run_plan(plan, out, "--gpu"), 0);
	cr_expect(file_has(out, "summary.md", "**Verdict: PASS (CPU only: no GPU was qualified)**"));
	cr_expect(file_has(out, "report.html", "\">PASS (CPU only: no GPU was qualified)</div>"));
	/* not the green badge of a GPU qualification: a neutral one, and a line */
	cr_expect(file_has(out, "report.html", "<div class=\"verdict CPUONLY\">PASS (CPU only"));
	cr_expect(!file_has(out, "report.html", "<div class=\"verdict PASS\">"));
	cr_expect(file_has(out, "report.html", "<p class=\"cpu-only\">No GPU code was qualified"));
	cr_expect(file_has(out, "summary.md", "\n\nNo GPU code was qualified"));
	cr_expect(file_has(out, "junit.xml",
			   "<property name=\"verdict\" value=\"PASS (CPU only: no GPU was qualified)\"/>"));
	cr_expect(!file_has(out, "junit.xml", "${run}"));
	char want[256];
	snprintf(want, sizeof want, "--model %s/models/w8a8 ", out);
	cr_expect(file_has(out, "junit.xml", want), "junit.xml lacks %s", want);
	cr_expect(file_has(out, "junit.xml", "<testsuite name=\"probe: ctq.probe\" tests=\""));
	cr_expect(file_has(out, "junit.xml", "<testcase classname=\"probe."));
	static const char *const files[] = {"bench/bench_model.csv", "bench/manifest.json", "manifest.json",
					    "logs/bench.txt", "summary.md", "report.html", "junit.xml",
					    "conform/manifest.json", "probe/manifest.json"};
	for (size_t i = 0; i < sizeof files / sizeof *files; i++)
		cr_expect(!file_has(out, files[i], ".tmp-"), "%s names the temporary folder", files[i]);
	snprintf(want, sizeof want, "\"%s/models/w8a8\"", out);
	cr_expect(file_has(out, "bench/bench_model.csv", want), "bench_model.csv lacks %s", want);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "grep -rlI -e '.tmp-' '%s'", out);
	char line[512];
	test_command(cmd, line, sizeof line);
	cr_expect(!line[0], "%s names the temporary folder", line);
	ctq_remove_tree(t.root);
}

/* A GPU step skipped without a device gives the backend's reason once,
 * without a reason nested in parentheses in another. */
Test(report, no_gpu_reason_is_given_once)
{
	if (cuda_opens())
		cr_skip_test("a CUDA device is present here");
	struct tmp t;
	tmp_make(&t);
	char plan[128], out[128];
	snprintf(plan, sizeof plan, "%s/plan.json", t.root);
	snprintf(out, sizeof out, "%s/run", t.root);
	put(plan, small_plan);
	cr_assert_eq(run_plan(plan, out, NULL), 0);
	cJSON *m = manifest(out);
	const char *reason = str(step(m, "probe-gpu"), "reason");
	cr_expect(!strncmp(reason, "no CUDA device: ", 16), "reason: %s", reason);
	cr_expect(!strstr(reason + 1, "no CUDA device"), "said twice: %s", reason);
	cr_expect(!strstr(reason, "))"), "nested parentheses: %s", reason);
	cJSON_Delete(m);
	ctq_remove_tree(t.root);
}

/* The gnuplot of packages unpacked under DEPS_PREFIX (an offline GPU host,
 * tools/offline-deps.sh) draws the plots, finding its libraries there. */
Test(report, gnuplot_under_deps_prefix_is_used)
{
	struct tmp t;
	tmp_make(&t);
	char bin[256], path[256], seen[256];
	snprintf(bin, sizeof bin, "%s/usr/bin", t.root);
	cr_assert_eq(ctq_mkdirs(bin, NULL), CTQ_OK);
	snprintf(path, sizeof path, "%s/gnuplot-nox", bin);
	snprintf(seen, sizeof seen, "%s/seen", t.root);
	char script[600];
	snprintf(script, sizeof script, "#!/bin/sh\necho \"$LD_LIBRARY_PATH\" >'%s'\nexit 0\n", seen);
	put(path, script);
	cr_assert_eq(chmod(path, 0755), 0);
	unsetenv("CTQ_GNUPLOT");
	setenv("DEPS_PREFIX", t.root, 1);
	struct ctq_plotter p;
	ctq_plot_init(&p);
	unsetenv("DEPS_PREFIX");
	cr_expect(p.available, "%s", p.why);
	cr_expect_str_eq(p.program, path);
	char *libs = slurp(seen), want[256];
	snprintf(want, sizeof want, "%s/usr/lib/x86_64-linux-gnu", t.root);
	cr_expect(!strncmp(libs, want, strlen(want)), "LD_LIBRARY_PATH=%s", libs);
	free(libs);
	ctq_remove_tree(t.root);
}

/* The performance section labels each side by what its model is (BF16,
 * W8A8), gives the W8A8 / BF16 ratios, and draws linear bar axes with the
 * legend inside its own plot. */
Test(report, performance_labels_sides_and_gives_ratios)
{
	struct tmp t;
	tmp_make(&t);
	char plan[128], out[128];
	snprintf(plan, sizeof plan, "%s/plan.json", t.root);
	snprintf(out, sizeof out, "%s/run", t.root);
	put(plan, "{\"name\": \"perf\", \"steps\": ["
		  "{\"id\": \"make\", \"command\": \"make-model\", \"args\": [\"--arch\", \"qwen3\", \"--preset\", \"tiny\", \"--layers\", \"1\", \"--quiet\", \"${run}/models/bf16\"]},"
		  "{\"id\": \"quantize\", \"command\": \"quantize\", \"after\": \"make\", \"args\": [\"${run}/models/bf16\", \"${run}/models/w8a8\", \"--quiet\"]},"
		  "{\"id\": \"bench-bf16\", \"command\": \"bench\", \"after\": \"make\", \"args\": [\"model\", \"--model\", \"${run}/models/bf16\", \"--backend\", \"reference\","
		  " \"--input-len\", \"8\", \"--output-len\", \"4\", \"--reps\", \"3\"]},"
		  "{\"id\": \"bench-w8a8\", \"command\": \"bench\", \"after\": \"quantize\", \"args\": [\"model\", \"--model\", \"${run}/models/w8a8\", \"--backend\", \"reference\","
		  " \"--input-len\", \"8\", \"--output-len\", \"4\", \"--reps\", \"3\"]}"
		  "]}");
	cr_assert_eq(run_plan(plan, out, "--gpu"), 0);
	cr_expect(file_has(out, "summary.md", "| BF16 | reference | 1 | 8 | 4 | 3 |"));
	cr_expect(file_has(out, "summary.md", "| W8A8 | reference | 1 | 8 | 4 | 3 |"));
	cr_expect(!file_has(out, "summary.md", "reference (new)"));
	cr_expect(file_has(out, "summary.md", "### W8A8 / BF16 (ratio of medians)"));
	cr_expect(file_has(out, "summary.md", "| reference b1 in8 out4 | W8A8 / BF16 | "));
	cr_expect(file_has(out, "report.html", "W8A8 / BF16 (ratio of medians)"));
	char gp[256];
	snprintf(gp, sizeof gp, "%s/plots/perf.gp", out);
	if (ctq_path_exists(gp)) {
		cr_expect(!file_has(out, "plots/perf.gp", "logscale"));
		cr_expect(!file_has(out, "plots/perf.gp", "key tmargin"));
	}
	ctq_remove_tree(t.root);
}

/* A skipped step's command line shows ${run} and ${step} expanded, in the
 * manifest, summary.md and junit.xml. */
Test(report, skipped_step_shows_final_paths)
{
	struct tmp t;
	tmp_make(&t);
	char plan[128], out[128];
	snprintf(plan, sizeof plan, "%s/plan.json", t.root);
	snprintf(out, sizeof out, "%s/run", t.root);
	put(plan, "{\"name\": \"skip\", \"steps\": ["
		  "{\"id\": \"gpu\", \"command\": \"inspect\", \"needs\": \"gpu\", \"args\": [\"${run}/a\", \"${step}/b\"]}]}");
	cr_assert_eq(run_plan(plan, out, "--gpu"), 0);
	char want[256];
	snprintf(want, sizeof want, "%s/a %s/gpu/b", out, out);
	static const char *const files[] = {"manifest.json", "summary.md", "junit.xml"};
	for (size_t i = 0; i < 3; i++)
		cr_expect(!file_has(out, files[i], "${"), "%s shows ${run} or ${step}", files[i]);
	cr_expect(file_has(out, "summary.md", want), "summary.md lacks %s", want);
	cr_expect(file_has(out, "junit.xml", want), "junit.xml lacks %s", want);
	ctq_remove_tree(t.root);
}

/* Where needle first occurs in dir/name, or -1 (also when absent). */
static long offset_of(const char *dir, const char *name, const char *needle)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	char *text = slurp(path);
	const char *at = strstr(text, needle);
	long off = at ? (long)(at - text) : -1;
	free(text);
	return off;
}

/* Skipped steps are listed, with their reasons, in the summary at the top
 * (before the environment and the step table), not only in the table. */
Test(report, skipped_steps_are_above_the_fold)
{
	struct tmp t;
	tmp_make(&t);
	char plan[128], out[128];
	snprintf(plan, sizeof plan, "%s/plan.json", t.root);
	snprintf(out, sizeof out, "%s/run", t.root);
	put(plan, small_plan);
	cr_assert_eq(run_plan(plan, out, "--gpu"), 0);
	long skips = offset_of(out, "report.html", "<div class=\"skips\"><b>Skipped: 1 step(s)</b>");
	long item = offset_of(out, "report.html", "<li><b>probe-gpu</b>: ");
	long first_h2 = offset_of(out, "report.html", "<h2>");
	cr_expect(skips >= 0 && item > skips, "report.html: skips at %ld, probe-gpu at %ld", skips, item);
	cr_expect(first_h2 > item, "the skipped step is listed after a section heading (%ld > %ld)", item,
		  first_h2);
	long md_skips = offset_of(out, "summary.md", "**Skipped: 1 step(s)**\n\n- probe-gpu: ");
	long md_h2 = offset_of(out, "summary.md", "\n## ");
	cr_expect(md_skips >= 0 && md_h2 > md_skips, "summary.md: skips at %ld, first section at %ld",
		  md_skips, md_h2);
	ctq_remove_tree(t.root);
}

/* A plan with nothing skipped has no skipped list. */
Test(report, no_skipped_list_without_skipped_steps)
{
	struct tmp t;
	tmp_make(&t);
	char plan[128], out[128];
	snprintf(plan, sizeof plan, "%s/plan.json", t.root);
	snprintf(out, sizeof out, "%s/run", t.root);
	put(plan, "{\"name\": \"one\", \"steps\": [{\"id\": \"conform\", \"command\": \"conform\","
		  " \"args\": [\"--suite\", \"suites/precedence\"]}]}");
	cr_assert_eq(run_plan(plan, out, "--gpu"), 0);
	cr_expect(!file_has(out, "report.html", "class=\"skips\""));
	cr_expect(!file_has(out, "summary.md", "**Skipped"));
	ctq_remove_tree(t.root);
}

/* A gnuplot stand-in that writes the PNG each script names and keeps the
 * script: the plot tests read the .gp text ctq wrote, with or without a
 * real gnuplot on this host. */
static void fake_gnuplot(const struct tmp *t)
{
	char path[256];
	snprintf(path, sizeof path, "%s/gnuplot", t->root);
	put(path, "#!/bin/sh\nfor a; do case $a in *.gp) : > \"${a%.gp}.png\";; esac; done\nexit 0\n");
	cr_assert_eq(chmod(path, 0755), 0);
	setenv("CTQ_GNUPLOT", path, 1);
}

/* One command's run on the reference backend alone (ctq probe, no plan)
 * is CPU only too; and the probe plot's threshold is named in the key, not
 * by a label drawn on the threshold's own line. */
Test(report, single_reference_probe_is_cpu_only_and_threshold_is_in_the_key)
{
	struct tmp t;
	tmp_make(&t);
	fake_gnuplot(&t);
	char out[128];
	snprintf(out, sizeof out, "%s/probe", t.root);
	char *pargv[] = {"probe", "--shapes", "64:128", "--backend", "reference", "--weights", "random",
			 "--acts", "gaussian", "--out", out, NULL};
	fflush(stdout);
	FILE *saved = freopen("/dev/null", "w", stdout);
	(void)saved;
	cr_assert_eq(ctq_cmd_probe(11, pargv), 0);
	char *rargv[] = {"report", out, NULL};
	cr_assert_eq(ctq_cmd_report(2, rargv), 0);
	unsetenv("CTQ_GNUPLOT");
	cr_expect(file_has(out, "report.html", "<div class=\"verdict CPUONLY\">PASS (CPU only"));
	cr_expect(file_has(out, "report.html", "used the CPU reference backend only"));
	cr_expect(!file_has(out, "report.html", "class=\"skips\""));
	char *gp = NULL;
	char path[256];
	snprintf(path, sizeof path, "%s/plots/probe_rel_l2.gp", out);
	gp = slurp(path);
	const char *bound = strstr(gp, "0.05 with lines");
	cr_assert(bound, "no threshold line in %s", gp);
	cr_expect(strstr(bound, "title \"quantization error bound 5e-2 (gaussian)\""),
		  "the threshold line has no title in the key: %.200s", bound);
	cr_expect(!strstr(gp, "set label 1 \"quantization error bound"),
		  "a label is drawn over the threshold line:\n%s", gp);
	free(gp);
	ctq_remove_tree(t.root);
}

/* A run on a CUDA device is not CPU only, whatever else it names. */
Test(report, gpu_manifest_is_not_cpu_only)
{
	static const char *const gpu[] = {
		"{\"probe\": {\"backend\": \"cuda\"}}",
		"{\"probe\": {\"backend\": \"both\"}}",
		"{\"bench_model\": {\"device\": \"NVIDIA H200 (sm_90, 132 SMs)\"}}",
		"{\"probe\": {\"backend\": \"reference\"}, \"kernel_paths\": {\"gemm_w8a8\": [\"sm90-wgmma\"]}}",
		"{\"steps\": [{\"id\": \"g\", \"needs\": \"gpu\", \"status\": \"passed\"}]}",
		"{\"conform\": {}}",
	};
	for (size_t i = 0; i < sizeof gpu / sizeof *gpu; i++) {
		cJSON *m = cJSON_Parse(gpu[i]);
		cr_assert(m);
		cr_expect(!ctq_report_cpu_only(m), "CPU only: %s", gpu[i]);
		cJSON_Delete(m);
	}
	static const char *const cpu[] = {
		"{\"probe\": {\"backend\": \"reference\"}, \"kernel_paths\": {}}",
		"{\"bench_model\": {\"device\": \"reference (CPU)\"}}",
		"{\"steps\": [{\"id\": \"g\", \"needs\": \"gpu\", \"status\": \"skipped\"}]}",
	};
	for (size_t i = 0; i < sizeof cpu / sizeof *cpu; i++) {
		cJSON *m = cJSON_Parse(cpu[i]);
		cr_assert(m);
		cr_expect(ctq_report_cpu_only(m), "not CPU only: %s", cpu[i]);
		cJSON_Delete(m);
	}
}

/* The TTFT panel of plots/perf.gp: one stalled repetition (a 40 ms maximum
 * beside 0.3 ms medians) does not set the axis; the axis stops at
 * CTQ_PERF_TTFT_CLIP x the largest median, the clipped maximum is drawn at
 * the top, labelled with its value and counted in the caption. Without an
 * outlier the axis is autoscaled and nothing is labelled. */
static struct ctq_perf_case perf_case(const char *label, double med, double min, double max)
{
	struct ctq_perf_case c;
	memset(&c, 0, sizeof c);
	snprintf(c.label, sizeof c.label, "%s", label);
	c.ttft[0] = med, c.ttft[1] = min, c.ttft[2] = max;
	c.prefill = 1000, c.decode_ms = 1, c.decode_tps = 1000;
	return c;
}

Test(report, ttft_axis_clips_a_stalled_sample)
{
	struct ctq_perf_case pc[3] = {perf_case("a", 0.30, 0.28, 0.33), perf_case("b", 0.25, 0.24, 40.0),
				      perf_case("c", 0.31, 0.29, 0.35)};
	struct ctq_strbuf body, data;
	ctq_strbuf_init(&body);
	ctq_strbuf_init(&data);
	char caption[400];
	ctq_fam_bench_model_perf_plot(pc, 3, &body, &data, caption, sizeof caption);
	const char *gp = ctq_strbuf_str(&body);
	/* the TTFT panel (before its plot line) has a finite top near the medians */
	const char *yr = strstr(gp, "set yrange [0:");
	const char *plot = strstr(gp, "\nplot ");
	cr_assert(yr && plot && yr < plot, "%s", gp);
	double top = strtod(yr + strlen("set yrange [0:"), NULL);
	cr_expect(top >= 0.31 && top <= 0.31 * CTQ_PERF_TTFT_CLIP + 1e-9, "y top %g:\n%s", top, gp);
	cr_expect(strstr(gp, "set label 2 \"max 40 ms (clipped)\" at 1, "), "no label for case b:\n%s", gp);
	cr_expect(!strstr(gp, "set label 1 ") && !strstr(gp, "set label 3 "), "%s", gp);
	cr_expect(strstr(caption, "1 case(s) with a maximum above it"), "%s", caption);
	/* the bar of case b is drawn to the top, the true maximum kept beside it */
	char want[128];
	snprintf(want, sizeof want, "\"b\" 0.25 0.24 40 1000 1 1000 %.9g\n", top);
	cr_expect(strstr(ctq_strbuf_str(&data), want), "no row %s in:\n%s", want, ctq_strbuf_str(&data));
	ctq_strbuf_free(&body);
	ctq_strbuf_free(&data);

	pc[1] = perf_case("b", 0.25, 0.24, 0.5);
	ctq_strbuf_init(&body);
	ctq_strbuf_init(&data);
	ctq_fam_bench_model_perf_plot(pc, 3, &body, &data, caption, sizeof caption);
	gp = ctq_strbuf_str(&body);
	yr = strstr(gp, "set yrange [0:");
	cr_expect(yr && !strncmp(yr, "set yrange [0:*]", 16) && yr < strstr(gp, "\nplot "), "%s", gp);
	cr_expect(!strstr(gp, "(clipped)") && !strstr(caption, "clipped"), "%s\n%s", gp, caption);
	ctq_strbuf_free(&body);
	ctq_strbuf_free(&data);
}

static void gate_words(char *buf, size_t cap, const cJSON *gate, const char *verdict, bool ok)
{
	(void)gate;
	snprintf(buf, cap, "Gate: %s%s.", verdict, ok ? "" : ": FAILED");
}

/* A gate that fails where the plan's step expects it to ("expect": "fail")
 * is said so and does not count against the report; the same gate in a
 * step without the expectation does. */
Test(report, an_expected_gate_failure_is_said_and_not_counted)
{
	struct tmp t;
	tmp_make(&t);
	char path[256];
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof path, "%s/%s", t.root, i ? "plain" : "teeth");
		cr_assert_eq(mkdir(path, 0755), 0);
		snprintf(path, sizeof path, "%s/%s/manifest.json", t.root, i ? "plain" : "teeth");
		put(path, "{\"eval_kld\": {\"verdict\": \"inferior\"}}");
	}
	struct ctq_rep r = {.dir = t.root};
	r.m = cJSON_Parse("{\"steps\": [{\"id\": \"teeth\", \"expect\": \"fail\"}, {\"id\": \"plain\"}]}");
	cr_assert(r.m);
	ctq_strbuf_init(&r.md);
	ctq_strbuf_init(&r.html);
	ctq_rep_gate(&r, "teeth", "eval_kld", gate_words);
	cr_expect_eq(r.gates, 1);
	cr_expect_eq(r.gates_failed, 0);
	cr_expect(strstr(r.md.data, "Gate: inferior: FAILED, as the plan's step teeth expects (\"expect\": \"fail\")."),
		  "%s", r.md.data);
	ctq_rep_gate(&r, "plain", "eval_kld", gate_words);
	cr_expect_eq(r.gates, 2);
	cr_expect_eq(r.gates_failed, 1);
	cr_expect(strstr(r.md.data, "Gate: inferior: FAILED.\n"), "%s", r.md.data);
	ctq_strbuf_free(&r.md);
	ctq_strbuf_free(&r.html);
	cJSON_Delete(r.m);
	ctq_remove_tree(t.root);
}
