/* Fuzz target: the result CSV loaders of compare and report. The first
 * byte picks the family (conform.csv, probe.csv, bench_model.csv,
 * bench_gemm.csv, eval_questions.csv, bench_serve.csv); the rest is the
 * CSV. It is parsed from memory (ctq_table_parse), then written as that
 * family's file into two run folders that are compared
 * (ctq_compare_runs, what `ctq compare` does) and reported on
 * (ctq_report_write, what `ctq report` does; plots off) and, for
 * bench_gemm.csv, read by ctq_gemm_rows_load. */
#include "tests/fuzz/fuzz.h"

#include "bench/gemm.h"
#include "reports/compare.h"
#include "families/registry.h"
#include "reports/report.h"
#include "results/files.h"
#include "results/table.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* No gnuplot process per input: the report says plots are off. */
	setenv("CTQ_GNUPLOT", "none", 1);
	return 0;
}

static void run_dir(const char *name, const char *file, const uint8_t *csv, size_t n,
		    char *dir, size_t cap)
{
	struct ctq_error err = {0};
	snprintf(dir, cap, "%s", ctq_fuzz_path(name));
	ctq_remove_tree(dir);
	if (ctq_mkdirs(dir, &err)) {
		fprintf(stderr, "ctq fuzz: %s: %s\n", dir, err.message);
		abort();
	}
	char path[1024];
	snprintf(path, sizeof path, "%s/%s", dir, file);
	ctq_fuzz_write(path, csv, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > CTQ_FUZZ_MAX_BYTES || size < 1)
		return -1;
	enum ctq_family fam = (enum ctq_family)(data[0] % CTQ_FAM_COUNT);
	const uint8_t *csv = data + 1;
	size_t n = size - 1;

	struct ctq_table t;
	struct ctq_error err = {0};
	memset(&t, 0, sizeof t);
	if (!ctq_table_parse(&t, (const char *)csv, n, "fuzz.csv", &err)) {
		for (size_t c = 0; c < t.n_cols; c++)
			if (ctq_table_col(&t, t.header[c]) < 0)
				abort(); /* a header cell must be found by its own name */
		for (size_t r = 0; r < t.n_rows; r++)
			for (size_t c = 0; c < t.n_cols; c++)
				(void)ctq_table_num(&t, r, (int)c);
	}
	ctq_table_free(&t);

	char base[512], cand[512];
	run_dir("base", ctq_family_file(fam), csv, n, base, sizeof base);
	run_dir("new", ctq_family_file(fam), csv, n, cand, sizeof cand);

	struct ctq_compare_policy pol;
	struct ctq_comparison cmp;
	struct ctq_error cerr = {0};
	ctq_compare_policy_default(&pol);
	memset(&cmp, 0, sizeof cmp);
	(void)ctq_compare_runs(&cmp, base, cand, &pol, &cerr);
	ctq_comparison_free(&cmp);

	if (fam == CTQ_FAM_BENCH_GEMM) {
		char path[1024];
		struct ctq_gemm_row *rows = NULL;
		size_t n_rows = 0;
		struct ctq_error gerr = {0};
		snprintf(path, sizeof path, "%s/%s", base, ctq_family_file(fam));
		if (!ctq_gemm_rows_load(path, &rows, &n_rows, &gerr))
			ctq_gemm_rows_speedup(rows, n_rows);
		free(rows);
	}

	struct ctq_report_summary sum;
	struct ctq_error rerr = {0};
	memset(&sum, 0, sizeof sum);
	(void)ctq_report_write(cand, NULL, &sum, &rerr);
	return 0;
}
