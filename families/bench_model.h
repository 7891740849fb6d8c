/* The model timing family: bench_model.csv, one row per timed repetition
 * of ctq bench model (bench/model.c writes it through
 * ctq_fam_bench_model_csv_row; harness/cmd_bench_model.c the gains beside
 * it, through ctq_fam_bench_model_gains_csv_row). Compared by
 * (role when both files have it, backend, batch, input_tokens,
 * output_tokens): the repetitions of ttft_ms and decode_ms_per_step through
 * the one-run timing verdict. Trend: their medians. Report: TTFT, prefill
 * and decode throughput, ratios and plots. */
#ifndef CTQ_FAMILIES_BENCH_MODEL_H
#define CTQ_FAMILIES_BENCH_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* bench_model_gains.csv's columns, in order: with --ref-model, one row per
 * (batch, input) case, the reference's medians against the candidate's. */
#define CTQ_BENCH_MODEL_GAINS_CSV_COLUMNS                                                        \
	"batch", "input_tokens", "output_tokens", "ttft_ref_ms", "ttft_new_ms", "ttft_reduction", \
	"prefill_ref_tokens_per_s", "prefill_new_tokens_per_s", "prefill_gain",                  \
	"decode_ref_tokens_per_s", "decode_new_tokens_per_s", "decode_gain"

struct ctq_csv;

/* One row of bench_model.csv: one timed repetition (bench/model.c measures
 * it). Times in seconds (written in ms); the decode figures are NaN with
 * one output token. */
struct ctq_bench_model_row {
	const char *role, *model, *backend; /* borrowed */
	long batch, input_tokens, output_tokens, rep;
	double ttft_s, prefill_tps;
	double decode_mean_s, decode_tps, tpot_p50_s, tpot_p99_s;
	uint64_t weight_bytes, kv_bytes_per_token;
	bool has_device_bytes; /* the backend reports memory: else both are empty cells */
	uint64_t device_resident_bytes, device_peak_bytes;
	uint64_t output_digest;
};
void ctq_fam_bench_model_csv_row(struct ctq_csv *w, const struct ctq_bench_model_row *r);

/* One row of bench_model_gains.csv: the medians of one case on both sides
 * and the ratios the command computed from them. */
struct ctq_bench_model_gain_row {
	long batch, input_tokens, output_tokens;
	double ttft_ref_ms, ttft_new_ms, ttft_reduction;
	double prefill_ref_tps, prefill_new_tps, prefill_gain;
	double decode_ref_tps, decode_new_tps, decode_gain;
};
void ctq_fam_bench_model_gains_csv_row(struct ctq_csv *w, const struct ctq_bench_model_gain_row *r);

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
