/* ctq run report: summary.md and a self-contained report.html (plots
 * embedded as base64 PNG data URIs, inline CSS, no external resources) for
 * a run directory, laid out as a hardware qualification report:
 * verdict and environment first, then the table of step outcomes, then one
 * section per check family found in the run — conformance (pass/fail per
 * suite folder, the failing checks), kernel probes (worst kernel and
 * quantization rel-L2, NaN/Inf, rel-L2 per layer), accuracy (per subject,
 * candidate vs reference with paired deltas), performance (TTFT, prefill
 * and decode throughput), GEMM throughput (ctq bench gemm: the targets per
 * shape as pass / miss, TOPS against M per shape; a ctq output that differed
 * from the reference fails the verdict) — and checkpoint provenance. Plots
 * go to RUN/plots/ (results/plot.h).
 *
 * Each family section is written by its family (families/<family>.c).
 *
 * What it is not: a comparison (reports/compare.h) or a dashboard.
 */
#ifndef CTQ_REPORTS_REPORT_H
#define CTQ_REPORTS_REPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"
#include "reports/compare.h"

struct cJSON;

/* What a verdict adds when no GPU code ran (ctq_report_cpu_only): the
 * verdict qualifies the CPU reference only. */
#define CTQ_REPORT_CPU_ONLY "CPU only: no GPU was qualified"

struct ctq_report_summary {
	char verdict[64];     /* "PASS" or "FAIL", then " (" CTQ_REPORT_CPU_ONLY ")" for a run
			       * in which no GPU code ran */
	size_t n_plots;
	char plot_note[256];  /* why there are no plots, when there are none */
};

/* Writes run_dir/summary.md, run_dir/report.html and run_dir/plots/ (the
 * folder is rebuilt through a temporary one). display: the directory's
 * name for readers (the final name of a run still being written in a
 * temporary one; paths under run_dir in step manifests are shown under it),
 * or NULL for run_dir. Errors: io-error, parse-error (a result CSV or the
 * manifest), out-of-memory. A missing gnuplot is not an error: the report
 * says so. */
enum ctq_status ctq_report_write(const char *run_dir, const char *display,
				 struct ctq_report_summary *s, struct ctq_error *err);

/* Whether manifest's run qualified the CPU reference only: a plan run (it
 * has steps) in which no step that needs a GPU ran, or a single command's
 * run whose manifest names a backend or device, only the reference, and no
 * kernel path. Its report shows a PASS in a neutral badge with a line
 * saying no GPU code was qualified. Borrowed. */
bool ctq_report_cpu_only(const struct cJSON *manifest);

/* Trend plots of t into plots_dir (created): one PNG per family present.
 * Returns the number drawn in *n (0 without gnuplot). */
enum ctq_status ctq_report_trend_plots(const struct ctq_trend *t, const char *plots_dir,
				       size_t *n, struct ctq_error *err);

#endif
