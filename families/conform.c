/* The conform family (see conform.h). */
#include "families/conform.h"
#include "conform/suite.h"
#include "core/arena.h"
#include "families/verdict.h"
#include "results/csv_out.h"
#include "results/table.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ctq_fam_conform_csv_row(struct ctq_csv *w, const struct ctq_check *k)
{
	ctq_csv_field(w, k->case_id);
	ctq_csv_field(w, k->file);
	ctq_csv_field(w, ctq_semantics_name(k->sem));
	ctq_csv_field(w, k->name);
	ctq_csv_field(w, k->expected);
	ctq_csv_field(w, k->actual);
	ctq_csv_field(w, k->passed ? "pass" : "fail");
	ctq_csv_field(w, k->detail);
	ctq_csv_end_row(w);
}

/* ---- comparison -------------------------------------------------------------- */

enum ctq_status ctq_fam_conform_compare(struct ctq_cmp_pair *x, struct ctq_error *err)
{
	static const char *const keys[] = {"case_id", "semantics", "check", "outcome", "detail"};
	int cb[5], cn[5];
	enum ctq_status st = ctq_cmp_pair_load(x, keys, 3, true, cb, cn, err);
	if (st || (st = ctq_cmp_need_cols(&x->tb, x->base_path, keys + 3, 2, cb + 3, err)) ||
	    (st = ctq_cmp_need_cols(&x->tn, x->new_path, keys + 3, 2, cn + 3, err)))
		return st;
	size_t fail_b = 0, fail_n = 0, flips = 0, fixes = 0, added, removed;
	for (size_t r = 0; r < x->tb.n_rows; r++)
		fail_b += strcmp(ctq_table_get(&x->tb, r, cb[3]), "pass") != 0;
	for (size_t r = 0; r < x->tn.n_rows; r++)
		fail_n += strcmp(ctq_table_get(&x->tn, r, cn[3]), "pass") != 0;
	for (size_t i = 0; i < x->in.n; i++) {
		size_t rb, rn;
		if (!ctq_cmp_paired(x, i, &rb, &rn))
			continue;
		const char *ob = ctq_table_get(&x->tb, rb, cb[3]);
		const char *on = ctq_table_get(&x->tn, rn, cn[3]);
		if (!strcmp(ob, on))
			continue;
		struct ctq_cmp_row *r = ctq_cmp_new_row(x->c, CTQ_FAM_CONFORM, x->file,
							x->in.v[i].key, NULL, err);
		if (!r)
			return CTQ_ERR_NOMEM;
		snprintf(r->metric, sizeof r->metric, "outcome %s -> %s", ob, on);
		bool bad = !strcmp(ob, "pass");
		ctq_cmp_set_verdict(x->c, r, bad ? "regression" : "improvement", bad);
		snprintf(r->detail, sizeof r->detail, "%s",
			 bad ? ctq_table_get(&x->tn, x->in.v[i].row, cn[4]) : "now passes");
		bad ? flips++ : fixes++;
	}
	ctq_cmp_added_removed(x, &added, &removed);
	struct ctq_cmp_row *r = ctq_cmp_summary_row(x, CTQ_FAM_CONFORM, "(all checks)", "failed checks",
						    (double)fail_b, (double)fail_n, flips, fixes, err);
	if (!r)
		return CTQ_ERR_NOMEM;
	snprintf(r->detail, sizeof r->detail,
		 "%zu checks paired: %zu pass->fail, %zu fail->pass; %zu new, %zu gone",
		 x->in.n - added, flips, fixes, added, removed);
	return CTQ_OK;
}

/* ---- trend ------------------------------------------------------------------- */

enum ctq_status ctq_fam_conform_trend(struct ctq_trend *t, size_t run, const struct ctq_table *tb,
				      const char *path, const char *file, struct ctq_error *err)
{
	int oc = ctq_table_col(tb, "outcome");
	if (oc < 0)
		return ctq_error_set(err, CTQ_ERR_PARSE, path, "has no column \"outcome\"");
	size_t failed = 0;
	for (size_t r = 0; r < tb->n_rows; r++)
		failed += strcmp(ctq_table_get(tb, r, oc), "pass") != 0;
	enum ctq_status st = ctq_trend_put(t, run, CTQ_FAM_CONFORM, file, "(all checks)",
					   "failed checks", "", (double)failed, err);
	if (!st)
		st = ctq_trend_put(t, run, CTQ_FAM_CONFORM, file, "(all checks)", "checks", "",
				   (double)tb->n_rows, err);
	return st;
}

/* ---- report section ------------------------------------------------------------ */

struct folder {
	char name[128];
	size_t cases, passed, failed;
	char last_case[256];
};


enum ctq_status ctq_fam_conform_report(struct ctq_rep *r, const struct ctq_result_file *f)
{
	static const char *const names[] = {"case_id", "outcome", "semantics", "check",
					    "expected", "actual", "detail"};
	struct ctq_rep_table R;
	enum ctq_status st = ctq_rep_load_result(r, f, names, 7, 2, &R);
	if (st)
		return st;
	const int c_case = R.col[0], c_out = R.col[1], c_sem = R.col[2], c_chk = R.col[3];
	const int c_exp = R.col[4], c_act = R.col[5], c_det = R.col[6];
	struct folder *fs = ctq_calloc(R.t.n_rows + 1, sizeof *fs);
	if (!fs)
		return ctq_rep_table_nomem(r, &R);
	size_t nf = 0, passed = 0, failed = 0;
	for (size_t i = 0; i < R.t.n_rows; i++) {
		const char *id = ctq_table_get(&R.t, i, c_case);
		size_t k = strcspn(id, "/");
		char name[128];
		snprintf(name, sizeof name, "%.*s", id[k] ? (int)k : 5, id[k] ? id : "(top)");
		size_t j = ctq_rep_find_name(fs, nf, sizeof *fs, name);
		if (j == nf)
			snprintf(fs[nf++].name, sizeof fs->name, "%s", name);
		if (strcmp(fs[j].last_case, id) != 0) {
			fs[j].cases++;
			snprintf(fs[j].last_case, sizeof fs[j].last_case, "%s", id);
		}
		bool ok = !strcmp(ctq_table_get(&R.t, i, c_out), "pass");
		ok ? fs[j].passed++ : fs[j].failed++;
		ok ? passed++ : failed++;
	}
	r->checks_failed += failed;
	char title[700];
	snprintf(title, sizeof title, "%s — %zu checks: %zu passed, %zu failed", f->rel, R.t.n_rows,
		 passed, failed);
	ctq_rep_heading(r, 3, title);
	static const char *const cols[] = {"suite folder", "cases", "checks", "passed", "failed", NULL};
	ctq_rep_table_head(r, cols);
	for (size_t j = 0; j < nf; j++) {
		ctq_rep_row_begin(r);
		ctq_rep_cell(r, fs[j].name, NULL);
		ctq_rep_cellf(r, "num", "%zu", fs[j].cases);
		ctq_rep_cellf(r, "num", "%zu", fs[j].passed + fs[j].failed);
		ctq_rep_cellf(r, "num", "%zu", fs[j].passed);
		ctq_rep_cellf(r, fs[j].failed ? "num bad" : "num", "%zu", fs[j].failed);
		ctq_rep_row_end(r);
	}
	ctq_rep_table_end(r);
	free(fs);
	if (failed) {
		ctq_rep_para(r, "Failing checks:");
		static const char *const fc[] = {"case", "semantics", "check", "expected", "actual",
						 "why", NULL};
		ctq_rep_table_head(r, fc);
		size_t listed = 0;
		for (size_t i = 0; i < R.t.n_rows && listed < CTQ_REP_MAX_LISTED; i++) {
			if (!strcmp(ctq_table_get(&R.t, i, c_out), "pass"))
				continue;
			listed++;
			ctq_rep_row_begin(r);
			ctq_rep_cell(r, ctq_table_get(&R.t, i, c_case), NULL);
			ctq_rep_cell(r, ctq_table_get(&R.t, i, c_sem), NULL);
			ctq_rep_cell(r, ctq_table_get(&R.t, i, c_chk), NULL);
			ctq_rep_cell(r, ctq_table_get(&R.t, i, c_exp), NULL);
			ctq_rep_cell(r, ctq_table_get(&R.t, i, c_act), "bad");
			ctq_rep_cell(r, ctq_table_get(&R.t, i, c_det), NULL);
			ctq_rep_row_end(r);
		}
		ctq_rep_table_end(r);
		if (failed > listed) {
			char more[600];
			snprintf(more, sizeof more, "... and %zu more failing checks in %s.", failed - listed,
				 f->rel);
			ctq_rep_para(r, more);
		}
	}
	ctq_table_free(&R.t);
	return CTQ_OK;
}
