/* Criterion regression tests for inputs the fuzz targets (tests/fuzz/)
 * found; each reproducer also lies in tests/fuzz/regress/<target>/ and is
 * replayed by `make fuzz` under clang's sanitizers. These tests check the
 * statuses; undefined behaviour they reach (a float-to-integer cast out of
 * range) is only reported by the clang build of `make fuzz`, since GCC's
 * -fsanitize=undefined (make SAN=1) leaves float-cast-overflow out. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fileio.h"
#include "families/bench_gemm.h"
#include "families/eval_kld.h"

/* A bench_gemm.csv of the header and one row: column bad_col holds bad,
 * the others shape qkv_proj, impl ctq_w8a8, check pass and "1". */
static void write_gemm_csv(const char *path, int bad_col, const char *bad)
{
	FILE *f = fopen(path, "w");
	cr_assert(f);
	for (size_t k = 0; k < ctq_gemm_csv_cols; k++)
		fprintf(f, "%s%s", k ? "," : "", ctq_gemm_csv_header[k]);
	fputs("\r\n", f);
	for (size_t k = 0; k < ctq_gemm_csv_cols; k++) {
		const char *v = (int)k == bad_col ? bad : k == 0 ? "qkv_proj" : k == 4 ? "ctq_w8a8"
						      : k == 5 ? "pass" : "1";
		fprintf(f, "%s%s", k ? "," : "", v);
	}
	fputs("\r\n", f);
	cr_assert_eq(fclose(f), 0);
}

/* fuzz_csv, tests/fuzz/regress/csv/bench-gemm-nan-k-cast: a K, N or M that
 * is not a number is rejected (parse-error naming the column) but was still
 * cast to int64_t: NaN or 1e300 to an integer is undefined behaviour. (The
 * same cast of samples / copies / calls_per_sample past INT_MAX, which are
 * not rejected at all, is tests/fuzz/regress/csv/bench-gemm-huge-samples-cast.) */
Test(fuzz_regress, gemm_rows_bad_integers)
{
	static const struct { const char *id; int col; const char *cell; } cases[] = {
		{"K-not-a-number", 1, "61M"},
		{"N-nan", 2, "nan"},
		{"M-huge", 3, "1e300"},
		{"M-zero", 3, "0"},
	};
	char dir[] = "/tmp/ctq-fuzz-regress-XXXXXX";
	cr_assert(mkdtemp(dir));
	char path[64];
	snprintf(path, sizeof path, "%s/bench_gemm.csv", dir);
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		write_gemm_csv(path, cases[i].col, cases[i].cell);
		struct ctq_gemm_row *rows = NULL;
		size_t n = 0;
		struct ctq_error err = {0};
		enum ctq_status st = ctq_gemm_rows_load(path, &rows, &n, &err);
		free(rows);
		cr_expect_eq(st, CTQ_ERR_PARSE, "[%s] status %s (%s)", cases[i].id,
			     ctq_status_name(st), err.message);
		cr_expect(strstr(err.message, ctq_gemm_csv_header[cases[i].col]) != NULL,
			  "[%s] message does not name %s: %s", cases[i].id,
			  ctq_gemm_csv_header[cases[i].col], err.message);
	}
	ctq_remove_tree(dir);
}

/* fuzz_eval_kld, tests/fuzz/regress/eval_kld/window-huge-cast: a window,
 * start or token count of 1e300 passed the reader's "not negative" check
 * and was cast to size_t, which is undefined behaviour (UBSan at the cast);
 * the reader now refuses a count above 9e15 as "expected a count". */
Test(fuzz_regress, eval_kld_huge_counts)
{
	static const char *const header = "source,window,start_token,tokens,kl_sum_nats,kl_median_nats,"
					  "kl_max_nats,top1_agree,nll_ref_sum_nats,nll_new_sum_nats";
	static const struct { const char *id, *row; } cases[] = {
		{"window-1e300", "a,1e300,0,1,0,0,0,1,0,0"},
		{"start-1e300", "a,0,1e300,1,0,0,0,1,0,0"},
		{"tokens-1e300", "a,0,0,1e300,0,0,0,1,0,0"},
		{"top1-1e300", "a,0,0,1,0,0,0,1e300,0,0"},
	};
	char dir[] = "/tmp/ctq-fuzz-regress-XXXXXX";
	cr_assert(mkdtemp(dir));
	char path[64];
	snprintf(path, sizeof path, "%s/eval_kld.csv", dir);
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		FILE *f = fopen(path, "w");
		cr_assert(f);
		fprintf(f, "%s\r\n%s\r\n", header, cases[i].row);
		cr_assert_eq(fclose(f), 0);
		struct ctq_kld_windows w = {0};
		struct ctq_error err = {0};
		enum ctq_status st = ctq_fam_eval_kld_read_windows(&w, path, &err);
		ctq_fam_eval_kld_windows_free(&w);
		cr_expect_eq(st, CTQ_ERR_PARSE, "[%s] status %s (%s)", cases[i].id, ctq_status_name(st),
			     err.message);
	}
	ctq_remove_tree(dir);
}
