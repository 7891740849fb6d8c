/* Criterion tests for `ctq bench model` and `ctq bench serve` on the CPU
 * reference (bench/model.c, bench/serve.c and model/engine.c behind their
 * thin commands in harness/): the run directory each writes (one CSV row per
 * timed run, gains with --ref-model;
 * one row per request), the tensor-parallel topology in the manifest with
 * --tp, continuous batching that leaves every request's greedy tokens as
 * generated alone, and the refusals. Timings are not checked: they belong
 * to benchmarks. */
#include <criterion/criterion.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/json.h"
#include "core/rng.h"
#include "harness/commands.h"
#include "model/runner.h"
#include "backend/backend.h"
#include "checkpoint/quantize.h"
#include "checkpoint/synth.h"
#include "reports/report.h"
#include "results/table.h"
#include "tests/greedy.h"
#include "tests/model_fixture.h"

static void one_thread(void)
{
	omp_set_num_threads(1);
}

TestSuite(bench_model, .init = one_thread);

static void make_models(struct fixture *f)
{
	fixture_make(f, "bench", 0, 3);
}

static int run_cmd(const char *const *args)
{
	char *argv[64];
	int argc = 0;
	for (; args[argc]; argc++)
		argv[argc] = (char *)args[argc];
	argv[argc] = NULL;
	fflush(stdout);
	return ctq_cmd_bench(argc, argv);
}

static size_t csv_rows(const char *run, const char *file, const char *col, const char *want)
{
	char path[200];
	snprintf(path, sizeof path, "%s/%s", run, file);
	struct ctq_table t;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_table_load(&t, path, &err), CTQ_OK, "%s", err.message);
	size_t n = 0;
	int c = col ? ctq_table_col(&t, col) : -1;
	cr_assert(!col || c >= 0, "%s has no column %s", path, col);
	for (size_t i = 0; i < t.n_rows; i++)
		n += !col || !strcmp(ctq_table_get(&t, i, c), want);
	ctq_table_free(&t);
	return n;
}

static double manifest_num(const char *run, const char *obj, const char *key)
{
	char path[200];
	snprintf(path, sizeof path, "%s/manifest.json", run);
	cJSON *root = NULL;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_json_load_file(path, 1 << 20, NULL, &root, &err), CTQ_OK, "%s", err.message);
	const cJSON *v = ctq_json_get(ctq_json_get(root, obj), key);
	cr_assert(cJSON_IsNumber(v), "%s: no number at %s.%s", path, obj, key);
	double d = v->valuedouble;
	cJSON_Delete(root);
	return d;
}

/* Column `name` of a CSV in dir, the first n rows. */
static void csv_column(const char *dir, const char *file, const char *name, char (*out)[24], size_t n)
{
	char path[300];
	snprintf(path, sizeof path, "%s/%s", dir, file);
	struct ctq_table t;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_table_load(&t, path, &err), CTQ_OK, "%s", err.message);
	int c = ctq_table_col(&t, name);
	cr_assert(c >= 0 && t.n_rows >= n, "%s: no column %s or too few rows", path, name);
	for (size_t i = 0; i < n; i++)
		snprintf(out[i], 24, "%s", ctq_table_get(&t, i, c));
	ctq_table_free(&t);
}

Test(bench_model, rows_gains_and_tp_topology)
{
	struct fixture f;
	make_models(&f);
	const char *one[] = {"bench", "model", "--model", f.w8a8, "--ref-model", f.bf16, "--backend",
			     "reference", "--batch", "1,2", "--input-len", "8", "--output-len", "3",
			     "--reps", "2", "--warmup", "0", "--out", f.out, NULL};
	cr_assert_eq(run_cmd(one), 0);
	/* 2 roles x 2 batches x 1 length x 2 reps. */
	cr_expect_eq(csv_rows(f.out, "bench_model.csv", NULL, NULL), 8);
	cr_expect_eq(csv_rows(f.out, "bench_model.csv", "role", "ref"), 4);
	cr_expect_eq(csv_rows(f.out, "bench_model_gains.csv", NULL, NULL), 2);
	cr_expect_eq(manifest_num(f.out, "bench_model", "tp"), 1);
	/* The report keys cases by role (2 roles x 2 batches) and, with gnuplot,
	 * draws decode throughput against batch. */
	unsetenv("CTQ_GNUPLOT");
	struct ctq_report_summary sum;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_report_write(f.out, NULL, &sum, &err), CTQ_OK, "%s", err.message);
	char path[200], *text = NULL;
	size_t n = 0;
	snprintf(path, sizeof path, "%s/summary.md", f.out);
	cr_assert_eq(ctq_file_read(path, 1 << 22, &text, &n, &err), CTQ_OK, "%s", err.message);
	cr_expect(strstr(text, "| reference (ref) | 2 |") && strstr(text, "| reference (new) | 2 |"),
		  "one table row per role");
	free(text);
	/* output_digest: the generated tokens' FNV-1a, 16 hex digits, the same
	 * when the same run is repeated (what two kernel paths are held to) */
	char digests[8][24];
	csv_column(f.out, "bench_model.csv", "output_digest", digests, 8);
	for (int i = 0; i < 8; i++)
		cr_expect(strlen(digests[i]) == 16 && strspn(digests[i], "0123456789abcdef") == 16, "%s", digests[i]);
	char again[200];
	snprintf(again, sizeof again, "%s-again", f.out);
	const char *rerun[] = {"bench", "model", "--model", f.w8a8, "--ref-model", f.bf16, "--backend",
			       "reference", "--batch", "1,2", "--input-len", "8", "--output-len", "3",
			       "--reps", "2", "--warmup", "0", "--out", again, NULL};
	cr_assert_eq(run_cmd(rerun), 0);
	char d2[8][24];
	csv_column(again, "bench_model.csv", "output_digest", d2, 8);
	for (int i = 0; i < 8; i++)
		cr_expect_str_eq(d2[i], digests[i], "row %d", i);
	ctq_remove_tree(again);
	snprintf(path, sizeof path, "%s/plots/perf_scaling.png", f.out);
	if (sum.plot_note[0])
		fprintf(stderr, "[WARN] no plots (%s): perf_scaling.png not checked\n", sum.plot_note); /* not cr_log_warn: it makes Criterion exit 1 */
	else
		cr_expect(ctq_path_exists(path), "%s", path);
	ctq_remove_tree(f.out);

	const char *two[] = {"bench", "model", "--model", f.w8a8, "--backend", "reference", "--tp", "2",
			     "--batch", "2", "--input-len", "8", "--output-len", "3", "--reps", "1",
			     "--out", f.out, NULL};
	cr_assert_eq(run_cmd(two), 0);
	cr_expect_eq(csv_rows(f.out, "bench_model.csv", "role", "new"), 1);
	cr_expect_eq(manifest_num(f.out, "bench_model", "tp"), 2);
	ctq_remove_tree(f.out);

	/* The tiny model has 4 attention heads: 3 ranks cannot share them. */
	const char *three[] = {"bench", "model", "--model", f.w8a8, "--backend", "reference", "--tp", "3",
			       "--out", f.out, NULL};
	cr_expect_eq(run_cmd(three), 2);
	cr_expect(!ctq_path_exists(f.out), "a refused run leaves no run directory");
	const char *nine[] = {"bench", "model", "--model", f.w8a8, "--backend", "reference", "--tp", "9",
			      NULL};
	cr_expect_eq(run_cmd(nine), 2);
	ctq_remove_tree(f.dir);
}

/* ---- bench serve ---------------------------------------------------------------- */

/* The tokens column of bench_serve.csv, row i. */
static void serve_tokens(const char *run, size_t i, char *out, size_t cap)
{
	char path[200];
	snprintf(path, sizeof path, "%s/bench_serve.csv", run);
	struct ctq_table t;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_table_load(&t, path, &err), CTQ_OK, "%s", err.message);
	int c = ctq_table_col(&t, "tokens");
	cr_assert(c >= 0 && i < t.n_rows);
	snprintf(out, cap, "%s", ctq_table_get(&t, i, c));
	ctq_table_free(&t);
}

/* Continuous batching with chunked prompts (7 tokens per call over 3 slots,
 * decode and prefill mixed in one call) and Poisson arrivals must produce,
 * for every request, the greedy tokens of that prompt generated alone. The
 * prompts are rebuilt here from the seed as the command draws them. */
Test(bench_model, serve_tokens_do_not_depend_on_scheduling)
{
	struct fixture f;
	make_models(&f);
	enum { N_REQ = 6, IN = 16, OUT = 8 };
	const char *mixed[] = {"bench", "serve", "--model", f.w8a8, "--backend", "reference",
			       "--requests", "6", "--concurrency", "4", "--max-batch", "3", "--max-tokens",
			       "7", "--input-len", "16", "--output-len", "8", "--seed", "5", "--out", f.out,
			       NULL};
	cr_assert_eq(run_cmd(mixed), 0);
	cr_expect_eq(csv_rows(f.out, "bench_serve.csv", "status", "ok"), N_REQ);
	cr_expect_eq(manifest_num(f.out, "bench_serve", "errors"), 0);
	cr_expect_eq(manifest_num(f.out, "bench_serve", "completed"), N_REQ);

	struct ctq_backend b;
	struct ctq_runner r;
	struct ctq_error err = {0};
	memset(&r, 0, sizeof r);
	cr_assert_eq(ctq_backend_open(&b, "reference", &err), CTQ_OK, "%s", err.message);
	struct ctq_runner_options opt = {.max_slots = 1, .max_len = IN + OUT, .max_tokens = IN};
	cr_assert_eq(ctq_runner_load(&r, &b, f.w8a8, &opt, &err), CTQ_OK, "%s", err.message);
	struct ctq_rng rng;
	ctq_rng_seed(&rng, 5);
	size_t distinct = 0;
	char first_seen[32] = "";
	for (int i = 0; i < N_REQ; i++) {
		int32_t prompt[IN];
		for (int t = 0; t < IN; t++)
			prompt[t] = (int32_t)ctq_rng_below(&rng, (uint64_t)r.cfg.vocab);
		int32_t *gen = NULL;
		int64_t n_gen = 0;
		test_greedy(&r, prompt, IN, OUT, true, &gen, &n_gen);
		cr_assert_eq(n_gen, OUT);
		char want[512], got[512];
		size_t len = 0;
		for (int t = 0; t < OUT; t++)
			len += (size_t)snprintf(want + len, sizeof want - len, t ? " %d" : "%d", gen[t]);
		free(gen);
		serve_tokens(f.out, (size_t)i, got, sizeof got);
		cr_expect_str_eq(got, want, "request %d", i);
		if (strcmp(first_seen, want))
			distinct++;
		snprintf(first_seen, sizeof first_seen, "%s", want);
	}
	cr_expect_gt(distinct, 1, "the prompts lead to different continuations");
	ctq_runner_free(&r);
	ctq_backend_close(&b);
	/* ctq report shows the serving section and passes with 0 errors. */
	setenv("CTQ_GNUPLOT", "none", 1);
	struct ctq_report_summary sum;
	cr_assert_eq(ctq_report_write(f.out, NULL, &sum, &err), CTQ_OK, "%s", err.message);
	/* the reference backend only: a pass, but not a GPU qualification */
	cr_expect_str_eq(sum.verdict, "PASS (CPU only: no GPU was qualified)");
	char path[200], *text = NULL;
	size_t n = 0;
	snprintf(path, sizeof path, "%s/summary.md", f.out);
	cr_assert_eq(ctq_file_read(path, 1 << 22, &text, &n, &err), CTQ_OK, "%s", err.message);
	cr_expect(strstr(text, "## Serving load"));
	cr_expect(strstr(text, "6 served, 0 failed"));
	cr_expect(strstr(text, "| command | ctq bench serve --model"));
	free(text);
	ctq_remove_tree(f.out);

	/* Poisson arrivals: the same tokens, and every request served. */
	char out2[128];
	snprintf(out2, sizeof out2, "%s/poisson", f.dir);
	const char *poisson[] = {"bench", "serve", "--model", f.w8a8, "--backend", "reference",
				 "--requests", "6", "--concurrency", "2", "--input-len", "16",
				 "--output-len", "8", "--seed", "5", "--arrival", "poisson:2000",
				 "--out", out2, NULL};
	cr_assert_eq(run_cmd(poisson), 0);
	cr_expect_eq(csv_rows(out2, "bench_serve.csv", "status", "ok"), N_REQ);

	ctq_remove_tree(out2);

	/* --tp 2 (two in-process ranks) on the BF16 model serves the same tokens
	 * as one rank: only the summation order of the row-parallel sums differs. */
	const char *bf1[] = {"bench", "serve", "--model", f.bf16, "--backend", "reference", "--requests",
			     "6", "--concurrency", "3", "--input-len", "16", "--output-len", "8", "--seed",
			     "5", "--out", f.out, NULL};
	const char *bf2[] = {"bench", "serve", "--model", f.bf16, "--backend", "reference", "--requests",
			     "6", "--concurrency", "3", "--input-len", "16", "--output-len", "8", "--seed",
			     "5", "--tp", "2", "--out", out2, NULL};
	cr_assert_eq(run_cmd(bf1), 0);
	cr_assert_eq(run_cmd(bf2), 0);
	cr_expect_eq(manifest_num(out2, "bench_serve", "tp"), 2);
	for (size_t i = 0; i < N_REQ; i++) {
		char a[512], b2[512];
		serve_tokens(f.out, i, a, sizeof a);
		serve_tokens(out2, i, b2, sizeof b2);
		cr_expect_str_eq(b2, a, "request %zu at tp 2", i);
	}

	/* Refusals: a cache too short for a request, a bad arrival. */
	const char *short_cache[] = {"bench", "serve", "--model", f.w8a8, "--backend", "reference",
				     "--input-len", "16", "--output-len", "8", "--cache-len", "20", NULL};
	cr_expect_eq(run_cmd(short_cache), 2);
	const char *bad_arrival[] = {"bench", "serve", "--model", f.w8a8, "--arrival", "poisson:0", NULL};
	cr_expect_eq(run_cmd(bad_arrival), 2);
	ctq_remove_tree(f.dir);
}
