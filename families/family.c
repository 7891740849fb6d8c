/* What the result families share (see family.h). */
#include "families/family.h"
#include "core/fileio.h"
#include "core/json.h"
#include "results/table.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

bool ctq_csv_truthy(const char *s)
{
	return !strcmp(s, "true") || !strcmp(s, "1");
}

size_t ctq_rep_find_name(const void *v, size_t n, size_t stride, const char *name)
{
	const char *p = v;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(p + i * stride, name))
			return i;
	return n;
}

/* ---- text helpers ------------------------------------------------------------- */

void ctq_rep_h(struct ctq_strbuf *sb, const char *s)
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

void ctq_rep_md(struct ctq_strbuf *sb, const char *s)
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
void ctq_rep_cell(struct ctq_rep *r, const char *s, const char *cls)
{
	ctq_strbuf_append(&r->md, " ");
	ctq_rep_md(&r->md, s);
	ctq_strbuf_append(&r->md, " |");
	ctq_strbuf_printf(&r->html, "<td%s%s%s>", cls ? " class=\"" : "", cls ? cls : "",
			  cls ? "\"" : "");
	ctq_rep_h(&r->html, s);
	ctq_strbuf_append(&r->html, "</td>");
}

void ctq_rep_cellf(struct ctq_rep *r, const char *cls, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	ctq_rep_cell(r, buf, cls);
}

/* Starts a table with the given headers (NULL-terminated). */
void ctq_rep_table_head(struct ctq_rep *r, const char *const *cols)
{
	ctq_strbuf_append(&r->md, "|");
	ctq_strbuf_append(&r->html, "<table><tr>");
	size_t n = 0;
	for (; cols[n]; n++) {
		ctq_strbuf_printf(&r->md, " %s |", cols[n]);
		ctq_strbuf_append(&r->html, "<th>");
		ctq_rep_h(&r->html, cols[n]);
		ctq_strbuf_append(&r->html, "</th>");
	}
	ctq_strbuf_append(&r->md, "\n|");
	for (size_t i = 0; i < n; i++)
		ctq_strbuf_append(&r->md, "---|");
	ctq_strbuf_append(&r->md, "\n");
	ctq_strbuf_append(&r->html, "</tr>\n");
}

void ctq_rep_row_begin(struct ctq_rep *r)
{
	ctq_strbuf_append(&r->md, "|");
	ctq_strbuf_append(&r->html, "<tr>");
}

void ctq_rep_row_end(struct ctq_rep *r)
{
	ctq_strbuf_append(&r->md, "\n");
	ctq_strbuf_append(&r->html, "</tr>\n");
}

void ctq_rep_table_end(struct ctq_rep *r)
{
	ctq_strbuf_append(&r->md, "\n");
	ctq_strbuf_append(&r->html, "</table>\n");
}

void ctq_rep_heading(struct ctq_rep *r, int level, const char *text)
{
	ctq_strbuf_printf(&r->md, "%.*s ", level, "####");
	ctq_rep_md(&r->md, text);
	ctq_strbuf_append(&r->md, "\n\n");
	ctq_strbuf_printf(&r->html, "<h%d>", level);
	ctq_rep_h(&r->html, text);
	ctq_strbuf_printf(&r->html, "</h%d>\n", level);
}

void ctq_rep_para(struct ctq_rep *r, const char *text)
{
	ctq_rep_md(&r->md, text);
	ctq_strbuf_append(&r->md, "\n\n");
	ctq_strbuf_append(&r->html, "<p>");
	ctq_rep_h(&r->html, text);
	ctq_strbuf_append(&r->html, "</p>\n");
}

void ctq_rep_fmt_g(char *buf, size_t cap, double v)
{
	if (isnan(v))
		snprintf(buf, cap, "-");
	else
		snprintf(buf, cap, "%.4g", v);
}

void ctq_rep_fmt_pct(char *buf, size_t cap, double v)
{
	if (isnan(v))
		snprintf(buf, cap, "-");
	else
		snprintf(buf, cap, "%.2f", 100 * v);
}

/* ---- plots --------------------------------------------------------------------- */

/* Draws a plot and embeds it (HTML data URI, Markdown link). A failure to
 * draw is noted in the report, not returned: the numbers are in the tables. */
void ctq_rep_plot(struct ctq_rep *r, const char *name, int w, int hgt, const char *caption,
		 const char *body, const char *data)
{
	if (!r->plot.available)
		return;
	struct ctq_error perr = {0};
	if (ctq_plot_render(&r->plot, r->plots, name, w, hgt, body, data, &perr)) {
		char note[700];
		snprintf(note, sizeof note, "(plot %s not drawn: %s)", name, perr.message);
		ctq_rep_para(r, note);
		return;
	}
	char png[1300];
	snprintf(png, sizeof png, "%s/%s.png", r->plots, name);
	ctq_strbuf_printf(&r->md, "![%s](plots/%s.png)\n\n", caption, name);
	ctq_strbuf_append(&r->html, "<figure><img alt=\"");
	ctq_rep_h(&r->html, caption);
	ctq_strbuf_append(&r->html, "\" src=\"data:image/png;base64,");
	struct ctq_error e2 = {0};
	ctq_base64_file(png, &r->html, &e2);
	ctq_strbuf_append(&r->html, "\"><figcaption>");
	ctq_rep_h(&r->html, caption);
	ctq_strbuf_printf(&r->html, " <span class=\"dim\">(plots/%s.png, drawn by plots/%s.gp)</span>"
				    "</figcaption></figure>\n", name, name);
	r->n_plots++;
}

/* A plot name from a file's folder: "probe-tiny/probe" -> "probe-tiny_probe". */
void ctq_rep_plot_name(char *buf, size_t cap, const char *prefix, const char *dir)
{
	snprintf(buf, cap, "%s%s%s", prefix, *dir ? "_" : "", dir);
	for (char *c = buf; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
		      *c == '-' || *c == '_'))
			*c = '_';
}

/* ---- manifests of steps --------------------------------------------------------- */

const char *ctq_rep_jstr(const cJSON *o, const char *dotted)
{
	return ctq_json_str_at(o, dotted, "unknown");
}

double ctq_rep_jnum(const cJSON *o, const char *key)
{
	const cJSON *v = ctq_json_get(o, key);
	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* The manifest of the step whose folder is dir under run_dir ("" for the
 * run itself); NULL without one. Owned by the caller. */
cJSON *ctq_rep_step_manifest(const char *run_dir, const char *dir)
{
	char path[1200];
	snprintf(path, sizeof path, "%s%s%s", run_dir, *dir ? "/" : "", dir);
	cJSON *m = NULL;
	if (ctq_results_manifest(path, &m, NULL))
		return NULL;
	return m;
}

/* Whether the plan's step whose folder is dir expects its check to fail
 * ("expect": "fail" in the run manifest's steps). */
static bool step_expects_failure(const struct ctq_rep *r, const char *dir)
{
	const cJSON *s;
	cJSON_ArrayForEach(s, ctq_json_get(r->m, "steps"))
	{
		if (!strcmp(ctq_json_str_at(s, "id", ""), dir))
			return !strcmp(ctq_json_str_at(s, "expect", ""), "fail");
	}
	return false;
}

void ctq_rep_gate(struct ctq_rep *r, const char *dir, const char *member,
		  void (*sentence)(char *buf, size_t cap, const cJSON *gate, const char *verdict,
				   bool ok))
{
	cJSON *m = ctq_rep_step_manifest(r->dir, dir);
	const cJSON *gate = ctq_json_get(m, member);
	const char *verdict = ctq_json_str_at(gate, "verdict", NULL);
	if (verdict) {
		bool ok = !strcmp(verdict, "non-inferior");
		char line[800];
		sentence(line, sizeof line, gate, verdict, ok);
		if (!ok && step_expects_failure(r, dir)) {
			/* a gate's teeth: the plan's step passed because of this */
			size_t n = strlen(line);
			if (n && line[n - 1] == '.')
				line[--n] = '\0';
			snprintf(line + n, sizeof line - n, ", as the plan's step %s expects (\"expect\": \"fail\").",
				 dir);
		} else {
			r->gates_failed += !ok;
		}
		ctq_rep_para(r, line);
		r->gates++;
	}
	cJSON_Delete(m);
}

/* The value after option opt in the argv of dir/manifest.json; NULL. */
char *ctq_rep_step_option(const char *run_dir, const char *display, const char *dir,
			 const char *opt, char *buf, size_t cap)
{
	cJSON *m = ctq_rep_step_manifest(run_dir, dir);
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

enum ctq_status ctq_rep_load_result(struct ctq_rep *r, const struct ctq_result_file *f,
				    const char *const *names, int n, int n_required,
				    struct ctq_rep_table *rt)
{
	snprintf(rt->path, sizeof rt->path, "%s/%s", r->dir, f->rel);
	enum ctq_status st = ctq_table_load(&rt->t, rt->path, r->err);
	if (st)
		return st;
	for (int i = 0; i < n && i < CTQ_REP_COLS_MAX; i++)
		if ((rt->col[i] = ctq_table_col(&rt->t, names[i])) < 0 && i < n_required) {
			ctq_table_free(&rt->t);
			return ctq_error_set(r->err, CTQ_ERR_PARSE, rt->path, "has no column \"%s\"",
					     names[i]);
		}
	return CTQ_OK;
}

enum ctq_status ctq_rep_table_nomem(struct ctq_rep *r, struct ctq_rep_table *rt)
{
	ctq_table_free(&rt->t);
	return ctq_error_set(r->err, CTQ_ERR_NOMEM, rt->path, "out of memory");
}
