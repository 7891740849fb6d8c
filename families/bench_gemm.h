/* The GEMM throughput family: bench_gemm.csv, one row per (shape, M,
 * implementation) of ctq bench gemm (bench/gemm.c writes it through
 * ctq_gemm_csv_row), and the per-call times beside it in
 * bench_gemm_samples.csv. The family owns what a row is: the stable
 * implementation names, the row type, its columns, writer and reader, the
 * performance targets of the W8A8 kernels over a set of rows, and the
 * per-shape TOPS plot, and the table of kernel paths side by side.
 * Compared by (shape, K, N, M, impl): the per-call
 * samples through the one-run timing verdict; a ctq implementation whose
 * check is not pass on the new side is a regression. Trend: the medians.
 * Report: targets per shape, TOPS against M.
 *
 * What it is not: the driver that measures the rows (bench/gemm.h uses
 * this header, never the reverse). */
#ifndef CTQ_FAMILIES_BENCH_GEMM_H
#define CTQ_FAMILIES_BENCH_GEMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "core/strbuf.h"
#include "families/family.h"
#include "kernels/gemm_timing.h"
#include "results/csv_out.h"

/* bench_gemm.csv's columns, in order (ctq_gemm_csv_header). */
#define CTQ_BENCH_GEMM_CSV_COLUMNS                                                               \
	"shape", "K", "N", "M", "impl", "check", "samples", "copies", "calls_per_sample",        \
	"time_us_median", "time_us_min", "time_cv", "ops", "tops", "peak_tops", "pct_int8_peak", \
	"bytes", "gbps", "hbm_gbps", "pct_hbm", "weight_bytes", "pct_hbm_weights",               \
	"speedup_vs_bf16", "note", "kernel_path"
/* The first 24 columns every bench_gemm.csv has; kernel_path came later
 * (files without it read as "" there). */
#define CTQ_BENCH_GEMM_CSV_REQUIRED 24
/* bench_gemm_samples.csv's columns, in order: one row per timed call. */
#define CTQ_BENCH_GEMM_SAMPLES_CSV_COLUMNS "shape", "K", "N", "M", "impl", "sample", "time_us"
#define CTQ_GEMM_SAMPLES_FILE "bench_gemm_samples.csv"

/* ---- rows -------------------------------------------------------------------- */

/* "ctq_w8a8", "ctq_gemm", "ctq_quantize", "cublas_bf16", "cublaslt_i8". */
const char *ctq_gemm_impl_name(enum ctq_gemm_impl i);
/* false when s names none. "ctq_gemm@PATH" (ctq_gemm on one kernel path
 * forced, ctq bench gemm --paths; PATH one of backend/paths.h's W8A8 GEMM
 * paths) parses as ctq_gemm. */
bool ctq_gemm_impl_parse(const char *s, enum ctq_gemm_impl *out);
/* ctq_w8a8, ctq_gemm, ctq_quantize: held to the bit-exact check. */
bool ctq_gemm_impl_is_ctq(enum ctq_gemm_impl i);

/* One row of bench_gemm.csv. NaN (an empty cell) where a value does not
 * apply or was not measured. */
struct ctq_gemm_row {
	char shape[64];
	int64_t K, N, M;
	enum ctq_gemm_impl impl;
	char check[8]; /* "pass", "fail" or "-" (not checked) */
	int samples, copies, calls;
	double time_us_median, time_us_min, time_cv;
	double ops, tops, peak_tops, pct_int8_peak;
	double bytes, gbps, hbm_gbps, pct_hbm;
	double weight_bytes, pct_hbm_weights;
	double speedup_vs_bf16;
	char note[256];
	/* The impl column's text where it is not ctq_gemm_impl_name(impl): a
	 * kernel plug-in's name (its rows go to bench_gemm_plugin.csv), or
	 * "ctq_gemm@PATH" for a forced kernel path (forced). */
	char impl_label[32];
	/* The W8A8 GEMM path the ctq_gemm / ctq_w8a8 row ran ("sm90-wgmma",
	 * "sm80-mma", "gemv", "dp4a"; backend/paths.h); "" for the others. */
	char kernel_path[16];
	bool forced; /* the path was forced (--paths): not dispatch's choice; such
		      * rows stay out of the targets and the ctq_gemm series */
};

extern const char *const ctq_gemm_csv_header[];
extern const size_t ctq_gemm_csv_cols;
void ctq_gemm_csv_row(struct ctq_csv *w, const struct ctq_gemm_row *r);
/* One bench_gemm_samples.csv row: sample k of row r, time_us per call. */
void ctq_fam_bench_gemm_samples_csv_row(struct ctq_csv *w, const struct ctq_gemm_row *r, int k,
					double time_us);
/* Reads a bench_gemm.csv. Errors: io-error, parse-error (a missing column,
 * an unknown impl, a bad number), out-of-memory. *rows owned (free()). */
enum ctq_status ctq_gemm_rows_load(const char *path, struct ctq_gemm_row **rows, size_t *n,
				   struct ctq_error *err);

/* Whether rows[i] is the first of rows [0, i] with its shape. */
bool ctq_gemm_row_first_of_shape(const struct ctq_gemm_row *rows, size_t i);
/* The distinct shapes of rows [0, n) in first-seen order into shapes (room
 * for n; the strings are the rows'). Returns their count. */
size_t ctq_gemm_shapes(const struct ctq_gemm_row *rows, size_t n, const char **shapes);

/* The TOPS-against-M plot of one shape: gnuplot body (reading "NAME.dat")
 * and data for results/plot.h, one line per GEMM implementation and the
 * INT8 peak as a dashed line when known. Returns the number of lines with
 * points (0: nothing to draw). */
size_t ctq_gemm_plot(const struct ctq_gemm_row *rows, size_t n, const char *shape,
		     const char *name, double peak_tops, struct ctq_strbuf *body,
		     struct ctq_strbuf *data);
/* "gemm_<shape>" with characters outside [A-Za-z0-9_-] replaced by '_'. */
void ctq_gemm_plot_name(char *buf, size_t cap, const char *shape);

/* ---- targets --------------------------------------------------------------- */

/* Targets (issue "Step 7"): */
#define CTQ_GEMM_T_SPEEDUP 1.7     /* ctq_gemm / cublas_bf16 speed at M >= 1024 */
#define CTQ_GEMM_T_PEAK_PCT 65.0   /* ctq_gemm % of INT8 dense peak at M >= 1024 */
#define CTQ_GEMM_T_WEIGHTS_PCT 60.0 /* ctq_gemm int8-weight bytes, % of HBM, at M <= 16 */
#define CTQ_GEMM_T_JUMP 1.10       /* time over the neighbours' trend, at most */
#define CTQ_GEMM_T_QUANT_PCT 75.0  /* ctq_quantize % of HBM at M = 8192 */
#define CTQ_GEMM_T_QUANT_US 3.0    /* ctq_quantize time at M <= 128, below */

enum ctq_gemm_target_id {
	CTQ_GEMM_TGT_SPEEDUP,   /* M >= 1024: ctq_gemm >= 1.7x cublas_bf16 */
	CTQ_GEMM_TGT_PEAK,      /* M >= 1024: ctq_gemm >= 65% of INT8 peak */
	CTQ_GEMM_TGT_WEIGHTS,   /* M <= 16: ctq_gemm int8 weights at >= 60% of HBM */
	CTQ_GEMM_TGT_JUMP,      /* no ctq_gemm / ctq_w8a8 time > 10% above its neighbours' trend */
	CTQ_GEMM_TGT_QUANT_BW,  /* ctq_quantize >= 75% of HBM at M = 8192 */
	CTQ_GEMM_TGT_QUANT_LAT, /* ctq_quantize < 3 us at M <= 128 */
	CTQ_GEMM_TGT_COUNT
};

enum ctq_gemm_verdict { CTQ_GEMM_PASS, CTQ_GEMM_MISS, CTQ_GEMM_UNMEASURED };

struct ctq_gemm_target {
	enum ctq_gemm_target_id id;
	char shape[64];
	enum ctq_gemm_verdict verdict;
	char detail[256]; /* the worst point, or why unmeasured */
};

/* "pass", "miss", "not measured". */
const char *ctq_gemm_verdict_name(enum ctq_gemm_verdict v);
/* One line saying what the target demands. */
const char *ctq_gemm_target_text(enum ctq_gemm_target_id id);

/* Each target for each shape in rows (first-seen order): CTQ_GEMM_TGT_COUNT
 * × shapes entries into *out (owned, free()). Rows without a median (failed
 * check, unsupported) do not count. The neighbours' trend of a point is the
 * straight line in log M / log time through the points either side of it;
 * the first and last M have none. Errors: out-of-memory. */
enum ctq_status ctq_gemm_targets(const struct ctq_gemm_row *rows, size_t n,
				 struct ctq_gemm_target **out, size_t *n_out,
				 struct ctq_error *err);
/* Over every shape: miss when any shape misses, pass when some passes and
 * none misses, else not measured. */
enum ctq_gemm_verdict ctq_gemm_target_overall(const struct ctq_gemm_target *t, size_t n,
					      enum ctq_gemm_target_id id, const char **worst_detail,
					      const char **worst_shape);

/* ---- comparison, trend, report section --------------------------------------- */

enum ctq_status ctq_fam_bench_gemm_compare(struct ctq_cmp_pair *x, struct ctq_error *err);
enum ctq_status ctq_fam_bench_gemm_trend(struct ctq_trend *t, size_t run, const struct ctq_table *tb,
					 const char *path, const char *file, struct ctq_error *err);

/* Appends the section of result file f to r (errors: io-error,
 * parse-error, out-of-memory, in r->err). */
enum ctq_status ctq_fam_bench_gemm_report(struct ctq_rep *r, const struct ctq_result_file *f);

#endif
