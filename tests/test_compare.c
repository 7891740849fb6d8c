/* Criterion tests for `ctq compare` end to end on run directories written
 * here (reports/compare.h, harness/cmd_compare.c):
 *   - planted regressions, each alone, exit 1 and name the observation: a
 *     slower timing series, flipped answers, a newly failing conformance
 *     check, a probe rel-L2 jump, a newly non-finite probe, a failed step;
 *   - noise-only differences (same distributions, other seeds; symmetric
 *     answer flips; rel-L2 within the factor) exit 0;
 *   - improvements, ambiguous timings, file pairing, bad input (exit 2);
 *   - the CSV reader (reports/table.h) and --trend over three runs. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/rng.h"
#include "harness/commands.h"
#include "reports/compare.h"
#include "reports/table.h"

struct dirs {
	char root[64], base[96], cand[96], out[96];
};

static void make_dirs(struct dirs *d)
{
	snprintf(d->root, sizeof d->root, "/tmp/ctq-compare-XXXXXX");
	cr_assert(mkdtemp(d->root));
	snprintf(d->base, sizeof d->base, "%s/base", d->root);
	snprintf(d->cand, sizeof d->cand, "%s/new", d->root);
	snprintf(d->out, sizeof d->out, "%s/out", d->root);
}

static void put(const char *dir, const char *rel, const char *text)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", dir, rel);
	char *slash = strrchr(path, '/');
	*slash = '\0';
	cr_assert_eq(ctq_mkdirs(path, NULL), CTQ_OK);
	*slash = '/';
	FILE *f = fopen(path, "w");
	cr_assert(f, "%s", path);
	fputs(text, f);
	fclose(f);
}

/* Runs `ctq compare BASE NEW --out OUT [--quiet]` with stdout to /dev/null. */
static int compare(const struct dirs *d)
{
	char *argv[] = {"compare", (char *)d->base, (char *)d->cand, "--out", (char *)d->out, "--quiet",
			NULL};
	fflush(stdout);
	FILE *saved = freopen("/dev/null", "w", stdout);
	(void)saved;
	int rc = ctq_cmd_compare(6, argv);
	fflush(stdout);
	return rc;
}

/* Reads OUT/compare.csv and returns the row whose key and metric match (or
 * the first row with verdict when key is NULL), as "verdict|regression". */
static void find_row(const struct dirs *d, const char *key, const char *metric, char *out, size_t cap)
{
	char path[256];
	snprintf(path, sizeof path, "%s/compare.csv", d->out);
	struct ctq_table t;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_table_load(&t, path, &err), CTQ_OK, "%s", err.message);
	int ck = ctq_table_col(&t, "key"), cm = ctq_table_col(&t, "metric");
	int cv = ctq_table_col(&t, "verdict"), cr = ctq_table_col(&t, "regression");
	out[0] = '\0';
	for (size_t i = 0; i < t.n_rows; i++)
		if (!strcmp(ctq_table_get(&t, i, ck), key) && strstr(ctq_table_get(&t, i, cm), metric)) {
			snprintf(out, cap, "%s|%s", ctq_table_get(&t, i, cv), ctq_table_get(&t, i, cr));
			break;
		}
	ctq_table_free(&t);
}

/* The NEW value of the row (key, metric) of compare.csv; NaN when absent. */
static double find_new(const struct dirs *d, const char *key, const char *metric)
{
	char path[256];
	snprintf(path, sizeof path, "%s/compare.csv", d->out);
	struct ctq_table t;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_table_load(&t, path, &err), CTQ_OK, "%s", err.message);
	int ck = ctq_table_col(&t, "key"), cm = ctq_table_col(&t, "metric"), cn = ctq_table_col(&t, "new");
	double v = NAN;
	for (size_t i = 0; i < t.n_rows; i++)
		if (!strcmp(ctq_table_get(&t, i, ck), key) && !strcmp(ctq_table_get(&t, i, cm), metric)) {
			v = strtod(ctq_table_get(&t, i, cn), NULL);
			break;
		}
	ctq_table_free(&t);
	return v;
}

/* ---- writers of the four result families ---------------------------------------- */

static void bench_csv(const char *dir, const char *rel, double ttft, double sd, int reps, uint64_t seed)
{
	char *buf = malloc(65536);
	cr_assert(buf);
	size_t n = (size_t)sprintf(buf, "backend,batch,input_tokens,output_tokens,rep,ttft_ms,"
					"prefill_tokens_per_s,decode_ms_per_step,decode_tokens_per_s,"
					"tpot_p50_ms,tpot_p99_ms,weight_bytes\n");
	struct ctq_rng r;
	ctq_rng_seed(&r, seed);
	for (int i = 0; i < reps; i++) {
		double t = ttft + sd * ctq_rng_normal(&r), dm = 1.0 + 0.01 * ctq_rng_normal(&r);
		n += (size_t)sprintf(buf + n, "cuda,1,128,32,%d,%.6f,%.3f,%.6f,%.3f,%.6f,%.6f,1000\n", i, t,
				     128 / t * 1e3, dm, 1e3 / dm, dm, dm);
	}
	put(dir, rel, buf);
	free(buf);
}

/* A bench model --ref-model file: the ref and new roles, reps rows each. */
static void bench_csv_roles(const char *dir, const char *rel, double ttft_ref, double ttft_new,
			    int reps, uint64_t seed)
{
	char *buf = malloc(65536);
	cr_assert(buf);
	size_t n = (size_t)sprintf(buf, "role,backend,batch,input_tokens,output_tokens,rep,ttft_ms,"
					"decode_ms_per_step\n");
	struct ctq_rng r;
	ctq_rng_seed(&r, seed);
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < reps; i++)
			n += (size_t)sprintf(buf + n, "%s,cuda,1,128,32,%d,%.6f,%.6f\n", k ? "new" : "ref", i,
					     (k ? ttft_new : ttft_ref) + 0.2 * ctq_rng_normal(&r),
					     1.0 + 0.01 * ctq_rng_normal(&r));
	put(dir, rel, buf);
	free(buf);
}

static void conform_csv(const char *dir, const char *rel, int failing_case)
{
	char buf[8192];
	size_t n = (size_t)sprintf(buf, "case_id,file,semantics,check,expected,actual,outcome,detail\n");
	for (int i = 0; i < 20; i++)
		n += (size_t)sprintf(buf + n, "precedence/case-%d,suites/p/%d.json,strict,\"model.layers.0.mlp.down_proj, scheme\",w8a8-int8,%s,%s,%s\n",
				     i, i, i == failing_case ? "w4a16" : "w8a8-int8",
				     i == failing_case ? "fail" : "pass",
				     i == failing_case ? "regex outranked the exact name" : "");
	put(dir, rel, buf);
}

/* kernel rel-L2 of row `jump_row` becomes jump; nan in row nan_row. */
static void probe_csv(const char *dir, const char *rel, int jump_row, double jump, int nan_row,
		      double quant_scale)
{
	static const char *const acts[] = {"gaussian", "outliers", "zero-rows", "bf16-limit"};
	char buf[16384];
	size_t n = (size_t)sprintf(buf, "layer,K,N,M,weights,acts,backend,nan_count,inf_count,"
					"nonfinite_mismatch,all_zero,max_abs_err,max_at_m,max_at_n,"
					"ref_at_max,got_at_max,kernel_rel_l2,quant_rel_l2,outcome,reason\n");
	for (int i = 0; i < 16; i++) {
		bool limit = i % 4 == 3; /* bf16-limit: quant rel-L2 not judged */
		char quant[32];
		snprintf(quant, sizeof quant, limit ? "nan" : "%.6g", 0.01 * quant_scale * (1 + i % 3));
		n += (size_t)sprintf(buf + n, "layer%d,64,128,64,random,%s,cuda,%d,%d,0,false,0,0,0,0,0,%.17g,%s,pass,\n",
				     i / 4, acts[i % 4], i == nan_row ? 3 : 0, limit ? 100 : 0,
				     i == jump_row ? jump : 0.0, quant);
	}
	put(dir, rel, buf);
}

/* n questions; base right with probability 0.6; the candidate flips
 * r2w right answers to wrong and w2r wrong answers to right. */
static void eval_pair(const struct dirs *d, int n, int r2w, int w2r)
{
	char *b = malloc((size_t)n * 128 + 256), *c = malloc((size_t)n * 128 + 256);
	cr_assert(b && c);
	/* The answer is always A: a right answer chose A, a wrong one B. */
	const char *h = "benchmark,protocol,split,subject,category,id,correct,ref_correct,chosen\n";
	size_t nb = (size_t)sprintf(b, "%s", h), nc = (size_t)sprintf(c, "%s", h);
	struct ctq_rng r;
	ctq_rng_seed(&r, 42);
	int flipped_r2w = 0, flipped_w2r = 0;
	for (int i = 0; i < n; i++) {
		bool ok = ctq_rng_uniform(&r) < 0.6, okn = ok;
		if (ok && flipped_r2w < r2w)
			okn = false, flipped_r2w++;
		else if (!ok && flipped_w2r < w2r)
			okn = true, flipped_w2r++;
		const char *subj = i % 2 ? "anatomy" : "law";
		nb += (size_t)sprintf(b + nb, "mmlu,mmlu-hendrycks,test,%s,other,%d,%s,,%s\n", subj, i,
				      ok ? "true" : "false", ok ? "A" : "B");
		nc += (size_t)sprintf(c + nc, "mmlu,mmlu-hendrycks,test,%s,other,%d,%s,,%s\n", subj, i,
				      okn ? "true" : "false", okn ? "A" : "B");
	}
	put(d->base, "eval/eval_questions.csv", b);
	put(d->cand, "eval/eval_questions.csv", c);
	free(b);
	free(c);
}

TestSuite(compare);

/* ---- planted regressions ----------------------------------------------------------- */

Test(compare, slower_timing_series_regresses)
{
	struct dirs d;
	make_dirs(&d);
	bench_csv(d.base, "bench/bench_model.csv", 10.0, 0.2, 10, 1);
	bench_csv(d.cand, "bench/bench_model.csv", 12.0, 0.2, 10, 2);
	cr_expect_eq(compare(&d), 1);
	char v[64];
	find_row(&d, "cuda, 1, 128, 32", "ttft_ms", v, sizeof v);
	cr_expect_str_eq(v, "slower|true");
	find_row(&d, "cuda, 1, 128, 32", "decode_ms_per_step", v, sizeof v);
	cr_expect_str_eq(v, "same|false");
	ctq_remove_tree(d.root);
}

Test(compare, flipped_answers_regress)
{
	struct dirs d;
	make_dirs(&d);
	eval_pair(&d, 300, 30, 2);
	cr_expect_eq(compare(&d), 1);
	char v[64];
	find_row(&d, "(all questions)", "accuracy", v, sizeof v);
	cr_expect_str_eq(v, "regression|true");
	/* 32 of 300 answers changed letter: agreement 268/300, reported, not gated. */
	find_row(&d, "(all questions)", "answer agreement", v, sizeof v);
	cr_expect_str_eq(v, "changed|false");
	cr_expect_float_eq(find_new(&d, "(all questions)", "answer agreement"), 268.0 / 300.0, 1e-9);
	ctq_remove_tree(d.root);
}

/* Both roles of a --ref-model file pair by role: the W8A8 side slowing
 * down is a regression of that role alone (ref 6 ms, new 10 -> 12 ms). */
Test(compare, roles_of_one_bench_file_pair_separately)
{
	struct dirs d;
	make_dirs(&d);
	bench_csv_roles(d.base, "bench/bench_model.csv", 6.0, 10.0, 10, 1);
	bench_csv_roles(d.cand, "bench/bench_model.csv", 6.0, 12.0, 10, 2);
	cr_expect_eq(compare(&d), 1);
	char v[64];
	find_row(&d, "new, cuda, 1, 128, 32", "ttft_ms", v, sizeof v);
	cr_expect_str_eq(v, "slower|true");
	find_row(&d, "ref, cuda, 1, 128, 32", "ttft_ms", v, sizeof v);
	cr_expect_str_eq(v, "same|false");
	ctq_remove_tree(d.root);
}

Test(compare, newly_failing_case_regresses)
{
	struct dirs d;
	make_dirs(&d);
	conform_csv(d.base, "conform/conform.csv", -1);
	conform_csv(d.cand, "conform/conform.csv", 7);
	cr_expect_eq(compare(&d), 1);
	char v[64];
	find_row(&d, "precedence/case-7, strict, model.layers.0.mlp.down_proj, scheme", "outcome pass -> fail",
		 v, sizeof v);
	cr_expect_str_eq(v, "regression|true");
	ctq_remove_tree(d.root);
}

Test(compare, probe_rel_l2_jump_regresses)
{
	struct dirs d;
	make_dirs(&d);
	probe_csv(d.base, "probe/probe.csv", -1, 0, -1, 1.0);
	probe_csv(d.cand, "probe/probe.csv", 5, 0.02, -1, 1.0);
	cr_expect_eq(compare(&d), 1);
	char v[64];
	find_row(&d, "layer1, 64, 128, 64, random, outliers, cuda", "kernel_rel_l2", v, sizeof v);
	cr_expect_str_eq(v, "regression|true");
	ctq_remove_tree(d.root);
}

Test(compare, quantization_error_growth_regresses)
{
	struct dirs d;
	make_dirs(&d);
	probe_csv(d.base, "probe/probe.csv", -1, 0, -1, 1.0);
	probe_csv(d.cand, "probe/probe.csv", -1, 0, -1, 2.0);
	cr_expect_eq(compare(&d), 1);
	char v[64];
	find_row(&d, "layer0, 64, 128, 64, random, gaussian, cuda", "quant_rel_l2", v, sizeof v);
	cr_expect_str_eq(v, "regression|true");
	ctq_remove_tree(d.root);
}

Test(compare, newly_non_finite_probe_regresses)
{
	struct dirs d;
	make_dirs(&d);
	probe_csv(d.base, "probe/probe.csv", -1, 0, -1, 1.0);
	probe_csv(d.cand, "probe/probe.csv", -1, 0, 2, 1.0);
	cr_expect_eq(compare(&d), 1);
	char v[64];
	find_row(&d, "layer0, 64, 128, 64, random, zero-rows, cuda", "nan+inf", v, sizeof v);
	cr_expect_str_eq(v, "regression|true");
	ctq_remove_tree(d.root);
}

Test(compare, failed_plan_step_regresses)
{
	struct dirs d;
	make_dirs(&d);
	conform_csv(d.base, "conform/conform.csv", -1);
	conform_csv(d.cand, "conform/conform.csv", -1);
	put(d.base, "manifest.json", "{\"steps\": [{\"id\": \"bench\", \"status\": \"passed\"}, {\"id\": \"gpu\", \"status\": \"passed\"}]}");
	put(d.cand, "manifest.json", "{\"steps\": [{\"id\": \"bench\", \"status\": \"error\", \"reason\": \"exit 2\"}, {\"id\": \"gpu\", \"status\": \"skipped\"}]}");
	cr_expect_eq(compare(&d), 1);
	char v[64];
	find_row(&d, "bench", "status passed -> error", v, sizeof v);
	cr_expect_str_eq(v, "regression|true");
	find_row(&d, "gpu", "status passed -> skipped", v, sizeof v);
	cr_expect_str_eq(v, "changed|false");
	ctq_remove_tree(d.root);
}

/* ---- noise only --------------------------------------------------------------------- */

Test(compare, noise_only_differences_do_not_regress)
{
	for (uint64_t seed = 0; seed < 10; seed++) {
		struct dirs d;
		make_dirs(&d);
		bench_csv(d.base, "bench/bench_model.csv", 10.0, 0.2, 10, 100 + seed);
		bench_csv(d.cand, "bench/bench_model.csv", 10.0, 0.2, 10, 200 + seed);
		conform_csv(d.base, "conform/conform.csv", 3);
		conform_csv(d.cand, "conform/conform.csv", 3);
		probe_csv(d.base, "probe/probe.csv", 5, 1e-5, -1, 1.0);
		probe_csv(d.cand, "probe/probe.csv", 5, 5e-5, -1, 1.2);
		eval_pair(&d, 300, 6, 6);
		cr_expect_eq(compare(&d), 0, "seed %llu", (unsigned long long)seed);
		char v[64];
		find_row(&d, "cuda, 1, 128, 32", "ttft_ms", v, sizeof v);
		cr_expect_str_eq(v, "same|false", "seed %llu", (unsigned long long)seed);
		find_row(&d, "(all questions)", "accuracy", v, sizeof v);
		cr_expect_str_eq(v, "same|false");
		ctq_remove_tree(d.root);
	}
}

Test(compare, faster_and_ambiguous_are_not_regressions)
{
	struct dirs d;
	make_dirs(&d);
	bench_csv(d.base, "a/bench_model.csv", 10.0, 0.2, 10, 1);
	bench_csv(d.cand, "a/bench_model.csv", 8.0, 0.2, 10, 2);
	bench_csv(d.base, "b/bench_model.csv", 10.0, 0.2, 3, 3);
	bench_csv(d.cand, "b/bench_model.csv", 14.0, 0.2, 3, 4);
	bench_csv(d.base, "c/bench_model.csv", 10.0, 0.2, 2, 5);
	bench_csv(d.cand, "c/bench_model.csv", 20.0, 0.2, 2, 6);
	cr_expect_eq(compare(&d), 0);
	char path[256];
	snprintf(path, sizeof path, "%s/compare.csv", d.out);
	struct ctq_table t;
	cr_assert_eq(ctq_table_load(&t, path, NULL), CTQ_OK);
	int cf = ctq_table_col(&t, "file"), cm = ctq_table_col(&t, "metric"), cv = ctq_table_col(&t, "verdict");
	static const struct {
		const char *file, *verdict;
	} want[] = {{"a/bench_model.csv", "faster"}, {"b/bench_model.csv", "ambiguous"},
		    {"c/bench_model.csv", "ambiguous"}};
	for (size_t k = 0; k < 3; k++) {
		bool found = false;
		for (size_t i = 0; i < t.n_rows; i++)
			if (!strcmp(ctq_table_get(&t, i, cf), want[k].file) &&
			    !strcmp(ctq_table_get(&t, i, cm), "ttft_ms")) {
				cr_expect_str_eq(ctq_table_get(&t, i, cv), want[k].verdict, "%s", want[k].file);
				found = true;
			}
		cr_expect(found, "%s", want[k].file);
	}
	ctq_table_free(&t);
	ctq_remove_tree(d.root);
}

/* ---- pairing and bad input -------------------------------------------------------------- */

Test(compare, single_files_pair_whatever_their_path)
{
	struct dirs d;
	make_dirs(&d);
	conform_csv(d.base, "conform.csv", -1);
	conform_csv(d.cand, "step-conform/conform.csv", 2);
	cr_expect_eq(compare(&d), 1);
	char v[64];
	find_row(&d, "precedence/case-2, strict, model.layers.0.mlp.down_proj, scheme", "outcome", v, sizeof v);
	cr_expect_str_eq(v, "regression|true");
	ctq_remove_tree(d.root);
}

Test(compare, bad_input_exits_2)
{
	struct dirs d;
	make_dirs(&d);
	cr_assert_eq(ctq_mkdirs(d.base, NULL), CTQ_OK);
	cr_assert_eq(ctq_mkdirs(d.cand, NULL), CTQ_OK);
	cr_expect_eq(compare(&d), 2, "nothing to compare");
	put(d.base, "conform.csv", "case_id,outcome\nx,pass\n");
	put(d.cand, "conform.csv", "case_id,outcome\nx,pass\n");
	cr_expect_eq(compare(&d), 2, "no semantics/check columns");
	put(d.base, "conform.csv", "case_id,semantics,check,outcome,detail\n\"x,pass\n");
	cr_expect_eq(compare(&d), 2, "unterminated quote");
	char *argv[] = {"compare", d.base, "/nonexistent/run", NULL};
	cr_expect_eq(ctq_cmd_compare(3, argv), 2);
	char *one[] = {"compare", d.base, NULL};
	cr_expect_eq(ctq_cmd_compare(2, one), 2);
	ctq_remove_tree(d.root);
}

Test(compare, table_reader_quoting_and_errors)
{
	struct ctq_table t;
	struct ctq_error err = {0};
	const char *ok = "a,b,c\n1,\"x, \"\"y\"\"\nz\",3\n\n4,5,6\n";
	cr_assert_eq(ctq_table_parse(&t, ok, strlen(ok), "t.csv", &err), CTQ_OK, "%s", err.message);
	cr_expect_eq(t.n_rows, 2);
	cr_expect_str_eq(ctq_table_get(&t, 0, 1), "x, \"y\"\nz");
	cr_expect_eq(ctq_table_num(&t, 1, ctq_table_col(&t, "c")), 6);
	cr_expect(isnan(ctq_table_num(&t, 0, 1)));
	cr_expect_str_eq(ctq_table_get(&t, 0, -1), "");
	ctq_table_free(&t);
	const char *ragged = "a,b\n1,2\n3\n";
	cr_expect_eq(ctq_table_parse(&t, ragged, strlen(ragged), "r.csv", &err), CTQ_ERR_PARSE);
	cr_expect_str_eq(err.path, "r.csv:3");
	ctq_error_clear(&err);
	cr_expect_eq(ctq_table_parse(&t, "", 0, "e.csv", &err), CTQ_ERR_PARSE);
}

Test(compare, trend_over_three_runs)
{
	char root[64] = "/tmp/ctq-trend-XXXXXX", runs[3][96], out[96];
	cr_assert(mkdtemp(root));
	for (int i = 0; i < 3; i++) {
		snprintf(runs[i], sizeof runs[i], "%s/run%d", root, i);
		bench_csv(runs[i], "bench/bench_model.csv", 10.0 + i, 0.1, 5, (uint64_t)i);
		conform_csv(runs[i], "conform/conform.csv", i == 2 ? 4 : -1);
	}
	snprintf(out, sizeof out, "%s/trend", root);
	char *argv[] = {"compare", runs[0], runs[1], runs[2], "--trend", "--out", out, NULL};
	fflush(stdout);
	FILE *saved = freopen("/dev/null", "w", stdout);
	(void)saved;
	cr_expect_eq(ctq_cmd_compare(7, argv), 0);
	char path[160];
	snprintf(path, sizeof path, "%s/trend.csv", out);
	struct ctq_table t;
	cr_assert_eq(ctq_table_load(&t, path, NULL), CTQ_OK);
	int cm = ctq_table_col(&t, "metric"), cr = ctq_table_col(&t, "run"), cv = ctq_table_col(&t, "value");
	double failed[3] = {-1, -1, -1};
	for (size_t i = 0; i < t.n_rows; i++)
		if (!strcmp(ctq_table_get(&t, i, cm), "failed checks"))
			failed[(int)ctq_table_num(&t, i, cr) - 1] = ctq_table_num(&t, i, cv);
	cr_expect(failed[0] == 0 && failed[1] == 0 && failed[2] == 1, "%g %g %g", failed[0], failed[1],
		  failed[2]);
	ctq_table_free(&t);
	snprintf(path, sizeof path, "%s/trend.md", out);
	cr_expect(ctq_path_exists(path));
	ctq_remove_tree(root);
}
