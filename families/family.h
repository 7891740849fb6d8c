/* What every result family (families/<family>.c) shares. A family owns one
 * kind of result CSV: its column header (declared once, in its .h, for the
 * writer and the readers), its comparison of two runs' files, its part of a
 * trend over N runs, and its section of the run report. reports/compare.c
 * and reports/report.c reach the families through their one registration,
 * ctq_families[] (families/registry.h); the comparison machinery they use is
 * families/verdict.h, the report's (struct ctq_rep and its
 * rendering helpers, defined in family.c) is here.
 *
 * Every family declares, in families/<family>.h:
 *   ctq_fam_<family>_compare(x, err)   the rows of one pair of files
 *                                      (struct ctq_cmp_pair, loaded by it)
 *   ctq_fam_<family>_trend(t, run, tb, path, file, err)
 *                                      its series of one run's table tb
 *                                      (borrowed; path names it in errors)
 *   ctq_fam_<family>_report(r, f)      its report section for file f
 *   ctq_fam_<family>_csv_row(w, ...)   one row of its CSV (the engines call it)
 * and registers them in its row of ctq_families[] (families/registry.c).
 *
 * What it is not: the registry (families/registry.h).
 */
#ifndef CTQ_FAMILIES_FAMILY_H
#define CTQ_FAMILIES_FAMILY_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "core/status.h"
#include "core/strbuf.h"
#include "families/registry.h"
#include "results/files.h"
#include "results/plot.h"
#include "results/table.h"

struct ctq_cmp_pair;
struct ctq_trend;
struct ctq_result_file;
struct ctq_perf_case;

/* The one reading of a boolean CSV cell: "true" or "1" (the writers write
 * "true"; "1" is accepted from other tools). Anything else is false. */
bool ctq_csv_truthy(const char *s);

/* ---- the run report's context and rendering (reports/report.c) ------------------ */

/* Rows listed before "... and N more" in the failing-case tables. */
#define CTQ_REP_MAX_LISTED 50
/* Kernel rel-L2 is 0 when bit-exact; a log axis draws 0 here. */
#define CTQ_REP_LOG_FLOOR 1e-9

/* One report being written; the families append their sections to md and
 * html and count what fails the verdict. */
struct ctq_rep {
	const char *dir;
	const char *display;   /* the run directory as readers should see it */
	cJSON *m;
	struct ctq_results res;
	struct ctq_plotter plot;
	char plots[1200];      /* the (temporary) plots folder */
	struct ctq_strbuf md, html; /* the family sections */
	size_t n_plots;
	char plot_note[256];
	size_t checks_failed, probes_failed, files_bad;
	size_t gates, gates_failed; /* accuracy gates that ctq eval recorded */
	size_t serve_errors;        /* failed requests of ctq bench serve */
	size_t gemm_failed;         /* ctq bench gemm rows whose ctq output differs from the reference */
	/* The timing cases of the bench_model sections (families/bench_model.h),
	 * tabulated after the last of them; owned, free()d with the report. */
	struct ctq_perf_case *perf;
	size_t n_perf, cap_perf;
	struct ctq_error *err;
};

/* s escaped for HTML (h) or for a Markdown table cell (md), appended to sb. */
void ctq_rep_h(struct ctq_strbuf *sb, const char *s);
void ctq_rep_md(struct ctq_strbuf *sb, const char *s);
/* One table cell in both documents; cls is the HTML class or NULL. */
void ctq_rep_cell(struct ctq_rep *r, const char *s, const char *cls);
void ctq_rep_cellf(struct ctq_rep *r, const char *cls, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Starts a table with the given headers (NULL-terminated). */
void ctq_rep_table_head(struct ctq_rep *r, const char *const *cols);
void ctq_rep_row_begin(struct ctq_rep *r);
void ctq_rep_row_end(struct ctq_rep *r);
void ctq_rep_table_end(struct ctq_rep *r);
void ctq_rep_heading(struct ctq_rep *r, int level, const char *text);
void ctq_rep_para(struct ctq_rep *r, const char *text);
/* "%.4g" of v, or of 100 v with two decimals (pct); "-" for NaN. */
void ctq_rep_fmt_g(char *buf, size_t cap, double v);
void ctq_rep_fmt_pct(char *buf, size_t cap, double v);
/* Draws a plot and embeds it (HTML data URI, Markdown link). A failure to
 * draw is noted in the report, not returned: the numbers are in the tables. */
void ctq_rep_plot(struct ctq_rep *r, const char *name, int w, int hgt, const char *caption,
		  const char *body, const char *data);
/* A plot name from a file's folder: "probe-tiny/probe" -> "probe-tiny_probe". */
void ctq_rep_plot_name(char *buf, size_t cap, const char *prefix, const char *dir);
/* A string at a dotted path ("unknown" without one); a number member (NaN). */
const char *ctq_rep_jstr(const cJSON *o, const char *dotted);
double ctq_rep_jnum(const cJSON *o, const char *key);
/* The manifest of the step whose folder is dir under run_dir ("" for the
 * run itself); NULL without one. Owned by the caller. */
cJSON *ctq_rep_step_manifest(const char *run_dir, const char *dir);
/* The accuracy gate a command recorded under member ("eval", "eval_kld") of
 * the manifest of the step in dir, as member.verdict (written only with a
 * reference model): sentence() words it (ok: the verdict is "non-inferior")
 * into a paragraph under the table, and a failed gate (inferior or
 * inconclusive) counts in r->gates_failed, failing a report without steps,
 * unless the plan's step in dir expects it to fail ("expect": "fail"),
 * which the paragraph then says. Nothing without such a verdict. */
void ctq_rep_gate(struct ctq_rep *r, const char *dir, const char *member,
		  void (*sentence)(char *buf, size_t cap, const cJSON *gate, const char *verdict,
				   bool ok));
/* The value after option opt in the argv of dir/manifest.json, in buf;
 * NULL without one. */
char *ctq_rep_step_option(const char *run_dir, const char *display, const char *dir,
			  const char *opt, char *buf, size_t cap);
/* A result file loaded for a report section: its table, its path and the
 * columns the section asked for. */
#define CTQ_REP_COLS_MAX 16
struct ctq_rep_table {
	struct ctq_table t;
	char path[1200];
	int col[CTQ_REP_COLS_MAX];
};
/* Loads the result file f of the run into rt and finds the columns
 * names[0..n-1] (n <= CTQ_REP_COLS_MAX) into rt->col: the first n_required
 * must be there (else parse-error naming the column and the file, rt
 * freed); the others are -1 when absent. */
enum ctq_status ctq_rep_load_result(struct ctq_rep *r, const struct ctq_result_file *f,
				    const char *const *names, int n, int n_required,
				    struct ctq_rep_table *rt);
/* Frees rt and sets r->err to out of memory at its path. */
enum ctq_status ctq_rep_table_nomem(struct ctq_rep *r, struct ctq_rep_table *rt);
/* The index of the entry named name among the n entries at v, entries of
 * stride bytes that each open with their name (a char array), e.g.
 * ctq_rep_find_name(fs, nf, sizeof *fs, id): the one lookup of the report
 * sections that group rows by a name (folders, subjects, backends, layers).
 * n when none is named so. */
size_t ctq_rep_find_name(const void *v, size_t n, size_t stride, const char *name);

#endif
