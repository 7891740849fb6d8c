/* Criterion tests for `ctq bench model` on the CPU reference
 * (harness/cmd_bench_model.c): the run directory it writes (one CSV row per
 * timed run, gains with --ref-model), the tensor-parallel topology in the
 * manifest with --tp, and the refusals (ranks that do not divide the heads,
 * a bad --tp). Timings are not checked: they belong to benchmarks. */
#include <criterion/criterion.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/json.h"
#include "harness/commands.h"
#include "quant/quantize.h"
#include "quant/synth.h"
#include "reports/table.h"

static void one_thread(void)
{
	omp_set_num_threads(1);
}

TestSuite(bench_model, .init = one_thread);

struct fixture {
	char dir[64], bf16[96], w8a8[96], out[96];
};

static void make_models(struct fixture *f)
{
	snprintf(f->dir, sizeof f->dir, "/tmp/ctq-bench-XXXXXX");
	cr_assert(mkdtemp(f->dir));
	snprintf(f->bf16, sizeof f->bf16, "%s/bf16", f->dir);
	snprintf(f->w8a8, sizeof f->w8a8, "%s/w8a8", f->dir);
	snprintf(f->out, sizeof f->out, "%s/run", f->dir);
	struct ctq_synth_spec s;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_synth_spec_init(&s, "qwen3", "tiny", &err), CTQ_OK, "%s", err.message);
	s.seed = 3;
	cr_assert_eq(ctq_synth_write(&s, f->bf16, 0, NULL, NULL, &err), CTQ_OK, "%s", err.message);
	struct ctq_quantize_result res;
	memset(&res, 0, sizeof res);
	cr_assert_eq(ctq_quantize_checkpoint(f->bf16, f->w8a8, NULL, &res, &err), CTQ_OK, "%s",
		     err.message);
	ctq_quantize_result_free(&res);
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
