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

/* Appends the section of file f to r and its timing cases to *pc (*n of
 * *cap, grown; owned by the caller, free()d), which
 * ctq_fam_bench_model_report_end tabulates and plots once every file is in. */
struct ctq_perf_case;
enum ctq_status ctq_fam_bench_model_report(struct ctq_rep *r, const struct ctq_result_file *f,
					   struct ctq_perf_case **pc, size_t *n, size_t *cap);
void ctq_fam_bench_model_report_end(struct ctq_rep *r, const struct ctq_perf_case *pc, size_t n);

#endif
