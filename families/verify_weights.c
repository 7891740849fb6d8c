/* The verify-weights family (see verify_weights.h). */
#include "families/verify_weights.h"
#include "conform/verify_weights.h"
#include "core/arena.h"
#include "families/verdict.h"
#include "results/csv_out.h"
#include "results/table.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void num_or_empty(struct ctq_csv *w, double v)
{
	if (isnan(v) || v < 0)
		ctq_csv_field(w, "");
	else
		ctq_csv_fieldf(w, "%.17g", v);
}

void ctq_fam_verify_weights_csv_row(struct ctq_csv *w, const struct ctq_vw_row *v)
{
	ctq_csv_field(w, v->tensor);
	ctq_csv_field(w, v->module);
	ctq_csv_field(w, v->scheme);
	ctq_csv_fieldf(w, "%lld", (long long)v->N);
	ctq_csv_fieldf(w, "%lld", (long long)v->K);
	num_or_empty(w, v->rel_l2);
	num_or_empty(w, v->max_abs_err);
	ctq_csv_fieldf(w, "%lld", (long long)v->nonfinite);
	num_or_empty(w, v->rel_l2_max);
	ctq_csv_field(w, v->passed ? "pass" : "fail");
	ctq_csv_field(w, v->reason);
	ctq_csv_end_row(w);
}

/* ---- comparison -------------------------------------------------------------- */

enum ctq_status ctq_fam_verify_weights_compare(struct ctq_cmp_pair *x, struct ctq_error *err)
{
	static const char *const keys[] = {"tensor", "verdict", "reason"};
	int cb[3], cn[3];
	enum ctq_status st = ctq_cmp_pair_load(x, keys, 1, true, cb, cn, err);
	if (st || (st = ctq_cmp_need_cols(&x->tb, x->base_path, keys + 1, 2, cb + 1, err)) ||
	    (st = ctq_cmp_need_cols(&x->tn, x->new_path, keys + 1, 2, cn + 1, err)))
		return st;
	size_t fail_b = 0, fail_n = 0, flips = 0, fixes = 0, added, removed;
	for (size_t r = 0; r < x->tb.n_rows; r++)
		fail_b += strcmp(ctq_table_get(&x->tb, r, cb[1]), "pass") != 0;
	for (size_t r = 0; r < x->tn.n_rows; r++)
		fail_n += strcmp(ctq_table_get(&x->tn, r, cn[1]), "pass") != 0;
	for (size_t i = 0; i < x->in.n; i++) {
		size_t rb, rn;
		if (!ctq_cmp_paired(x, i, &rb, &rn))
			continue;
		const char *ob = ctq_table_get(&x->tb, rb, cb[1]);
		const char *on = ctq_table_get(&x->tn, rn, cn[1]);
		if (!strcmp(ob, on))
			continue;
		struct ctq_cmp_row *r = ctq_cmp_new_row(x->c, CTQ_FAM_VERIFY_WEIGHTS, x->file,
							x->in.v[i].key, NULL, err);
		if (!r)
			return CTQ_ERR_NOMEM;
		snprintf(r->metric, sizeof r->metric, "verdict %s -> %s", ob, on);
		const bool bad = !strcmp(ob, "pass");
		ctq_cmp_set_verdict(x->c, r, bad ? "regression" : "improvement", bad);
		snprintf(r->detail, sizeof r->detail, "%s", bad ? ctq_table_get(&x->tn, rn, cn[2]) : "now passes");
		bad ? flips++ : fixes++;
	}
	ctq_cmp_added_removed(x, &added, &removed);
	struct ctq_cmp_row *r = ctq_cmp_summary_row(x, CTQ_FAM_VERIFY_WEIGHTS, "(all tensors)",
						    "failed checks", (double)fail_b, (double)fail_n,
						    flips, fixes, err);
	if (!r)
		return CTQ_ERR_NOMEM;
	snprintf(r->detail, sizeof r->detail,
		 "%zu tensors paired: %zu pass->fail, %zu fail->pass; %zu new, %zu gone",
		 x->in.n - added, flips, fixes, added, removed);
	return CTQ_OK;
}

/* ---- trend ------------------------------------------------------------------- */

enum ctq_status ctq_fam_verify_weights_trend(struct ctq_trend *t, size_t run,
					     const struct ctq_table *tb, const char *path,
					     const char *file, struct ctq_error *err)
{
	const int vc = ctq_table_col(tb, "verdict"), rc = ctq_table_col(tb, "rel_l2");
	if (vc < 0 || rc < 0)
		return ctq_error_set(err, CTQ_ERR_PARSE, path, "has no column \"%s\"",
				     vc < 0 ? "verdict" : "rel_l2");
	size_t failed = 0;
	double worst = 0.0;
	for (size_t r = 0; r < tb->n_rows; r++) {
		failed += strcmp(ctq_table_get(tb, r, vc), "pass") != 0;
		const char *v = ctq_table_get(tb, r, rc);
		if (v[0] && strtod(v, NULL) > worst)
			worst = strtod(v, NULL);
	}
	enum ctq_status st = ctq_trend_put(t, run, CTQ_FAM_VERIFY_WEIGHTS, file, "(all tensors)",
					   "failed checks", "", (double)failed, err);
	if (!st)
		st = ctq_trend_put(t, run, CTQ_FAM_VERIFY_WEIGHTS, file, "(all modules)",
				   "worst rel-L2", "", worst, err);
	return st;
}

/* ---- report section ------------------------------------------------------------ */

struct scheme_sum {
	char name[64];
	size_t modules, failed;
	double lo, hi, limit;
};

enum ctq_status ctq_fam_verify_weights_report(struct ctq_rep *r, const struct ctq_result_file *f)
{
	static const char *const names[] = {"tensor", "module", "scheme", "rel_l2", "rel_l2_max",
					    "verdict", "reason"};
	struct ctq_rep_table R;
	enum ctq_status st = ctq_rep_load_result(r, f, names, 7, 7, &R);
	if (st)
		return st;
	const int c_t = R.col[0], c_m = R.col[1], c_s = R.col[2], c_r = R.col[3], c_l = R.col[4];
	const int c_v = R.col[5], c_why = R.col[6];
	struct scheme_sum *ss = ctq_calloc(R.t.n_rows + 1, sizeof *ss);
	if (!ss)
		return ctq_rep_table_nomem(r, &R);
	size_t ns = 0, failed = 0, modules = 0;
	for (size_t i = 0; i < R.t.n_rows; i++) {
		const bool ok = !strcmp(ctq_table_get(&R.t, i, c_v), "pass");
		failed += !ok;
		if (!ctq_table_get(&R.t, i, c_m)[0])
			continue; /* an inventory row */
		modules++;
		const char *scheme = ctq_table_get(&R.t, i, c_s);
		size_t j = ctq_rep_find_name(ss, ns, sizeof *ss, scheme);
		if (j == ns) {
			snprintf(ss[ns].name, sizeof ss->name, "%s", scheme);
			ss[ns].lo = INFINITY;
			ss[ns].limit = NAN;
			ns++;
		}
		const char *rl = ctq_table_get(&R.t, i, c_r), *lim = ctq_table_get(&R.t, i, c_l);
		if (rl[0]) {
			const double v = strtod(rl, NULL);
			ss[j].lo = v < ss[j].lo ? v : ss[j].lo;
			ss[j].hi = v > ss[j].hi ? v : ss[j].hi;
		}
		if (lim[0])
			ss[j].limit = strtod(lim, NULL);
		ss[j].modules++;
		ss[j].failed += !ok;
	}
	r->checks_failed += failed;
	char title[700];
	snprintf(title, sizeof title, "%s — %zu quantized modules, %zu rows: %zu failed", f->rel,
		 modules, R.t.n_rows, failed);
	ctq_rep_heading(r, 3, title);
	static const char *const cols[] = {"scheme", "modules", "rel-L2 min", "rel-L2 max",
					   "rel_l2_max", "failed", NULL};
	ctq_rep_table_head(r, cols);
	for (size_t j = 0; j < ns; j++) {
		char lo[32], hi[32], lim[32];
		ctq_rep_fmt_g(lo, sizeof lo, isinf(ss[j].lo) ? NAN : ss[j].lo);
		ctq_rep_fmt_g(hi, sizeof hi, isinf(ss[j].lo) ? NAN : ss[j].hi);
		ctq_rep_fmt_g(lim, sizeof lim, ss[j].limit);
		ctq_rep_row_begin(r);
		ctq_rep_cell(r, ss[j].name, NULL);
		ctq_rep_cellf(r, "num", "%zu", ss[j].modules);
		ctq_rep_cell(r, lo, "num");
		ctq_rep_cell(r, hi, "num");
		ctq_rep_cell(r, lim, "num");
		ctq_rep_cellf(r, ss[j].failed ? "num bad" : "num", "%zu", ss[j].failed);
		ctq_rep_row_end(r);
	}
	ctq_rep_table_end(r);
	free(ss);
	if (failed) {
		ctq_rep_para(r, "Failing tensors:");
		static const char *const fc[] = {"tensor", "scheme", "rel-L2", "why", NULL};
		ctq_rep_table_head(r, fc);
		size_t listed = 0;
		for (size_t i = 0; i < R.t.n_rows && listed < CTQ_REP_MAX_LISTED; i++) {
			if (!strcmp(ctq_table_get(&R.t, i, c_v), "pass"))
				continue;
			listed++;
			ctq_rep_row_begin(r);
			ctq_rep_cell(r, ctq_table_get(&R.t, i, c_t), NULL);
			ctq_rep_cell(r, ctq_table_get(&R.t, i, c_s), NULL);
			ctq_rep_cell(r, ctq_table_get(&R.t, i, c_r), "num bad");
			ctq_rep_cell(r, ctq_table_get(&R.t, i, c_why), NULL);
			ctq_rep_row_end(r);
		}
		ctq_rep_table_end(r);
		if (failed > listed) {
			char more[600];
			snprintf(more, sizeof more, "... and %zu more failing rows in %s.", failed - listed,
				 f->rel);
			ctq_rep_para(r, more);
		}
	}
	ctq_table_free(&R.t);
	return CTQ_OK;
}
