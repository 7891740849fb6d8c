/* The GEMM throughput family: bench_gemm.csv, one row per (shape, M,
 * implementation) of ctq bench gemm (bench/gemm.c writes it), and the
 * per-call times beside it in bench_gemm_samples.csv. Compared by (shape,
 * K, N, M, impl): the per-call samples through the one-run timing verdict;
 * a ctq implementation whose check is not pass on the new side is a
 * regression. Trend: the medians. Report: targets per shape, TOPS against
 * M. */
#ifndef CTQ_FAMILIES_BENCH_GEMM_H
#define CTQ_FAMILIES_BENCH_GEMM_H

#include <stddef.h>

#include "families/family.h"

/* bench_gemm.csv's columns, in order (bench/gemm.h: ctq_gemm_csv_header). */
#define CTQ_BENCH_GEMM_CSV_COLUMNS                                                               \
	"shape", "K", "N", "M", "impl", "check", "samples", "copies", "calls_per_sample",        \
	"time_us_median", "time_us_min", "time_cv", "ops", "tops", "peak_tops", "pct_int8_peak", \
	"bytes", "gbps", "hbm_gbps", "pct_hbm", "weight_bytes", "pct_hbm_weights",               \
	"speedup_vs_bf16", "note"
/* bench_gemm_samples.csv's columns, in order: one row per timed call. */
#define CTQ_BENCH_GEMM_SAMPLES_CSV_COLUMNS "shape", "K", "N", "M", "impl", "sample", "time_us"

enum ctq_status ctq_fam_bench_gemm_compare(struct ctq_cmp_pair *x, struct ctq_error *err);
enum ctq_status ctq_fam_bench_gemm_trend(struct ctq_trend *t, size_t run, const struct ctq_table *tb,
					 const char *path, const char *file, struct ctq_error *err);

/* Appends the section of result file f to r (errors: io-error,
 * parse-error, out-of-memory, in r->err). */
enum ctq_status ctq_fam_bench_gemm_report(struct ctq_rep *r, const struct ctq_result_file *f);

#endif
