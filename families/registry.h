/* The one registration of the result families: ctq_families[], one row per
 * family (families/registry.c), says everything the drivers need of it: its
 * id and name, the CSV file that holds it, its columns, its report section
 * and where that goes, its comparison and how compare shows its rows, its
 * trend series and trend plot. reports/report.c, reports/compare.c,
 * families/verdict.c (the missing_family.<name> policy keys) and
 * ctq_results_find (results/files.h, through ctq_family_by_file) read this
 * table; none of them names a family.
 *
 * Adding a family: families/<family>.{h,c} (columns, writer, reader,
 * comparison, trend, report), a CTQ_FAM_<FAMILY> below, and its row in
 * families/registry.c.
 *
 * What it is not: a family (each is its own file) or a driver.
 */
#ifndef CTQ_FAMILIES_REGISTRY_H
#define CTQ_FAMILIES_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"

/* The families, in the order of their policy keys (missing_family.<name>,
 * families/verdict.h) and of the files of one family in ctq compare's
 * pairing. A new one goes before CTQ_FAM_COUNT. */
enum ctq_family {
	CTQ_FAM_CONFORM,     /* conform.csv: one row per conformance check */
	CTQ_FAM_PROBE,       /* probe.csv: one row per kernel probe */
	CTQ_FAM_BENCH_MODEL, /* bench_model.csv: one row per timed repetition */
	CTQ_FAM_BENCH_GEMM,  /* bench_gemm.csv: kernel throughput against M */
	CTQ_FAM_EVAL,        /* eval_questions.csv: one row per question */
	CTQ_FAM_BENCH_SERVE, /* bench_serve.csv: one row per served request */
	CTQ_FAM_EVAL_KLD,    /* eval_kld.csv: one row per window of text (ctq eval kld) */
	CTQ_FAM_VERIFY_WEIGHTS, /* verify.csv: one row per module held against its source */
	CTQ_FAM_COUNT
};

struct ctq_cmp_pair;
struct ctq_error;
struct ctq_rep;
struct ctq_result_file;
struct ctq_table;
struct ctq_trend;

/* How ctq compare shows a row's base, new and change. */
enum ctq_fam_scale {
	CTQ_FAM_SCALE_FACTOR,     /* change as a factor: "x1.5" */
	CTQ_FAM_SCALE_RELATIVE,   /* change as a relative change: "+4.2%" (timings) */
	CTQ_FAM_SCALE_PROPORTION, /* values are proportions ("61.25%"), change in points
				   * ("-1.25 pt") */
};

/* The family's plot of ctq compare --trend: plots/<name>.png, one line per
 * series of the family but those of the metric unplotted (NULL: none);
 * drawn in ascending rank (gnuplot's warnings go to one log, in that
 * order). */
struct ctq_fam_trend_plot {
	int rank;
	const char *name, *title, *ylabel;
	bool logy; /* log axis; values <= 0 drawn at CTQ_REP_LOG_FLOOR */
	const char *unplotted;
};

struct ctq_family_def {
	enum ctq_family id; /* its index in ctq_families */
	/* "conformance", ...: compare's and trend's family column, and the
	 * policy key missing_family.<name> */
	const char *name;
	const char *file;           /* the CSV file name a run holds it in: "conform.csv", ... */
	const char *const *columns; /* (n_columns) CTQ_<FAMILY>_CSV_COLUMNS */
	size_t n_columns;

	/* ctq report: sections go in ascending report_rank, each under the
	 * heading report_title; report() once per file of the family, then
	 * report_end() (NULL: none) once when there was one. */
	int report_rank;
	const char *report_title;
	enum ctq_status (*report)(struct ctq_rep *r, const struct ctq_result_file *f);
	enum ctq_status (*report_end)(struct ctq_rep *r);

	/* ctq compare: compare() the rows of one pair of files; compare.md's
	 * sections go in ascending compare_rank (after the plan steps), each
	 * under compare_title. show_all: every row of the family is printed,
	 * not only the changed ones. timing_metrics (NULL-terminated; NULL:
	 * none): the metrics of one-run timing verdicts, which --ab replaces
	 * by its paired verdict over the runs. */
	int compare_rank;
	const char *compare_title;
	enum ctq_status (*compare)(struct ctq_cmp_pair *x, struct ctq_error *err);
	enum ctq_fam_scale scale;
	bool show_all;
	const char *const *timing_metrics;

	/* ctq compare --trend: the family's series of one run's table tb
	 * (borrowed; path names it in errors), and its plot (NULL: none). */
	enum ctq_status (*trend)(struct ctq_trend *t, size_t run, const struct ctq_table *tb,
				 const char *path, const char *file, struct ctq_error *err);
	const struct ctq_fam_trend_plot *trend_plot;
};

/* Indexed by enum ctq_family. */
extern const struct ctq_family_def ctq_families[CTQ_FAM_COUNT];

/* The row of family id; NULL when id names none (CTQ_FAM_STEPS, say). */
const struct ctq_family_def *ctq_family(int id);
/* The family whose CSV is named name (a file name, no folder); -1 when
 * none: the classifier ctq_results_find takes. */
int ctq_family_by_file(const char *name);
/* Its name ("unknown" out of range) and file name ("" out of range). */
const char *ctq_family_name(enum ctq_family f);
const char *ctq_family_file(enum ctq_family f);
/* The orders the drivers take the families in: their report_rank,
 * compare_rank, or trend_plot->rank (only the families with a trend plot). */
enum ctq_fam_order { CTQ_FAM_ORDER_REPORT, CTQ_FAM_ORDER_COMPARE, CTQ_FAM_ORDER_TREND_PLOT };
/* The families in order o into out; returns how many. */
size_t ctq_families_ordered(const struct ctq_family_def *out[CTQ_FAM_COUNT], enum ctq_fam_order o);

#endif
