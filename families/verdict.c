/* The comparison machinery shared by the result families (see
 * families/verdict.h): the policy and its timing verdicts, rows,
 * keyed tables, pairs of result files, timing rows and trend series. */
#include "families/verdict.h"
#include "core/arena.h"
#include "core/json.h"
#include "core/policy.h"
#include "results/table.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- policy ---------------------------------------------------------------- */

/* The entries and their ranges; the values, and why each is what it is,
 * live in policies/compare.json, the built-in policy the build embeds. */
struct pol_entry {
	const char *section, *key;
	double min, max;
	bool integral;
};

static const struct pol_entry pol_fixed[CTQ_POL_MISSING_FAMILY] = {
	[CTQ_POL_TIMING_THRESHOLD] = {"timing", "threshold", 0, 10, false},
	[CTQ_POL_TIMING_ALPHA] = {"timing", "alpha", 1e-12, 1, false},
	[CTQ_POL_TIMING_MIN_SAMPLES] = {"timing", "min_samples", 1, 1e6, true},
	[CTQ_POL_TIMING_MAX_CV] = {"timing", "max_cv", 0, 1e9, false},
	[CTQ_POL_TIMING_RUN_NOISE] = {"timing", "run_noise", 0, 1e6, false},
	[CTQ_POL_TIMING_AB_ALPHA] = {"timing", "ab_alpha", 1e-12, 1, false},
	[CTQ_POL_TIMING_AB_MIN_PAIRS] = {"timing", "ab_min_pairs", 2, 1e6, true},
	[CTQ_POL_TIMING_BUSY_OTHER_CPU] = {"timing", "busy_other_cpu", 0, 1, false},
	[CTQ_POL_TIMING_BUSY_STEAL] = {"timing", "busy_steal", 0, 1, false},
	[CTQ_POL_SERVE_MAX_CV] = {"serving", "max_cv", 0, 1e9, false},
	[CTQ_POL_ACC_ALPHA] = {"accuracy", "alpha", 1e-12, 1, false},
	[CTQ_POL_ACC_MIN_DROP] = {"accuracy", "min_drop", 0, 1, false},
	[CTQ_POL_PROBE_FACTOR] = {"probe", "rel_l2_factor", 1, 1e12, false},
	[CTQ_POL_PROBE_KERNEL_FLOOR] = {"probe", "kernel_rel_l2_floor", 0, 1e9, false},
	[CTQ_POL_PROBE_QUANT_FLOOR] = {"probe", "quant_rel_l2_floor", 0, 1e9, false},
	[CTQ_POL_KLD_FACTOR] = {"kld", "mean_factor", 1, 1e12, false},
	[CTQ_POL_KLD_FLOOR] = {"kld", "mean_floor", 0, 1e9, false},
	[CTQ_POL_KLD_TOP1_DROP] = {"kld", "top1_min_drop", 0, 1, false},
	[CTQ_POL_KLD_TOP1_ALPHA] = {"kld", "top1_alpha", 1e-12, 1, false},
	[CTQ_POL_MISSING_IS_REGRESSION] = {"missing", "is_regression", 0, 1, true},
};

/* Entry k: a fixed one, or missing_family.<name> of family k -
 * CTQ_POL_MISSING_FAMILY (families/registry.h). */
static struct pol_entry pol_def(int k)
{
	if (k < CTQ_POL_MISSING_FAMILY)
		return pol_fixed[k];
	return (struct pol_entry){"missing_family",
				  ctq_family_name((enum ctq_family)(k - CTQ_POL_MISSING_FAMILY)), 0, 1, true};
}

const char *ctq_compare_policy_name(enum ctq_policy_key k)
{
	static char names[CTQ_POL_COUNT][64];
	if (k >= CTQ_POL_COUNT)
		return "unknown";
	if (!names[k][0])
		snprintf(names[k], sizeof names[k], "%s.%s", pol_def(k).section, pol_def(k).key);
	return names[k];
}

/* The entries of root (a policy object) over *p; path names it in errors. */
static enum ctq_status policy_apply(void *policy, const cJSON *root, const char *path,
				    struct ctq_error *err)
{
	struct ctq_compare_policy *p = policy;
	enum ctq_status st = CTQ_OK;
	char jp[CTQ_PATH_MAX];
	if (!cJSON_IsObject(root))
		return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, path, "a policy is a JSON object");
	for (const cJSON *sec = root->child; sec && !st; sec = sec->next) {
		if (!strcmp(sec->string, "about"))
			continue;
		int known;
		for (known = 0; known < CTQ_POL_COUNT; known++)
			if (!strcmp(pol_def(known).section, sec->string))
				break;
		if (known == CTQ_POL_COUNT) {
			st = ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, sec->string,
					   "unknown policy section (timing, serving, accuracy, probe, kld, missing, "
					   "missing_family)");
			break;
		}
		if (!cJSON_IsObject(sec)) {
			st = ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, sec->string,
					   "expected an object of thresholds, found %s",
					   ctq_json_type_name(sec));
			break;
		}
		for (const cJSON *it = sec->child; it && !st; it = it->next) {
			ctq_json_path_key(jp, sizeof jp, sec->string, it->string);
			if (!strcmp(it->string, "about"))
				continue;
			int k;
			for (k = 0; k < CTQ_POL_COUNT; k++)
				if (!strcmp(pol_def(k).section, sec->string) &&
				    !strcmp(pol_def(k).key, it->string))
					break;
			if (k == CTQ_POL_COUNT) {
				st = ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, jp, "unknown policy entry");
				break;
			}
			const cJSON *val = it, *why = NULL;
			if (cJSON_IsObject(it)) {
				val = ctq_json_get(it, "value");
				why = ctq_json_get(it, "reason");
				for (const cJSON *m = it->child; m; m = m->next)
					if (strcmp(m->string, "value") && strcmp(m->string, "reason")) {
						char mp[CTQ_PATH_MAX];
						ctq_json_path_key(mp, sizeof mp, jp, m->string);
						st = ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, mp,
								   "unknown member (value, reason)");
						break;
					}
				if (st)
					break;
			}
			double x;
			if (cJSON_IsBool(val))
				x = cJSON_IsTrue(val) ? 1 : 0;
			else if (cJSON_IsNumber(val))
				x = val->valuedouble;
			else {
				st = ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, jp,
						   "expected a number (or {\"value\": x, \"reason\": \"...\"}), found %s",
						   ctq_json_type_name(val));
				break;
			}
			const struct pol_entry e = pol_def(k);
			if (!(x >= e.min && x <= e.max) || (e.integral && x != floor(x))) {
				st = ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, jp,
						   "is %g; expected %s in [%g, %g]", x,
						   e.integral ? "an integer" : "a number", e.min, e.max);
				break;
			}
			p->v[k] = x;
			if (why && !cJSON_IsString(why)) {
				st = ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, jp, "reason must be a string");
				break;
			}
			if (k >= CTQ_POL_MISSING_FAMILY && x == 0 && (!why || !why->valuestring[0])) {
				st = ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, jp,
						   "exempts a result family; give the reason: "
						   "{\"value\": false, \"reason\": \"...\"}");
				break;
			}
			snprintf(p->reason[k], sizeof p->reason[k], "%s",
				 why ? why->valuestring : "(no reason given in the policy file)");
		}
	}
	return st;
}

/* The built-in policy is policies/compare.json itself, embedded by the
 * build (core/policy.h). A broken embedded file leaves the thresholds 0
 * and says so in source; tests/test_policies.c checks it parses and equals the file. */
void ctq_compare_policy_default(struct ctq_compare_policy *p)
{
	ctq_policy_default(p, sizeof *p, CTQ_COMPARE_POLICY_FILE, policy_apply, p->source);
}

enum ctq_status ctq_compare_policy_load(struct ctq_compare_policy *p, const char *path,
					struct ctq_error *err)
{
	return ctq_policy_load(p, path, policy_apply, p->source, err);
}

/* ---- timing ---------------------------------------------------------------- */

/* What both timing verdicts share: the two sample summaries, the median
 * change, and "ambiguous: too few samples" (*decided then). */
static enum ctq_status timing_begin(const double *base, size_t nb, const double *cand, size_t nc,
				    const struct ctq_compare_policy *p,
				    struct ctq_timing_result *out, bool *decided,
				    struct ctq_error *err)
{
	memset(out, 0, sizeof *out);
	*decided = false;
	out->change = NAN;
	out->mwu.p = NAN;
	out->mwu.p_min = NAN;
	enum ctq_status st;
	if ((st = ctq_sample_summarize(base, nb, &out->base, err)) ||
	    (st = ctq_sample_summarize(cand, nc, &out->cand, err)))
		return st;
	double mb = out->base.median, mc = out->cand.median;
	if (nb && nc)
		out->change = mb != 0 ? (mc - mb) / fabs(mb) : (mc == mb ? 0 : INFINITY);
	size_t min_n = (size_t)p->v[CTQ_POL_TIMING_MIN_SAMPLES];
	out->verdict = "ambiguous";
	if (nb < min_n || nc < min_n) {
		snprintf(out->why, sizeof out->why,
			 "too few samples: %zu base, %zu new (policy: at least %zu per side)", nb, nc, min_n);
		*decided = true;
	}
	return CTQ_OK;
}

/* "ambiguous: too noisy" or "same: within the threshold"; true when one
 * of them decided the row. */
static bool timing_noisy_or_same(const struct ctq_compare_policy *p, struct ctq_timing_result *out)
{
	double max_cv = p->v[CTQ_POL_TIMING_MAX_CV];
	if (out->base.cv > max_cv || out->cand.cv > max_cv) {
		snprintf(out->why, sizeof out->why,
			 "too noisy: cv %.3g base, %.3g new (policy: at most %.3g)", out->base.cv,
			 out->cand.cv, max_cv);
		return true;
	}
	double thr = p->v[CTQ_POL_TIMING_THRESHOLD];
	if (fabs(out->change) < thr) {
		out->verdict = "same";
		snprintf(out->why, sizeof out->why, "median %+.2f%%, within +-%.3g%%", 100 * out->change,
			 100 * thr);
		return true;
	}
	return false;
}

/* A decided difference: slower (a regression) when the median grew, else
 * faster; why (printf) says on what evidence. */
static void timing_moved(struct ctq_timing_result *out, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void timing_moved(struct ctq_timing_result *out, const char *fmt, ...)
{
	out->regression = out->change > 0;
	out->verdict = out->change > 0 ? "slower" : "faster";
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(out->why, sizeof out->why, fmt, ap);
	va_end(ap);
}

enum ctq_status ctq_compare_timing(const double *base, size_t nb, const double *cand, size_t nc,
				   const struct ctq_compare_policy *p,
				   struct ctq_timing_result *out, struct ctq_error *err)
{
	bool decided;
	enum ctq_status st = timing_begin(base, nb, cand, nc, p, out, &decided, err);
	if (st || decided)
		return st;
	if ((st = ctq_mwu_test(cand, nc, base, nb, &out->mwu, err)))
		return st;
	if (timing_noisy_or_same(p, out))
		return CTQ_OK;
	double thr = p->v[CTQ_POL_TIMING_THRESHOLD], alpha = p->v[CTQ_POL_TIMING_ALPHA];
	if (out->mwu.p < alpha)
		timing_moved(out, "median %+.2f%% (threshold %.3g%%), p %.3g < %.3g", 100 * out->change,
			     100 * thr, out->mwu.p, alpha);
	else
		snprintf(out->why, sizeof out->why,
			 "median %+.2f%% but p %.3g >= %.3g (the smallest p %zu vs %zu samples can give: %.3g)",
			 100 * out->change, out->mwu.p, alpha, nb, nc, out->mwu.p_min);
	return CTQ_OK;
}

/* Why one run is one replicate (issue "Step 11"): ten runs of the default
 * plan on the 2-core CPU, 45 pairs, called 51% of the pairs regressions
 * when the 32 requests of each bench serve run went through Mann-Whitney as
 * 32 samples a side (TTFT +16.5% at p 7.7e-7 between runs of one revision).
 * The requests of a run share its clock, load and cache state: what differs
 * between two runs is one run factor (sd 8-10%), which no within-run test
 * sees, so a within-run p-value measures the run, not the revision. The
 * same holds for the per-call samples of a GEMM point and the repetitions
 * of a bench model key (back to back in one process): ten default-plan
 * runs on the 2-core CPU gave bench model TTFT a within-run cv of 0.6-2%
 * but a run-to-run log-ratio sd of 0.06-0.12, so a test on the repetitions
 * calls the run factor significant as soon as a side has enough of them
 * (the CUDA step's 10). Each side is
 * therefore its median, one replicate, and the verdict rests on the ratio
 * of the two medians: the practical threshold says same, and only a ratio
 * beyond the run-to-run noise allowance (timing.run_noise, 1.5x: 2.9 sd of
 * the log ratio of two runs at sd 10%) says slower or faster; in between
 * the evidence is thin and the row is ambiguous. tests/test_compare_sweep.c
 * measures both rates under a seeded run-factor model. */
enum ctq_status ctq_compare_timing_run(const double *base, size_t nb, const double *cand, size_t nc,
				       const struct ctq_compare_policy *p,
				       struct ctq_timing_result *out, struct ctq_error *err)
{
	bool decided;
	enum ctq_status st = timing_begin(base, nb, cand, nc, p, out, &decided, err);
	if (st || decided || timing_noisy_or_same(p, out))
		return st;
	double thr = p->v[CTQ_POL_TIMING_THRESHOLD], a = p->v[CTQ_POL_TIMING_RUN_NOISE];
	/* ratio = mc / mb; symmetric in log: slower beyond 1 + a, faster under
	 * 1 / (1 + a). */
	double ratio = 1 + out->change;
	if (ratio > 1 + a || ratio < 1 / (1 + a))
		timing_moved(out, "one run a side: median ratio %.3f beyond the run-to-run allowance %.3gx",
			     ratio, 1 + a);
	else
		snprintf(out->why, sizeof out->why,
			 "one run a side: median %+.2f%% is beyond +-%.3g%% but within the run-to-run "
			 "allowance %.3gx; rerun both sides to decide", 100 * out->change, 100 * thr, 1 + a);
	return CTQ_OK;
}

bool ctq_compare_busy_host(const cJSON *m, const struct ctq_compare_policy *p, char *why,
			   size_t cap)
{
	const cJSON *h = ctq_json_get(m, "host_load");
	const cJSON *o = ctq_json_get(h, "other_cpu_fraction"), *s = ctq_json_get(h, "steal_fraction");
	const cJSON *w = ctq_json_get(h, "wall_s"), *n = ctq_json_get(h, "cpus");
	/* 25 ticks of /proc/stat (USER_HZ 100) at least: each share known to
	 * about 4%, against limits of 25% (a default-plan run on 2 CPUs is
	 * 0.3-0.6 s, 0.6-1.2 CPU-seconds) */
	if (!cJSON_IsNumber(w) || !cJSON_IsNumber(n) || w->valuedouble * n->valuedouble < 0.25)
		return false;
	double mo = p->v[CTQ_POL_TIMING_BUSY_OTHER_CPU], ms = p->v[CTQ_POL_TIMING_BUSY_STEAL];
	if (cJSON_IsNumber(o) && o->valuedouble > mo) {
		snprintf(why, cap, "other processes took %.0f%% of its %.0f CPUs (%s %.3g)",
			 100 * o->valuedouble, n->valuedouble,
			 ctq_compare_policy_name(CTQ_POL_TIMING_BUSY_OTHER_CPU), mo);
		return true;
	}
	if (cJSON_IsNumber(s) && s->valuedouble > ms) {
		snprintf(why, cap, "the hypervisor stole %.0f%% of its CPU time (%s %.3g)",
			 100 * s->valuedouble, ctq_compare_policy_name(CTQ_POL_TIMING_BUSY_STEAL), ms);
		return true;
	}
	return false;
}

/* ---- rows ------------------------------------------------------------------ */

struct ctq_cmp_row *ctq_cmp_new_row(struct ctq_comparison *c, int fam, const char *file,
				    const char *key, const char *metric, struct ctq_error *err)
{
	void *v = c->rows;
	if (!ctq_grow(&v, &c->cap, c->n + 1, sizeof *c->rows)) {
		ctq_error_set(err, CTQ_ERR_NOMEM, "compare", "out of memory");
		return NULL;
	}
	c->rows = v;
	struct ctq_cmp_row *r = &c->rows[c->n++];
	memset(r, 0, sizeof *r);
	r->fam = fam;
	snprintf(r->file, sizeof r->file, "%s", file);
	snprintf(r->key, sizeof r->key, "%s", key ? key : "");
	snprintf(r->metric, sizeof r->metric, "%s", metric ? metric : "");
	r->base = r->cand = r->change = r->p = NAN;
	snprintf(r->verdict, sizeof r->verdict, "same");
	return r;
}

void ctq_cmp_set_verdict(struct ctq_comparison *c, struct ctq_cmp_row *r, const char *v,
			bool regression)
{
	snprintf(r->verdict, sizeof r->verdict, "%s", v);
	r->regression = regression;
	if (regression)
		c->n_regressions++;
	else if (!strcmp(v, "improvement") || !strcmp(v, "faster"))
		c->n_improvements++;
	else if (!strcmp(v, "ambiguous"))
		c->n_ambiguous++;
}

void ctq_comparison_free(struct ctq_comparison *c)
{
	if (!c)
		return;
	free(c->rows);
	memset(c, 0, sizeof *c);
}

/* ---- keyed rows of a table ---------------------------------------------------- */

static int cmp_keyed(const void *a, const void *b)
{
	const struct ctq_cmp_keyed *x = a, *y = b;
	int c = strcmp(x->key, y->key);
	return c ? c : (x->row > y->row) - (x->row < y->row);
}

void ctq_cmp_index_free(struct ctq_cmp_index *ix)
{
	for (size_t i = 0; i < ix->n; i++)
		free(ix->v[i].key);
	free(ix->v);
	ix->v = NULL;
	ix->n = 0;
}

/* Looks up the named columns; parse-error naming the first missing one. */
enum ctq_status ctq_cmp_need_cols(const struct ctq_table *t, const char *file,
				 const char *const *names, int n, int *cols, struct ctq_error *err)
{
	for (int i = 0; i < n; i++)
		if ((cols[i] = ctq_table_col(t, names[i])) < 0)
			return ctq_error_set(err, CTQ_ERR_PARSE, file, "has no column \"%s\"", names[i]);
	return CTQ_OK;
}

/* Keys of every row from cols [0, nk). unique: duplicates numbered. */
enum ctq_status ctq_cmp_index_build(struct ctq_cmp_index *ix, const struct ctq_table *t, const int *cols,
				   int nk, bool unique, struct ctq_error *err)
{
	ix->n = 0;
	ix->v = ctq_calloc(t->n_rows + 1, sizeof *ix->v);
	if (!ix->v)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "compare", "out of memory");
	for (size_t r = 0; r < t->n_rows; r++) {
		size_t len = 16;
		for (int k = 0; k < nk; k++)
			len += strlen(ctq_table_get(t, r, cols[k])) + 2;
		char *s = ctq_malloc(len);
		if (!s) {
			ctq_cmp_index_free(ix);
			return ctq_error_set(err, CTQ_ERR_NOMEM, "compare", "out of memory");
		}
		s[0] = '\0';
		for (int k = 0; k < nk; k++) {
			if (k)
				strcat(s, ", ");
			strcat(s, ctq_table_get(t, r, cols[k]));
		}
		ix->v[ix->n++] = (struct ctq_cmp_keyed){s, r};
	}
	qsort(ix->v, ix->n, sizeof *ix->v, cmp_keyed);
	if (!unique)
		return CTQ_OK;
	for (size_t i = 1, dup = 1; i < ix->n; i++) {
		if (strcmp(ix->v[i].key, ix->v[i - dup].key) != 0) {
			dup = 1;
			continue;
		}
		dup++;
		size_t len = strlen(ix->v[i].key) + 24;
		char *s = ctq_malloc(len);
		if (!s) {
			ctq_cmp_index_free(ix);
			return ctq_error_set(err, CTQ_ERR_NOMEM, "compare", "out of memory");
		}
		snprintf(s, len, "%s #%zu", ix->v[i].key, dup);
		free(ix->v[i].key);
		ix->v[i].key = s;
	}
	/* Renamed duplicates may sort differently now. */
	qsort(ix->v, ix->n, sizeof *ix->v, cmp_keyed);
	return CTQ_OK;
}

const struct ctq_cmp_keyed *ctq_cmp_index_find(const struct ctq_cmp_index *ix, const char *key)
{
	size_t lo = 0, hi = ix->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(ix->v[mid].key, key);
		if (!c) {
			while (mid > 0 && !strcmp(ix->v[mid - 1].key, key))
				mid--;
			return &ix->v[mid];
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

void ctq_cmp_pair_free(struct ctq_cmp_pair *x)
{
	ctq_table_free(&x->tb);
	ctq_table_free(&x->tn);
	ctq_cmp_index_free(&x->ib);
	ctq_cmp_index_free(&x->in);
}

/* Loads both tables and indexes them by the key columns. */
enum ctq_status ctq_cmp_pair_load(struct ctq_cmp_pair *x, const char *const *key_names, int nk,
				 bool unique, int *cb, int *cn, struct ctq_error *err)
{
	enum ctq_status st;
	if ((st = ctq_table_load(&x->tb, x->base_path, err)) ||
	    (st = ctq_table_load(&x->tn, x->new_path, err)) ||
	    (st = ctq_cmp_need_cols(&x->tb, x->base_path, key_names, nk, cb, err)) ||
	    (st = ctq_cmp_need_cols(&x->tn, x->new_path, key_names, nk, cn, err)) ||
	    (st = ctq_cmp_index_build(&x->ib, &x->tb, cb, nk, unique, err)) ||
	    (st = ctq_cmp_index_build(&x->in, &x->tn, cn, nk, unique, err)))
		return st;
	return CTQ_OK;
}

/* Counts of keys only in base (removed) and only in new (added). */
bool ctq_cmp_paired(const struct ctq_cmp_pair *x, size_t i, size_t *rb, size_t *rn)
{
	const struct ctq_cmp_keyed *kb = ctq_cmp_index_find(&x->ib, x->in.v[i].key);
	if (!kb)
		return false;
	*rb = kb->row;
	*rn = x->in.v[i].row;
	return true;
}

void ctq_cmp_added_removed(const struct ctq_cmp_pair *x, size_t *added, size_t *removed)
{
	*added = *removed = 0;
	for (size_t i = 0; i < x->ib.n; i++)
		if (!ctq_cmp_index_find(&x->in, x->ib.v[i].key))
			(*removed)++;
	for (size_t i = 0; i < x->in.n; i++)
		if (!ctq_cmp_index_find(&x->ib, x->in.v[i].key))
			(*added)++;
}

struct ctq_cmp_row *ctq_cmp_summary_row(struct ctq_cmp_pair *x, int fam, const char *key,
					const char *metric, double base, double cand, size_t bad,
					size_t good, struct ctq_error *err)
{
	struct ctq_cmp_row *r = ctq_cmp_new_row(x->c, fam, x->file, key, metric, err);
	if (!r)
		return NULL;
	r->summary = true;
	r->base = base;
	r->cand = cand;
	snprintf(r->verdict, sizeof r->verdict, "%s",
		 bad ? "regression" : good ? "improvement" : "same");
	return r;
}

/* ---- timings ----------------------------------------------------------------- */

/* Samples of column col of the rows [lo, hi) of an index. */
size_t ctq_cmp_gather(const struct ctq_table *t, const struct ctq_cmp_index *ix, size_t lo, size_t hi,
		     int col, double *out)
{
	size_t n = 0;
	for (size_t i = lo; i < hi; i++) {
		double v = ctq_table_num(t, ix->v[i].row, col);
		if (!isnan(v))
			out[n++] = v;
	}
	return n;
}

/* End of the run of equal keys starting at i. */
size_t ctq_cmp_run_end(const struct ctq_cmp_index *ix, size_t i)
{
	size_t j = i + 1;
	while (j < ix->n && !strcmp(ix->v[j].key, ix->v[i].key))
		j++;
	return j;
}

/* Whether the CSV at path has a "role" column (its header names it). */
bool ctq_cmp_has_role(const char *path)
{
	struct ctq_table t;
	if (ctq_table_load(&t, path, NULL))
		return false;
	bool yes = ctq_table_col(&t, "role") >= 0;
	ctq_table_free(&t);
	return yes;
}

/* One timing row of family fam: the verdict of the samples sb (nb) against
 * sn (nn), both borrowed, under x->p. note, when not NULL, opens the
 * detail; refuse makes the row ambiguous whatever the statistics say (the
 * note says why). *out (may be NULL) gets the row. NOMEM only. */
enum ctq_status ctq_cmp_timing_row(struct ctq_cmp_pair *x, int fam, const char *key, const char *metric,
				  const double *sb, size_t nb, const double *sn, size_t nn,
				  const char *note, bool refuse, struct ctq_cmp_row **out,
				  struct ctq_error *err)
{
	struct ctq_timing_result tr;
	/* One run a side: its samples are one replicate (ctq_compare_timing_run). */
	enum ctq_status st = ctq_compare_timing_run(sb, nb, sn, nn, x->p, &tr, err);
	if (st)
		return st;
	struct ctq_cmp_row *r = ctq_cmp_new_row(x->c, fam, x->file, key, metric, err);
	if (!r)
		return CTQ_ERR_NOMEM;
	r->base = tr.base.median;
	r->cand = tr.cand.median;
	r->change = tr.change;
	r->p = tr.mwu.p;
	/* A slower median on a busy host is the load as likely as the build
	 * (issue 33: 4-5 of 15 same-build pairs beside another job). */
	bool busy = !refuse && tr.regression && x->busy;
	if (refuse || busy)
		ctq_cmp_set_verdict(x->c, r, "ambiguous", false);
	else
		ctq_cmp_set_verdict(x->c, r, tr.verdict, tr.regression);
	if (busy)
		x->c->n_busy++;
	snprintf(r->detail, sizeof r->detail, "%s%s%sn %zu/%zu, cv %.3g/%.3g; %s%s%s%s",
		 busy ? "ambiguous (busy host), not slower: " : "", note && !refuse ? note : "",
		 note && !refuse ? "; " : "", nb, nn, tr.base.cv, tr.cand.cv, refuse ? note : tr.why,
		 busy ? "; " : "", busy ? x->busy : "",
		 busy ? "; show the regression with ctq compare --ab" : "");
	if (out)
		*out = r;
	return CTQ_OK;
}

/* Timing rows of every key of both tables, the rows of a key being its
 * samples: nm metrics, their columns at cb[nk..] and cn[nk..]. A metric
 * neither side measured (empty cells) gets no row. note and refuse as
 * timing_row. */
enum ctq_status ctq_cmp_timing_keys(struct ctq_cmp_pair *x, int fam, const char *const *metrics, int nm,
				   int nk, const int *cb, const int *cn, const char *note,
				   bool refuse, struct ctq_error *err)
{
	double *sb = ctq_malloc((x->tb.n_rows + 1) * sizeof *sb); /* samples of one key */
	double *sn = ctq_malloc((x->tn.n_rows + 1) * sizeof *sn);
	enum ctq_status st = CTQ_OK;
	if (!sb || !sn)
		st = ctq_error_set(err, CTQ_ERR_NOMEM, "compare", "out of memory");
	for (size_t i = 0; i < x->in.n && !st;) {
		size_t j = ctq_cmp_run_end(&x->in, i);
		const struct ctq_cmp_keyed *kb = ctq_cmp_index_find(&x->ib, x->in.v[i].key);
		if (kb) {
			size_t lo = (size_t)(kb - x->ib.v), hi = ctq_cmp_run_end(&x->ib, lo);
			const char *key = nk ? x->in.v[i].key : "(all requests)";
			for (int m = 0; m < nm && !st; m++) {
				size_t nb = ctq_cmp_gather(&x->tb, &x->ib, lo, hi, cb[nk + m], sb);
				size_t nn = ctq_cmp_gather(&x->tn, &x->in, i, j, cn[nk + m], sn);
				if (nb || nn)
					st = ctq_cmp_timing_row(x, fam, key, metrics[m], sb, nb, sn, nn, note, refuse,
							NULL, err);
			}
		}
		i = j;
	}
	free(sb);
	free(sn);
	return st;
}

/* A key only in the baseline: "removed", a regression when the policy says
 * missing observations are. */
enum ctq_status ctq_cmp_removed_rows(struct ctq_cmp_pair *x, int fam, const char *metric,
				    size_t *removed, struct ctq_error *err)
{
	*removed = 0;
	for (size_t i = 0; i < x->ib.n; i++) {
		if (ctq_cmp_index_find(&x->in, x->ib.v[i].key) || (i && !strcmp(x->ib.v[i].key, x->ib.v[i - 1].key)))
			continue;
		const char *key = x->ib.v[i].key[0] ? x->ib.v[i].key : "(all requests)";
		struct ctq_cmp_row *r = ctq_cmp_new_row(x->c, fam, x->file, key, metric, err);
		if (!r)
			return CTQ_ERR_NOMEM;
		ctq_cmp_set_verdict(x->c, r, "removed", x->p->v[CTQ_POL_MISSING_IS_REGRESSION] != 0);
		snprintf(r->detail, sizeof r->detail, "only in the baseline run (policy %s)",
			 ctq_compare_policy_name(CTQ_POL_MISSING_IS_REGRESSION));
		(*removed)++;
	}
	return CTQ_OK;
}

/* ---- trends ------------------------------------------------------------------ */

void ctq_trend_free(struct ctq_trend *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++)
		free(t->s[i].v);
	free(t->s);
	free(t->labels);
	memset(t, 0, sizeof *t);
}

struct ctq_trend_series *ctq_trend_series_get(struct ctq_trend *t, int fam, const char *file,
				       const char *key, const char *metric, const char *unit,
				       struct ctq_error *err)
{
	for (size_t i = 0; i < t->n; i++) {
		struct ctq_trend_series *s = &t->s[i];
		if (s->fam == fam && !strcmp(s->file, file) && !strcmp(s->key, key) &&
		    !strcmp(s->metric, metric))
			return s;
	}
	void *v = t->s;
	if (!ctq_grow(&v, &t->cap, t->n + 1, sizeof *t->s)) {
		ctq_error_set(err, CTQ_ERR_NOMEM, "trend", "out of memory");
		return NULL;
	}
	t->s = v;
	struct ctq_trend_series *s = &t->s[t->n];
	memset(s, 0, sizeof *s);
	s->v = ctq_malloc(t->n_runs * sizeof *s->v);
	if (!s->v) {
		ctq_error_set(err, CTQ_ERR_NOMEM, "trend", "out of memory");
		return NULL;
	}
	for (size_t i = 0; i < t->n_runs; i++)
		s->v[i] = NAN;
	s->fam = fam;
	snprintf(s->file, sizeof s->file, "%s", file);
	snprintf(s->key, sizeof s->key, "%s", key);
	snprintf(s->metric, sizeof s->metric, "%s", metric);
	snprintf(s->unit, sizeof s->unit, "%s", unit);
	t->n++;
	return s;
}

enum ctq_status ctq_trend_put(struct ctq_trend *t, size_t run, int fam, const char *file,
			   const char *key, const char *metric, const char *unit, double v,
			   struct ctq_error *err)
{
	struct ctq_trend_series *s = ctq_trend_series_get(t, fam, file, key, metric, unit, err);
	if (!s)
		return CTQ_ERR_NOMEM;
	s->v[run] = v;
	return CTQ_OK;
}

/* The median of each of nm metric columns over the rows of each key (nk
 * key columns; none: one key, "(all requests)"), one series per key and
 * metric; a key without a number in a column gets no value there. */
enum ctq_status ctq_trend_medians(struct ctq_trend *t, size_t run, int fam, const char *file,
				     const struct ctq_table *tb, const char *path,
				     const char *const *keys, int nk, const char *const *metrics,
				     int nm, const char *unit, struct ctq_error *err)
{
	int cols[16];
	struct ctq_cmp_index ix = {0};
	double *v = NULL;
	enum ctq_status st;
	if ((st = ctq_cmp_need_cols(tb, path, keys, nk, cols, err)) ||
	    (st = ctq_cmp_need_cols(tb, path, metrics, nm, cols + nk, err)) ||
	    (st = ctq_cmp_index_build(&ix, tb, cols, nk, false, err)))
		goto done;
	if (!(v = ctq_malloc((tb->n_rows + 1) * sizeof *v))) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, "trend", "out of memory");
		goto done;
	}
	for (size_t i = 0; i < ix.n && !st;) {
		size_t j = ctq_cmp_run_end(&ix, i);
		for (int m = 0; m < nm && !st; m++) {
			size_t n = ctq_cmp_gather(tb, &ix, i, j, cols[nk + m], v);
			struct ctq_sample_summary s;
			if (n && !(st = ctq_sample_summarize(v, n, &s, err)))
				st = ctq_trend_put(t, run, fam, file, nk ? ix.v[i].key : "(all requests)", metrics[m],
					 unit, s.median, err);
		}
		i = j;
	}
done:
	free(v);
	ctq_cmp_index_free(&ix);
	return st;
}
