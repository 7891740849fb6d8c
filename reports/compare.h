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

enum ctq_policy_key {
	CTQ_POL_TIMING_THRESHOLD,     /* |median change| below it is "same" (fraction) */
	CTQ_POL_TIMING_ALPHA,         /* Mann-Whitney level (genuine replicates only) */
	CTQ_POL_TIMING_MIN_SAMPLES,   /* fewer per side: ambiguous */
	CTQ_POL_TIMING_MAX_CV,        /* a side noisier than this: ambiguous */
	CTQ_POL_TIMING_RUN_NOISE,     /* run-to-run allowance: one run a side is slower or
				       * faster only beyond it (fraction) */
	CTQ_POL_TIMING_AB_ALPHA,      /* paired t level of interleaved run sets (--ab) */
	CTQ_POL_TIMING_AB_MIN_PAIRS,  /* fewer interleaved pairs: ambiguous */
	CTQ_POL_SERVE_MAX_CV,         /* the same for per-request serving latencies */
	CTQ_POL_ACC_ALPHA,            /* McNemar significance level */
	CTQ_POL_ACC_MIN_DROP,         /* smallest accuracy drop that gates (fraction) */
	CTQ_POL_PROBE_FACTOR,         /* rel-L2 growth factor that gates */
	CTQ_POL_PROBE_KERNEL_FLOOR,   /* kernel rel-L2 below it never gates */
	CTQ_POL_PROBE_QUANT_FLOOR,    /* quantization rel-L2 below it never gates */
	CTQ_POL_MISSING_IS_REGRESSION,/* a result file, GEMM point or serving key gone
				       * from NEW gates (0/1) */
	/* A whole result family (every file of it) in BASE and none in NEW
	 * gates (0/1; default 1): one key per enum ctq_family, in its order,
	 * named missing_family.<family name>. An exemption (0) needs a reason. */
	CTQ_POL_MISSING_FAMILY,
	CTQ_POL_COUNT = CTQ_POL_MISSING_FAMILY + CTQ_FAM_COUNT
};

struct ctq_compare_policy {
	double v[CTQ_POL_COUNT];
	char reason[CTQ_POL_COUNT][512];
	char source[512];
};

/* "timing.threshold", ... (the JSON section and key). */
const char *ctq_compare_policy_name(enum ctq_policy_key k);
void ctq_compare_policy_default(struct ctq_compare_policy *p);
/* Reads a policy over the defaults: {"section": {"key": {"value": x,
 * "reason": "..."}}} or a bare number / boolean; "about" members are
 * ignored. Unknown sections or keys and out-of-range values are
 * invalid-config at their JSON path. */
enum ctq_status ctq_compare_policy_load(struct ctq_compare_policy *p, const char *path,
					struct ctq_error *err);

struct ctq_timing_result {
	struct ctq_sample_summary base, cand;
	struct ctq_mwu mwu;
	double change;        /* (median_new - median_base) / median_base */
	const char *verdict;  /* "same", "slower", "faster", "ambiguous" */
	bool regression;      /* slower */
	char why[256];
};

/* The timing verdict of genuine replicates base (nb) and cand (nc), both
 * borrowed: independent repetitions of the whole measurement (several runs),
 * never the requests, calls or repetitions of one run, which share that
 * run's conditions (clock, load, cache state). Mann-Whitney U plus the
 * practical threshold; lower values are better (times). NOMEM only. */
enum ctq_status ctq_compare_timing(const double *base, size_t nb, const double *cand, size_t nc,
				   const struct ctq_compare_policy *p,
				   struct ctq_timing_result *out, struct ctq_error *err);

/* The verdict of one run against one run: base (nb) and cand (nc), both
 * borrowed, are the within-run samples of each side (the requests of a
 * bench serve run, the per-call times of a GEMM point, the repetitions of a
 * bench model key). They share their run's conditions, so they are not
 * replicates of the revision and feed no test: each side summarizes to its
 * median. |change| under timing.threshold is same; a ratio of medians
 * beyond 1 + timing.run_noise (or under 1 / (1 + run_noise)) is slower
 * (faster); in between ambiguous (beyond the threshold, within run-to-run
 * noise). Fewer than timing.min_samples a side, or a side's cv above
 * timing.max_cv, is ambiguous. mwu is not computed (p NaN). NOMEM only. */
enum ctq_status ctq_compare_timing_run(const double *base, size_t nb, const double *cand, size_t nc,
				       const struct ctq_compare_policy *p,
				       struct ctq_timing_result *out, struct ctq_error *err);

#define CTQ_FAM_STEPS CTQ_FAM_COUNT /* pseudo-family of plan steps */

struct ctq_cmp_row {
	int fam;              /* enum ctq_family or CTQ_FAM_STEPS */
	char file[512];       /* result file (NEW side's path) */
	char key[512];        /* the observation's key, fields joined by ", " */
	char metric[64];
	double base, cand;    /* NaN when not a number */
	double change;        /* relative (timing, probe) or absolute (accuracy); NaN n/a */
	double p;             /* p-value; NaN n/a */
	char verdict[16];     /* same slower faster ambiguous regression improvement
			       * added removed changed */
	bool regression;
	bool summary;         /* a per-file summary row */
	char detail[512];
};

struct ctq_comparison {
	struct ctq_cmp_row *rows; /* (n) owned */
	size_t n, cap;
	size_t n_regressions, n_improvements, n_ambiguous, n_files;
	size_t ab_pairs;          /* run pairs of ctq_compare_ab; 0: one run a side */
};

/* Compares the run directories base_dir and new_dir (borrowed) into c.
 * Errors: io-error (a folder or file cannot be read), parse-error (a CSV or
 * manifest that does not parse, a known CSV without its key columns),
 * usage-error when neither side holds anything to compare. */
enum ctq_status ctq_compare_runs(struct ctq_comparison *c, const char *base_dir,
				 const char *new_dir, const struct ctq_compare_policy *p,
				 struct ctq_error *err);
void ctq_comparison_free(struct ctq_comparison *c);

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

struct ctq_trend_series {
	int fam;
	char file[512], key[512], metric[64];
	char unit[16];
	double *v; /* (n_runs) owned; NaN where the run lacks it */
};

struct ctq_trend {
	size_t n_runs;
	char (*labels)[128];  /* (n_runs) short run names (revision or folder) */
	struct ctq_trend_series *s; /* (n) owned */
	size_t n, cap;
};

/* One value per run of every series: timing medians (bench model keys,
 * GEMM points, serving latencies) and serving error counts, conformance
 * failure counts, the worst kernel and quantization rel-L2 and the
 * non-finite mismatch count of each probe file and backend, and each eval
 * file's accuracy. Errors as ctq_compare_runs. */
enum ctq_status ctq_trend_collect(struct ctq_trend *t, char *const *dirs, size_t n_runs,
				  struct ctq_error *err);
void ctq_trend_free(struct ctq_trend *t);
enum ctq_status ctq_trend_write_csv(const struct ctq_trend *t, const char *path,
				    struct ctq_error *err);
void ctq_trend_markdown(const struct ctq_trend *t, char *const *dirs, struct ctq_strbuf *out);

#endif
