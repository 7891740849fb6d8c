/* The comparison machinery the result families share (families/verdict.c):
 * the compare policy and its timing verdicts, rows of a comparison, tables
 * indexed by key columns, the pairing of one result file of each run, the
 * one-run timing rows, and the series of a trend. The families
 * (families/<family>.c) compare and tabulate their own files with it.
 *
 * What it is not: a driver: reports/compare.c pairs the run directories and
 * dispatches to the families, which sit on the floor below it.
 */
#ifndef CTQ_FAMILIES_VERDICT_H
#define CTQ_FAMILIES_VERDICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "core/policy.h"
#include "core/status.h"
#include "core/strbuf.h"
#include "families/registry.h"
#include "results/files.h"
#include "stats/sample.h"
#include "results/table.h"

enum ctq_policy_key {
	CTQ_POL_TIMING_THRESHOLD,     /* |median change| below it is "same" (fraction) */
	CTQ_POL_TIMING_ALPHA,         /* Mann-Whitney level (genuine replicates only) */
	CTQ_POL_TIMING_MIN_SAMPLES,   /* fewer per side: ambiguous */
	CTQ_POL_TIMING_MAX_CV,        /* a side noisier than this: ambiguous */
	CTQ_POL_TIMING_RUN_NOISE,     /* run-to-run allowance: one run a side is slower or
				       * faster only beyond it (fraction) */
	CTQ_POL_TIMING_AB_ALPHA,      /* paired t level of interleaved run sets (--ab) */
	CTQ_POL_TIMING_AB_MIN_PAIRS,  /* fewer interleaved pairs: ambiguous */
	CTQ_POL_TIMING_BUSY_OTHER_CPU,/* a side whose other processes took more of the
				       * host's CPU (fraction): busy host */
	CTQ_POL_TIMING_BUSY_STEAL,    /* a side with more stolen CPU (fraction): busy host */
	CTQ_POL_SERVE_MAX_CV,         /* the same for per-request serving latencies */
	CTQ_POL_ACC_ALPHA,            /* McNemar significance level */
	CTQ_POL_ACC_MIN_DROP,         /* smallest accuracy drop that gates (fraction) */
	CTQ_POL_PROBE_FACTOR,         /* rel-L2 growth factor that gates */
	CTQ_POL_PROBE_KERNEL_FLOOR,   /* kernel rel-L2 below it never gates */
	CTQ_POL_PROBE_QUANT_FLOOR,    /* quantization rel-L2 below it never gates */
	CTQ_POL_KLD_FACTOR,           /* mean-KL growth factor that gates */
	CTQ_POL_KLD_FLOOR,            /* mean KL (nats) below it never gates */
	CTQ_POL_KLD_TOP1_DROP,        /* smallest top-1 agreement fall that gates (fraction) */
	CTQ_POL_KLD_TOP1_ALPHA,       /* paired t level of that fall over windows */
	CTQ_POL_MISSING_IS_REGRESSION,/* a result file, GEMM point or serving key gone
				       * from NEW gates (0/1) */
	/* A whole result family (every file of it) in BASE and none in NEW
	 * gates (0/1; default 1): one key per enum ctq_family, in its order,
	 * named missing_family.<name of its row in ctq_families[]>
	 * (families/registry.h). An exemption (0) needs a reason. */
	CTQ_POL_MISSING_FAMILY,
	CTQ_POL_COUNT = CTQ_POL_MISSING_FAMILY + CTQ_FAM_COUNT
};

struct ctq_compare_policy {
	double v[CTQ_POL_COUNT];
	char reason[CTQ_POL_COUNT][512];
	char source[CTQ_POLICY_SOURCE_MAX];
};

/* "timing.threshold", ... (the JSON section and key). */
const char *ctq_compare_policy_name(enum ctq_policy_key k);
/* The built-in policy: policies/compare.json, which the build embeds
 * (core/embedded.h); source "policies/compare.json (built in)". */
#define CTQ_COMPARE_POLICY_FILE "policies/compare.json"
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

/* Whether the run whose manifest is m ran on a busy host: its host_load
 * (results/env.h) says other processes took more than timing.busy_other_cpu
 * of the host's CPU time, or steal more than timing.busy_steal, over at
 * least 0.25 CPU-seconds (fewer ticks of /proc/stat cannot tell). why (cap
 * bytes) then says so. A manifest without host_load is not busy. */
bool ctq_compare_busy_host(const cJSON *m, const struct ctq_compare_policy *p, char *why,
			   size_t cap);

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
	char busy_host[512];      /* which side ran on a busy host and why; "" when neither */
	size_t n_busy;            /* slower timings called ambiguous for it */
};

void ctq_comparison_free(struct ctq_comparison *c);

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

/* ---- rows ------------------------------------------------------------------ */

/* A new row of family fam for file with key and metric (NULL: empty),
 * appended to c (values NaN, verdict "same"); NULL with NOMEM in err. The
 * row lives until c grows again. */
struct ctq_cmp_row *ctq_cmp_new_row(struct ctq_comparison *c, int fam, const char *file,
				    const char *key, const char *metric, struct ctq_error *err);
/* Sets r's verdict and counts it in c. */
void ctq_cmp_set_verdict(struct ctq_comparison *c, struct ctq_cmp_row *r, const char *v,
			 bool regression);

/* ---- keyed rows of a table ---------------------------------------------------- */

struct ctq_cmp_keyed {
	char *key; /* fields joined by ", " (a duplicate gets " #k") */
	size_t row;
};

struct ctq_cmp_index {
	struct ctq_cmp_keyed *v; /* (n) owned, sorted by key then row */
	size_t n;
};

void ctq_cmp_index_free(struct ctq_cmp_index *ix);
/* Looks up the named columns into cols; parse-error naming the first
 * missing one. */
enum ctq_status ctq_cmp_need_cols(const struct ctq_table *t, const char *file,
				  const char *const *names, int n, int *cols, struct ctq_error *err);
/* Keys of every row of t from cols [0, nk). unique: duplicates numbered.
 * NOMEM only. */
enum ctq_status ctq_cmp_index_build(struct ctq_cmp_index *ix, const struct ctq_table *t,
				    const int *cols, int nk, bool unique, struct ctq_error *err);
/* The first entry of key; NULL without one. */
const struct ctq_cmp_keyed *ctq_cmp_index_find(const struct ctq_cmp_index *ix, const char *key);
/* Samples of column col of the rows [lo, hi) of an index into out (room
 * for hi - lo); NaN cells are skipped. Returns their count. */
size_t ctq_cmp_gather(const struct ctq_table *t, const struct ctq_cmp_index *ix, size_t lo,
		      size_t hi, int col, double *out);
/* End of the run of equal keys starting at i. */
size_t ctq_cmp_run_end(const struct ctq_cmp_index *ix, size_t i);
/* Whether the CSV at path has a "role" column (its header names it). */
bool ctq_cmp_has_role(const char *path);

/* ---- one result file of each run ------------------------------------------------ */

struct ctq_cmp_pair {
	struct ctq_comparison *c;
	const struct ctq_compare_policy *p;
	const char *file;       /* display name */
	const char *base_path, *new_path;
	struct ctq_table tb, tn;
	struct ctq_cmp_index ib, in;
	const char *busy;       /* either side ran on a busy host: why; NULL when neither */
};

void ctq_cmp_pair_free(struct ctq_cmp_pair *x);
/* Loads both tables and indexes them by the key columns key_names [0, nk),
 * their columns into cb and cn. Errors as ctq_table_load, parse-error. */
enum ctq_status ctq_cmp_pair_load(struct ctq_cmp_pair *x, const char *const *key_names, int nk,
				  bool unique, int *cb, int *cn, struct ctq_error *err);
/* Whether the i-th entry of x's new index has its key in the base: then
 * *rb is the base row (the first of that key) and *rn the new row. */
bool ctq_cmp_paired(const struct ctq_cmp_pair *x, size_t i, size_t *rb, size_t *rn);
/* Counts of keys only in base (removed) and only in new (added). */
void ctq_cmp_added_removed(const struct ctq_cmp_pair *x, size_t *added, size_t *removed);
/* The summary row that closes a family's comparison of x's file: key (e.g.
 * "(all probes)") and metric name it, base and cand are its two counts, and
 * its verdict is "regression" when bad, else "improvement" when good, else
 * "same"; set, not counted (the regressions were counted on their own rows).
 * The caller writes its detail. NULL with NOMEM in err. */
struct ctq_cmp_row *ctq_cmp_summary_row(struct ctq_cmp_pair *x, int fam, const char *key,
					const char *metric, double base, double cand, size_t bad,
					size_t good, struct ctq_error *err);

/* ---- timing rows ---------------------------------------------------------------- */

/* One timing row of family fam: the verdict of the samples sb (nb) against
 * sn (nn), both borrowed, under x->p. note, when not NULL, opens the
 * detail; refuse makes the row ambiguous whatever the statistics say (the
 * note says why). A slower verdict with x->busy set is ambiguous (busy
 * host) instead, counted in c->n_busy: one run a side on a loaded host
 * cannot show a regression; --ab can. *out (may be NULL) gets the row.
 * NOMEM only. */
enum ctq_status ctq_cmp_timing_row(struct ctq_cmp_pair *x, int fam, const char *key,
				   const char *metric, const double *sb, size_t nb,
				   const double *sn, size_t nn, const char *note, bool refuse,
				   struct ctq_cmp_row **out, struct ctq_error *err);
/* Timing rows of every key of both tables, the rows of a key being its
 * samples: nm metrics, their columns at cb[nk..] and cn[nk..]. A metric
 * neither side measured (empty cells) gets no row. note and refuse as
 * ctq_cmp_timing_row. */
enum ctq_status ctq_cmp_timing_keys(struct ctq_cmp_pair *x, int fam, const char *const *metrics,
				    int nm, int nk, const int *cb, const int *cn, const char *note,
				    bool refuse, struct ctq_error *err);
/* A key only in the baseline: "removed", a regression when the policy says
 * missing observations are; their count in *removed. NOMEM only. */
enum ctq_status ctq_cmp_removed_rows(struct ctq_cmp_pair *x, int fam, const char *metric,
				     size_t *removed, struct ctq_error *err);

/* ---- trend series ----------------------------------------------------------------- */

/* Frees t's series and labels and zeroes it (NULL: no-op). */
void ctq_trend_free(struct ctq_trend *t);

/* The series (fam, file, key, metric) of t, added (values NaN) when new;
 * NULL with NOMEM in err. */
struct ctq_trend_series *ctq_trend_series_get(struct ctq_trend *t, int fam, const char *file,
					      const char *key, const char *metric,
					      const char *unit, struct ctq_error *err);
/* Sets the value of run in that series. NOMEM only. */
enum ctq_status ctq_trend_put(struct ctq_trend *t, size_t run, int fam, const char *file,
			      const char *key, const char *metric, const char *unit, double v,
			      struct ctq_error *err);
/* The median of each of nm metric columns over the rows of each key (nk
 * key columns; none: one key, "(all requests)"), one series per key and
 * metric; a key without a number in a column gets no value there. */
enum ctq_status ctq_trend_medians(struct ctq_trend *t, size_t run, int fam, const char *file,
				  const struct ctq_table *tb, const char *path,
				  const char *const *keys, int nk, const char *const *metrics,
				  int nm, const char *unit, struct ctq_error *err);

#endif
