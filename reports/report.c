/* ctq run report (see report.h). */
#include "reports/report.h"
#include "core/fileio.h"
#include "core/json.h"
#include "stats/accuracy.h"
#include "bench/gemm.h"
#include "results/plot.h"
#include "results/files.h"
#include "results/table.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Rows listed before "... and N more" in the failing-case tables. */
#define MAX_LISTED 50
/* Kernel rel-L2 is 0 when bit-exact; a log axis draws 0 here. */
#define LOG_FLOOR 1e-9

struct rep {
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
	struct ctq_error *err;
};

/* ---- text helpers ------------------------------------------------------------- */

static void h(struct ctq_strbuf *sb, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '<': ctq_strbuf_append(sb, "&lt;"); break;
		case '>': ctq_strbuf_append(sb, "&gt;"); break;
		case '&': ctq_strbuf_append(sb, "&amp;"); break;
		case '"': ctq_strbuf_append(sb, "&quot;"); break;
		default: ctq_strbuf_appendn(sb, s, 1);
		}
	}
}

static void md(struct ctq_strbuf *sb, const char *s)
{
	for (; s && *s; s++) {
		if (*s == '|')
			ctq_strbuf_append(sb, "\\|");
		else if (*s == '\n' || *s == '\r')
			ctq_strbuf_append(sb, " ");
		else
			ctq_strbuf_appendn(sb, s, 1);
	}
}

/* One table cell in both documents. */
static void cell(struct rep *r, const char *s, const char *cls)
{
	ctq_strbuf_append(&r->md, " ");
	md(&r->md, s);
	ctq_strbuf_append(&r->md, " |");
	ctq_strbuf_printf(&r->html, "<td%s%s%s>", cls ? " class=\"" : "", cls ? cls : "",
			  cls ? "\"" : "");
	h(&r->html, s);
	ctq_strbuf_append(&r->html, "</td>");
}

static void cellf(struct rep *r, const char *cls, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void cellf(struct rep *r, const char *cls, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	cell(r, buf, cls);
}

/* Starts a table with the given headers (NULL-terminated). */
static void table_head(struct rep *r, const char *const *cols)
{
	ctq_strbuf_append(&r->md, "|");
	ctq_strbuf_append(&r->html, "<table><tr>");
	size_t n = 0;
	for (; cols[n]; n++) {
		ctq_strbuf_printf(&r->md, " %s |", cols[n]);
		ctq_strbuf_append(&r->html, "<th>");
		h(&r->html, cols[n]);
		ctq_strbuf_append(&r->html, "</th>");
	}
	ctq_strbuf_append(&r->md, "\n|");
	for (size_t i = 0; i < n; i++)
		ctq_strbuf_append(&r->md, "---|");
	ctq_strbuf_append(&r->md, "\n");
	ctq_strbuf_append(&r->html, "</tr>\n");
}

static void row_begin(struct rep *r)
{
	ctq_strbuf_append(&r->md, "|");
	ctq_strbuf_append(&r->html, "<tr>");
}

static void row_end(struct rep *r)
{
	ctq_strbuf_append(&r->md, "\n");
	ctq_strbuf_append(&r->html, "</tr>\n");
}

static void table_end(struct rep *r)
{
	ctq_strbuf_append(&r->md, "\n");
	ctq_strbuf_append(&r->html, "</table>\n");
}

static void heading(struct rep *r, int level, const char *text)
{
	ctq_strbuf_printf(&r->md, "%.*s ", level, "####");
	md(&r->md, text);
	ctq_strbuf_append(&r->md, "\n\n");
	ctq_strbuf_printf(&r->html, "<h%d>", level);
	h(&r->html, text);
	ctq_strbuf_printf(&r->html, "</h%d>\n", level);
}

static void para(struct rep *r, const char *text)
{
	md(&r->md, text);
	ctq_strbuf_append(&r->md, "\n\n");
	ctq_strbuf_append(&r->html, "<p>");
	h(&r->html, text);
	ctq_strbuf_append(&r->html, "</p>\n");
}

static void fmt_g(char *buf, size_t cap, double v)
{
	if (isnan(v))
		snprintf(buf, cap, "-");
	else
		snprintf(buf, cap, "%.4g", v);
}

static void fmt_pct(char *buf, size_t cap, double v)
{
	if (isnan(v))
		snprintf(buf, cap, "-");
	else
		snprintf(buf, cap, "%.2f", 100 * v);
}

/* ---- plots --------------------------------------------------------------------- */

/* Draws a plot and embeds it (HTML data URI, Markdown link). A failure to
 * draw is noted in the report, not returned: the numbers are in the tables. */
static void plot(struct rep *r, const char *name, int w, int hgt, const char *caption,
		 const char *body, const char *data)
{
	if (!r->plot.available)
		return;
	struct ctq_error perr = {0};
	if (ctq_plot_render(&r->plot, r->plots, name, w, hgt, body, data, &perr)) {
		char note[700];
		snprintf(note, sizeof note, "(plot %s not drawn: %s)", name, perr.message);
		para(r, note);
		return;
	}
	char png[1300];
	snprintf(png, sizeof png, "%s/%s.png", r->plots, name);
	ctq_strbuf_printf(&r->md, "![%s](plots/%s.png)\n\n", caption, name);
	ctq_strbuf_append(&r->html, "<figure><img alt=\"");
	h(&r->html, caption);
	ctq_strbuf_append(&r->html, "\" src=\"data:image/png;base64,");
	struct ctq_error e2 = {0};
	ctq_base64_file(png, &r->html, &e2);
	ctq_strbuf_append(&r->html, "\"><figcaption>");
	h(&r->html, caption);
	ctq_strbuf_printf(&r->html, " <span class=\"dim\">(plots/%s.png, drawn by plots/%s.gp)</span>"
				    "</figcaption></figure>\n", name, name);
	r->n_plots++;
}

/* A plot name from a file's folder: "probe-tiny/probe" -> "probe-tiny_probe". */
static void plot_name(char *buf, size_t cap, const char *prefix, const char *dir)
{
	snprintf(buf, cap, "%s%s%s", prefix, *dir ? "_" : "", dir);
	for (char *c = buf; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
		      *c == '-' || *c == '_'))
			*c = '_';
}

/* ---- manifests of steps --------------------------------------------------------- */

static const char *jstr(const cJSON *o, const char *dotted)
{
	return ctq_json_str_at(o, dotted, "unknown");
}

static double jnum(const cJSON *o, const char *key)
{
	const cJSON *v = ctq_json_get(o, key);
	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* The manifest of the step whose folder is dir under run_dir ("" for the
 * run itself); NULL without one. Owned by the caller. */
static cJSON *step_manifest(const char *run_dir, const char *dir)
{
	char path[1200];
	snprintf(path, sizeof path, "%s%s%s", run_dir, *dir ? "/" : "", dir);
	cJSON *m = NULL;
	if (ctq_results_manifest(path, &m, NULL))
		return NULL;
	return m;
}

/* The value after option opt in the argv of dir/manifest.json; NULL. */
static char *step_option(const char *run_dir, const char *display, const char *dir,
			 const char *opt, char *buf, size_t cap)
{
	cJSON *m = step_manifest(run_dir, dir);
	if (!m)
		return NULL;
	const cJSON *argv = ctq_json_get(m, "argv"), *a;
	bool next = false;
	char *out = NULL;
	cJSON_ArrayForEach(a, argv)
	{
		if (!cJSON_IsString(a))
			continue;
		if (next) {
			/* Steps of a plan ran inside the temporary run directory. */
			size_t n = strlen(run_dir);
			if (display && !strncmp(a->valuestring, run_dir, n) &&
			    (a->valuestring[n] == '/' || !a->valuestring[n]))
				snprintf(buf, cap, "%s%s", display, a->valuestring + n);
			else
				snprintf(buf, cap, "%s", a->valuestring);
			out = buf;
			break;
		}
		next = !strcmp(a->valuestring, opt);
	}
	cJSON_Delete(m);
	return out;
}

/* ---- conformance ---------------------------------------------------------------- */

struct folder {
	char name[128];
	size_t cases, passed, failed;
	char last_case[256];
};

/* Loads the result file f of the run into t; path receives its path. */
static enum ctq_status load_result(struct rep *r, const struct ctq_result_file *f,
				   struct ctq_table *t, char *path, size_t cap)
{
	snprintf(path, cap, "%s/%s", r->dir, f->rel);
	return ctq_table_load(t, path, r->err);
}

static enum ctq_status conform_file(struct rep *r, const struct ctq_result_file *f)
{
	char path[1200];
	struct ctq_table t;
	enum ctq_status st = load_result(r, f, &t, path, sizeof path);
	if (st)
		return st;
	int c_case = ctq_table_col(&t, "case_id"), c_sem = ctq_table_col(&t, "semantics");
	int c_chk = ctq_table_col(&t, "check"), c_exp = ctq_table_col(&t, "expected");
	int c_act = ctq_table_col(&t, "actual"), c_out = ctq_table_col(&t, "outcome");
	int c_det = ctq_table_col(&t, "detail");
	if (c_case < 0 || c_out < 0) {
		ctq_table_free(&t);
		return ctq_error_set(r->err, CTQ_ERR_PARSE, path, "has no case_id or outcome column");
	}
	struct folder *fs = calloc(t.n_rows + 1, sizeof *fs);
	if (!fs) {
		ctq_table_free(&t);
		return ctq_error_set(r->err, CTQ_ERR_NOMEM, path, "out of memory");
	}
	size_t nf = 0, passed = 0, failed = 0;
	for (size_t i = 0; i < t.n_rows; i++) {
		const char *id = ctq_table_get(&t, i, c_case);
		size_t k = strcspn(id, "/");
		char name[128];
		snprintf(name, sizeof name, "%.*s", id[k] ? (int)k : 5, id[k] ? id : "(top)");
		size_t j;
		for (j = 0; j < nf; j++)
			if (!strcmp(fs[j].name, name))
				break;
		if (j == nf)
			snprintf(fs[nf++].name, sizeof fs->name, "%s", name);
		if (strcmp(fs[j].last_case, id) != 0) {
			fs[j].cases++;
			snprintf(fs[j].last_case, sizeof fs[j].last_case, "%s", id);
		}
		bool ok = !strcmp(ctq_table_get(&t, i, c_out), "pass");
		ok ? fs[j].passed++ : fs[j].failed++;
		ok ? passed++ : failed++;
	}
	r->checks_failed += failed;
	char title[700];
	snprintf(title, sizeof title, "%s — %zu checks: %zu passed, %zu failed", f->rel, t.n_rows,
		 passed, failed);
	heading(r, 3, title);
	static const char *const cols[] = {"suite folder", "cases", "checks", "passed", "failed", NULL};
	table_head(r, cols);
	for (size_t j = 0; j < nf; j++) {
		row_begin(r);
		cell(r, fs[j].name, NULL);
		cellf(r, "num", "%zu", fs[j].cases);
		cellf(r, "num", "%zu", fs[j].passed + fs[j].failed);
		cellf(r, "num", "%zu", fs[j].passed);
		cellf(r, fs[j].failed ? "num bad" : "num", "%zu", fs[j].failed);
		row_end(r);
	}
	table_end(r);
	free(fs);
	if (failed) {
		para(r, "Failing checks:");
		static const char *const fc[] = {"case", "semantics", "check", "expected", "actual",
						 "why", NULL};
		table_head(r, fc);
		size_t listed = 0;
		for (size_t i = 0; i < t.n_rows && listed < MAX_LISTED; i++) {
			if (!strcmp(ctq_table_get(&t, i, c_out), "pass"))
				continue;
			listed++;
			row_begin(r);
			cell(r, ctq_table_get(&t, i, c_case), NULL);
			cell(r, ctq_table_get(&t, i, c_sem), NULL);
			cell(r, ctq_table_get(&t, i, c_chk), NULL);
			cell(r, ctq_table_get(&t, i, c_exp), NULL);
			cell(r, ctq_table_get(&t, i, c_act), "bad");
			cell(r, ctq_table_get(&t, i, c_det), NULL);
			row_end(r);
		}
		table_end(r);
		if (failed > listed) {
			char more[600];
			snprintf(more, sizeof more, "... and %zu more failing checks in %s.", failed - listed,
				 f->rel);
			para(r, more);
		}
	}
	ctq_table_free(&t);
	return CTQ_OK;
}

/* ---- probes ---------------------------------------------------------------------- */

struct probe_backend {
	char name[32];
	size_t n, failed;
	double nan, inf, mismatch;
	double worst_k, worst_q;
	size_t at_k, at_q; /* rows */
};

struct probe_layer {
	char name[256];
	long long K, N;
	double k[4], q[4]; /* per backend (up to 4) */
};

static enum ctq_status probe_file(struct rep *r, const struct ctq_result_file *f)
{
	char path[1200];
	struct ctq_table t;
	enum ctq_status st = load_result(r, f, &t, path, sizeof path);
	if (st)
		return st;
	static const char *const names[] = {"layer", "K", "N", "M", "weights", "acts", "backend",
					    "nan_count", "inf_count", "nonfinite_mismatch",
					    "kernel_rel_l2", "quant_rel_l2", "outcome", "reason"};
	int c[14];
	for (int i = 0; i < 14; i++)
		if ((c[i] = ctq_table_col(&t, names[i])) < 0) {
			ctq_table_free(&t);
			return ctq_error_set(r->err, CTQ_ERR_PARSE, path, "has no column \"%s\"", names[i]);
		}
	struct probe_backend be[4];
	size_t nb = 0;
	struct probe_layer *ly = calloc(t.n_rows + 1, sizeof *ly);
	if (!ly) {
		ctq_table_free(&t);
		return ctq_error_set(r->err, CTQ_ERR_NOMEM, path, "out of memory");
	}
	size_t nl = 0, failed = 0;
	memset(be, 0, sizeof be);
	for (size_t i = 0; i < t.n_rows; i++) {
		const char *b = ctq_table_get(&t, i, c[6]);
		size_t j;
		for (j = 0; j < nb; j++)
			if (!strcmp(be[j].name, b))
				break;
		if (j == nb) {
			if (nb == 4)
				continue;
			snprintf(be[nb].name, sizeof be[nb].name, "%s", b);
			be[nb].worst_k = be[nb].worst_q = NAN;
			nb++;
		}
		struct probe_backend *p = &be[j];
		p->n++;
		bool ok = !strcmp(ctq_table_get(&t, i, c[12]), "pass");
		if (!ok) {
			p->failed++;
			failed++;
		}
		p->nan += ctq_table_num(&t, i, c[7]);
		p->inf += ctq_table_num(&t, i, c[8]);
		p->mismatch += ctq_table_num(&t, i, c[9]);
		double k = ctq_table_num(&t, i, c[10]), q = ctq_table_num(&t, i, c[11]);
		/* bf16-limit overflows by design: its policy judges only NaN/Inf
		 * agreement, so its quantization rel-L2 is no measure of error. */
		if (!strcmp(ctq_table_get(&t, i, c[5]), "bf16-limit"))
			q = NAN;
		if (!isnan(k) && (isnan(p->worst_k) || k > p->worst_k))
			p->worst_k = k, p->at_k = i;
		if (!isnan(q) && (isnan(p->worst_q) || q > p->worst_q))
			p->worst_q = q, p->at_q = i;
		const char *ln = ctq_table_get(&t, i, c[0]);
		size_t l;
		for (l = 0; l < nl; l++)
			if (!strcmp(ly[l].name, ln))
				break;
		if (l == nl) {
			snprintf(ly[nl].name, sizeof ly[nl].name, "%s", ln);
			/* A cell that is no number (or out of range) is shown as
			 * 0, never cast (NaN -> long long is undefined; fuzz_csv). */
			double kk = ctq_table_num(&t, i, c[1]), nn = ctq_table_num(&t, i, c[2]);
			ly[nl].K = kk >= 0 && kk <= 9e15 ? (long long)kk : 0;
			ly[nl].N = nn >= 0 && nn <= 9e15 ? (long long)nn : 0;
			for (int z = 0; z < 4; z++)
				ly[nl].k[z] = ly[nl].q[z] = NAN;
			nl++;
		}
		if (!isnan(k) && (isnan(ly[l].k[j]) || k > ly[l].k[j]))
			ly[l].k[j] = k;
		if (!isnan(q) && (isnan(ly[l].q[j]) || q > ly[l].q[j]))
			ly[l].q[j] = q;
	}
	r->probes_failed += failed;
	char title[700], buf[64], buf2[64];
	snprintf(title, sizeof title, "%s — %zu probes: %zu passed, %zu failed", f->rel, t.n_rows,
		 t.n_rows - failed, failed);
	heading(r, 3, title);
	static const char *const cols[] = {"backend", "probes", "failed", "worst kernel rel-L2",
					   "at", "worst quantization rel-L2", "at", "NaN", "Inf",
					   "NaN/Inf mismatches", NULL};
	table_head(r, cols);
	for (size_t j = 0; j < nb; j++) {
		const struct probe_backend *p = &be[j];
		char at_k[400], at_q[400];
		snprintf(at_k, sizeof at_k, "%s M=%s %s/%s", ctq_table_get(&t, p->at_k, c[0]),
			 ctq_table_get(&t, p->at_k, c[3]), ctq_table_get(&t, p->at_k, c[4]),
			 ctq_table_get(&t, p->at_k, c[5]));
		if (p->worst_k == 0)
			snprintf(at_k, sizeof at_k, "every probe bit-exact");
		snprintf(at_q, sizeof at_q, "%s M=%s %s/%s", ctq_table_get(&t, p->at_q, c[0]),
			 ctq_table_get(&t, p->at_q, c[3]), ctq_table_get(&t, p->at_q, c[4]),
			 ctq_table_get(&t, p->at_q, c[5]));
		row_begin(r);
		cell(r, p->name, NULL);
		cellf(r, "num", "%zu", p->n);
		cellf(r, p->failed ? "num bad" : "num", "%zu", p->failed);
		fmt_g(buf, sizeof buf, p->worst_k);
		cell(r, buf, "num");
		cell(r, at_k, NULL);
		fmt_g(buf2, sizeof buf2, p->worst_q);
		cell(r, buf2, "num");
		cell(r, at_q, NULL);
		cellf(r, "num", "%.0f", p->nan);
		cellf(r, "num", "%.0f", p->inf);
		cellf(r, p->mismatch > 0 ? "num bad" : "num", "%.0f", p->mismatch);
		row_end(r);
	}
	table_end(r);
	para(r, "Quantization rel-L2 leaves out the bf16-limit activations, which overflow BF16 by "
		"design (their policy judges only NaN/Inf agreement). "
		"NaN/Inf counts include them; "
		"a probe fails when its non-finite outputs differ from the reference's, or its rel-L2 "
		"exceeds the policy (kernel: against the exact-quantized CPU reference; quantization: "
		"against the FP64 unquantized product).");
	if (failed) {
		static const char *const fc[] = {"layer", "K", "N", "M", "weights", "acts", "backend",
						 "kernel rel-L2", "quant rel-L2", "why", NULL};
		table_head(r, fc);
		size_t listed = 0;
		for (size_t i = 0; i < t.n_rows && listed < MAX_LISTED; i++) {
			if (!strcmp(ctq_table_get(&t, i, c[12]), "pass"))
				continue;
			listed++;
			row_begin(r);
			for (int k = 0; k < 7; k++)
				cell(r, ctq_table_get(&t, i, c[k]), NULL);
			cell(r, ctq_table_get(&t, i, c[10]), "num bad");
			cell(r, ctq_table_get(&t, i, c[11]), "num");
			cell(r, ctq_table_get(&t, i, c[13]), NULL);
			row_end(r);
		}
		table_end(r);
	}
	/* rel-L2 per layer: the maximum over patterns and M. */
	struct ctq_strbuf data, body;
	ctq_strbuf_init(&data);
	ctq_strbuf_init(&body);
	ctq_strbuf_append(&data, "# index layer");
	for (size_t j = 0; j < nb; j++)
		ctq_strbuf_printf(&data, " kernel_%s quant_%s", be[j].name, be[j].name);
	ctq_strbuf_append(&data, "\n");
	for (size_t l = 0; l < nl; l++) {
		char label[320];
		snprintf(label, sizeof label, "%s %lldx%lld", ly[l].name, ly[l].K, ly[l].N);
		ctq_strbuf_printf(&data, "%zu ", l);
		ctq_plot_quoted(&data, label);
		for (size_t j = 0; j < nb; j++) {
			double k = ly[l].k[j], q = ly[l].q[j];
			ctq_strbuf_printf(&data, " %.9g %.9g", isnan(k) ? NAN : k > LOG_FLOOR ? k : LOG_FLOOR,
					  isnan(q) ? NAN : q > LOG_FLOOR ? q : LOG_FLOOR);
		}
		ctq_strbuf_append(&data, "\n");
	}
	char name[300];
	plot_name(name, sizeof name, "probe_rel_l2", f->dir);
	ctq_strbuf_printf(&body,
			  "set title \"rel-L2 per layer (max over weight/activation patterns and M): %s\"\n"
			  "set logscale y\nset format y \"%%.0e\"\nset yrange [%g:*]\n"
			  "set ylabel \"rel-L2 (0, bit-exact, drawn at %g)\"\n"
			  "set key outside bottom center horizontal\n"
			  "set xtics rotate by 30 right font \",8\"\n"
			  "set offsets 0.5, 0.5, 0, 0\nset lmargin 18\n",
			  f->rel, LOG_FLOOR / 3, LOG_FLOOR);
	if (nl > 40)
		ctq_strbuf_append(&body, "set xtics auto\nset xlabel \"layer index\"\n");
	ctq_strbuf_printf(&body, "set label 1 \"quantization error bound 5e-2 (gaussian)\" at graph 0.01, first 0.06 font \",8\" tc rgb \"#888888\"\n");
	ctq_strbuf_append(&body, "plot ");
	static const char *const colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd"};
	for (size_t j = 0; j < nb; j++) {
		ctq_strbuf_printf(&body,
				  "%s\"%s.dat\" using 1:%zu%s with linespoints pt 7 ps 0.8 lc rgb \"%s\" title \"quantization rel-L2 (%s)\", "
				  "\"%s.dat\" using 1:%zu with points pt 6 ps 1.2 lc rgb \"%s\" title \"kernel rel-L2 (%s)\"",
				  j ? ", " : "", name, 4 + 2 * j, nl > 40 ? "" : ":xtic(2)", colors[j],
				  be[j].name, name, 3 + 2 * j, colors[j], be[j].name);
	}
	ctq_strbuf_append(&body, ", 0.05 with lines dt 2 lc rgb \"#888888\" notitle\n");
	char caption[700];
	snprintf(caption, sizeof caption, "rel-L2 per layer, %s", f->rel);
	if (nl && nb && !data.oom && !body.oom)
		plot(r, name, 1000, 520, caption, body.data, data.data);
	ctq_strbuf_free(&data);
	ctq_strbuf_free(&body);
	free(ly);
	ctq_table_free(&t);
	return CTQ_OK;
}

/* ---- accuracy ---------------------------------------------------------------------- */

struct subject {
	char name[128];
	size_t n, k, kr;
	size_t a, b, c, d; /* reference (ref) vs candidate (new), stats/accuracy.h */
};

/* The gate ctq eval recorded in the manifest of the step in dir (eval.verdict,
 * written only with a reference model): a sentence under the table, and a
 * failed gate (inferior or inconclusive) fails a report that has no steps. */
static void eval_gate(struct rep *r, const char *dir)
{
	cJSON *m = step_manifest(r->dir, dir);
	if (!m)
		return;
	const cJSON *ev = ctq_json_get(m, "eval");
	const char *verdict = ctq_json_str_at(ev, "verdict", NULL);
	if (verdict) {
		bool ok = !strcmp(verdict, "non-inferior");
		char line[600];
		snprintf(line, sizeof line,
			 "Gate recorded by ctq eval: %s (margin %.3g points overall, %.3g per subject with "
			 "n >= %.0f; non-inferior only when the whole 95%% interval lies above -margin)%s.",
			 verdict, jnum(ev, "margin_points"), jnum(ev, "subject_margin_points"),
			 jnum(ev, "min_subject_n"), ok ? "" : ": FAILED");
		para(r, line);
		r->gates++;
		r->gates_failed += !ok;
	}
	cJSON_Delete(m);
}

static enum ctq_status eval_file(struct rep *r, const struct ctq_result_file *f)
{
	char path[1200];
	struct ctq_table t;
	enum ctq_status st = load_result(r, f, &t, path, sizeof path);
	if (st)
		return st;
	int cs = ctq_table_col(&t, "subject"), cc = ctq_table_col(&t, "correct");
	int cr = ctq_table_col(&t, "ref_correct"), cb = ctq_table_col(&t, "benchmark");
	int cp = ctq_table_col(&t, "protocol"), csh = ctq_table_col(&t, "shots");
	if (cs < 0 || cc < 0) {
		ctq_table_free(&t);
		return ctq_error_set(r->err, CTQ_ERR_PARSE, path, "has no subject or correct column");
	}
	struct subject *sj = calloc(t.n_rows + 2, sizeof *sj);
	if (!sj) {
		ctq_table_free(&t);
		return ctq_error_set(r->err, CTQ_ERR_NOMEM, path, "out of memory");
	}
	size_t ns = 0;
	bool have_ref = cr >= 0 && t.n_rows && *ctq_table_get(&t, 0, cr);
	struct subject all = {.name = "overall (micro)"};
	for (size_t i = 0; i < t.n_rows; i++) {
		const char *s = ctq_table_get(&t, i, cs);
		size_t j;
		for (j = 0; j < ns; j++)
			if (!strcmp(sj[j].name, s))
				break;
		if (j == ns)
			snprintf(sj[ns++].name, sizeof sj->name, "%s", s);
		bool ok = !strcmp(ctq_table_get(&t, i, cc), "true");
		bool okr = have_ref && !strcmp(ctq_table_get(&t, i, cr), "true");
		struct subject *x[2] = {&sj[j], &all};
		for (int z = 0; z < 2; z++) {
			x[z]->n++;
			x[z]->k += ok;
			x[z]->kr += okr;
			if (okr && ok)
				x[z]->a++;
			else if (okr)
				x[z]->b++;
			else if (ok)
				x[z]->c++;
			else
				x[z]->d++;
		}
	}
	char cand[300] = "candidate", ref[300] = "reference", v[300];
	if (step_option(r->dir, r->display, f->dir, "--model", v, sizeof v))
		snprintf(cand, sizeof cand, "candidate %s", v);
	if (step_option(r->dir, r->display, f->dir, "--ref-model", v, sizeof v))
		snprintf(ref, sizeof ref, "reference %s", v);
	char title[800];
	snprintf(title, sizeof title, "%s — %s, protocol %s, %s-shot: %zu questions in %zu subjects",
		 f->rel, cb >= 0 && t.n_rows ? ctq_table_get(&t, 0, cb) : "?",
		 cp >= 0 && t.n_rows ? ctq_table_get(&t, 0, cp) : "?",
		 csh >= 0 && t.n_rows ? ctq_table_get(&t, 0, csh) : "?", t.n_rows, ns);
	heading(r, 3, title);
	char line[800];
	snprintf(line, sizeof line, "%s%s%s.", cand, have_ref ? " against " : "", have_ref ? ref : "");
	para(r, line);
	static const char *const cols_ref[] = {"subject", "n", "candidate %", "reference %",
					       "delta (points)", "95% CI (Newcombe)", "right->wrong",
					       "wrong->right", "McNemar p", NULL};
	static const char *const cols_one[] = {"subject", "n", "accuracy %", "SE (points)", NULL};
	table_head(r, have_ref ? cols_ref : cols_one);
	double macro = 0, macro_r = 0;
	for (size_t j = 0; j <= ns; j++) {
		const struct subject *s = j < ns ? &sj[j] : &all;
		char a[32], b[32];
		row_begin(r);
		cell(r, s->name, j == ns ? "strong" : NULL);
		cellf(r, "num", "%zu", s->n);
		fmt_pct(a, sizeof a, s->n ? (double)s->k / (double)s->n : NAN);
		cell(r, a, "num");
		if (j < ns && s->n) {
			macro += (double)s->k / (double)s->n / (double)ns;
			macro_r += (double)s->kr / (double)s->n / (double)ns;
		}
		if (have_ref) {
			struct ctq_paired p;
			ctq_stats_paired(&p, s->a, s->b, s->c, s->d, CTQ_Z95);
			fmt_pct(b, sizeof b, p.acc_ref);
			cell(r, b, "num");
			cellf(r, p.diff < 0 ? "num bad" : "num", "%+.2f", 100 * p.diff);
			cellf(r, "num", "[%+.2f, %+.2f]", 100 * p.lo, 100 * p.hi);
			cellf(r, "num", "%zu", s->b);
			cellf(r, "num", "%zu", s->c);
			cellf(r, "num", "%.3g", p.p_mcnemar);
		} else {
			cellf(r, "num", "%.2f", 100 * ctq_stats_binom_se(s->k, s->n));
		}
		row_end(r);
	}
	table_end(r);
	snprintf(line, sizeof line, "Macro average (mean of %zu subject accuracies): %.2f%%%s%.2f%s.",
		 ns, 100 * macro, have_ref ? " candidate, " : "", have_ref ? 100 * macro_r : 0.0,
		 have_ref ? "% reference" : "");
	if (!have_ref)
		snprintf(line, sizeof line, "Macro average (mean of %zu subject accuracies): %.2f%%.", ns,
			 100 * macro);
	para(r, line);
	eval_gate(r, f->dir);

	struct ctq_strbuf data, body;
	ctq_strbuf_init(&data);
	ctq_strbuf_init(&body);
	ctq_strbuf_append(&data, "# index subject candidate reference delta lo hi\n");
	for (size_t j = 0; j < ns; j++) {
		const struct subject *s = &sj[j];
		struct ctq_paired p;
		ctq_stats_paired(&p, s->a, s->b, s->c, s->d, CTQ_Z95);
		ctq_strbuf_printf(&data, "%zu ", j);
		ctq_plot_quoted(&data, s->name);
		ctq_strbuf_printf(&data, " %.6f %.6f %.6f %.6f %.6f\n",
				  s->n ? 100.0 * (double)s->k / (double)s->n : NAN,
				  have_ref && s->n ? 100.0 * (double)s->kr / (double)s->n : NAN,
				  have_ref ? 100 * p.diff : NAN, have_ref ? 100 * p.lo : NAN,
				  have_ref ? 100 * p.hi : NAN);
	}
	char name[300];
	plot_name(name, sizeof name, "accuracy", f->dir);
	if (have_ref)
		ctq_strbuf_append(&body, "set multiplot layout 2,1\n");
	ctq_strbuf_printf(&body,
			  "set title \"accuracy per subject\"\nset ylabel \"accuracy %%\"\n"
			  "set yrange [0:105]\nset style fill solid 0.8 border -1\n"
			  "set boxwidth 0.35\nset xtics rotate by 30 right\n"
			  "set offsets 0.5, 0.5, 0, 0\nset lmargin 14\nset key tmargin horizontal center\n"
			  "plot \"%s.dat\" using ($1-0.18):3:xtic(2) with boxes lc rgb \"#1f77b4\" title \"candidate\"",
			  name);
	if (have_ref)
		ctq_strbuf_printf(&body,
				  ", \"%s.dat\" using ($1+0.18):4 with boxes lc rgb \"#aaaaaa\" title \"reference\"\n"
				  "set title \"candidate - reference, points (95%% CI, Newcombe)\"\n"
				  "set ylabel \"delta (points)\"\nset yrange [*:*]\nunset style\n"
				  "plot \"%s.dat\" using 1:5:6:7:xtic(2) with yerrorbars pt 7 lc rgb \"#d62728\" title \"delta\", "
				  "0 with lines lc rgb \"#555555\" notitle\nunset multiplot\n",
				  name, name);
	else
		ctq_strbuf_append(&body, "\n");
	char caption[700];
	snprintf(caption, sizeof caption, "accuracy per subject, %s", f->rel);
	if (ns && !data.oom && !body.oom)
		plot(r, name, 1000, have_ref ? 700 : 420, caption, body.data, data.data);
	ctq_strbuf_free(&data);
	ctq_strbuf_free(&body);
	free(sj);
	ctq_table_free(&t);
	return CTQ_OK;
}

/* ---- performance -------------------------------------------------------------------- */

struct perf_case {
	char label[400];
	char kind[32];    /* what the model is: "W8A8", "BF16", ... (model_kind) */
	char key[200];    /* backend, batch, input, output: pairs the two sides */
	char series_ttft[200], series_tps[200]; /* role/backend and the fixed other axis */
	double batch, input;
	double ttft[3];   /* median, min, max */
	double prefill, decode_ms, decode_tps; /* medians */
};

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median_of(double *v, size_t n)
{
	if (!n)
		return NAN;
	qsort(v, n, sizeof *v, cmp_d);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* What the checkpoint folder dir is, for labels: "W<w>A<a>" (the bits of
 * the first quantization config group; A16 without input activations) when
 * config.json has a quantization_config, else its dtype in capitals
 * ("bfloat16" -> "BF16"); "model" when config.json cannot be read. */
static void model_kind(const char *dir, char *buf, size_t cap)
{
	char path[1300];
	snprintf(path, sizeof path, "%s/config.json", dir);
	snprintf(buf, cap, "model");
	cJSON *c = NULL;
	if (!*dir || ctq_json_load_file(path, (size_t)16 << 20, NULL, &c, NULL))
		return;
	const cJSON *q = ctq_json_get(c, "quantization_config");
	if (cJSON_IsObject(q)) {
		const cJSON *g = ctq_json_get(q, "config_groups");
		g = cJSON_IsObject(g) ? g->child : NULL;
		const cJSON *w = ctq_json_get(ctq_json_get(g, "weights"), "num_bits");
		const cJSON *a = ctq_json_get(ctq_json_get(g, "input_activations"), "num_bits");
		if (cJSON_IsNumber(w))
			snprintf(buf, cap, "W%dA%d", (int)w->valuedouble, cJSON_IsNumber(a) ? (int)a->valuedouble : 16);
		else
			snprintf(buf, cap, "quantized");
	} else {
		const char *d = ctq_json_str_at(c, "torch_dtype", NULL);
		d = d ? d : ctq_json_str_at(c, "dtype", NULL);
		static const char *const names[][2] = {{"bfloat16", "BF16"}, {"float16", "FP16"},
						       {"float32", "FP32"}};
		for (size_t i = 0; d && i < sizeof names / sizeof *names; i++)
			if (!strcmp(d, names[i][0]))
				snprintf(buf, cap, "%s", names[i][1]);
	}
	cJSON_Delete(c);
}

static enum ctq_status bench_file(struct rep *r, const struct ctq_result_file *f,
				  struct perf_case **cases, size_t *n_cases, size_t *cap)
{
	char path[1200];
	struct ctq_table t;
	enum ctq_status st = load_result(r, f, &t, path, sizeof path);
	if (st)
		return st;
	static const char *const names[] = {"backend", "batch", "input_tokens", "output_tokens",
					    "ttft_ms", "prefill_tokens_per_s", "decode_ms_per_step",
					    "decode_tokens_per_s", "weight_bytes"};
	int c[9];
	for (int i = 0; i < 9; i++)
		if ((c[i] = ctq_table_col(&t, names[i])) < 0) {
			ctq_table_free(&t);
			return ctq_error_set(r->err, CTQ_ERR_PARSE, path, "has no column \"%s\"", names[i]);
		}
	/* With --ref-model one file holds both roles: a case is (role, backend,
	 * batch, input, output). */
	const int crole = ctq_table_col(&t, "role"), cmodel = ctq_table_col(&t, "model");
	/* The role (ref, new) is shown only where one file holds both. */
	bool two_roles = false;
	for (size_t i = 1; crole >= 0 && i < t.n_rows; i++)
		two_roles |= strcmp(ctq_table_get(&t, i, crole), ctq_table_get(&t, 0, crole)) != 0;
	char model[400] = "", v[300];
	if (step_option(r->dir, r->display, f->dir, "--model", v, sizeof v))
		snprintf(model, sizeof model, " — model %s", v);
	char title[900];
	snprintf(title, sizeof title, "%s%s", f->rel, model);
	heading(r, 3, title);
	static const char *const cols[] = {"model", "backend", "batch", "input", "output", "reps",
					   "TTFT ms median [min, max]", "TTFT cv",
					   "prefill tok/s", "decode ms/step", "decode tok/s",
					   "weights MB", NULL};
	table_head(r, cols);
	double *buf = malloc((t.n_rows + 1) * 4 * sizeof *buf);
	bool *done = calloc(t.n_rows + 1, sizeof *done);
	if (!buf || !done) {
		free(buf);
		free(done);
		ctq_table_free(&t);
		return ctq_error_set(r->err, CTQ_ERR_NOMEM, path, "out of memory");
	}
	for (size_t i = 0; i < t.n_rows && !st; i++) {
		if (done[i])
			continue;
		size_t n = 0;
		double *tt = buf, *pf = buf + t.n_rows, *dm = buf + 2 * t.n_rows, *dt = buf + 3 * t.n_rows;
		for (size_t j = i; j < t.n_rows; j++) {
			bool same = crole < 0 || !strcmp(ctq_table_get(&t, i, crole), ctq_table_get(&t, j, crole));
			for (int k = 0; k < 4 && same; k++)
				same = !strcmp(ctq_table_get(&t, i, c[k]), ctq_table_get(&t, j, c[k]));
			if (!same)
				continue;
			done[j] = true;
			tt[n] = ctq_table_num(&t, j, c[4]);
			pf[n] = ctq_table_num(&t, j, c[5]);
			dm[n] = ctq_table_num(&t, j, c[6]);
			dt[n] = ctq_table_num(&t, j, c[7]);
			n++;
		}
		struct ctq_sample_summary s;
		if ((st = ctq_sample_summarize(tt, n, &s, r->err)))
			break;
		double med_pf = median_of(pf, n), med_dm = median_of(dm, n), med_dt = median_of(dt, n);
		char kind[32];
		model_kind(ctq_table_get(&t, i, cmodel), kind, sizeof kind);
		const char *role = crole >= 0 ? ctq_table_get(&t, i, crole) : "";
		row_begin(r);
		cell(r, kind, "strong");
		if (two_roles)
			cellf(r, NULL, "%s (%s)", ctq_table_get(&t, i, c[0]), role);
		else
			cell(r, ctq_table_get(&t, i, c[0]), NULL);
		for (int k = 1; k < 4; k++)
			cell(r, ctq_table_get(&t, i, c[k]), "num");
		cellf(r, "num", "%zu", n);
		cellf(r, "num", "%.4g [%.4g, %.4g]", s.median, s.min, s.max);
		cellf(r, s.cv > 0.2 ? "num warn" : "num", "%.3g", s.cv);
		cellf(r, "num", "%.4g", med_pf);
		cellf(r, "num", "%.4g", med_dm);
		cellf(r, "num", "%.4g", med_dt);
		cellf(r, "num", "%.2f", ctq_table_num(&t, i, c[8]) / 1e6);
		row_end(r);
		if (*n_cases == *cap) {
			size_t nc = *cap ? 2 * *cap : 16;
			struct perf_case *pc = realloc(*cases, nc * sizeof *pc);
			if (!pc) {
				st = ctq_error_set(r->err, CTQ_ERR_NOMEM, path, "out of memory");
				break;
			}
			*cases = pc;
			*cap = nc;
		}
		struct perf_case *pc = &(*cases)[(*n_cases)++];
		snprintf(pc->kind, sizeof pc->kind, "%s", kind);
		snprintf(pc->key, sizeof pc->key, "%s b%s in%s out%s", ctq_table_get(&t, i, c[0]),
			 ctq_table_get(&t, i, c[1]), ctq_table_get(&t, i, c[2]), ctq_table_get(&t, i, c[3]));
		snprintf(pc->label, sizeof pc->label, "%s %s %s b%s in%s", *f->dir ? f->dir : "run", kind,
			 ctq_table_get(&t, i, c[0]), ctq_table_get(&t, i, c[1]), ctq_table_get(&t, i, c[2]));
		snprintf(pc->series_ttft, sizeof pc->series_ttft, "%s_%s%s%s_b%s_out%s",
			 *f->dir ? f->dir : "run", ctq_table_get(&t, i, c[0]), *role ? "_" : "", role,
			 ctq_table_get(&t, i, c[1]), ctq_table_get(&t, i, c[3]));
		snprintf(pc->series_tps, sizeof pc->series_tps, "%s_%s%s%s_in%s_out%s",
			 *f->dir ? f->dir : "run", ctq_table_get(&t, i, c[0]), *role ? "_" : "", role,
			 ctq_table_get(&t, i, c[2]), ctq_table_get(&t, i, c[3]));
		pc->batch = ctq_table_num(&t, i, c[1]);
		pc->input = ctq_table_num(&t, i, c[2]);
		pc->ttft[0] = s.median;
		pc->ttft[1] = s.min;
		pc->ttft[2] = s.max;
		pc->prefill = med_pf;
		pc->decode_ms = med_dm;
		pc->decode_tps = med_dt;
	}
	table_end(r);
	free(buf);
	free(done);
	ctq_table_free(&t);
	return st;
}

/* W8A8 / BF16: each quantized case beside the BF16 case of the same
 * backend, batch, input and output length (the first of each), as ratios of
 * the medians: below 1 for TTFT and above 1 for throughput is W8A8 faster. */
static void ratio_table(struct rep *r, const struct perf_case *pc, size_t n)
{
	bool head = false;
	for (size_t i = 0; i < n; i++) {
		if (pc[i].kind[0] != 'W')
			continue;
		size_t j;
		for (j = 0; j < n; j++)
			if (!strcmp(pc[j].kind, "BF16") && !strcmp(pc[j].key, pc[i].key))
				break;
		if (j == n)
			continue;
		if (!head) {
			heading(r, 3, "W8A8 / BF16 (ratio of medians)");
			static const char *const cols[] = {"case", "quantized", "TTFT ratio", "prefill tok/s ratio",
							   "decode tok/s ratio", NULL};
			table_head(r, cols);
			head = true;
		}
		row_begin(r);
		cell(r, pc[i].key, NULL);
		cellf(r, NULL, "%s / %s", pc[i].kind, pc[j].kind);
		cellf(r, "num", "%.3g", pc[i].ttft[0] / pc[j].ttft[0]);
		cellf(r, "num", "%.3g", pc[i].prefill / pc[j].prefill);
		cellf(r, "num", "%.3g", pc[i].decode_tps / pc[j].decode_tps);
		row_end(r);
	}
	if (head) {
		table_end(r);
		para(r, "A TTFT ratio below 1 and a throughput ratio above 1 mean the quantized model is faster.");
	}
}

static void perf_plots(struct rep *r, const struct perf_case *pc, size_t n)
{
	if (!n)
		return;
	struct ctq_strbuf data, body;
	ctq_strbuf_init(&data);
	ctq_strbuf_init(&body);
	ctq_strbuf_append(&data, "# index case ttft_median ttft_min ttft_max prefill_tps decode_ms decode_tps\n");
	for (size_t i = 0; i < n; i++) {
		ctq_strbuf_printf(&data, "%zu ", i);
		ctq_plot_quoted(&data, pc[i].label);
		ctq_strbuf_printf(&data, " %.9g %.9g %.9g %.9g %.9g %.9g\n", pc[i].ttft[0], pc[i].ttft[1],
				  pc[i].ttft[2], pc[i].prefill, pc[i].decode_ms, pc[i].decode_tps);
	}
	ctq_strbuf_append(&body,
			  "set multiplot layout 2,1\n"
			  "set style fill solid 0.8 border -1\nset boxwidth 0.6\n"
			  "set xtics rotate by 30 right font \",8\"\nset offsets 0.5, 0.5, 0, 0\n"
			  "set bmargin 9\nset lmargin 22\nset yrange [0:*]\nset ytics\nset mytics 2\n"
			  "set title \"time to first token (median, min-max bars)\"\nset ylabel \"TTFT ms\"\n"
			  "plot \"perf.dat\" using 1:3:4:5:(0.6):xtic(2) with boxerrorbars lc rgb \"#1f77b4\" notitle\n"
			  "set title \"throughput (median)\"\nset ylabel \"tokens/s\"\n"
			  "set boxwidth 0.35\nset key inside top right vertical opaque box\n"
			  "set offsets 0.5, 0.5, graph 0.2, 0\n"
			  "plot \"perf.dat\" using ($1-0.18):6:xtic(2) with boxes lc rgb \"#2ca02c\" title \"prefill tok/s\", "
			  "\"perf.dat\" using ($1+0.18):8 with boxes lc rgb \"#ff7f0e\" title \"decode tok/s\"\n"
			  "unset multiplot\n");
	if (!data.oom && !body.oom)
		plot(r, "perf", 1000, 900, "TTFT and throughput per benchmark case", body.data, data.data);
	ctq_strbuf_free(&data);
	ctq_strbuf_free(&body);
}

/* One side of the scaling plot: for each series (a name of pc) with at
 * least two cases, a data block of (x, y) sorted by x, and its plot clause.
 * Returns the number of blocks written (their indices continue from
 * *index). */
static size_t scaling_blocks(const struct perf_case *pc, size_t n, bool ttft_side,
			     struct ctq_strbuf *data, struct ctq_strbuf *clauses, size_t *index)
{
	size_t blocks = 0;
	bool *seen = calloc(n ? n : 1, sizeof *seen);
	size_t *m = malloc((n ? n : 1) * sizeof *m);
	if (!seen || !m) {
		free(seen);
		free(m);
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		if (seen[i])
			continue;
		const char *name = ttft_side ? pc[i].series_ttft : pc[i].series_tps;
		size_t k = 0;
		for (size_t j = i; j < n; j++)
			if (!strcmp(name, ttft_side ? pc[j].series_ttft : pc[j].series_tps)) {
				seen[j] = true;
				m[k++] = j;
			}
		if (k < 2)
			continue;
		/* Insertion sort by x (input length or batch). */
		for (size_t a = 1; a < k; a++)
			for (size_t b = a; b > 0; b--) {
				double xb = ttft_side ? pc[m[b]].input : pc[m[b]].batch;
				double xa = ttft_side ? pc[m[b - 1]].input : pc[m[b - 1]].batch;
				if (xa <= xb)
					break;
				size_t t = m[b];
				m[b] = m[b - 1];
				m[b - 1] = t;
			}
		ctq_strbuf_append(data, "# ");
		ctq_strbuf_append(data, name);
		ctq_strbuf_append(data, ttft_side ? "\n# input_tokens ttft_ms_median\n"
						  : "\n# batch decode_tokens_per_s prefill_tokens_per_s\n");
		for (size_t a = 0; a < k; a++) {
			const struct perf_case *c = &pc[m[a]];
			if (ttft_side)
				ctq_strbuf_printf(data, "%.9g %.9g\n", c->input, c->ttft[0]);
			else
				ctq_strbuf_printf(data, "%.9g %.9g %.9g\n", c->batch, c->decode_tps, c->prefill);
		}
		ctq_strbuf_append(data, "\n\n");
		ctq_strbuf_printf(clauses, "%s\"perf_scaling.dat\" index %zu using 1:2 with linespoints pt 7 title ",
				  blocks ? ", " : "", *index);
		ctq_plot_quoted(clauses, name);
		(*index)++;
		blocks++;
	}
	free(seen);
	free(m);
	return blocks;
}

/* TTFT against input length (one line per role, backend and batch) and
 * decode throughput against batch (one per role, backend and input), the
 * two views bench model's cases support; drawn only where a series has two
 * or more points. */
static void scaling_plots(struct rep *r, const struct perf_case *pc, size_t n)
{
	struct ctq_strbuf data, left, right, body;
	ctq_strbuf_init(&data);
	ctq_strbuf_init(&left);
	ctq_strbuf_init(&right);
	ctq_strbuf_init(&body);
	size_t index = 0;
	size_t nl = scaling_blocks(pc, n, true, &data, &left, &index);
	size_t nr = scaling_blocks(pc, n, false, &data, &right, &index);
	if (nl || nr) {
		ctq_strbuf_printf(&body, "set multiplot layout 1,%d\nset key bottom right font \",8\"\n"
					 "set logscale x 2\nset grid\n", nl && nr ? 2 : 1);
		if (nl)
			ctq_strbuf_printf(&body, "set title \"TTFT against input length (median)\"\n"
						 "set xlabel \"input tokens\"\nset ylabel \"TTFT ms\"\n"
						 "set logscale y\nplot %s\nunset logscale y\n",
					  ctq_strbuf_str(&left));
		if (nr)
			ctq_strbuf_printf(&body, "set title \"decode throughput against batch (median)\"\n"
						 "set xlabel \"batch (sequences)\"\nset ylabel \"decode tokens/s\"\n"
						 "plot %s\n",
					  ctq_strbuf_str(&right));
		ctq_strbuf_append(&body, "unset multiplot\n");
		if (!data.oom && !body.oom && !left.oom && !right.oom)
			plot(r, "perf_scaling", nl && nr ? 1200 : 700, 500,
			     "TTFT against input length and decode throughput against batch", body.data,
			     data.data);
	}
	ctq_strbuf_free(&data);
	ctq_strbuf_free(&left);
	ctq_strbuf_free(&right);
	ctq_strbuf_free(&body);
}

/* ---- serving load ------------------------------------------------------------------ */

/* A ctq bench serve run: the summary its manifest holds (throughput and
 * percentiles) and the request statuses of bench_serve.csv. */
static enum ctq_status serve_file(struct rep *r, const struct ctq_result_file *f)
{
	char path[1200];
	struct ctq_table t;
	enum ctq_status st = load_result(r, f, &t, path, sizeof path);
	if (st)
		return st;
	int cs = ctq_table_col(&t, "status");
	if (cs < 0) {
		ctq_table_free(&t);
		return ctq_error_set(r->err, CTQ_ERR_PARSE, path, "has no status column");
	}
	size_t ok = 0;
	for (size_t i = 0; i < t.n_rows; i++)
		ok += !strcmp(ctq_table_get(&t, i, cs), "ok");
	const size_t n = t.n_rows;
	ctq_table_free(&t);
	r->serve_errors += n - ok;
	cJSON *m = step_manifest(r->dir, f->dir);
	const cJSON *sv = ctq_json_get(m, "bench_serve");
	char line[900];
	snprintf(line, sizeof line, "%s — %s on %s", f->rel, ctq_json_str_at(sv, "model", "?"),
		 ctq_json_str_at(sv, "device", "?"));
	heading(r, 3, line);
	snprintf(line, sizeof line,
		 "%zu requests of %.0f + %.0f tokens, %s arrival, concurrency %.0f, %.0f KV slots of %.0f "
		 "positions, %.0f tokens per forward call: %zu served, %zu failed%s.",
		 n, jnum(sv, "input_tokens"), jnum(sv, "output_tokens"),
		 ctq_json_str_at(sv, "arrival", "?"), jnum(sv, "concurrency"), jnum(sv, "max_batch"),
		 jnum(sv, "cache_len"), jnum(sv, "max_tokens"), ok, n - ok,
		 n - ok ? " (FAILED: every request must be served)" : "");
	para(r, line);
	static const char *const cols[] = {"total s", "requests/s", "output tokens/s",
					   "tokens/s through the model", "forward calls", NULL};
	table_head(r, cols);
	row_begin(r);
	cellf(r, "num", "%.3f", jnum(sv, "total_s"));
	cellf(r, "num", "%.2f", jnum(sv, "requests_per_s"));
	cellf(r, "num", "%.1f", jnum(sv, "output_tokens_per_s"));
	cellf(r, "num", "%.1f", jnum(sv, "tokens_per_s"));
	cellf(r, "num", "%.0f", jnum(sv, "forward_calls"));
	row_end(r);
	table_end(r);
	static const char *const pcols[] = {"ms", "mean", "p50", "p90", "p99", NULL};
	static const char *const dists[] = {"ttft_ms", "latency_ms", "tpot_ms", "queue_ms"};
	table_head(r, pcols);
	for (size_t d = 0; d < sizeof dists / sizeof *dists; d++) {
		const cJSON *j = ctq_json_get(sv, dists[d]);
		row_begin(r);
		cell(r, dists[d], NULL);
		static const char *const k[] = {"mean", "p50", "p90", "p99"};
		for (int i = 0; i < 4; i++)
			cellf(r, "num", "%.3f", jnum(j, k[i]));
		row_end(r);
	}
	table_end(r);
	cJSON_Delete(m);
	return CTQ_OK;
}

/* The points of a shape where cuBLASLt refused the shape, with its note. */
static bool i8_note(const struct ctq_gemm_row *rows, size_t n, const char *shape, char *buf, size_t cap)
{
	size_t len = 0;
	const char *note = NULL;
	for (size_t i = 0; i < n; i++) {
		const struct ctq_gemm_row *x = &rows[i];
		if (x->impl != CTQ_GEMM_I8 || strcmp(x->shape, shape) || !isnan(x->time_us_median))
			continue;
		if (!len)
			len = (size_t)snprintf(buf, cap, "cublaslt_i8 not timed at M =");
		if (len < cap)
			len += (size_t)snprintf(buf + len, cap - len, " %lld", (long long)x->M);
		note = x->note;
	}
	if (len && len < cap)
		snprintf(buf + len, cap - len, " (%s).", note && *note ? note : "no note");
	return len > 0;
}

/* bench_gemm.csv (ctq bench gemm, bench/gemm.h): how it was timed,
 * the points whose ctq outputs differ from the reference (a failure), the
 * targets per shape as pass / miss, a table and a TOPS-against-M plot per
 * shape. */
static enum ctq_status gemm_file(struct rep *r, const struct ctq_result_file *f)
{
	char path[1200], line[1200];
	snprintf(path, sizeof path, "%s/%s", r->dir, f->rel);
	struct ctq_gemm_row *rows = NULL;
	size_t n = 0, nt = 0;
	struct ctq_gemm_target *t = NULL;
	enum ctq_status st = ctq_gemm_rows_load(path, &rows, &n, r->err);
	if (st || (st = ctq_gemm_targets(rows, n, &t, &nt, r->err))) {
		free(rows);
		return st;
	}
	cJSON *m = step_manifest(r->dir, f->dir);
	const cJSON *g = ctq_json_get(m, "bench_gemm");
	snprintf(line, sizeof line, "%s — %s", f->rel, ctq_json_str_at(g, "device", "unknown device"));
	heading(r, 3, line);
	const cJSON *pk = ctq_json_get(g, "peaks"), *me = ctq_json_get(g, "method");
	char tops[32] = "unknown", gbps[32] = "unknown";
	if (!isnan(jnum(pk, "int8_dense_tops")))
		snprintf(tops, sizeof tops, "%.0f", jnum(pk, "int8_dense_tops"));
	if (!isnan(jnum(pk, "hbm_gbps")))
		snprintf(gbps, sizeof gbps, "%.0f", jnum(pk, "hbm_gbps"));
	snprintf(line, sizeof line,
		 "Peaks: INT8 dense %s TOPS, HBM %s GB/s (%s). Per-call times from CUDA graphs of "
		 "consecutive calls rotating through buffer copies that touch >= %gx the L2; %g samples "
		 "after %g warm-up launches; median, min and cv. Every point was checked bit-exact against "
		 "the CPU reference on %g rows before timing. Targets are held by ctq_gemm (the GEMM with "
		 "its fused epilogue) and ctq_quantize; %% of peak and speedups are against the INT8 peak "
		 "and cuBLAS BF16.",
		 tops, gbps, ctq_json_str_at(pk, "source", "unknown"), jnum(me, "l2_factor"),
		 jnum(me, "samples"), jnum(me, "warmup"), jnum(me, "check_rows"));
	para(r, line);
	size_t failed = 0;
	for (size_t i = 0; i < n; i++)
		if (ctq_gemm_impl_is_ctq(rows[i].impl) && !strcmp(rows[i].check, "fail")) {
			if (!failed++)
				snprintf(line, sizeof line, "FAILED: %s M=%lld %s differs from the reference (%s).",
					 rows[i].shape, (long long)rows[i].M, ctq_gemm_impl_name(rows[i].impl),
					 rows[i].note);
		}
	if (failed) {
		r->gemm_failed += failed;
		para(r, line);
	}

	/* Targets: one row per target, one column per shape. */
	const char **shapes = calloc(n + 1, sizeof *shapes);
	size_t ns = 0;
	for (size_t i = 0; shapes && i < n; i++) {
		size_t j = 0;
		while (j < ns && strcmp(shapes[j], rows[i].shape))
			j++;
		if (j == ns)
			shapes[ns++] = rows[i].shape;
	}
	const char **cols = calloc(ns + 3, sizeof *cols);
	if (!shapes || !cols) {
		free(shapes);
		free(cols);
		free(t);
		free(rows);
		cJSON_Delete(m);
		return ctq_error_set(r->err, CTQ_ERR_NOMEM, path, "out of memory");
	}
	cols[0] = "target";
	cols[1] = "all shapes";
	for (size_t s = 0; s < ns; s++)
		cols[s + 2] = shapes[s];
	table_head(r, cols);
	for (int id = 0; id < CTQ_GEMM_TGT_COUNT; id++) {
		const char *wd, *wsh;
		enum ctq_gemm_verdict v = ctq_gemm_target_overall(t, nt, (enum ctq_gemm_target_id)id, &wd, &wsh);
		static const char *const cls[] = {"passed", "failed", "skipped"};
		row_begin(r);
		cell(r, ctq_gemm_target_text((enum ctq_gemm_target_id)id), NULL);
		cell(r, ctq_gemm_verdict_name(v), cls[v]);
		for (size_t s = 0; s < ns; s++)
			for (size_t k = 0; k < nt; k++)
				if ((int)t[k].id == id && !strcmp(t[k].shape, shapes[s]))
					cellf(r, cls[t[k].verdict], "%s: %s", ctq_gemm_verdict_name(t[k].verdict),
					      t[k].detail);
		row_end(r);
	}
	table_end(r);

	static const char *const pcols[] = {"M", "ctq_w8a8 us", "ctq_gemm us", "ctq_gemm TOPS", "% INT8 peak",
					    "% HBM (int8 weights)", "cv", "cublas_bf16 us", "speedup vs BF16",
					    "cublaslt_i8 us", "ctq_quantize us", "quantize % HBM", NULL};
	for (size_t s = 0; s < ns; s++) {
		const struct ctq_gemm_row *any = NULL;
		for (size_t i = 0; i < n && !any; i++)
			if (!strcmp(rows[i].shape, shapes[s]))
				any = &rows[i];
		snprintf(line, sizeof line, "%s: K=%lld, N=%lld", shapes[s], (long long)any->K, (long long)any->N);
		heading(r, 4, line);
		table_head(r, pcols);
		/* Points in M order; the five rows of a point share shape and M. */
		int64_t last = 0;
		for (;;) {
			int64_t next = INT64_MAX;
			for (size_t i = 0; i < n; i++)
				if (!strcmp(rows[i].shape, shapes[s]) && rows[i].M > last && rows[i].M < next)
					next = rows[i].M;
			if (next == INT64_MAX)
				break;
			last = next;
			const struct ctq_gemm_row *p[CTQ_GEMM_IMPL_COUNT] = {0};
			for (size_t i = 0; i < n; i++)
				if (!strcmp(rows[i].shape, shapes[s]) && rows[i].M == next)
					p[rows[i].impl] = &rows[i];
			char v[12][48];
#define G(i, field) (p[i] ? p[i]->field : NAN)
			snprintf(v[0], sizeof v[0], "%lld", (long long)next);
			fmt_g(v[1], sizeof v[1], G(CTQ_GEMM_W8A8, time_us_median));
			fmt_g(v[2], sizeof v[2], G(CTQ_GEMM_GEMM, time_us_median));
			fmt_g(v[3], sizeof v[3], G(CTQ_GEMM_GEMM, tops));
			fmt_g(v[4], sizeof v[4], G(CTQ_GEMM_GEMM, pct_int8_peak));
			fmt_g(v[5], sizeof v[5], G(CTQ_GEMM_GEMM, pct_hbm_weights));
			fmt_g(v[6], sizeof v[6], G(CTQ_GEMM_GEMM, time_cv));
			fmt_g(v[7], sizeof v[7], G(CTQ_GEMM_BF16, time_us_median));
			fmt_g(v[8], sizeof v[8], G(CTQ_GEMM_GEMM, speedup_vs_bf16));
			fmt_g(v[9], sizeof v[9], G(CTQ_GEMM_I8, time_us_median));
			fmt_g(v[10], sizeof v[10], G(CTQ_GEMM_QUANTIZE, time_us_median));
			fmt_g(v[11], sizeof v[11], G(CTQ_GEMM_QUANTIZE, pct_hbm));
#undef G
			bool bad = p[CTQ_GEMM_GEMM] && !strcmp(p[CTQ_GEMM_GEMM]->check, "fail");
			row_begin(r);
			for (int c = 0; c < 12; c++)
				cell(r, c == 2 && bad ? "FAIL" : v[c], c == 2 && bad ? "bad" : "num");
			row_end(r);
		}
		table_end(r);
		if (i8_note(rows, n, shapes[s], line, sizeof line))
			para(r, line);
		struct ctq_strbuf body, data;
		ctq_strbuf_init(&body);
		ctq_strbuf_init(&data);
		char name[300], base[200];
		ctq_gemm_plot_name(base, sizeof base, shapes[s]);
		plot_name(name, sizeof name, base, f->dir);
		snprintf(line, sizeof line, "%s (K=%lld, N=%lld): TOPS against M (dashed: INT8 peak)", shapes[s],
			 (long long)any->K, (long long)any->N);
		if (ctq_gemm_plot(rows, n, shapes[s], name, jnum(pk, "int8_dense_tops"), &body, &data) &&
		    !body.oom && !data.oom)
			plot(r, name, 900, 520, line, body.data, data.data);
		ctq_strbuf_free(&body);
		ctq_strbuf_free(&data);
	}
	free(shapes);
	free(cols);
	free(t);
	free(rows);
	cJSON_Delete(m);
	return CTQ_OK;
}

/* ---- environment, steps, provenance ------------------------------------------------- */

static void kv(struct rep *r, struct ctq_strbuf *mdb, struct ctq_strbuf *hb, const char *k,
	       const char *v)
{
	ctq_strbuf_append(mdb, "| ");
	md(mdb, k);
	ctq_strbuf_append(mdb, " | ");
	md(mdb, v);
	ctq_strbuf_append(mdb, " |\n");
	ctq_strbuf_append(hb, "<tr><th>");
	h(hb, k);
	ctq_strbuf_append(hb, "</th><td>");
	h(hb, v);
	ctq_strbuf_append(hb, "</td></tr>\n");
	(void)r;
}

static void environment(struct rep *r, struct ctq_strbuf *mdb, struct ctq_strbuf *hb)
{
	const cJSON *m = r->m, *host = ctq_json_get(m, "host");
	char buf[1024];
	ctq_strbuf_append(mdb, "## Environment\n\n| | |\n|---|---|\n");
	ctq_strbuf_append(hb, "<h2>Environment</h2>\n<table class=\"kv\">\n");
	const cJSON *dirty = ctq_json_get(ctq_json_get(m, "git"), "dirty");
	snprintf(buf, sizeof buf, "%s%s", jstr(m, "git.revision"),
		 cJSON_IsTrue(dirty) ? " (dirty working tree)" : "");
	kv(r, mdb, hb, "revision", buf);
	if (ctq_json_get(m, "ctq")) {
		snprintf(buf, sizeof buf, "%s (built from %s)", jstr(m, "ctq.version"),
			 jstr(m, "ctq.build_revision"));
		kv(r, mdb, hb, "ctq", buf);
	}
	snprintf(buf, sizeof buf, "%s to %s (%.1f s)", jstr(m, "started_utc"), jstr(m, "ended_utc"),
		 jnum(m, "wall_time_s"));
	kv(r, mdb, hb, "time (UTC)", buf);
	snprintf(buf, sizeof buf, "%s, %s %s", jstr(host, "name"), jstr(host, "os"), jstr(host, "kernel"));
	kv(r, mdb, hb, "host", buf);
	double cores = jnum(host, "cpu_cores"), logical = jnum(host, "cpu_logical");
	if (isnan(logical))
		logical = jnum(host, "cpus_online");
	const char *cpu = ctq_json_str_at(host, "cpu_model", NULL);
	snprintf(buf, sizeof buf, "%s; %.0f cores, %.0f logical; governor %s",
		 cpu ? cpu : jstr(host, "cpu"), isnan(cores) ? logical : cores, logical,
		 jstr(host, "cpu_governor"));
	kv(r, mdb, hb, "CPU", buf);
	double mem = jnum(host, "memory_bytes");
	snprintf(buf, sizeof buf, isnan(mem) ? "unknown" : "%.1f GiB", mem / 1073741824.0);
	kv(r, mdb, hb, "memory", buf);
	const cJSON *b = ctq_json_get(m, "build");
	if (b)
		snprintf(buf, sizeof buf, "%s; CUDA %s%s", jstr(b, "compiler"),
			 cJSON_IsTrue(ctq_json_get(b, "cuda")) ? "on" : "off",
			 cJSON_IsTrue(ctq_json_get(b, "sanitizers")) ? "; sanitizers" : "");
	else
		snprintf(buf, sizeof buf, "not recorded (this manifest predates or bypasses ctq run)");
	kv(r, mdb, hb, "compiler", buf);
	kv(r, mdb, hb, "build flags", jstr(b, "flags"));
	const cJSON *cu = ctq_json_get(m, "cuda");
	if (cJSON_IsObject(cu))
		snprintf(buf, sizeof buf, "runtime %s, cuBLAS %s, driver API %s; driver %s",
			 jstr(cu, "runtime_version"), jstr(cu, "cublas_version"),
			 jstr(cu, "driver_api_version"), jstr(m, "gpu_driver_version"));
	else
		snprintf(buf, sizeof buf, "%s", cJSON_IsString(cu) ? cu->valuestring : "unknown");
	kv(r, mdb, hb, "CUDA", buf);
	const cJSON *gpus = ctq_json_get(m, "gpus"), *g;
	if (cJSON_IsArray(gpus) && cJSON_GetArraySize(gpus) > 0) {
		cJSON_ArrayForEach(g, gpus)
		{
			char k[32], sms[32];
			const cJSON *s = ctq_json_get(g, "sms");
			snprintf(sms, sizeof sms, cJSON_IsNumber(s) ? "%.0f" : "?",
				 cJSON_IsNumber(s) ? s->valuedouble : 0);
			snprintf(k, sizeof k, "GPU %.0f", jnum(g, "index"));
			snprintf(buf, sizeof buf,
				 "%s, sm %s, %s SMs, %.0f MiB; SM clock %.0f MHz (max %.0f, application %.0f), "
				 "memory clock %.0f MHz (max %.0f); power limit %.0f W; %.0f C, %s; ECC %s, "
				 "persistence %s, MIG %s; bus %s",
				 jstr(g, "name"), jstr(g, "compute_capability"), sms,
				 jnum(g, "memory_total_mib"), jnum(g, "clock_sm_mhz"),
				 jnum(g, "clock_sm_max_mhz"), jnum(g, "clock_sm_application_mhz"),
				 jnum(g, "clock_mem_mhz"), jnum(g, "clock_mem_max_mhz"),
				 jnum(g, "power_limit_w"), jnum(g, "temperature_c"), jstr(g, "pstate"),
				 jstr(g, "ecc"), jstr(g, "persistence_mode"), jstr(g, "mig_mode"),
				 jstr(g, "pci_bus_id"));
			kv(r, mdb, hb, k, buf);
		}
	} else {
		kv(r, mdb, hb, "GPUs", cJSON_IsString(gpus) ? gpus->valuestring : "not recorded");
	}
	const cJSON *plan = ctq_json_get(m, "plan");
	if (plan) {
		snprintf(buf, sizeof buf, "%s (%s, sha256 %.16s...)", jstr(plan, "name"),
			 jstr(plan, "file"), jstr(plan, "sha256"));
		kv(r, mdb, hb, "plan", buf);
	}
	const cJSON *seeds = ctq_json_get(m, "seeds");
	if (cJSON_IsObject(seeds) && seeds->child) {
		struct ctq_strbuf s;
		ctq_strbuf_init(&s);
		for (const cJSON *e = seeds->child; e; e = e->next)
			if (cJSON_IsString(e))
				ctq_strbuf_printf(&s, "%s%s %s", s.len ? "; " : "", e->string, e->valuestring);
		kv(r, mdb, hb, "seeds", ctq_strbuf_str(&s));
		ctq_strbuf_free(&s);
	}
	const char *argv0 = NULL;
	struct ctq_strbuf cl;
	ctq_strbuf_init(&cl);
	/* The bench families record their argv from the family name on. */
	const char *cmd = ctq_json_str_at(m, "command", "");
	const char *lead = !strncmp(cmd, "bench-", 6) ? "ctq bench " : "ctq ";
	const cJSON *a;
	cJSON_ArrayForEach(a, ctq_json_get(m, "argv"))
	{
		if (cJSON_IsString(a))
			ctq_strbuf_printf(&cl, "%s%s", cl.len ? " " : lead, a->valuestring);
		argv0 = "";
	}
	if (argv0)
		kv(r, mdb, hb, "command", ctq_strbuf_str(&cl));
	ctq_strbuf_free(&cl);
	ctq_strbuf_append(mdb, "\n");
	ctq_strbuf_append(hb, "</table>\n");
}

static void provenance(struct rep *r)
{
	const cJSON *cks = ctq_json_get(r->m, "checkpoints"), *c;
	if (!cJSON_IsArray(cks) || !cJSON_GetArraySize(cks))
		return;
	heading(r, 2, "Checkpoints");
	static const char *const cols[] = {"path", "used by", "quantization", "quantization_config sha256",
					   "tensor files (sha256)", NULL};
	table_head(r, cols);
	cJSON_ArrayForEach(c, cks)
	{
		struct ctq_strbuf files, users;
		ctq_strbuf_init(&files);
		ctq_strbuf_init(&users);
		const cJSON *f, *u;
		cJSON_ArrayForEach(f, ctq_json_get(c, "files"))
			ctq_strbuf_printf(&files, "%s%s %.0f B %.16s...", files.len ? "; " : "",
					  jstr(f, "name"), jnum(f, "bytes"), jstr(f, "sha256"));
		cJSON_ArrayForEach(u, ctq_json_get(c, "used_by"))
			if (cJSON_IsString(u))
				ctq_strbuf_printf(&users, "%s%s", users.len ? ", " : "", u->valuestring);
		row_begin(r);
		cell(r, jstr(c, "path"), NULL);
		cell(r, ctq_strbuf_str(&users), NULL);
		cell(r, jstr(c, "quant_method"), NULL);
		cell(r, jstr(c, "quantization_config_sha256"), "mono");
		cell(r, ctq_strbuf_str(&files), "mono");
		row_end(r);
		ctq_strbuf_free(&files);
		ctq_strbuf_free(&users);
	}
	table_end(r);
	const cJSON *err = ctq_json_get(r->m, "checkpoint_errors");
	if (cJSON_IsArray(err))
		cJSON_ArrayForEach(c, err) if (cJSON_IsString(c)) para(r, c->valuestring);
}

/* The step table; returns the verdict ("PASS"/"FAIL") or NULL without steps. */
static const char *steps(struct rep *r, struct ctq_strbuf *mdb, struct ctq_strbuf *hb,
			 size_t counts[4])
{
	const cJSON *st = ctq_json_get(r->m, "steps"), *s;
	if (!cJSON_IsArray(st))
		return NULL;
	memset(counts, 0, 4 * sizeof *counts);
	ctq_strbuf_append(mdb, "## Verdicts\n\n| step | command | status | reason | wall s |\n|---|---|---|---|---:|\n");
	ctq_strbuf_append(hb, "<h2>Verdicts</h2>\n<table><tr><th>step</th><th>command</th><th>status</th>"
			      "<th>reason</th><th>wall s</th></tr>\n");
	cJSON_ArrayForEach(s, st)
	{
		const char *status = jstr(s, "status");
		static const char *const names[4] = {"passed", "failed", "skipped", "error"};
		for (int k = 0; k < 4; k++)
			counts[k] += !strcmp(status, names[k]);
		char cmd[512] = "ctq";
		const cJSON *av = ctq_json_get(s, "argv"), *a;
		size_t len = 3;
		cJSON_ArrayForEach(a, av)
		{
			if (cJSON_IsString(a) && len + strlen(a->valuestring) + 2 < sizeof cmd)
				len += (size_t)snprintf(cmd + len, sizeof cmd - len, "%s%s", len ? " " : "",
							a->valuestring);
		}
		const char *reason = ctq_json_str_at(s, "reason", "");
		double wall = jnum(s, "wall_time_s");
		ctq_strbuf_append(mdb, "| ");
		md(mdb, jstr(s, "id"));
		ctq_strbuf_append(mdb, " | `");
		md(mdb, cmd);
		ctq_strbuf_printf(mdb, "` | %s%s%s | ", strcmp(status, "passed") ? "**" : "", status,
				  strcmp(status, "passed") ? "**" : "");
		md(mdb, reason);
		ctq_strbuf_printf(mdb, " | %.2f |\n", wall);
		ctq_strbuf_append(hb, "<tr><td>");
		h(hb, jstr(s, "id"));
		ctq_strbuf_append(hb, "</td><td class=\"mono\">");
		h(hb, cmd);
		ctq_strbuf_printf(hb, "</td><td class=\"st %s\">%s</td><td>", status, status);
		h(hb, reason);
		ctq_strbuf_printf(hb, "</td><td class=\"num\">%.2f</td></tr>\n", wall);
	}
	ctq_strbuf_append(mdb, "\n");
	ctq_strbuf_append(hb, "</table>\n");
	return counts[1] || counts[3] ? "FAIL" : "PASS";
}

bool ctq_report_cpu_only(const cJSON *manifest)
{
	const cJSON *st = ctq_json_get(manifest, "steps"), *s;
	if (!cJSON_IsArray(st))
		return false;
	cJSON_ArrayForEach(s, st)
	{
		const char *needs = ctq_json_str_at(s, "needs", ""), *status = ctq_json_str_at(s, "status", "");
		if (!strcmp(needs, "gpu") && strcmp(status, "skipped") != 0)
			return false;
	}
	return true;
}

/* Tails of the logs of steps that did not pass. */
static void failed_logs(struct rep *r)
{
	const cJSON *st = ctq_json_get(r->m, "steps"), *s;
	cJSON_ArrayForEach(s, st)
	{
		const char *status = jstr(s, "status"), *log = ctq_json_str_at(s, "log", NULL);
		if ((strcmp(status, "failed") && strcmp(status, "error")) || !log)
			continue;
		char path[1200];
		snprintf(path, sizeof path, "%s/%s", r->dir, log);
		char *text = NULL;
		size_t n = 0;
		if (ctq_file_read(path, (size_t)16 << 20, &text, &n, NULL))
			continue;
		size_t start = n > 3000 ? n - 3000 : 0;
		while (start > 0 && start < n && text[start - 1] != '\n')
			start++;
		char title[300];
		snprintf(title, sizeof title, "Log of step %s (%s, last lines)", jstr(s, "id"), log);
		heading(r, 3, title);
		ctq_strbuf_append(&r->md, "```\n");
		ctq_strbuf_append(&r->md, text + start);
		ctq_strbuf_append(&r->md, "\n```\n\n");
		ctq_strbuf_append(&r->html, "<pre>");
		h(&r->html, text + start);
		ctq_strbuf_append(&r->html, "</pre>\n");
		free(text);
	}
}

static const char css[] =
	"body{font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;margin:24px auto;"
	"max-width:1150px;color:#222;line-height:1.4;padding:0 16px}"
	"h1{margin-bottom:4px}h2{border-bottom:2px solid #ddd;padding-bottom:4px;margin-top:32px}"
	"h3{margin-top:22px;font-size:1.05em}"
	"table{border-collapse:collapse;margin:8px 0 12px;font-size:13px}"
	"th,td{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top}"
	"th{background:#f3f3f3}table.kv th{width:150px}"
	"td.num{text-align:right;font-variant-numeric:tabular-nums}"
	"td.bad{color:#b00020;font-weight:bold}td.warn{color:#a65f00}"
	"td.mono,.mono{font-family:monospace;font-size:12px;word-break:break-all}"
	"td.st{font-weight:bold}td.passed{color:#087f23}td.failed,td.error{color:#b00020}"
	"td.skipped{color:#777}td.strong{font-weight:bold}"
	".verdict{display:inline-block;padding:6px 18px;border-radius:6px;color:#fff;font-size:22px;"
	"font-weight:bold;margin:8px 0}.PASS{background:#087f23}.FAIL{background:#b00020}"
	".dim{color:#777;font-size:12px}figure{margin:10px 0}img{max-width:100%;border:1px solid #eee}"
	"figcaption{font-size:12px;color:#555}pre{background:#f6f6f6;padding:8px;font-size:12px;"
	"overflow-x:auto;white-space:pre-wrap}";

static enum ctq_status sections(struct rep *r)
{
	enum ctq_status st = CTQ_OK;
	static const struct {
		enum ctq_family fam;
		const char *title;
	} order[] = {
		{CTQ_FAM_CONFORM, "Conformance"},
		{CTQ_FAM_PROBE, "Kernel probes"},
		{CTQ_FAM_EVAL, "Accuracy"},
		{CTQ_FAM_BENCH_MODEL, "Performance"},
		{CTQ_FAM_BENCH_GEMM, "GEMM throughput"},
		{CTQ_FAM_BENCH_SERVE, "Serving load"},
	};
	struct perf_case *pc = NULL;
	size_t npc = 0, cap = 0;
	for (size_t k = 0; k < sizeof order / sizeof *order && !st; k++) {
		bool any = false;
		for (size_t i = 0; i < r->res.n && !st; i++) {
			const struct ctq_result_file *f = &r->res.v[i];
			if (f->fam != order[k].fam)
				continue;
			if (!any)
				heading(r, 2, order[k].title);
			any = true;
			switch (f->fam) {
			case CTQ_FAM_CONFORM: st = conform_file(r, f); break;
			case CTQ_FAM_PROBE: st = probe_file(r, f); break;
			case CTQ_FAM_EVAL: st = eval_file(r, f); break;
			case CTQ_FAM_BENCH_MODEL: st = bench_file(r, f, &pc, &npc, &cap); break;
			case CTQ_FAM_BENCH_GEMM: st = gemm_file(r, f); break;
			case CTQ_FAM_BENCH_SERVE: st = serve_file(r, f); break;
			default: break;
			}
		}
		if (!st && order[k].fam == CTQ_FAM_BENCH_MODEL && npc) {
			para(r, "Timings are wall clock after a backend synchronisation (ctq bench model); "
				"TTFT is the prefill of the whole batch. A TTFT cv above 0.2 (amber) makes "
				"`ctq compare` call that case ambiguous.");
			ratio_table(r, pc, npc);
			perf_plots(r, pc, npc);
			scaling_plots(r, pc, npc);
		}
	}
	free(pc);
	return st;
}

enum ctq_status ctq_report_write(const char *run_dir, const char *display,
				 struct ctq_report_summary *s, struct ctq_error *err)
{
	struct rep r;
	memset(&r, 0, sizeof r);
	memset(s, 0, sizeof *s);
	r.dir = run_dir;
	r.display = display ? display : run_dir;
	r.err = err;
	ctq_strbuf_init(&r.md);
	ctq_strbuf_init(&r.html);
	struct ctq_strbuf top_md, top_html;
	ctq_strbuf_init(&top_md);
	ctq_strbuf_init(&top_html);
	char final_plots[1200];
	snprintf(final_plots, sizeof final_plots, "%s/plots", run_dir);
	enum ctq_status st;
	if ((st = ctq_results_find(&r.res, run_dir, err)) ||
	    (st = ctq_results_manifest(run_dir, &r.m, err)))
		goto done;
	ctq_plot_init(&r.plot);
	if (r.plot.available &&
	    (st = ctq_tmpdir_beside(final_plots, r.plots, sizeof r.plots, err)))
		goto done;
	if (!r.plot.available)
		snprintf(r.plot_note, sizeof r.plot_note, "no plots: %s", r.plot.why);

	if ((st = sections(&r)))
		goto done;
	provenance(&r);
	failed_logs(&r);

	size_t counts[4];
	struct ctq_strbuf smd, shtml;
	ctq_strbuf_init(&smd);
	ctq_strbuf_init(&shtml);
	const char *verdict = steps(&r, &smd, &shtml, counts);
	if (!verdict)
		verdict = r.checks_failed || r.probes_failed || r.gates_failed || r.serve_errors || r.gemm_failed
				  ? "FAIL"
				  : "PASS";
	snprintf(s->verdict, sizeof s->verdict, "%s%s", verdict,
		 ctq_report_cpu_only(r.m) ? " (" CTQ_REPORT_CPU_ONLY ")" : "");
	const char *title = ctq_json_str_at(r.m, "plan.name", NULL);
	char headline[600];
	if (cJSON_IsArray(ctq_json_get(r.m, "steps")))
		snprintf(headline, sizeof headline, "%zu step(s): %zu passed, %zu failed, %zu error, %zu skipped",
			 counts[0] + counts[1] + counts[2] + counts[3], counts[0], counts[1], counts[3],
			 counts[2]);
	else if (r.gates)
		snprintf(headline, sizeof headline,
			 "%zu failed conformance check(s), %zu failed probe(s), %zu of %zu accuracy gate(s) "
			 "failed",
			 r.checks_failed, r.probes_failed, r.gates_failed, r.gates);
	else
		snprintf(headline, sizeof headline, "%zu failed conformance check(s), %zu failed probe(s)",
			 r.checks_failed, r.probes_failed);
	const cJSON *gpus = ctq_json_get(r.m, "gpus");
	char hw[400];
	if (cJSON_IsArray(gpus) && cJSON_GetArraySize(gpus) > 0)
		snprintf(hw, sizeof hw, "%d x %s", cJSON_GetArraySize(gpus),
			 jstr(cJSON_GetArrayItem(gpus, 0), "name"));
	else {
		/* A single command's manifest names the device it ran on. */
		static const char *const keys[] = {"eval.device", "bench_model.device", "bench_serve.device",
						   "bench_gemm.device", "probe.device"};
		const char *dev = NULL;
		for (size_t i = 0; !dev && i < sizeof keys / sizeof *keys; i++)
			dev = ctq_json_str_at(r.m, keys[i], NULL);
		snprintf(hw, sizeof hw, "%s", dev ? dev : "no GPU (CPU reference only)");
	}
	ctq_strbuf_printf(&top_md, "# ctq qualification report%s%s\n\n**Verdict: %s** — %s.\n\n"
				   "Hardware: %s. Run directory: `%s`.%s%s\n\n",
			  title ? ": " : "", title ? title : "", s->verdict, headline, hw, r.display,
			  r.plot_note[0] ? " " : "", r.plot_note);
	ctq_strbuf_append(&top_html, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
				     "<title>ctq report");
	if (title) {
		ctq_strbuf_append(&top_html, ": ");
		h(&top_html, title);
	}
	ctq_strbuf_printf(&top_html, "</title><style>%s</style></head><body>\n<h1>ctq qualification report",
			  css);
	if (title) {
		ctq_strbuf_append(&top_html, ": ");
		h(&top_html, title);
	}
	ctq_strbuf_printf(&top_html, "</h1>\n<div class=\"verdict %s\">%s</div> <span>", verdict, s->verdict);
	h(&top_html, headline);
	ctq_strbuf_append(&top_html, "</span>\n<p class=\"dim\">Hardware: ");
	h(&top_html, hw);
	ctq_strbuf_append(&top_html, ". Run directory: ");
	h(&top_html, r.display);
	ctq_strbuf_append(&top_html, ". Generated by ctq report.");
	if (r.plot_note[0]) {
		ctq_strbuf_append(&top_html, " ");
		h(&top_html, r.plot_note);
	}
	ctq_strbuf_append(&top_html, "</p>\n");
	environment(&r, &top_md, &top_html);
	ctq_strbuf_append(&top_md, smd.data ? smd.data : "");
	ctq_strbuf_append(&top_html, shtml.data ? shtml.data : "");
	ctq_strbuf_free(&smd);
	ctq_strbuf_free(&shtml);
	ctq_strbuf_append(&top_md, ctq_strbuf_str(&r.md));
	ctq_strbuf_append(&top_html, ctq_strbuf_str(&r.html));
	if (!r.res.n) {
		ctq_strbuf_append(&top_md, "No result files (conform.csv, probe.csv, bench_model.csv, "
					   "bench_gemm.csv, eval_questions.csv) in this run.\n");
		ctq_strbuf_append(&top_html, "<p>No result files in this run.</p>\n");
	}
	ctq_strbuf_append(&top_html, "</body></html>\n");
	if (top_md.oom || top_html.oom || r.md.oom || r.html.oom) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, run_dir, "out of memory");
		goto done;
	}
	char path[1300];
	snprintf(path, sizeof path, "%s/summary.md", run_dir);
	if ((st = ctq_file_write_atomic(path, top_md.data, top_md.len, err)))
		goto done;
	snprintf(path, sizeof path, "%s/report.html", run_dir);
	if ((st = ctq_file_write_atomic(path, top_html.data, top_html.len, err)))
		goto done;
	if (r.plot.available) {
		if ((st = ctq_tmpdir_commit(r.plots, final_plots, true, err)))
			goto done;
		r.plots[0] = '\0';
	} else {
		/* Plots of an earlier report would no longer match this one. */
		ctq_remove_tree(final_plots);
	}
	s->n_plots = r.n_plots;
	snprintf(s->plot_note, sizeof s->plot_note, "%s", r.plot_note);
done:
	if (r.plots[0])
		ctq_remove_tree(r.plots);
	ctq_strbuf_free(&r.md);
	ctq_strbuf_free(&r.html);
	ctq_strbuf_free(&top_md);
	ctq_strbuf_free(&top_html);
	ctq_results_free(&r.res);
	cJSON_Delete(r.m);
	return st;
}

/* ---- trends --------------------------------------------------------------------------- */

enum ctq_status ctq_report_trend_plots(const struct ctq_trend *t, const char *plots_dir,
				       size_t *n, struct ctq_error *err)
{
	*n = 0;
	struct ctq_plotter p;
	ctq_plot_init(&p);
	if (!p.available)
		return CTQ_OK;
	enum ctq_status st = ctq_mkdirs(plots_dir, err);
	static const struct {
		int fam;
		const char *name, *title, *ylabel;
		bool logy;
	} fams[] = {
		{CTQ_FAM_BENCH_MODEL, "trend_timing", "timing medians per run", "ms", true},
		{CTQ_FAM_EVAL, "trend_accuracy", "accuracy per run", "accuracy", false},
		{CTQ_FAM_PROBE, "trend_probe", "worst rel-L2 per run", "rel-L2 (0 drawn at 1e-9)", true},
		{CTQ_FAM_CONFORM, "trend_conformance", "failed conformance checks per run", "checks", false},
	};
	for (size_t k = 0; k < sizeof fams / sizeof *fams && !st; k++) {
		struct ctq_strbuf data, body;
		ctq_strbuf_init(&data);
		ctq_strbuf_init(&body);
		size_t ns = 0;
		ctq_strbuf_printf(&body, "set title \"%s\"\nset ylabel \"%s\"\n"
					 "set key outside bottom center horizontal font \",8\"\n"
					 "set xtics (",
				  fams[k].title, fams[k].ylabel);
		for (size_t r = 0; r < t->n_runs; r++) {
			ctq_strbuf_printf(&body, "%s", r ? ", " : "");
			ctq_plot_quoted(&body, t->labels[r]);
			ctq_strbuf_printf(&body, " %zu", r + 1);
		}
		ctq_strbuf_printf(&body, ") rotate by -20 font \",8\"\nset xrange [0.5:%zu.5]\n%s", t->n_runs,
				  fams[k].logy ? "set logscale y\n" : "");
		ctq_strbuf_append(&body, "plot ");
		for (size_t i = 0; i < t->n; i++) {
			const struct ctq_trend_series *s = &t->s[i];
			if (s->fam != fams[k].fam || !strcmp(s->metric, "checks") ||
			    !strcmp(s->metric, "failed probes"))
				continue;
			ctq_strbuf_printf(&data, "# %s | %s | %s\n", s->file, s->key, s->metric);
			for (size_t r = 0; r < t->n_runs; r++) {
				double v = s->v[r];
				if (fams[k].logy && v <= 0)
					v = LOG_FLOOR;
				ctq_strbuf_printf(&data, "%zu %.9g\n", r + 1, v);
			}
			ctq_strbuf_append(&data, "\n\n");
			char title[600];
			snprintf(title, sizeof title, "%s %s %s", s->file, s->key, s->metric);
			for (char *c = title; *c; c++)
				if (*c == '"')
					*c = '\'';
			ctq_strbuf_printf(&body, "%s\"%s.dat\" index %zu using 1:2 with linespoints pt 7 title \"%s\"",
					  ns ? ", " : "", fams[k].name, ns, title);
			ns++;
		}
		ctq_strbuf_append(&body, "\n");
		if (ns && !data.oom && !body.oom) {
			st = ctq_plot_render(&p, plots_dir, fams[k].name, 1000, 560, body.data, data.data, err);
			if (!st)
				(*n)++;
		}
		ctq_strbuf_free(&data);
		ctq_strbuf_free(&body);
	}
	return st;
}
