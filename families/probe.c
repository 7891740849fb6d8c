/* The probe family (see probe.h). */
#include "families/probe.h"
#include "conform/probe.h"
#include "core/arena.h"
#include "families/verdict.h"
#include "results/csv_out.h"
#include "results/table.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ctq_fam_probe_csv_row(struct ctq_csv *w, const struct ctq_probe_result *r)
{
	ctq_csv_field(w, r->layer);
	ctq_csv_fieldf(w, "%lld", (long long)r->K);
	ctq_csv_fieldf(w, "%lld", (long long)r->N);
	ctq_csv_fieldf(w, "%lld", (long long)r->M);
	ctq_csv_field(w, ctq_probe_weights_name(r->weights));
	ctq_csv_field(w, ctq_probe_acts_name(r->acts));
	ctq_csv_field(w, r->backend);
	ctq_csv_field(w, r->kernel_path);
	ctq_csv_fieldf(w, "%lld", (long long)r->nan_count);
	ctq_csv_fieldf(w, "%lld", (long long)r->inf_count);
	ctq_csv_fieldf(w, "%lld", (long long)r->nonfinite_mismatch);
	ctq_csv_field(w, r->all_zero ? "true" : "false");
	ctq_csv_fieldf(w, "%.17g", r->max_abs_err);
	ctq_csv_fieldf(w, "%lld", (long long)r->max_m);
	ctq_csv_fieldf(w, "%lld", (long long)r->max_n);
	ctq_csv_fieldf(w, "%.9g", r->ref_at_max);
	ctq_csv_fieldf(w, "%.9g", r->got_at_max);
	ctq_csv_fieldf(w, "%.17g", r->kernel_rel_l2);
	ctq_csv_fieldf(w, "%.17g", r->quant_rel_l2);
	ctq_csv_field(w, r->passed ? "pass" : "fail");
	ctq_csv_field(w, r->reason);
	ctq_csv_end_row(w);
}

/* ---- comparison -------------------------------------------------------------- */

static enum ctq_status probe_row(struct ctq_cmp_pair *x, const char *key, const char *metric,
				 double b, double n, const char *verdict, bool bad,
				 const char *detail, struct ctq_error *err)
{
	struct ctq_cmp_row *r = ctq_cmp_new_row(x->c, CTQ_FAM_PROBE, x->file, key, metric, err);
	if (!r)
		return CTQ_ERR_NOMEM;
	r->base = b;
	r->cand = n;
	r->change = b > 0 && isfinite(b) && isfinite(n) ? n / b : NAN;
	ctq_cmp_set_verdict(x->c, r, verdict, bad);
	snprintf(r->detail, sizeof r->detail, "%s", detail);
	return CTQ_OK;
}

enum ctq_status ctq_fam_probe_compare(struct ctq_cmp_pair *x, struct ctq_error *err)
{
	static const char *const keys[] = {"layer", "K", "N", "M", "weights", "acts", "backend",
					   "nan_count", "inf_count", "kernel_rel_l2",
					   "quant_rel_l2", "outcome"};
	int cb[12], cn[12];
	enum ctq_status st = ctq_cmp_pair_load(x, keys, 7, true, cb, cn, err);
	if (st || (st = ctq_cmp_need_cols(&x->tb, x->base_path, keys + 7, 5, cb + 7, err)) ||
	    (st = ctq_cmp_need_cols(&x->tn, x->new_path, keys + 7, 5, cn + 7, err)))
		return st;
	const double factor = x->p->v[CTQ_POL_PROBE_FACTOR];
	const double floors[2] = {x->p->v[CTQ_POL_PROBE_KERNEL_FLOOR],
				  x->p->v[CTQ_POL_PROBE_QUANT_FLOOR]};
	static const char *const names[2] = {"kernel_rel_l2", "quant_rel_l2"};
	size_t regress = 0, improve = 0, paired = 0, added, removed;
	char detail[256];
	/* which code ran (absent from files written before kernel paths) */
	const int pb = ctq_table_col(&x->tb, "kernel_path"), pn = ctq_table_col(&x->tn, "kernel_path");
	for (size_t i = 0; i < x->in.n && !st; i++) {
		size_t rb, rn;
		if (!ctq_cmp_paired(x, i, &rb, &rn))
			continue;
		paired++;
		const char *key = x->in.v[i].key;
		size_t before = x->c->n_regressions;
		double nfb = ctq_table_num(&x->tb, rb, cb[7]) + ctq_table_num(&x->tb, rb, cb[8]);
		double nfn = ctq_table_num(&x->tn, rn, cn[7]) + ctq_table_num(&x->tn, rn, cn[8]);
		if (nfb == 0 && nfn > 0) {
			snprintf(detail, sizeof detail, "%.0f NaN/Inf output(s) where the baseline had none", nfn);
			st = probe_row(x, key, "nan+inf", nfb, nfn, "regression", true, detail, err);
		}
		/* bf16-limit overflows by design; only NaN/Inf agreement is judged. */
		bool limit = !strcmp(ctq_table_get(&x->tn, rn, cn[5]), "bf16-limit");
		for (int m = 0; m < 2 && !st; m++) {
			double b = ctq_table_num(&x->tb, rb, cb[9 + m]);
			double n = ctq_table_num(&x->tn, rn, cn[9 + m]);
			if ((isnan(b) && isnan(n)) || (m == 1 && limit))
				continue;
			if (isfinite(b) && !isfinite(n)) {
				st = probe_row(x, key, names[m], b, n, "regression", true,
					       "rel-L2 is no longer finite", err);
			} else if (isfinite(b) && isfinite(n) && n > factor * b && n > floors[m]) {
				snprintf(detail, sizeof detail, "grew beyond %.3gx (floor %.3g)", factor,
					 floors[m]);
				st = probe_row(x, key, names[m], b, n, "regression", true, detail, err);
			} else if (isfinite(b) && isfinite(n) && b > factor * n && b > floors[m]) {
				snprintf(detail, sizeof detail, "shrank beyond %.3gx", factor);
				st = probe_row(x, key, names[m], b, n, "improvement", false, detail, err);
				improve++;
			}
		}
		if (!st && pb >= 0 && pn >= 0 &&
		    strcmp(ctq_table_get(&x->tb, rb, pb), ctq_table_get(&x->tn, rn, pn))) {
			char metric[96];
			snprintf(metric, sizeof metric, "kernel_path %s -> %s", ctq_table_get(&x->tb, rb, pb),
				 ctq_table_get(&x->tn, rn, pn));
			st = probe_row(x, key, metric, NAN, NAN, "changed", false,
				       "another kernel computed this probe", err);
		}
		const char *ob = ctq_table_get(&x->tb, rb, cb[11]);
		const char *on = ctq_table_get(&x->tn, rn, cn[11]);
		if (!st && strcmp(ob, on) != 0) {
			bool bad = !strcmp(ob, "pass");
			char metric[64];
			snprintf(metric, sizeof metric, "outcome %s -> %s", ob, on);
			st = probe_row(x, key, metric, NAN, NAN, bad ? "regression" : "improvement", bad,
				       bad ? "the probe now fails its policy" : "the probe now passes", err);
			if (!bad)
				improve++;
		}
		if (x->c->n_regressions > before)
			regress++;
	}
	if (st)
		return st;
	ctq_cmp_added_removed(x, &added, &removed);
	struct ctq_cmp_row *r = ctq_cmp_summary_row(x, CTQ_FAM_PROBE, "(all probes)", "probes regressed",
						    0, (double)regress, regress, improve, err);
	if (!r)
		return CTQ_ERR_NOMEM;
	snprintf(r->detail, sizeof r->detail,
		 "%zu probes paired: %zu regressed, %zu improved; %zu new, %zu gone", paired, regress,
		 improve, added, removed);
	return CTQ_OK;
}

/* ---- trend ------------------------------------------------------------------- */

enum ctq_status ctq_fam_probe_trend(struct ctq_trend *t, size_t run, const struct ctq_table *tb,
				    const char *path, const char *file, struct ctq_error *err)
{
	int bc = ctq_table_col(tb, "backend"), kc = ctq_table_col(tb, "kernel_rel_l2");
	int qc = ctq_table_col(tb, "quant_rel_l2");
	int oc = ctq_table_col(tb, "outcome");
	enum ctq_status st = CTQ_OK;
	if (bc < 0 || kc < 0 || qc < 0 || oc < 0)
		st = ctq_error_set(err, CTQ_ERR_PARSE, path,
				   "lacks backend, kernel_rel_l2, quant_rel_l2 or outcome");
	for (size_t r = 0; r < tb->n_rows && !st; r++) {
		const char *b = ctq_table_get(tb, r, bc);
		int ac = ctq_table_col(tb, "acts");
		double vals[3] = {ctq_table_num(tb, r, kc), ctq_table_num(tb, r, qc),
				  strcmp(ctq_table_get(tb, r, oc), "pass") != 0};
		if (!strcmp(ctq_table_get(tb, r, ac), "bf16-limit"))
			vals[1] = NAN; /* overflows by design (not judged) */
		static const char *const ms[3] = {"worst kernel_rel_l2", "worst quant_rel_l2",
						  "failed probes"};
		for (int m = 0; m < 3 && !st; m++) {
			struct ctq_trend_series *s = ctq_trend_series_get(t, CTQ_FAM_PROBE, file, b,
									  ms[m], "", err);
			if (!s) {
				st = CTQ_ERR_NOMEM;
				break;
			}
			if (m == 2)
				s->v[run] = (isnan(s->v[run]) ? 0 : s->v[run]) + vals[2];
			else if (!isnan(vals[m]) && (isnan(s->v[run]) || vals[m] > s->v[run]))
				s->v[run] = vals[m];
		}
	}
	return st;
}

/* ---- report section ------------------------------------------------------------ */

struct probe_backend {
	char name[32];
	size_t n, failed;
	double nan, inf, mismatch;
	double worst_k, worst_q;
	size_t at_k, at_q; /* rows */
	char paths[96];    /* the kernel paths its probes ran, first seen first */
};

struct probe_layer {
	char name[256];
	long long K, N;
	double k[4], q[4]; /* per backend (up to 4) */
};

/* The columns the section reads, in this order (R.col[i]). */
static const char *const report_cols[] = {"layer", "K", "N", "M", "weights", "acts", "backend",
					  "nan_count", "inf_count", "nonfinite_mismatch",
					  "kernel_rel_l2", "quant_rel_l2", "outcome", "reason"};

/* What the section shows, tallied over the rows: per backend (the first 4
 * seen) and per layer (first-seen order; ly has room for every row). */
struct probe_tally {
	struct probe_backend be[4];
	size_t nb;
	struct probe_layer *ly;
	size_t nl, failed;
};

static void probe_max(double *worst, double v)
{
	if (!isnan(v) && (isnan(*worst) || v > *worst))
		*worst = v;
}

/* The layer named by row i, added on first sight. */
static struct probe_layer *probe_layer_of(struct probe_tally *t, const struct ctq_rep_table *R,
					  size_t i)
{
	const char *ln = ctq_table_get(&R->t, i, R->col[0]);
	size_t l = ctq_rep_find_name(t->ly, t->nl, sizeof *t->ly, ln);
	if (l == t->nl) {
		struct probe_layer *y = &t->ly[t->nl++];
		snprintf(y->name, sizeof y->name, "%s", ln);
		/* A cell that is no number (or out of range) is shown as 0, never
		 * cast (NaN -> long long is undefined; fuzz_csv). */
		double kk = ctq_table_num(&R->t, i, R->col[1]), nn = ctq_table_num(&R->t, i, R->col[2]);
		y->K = kk >= 0 && kk <= 9e15 ? (long long)kk : 0;
		y->N = nn >= 0 && nn <= 9e15 ? (long long)nn : 0;
		for (int z = 0; z < 4; z++)
			y->k[z] = y->q[z] = NAN;
	}
	return &t->ly[l];
}

static void probe_tally_rows(struct probe_tally *t, const struct ctq_rep_table *R)
{
	for (size_t i = 0; i < R->t.n_rows; i++) {
		const char *b = ctq_table_get(&R->t, i, R->col[6]);
		size_t j = ctq_rep_find_name(t->be, t->nb, sizeof *t->be, b);
		if (j == t->nb) {
			if (t->nb == 4)
				continue;
			snprintf(t->be[j].name, sizeof t->be[j].name, "%s", b);
			t->be[j].worst_k = t->be[j].worst_q = NAN;
			t->nb++;
		}
		struct probe_backend *p = &t->be[j];
		p->n++;
		/* kernel_path: absent from files written before it existed */
		const int pc = ctq_table_col(&R->t, "kernel_path");
		const char *kp = pc >= 0 ? ctq_table_get(&R->t, i, pc) : "";
		const size_t kl = strlen(kp), pl = strlen(p->paths);
		bool seen = !kl;
		for (const char *c = p->paths; !seen && (c = strstr(c, kp)); c += kl)
			seen = (c == p->paths || c[-1] == ' ') && (c[kl] == ',' || !c[kl]);
		if (!seen && pl + kl + 3 < sizeof p->paths)
			snprintf(p->paths + pl, sizeof p->paths - pl, "%s%s", pl ? ", " : "", kp);
		if (strcmp(ctq_table_get(&R->t, i, R->col[12]), "pass")) {
			p->failed++;
			t->failed++;
		}
		p->nan += ctq_table_num(&R->t, i, R->col[7]);
		p->inf += ctq_table_num(&R->t, i, R->col[8]);
		p->mismatch += ctq_table_num(&R->t, i, R->col[9]);
		double k = ctq_table_num(&R->t, i, R->col[10]), q = ctq_table_num(&R->t, i, R->col[11]);
		/* bf16-limit overflows by design: its policy judges only NaN/Inf
		 * agreement, so its quantization rel-L2 is no measure of error. */
		if (!strcmp(ctq_table_get(&R->t, i, R->col[5]), "bf16-limit"))
			q = NAN;
		if (!isnan(k) && (isnan(p->worst_k) || k > p->worst_k))
			p->worst_k = k, p->at_k = i;
		if (!isnan(q) && (isnan(p->worst_q) || q > p->worst_q))
			p->worst_q = q, p->at_q = i;
		struct probe_layer *y = probe_layer_of(t, R, i);
		probe_max(&y->k[j], k);
		probe_max(&y->q[j], q);
	}
}

/* "layer M=.. weights/acts" of row i. */
static void probe_where(char *buf, size_t cap, const struct ctq_rep_table *R, size_t i)
{
	snprintf(buf, cap, "%s M=%s %s/%s", ctq_table_get(&R->t, i, R->col[0]),
		 ctq_table_get(&R->t, i, R->col[3]), ctq_table_get(&R->t, i, R->col[4]),
		 ctq_table_get(&R->t, i, R->col[5]));
}

static void probe_backend_table(struct ctq_rep *r, const struct probe_tally *t,
				const struct ctq_rep_table *R)
{
	static const char *const cols[] = {"backend", "kernel paths", "probes", "failed", "worst kernel rel-L2",
					   "at", "worst quantization rel-L2", "at", "NaN", "Inf",
					   "NaN/Inf mismatches", NULL};
	char buf[64], buf2[64];
	ctq_rep_table_head(r, cols);
	for (size_t j = 0; j < t->nb; j++) {
		const struct probe_backend *p = &t->be[j];
		char at_k[400], at_q[400];
		probe_where(at_k, sizeof at_k, R, p->at_k);
		if (p->worst_k == 0)
			snprintf(at_k, sizeof at_k, "every probe bit-exact");
		probe_where(at_q, sizeof at_q, R, p->at_q);
		ctq_rep_row_begin(r);
		ctq_rep_cell(r, p->name, NULL);
		ctq_rep_cell(r, p->paths[0] ? p->paths : "-", NULL);
		ctq_rep_cellf(r, "num", "%zu", p->n);
		ctq_rep_cellf(r, p->failed ? "num bad" : "num", "%zu", p->failed);
		ctq_rep_fmt_g(buf, sizeof buf, p->worst_k);
		ctq_rep_cell(r, buf, "num");
		ctq_rep_cell(r, at_k, NULL);
		ctq_rep_fmt_g(buf2, sizeof buf2, p->worst_q);
		ctq_rep_cell(r, buf2, "num");
		ctq_rep_cell(r, at_q, NULL);
		ctq_rep_cellf(r, "num", "%.0f", p->nan);
		ctq_rep_cellf(r, "num", "%.0f", p->inf);
		ctq_rep_cellf(r, p->mismatch > 0 ? "num bad" : "num", "%.0f", p->mismatch);
		ctq_rep_row_end(r);
	}
	ctq_rep_table_end(r);
}

/* The failing probes, the first CTQ_REP_MAX_LISTED of them. */
static void probe_failed_table(struct ctq_rep *r, const struct ctq_rep_table *R)
{
	static const char *const fc[] = {"layer", "K", "N", "M", "weights", "acts", "backend",
					 "kernel rel-L2", "quant rel-L2", "why", NULL};
	ctq_rep_table_head(r, fc);
	size_t listed = 0;
	for (size_t i = 0; i < R->t.n_rows && listed < CTQ_REP_MAX_LISTED; i++) {
		if (!strcmp(ctq_table_get(&R->t, i, R->col[12]), "pass"))
			continue;
		listed++;
		ctq_rep_row_begin(r);
		for (int k = 0; k < 7; k++)
			ctq_rep_cell(r, ctq_table_get(&R->t, i, R->col[k]), NULL);
		ctq_rep_cell(r, ctq_table_get(&R->t, i, R->col[10]), "num bad");
		ctq_rep_cell(r, ctq_table_get(&R->t, i, R->col[11]), "num");
		ctq_rep_cell(r, ctq_table_get(&R->t, i, R->col[13]), NULL);
		ctq_rep_row_end(r);
	}
	ctq_rep_table_end(r);
}

/* rel-L2 per layer: the maximum over patterns and M, one kernel and one
 * quantization series per backend, 0 drawn at CTQ_REP_LOG_FLOOR. */
static void probe_plot(struct ctq_rep *r, const struct ctq_result_file *f,
		       const struct probe_tally *t)
{
	struct ctq_strbuf data, body;
	ctq_strbuf_init(&data);
	ctq_strbuf_init(&body);
	ctq_strbuf_append(&data, "# index layer");
	for (size_t j = 0; j < t->nb; j++)
		ctq_strbuf_printf(&data, " kernel_%s quant_%s", t->be[j].name, t->be[j].name);
	ctq_strbuf_append(&data, "\n");
	for (size_t l = 0; l < t->nl; l++) {
		const struct probe_layer *y = &t->ly[l];
		char label[320];
		snprintf(label, sizeof label, "%s %lldx%lld", y->name, y->K, y->N);
		ctq_strbuf_printf(&data, "%zu ", l);
		ctq_plot_quoted(&data, label);
		for (size_t j = 0; j < t->nb; j++) {
			double k = y->k[j], q = y->q[j];
			ctq_strbuf_printf(&data, " %.9g %.9g", isnan(k) ? NAN : k > CTQ_REP_LOG_FLOOR ? k : CTQ_REP_LOG_FLOOR,
					  isnan(q) ? NAN : q > CTQ_REP_LOG_FLOOR ? q : CTQ_REP_LOG_FLOOR);
		}
		ctq_strbuf_append(&data, "\n");
	}
	char name[300];
	ctq_rep_plot_name(name, sizeof name, "probe_rel_l2", f->dir);
	ctq_strbuf_printf(&body,
			  "set title \"rel-L2 per layer (max over weight/activation patterns and M): %s\"\n"
			  "set logscale y\nset format y \"%%.0e\"\nset yrange [%g:*]\n"
			  "set ylabel \"rel-L2 (0, bit-exact, drawn at %g)\"\n"
			  "set key outside bottom center horizontal\n"
			  "set xtics rotate by 30 right font \",8\"\n"
			  "set offsets 0.5, 0.5, 0, 0\nset lmargin 18\n",
			  f->rel, CTQ_REP_LOG_FLOOR / 3, CTQ_REP_LOG_FLOOR);
	if (t->nl > 40)
		ctq_strbuf_append(&body, "set xtics auto\nset xlabel \"layer index\"\n");
	ctq_strbuf_append(&body, "plot ");
	static const char *const colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd"};
	for (size_t j = 0; j < t->nb; j++) {
		ctq_strbuf_printf(&body,
				  "%s\"%s.dat\" using 1:%zu%s with linespoints pt 7 ps 0.8 lc rgb \"%s\" title \"quantization rel-L2 (%s)\", "
				  "\"%s.dat\" using 1:%zu with points pt 6 ps 1.2 lc rgb \"%s\" title \"kernel rel-L2 (%s)\"",
				  j ? ", " : "", name, 4 + 2 * j, t->nl > 40 ? "" : ":xtic(2)", colors[j],
				  t->be[j].name, name, 3 + 2 * j, colors[j], t->be[j].name);
	}
	/* The bound is named in the key: a label beside the line, on a log
	 * axis, sat on the line and was struck through by it. */
	ctq_strbuf_append(&body, ", 0.05 with lines dt 2 lc rgb \"#888888\" title \"quantization error bound 5e-2 (gaussian)\"\n");
	char caption[700];
	snprintf(caption, sizeof caption, "rel-L2 per layer, %s", f->rel);
	if (t->nl && t->nb && !data.oom && !body.oom)
		ctq_rep_plot(r, name, 1000, 520, caption, body.data, data.data);
	ctq_strbuf_free(&data);
	ctq_strbuf_free(&body);
}

enum ctq_status ctq_fam_probe_report(struct ctq_rep *r, const struct ctq_result_file *f)
{
	struct ctq_rep_table R;
	enum ctq_status st = ctq_rep_load_result(r, f, report_cols, 14, 14, &R);
	if (st)
		return st;
	struct probe_tally t;
	memset(&t, 0, sizeof t);
	if (!(t.ly = ctq_calloc(R.t.n_rows + 1, sizeof *t.ly)))
		return ctq_rep_table_nomem(r, &R);
	probe_tally_rows(&t, &R);
	r->probes_failed += t.failed;
	char title[700];
	snprintf(title, sizeof title, "%s — %zu probes: %zu passed, %zu failed", f->rel, R.t.n_rows,
		 R.t.n_rows - t.failed, t.failed);
	ctq_rep_heading(r, 3, title);
	probe_backend_table(r, &t, &R);
	ctq_rep_para(r, "Quantization rel-L2 leaves out the bf16-limit activations, which overflow BF16 by "
		"design (their policy judges only NaN/Inf agreement). "
		"NaN/Inf counts include them; "
		"a probe fails when its non-finite outputs differ from the reference's, or its rel-L2 "
		"exceeds the policy (kernel: against the exact-quantized CPU reference; quantization: "
		"against the FP64 unquantized product).");
	if (t.failed)
		probe_failed_table(r, &R);
	probe_plot(r, f, &t);
	free(t.ly);
	ctq_table_free(&R.t);
	return CTQ_OK;
}
