/* ctq regression comparison (see compare.h): the driver. It pairs the
 * result files of two runs (or N for a trend) and hands each pair to its
 * family (families/<family>.c, reached through its row of ctq_families[],
 * families/registry.h), which keys, compares and tabulates its own CSV with
 * the machinery of families/verdict.c; the plan steps, the interleaved run
 * sets (--ab) and the outputs are here. */
#include "reports/compare.h"
#include "core/arena.h"
#include "families/verdict.h"
#include "core/json.h"
#include "core/fileio.h"
#include "families/registry.h"
#include "results/csv_out.h"
#include "results/run.h"
#include "stats/sample.h"
#include "results/table.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- steps of plan runs -------------------------------------------------------- */

static const char *step_status(const cJSON *steps, const char *id)
{
	const cJSON *s;
	cJSON_ArrayForEach(s, steps)
	{
		const cJSON *sid = ctq_json_get(s, "id"), *st = ctq_json_get(s, "status");
		if (cJSON_IsString(sid) && !strcmp(sid->valuestring, id) && cJSON_IsString(st))
			return st->valuestring;
	}
	return NULL;
}

static enum ctq_status cmp_steps(struct ctq_comparison *c, const cJSON *mb, const cJSON *mn,
				 struct ctq_error *err)
{
	const cJSON *sb = ctq_json_get(mb, "steps"), *sn = ctq_json_get(mn, "steps");
	if (!cJSON_IsArray(sb) || !cJSON_IsArray(sn))
		return CTQ_OK;
	const cJSON *s;
	cJSON_ArrayForEach(s, sn)
	{
		const cJSON *id = ctq_json_get(s, "id"), *stn = ctq_json_get(s, "status");
		if (!cJSON_IsString(id) || !cJSON_IsString(stn))
			continue;
		const char *ob = step_status(sb, id->valuestring), *on = stn->valuestring;
		if (!ob || !strcmp(ob, on))
			continue;
		struct ctq_cmp_row *r = ctq_cmp_new_row(c, CTQ_FAM_STEPS, "manifest.json",
							id->valuestring, NULL, err);
		if (!r)
			return CTQ_ERR_NOMEM;
		snprintf(r->metric, sizeof r->metric, "status %s -> %s", ob, on);
		bool bad = !strcmp(ob, "passed") && (!strcmp(on, "failed") || !strcmp(on, "error"));
		bool good = strcmp(ob, "passed") != 0 && strcmp(ob, "skipped") != 0 &&
			    !strcmp(on, "passed");
		const cJSON *why = ctq_json_get(s, "reason");
		snprintf(r->detail, sizeof r->detail, "%s", cJSON_IsString(why) ? why->valuestring : "");
		ctq_cmp_set_verdict(c, r, bad ? "regression" : good ? "improvement" : "changed", bad);
	}
	return CTQ_OK;
}

/* ---- pairing ----------------------------------------------------------------- */

struct pairing {
	int *match; /* (nb) index into new results or -1 */
	bool *used; /* (nn) */
};

static enum ctq_status pair_files(const struct ctq_results *rb, const struct ctq_results *rn,
				  struct pairing *pg, struct ctq_error *err)
{
	pg->match = ctq_malloc((rb->n + 1) * sizeof *pg->match);
	pg->used = ctq_calloc(rn->n + 1, sizeof *pg->used);
	if (!pg->match || !pg->used)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "compare", "out of memory");
	for (size_t i = 0; i < rb->n; i++) {
		pg->match[i] = -1;
		for (size_t j = 0; j < rn->n; j++)
			if (!pg->used[j] && rb->v[i].fam == rn->v[j].fam && !strcmp(rb->v[i].rel, rn->v[j].rel)) {
				pg->match[i] = (int)j;
				pg->used[j] = true;
				break;
			}
	}
	/* One unpaired file of a family on each side pairs whatever its path. */
	for (int f = 0; f < CTQ_FAM_COUNT; f++) {
		int ub = -1, un = -1, nb = 0, nn = 0;
		for (size_t i = 0; i < rb->n; i++)
			if ((int)rb->v[i].fam == f && pg->match[i] < 0)
				ub = (int)i, nb++;
		for (size_t j = 0; j < rn->n; j++)
			if ((int)rn->v[j].fam == f && !pg->used[j])
				un = (int)j, nn++;
		if (nb == 1 && nn == 1) {
			pg->match[ub] = un;
			pg->used[un] = true;
		}
	}
	return CTQ_OK;
}

static void pairing_free(struct pairing *pg)
{
	free(pg->match);
	free(pg->used);
}

/* A family with files in the baseline and none in the new run: one row,
 * a regression unless the policy exempts the family. */
static enum ctq_status missing_families(struct ctq_comparison *c, const struct ctq_results *rb,
					const struct ctq_results *rn,
					const struct ctq_compare_policy *p, struct ctq_error *err)
{
	for (int f = 0; f < CTQ_FAM_COUNT; f++) {
		size_t nb = 0, nn = 0;
		for (size_t i = 0; i < rb->n; i++)
			nb += (int)rb->v[i].fam == f;
		for (size_t j = 0; j < rn->n; j++)
			nn += (int)rn->v[j].fam == f;
		if (!nb || nn)
			continue;
		const char *file = ctq_family_file((enum ctq_family)f);
		struct ctq_cmp_row *r = ctq_cmp_new_row(c, f, file, "(family)", "present", err);
		if (!r)
			return CTQ_ERR_NOMEM;
		enum ctq_policy_key k = (enum ctq_policy_key)(CTQ_POL_MISSING_FAMILY + f);
		bool bad = p->v[k] != 0;
		r->summary = true;
		ctq_cmp_set_verdict(c, r, "removed", bad);
		snprintf(r->detail, sizeof r->detail,
			 "the %s family is missing from the new run: the baseline has %zu %s file(s), "
			 "the new run none (%s: %s)",
			 ctq_family_name((enum ctq_family)f), nb, file, ctq_compare_policy_name(k),
			 bad ? "a regression" : p->reason[k]);
	}
	return CTQ_OK;
}

enum ctq_status ctq_compare_runs(struct ctq_comparison *c, const char *base_dir,
				 const char *new_dir, const struct ctq_compare_policy *p,
				 struct ctq_error *err)
{
	memset(c, 0, sizeof *c);
	struct ctq_results rb = {0}, rn = {0};
	struct pairing pg = {0};
	cJSON *mb = NULL, *mn = NULL;
	enum ctq_status st;
	if ((st = ctq_results_find(&rb, base_dir, ctq_family_by_file, err)) ||
	    (st = ctq_results_find(&rn, new_dir, ctq_family_by_file, err)) ||
	    (st = ctq_results_manifest(base_dir, &mb, err)) || (st = ctq_results_manifest(new_dir, &mn, err)))
		goto done;
	if (!rb.n && !rn.n && !(cJSON_IsArray(ctq_json_get(mb, "steps")) &&
				cJSON_IsArray(ctq_json_get(mn, "steps")))) {
		st = ctq_error_set(err, CTQ_ERR_USAGE, new_dir,
				   "neither run holds results to compare (conform.csv, probe.csv, "
				   "bench_model.csv, bench_gemm.csv, bench_serve.csv, "
				   "eval_questions.csv, or a plan's steps)");
		goto done;
	}
	char wb[200], wn[200];
	bool bb = ctq_compare_busy_host(mb, p, wb, sizeof wb), bn = ctq_compare_busy_host(mn, p, wn, sizeof wn);
	if (bb || bn)
		snprintf(c->busy_host, sizeof c->busy_host, "busy host, %s%s%s%s%s", bb ? "base: " : "",
			 bb ? wb : "", bb && bn ? "; " : "", bn ? "new: " : "", bn ? wn : "");
	if ((st = cmp_steps(c, mb, mn, err)) || (st = pair_files(&rb, &rn, &pg, err)) ||
	    (st = missing_families(c, &rb, &rn, p, err)))
		goto done;
	for (size_t i = 0; i < rb.n && !st; i++) {
		char pb[1200], pn[1200], disp[1100];
		const struct ctq_result_file *fb = &rb.v[i];
		if (pg.match[i] < 0) {
			struct ctq_cmp_row *r = ctq_cmp_new_row(c, (int)fb->fam, fb->rel,
								"(file)", "present", err);
			if (!r) {
				st = CTQ_ERR_NOMEM;
				break;
			}
			r->summary = true;
			bool bad = p->v[CTQ_POL_MISSING_IS_REGRESSION] != 0;
			ctq_cmp_set_verdict(c, r, "removed", bad);
			snprintf(r->detail, sizeof r->detail, "only in the baseline run");
			continue;
		}
		const struct ctq_result_file *fn = &rn.v[pg.match[i]];
		snprintf(pb, sizeof pb, "%s/%s", base_dir, fb->rel);
		snprintf(pn, sizeof pn, "%s/%s", new_dir, fn->rel);
		if (strcmp(fb->rel, fn->rel) != 0)
			snprintf(disp, sizeof disp, "%s (base %s)", fn->rel, fb->rel);
		else
			snprintf(disp, sizeof disp, "%s", fn->rel);
		struct ctq_cmp_pair x = {.c = c, .p = p, .file = disp, .base_path = pb, .new_path = pn,
					 .busy = c->busy_host[0] ? c->busy_host : NULL};
		const struct ctq_family_def *d = ctq_family(fb->fam);
		if (d) {
			c->n_files++;
			st = d->compare(&x, err);
		}
		ctq_cmp_pair_free(&x);
	}
	for (size_t j = 0; j < rn.n && !st; j++) {
		if (pg.used[j])
			continue;
		struct ctq_cmp_row *r = ctq_cmp_new_row(c, (int)rn.v[j].fam, rn.v[j].rel,
							"(file)", "present", err);
		if (!r) {
			st = CTQ_ERR_NOMEM;
			break;
		}
		r->summary = true;
		ctq_cmp_set_verdict(c, r, "added", false);
		snprintf(r->detail, sizeof r->detail, "only in the new run");
	}
done:
	pairing_free(&pg);
	ctq_results_free(&rb);
	ctq_results_free(&rn);
	cJSON_Delete(mb);
	cJSON_Delete(mn);
	if (st)
		ctq_comparison_free(c);
	return st;
}

/* ---- interleaved run sets (--ab) --------------------------------------------- */

struct ab_run {
	char dir[1200];
	const char *name; /* into dir */
	double t;         /* started_unix_s */
	int pair, side;
};

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of set's subfolders, sorted (owned, *n of them). */
static enum ctq_status ab_list(const char *set, char ***out, size_t *n, struct ctq_error *err)
{
	*out = NULL;
	*n = 0;
	if (ctq_run_dir_kind(set) == CTQ_RUN_DIR_FINISHED)
		return ctq_error_set(err, CTQ_ERR_USAGE, set,
				     "is one run directory; --ab compares two run sets (folders of runs "
				     "made by tools/ab-run.sh)");
	DIR *d = opendir(set);
	if (!d)
		return ctq_error_set(err, CTQ_ERR_USAGE, set, "cannot be read as a run set: %s",
				     strerror(errno));
	enum ctq_status st = CTQ_OK;
	size_t cap = 0;
	struct dirent *e;
	while ((e = readdir(d)) && !st) {
		if (e->d_name[0] == '.')
			continue;
		char path[1200];
		snprintf(path, sizeof path, "%s/%s", set, e->d_name);
		if (!ctq_path_is_dir(path))
			continue; /* a log beside the runs */
		void *v = *out;
		if (!ctq_grow(&v, &cap, *n + 1, sizeof **out)) {
			st = ctq_error_set(err, CTQ_ERR_NOMEM, set, "out of memory");
			break;
		}
		*out = v;
		if (!((*out)[*n] = ctq_strdup(e->d_name)))
			st = ctq_error_set(err, CTQ_ERR_NOMEM, set, "out of memory");
		else
			(*n)++;
	}
	closedir(d);
	if (!st && !*n)
		st = ctq_error_set(err, CTQ_ERR_USAGE, set, "holds no run directories");
	if (!st)
		qsort(*out, *n, sizeof **out, cmp_name);
	return st;
}

static void names_free(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

static int cmp_start(const void *a, const void *b)
{
	const struct ab_run *x = a, *y = b;
	return (x->t > y->t) - (x->t < y->t);
}

/* Fills runs[2 * R] (base i at 2i, new i at 2i + 1) and checks that they are
 * finished, paired by name, and interleaved. */
static enum ctq_status ab_runs(const char *base_set, const char *new_set, struct ab_run **out,
			       size_t *R, struct ctq_error *err)
{
	char **nb = NULL, **nn = NULL;
	size_t kb = 0, kn = 0;
	struct ab_run *runs = NULL;
	enum ctq_status st;
	*out = NULL;
	if ((st = ab_list(base_set, &nb, &kb, err)) || (st = ab_list(new_set, &nn, &kn, err)))
		goto done;
	for (size_t i = 0, j = 0; i < kb || j < kn;) {
		int c = i == kb ? 1 : j == kn ? -1 : strcmp(nb[i], nn[j]);
		if (c) {
			st = ctq_error_set(err, CTQ_ERR_USAGE, c < 0 ? base_set : new_set,
					   "holds run %s, which the other set (%s) lacks: the runs of "
					   "--ab pair by name", c < 0 ? nb[i] : nn[j],
					   c < 0 ? new_set : base_set);
			goto done;
		}
		i++, j++;
	}
	if (!(runs = ctq_calloc(2 * kb, sizeof *runs))) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, base_set, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < 2 * kb; i++) {
		struct ab_run *r = &runs[i];
		r->pair = (int)(i / 2);
		r->side = (int)(i % 2);
		snprintf(r->dir, sizeof r->dir, "%s/%s", r->side ? new_set : base_set, nb[i / 2]);
		r->name = nb[i / 2];
		cJSON *m = NULL;
		if ((st = ctq_run_dir_check(r->dir, err)) ||
		    (st = ctq_results_manifest(r->dir, &m, err)))
			goto done;
		const cJSON *t = ctq_json_get(m, "started_unix_s");
		r->t = cJSON_IsNumber(t) ? t->valuedouble : NAN;
		cJSON_Delete(m);
		if (isnan(r->t)) {
			st = ctq_error_set(err, CTQ_ERR_USAGE, r->dir,
					   "manifest.json has no started_unix_s (made by a ctq that did not "
					   "record it), so its place in the interleaving is unknown");
			goto done;
		}
	}
	struct ab_run *sorted = ctq_malloc(2 * kb * sizeof *sorted);
	if (!sorted) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, base_set, "out of memory");
		goto done;
	}
	memcpy(sorted, runs, 2 * kb * sizeof *sorted);
	qsort(sorted, 2 * kb, sizeof *sorted, cmp_start);
	for (size_t k = 0; k < kb && !st; k++)
		if (sorted[2 * k].pair != sorted[2 * k + 1].pair) {
			const struct ab_run *a = &sorted[2 * k], *b = &sorted[2 * k + 1];
			st = ctq_error_set(err, CTQ_ERR_USAGE, a->dir,
					   "was not run beside its pair: by start time it neighbours "
					   "%s, not %s/%s. --ab needs the two sides interleaved, each "
					   "pair back to back (tools/ab-run.sh); sets run one after the "
					   "other share no drift and need the one-run verdict", b->dir,
					   a->side ? base_set : new_set, a->name);
		}
	free(sorted);
done:
	if (st) {
		free(runs);
		runs = NULL;
	} else {
		*R = kb;
		/* names live in nb, which the runs borrow: keep it alive with them
		 * by copying the names into dir (already) and dropping the borrow. */
		for (size_t i = 0; i < 2 * kb; i++) {
			const char *slash = strrchr(runs[i].dir, '/');
			runs[i].name = slash ? slash + 1 : runs[i].dir;
		}
	}
	names_free(nb, kb);
	names_free(nn, kn);
	*out = runs;
	return st;
}

static bool timing_metric(int fam, const char *metric)
{
	const struct ctq_family_def *d = ctq_family(fam);
	for (const char *const *m = d ? d->timing_metrics : NULL; m && *m; m++)
		if (!strcmp(metric, *m))
			return true;
	return false;
}

/* Drops the one-run timing verdicts of the first pair and recounts. */
static void ab_drop_run_timings(struct ctq_comparison *c)
{
	size_t w = 0;
	c->n_regressions = c->n_improvements = c->n_ambiguous = 0;
	for (size_t i = 0; i < c->n; i++) {
		const struct ctq_cmp_row *r = &c->rows[i];
		const char *v = r->verdict;
		if (timing_metric(r->fam, r->metric) &&
		    (!strcmp(v, "same") || !strcmp(v, "slower") || !strcmp(v, "faster") ||
		     !strcmp(v, "ambiguous")))
			continue;
		c->rows[w] = c->rows[i];
		ctq_cmp_set_verdict(c, &c->rows[w], r->verdict, r->regression);
		w++;
	}
	c->n = w;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median_of(const double *v, size_t n, double *tmp)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (!isnan(v[i]))
			tmp[k++] = v[i];
	if (!k)
		return NAN;
	qsort(tmp, k, sizeof *tmp, cmp_dbl);
	return ctq_median(tmp, k);
}

/* The paired verdict of one timing series: base and cand hold one median
 * per pair (NaN where the run lacks it). */
static enum ctq_status ab_row(struct ctq_comparison *c, const struct ctq_trend_series *sb,
			      const struct ctq_trend_series *sn, size_t R,
			      const struct ctq_compare_policy *p, double *d, double *tmp,
			      struct ctq_error *err)
{
	size_t n = 0;
	for (size_t i = 0; i < R; i++)
		if (sb->v[i] > 0 && sn->v[i] > 0 && isfinite(sb->v[i]) && isfinite(sn->v[i]))
			d[n++] = log(sn->v[i] / sb->v[i]);
	struct ctq_cmp_row *r = ctq_cmp_new_row(c, sb->fam, sb->file, sb->key, sb->metric, err);
	if (!r)
		return CTQ_ERR_NOMEM;
	r->base = median_of(sb->v, R, tmp);
	r->cand = median_of(sn->v, R, tmp);
	/* A stalled run (the host paused it: 1% of the runs of a series on the
	 * 2-core CPU took 1.5x to 500x their neighbours) is one wild pair, and
	 * one wild pair makes the t test blind. Pairs whose difference sits
	 * beyond both 1.5x and 5 robust sd (1.4826 MAD) of the median
	 * difference are set aside, at most a quarter of them; a real change
	 * moves every pair, not one. */
	size_t n_all = n, n_out = 0;
	if (n >= 4) {
		double md = median_of(d, n, tmp);
		for (size_t i = 0; i < n; i++)
			tmp[i] = fabs(d[i] - md);
		double mad = median_of(tmp, n, tmp + n);
		double cut = fmax(log(1.5), 5 * 1.4826 * mad);
		for (size_t i = 0; i < n; i++)
			n_out += fabs(d[i] - md) > cut;
		if (n_out > n / 4) {
			n_out = 0; /* too many to be stalls: keep them all */
		} else if (n_out) {
			size_t k = 0;
			for (size_t i = 0; i < n; i++)
				if (fabs(d[i] - md) <= cut)
					d[k++] = d[i];
			n = k;
		}
	}
	struct ctq_paired_t t;
	ctq_paired_t_test(d, n, &t);
	char aside[96] = "";
	if (n_out)
		snprintf(aside, sizeof aside, " (%zu of %zu set aside as stalls)", n_out, n_all);
	r->change = n ? expm1(t.mean) : NAN;
	r->p = t.p;
	const size_t min_pairs = (size_t)p->v[CTQ_POL_TIMING_AB_MIN_PAIRS];
	const double thr = p->v[CTQ_POL_TIMING_THRESHOLD], alpha = p->v[CTQ_POL_TIMING_AB_ALPHA];
	if (n < min_pairs) {
		ctq_cmp_set_verdict(c, r, "ambiguous", false);
		snprintf(r->detail, sizeof r->detail,
			 "too few interleaved pairs: %zu (policy: at least %zu)", n, min_pairs);
	} else if (fabs(r->change) < thr) {
		ctq_cmp_set_verdict(c, r, "same", false);
		snprintf(r->detail, sizeof r->detail,
			 "%zu pairs%s: geometric mean ratio %+.2f%%, within +-%.3g%%", n, aside,
			 100 * r->change, 100 * thr);
	} else if (t.p < alpha) {
		ctq_cmp_set_verdict(c, r, r->change > 0 ? "slower" : "faster", r->change > 0);
		snprintf(r->detail, sizeof r->detail,
			 "%zu pairs%s: geometric mean ratio %+.2f%% (threshold %.3g%%), paired t %.3g, "
			 "p %.3g < %.3g", n, aside, 100 * r->change, 100 * thr, t.t, t.p, alpha);
	} else {
		ctq_cmp_set_verdict(c, r, "ambiguous", false);
		snprintf(r->detail, sizeof r->detail,
			 "%zu pairs%s: geometric mean ratio %+.2f%% but paired t %.3g, p %.3g >= %.3g; "
			 "more pairs would decide", n, aside, 100 * r->change, t.t, t.p, alpha);
	}
	return CTQ_OK;
}

enum ctq_status ctq_compare_ab(struct ctq_comparison *c, const char *base_set,
			       const char *new_set, const struct ctq_compare_policy *p,
			       struct ctq_error *err)
{
	memset(c, 0, sizeof *c);
	struct ab_run *runs = NULL;
	size_t R = 0;
	char **db = NULL, **dn = NULL;
	double *d = NULL, *tmp = NULL;
	struct ctq_trend tb = {0}, tn = {0}; /* zeroed: ctq_trend_free is a no-op on them */
	enum ctq_status st = ab_runs(base_set, new_set, &runs, &R, err);
	if (st)
		return st;
	db = ctq_calloc(R, sizeof *db);
	dn = ctq_calloc(R, sizeof *dn);
	d = ctq_malloc(R * sizeof *d);
	tmp = ctq_malloc(2 * R * sizeof *tmp);
	if (!db || !dn || !d || !tmp) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, base_set, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < R; i++) {
		db[i] = runs[2 * i].dir;
		dn[i] = runs[2 * i + 1].dir;
	}
	if ((st = ctq_compare_runs(c, db[0], dn[0], p, err)))
		goto done;
	ab_drop_run_timings(c);
	c->ab_pairs = R;
	/* the pairs' own t test judges the timings: the busy-host refusal of
	 * the one-run verdict does not apply */
	c->busy_host[0] = '\0';
	c->n_busy = 0;
	if ((st = ctq_trend_collect(&tb, db, R, err)) || (st = ctq_trend_collect(&tn, dn, R, err)))
		goto done;
	for (size_t i = 0; i < tb.n && !st; i++) {
		const struct ctq_trend_series *sb = &tb.s[i];
		if (!timing_metric(sb->fam, sb->metric))
			continue;
		for (size_t j = 0; j < tn.n; j++) {
			const struct ctq_trend_series *sn = &tn.s[j];
			if (sn->fam == sb->fam && !strcmp(sn->file, sb->file) &&
			    !strcmp(sn->key, sb->key) && !strcmp(sn->metric, sb->metric)) {
				st = ab_row(c, sb, sn, R, p, d, tmp, err);
				break;
			}
		}
	}
done:
	ctq_trend_free(&tb);
	ctq_trend_free(&tn);
	free(runs);
	free(db);
	free(dn);
	free(d);
	free(tmp);
	if (st)
		ctq_comparison_free(c);
	return st;
}

/* ---- output ------------------------------------------------------------------ */

static const char *fam_label(int fam)
{
	return fam == CTQ_FAM_STEPS ? "steps" : ctq_family_name((enum ctq_family)fam);
}

static void fmt_num(char *buf, size_t cap, double v)
{
	if (isnan(v))
		snprintf(buf, cap, "-");
	else
		snprintf(buf, cap, "%.4g", v);
}

/* How a row's family shows its values (the plan steps: as factors). */
static enum ctq_fam_scale row_scale(const struct ctq_cmp_row *r)
{
	const struct ctq_family_def *d = ctq_family(r->fam);
	return d ? d->scale : CTQ_FAM_SCALE_FACTOR;
}

static void fmt_change(char *buf, size_t cap, const struct ctq_cmp_row *r)
{
	enum ctq_fam_scale sc = row_scale(r);
	if (isnan(r->change))
		snprintf(buf, cap, "-");
	else if (sc == CTQ_FAM_SCALE_RELATIVE)
		snprintf(buf, cap, "%+.1f%%", 100 * r->change);
	else if (sc == CTQ_FAM_SCALE_PROPORTION)
		snprintf(buf, cap, "%+.2f pt", 100 * r->change);
	else
		snprintf(buf, cap, "x%.3g", r->change);
}

static void fmt_value(char *buf, size_t cap, const struct ctq_cmp_row *r, double v)
{
	if (row_scale(r) == CTQ_FAM_SCALE_PROPORTION && !isnan(v))
		snprintf(buf, cap, "%.2f%%", 100 * v);
	else
		fmt_num(buf, cap, v);
}

/* The four columns that name a compare.csv or trend.csv row. */
static void csv_ident(struct ctq_csv *w, int fam, const char *file, const char *key,
		      const char *metric)
{
	ctq_csv_field(w, fam_label(fam));
	ctq_csv_field(w, file);
	ctq_csv_field(w, key);
	ctq_csv_field(w, metric);
}

/* A value with 17 significant digits (a double's round trip); NaN is an
 * empty cell. */
static void csv_value(struct ctq_csv *w, double v)
{
	if (isnan(v))
		ctq_csv_field(w, "");
	else
		ctq_csv_fieldf(w, "%.17g", v);
}

enum ctq_status ctq_comparison_write_csv(const struct ctq_comparison *c, const char *path,
					 struct ctq_error *err)
{
	static const char *const header[] = {"family", "file", "key", "metric", "base", "new",
					     "change", "p_value", "verdict", "regression",
					     "summary", "detail"};
	struct ctq_csv w;
	enum ctq_status st = ctq_csv_open(&w, path, header, sizeof header / sizeof *header, err);
	if (st)
		return st;
	for (size_t i = 0; i < c->n; i++) {
		const struct ctq_cmp_row *r = &c->rows[i];
		csv_ident(&w, r->fam, r->file, r->key, r->metric);
		const double v[4] = {r->base, r->cand, r->change, r->p};
		for (int k = 0; k < 4; k++)
			csv_value(&w, v[k]);
		ctq_csv_field(&w, r->verdict);
		ctq_csv_field(&w, r->regression ? "true" : "false");
		ctq_csv_field(&w, r->summary ? "true" : "false");
		ctq_csv_field(&w, r->detail);
		ctq_csv_end_row(&w);
	}
	return ctq_csv_close(&w, err);
}

/* Rows worth a line: every model and serving timing, and of the rest
 * (unchanged accuracy subjects, GEMM points: hundreds) what changed. */
static bool shown(const struct ctq_cmp_row *r)
{
	const struct ctq_family_def *d = ctq_family(r->fam);
	return r->summary || (d && d->show_all) || strcmp(r->verdict, "same") != 0;
}

/* A row's base, new, change and p-value as the console and compare.md show them. */
struct row_text {
	char base[32], cand[32], change[32], p[32];
};

static void row_text(const struct ctq_cmp_row *r, struct row_text *t)
{
	fmt_value(t->base, sizeof t->base, r, r->base);
	fmt_value(t->cand, sizeof t->cand, r, r->cand);
	fmt_change(t->change, sizeof t->change, r);
	fmt_num(t->p, sizeof t->p, r->p);
}

void ctq_comparison_print(const struct ctq_comparison *c, FILE *f)
{
	fprintf(f, "%-12s %-34s %-40s %-20s %10s %10s %9s %8s  %s\n", "FAMILY", "FILE", "KEY",
		"METRIC", "BASE", "NEW", "CHANGE", "P", "VERDICT");
	for (size_t i = 0; i < c->n; i++) {
		const struct ctq_cmp_row *r = &c->rows[i];
		if (!shown(r))
			continue;
		struct row_text t;
		row_text(r, &t);
		fprintf(f, "%-12s %-34.34s %-40.40s %-20.20s %10s %10s %9s %8s  %s%s\n",
			fam_label(r->fam), r->file, r->key, r->metric, t.base, t.cand, t.change, t.p,
			r->regression ? "REGRESSION: " : "", r->verdict);
		if (r->regression || !strcmp(r->verdict, "ambiguous"))
			fprintf(f, "             %s\n", r->detail);
	}
}

static void md_escape(struct ctq_strbuf *sb, const char *s)
{
	for (; *s; s++) {
		if (*s == '|')
			ctq_strbuf_append(sb, "\\|");
		else if (*s == '\n')
			ctq_strbuf_append(sb, " ");
		else
			ctq_strbuf_appendn(sb, s, 1);
	}
}

static void run_line(struct ctq_strbuf *out, const char *label, const char *dir)
{
	cJSON *m = NULL;
	ctq_results_manifest(dir, &m, NULL);
	const cJSON *dirty = ctq_json_get(ctq_json_get(m, "git"), "dirty");
	ctq_strbuf_printf(out, "- %s: `%s` (revision %s%s, started %s, host %s)\n", label, dir,
			  ctq_json_str_at(m, "git.revision", "unknown"),
			  cJSON_IsTrue(dirty) ? ", dirty" : "",
			  ctq_json_str_at(m, "started_utc", "unknown"),
			  ctq_json_str_at(m, "host.name", "unknown"));
	cJSON_Delete(m);
}

void ctq_comparison_markdown(const struct ctq_comparison *c, const char *base_dir,
			     const char *new_dir, const struct ctq_compare_policy *p,
			     struct ctq_strbuf *out)
{
	ctq_strbuf_append(out, "# ctq compare\n\n");
	ctq_strbuf_printf(out, "**Verdict: %s** — %zu regression(s), %zu improvement(s), "
			  "%zu ambiguous, over %zu paired result file(s).\n\n",
			  c->n_regressions ? "REGRESSION" : "no regression", c->n_regressions,
			  c->n_improvements, c->n_ambiguous, c->n_files);
	run_line(out, "base", base_dir);
	run_line(out, "new", new_dir);
	ctq_strbuf_append(out, "\n");
	if (c->busy_host[0]) {
		ctq_strbuf_append(out, "**Ambiguous (busy host):** ");
		md_escape(out, c->busy_host);
		ctq_strbuf_printf(out, ". %zu slower timing(s) called *ambiguous (busy host)*: one run a side "
				  "on a loaded host cannot show a regression; show it with `ctq compare "
				  "--ab` over interleaved runs (tools/ab-run.sh).\n\n", c->n_busy);
	}
	/* The plan steps, then the families in compare order. */
	const struct ctq_family_def *fams[CTQ_FAM_COUNT];
	size_t nf = ctq_families_ordered(fams, CTQ_FAM_ORDER_COMPARE);
	int order[CTQ_FAM_COUNT + 1];
	const char *titles[CTQ_FAM_COUNT + 1];
	order[0] = CTQ_FAM_STEPS;
	titles[0] = "Plan steps";
	for (size_t k = 0; k < nf; k++) {
		order[k + 1] = (int)fams[k]->id;
		titles[k + 1] = fams[k]->compare_title;
	}
	for (size_t k = 0; k < nf + 1; k++) {
		size_t shown_n = 0;
		for (size_t i = 0; i < c->n; i++)
			shown_n += c->rows[i].fam == order[k] && shown(&c->rows[i]);
		if (!shown_n)
			continue;
		ctq_strbuf_printf(out, "## %s\n\n", titles[k]);
		ctq_strbuf_append(out, "| file | key | metric | base | new | change | p | verdict | detail |\n"
				       "|---|---|---|---:|---:|---:|---:|---|---|\n");
		for (size_t i = 0; i < c->n; i++) {
			const struct ctq_cmp_row *r = &c->rows[i];
			if (r->fam != order[k] || !shown(r))
				continue;
			struct row_text t;
			row_text(r, &t);
			ctq_strbuf_append(out, "| ");
			md_escape(out, r->file);
			ctq_strbuf_append(out, " | ");
			md_escape(out, r->key);
			ctq_strbuf_append(out, " | ");
			md_escape(out, r->metric);
			ctq_strbuf_printf(out, " | %s | %s | %s | %s | %s%s%s | ", t.base, t.cand, t.change, t.p,
					  r->regression ? "**" : "", r->verdict,
					  r->regression ? "**" : "");
			md_escape(out, r->detail);
			ctq_strbuf_append(out, " |\n");
		}
		ctq_strbuf_append(out, "\n");
	}
	ctq_strbuf_printf(out, "## Policy\n\nSource: %s\n\n| entry | value | reason |\n|---|---:|---|\n",
			  p->source);
	for (int k = 0; k < CTQ_POL_COUNT; k++) {
		ctq_strbuf_printf(out, "| %s | %g | ", ctq_compare_policy_name((enum ctq_policy_key)k),
				  p->v[k]);
		md_escape(out, p->reason[k]);
		ctq_strbuf_append(out, " |\n");
	}
	if (c->ab_pairs)
		ctq_strbuf_printf(out,
				  "\nTimings: %zu interleaved run pairs (--ab); each series is one "
				  "median per run, and the verdict is the paired t test of ln(new / "
				  "base) over the pairs: same within timing.threshold, slower or "
				  "faster when p < timing.ab_alpha, ambiguous otherwise; change = "
				  "geometric mean ratio - 1, base and new = the medians over the runs. "
				  "Every other family compares the first pair.\n",
				  c->ab_pairs);
	else
		ctq_strbuf_append(out,
				  "\nTimings: one run a side is one replicate (bench model repetitions, bench "
				  "gemm per-call times and bench serve requests share their run's clock, load and "
				  "cache state), so each side is its median and no p-value is computed; change = "
				  "relative change of the median, same within timing.threshold, slower or faster "
				  "beyond timing.run_noise, ambiguous in between. Accuracy: exact McNemar p on the discordant "
				  "questions, Newcombe hybrid score interval of the paired difference.\n");
}


/* ---- trends ------------------------------------------------------------------ */

static enum ctq_status trend_file(struct ctq_trend *t, size_t run, const char *path,
				  enum ctq_family fam, const char *file, struct ctq_error *err)
{
	struct ctq_table tb;
	enum ctq_status st = ctq_table_load(&tb, path, err);
	if (st)
		return st;
	const struct ctq_family_def *d = ctq_family(fam);
	if (d)
		st = d->trend(t, run, &tb, path, file, err);
	ctq_table_free(&tb);
	return st;
}

enum ctq_status ctq_trend_collect(struct ctq_trend *t, char *const *dirs, size_t n_runs,
				  struct ctq_error *err)
{
	memset(t, 0, sizeof *t);
	t->n_runs = n_runs;
	t->labels = ctq_calloc(n_runs + 1, sizeof *t->labels);
	struct ctq_results *rs = ctq_calloc(n_runs + 1, sizeof *rs);
	enum ctq_status st = CTQ_OK;
	if (!t->labels || !rs) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, "trend", "out of memory");
		goto done;
	}
	for (size_t i = 0; i < n_runs && !st; i++) {
		if ((st = ctq_results_find(&rs[i], dirs[i], ctq_family_by_file, err)))
			break;
		cJSON *m = NULL;
		if ((st = ctq_results_manifest(dirs[i], &m, err)))
			break;
		const char *slash = strrchr(dirs[i], '/');
		const char *base = slash && slash[1] ? slash + 1 : dirs[i];
		const char *rev = ctq_json_str_at(m, "git.revision", NULL);
		if (rev && !strcmp(rev, "unknown"))
			rev = NULL;
		snprintf(t->labels[i], sizeof t->labels[i], "%zu:%.40s%s%.12s", i + 1, base, rev ? "@" : "",
			 rev ? rev : "");
		cJSON_Delete(m);
	}
	/* A family with at most one file in every run pairs by family. */
	bool by_family[CTQ_FAM_COUNT];
	for (int f = 0; f < CTQ_FAM_COUNT; f++) {
		by_family[f] = true;
		for (size_t i = 0; i < n_runs && !st; i++) {
			int k = 0;
			for (size_t j = 0; j < rs[i].n; j++)
				k += (int)rs[i].v[j].fam == f;
			if (k > 1)
				by_family[f] = false;
		}
	}
	size_t files = 0;
	for (size_t i = 0; i < n_runs && !st; i++)
		for (size_t j = 0; j < rs[i].n && !st; j++) {
			const struct ctq_result_file *r = &rs[i].v[j];
			char path[1200];
			snprintf(path, sizeof path, "%s/%s", dirs[i], r->rel);
			st = trend_file(t, i, path, r->fam,
					by_family[r->fam] ? ctq_family_file(r->fam) : r->rel, err);
			files++;
		}
	if (!st && !files)
		st = ctq_error_set(err, CTQ_ERR_USAGE, dirs[0], "no run holds results to tabulate");
done:
	for (size_t i = 0; rs && i < n_runs; i++)
		ctq_results_free(&rs[i]);
	free(rs);
	if (st)
		ctq_trend_free(t);
	return st;
}

enum ctq_status ctq_trend_write_csv(const struct ctq_trend *t, const char *path,
				    struct ctq_error *err)
{
	static const char *const header[] = {"family", "file", "key", "metric", "unit", "run",
					     "run_label", "value"};
	struct ctq_csv w;
	enum ctq_status st = ctq_csv_open(&w, path, header, sizeof header / sizeof *header, err);
	if (st)
		return st;
	for (size_t i = 0; i < t->n; i++)
		for (size_t r = 0; r < t->n_runs; r++) {
			const struct ctq_trend_series *s = &t->s[i];
			csv_ident(&w, s->fam, s->file, s->key, s->metric);
			ctq_csv_field(&w, s->unit);
			ctq_csv_fieldf(&w, "%zu", r + 1);
			ctq_csv_field(&w, t->labels[r]);
			csv_value(&w, s->v[r]);
			ctq_csv_end_row(&w);
		}
	return ctq_csv_close(&w, err);
}

void ctq_trend_markdown(const struct ctq_trend *t, char *const *dirs, struct ctq_strbuf *out)
{
	ctq_strbuf_printf(out, "# ctq trend over %zu runs\n\n", t->n_runs);
	for (size_t r = 0; r < t->n_runs; r++)
		ctq_strbuf_printf(out, "%zu. `%s` (%s)\n", r + 1, dirs[r], t->labels[r]);
	ctq_strbuf_append(out, "\n| family | file | key | metric |");
	for (size_t r = 0; r < t->n_runs; r++)
		ctq_strbuf_printf(out, " %zu |", r + 1);
	ctq_strbuf_append(out, " last vs first |\n|---|---|---|---|");
	for (size_t r = 0; r <= t->n_runs; r++)
		ctq_strbuf_append(out, "---:|");
	ctq_strbuf_append(out, "\n");
	for (size_t i = 0; i < t->n; i++) {
		const struct ctq_trend_series *s = &t->s[i];
		ctq_strbuf_printf(out, "| %s | ", fam_label(s->fam));
		md_escape(out, s->file);
		ctq_strbuf_append(out, " | ");
		md_escape(out, s->key);
		ctq_strbuf_append(out, " | ");
		md_escape(out, s->metric);
		if (s->unit[0])
			ctq_strbuf_printf(out, " (%s)", s->unit);
		ctq_strbuf_append(out, " |");
		for (size_t r = 0; r < t->n_runs; r++) {
			char b[32];
			fmt_num(b, sizeof b, s->v[r]);
			ctq_strbuf_printf(out, " %s |", b);
		}
		double a = s->v[0], z = s->v[t->n_runs - 1];
		if (isfinite(a) && isfinite(z) && a != 0)
			ctq_strbuf_printf(out, " %+.1f%% |\n", 100 * (z - a) / fabs(a));
		else
			ctq_strbuf_append(out, " - |\n");
	}
}
