/* The serving load family: bench_serve.csv, one row per request of ctq
 * bench serve, in process (harness/cmd_bench_serve.c) or against a server
 * (--url, harness/cmd_bench_serve_url.c; the manifest's bench_serve.engine
 * says which: "in-process" or "http", absent in runs before it). The error
 * column (added with --url; older files lack it and still read) holds why
 * a request was not served. An HTTP run and an in-process one compare on
 * the workload (requests, concurrency, lengths, arrivals) alone, without
 * the in-process engine's own settings. Compared by role when
 * both files have one, else the whole file: ttft_ms, tpot_ms and
 * latency_ms through the one-run timing verdict (serving.max_cv), a request
 * not served on the new side a regression. Trend: the latency medians and
 * the errors. Report: the load and its latencies. */
#ifndef CTQ_FAMILIES_BENCH_SERVE_H
#define CTQ_FAMILIES_BENCH_SERVE_H

#include <stddef.h>

#include "families/family.h"

/* bench_serve.csv's columns, in order. */
#define CTQ_BENCH_SERVE_CSV_COLUMNS                                                              \
	"request", "input_tokens", "output_tokens", "arrival_s", "queue_ms", "ttft_ms",          \
	"latency_ms", "tpot_ms", "status", "tokens", "error"

struct ctq_csv;

/* One request's bench_serve.csv row, as every engine (bench/serve.c,
 * bench/serve_http.c) writes it; a NAN time (ms) is an empty field, the
 * request having not reached it. */
struct ctq_bench_serve_row {
	long request, input_len;
	long long output_tokens;
	double arrival_s, queue_ms, ttft_ms, latency_ms, tpot_ms;
	const char *status, *tokens, *reason; /* borrowed */
};
void ctq_fam_bench_serve_csv_row(struct ctq_csv *w, const struct ctq_bench_serve_row *r);

enum ctq_status ctq_fam_bench_serve_compare(struct ctq_cmp_pair *x, struct ctq_error *err);
enum ctq_status ctq_fam_bench_serve_trend(struct ctq_trend *t, size_t run, const struct ctq_table *tb,
					  const char *path, const char *file, struct ctq_error *err);

/* Appends the section of result file f to r (errors: io-error,
 * parse-error, out-of-memory, in r->err). */
enum ctq_status ctq_fam_bench_serve_report(struct ctq_rep *r, const struct ctq_result_file *f);

#endif
