/* The eval family (see eval.h). */
#include "families/eval.h"
#include "core/arena.h"
#include "families/verdict.h"
#include "stats/accuracy.h"
#include "core/json.h"
#include "results/csv_out.h"
#include "results/table.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ctq_fam_eval_question_csv_row(struct ctq_csv *w, const struct ctq_eval_question_row *r)
{
	ctq_csv_field(w, r->benchmark);
	ctq_csv_field(w, r->protocol);
	ctq_csv_field(w, r->split);
	ctq_csv_field(w, r->subject);
	ctq_csv_field(w, r->category);
	ctq_csv_field(w, r->id);
	ctq_csv_fieldf(w, "%ld", r->line);
	ctq_csv_fieldf(w, "%d", r->shots);
	ctq_csv_fieldf(w, "%lld", r->prompt_tokens);
	ctq_csv_fieldf(w, "%lld", r->context_tokens);
	ctq_csv_field(w, r->truncated ? "true" : "false");
	ctq_csv_field(w, r->prompt_sha256);
	ctq_csv_fieldf(w, "%c", r->answer);
	ctq_csv_fieldf(w, "%c", r->chosen);
	ctq_csv_field(w, r->correct ? "true" : "false");
	for (int k = 0; k < 4; k++)
		ctq_csv_fieldf(w, "%.9g", r->lp[k]);
	if (r->ref_lp) {
		ctq_csv_fieldf(w, "%c", r->ref_chosen);
		ctq_csv_field(w, r->ref_correct ? "true" : "false");
		for (int k = 0; k < 4; k++)
			ctq_csv_fieldf(w, "%.9g", r->ref_lp[k]);
		ctq_csv_fieldf(w, "%.9g", r->kl_ref_new);
	} else {
		for (int k = 0; k < 7; k++)
			ctq_csv_field(w, "");
	}
	ctq_csv_end_row(w);
}

void ctq_fam_eval_group_csv_row(struct ctq_csv *w, const struct ctq_eval_group_row *r)
{
	ctq_csv_field(w, r->level);
	ctq_csv_field(w, r->name);
	ctq_csv_field(w, r->model);
	ctq_csv_fieldf(w, "%zu", r->n_subjects);
	ctq_csv_fieldf(w, "%zu", r->n);
	ctq_csv_fieldf(w, "%zu", r->correct);
	ctq_csv_fieldf(w, "%.17g", r->acc_micro);
	ctq_csv_fieldf(w, "%.17g", r->se_micro);
	ctq_csv_fieldf(w, "%.17g", r->acc_macro);
	ctq_csv_fieldf(w, "%.17g", r->se_macro);
	ctq_csv_end_row(w);
}

void ctq_fam_eval_paired_csv_row(struct ctq_csv *w, const struct ctq_eval_paired_row *r)
{
	const struct ctq_paired *p = r->paired;
	ctq_csv_field(w, r->level);
	ctq_csv_field(w, r->name);
	ctq_csv_fieldf(w, "%zu", p->n);
	ctq_csv_fieldf(w, "%zu", r->ref_correct);
	ctq_csv_fieldf(w, "%zu", r->new_correct);
	ctq_csv_fieldf(w, "%zu", p->a);
	ctq_csv_fieldf(w, "%zu", p->b);
	ctq_csv_fieldf(w, "%zu", p->c);
	ctq_csv_fieldf(w, "%zu", p->d);
	ctq_csv_fieldf(w, "%.17g", p->acc_ref);
	ctq_csv_fieldf(w, "%.17g", p->acc_new);
	ctq_csv_fieldf(w, "%.17g", p->diff);
	ctq_csv_fieldf(w, "%.17g", p->lo);
	ctq_csv_fieldf(w, "%.17g", p->hi);
	ctq_csv_field(w, "newcombe-hybrid-score");
	ctq_csv_fieldf(w, "%.17g", p->wald_lo);
	ctq_csv_fieldf(w, "%.17g", p->wald_hi);
	ctq_csv_fieldf(w, "%.17g", p->p_mcnemar);
	ctq_csv_fieldf(w, "%.17g", r->agreement);
	ctq_csv_fieldf(w, "%.17g", r->kl_mean_nats);
	ctq_csv_fieldf(w, "%g", r->margin);
	ctq_csv_field(w, r->verdict);
	ctq_csv_end_row(w);
}

/* ---- comparison -------------------------------------------------------------- */

struct tally {
	size_t a, b, c, d; /* both right, base right only, new right only, both wrong */
};

static void tally_add(struct tally *t, bool rb, bool rn)
{
	if (rb && rn)
		t->a++;
	else if (rb)
		t->b++;
	else if (rn)
		t->c++;
	else
		t->d++;
}

static enum ctq_status acc_row(struct ctq_cmp_pair *x, const char *key, const char *metric,
			       const struct tally *t, bool gate, struct ctq_error *err)
{
	struct ctq_paired pr;
	ctq_stats_paired(&pr, t->a, t->b, t->c, t->d, CTQ_Z95);
	struct ctq_cmp_row *r = ctq_cmp_new_row(x->c, CTQ_FAM_EVAL, x->file, key, metric, err);
	if (!r)
		return CTQ_ERR_NOMEM;
	r->base = pr.acc_ref;
	r->cand = pr.acc_new;
	r->change = pr.diff;
	r->p = pr.p_mcnemar;
	r->summary = gate;
	snprintf(r->detail, sizeof r->detail,
		 "n %zu; right->wrong %zu, wrong->right %zu; diff %+.2f points, 95%% CI [%+.2f, %+.2f]",
		 pr.n, t->b, t->c, 100 * pr.diff, 100 * pr.lo, 100 * pr.hi);
	double alpha = x->p->v[CTQ_POL_ACC_ALPHA], drop = x->p->v[CTQ_POL_ACC_MIN_DROP];
	if (!gate) {
		snprintf(r->verdict, sizeof r->verdict, "%s", t->b + t->c ? "changed" : "same");
		return CTQ_OK;
	}
	/* A relative epsilon so that a drop of exactly min_drop gates. */
	bool sig = pr.p_mcnemar < alpha;
	if (sig && pr.diff <= -drop * (1 - 1e-12))
		ctq_cmp_set_verdict(x->c, r, "regression", true);
	else if (sig && pr.diff >= drop * (1 - 1e-12))
		ctq_cmp_set_verdict(x->c, r, "improvement", false);
	return CTQ_OK;
}

enum ctq_status ctq_fam_eval_compare(struct ctq_cmp_pair *x, struct ctq_error *err)
{
	static const char *const keys[] = {"benchmark", "subject", "id", "correct"};
	int cb[4], cn[4];
	enum ctq_status st = ctq_cmp_pair_load(x, keys, 3, true, cb, cn, err);
	if (st || (st = ctq_cmp_need_cols(&x->tb, x->base_path, keys + 3, 1, cb + 3, err)) ||
	    (st = ctq_cmp_need_cols(&x->tn, x->new_path, keys + 3, 1, cn + 3, err)))
		return st;
	int rcb = ctq_table_col(&x->tb, "ref_correct"), rcn = ctq_table_col(&x->tn, "ref_correct");
	int hb = ctq_table_col(&x->tb, "prompt_sha256"), hn = ctq_table_col(&x->tn, "prompt_sha256");
	int sn = ctq_table_col(&x->tn, "subject");
	int chb = ctq_table_col(&x->tb, "chosen"), chn = ctq_table_col(&x->tn, "chosen");
	struct tally all = {0}, ref = {0}, subj = {0};
	size_t prompt_diff = 0, n_ref = 0, added, removed, n_chosen = 0, n_agree = 0;
	const char *cur = NULL;
	/* The index is sorted by "benchmark, subject, id": subjects are runs. */
	for (size_t i = 0; i < x->in.n && !st; i++) {
		size_t rb, rn;
		if (!ctq_cmp_paired(x, i, &rb, &rn))
			continue;
		const char *s = ctq_table_get(&x->tn, rn, sn);
		if (cur && strcmp(cur, s) != 0) {
			st = acc_row(x, cur, "accuracy", &subj, false, err);
			memset(&subj, 0, sizeof subj);
		}
		cur = s;
		bool okb = ctq_csv_truthy(ctq_table_get(&x->tb, rb, cb[3]));
		bool okn = ctq_csv_truthy(ctq_table_get(&x->tn, rn, cn[3]));
		tally_add(&all, okb, okn);
		tally_add(&subj, okb, okn);
		const char *rfb = ctq_table_get(&x->tb, rb, rcb), *rfn = ctq_table_get(&x->tn, rn, rcn);
		if (*rfb && *rfn) {
			tally_add(&ref, ctq_csv_truthy(rfb), ctq_csv_truthy(rfn));
			n_ref++;
		}
		if (hb >= 0 && hn >= 0 &&
		    strcmp(ctq_table_get(&x->tb, rb, hb), ctq_table_get(&x->tn, rn, hn)) != 0)
			prompt_diff++;
		if (chb >= 0 && chn >= 0) {
			n_chosen++;
			n_agree += !strcmp(ctq_table_get(&x->tb, rb, chb), ctq_table_get(&x->tn, rn, chn));
		}
	}
	if (!st && cur)
		st = acc_row(x, cur, "accuracy", &subj, false, err);
	if (!st)
		st = acc_row(x, "(all questions)", "accuracy", &all, true, err);
	if (!st && n_ref)
		st = acc_row(x, "(all questions)", "reference accuracy", &ref, true, err);
	if (st)
		return st;
	ctq_cmp_added_removed(x, &added, &removed);
	if (prompt_diff || added || removed) {
		struct ctq_cmp_row *r = &x->c->rows[x->c->n - (n_ref ? 2 : 1)];
		size_t len = strlen(r->detail);
		snprintf(r->detail + len, sizeof r->detail - len,
			 "; %zu prompt(s) differ, %zu question(s) new, %zu gone", prompt_diff, added,
			 removed);
	}
	if (n_chosen) {
		/* Argmax agreement: the share of questions whose chosen letter is the
		 * same in both runs (TP against one rank, a kernel change against the
		 * last build). Informational: accuracy gates, agreement explains. */
		struct ctq_cmp_row *r = ctq_cmp_new_row(x->c, CTQ_FAM_EVAL, x->file,
							"(all questions)", "answer agreement", err);
		if (!r)
			return CTQ_ERR_NOMEM;
		r->cand = (double)n_agree / (double)n_chosen;
		r->summary = true;
		snprintf(r->verdict, sizeof r->verdict, "%s", n_agree == n_chosen ? "same" : "changed");
		snprintf(r->detail, sizeof r->detail,
			 "%zu of %zu questions choose the same letter (%.2f%%), %zu differ", n_agree,
			 n_chosen, 100.0 * r->cand, n_chosen - n_agree);
	}
	return CTQ_OK;
}

/* ---- trend ------------------------------------------------------------------- */

enum ctq_status ctq_fam_eval_trend(struct ctq_trend *t, size_t run, const struct ctq_table *tb,
				   const char *path, const char *file, struct ctq_error *err)
{
	int cc = ctq_table_col(tb, "correct"), rc = ctq_table_col(tb, "ref_correct");
	if (cc < 0)
		return ctq_error_set(err, CTQ_ERR_PARSE, path, "has no column \"correct\"");
	size_t k = 0, kr = 0, nr = 0;
	enum ctq_status st = CTQ_OK;
	for (size_t r = 0; r < tb->n_rows; r++) {
		k += ctq_csv_truthy(ctq_table_get(tb, r, cc));
		const char *s = ctq_table_get(tb, r, rc);
		if (*s) {
			nr++;
			kr += ctq_csv_truthy(s);
		}
	}
	if (tb->n_rows)
		st = ctq_trend_put(t, run, CTQ_FAM_EVAL, file, "(all questions)", "accuracy", "",
				   (double)k / (double)tb->n_rows, err);
	if (!st && nr)
		st = ctq_trend_put(t, run, CTQ_FAM_EVAL, file, "(all questions)",
				   "reference accuracy", "", (double)kr / (double)nr, err);
	return st;
}

/* ---- report section ------------------------------------------------------------ */

struct subject {
	char name[128];
	size_t n, k, kr;
	size_t a, b, c, d; /* reference (ref) vs candidate (new), stats/accuracy.h */
};

/* The sentence under the table for the gate ctq eval records (ctq_rep_gate). */
static void eval_gate_sentence(char *buf, size_t cap, const cJSON *ev, const char *verdict, bool ok)
{
	snprintf(buf, cap,
		 "Gate recorded by ctq eval: %s (margin %.3g points overall, %.3g per subject with "
		 "n >= %.0f; non-inferior only when the whole 95%% interval lies above -margin)%s.",
		 verdict, ctq_rep_jnum(ev, "margin_points"), ctq_rep_jnum(ev, "subject_margin_points"),
		 ctq_rep_jnum(ev, "min_subject_n"), ok ? "" : ": FAILED");
}

enum ctq_status ctq_fam_eval_report(struct ctq_rep *r, const struct ctq_result_file *f)
{
	static const char *const names[] = {"subject", "correct", "ref_correct", "benchmark",
					    "protocol", "shots"};
	struct ctq_rep_table R;
	enum ctq_status st = ctq_rep_load_result(r, f, names, 6, 2, &R);
	if (st)
		return st;
	const int cs = R.col[0], cc = R.col[1], cr = R.col[2], cb = R.col[3], cp = R.col[4];
	const int csh = R.col[5];
	struct subject *sj = ctq_calloc(R.t.n_rows + 2, sizeof *sj);
	if (!sj)
		return ctq_rep_table_nomem(r, &R);
	size_t ns = 0;
	bool have_ref = cr >= 0 && R.t.n_rows && *ctq_table_get(&R.t, 0, cr);
	struct subject all = {.name = "overall (micro)"};
	for (size_t i = 0; i < R.t.n_rows; i++) {
		const char *s = ctq_table_get(&R.t, i, cs);
		size_t j = ctq_rep_find_name(sj, ns, sizeof *sj, s);
		if (j == ns)
			snprintf(sj[ns++].name, sizeof sj->name, "%s", s);
		bool ok = ctq_csv_truthy(ctq_table_get(&R.t, i, cc));
		bool okr = have_ref && ctq_csv_truthy(ctq_table_get(&R.t, i, cr));
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
	if (ctq_rep_step_option(r->dir, r->display, f->dir, "--model", v, sizeof v))
		snprintf(cand, sizeof cand, "candidate %s", v);
	if (ctq_rep_step_option(r->dir, r->display, f->dir, "--ref-model", v, sizeof v))
		snprintf(ref, sizeof ref, "reference %s", v);
	char title[800];
	snprintf(title, sizeof title, "%s — %s, protocol %s, %s-shot: %zu questions in %zu subjects",
		 f->rel, cb >= 0 && R.t.n_rows ? ctq_table_get(&R.t, 0, cb) : "?",
		 cp >= 0 && R.t.n_rows ? ctq_table_get(&R.t, 0, cp) : "?",
		 csh >= 0 && R.t.n_rows ? ctq_table_get(&R.t, 0, csh) : "?", R.t.n_rows, ns);
	ctq_rep_heading(r, 3, title);
	char line[800];
	snprintf(line, sizeof line, "%s%s%s.", cand, have_ref ? " against " : "", have_ref ? ref : "");
	ctq_rep_para(r, line);
	static const char *const cols_ref[] = {"subject", "n", "candidate %", "reference %",
					       "delta (points)", "95% CI (Newcombe)", "right->wrong",
					       "wrong->right", "McNemar p", NULL};
	static const char *const cols_one[] = {"subject", "n", "accuracy %", "SE (points)", NULL};
	ctq_rep_table_head(r, have_ref ? cols_ref : cols_one);
	double macro = 0, macro_r = 0;
	for (size_t j = 0; j <= ns; j++) {
		const struct subject *s = j < ns ? &sj[j] : &all;
		char a[32], b[32];
		ctq_rep_row_begin(r);
		ctq_rep_cell(r, s->name, j == ns ? "strong" : NULL);
		ctq_rep_cellf(r, "num", "%zu", s->n);
		ctq_rep_fmt_pct(a, sizeof a, s->n ? (double)s->k / (double)s->n : NAN);
		ctq_rep_cell(r, a, "num");
		if (j < ns && s->n) {
			macro += (double)s->k / (double)s->n / (double)ns;
			macro_r += (double)s->kr / (double)s->n / (double)ns;
		}
		if (have_ref) {
			struct ctq_paired p;
			ctq_stats_paired(&p, s->a, s->b, s->c, s->d, CTQ_Z95);
			ctq_rep_fmt_pct(b, sizeof b, p.acc_ref);
			ctq_rep_cell(r, b, "num");
			ctq_rep_cellf(r, p.diff < 0 ? "num bad" : "num", "%+.2f", 100 * p.diff);
			ctq_rep_cellf(r, "num", "[%+.2f, %+.2f]", 100 * p.lo, 100 * p.hi);
			ctq_rep_cellf(r, "num", "%zu", s->b);
			ctq_rep_cellf(r, "num", "%zu", s->c);
			ctq_rep_cellf(r, "num", "%.3g", p.p_mcnemar);
		} else {
			ctq_rep_cellf(r, "num", "%.2f", 100 * ctq_stats_binom_se(s->k, s->n));
		}
		ctq_rep_row_end(r);
	}
	ctq_rep_table_end(r);
	snprintf(line, sizeof line, "Macro average (mean of %zu subject accuracies): %.2f%%%s%.2f%s.",
		 ns, 100 * macro, have_ref ? " candidate, " : "", have_ref ? 100 * macro_r : 0.0,
		 have_ref ? "% reference" : "");
	if (!have_ref)
		snprintf(line, sizeof line, "Macro average (mean of %zu subject accuracies): %.2f%%.", ns,
			 100 * macro);
	ctq_rep_para(r, line);
	ctq_rep_gate(r, f->dir, "eval", eval_gate_sentence);

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
	ctq_rep_plot_name(name, sizeof name, "accuracy", f->dir);
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
		ctq_rep_plot(r, name, 1000, have_ref ? 700 : 420, caption, body.data, data.data);
	ctq_strbuf_free(&data);
	ctq_strbuf_free(&body);
	free(sj);
	ctq_table_free(&R.t);
	return CTQ_OK;
}
