/* ctq regression comparison (DESIGN.md "Regression comparison"): pairs the
 * observations of two run directories by key and calls each change.
 *
 *   conformance  conform.csv by (case_id, semantics, check): a check that
 *                went pass -> fail is a regression.
 *   probe        probe.csv by (layer, K, N, M, weights, acts, backend):
 *                kernel or quantization rel-L2 grown beyond the policy
 *                factor (and above its floor), NaN/Inf where there was none,
 *                or pass -> fail is a regression.
 *   timing       bench_model.csv by (backend, batch, input_tokens,
 *                output_tokens), the repetitions of ttft_ms and
 *                decode_ms_per_step summarized to their median: one run a
 *                side is one replicate (its repetitions share the run's
 *                clock, load and cache state), so the verdict is the run
 *                verdict (ctq_compare_timing_run): the practical threshold
 *                and the run-to-run noise allowance on the ratio of
 *                medians, three-way faster / slower / same, or ambiguous
 *                when the change is beyond the threshold but within the
 *                allowance, or the samples are too few or too noisy.
 *                Slower is a regression.
 *   gemm         bench_gemm.csv by (shape, K, N, M, impl): the per-call
 *                samples of bench_gemm_samples.csv beside it through the same
 *                run verdict (no samples file: ambiguous, the CSV medians
 *                shown); a ctq implementation whose check is not pass on the
 *                new side is a regression whatever its time.
 *   serving      bench_serve.csv, one row per request, by role when both
 *                files have a role column, else the whole file: ttft_ms,
 *                tpot_ms and latency_ms over the served requests (the
 *                medians of one run; bench serve writes no repetition
 *                column) through the run verdict with serving.max_cv as
 *                the noise limit (not judged when the manifests beside the
 *                files show another load); a request not served on the new
 *                side is a regression.
 *   accuracy     eval_questions.csv by (benchmark, subject, id): paired by
 *                question, exact McNemar on the discordant pairs and the
 *                difference with Newcombe's interval (stats/accuracy.h); a
 *                significant drop of at least the policy's minimum is a
 *                regression. Subjects are shown, only the whole file gates.
 *   steps        a plan run's steps by id: passed -> failed or error is a
 *                regression.
 *
 * Files pair by their path inside the run directory; a family with exactly
 * one file on each side pairs whatever the paths. GEMM points and serving
 * keys only in the baseline are "removed" (a regression when
 * missing.is_regression). A family with files in the baseline and none in
 * the new run is "removed" as a whole and a regression unless the policy
 * exempts it (missing_family.<family>: false, with its reason). The policy (thresholds with their reasons) is
 * policies/compare.json or the built-in copy.
 *
 * Each family's keys, verdicts and trend series are its own
 * (families/<family>.c); this module pairs the files and dispatches.
 *
 * What it is not: a history store; `ctq compare --trend` tabulates N runs
 * but calls no regression.
 */
#ifndef CTQ_REPORTS_COMPARE_H
#define CTQ_REPORTS_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "core/status.h"
#include "core/strbuf.h"
#include "stats/sample.h"
#include "results/files.h"

#include "families/verdict.h"

/* Compares the run directories base_dir and new_dir (borrowed) into c.
 * Errors: io-error (a folder or file cannot be read), parse-error (a CSV or
 * manifest that does not parse, a known CSV without its key columns),
 * usage-error when neither side holds anything to compare. */
enum ctq_status ctq_compare_runs(struct ctq_comparison *c, const char *base_dir,
				 const char *new_dir, const struct ctq_compare_policy *p,
				 struct ctq_error *err);

/* Compares two run sets made by interleaving the two sides (tools/ab-run.sh:
 * base, new, new, base, base, new, ...): base_set and new_set are folders
 * whose subfolders are finished run directories, paired by name (the same
 * names on both sides; files beside them are ignored). The pairs must have
 * been run back to back: ordered by their manifests' started_unix_s, the
 * two runs of every pair are neighbours. Then a pair's two runs share the
 * machine's drift (consecutive runs of one build on the 2-core CPU correlate
 * 0.15-0.7), and each timing series (bench model key, GEMM point, serving
 * latency) gets the paired t test of its per-run log medians:
 * ln(new_i / base_i), one difference per pair. Same when |change| (the
 * geometric mean ratio - 1) is under timing.threshold; slower or faster when
 * p < timing.ab_alpha; ambiguous otherwise or with fewer than
 * timing.ab_min_pairs pairs. Every other family (and the steps) compares the
 * first pair's runs as ctq_compare_runs does. Errors: usage-error naming the
 * set or run that is not a finished run, not paired, lacks started_unix_s,
 * or was not interleaved; as ctq_compare_runs otherwise. */
enum ctq_status ctq_compare_ab(struct ctq_comparison *c, const char *base_set,
			       const char *new_set, const struct ctq_compare_policy *p,
			       struct ctq_error *err);

/* compare.csv: one row per ctq_cmp_row. */
enum ctq_status ctq_comparison_write_csv(const struct ctq_comparison *c, const char *path,
					 struct ctq_error *err);
/* compare.md: verdict, the runs, then a table per family and the policy. */
void ctq_comparison_markdown(const struct ctq_comparison *c, const char *base_dir,
			     const char *new_dir, const struct ctq_compare_policy *p,
			     struct ctq_strbuf *out);
/* The console table (regressions, improvements, ambiguous and per-file
 * summaries; unchanged observations only counted). */
void ctq_comparison_print(const struct ctq_comparison *c, FILE *f);

/* ---- trends over N runs ---------------------------------------------------- */

/* One value per run of every series: timing medians (bench model keys,
 * GEMM points, serving latencies) and serving error counts, conformance
 * failure counts, the worst kernel and quantization rel-L2 and the
 * non-finite mismatch count of each probe file and backend, and each eval
 * file's accuracy. Errors as ctq_compare_runs. */
enum ctq_status ctq_trend_collect(struct ctq_trend *t, char *const *dirs, size_t n_runs,
				  struct ctq_error *err);
/* (ctq_trend_free: families/verdict.h, beside the series it frees.) */
enum ctq_status ctq_trend_write_csv(const struct ctq_trend *t, const char *path,
				    struct ctq_error *err);
void ctq_trend_markdown(const struct ctq_trend *t, char *const *dirs, struct ctq_strbuf *out);

#endif
