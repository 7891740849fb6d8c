/* The token-distribution family (see eval_kld.h). */
#include "families/eval_kld.h"
#include "core/arena.h"
#include "core/json.h"
#include "families/verdict.h"
#include "results/csv_out.h"
#include "results/table.h"
#include "stats/sample.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const win_header[] = {CTQ_EVAL_KLD_CSV_COLUMNS};
static const char *const sum_header[] = {CTQ_EVAL_KLD_SUMMARY_CSV_COLUMNS};
static const char *const hist_header[] = {CTQ_EVAL_KLD_HIST_CSV_COLUMNS};
#define N_COLS(h) (sizeof h / sizeof *h)

int ctq_kld_hist_bin(double kl)
{
	if (!(kl >= pow(10.0, CTQ_KLD_HIST_LOG10_MIN)))
		return 0;
	double b = floor((log10(kl) - CTQ_KLD_HIST_LOG10_MIN) / CTQ_KLD_HIST_STEP + 1e-9);
	return b + 1 >= CTQ_KLD_HIST_BINS - 1 ? CTQ_KLD_HIST_BINS - 1 : (int)b + 1;
}

/* ---- writers ------------------------------------------------------------------ */

enum ctq_status ctq_fam_eval_kld_write_windows(const char *path, const struct ctq_kld_window *w,
					       size_t n, const char *const *source_names,
					       struct ctq_error *err)
{
	struct ctq_csv csv;
	enum ctq_status st = ctq_csv_open(&csv, path, win_header, N_COLS(win_header), err);
	if (st)
		return st;
	for (size_t i = 0; i < n; i++) {
		const struct ctq_kld_window *x = &w[i];
		const double N = (double)x->n;
		ctq_csv_field(&csv, source_names[x->source]);
		ctq_csv_fieldf(&csv, "%zu", x->index);
		ctq_csv_fieldf(&csv, "%lld", (long long)x->start);
		ctq_csv_fieldf(&csv, "%lld", (long long)x->n);
		ctq_csv_fieldf(&csv, "%.17g", x->kl_sum);
		ctq_csv_fieldf(&csv, "%.17g", x->kl_sum / N);
		ctq_csv_fieldf(&csv, "%.17g", x->kl_median);
		ctq_csv_fieldf(&csv, "%.17g", x->kl_max);
		ctq_csv_fieldf(&csv, "%zu", x->agree);
		ctq_csv_fieldf(&csv, "%.17g", (double)x->agree / N);
		ctq_csv_fieldf(&csv, "%.17g", x->nll_ref);
		ctq_csv_fieldf(&csv, "%.17g", x->nll_new);
		ctq_csv_fieldf(&csv, "%.17g", exp(x->nll_ref / N));
		ctq_csv_fieldf(&csv, "%.17g", exp(x->nll_new / N));
		ctq_csv_end_row(&csv);
	}
	return ctq_csv_close(&csv, err);
}

enum ctq_status ctq_fam_eval_kld_write_summary(const char *path, const struct ctq_kld_agg *a,
					       size_t n_sources, const char *const *source_names,
					       int weight_bits, struct ctq_error *err)
{
	struct ctq_csv csv;
	enum ctq_status st = ctq_csv_open(&csv, path, sum_header, N_COLS(sum_header), err);
	if (st)
		return st;
	for (size_t i = 0; i <= n_sources; i++) {
		const struct ctq_kld_agg *x = &a[i];
		ctq_csv_field(&csv, i < n_sources ? source_names[i] : "(all)");
		ctq_csv_fieldf(&csv, "%zu", x->n_tokens);
		ctq_csv_fieldf(&csv, "%zu", x->n_windows);
		const double v[] = {x->kl_mean, x->kl_lo, x->kl_hi, x->kl_median, x->kl_p90,
				    x->kl_p99, x->kl_p999, x->kl_max, x->top1, x->top1_lo, x->top1_hi,
				    x->ppl_ref, x->ppl_new, x->ppl_ratio, x->ppl_ratio_lo,
				    x->ppl_ratio_hi};
		for (size_t k = 0; k < sizeof v / sizeof *v; k++)
			ctq_csv_fieldf(&csv, "%.17g", v[k]);
		if (weight_bits)
			ctq_csv_fieldf(&csv, "%d", weight_bits);
		else
			ctq_csv_field(&csv, "");
		ctq_csv_field(&csv, x->verdict ? x->verdict : "");
		ctq_csv_end_row(&csv);
	}
	return ctq_csv_close(&csv, err);
}

static double bin_low(int b)
{
	return b == 0 ? -INFINITY : CTQ_KLD_HIST_LOG10_MIN + CTQ_KLD_HIST_STEP * (b - 1);
}

static double bin_high(int b)
{
	return b == CTQ_KLD_HIST_BINS - 1 ? INFINITY : CTQ_KLD_HIST_LOG10_MIN + CTQ_KLD_HIST_STEP * b;
}

enum ctq_status ctq_fam_eval_kld_write_hist(const char *path, const uint64_t *hist,
					    size_t n_sources, const char *const *source_names,
					    struct ctq_error *err)
{
	struct ctq_csv csv;
	enum ctq_status st = ctq_csv_open(&csv, path, hist_header, N_COLS(hist_header), err);
	if (st)
		return st;
	for (size_t s = 0; s < n_sources; s++)
		for (int b = 0; b < CTQ_KLD_HIST_BINS; b++) {
			uint64_t c = hist[s * CTQ_KLD_HIST_BINS + (size_t)b];
			if (!c)
				continue;
			ctq_csv_field(&csv, source_names[s]);
			ctq_csv_fieldf(&csv, "%.3f", bin_low(b));
			ctq_csv_fieldf(&csv, "%.3f", bin_high(b));
			ctq_csv_fieldf(&csv, "%llu", (unsigned long long)c);
			ctq_csv_end_row(&csv);
		}
	return ctq_csv_close(&csv, err);
}

/* ---- reader ------------------------------------------------------------------- */

void ctq_fam_eval_kld_windows_free(struct ctq_kld_windows *w)
{
	if (!w)
		return;
	for (size_t i = 0; w->names && i < w->n_sources; i++)
		ctq_free(w->names[i]);
	ctq_free(w->names);
	ctq_free(w->w);
	memset(w, 0, sizeof *w);
}

static char *dup_str(const char *s)
{
	size_t n = strlen(s);
	char *d = ctq_malloc(n + 1);
	if (d)
		memcpy(d, s, n + 1);
	return d;
}

enum ctq_status ctq_fam_eval_kld_read_windows(struct ctq_kld_windows *out, const char *path,
					      struct ctq_error *err)
{
	static const char *const need[] = {"source", "window", "start_token", "tokens",
					   "kl_sum_nats", "kl_median_nats", "kl_max_nats",
					   "top1_agree", "nll_ref_sum_nats", "nll_new_sum_nats"};
	memset(out, 0, sizeof *out);
	struct ctq_table t;
	int c[N_COLS(need)];
	enum ctq_status st = ctq_table_load(&t, path, err);
	if (st)
		return st;
	if ((st = ctq_cmp_need_cols(&t, path, need, (int)N_COLS(need), c, err)))
		goto done;
	out->w = ctq_calloc(t.n_rows ? t.n_rows : 1, sizeof *out->w);
	out->names = ctq_calloc(t.n_rows ? t.n_rows : 1, sizeof *out->names);
	if (!out->w || !out->names) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, path, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < t.n_rows && !st; i++) {
		struct ctq_kld_window *w = &out->w[out->n++];
		const char *s = ctq_table_get(&t, i, c[0]);
		size_t j;
		for (j = 0; j < out->n_sources; j++)
			if (!strcmp(out->names[j], s))
				break;
		if (j == out->n_sources) {
			if (!(out->names[j] = dup_str(s))) {
				st = ctq_error_set(err, CTQ_ERR_NOMEM, path, "out of memory");
				break;
			}
			out->n_sources++;
		}
		w->source = j;
		double v[N_COLS(need)];
		for (size_t k = 1; k < N_COLS(need); k++) {
			v[k] = ctq_table_num(&t, i, c[k]);
			/* A count above 9e15 is no count (a cast of 1e300 to an
			 * integer is undefined; 9e15 < 2^53 prints back whole). */
			if (!isfinite(v[k]) ||
			    ((k <= 3 || k == 7) && (v[k] < 0 || v[k] > 9e15 || v[k] != floor(v[k]))))
				st = ctq_error_set(err, CTQ_ERR_PARSE, path,
						   "row %zu: %s is \"%s\"; expected a %s", i + 2, need[k],
						   ctq_table_get(&t, i, c[k]),
						   k <= 3 || k == 7 ? "count" : "finite number");
		}
		if (st)
			break;
		w->index = (size_t)v[1];
		w->start = (int64_t)v[2];
		w->n = (int64_t)v[3];
		w->kl_sum = v[4], w->kl_median = v[5], w->kl_max = v[6];
		w->agree = (size_t)v[7];
		w->nll_ref = v[8], w->nll_new = v[9];
	}
done:
	ctq_table_free(&t);
	if (st)
		ctq_fam_eval_kld_windows_free(out);
	return st;
}

/* ---- comparison --------------------------------------------------------------- */

struct side {
	double kl, n, agree;
};

/* The mean-KL row of key: a growth beyond kld.mean_factor that ends above
 * kld.mean_floor regresses (gate); otherwise same or changed. */
static enum ctq_status kl_row(struct ctq_cmp_pair *x, const char *key, const struct side *b,
			      const struct side *n, bool gate, struct ctq_error *err)
{
	struct ctq_cmp_row *r = ctq_cmp_new_row(x->c, CTQ_FAM_EVAL_KLD, x->file, key,
						"mean KL nats", err);
	if (!r)
		return CTQ_ERR_NOMEM;
	r->base = b->kl / b->n;
	r->cand = n->kl / n->n;
	r->change = r->base > 0 ? r->cand / r->base : r->cand > 0 ? INFINITY : 1;
	r->summary = gate;
	const double factor = x->p->v[CTQ_POL_KLD_FACTOR], floor_ = x->p->v[CTQ_POL_KLD_FLOOR];
	snprintf(r->detail, sizeof r->detail, "%.0f tokens paired; x%.3g (gate beyond x%g above %g nats)",
		 n->n, r->change, factor, floor_);
	if (r->cand > floor_ && r->change > factor)
		ctq_cmp_set_verdict(x->c, r, gate ? "regression" : "changed", gate);
	else if (r->base > floor_ && r->change < 1 / factor)
		ctq_cmp_set_verdict(x->c, r, gate ? "improvement" : "changed", false);
	else
		snprintf(r->verdict, sizeof r->verdict, "%s", r->cand == r->base ? "same" : "changed");
	return CTQ_OK;
}

/* The top-1 row: a paired t test over windows of the agreement shares; a
 * fall of at least kld.top1_min_drop at p < kld.top1_alpha regresses. */
static enum ctq_status top1_row(struct ctq_cmp_pair *x, const struct side *b, const struct side *n,
				const double *d, size_t nd, struct ctq_error *err)
{
	struct ctq_paired_t pt;
	ctq_paired_t_test(d, nd, &pt);
	struct ctq_cmp_row *r = ctq_cmp_new_row(x->c, CTQ_FAM_EVAL_KLD, x->file, "(all windows)",
						"top-1 agreement", err);
	if (!r)
		return CTQ_ERR_NOMEM;
	r->base = b->agree / b->n;
	r->cand = n->agree / n->n;
	r->change = r->cand - r->base;
	r->p = pt.p;
	r->summary = true;
	const double drop = x->p->v[CTQ_POL_KLD_TOP1_DROP], alpha = x->p->v[CTQ_POL_KLD_TOP1_ALPHA];
	snprintf(r->detail, sizeof r->detail,
		 "%zu windows paired; %+.2f points (paired t over windows, p %.3g; gate a fall of %g points at p < %g)",
		 nd, 100 * r->change, pt.p, 100 * drop, alpha);
	bool sig = nd >= 2 && pt.p < alpha;
	if (sig && r->change <= -drop * (1 - 1e-12))
		ctq_cmp_set_verdict(x->c, r, "regression", true);
	else if (sig && r->change >= drop * (1 - 1e-12))
		ctq_cmp_set_verdict(x->c, r, "improvement", false);
	else
		snprintf(r->verdict, sizeof r->verdict, "%s", r->change == 0 ? "same" : "changed");
	return CTQ_OK;
}

enum ctq_status ctq_fam_eval_kld_compare(struct ctq_cmp_pair *x, struct ctq_error *err)
{
	static const char *const keys[] = {"source", "window", "start_token", "tokens", "kl_sum_nats",
					   "top1_agree"};
	int cb[6], cn[6];
	enum ctq_status st = ctq_cmp_pair_load(x, keys, 3, true, cb, cn, err);
	if (st || (st = ctq_cmp_need_cols(&x->tb, x->base_path, keys + 3, 3, cb + 3, err)) ||
	    (st = ctq_cmp_need_cols(&x->tn, x->new_path, keys + 3, 3, cn + 3, err)))
		return st;
	double *d = ctq_malloc((x->in.n ? x->in.n : 1) * sizeof *d); /* (paired windows) */
	if (!d)
		return ctq_error_set(err, CTQ_ERR_NOMEM, x->file, "out of memory");
	struct side all_b = {0}, all_n = {0}, sb = {0}, sn = {0};
	size_t nd = 0;
	const char *cur = NULL;
	/* The index is sorted by "source, window, start": sources are runs. */
	for (size_t i = 0; i < x->in.n && !st; i++) {
		size_t rb, rn;
		if (!ctq_cmp_paired(x, i, &rb, &rn))
			continue;
		const char *s = ctq_table_get(&x->tn, rn, cn[0]);
		if (cur && strcmp(cur, s) && sn.n > 0) {
			st = kl_row(x, cur, &sb, &sn, false, err);
			memset(&sb, 0, sizeof sb), memset(&sn, 0, sizeof sn);
		}
		cur = s;
		struct side wb = {ctq_table_num(&x->tb, rb, cb[4]), ctq_table_num(&x->tb, rb, cb[3]),
				  ctq_table_num(&x->tb, rb, cb[5])};
		struct side wn = {ctq_table_num(&x->tn, rn, cn[4]), ctq_table_num(&x->tn, rn, cn[3]),
				  ctq_table_num(&x->tn, rn, cn[5])};
		if (!(wb.n > 0) || !(wn.n > 0) || isnan(wb.kl + wn.kl + wb.agree + wn.agree))
			continue;
		struct side *acc[4] = {&all_b, &sb, &all_n, &sn};
		for (int k = 0; k < 4; k++) {
			const struct side *w = k < 2 ? &wb : &wn;
			acc[k]->kl += w->kl, acc[k]->n += w->n, acc[k]->agree += w->agree;
		}
		d[nd++] = wn.agree / wn.n - wb.agree / wb.n;
	}
	if (!st && cur && sn.n > 0)
		st = kl_row(x, cur, &sb, &sn, false, err);
	if (!st && nd) {
		st = kl_row(x, "(all windows)", &all_b, &all_n, true, err);
		if (!st)
			st = top1_row(x, &all_b, &all_n, d, nd, err);
	}
	ctq_free(d);
	if (st)
		return st;
	size_t added, removed;
	ctq_cmp_added_removed(x, &added, &removed);
	if (!nd) {
		struct ctq_cmp_row *r = ctq_cmp_new_row(x->c, CTQ_FAM_EVAL_KLD, x->file, "(all windows)",
							"mean KL nats", err);
		if (!r)
			return CTQ_ERR_NOMEM;
		r->summary = true;
		snprintf(r->detail, sizeof r->detail, "no window in both runs (%zu new, %zu gone): other text or --ctx",
			 added, removed);
		ctq_cmp_set_verdict(x->c, r, "ambiguous", false);
	} else if (added || removed) {
		struct ctq_cmp_row *r = &x->c->rows[x->c->n - 2];
		size_t len = strlen(r->detail);
		snprintf(r->detail + len, sizeof r->detail - len, "; %zu window(s) new, %zu gone", added,
			 removed);
	}
	return CTQ_OK;
}

/* ---- trend -------------------------------------------------------------------- */

enum ctq_status ctq_fam_eval_kld_trend(struct ctq_trend *t, size_t run, const struct ctq_table *tb,
				       const char *path, const char *file, struct ctq_error *err)
{
	static const char *const need[] = {"tokens", "kl_sum_nats", "top1_agree"};
	int c[3];
	enum ctq_status st = ctq_cmp_need_cols(tb, path, need, 3, c, err);
	if (st)
		return st;
	double n = 0, kl = 0, ag = 0;
	for (size_t r = 0; r < tb->n_rows; r++) {
		n += ctq_table_num(tb, r, c[0]);
		kl += ctq_table_num(tb, r, c[1]);
		ag += ctq_table_num(tb, r, c[2]);
	}
	if (!(n > 0))
		return CTQ_OK;
	st = ctq_trend_put(t, run, CTQ_FAM_EVAL_KLD, file, "(all windows)", "mean KL nats", "nats",
			   kl / n, err);
	if (!st)
		st = ctq_trend_put(t, run, CTQ_FAM_EVAL_KLD, file, "(all windows)", "top-1 agreement", "",
				   ag / n, err);
	return st;
}

/* ---- report section ------------------------------------------------------------ */

/* The sibling file name of f (eval_kld.csv) in the run directory. */
static void sibling(const struct ctq_rep *r, const struct ctq_result_file *f, const char *name,
		    char *buf, size_t cap)
{
	snprintf(buf, cap, "%s/%s%s%s", r->dir, f->dir, *f->dir ? "/" : "", name);
}

/* The sentence under the table for the gate ctq eval kld records
 * (ctq_rep_gate). */
static void kld_gate_sentence(char *buf, size_t cap, const cJSON *ev, const char *verdict, bool ok)
{
	const cJSON *pol = ctq_json_get(ev, "policy"), *rel = ctq_json_get(ev, "relative");
	if (rel) { /* eval kld --reference-run: the relative verdict is the gate */
		const cJSON *rp = ctq_json_get(pol, "relative");
		snprintf(buf, cap,
			 "Gate recorded by ctq eval kld against the reference run %s: %s (policy %s, "
			 "relative: mean KL <= %.3gx the reference run's, here %.3fx [%.3f, %.3f]; top-1 at "
			 "most %.3g point(s) below, here [%+.2f, %+.2f]; ppl excess <= %.3gx; the absolute "
			 "mean KL bound stays the outer limit, absolute verdict %s)%s.",
			 ctq_rep_jstr(rel, "reference_run"), verdict, ctq_rep_jstr(pol, "source"),
			 ctq_rep_jnum(ctq_json_get(rp, "kl_factor_max"), "value"), ctq_rep_jnum(rel, "kl_factor"),
			 ctq_rep_jnum(rel, "kl_factor_ci_low"), ctq_rep_jnum(rel, "kl_factor_ci_high"),
			 100 * ctq_rep_jnum(ctq_json_get(rp, "top1_drop_max"), "value"),
			 100 * ctq_rep_jnum(rel, "top1_diff_ci_low"), 100 * ctq_rep_jnum(rel, "top1_diff_ci_high"),
			 ctq_rep_jnum(ctq_json_get(rp, "ppl_excess_factor_max"), "value"),
			 ctq_rep_jstr(ev, "absolute_verdict"), ok ? "" : ": FAILED");
		return;
	}
	snprintf(buf, cap,
		 "Gate recorded by ctq eval kld: %s (policy %s: mean KL <= %.3g nats, top-1 >= "
		 "%.3g%%, ppl ratio <= %.3g; non-inferior only when every 95%% interval is on the "
		 "good side)%s.",
		 verdict, ctq_rep_jstr(pol, "source"),
		 ctq_rep_jnum(ctq_json_get(pol, "kl_mean_max"), "value"),
		 100 * ctq_rep_jnum(ctq_json_get(pol, "top1_min"), "value"),
		 ctq_rep_jnum(ctq_json_get(pol, "ppl_ratio_max"), "value"), ok ? "" : ": FAILED");
}

static void summary_table(struct ctq_rep *r, const struct ctq_table *t)
{
	static const char *const cols[] = {"source", "tokens", "mean KL (95% CI)", "median", "p99",
					   "p99.9", "max", "top-1 % (95% CI)", "ppl ref", "ppl new",
					   "ratio", "verdict", NULL};
	static const char *const names[] = {"tokens", "kl_mean_nats", "kl_ci_low", "kl_ci_high",
					    "kl_median_nats", "kl_p99_nats", "kl_p999_nats",
					    "kl_max_nats", "top1", "top1_ci_low", "top1_ci_high",
					    "ppl_ref", "ppl_new", "ppl_ratio"};
	int c[14];
	for (int k = 0; k < 14; k++)
		c[k] = ctq_table_col(t, names[k]);
	int cs = ctq_table_col(t, "source"), cv = ctq_table_col(t, "verdict");
	ctq_rep_table_head(r, cols);
	for (size_t i = 0; i < t->n_rows; i++) {
		double v[14];
		for (int k = 0; k < 14; k++)
			v[k] = ctq_table_num(t, i, c[k]);
		const char *verdict = ctq_table_get(t, i, cv);
		ctq_rep_row_begin(r);
		ctq_rep_cell(r, ctq_table_get(t, i, cs), i + 1 == t->n_rows ? "strong" : NULL);
		ctq_rep_cellf(r, "num", "%.0f", v[0]);
		ctq_rep_cellf(r, "num", "%.4g [%.4g, %.4g]", v[1], v[2], v[3]);
		for (int k = 4; k < 8; k++)
			ctq_rep_cellf(r, "num", "%.4g", v[k]);
		ctq_rep_cellf(r, "num", "%.2f [%.2f, %.2f]", 100 * v[8], 100 * v[9], 100 * v[10]);
		ctq_rep_cellf(r, "num", "%.4g", v[11]);
		ctq_rep_cellf(r, "num", "%.4g", v[12]);
		ctq_rep_cellf(r, "num", "%.4f", v[13]);
		ctq_rep_cell(r, verdict, strcmp(verdict, "non-inferior") ? "bad" : NULL);
		ctq_rep_row_end(r);
	}
	ctq_rep_table_end(r);
}

/* The CDF of the per-token KL of each source, from the histogram. */
static void cdf_plot(struct ctq_rep *r, const struct ctq_result_file *f, const struct ctq_table *h)
{
	int cs = ctq_table_col(h, "source"), ch = ctq_table_col(h, "log10_kl_high");
	int cn = ctq_table_col(h, "tokens");
	if (cs < 0 || ch < 0 || cn < 0 || !h->n_rows)
		return;
	struct ctq_strbuf data, body;
	ctq_strbuf_init(&data);
	ctq_strbuf_init(&body);
	char name[300];
	ctq_rep_plot_name(name, sizeof name, "kld_cdf", f->dir);
	ctq_strbuf_printf(&body,
			  "set title \"per-token KL(ref || new), cumulative\"\nset xlabel \"KL, nats\"\n"
			  "set ylabel \"share of tokens\"\nset logscale x\nset format x \"1e%%T\"\n"
			  "set yrange [0:1.02]\nset grid\nset key bottom right\nplot ");
	size_t i = 0;
	int idx = 0;
	while (i < h->n_rows) {
		const char *s = ctq_table_get(h, i, cs);
		size_t j = i;
		double total = 0, cum = 0;
		while (j < h->n_rows && !strcmp(ctq_table_get(h, j, cs), s))
			total += ctq_table_num(h, j++, cn);
		ctq_strbuf_printf(&data, "# source %d\n", idx);
		for (size_t k = i; k < j; k++) {
			cum += ctq_table_num(h, k, cn);
			double hi = ctq_table_num(h, k, ch);
			if (isfinite(hi))
				ctq_strbuf_printf(&data, "%.6g %.9g\n", pow(10.0, hi), cum / total);
		}
		ctq_strbuf_append(&data, "\n\n");
		ctq_strbuf_printf(&body, "%s\"%s.dat\" index %d using 1:2 with steps lw 2 title \"", idx ? ", " : "",
				  name, idx);
		for (const char *p = s; *p; p++)
			if (*p != '"' && *p != '\\')
				ctq_strbuf_printf(&body, "%c", *p == '_' ? ' ' : *p);
		ctq_strbuf_append(&body, "\"");
		idx++;
		i = j;
	}
	ctq_strbuf_append(&body, "\n");
	char caption[700];
	snprintf(caption, sizeof caption, "per-token KL CDF, %s", f->rel);
	if (!data.oom && !body.oom)
		ctq_rep_plot(r, name, 900, 420, caption, body.data, data.data);
	ctq_strbuf_free(&data);
	ctq_strbuf_free(&body);
}

enum ctq_status ctq_fam_eval_kld_report(struct ctq_rep *r, const struct ctq_result_file *f)
{
	char path[1200];
	struct ctq_rep_table W;
	struct ctq_table s, h;
	memset(&s, 0, sizeof s), memset(&h, 0, sizeof h);
	enum ctq_status st = ctq_rep_load_result(r, f, NULL, 0, 0, &W);
	if (st)
		return st;
	char cand[300] = "candidate", ref[300] = "reference", v[300], title[900];
	if (ctq_rep_step_option(r->dir, r->display, f->dir, "--model", v, sizeof v))
		snprintf(cand, sizeof cand, "%s", v);
	if (ctq_rep_step_option(r->dir, r->display, f->dir, "--ref-model", v, sizeof v))
		snprintf(ref, sizeof ref, "%s", v);
	snprintf(title, sizeof title, "%s — %s against %s: %zu windows", f->rel, cand, ref, W.t.n_rows);
	ctq_rep_heading(r, 3, title);
	sibling(r, f, "eval_kld_summary.csv", path, sizeof path);
	if (ctq_table_load(&s, path, r->err) == CTQ_OK)
		summary_table(r, &s);
	else
		st = r->err->status;
	if (!st) {
		ctq_rep_gate(r, f->dir, "eval_kld", kld_gate_sentence);
		sibling(r, f, "eval_kld_hist.csv", path, sizeof path);
		if (ctq_table_load(&h, path, r->err) == CTQ_OK)
			cdf_plot(r, f, &h);
		else
			st = r->err->status;
	}
	ctq_table_free(&W.t);
	ctq_table_free(&s);
	ctq_table_free(&h);
	return st;
}

struct point {
	int bits;
	double kl, top1, ratio;
	const char *rel;
};

static int cmp_point(const void *a, const void *b)
{
	const struct point *x = a, *y = b;
	return (y->bits > x->bits) - (y->bits < x->bits);
}

enum ctq_status ctq_fam_eval_kld_report_end(struct ctq_rep *r)
{
	struct point *pt = ctq_calloc(r->res.n ? r->res.n : 1, sizeof *pt);
	if (!pt)
		return ctq_error_set(r->err, CTQ_ERR_NOMEM, r->dir, "out of memory");
	size_t np = 0;
	for (size_t i = 0; i < r->res.n; i++) {
		const struct ctq_result_file *f = &r->res.v[i];
		if (f->fam != CTQ_FAM_EVAL_KLD)
			continue;
		char path[1200];
		struct ctq_table t;
		struct ctq_error e = {0};
		sibling(r, f, "eval_kld_summary.csv", path, sizeof path);
		if (ctq_table_load(&t, path, &e) != CTQ_OK)
			continue;
		int cb = ctq_table_col(&t, "weight_bits"), ck = ctq_table_col(&t, "kl_mean_nats");
		int ct = ctq_table_col(&t, "top1"), cr = ctq_table_col(&t, "ppl_ratio");
		size_t last = t.n_rows - 1;
		double bits = t.n_rows ? ctq_table_num(&t, last, cb) : NAN;
		if (isfinite(bits) && bits >= 1 && bits <= 32)
			pt[np++] = (struct point){(int)bits, ctq_table_num(&t, last, ck),
						  ctq_table_num(&t, last, ct), ctq_table_num(&t, last, cr),
						  f->rel};
		ctq_table_free(&t);
	}
	if (np >= 2) {
		qsort(pt, np, sizeof *pt, cmp_point);
		ctq_rep_heading(r, 3, "Sensitivity: KL against the candidate's weight bits");
		static const char *const cols[] = {"weight bits", "mean KL nats", "top-1 %", "ppl ratio",
						   "file", NULL};
		ctq_rep_table_head(r, cols);
		struct ctq_strbuf data, body;
		ctq_strbuf_init(&data);
		ctq_strbuf_init(&body);
		ctq_strbuf_append(&data, "# bits kl top1\n");
		for (size_t i = 0; i < np; i++) {
			ctq_rep_row_begin(r);
			ctq_rep_cellf(r, "num", "%d", pt[i].bits);
			ctq_rep_cellf(r, "num", "%.4g", pt[i].kl);
			ctq_rep_cellf(r, "num", "%.2f", 100 * pt[i].top1);
			ctq_rep_cellf(r, "num", "%.4f", pt[i].ratio);
			ctq_rep_cell(r, pt[i].rel, NULL);
			ctq_rep_row_end(r);
			ctq_strbuf_printf(&data, "%d %.9g %.9g\n", pt[i].bits, pt[i].kl, 100 * pt[i].top1);
		}
		ctq_rep_table_end(r);
		ctq_strbuf_printf(&body,
				  "set title \"mean KL and top-1 agreement against weight bits\"\n"
				  "set xlabel \"weight bits\"\nset ylabel \"mean KL, nats\"\nset logscale y\n"
				  "set y2label \"top-1 agreement %%\"\nset y2tics\nset ytics nomirror\n"
				  "set y2range [0:100]\nset grid\nset key center right\n"
				  "plot \"kld_sensitivity.dat\" using 1:2 with linespoints lw 2 pt 7 title \"mean KL\", "
				  "\"kld_sensitivity.dat\" using 1:3 axes x1y2 with linespoints lw 2 pt 5 title \"top-1 %%\"\n");
		if (!data.oom && !body.oom)
			ctq_rep_plot(r, "kld_sensitivity", 900, 420, "mean KL and top-1 against weight bits",
				     body.data, data.data);
		ctq_strbuf_free(&data);
		ctq_strbuf_free(&body);
	}
	ctq_free(pt);
	return CTQ_OK;
}
