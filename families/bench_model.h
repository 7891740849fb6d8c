/* The model timing family: bench_model.csv, one row per timed repetition
 * of ctq bench model (harness/cmd_bench_model.c writes it). Compared by
 * (role when both files have it, backend, batch, input_tokens,
 * output_tokens): the repetitions of ttft_ms and decode_ms_per_step through
 * the one-run timing verdict. Trend: their medians. Report: TTFT, prefill
 * and decode throughput, ratios and plots. */
#ifndef CTQ_FAMILIES_BENCH_MODEL_H
#define CTQ_FAMILIES_BENCH_MODEL_H

#include <stddef.h>

#include "families/family.h"

/* bench_model.csv's columns, in order. */
#define CTQ_BENCH_MODEL_CSV_COLUMNS                                                              \
	"role", "model", "backend", "batch", "input_tokens", "output_tokens", "rep", "ttft_ms",   \
	"prefill_tokens_per_s", "decode_ms_per_step", "decode_tokens_per_s", "tpot_p50_ms",      \
	"tpot_p99_ms", "weight_bytes", "kv_bytes_per_token", "device_resident_bytes",            \
	"device_peak_bytes", "output_digest"
/* output_digest: 64-bit FNV-1a (hex) of the greedy token ids the run
 * generated, every sequence at every step: the same prompts (same seed and
 * rep) give the same digest on every kernel path that is bit-exact, so two
 * runs under different CTQ_ARCH agree or show which did not. */

enum ctq_status ctq_fam_bench_model_compare(struct ctq_cmp_pair *x, struct ctq_error *err);
enum ctq_status ctq_fam_bench_model_trend(struct ctq_trend *t, size_t run, const struct ctq_table *tb,
					  const char *path, const char *file, struct ctq_error *err);

/* One timing case of the report: a (file, role, backend, batch, input,
 * output) group of repetitions, its medians and TTFT extremes. */
struct ctq_perf_case {
	char label[400];
	char kind[32];    /* what the model is: "W8A8", "BF16", ... (model_kind) */
	char key[200];    /* backend, batch, input, output: pairs the two sides */
	char series_ttft[200], series_tps[200]; /* role/backend and the fixed other axis */
	double batch, input;
	double ttft[3];   /* ms: median, min, max */
	double prefill, decode_ms, decode_tps; /* medians */
};

/* Appends the section of file f to r and its timing cases to r->perf
 * (r->n_perf of r->cap_perf, grown; free()d with the report), which
 * ctq_fam_bench_model_report_end tabulates and plots once every file is in
 * (nothing without a case). */
enum ctq_status ctq_fam_bench_model_report(struct ctq_rep *r, const struct ctq_result_file *f);
enum ctq_status ctq_fam_bench_model_report_end(struct ctq_rep *r);

/* The TTFT axis stops at this many times the largest TTFT median when some
 * case's maximum lies above that (one stalled repetition must not hide the
 * medians); the clipped maxima are labelled and counted in the caption. */
#define CTQ_PERF_TTFT_CLIP 3.0

/* The perf plot (plots/perf.gp, perf.dat) of cases pc[0..n): appends the
 * gnuplot body to body and the data to data, and writes the caption into
 * caption (cap bytes), which says when and where the TTFT axis is clipped. */
void ctq_fam_bench_model_perf_plot(const struct ctq_perf_case *pc, size_t n, struct ctq_strbuf *body,
				   struct ctq_strbuf *data, char *caption, size_t cap);

#endif
