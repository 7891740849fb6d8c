/* ctq regression comparison (see compare.h). */
#include "reports/compare.h"
#include "core/json.h"
#include "core/fileio.h"
#include "stats/accuracy.h"
#include "bench/gemm.h"
#include "results/csv_out.h"
#include "results/run.h"
#include "results/table.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- policy ---------------------------------------------------------------- */

static const struct {
	const char *section, *key;
	double def, min, max;
	bool integral;
	const char *reason;
} pol_def[CTQ_POL_COUNT] = {
	[CTQ_POL_TIMING_THRESHOLD] = {"timing", "threshold", 0.05, 0, 10, false,
		"A median change under 5% is called same whatever its p-value: PyTorch's benchmark "
		"dashboards flag +-5%, and wall-clock timings of the same build on one host move by a "
		"few percent between runs (asv's default factor is 10%). Beyond it a change is at "
		"least ambiguous; slower needs timing.run_noise too when a side is one run."},
	[CTQ_POL_TIMING_ALPHA] = {"timing", "alpha", 0.05, 1e-12, 1, false,
		"Two-sided Mann-Whitney level of Google Benchmark's compare.py, applied only across "
		"genuine replicates (whole runs), never to the requests, calls or repetitions of one "
		"run. The practical threshold is a second gate, so chance alone calls slower less "
		"often than alpha."},
	[CTQ_POL_TIMING_MIN_SAMPLES] = {"timing", "min_samples", 3, 1, 1e6, true,
		"Fewer than 3 samples per side show no spread, so no verdict (nvbench's AMBG): in one "
		"run, fewer than 3 requests, calls or repetitions make its median one outlier. With 3 "
		"replicates per side the exact test's smallest p is 0.1."},
	[CTQ_POL_TIMING_MAX_CV] = {"timing", "max_cv", 0.20, 0, 1e9, false,
		"A side whose coefficient of variation exceeds 20% is dominated by noise (warm-up, "
		"frequency scaling, a shared host); a verdict at a 5% threshold would be a guess. "
		"Within one run it is the spread of the run's calls or repetitions."},
	[CTQ_POL_TIMING_RUN_NOISE] = {"timing", "run_noise", 0.5, 0, 1e6, false,
		"One run a side is one replicate: a run's requests, calls and repetitions share its "
		"clock, load and cache state (per-request Mann-Whitney called 51% of same-revision "
		"CPU pairs regressions). A family's median moves between runs of one build by a run "
		"factor of sd 8-10%, so the log ratio of two runs has sd about 0.14 and a ratio "
		"beyond 1.5 (2.9 sd) is chance in about 0.2% of a family's pairs. Within 1.5x a "
		"change beyond the threshold is ambiguous: one run cannot tell it from noise."},
	[CTQ_POL_TIMING_AB_ALPHA] = {"timing", "ab_alpha", 0.001, 1e-12, 1, false,
		"Level of the paired t test over interleaved run pairs (ctq compare --ab). A pair's "
		"runs share the host's drift, so the pairs' differences are the replicates. A set "
		"has about 9 timing series; at 0.001 chance alone gated 0.5% of 1000 same-build "
		"sets of 8 pairs under the drift measured on the 2-core CPU "
		"(tests/test_compare_sweep.c), and 0 of 25 sets cut from 400 real back-to-back "
		"runs, while a +30% slowdown of one family was gated in 99.4% (96-100% real)."},
	[CTQ_POL_TIMING_AB_MIN_PAIRS] = {"timing", "ab_min_pairs", 5, 2, 1e6, true,
		"With 4 degrees of freedom the t test needs t > 8.6 for p < 0.001; with fewer "
		"pairs a 30% change cannot be told from run-to-run noise of 6%, so the row is "
		"ambiguous. tools/ab-run.sh makes 8 pairs by default."},
	[CTQ_POL_SERVE_MAX_CV] = {"serving", "max_cv", 1.0, 0, 1e9, false,
		"Per-request latencies of bench serve spread by design, not by noise: in a closed "
		"loop the first wave of requests shares its prefill, so TTFT's cv is 0.76 in the H200 "
		"baselines (reports/baselines/h200/serve-*), which timing.max_cv would never judge. "
		"Above 1.0 the spread exceeds the mean: stalls, not a schedule (the CPU reference "
		"beside two busy processes on two cores gave 1.5 to 2.1). The rest is timing's: a "
		"run's requests are one replicate, their median."},
	[CTQ_POL_ACC_ALPHA] = {"accuracy", "alpha", 0.05, 1e-12, 1, false,
		"Exact McNemar test on the questions whose answer changed (lm-eval PR #3835 makes the "
		"same paired argument); conservative with few discordant pairs."},
	[CTQ_POL_ACC_MIN_DROP] = {"accuracy", "min_drop", 0.01, 0, 1, false,
		"One point, ctq eval's default non-inferiority margin: a significant drop smaller than "
		"that is reported, not gated."},
	[CTQ_POL_PROBE_FACTOR] = {"probe", "rel_l2_factor", 1.5, 1, 1e12, false,
		"Probe inputs are seeded, so rel-L2 repeats to the last digit on one build; a 1.5x "
		"growth is a change of arithmetic (accumulation order, scale handling), not noise."},
	[CTQ_POL_PROBE_KERNEL_FLOOR] = {"probe", "kernel_rel_l2_floor", 1e-4, 0, 1e9, false,
		"The kernel is bit-exact against the exact-quantized reference by design (0); below "
		"1e-4, about a fortieth of one BF16 ulp (2^-8), growth is a few rounded elements."},
	[CTQ_POL_PROBE_QUANT_FLOOR] = {"probe", "quant_rel_l2_floor", 1e-3, 0, 1e9, false,
		"Quantization error is ~1e-2 on N(0,1) inputs; growth that stays under 1e-3 is below "
		"anything the accuracy of a model could show."},
	[CTQ_POL_MISSING_IS_REGRESSION] = {"missing", "is_regression", 0, 0, 1, true,
		"Runs of different plans or machines legitimately hold different files (GPU steps are "
		"skipped without a GPU); a step that failed is caught by the run's own exit code and "
		"by the steps comparison. The same holds for GEMM points and serving keys in one run "
		"only (another --shapes or M list)."},
#define MISSING_FAMILY(fam, name, file)                                                          \
	[CTQ_POL_MISSING_FAMILY + (fam)] = {"missing_family", name, 1, 0, 1, true,               \
		"Every " file " of the baseline gone from the new run is a regression: a run that "   \
		"lost a whole result family did not check what the baseline checked, and calling " \
		"that no regression would pass a run that measured nothing. A plan that leaves "   \
		"the family out on purpose exempts it here (false) with the reason."}
	MISSING_FAMILY(CTQ_FAM_CONFORM, "conformance", "conform.csv"),
	MISSING_FAMILY(CTQ_FAM_PROBE, "probe", "probe.csv"),
	MISSING_FAMILY(CTQ_FAM_BENCH_MODEL, "timing", "bench_model.csv"),
	MISSING_FAMILY(CTQ_FAM_BENCH_GEMM, "gemm", "bench_gemm.csv"),
	MISSING_FAMILY(CTQ_FAM_EVAL, "accuracy", "eval_questions.csv"),
	MISSING_FAMILY(CTQ_FAM_BENCH_SERVE, "serving", "bench_serve.csv"),
#undef MISSING_FAMILY
};

const char *ctq_compare_policy_name(enum ctq_policy_key k)
{
	static char names[CTQ_POL_COUNT][64];
	if (k >= CTQ_POL_COUNT)
		return "unknown";
	if (!names[k][0])
		snprintf(names[k], sizeof names[k], "%s.%s", pol_def[k].section, pol_def[k].key);
	return names[k];
}

void ctq_compare_policy_default(struct ctq_compare_policy *p)
{
	memset(p, 0, sizeof *p);
	for (int k = 0; k < CTQ_POL_COUNT; k++) {
		p->v[k] = pol_def[k].def;
		snprintf(p->reason[k], sizeof p->reason[k], "%s", pol_def[k].reason);
	}
	snprintf(p->source, sizeof p->source, "built-in (policies/compare.json holds the same)");
}

enum ctq_status ctq_compare_policy_load(struct ctq_compare_policy *p, const char *path,
					struct ctq_error *err)
{
	cJSON *root = NULL;
	enum ctq_status st = ctq_json_load_file(path, (size_t)1 << 20, NULL, &root, err);
	if (st)
		return st;
	char jp[CTQ_PATH_MAX];
	if (!cJSON_IsObject(root)) {
		st = ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, path, "a policy is a JSON object");
		goto done;
	}
	for (const cJSON *sec = root->child; sec && !st; sec = sec->next) {
		if (!strcmp(sec->string, "about"))
			continue;
		int known;
		for (known = 0; known < CTQ_POL_COUNT; known++)
			if (!strcmp(pol_def[known].section, sec->string))
				break;
		if (known == CTQ_POL_COUNT) {
			st = ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, sec->string,
					   "unknown policy section (timing, serving, accuracy, probe, missing, "
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
				if (!strcmp(pol_def[k].section, sec->string) && !strcmp(pol_def[k].key, it->string))
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
			if (!(x >= pol_def[k].min && x <= pol_def[k].max) ||
			    (pol_def[k].integral && x != floor(x))) {
				st = ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, jp,
						   "is %g; expected %s in [%g, %g]", x,
						   pol_def[k].integral ? "an integer" : "a number",
						   pol_def[k].min, pol_def[k].max);
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
	if (!st)
		snprintf(p->source, sizeof p->source, "%s", path);
done:
	cJSON_Delete(root);
	return st;
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
	if (out->mwu.p < alpha) {
		out->regression = out->change > 0;
		out->verdict = out->change > 0 ? "slower" : "faster";
		snprintf(out->why, sizeof out->why, "median %+.2f%% (threshold %.3g%%), p %.3g < %.3g",
			 100 * out->change, 100 * thr, out->mwu.p, alpha);
		return CTQ_OK;
	}
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
	if (ratio > 1 + a || ratio < 1 / (1 + a)) {
		out->regression = out->change > 0;
		out->verdict = out->change > 0 ? "slower" : "faster";
		snprintf(out->why, sizeof out->why,
			 "one run a side: median ratio %.3f beyond the run-to-run allowance %.3gx",
			 ratio, 1 + a);
		return CTQ_OK;
	}
	snprintf(out->why, sizeof out->why,
		 "one run a side: median %+.2f%% is beyond +-%.3g%% but within the run-to-run "
		 "allowance %.3gx; rerun both sides to decide", 100 * out->change, 100 * thr, 1 + a);
	return CTQ_OK;
}

/* ---- rows ------------------------------------------------------------------ */

static struct ctq_cmp_row *new_row(struct ctq_comparison *c, int fam, const char *file,
				   struct ctq_error *err)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 64;
		struct ctq_cmp_row *r = realloc(c->rows, cap * sizeof *r);
		if (!r) {
			ctq_error_set(err, CTQ_ERR_NOMEM, "compare", "out of memory");
			return NULL;
		}
		c->rows = r;
		c->cap = cap;
	}
	struct ctq_cmp_row *r = &c->rows[c->n++];
	memset(r, 0, sizeof *r);
	r->fam = fam;
	snprintf(r->file, sizeof r->file, "%s", file);
	r->base = r->cand = r->change = r->p = NAN;
	snprintf(r->verdict, sizeof r->verdict, "same");
	return r;
}

static void set_verdict(struct ctq_comparison *c, struct ctq_cmp_row *r, const char *v,
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

struct keyed {
	char *key; /* fields joined by ", " (a duplicate gets " #k") */
	size_t row;
};

struct index {
	struct keyed *v;
	size_t n;
};

static int cmp_keyed(const void *a, const void *b)
{
	const struct keyed *x = a, *y = b;
	int c = strcmp(x->key, y->key);
	return c ? c : (x->row > y->row) - (x->row < y->row);
}

static void index_free(struct index *ix)
{
	for (size_t i = 0; i < ix->n; i++)
		free(ix->v[i].key);
	free(ix->v);
	ix->v = NULL;
	ix->n = 0;
}

/* Looks up the named columns; parse-error naming the first missing one. */
static enum ctq_status need_cols(const struct ctq_table *t, const char *file,
				 const char *const *names, int n, int *cols, struct ctq_error *err)
{
	for (int i = 0; i < n; i++)
		if ((cols[i] = ctq_table_col(t, names[i])) < 0)
			return ctq_error_set(err, CTQ_ERR_PARSE, file, "has no column \"%s\"", names[i]);
	return CTQ_OK;
}

/* Keys of every row from cols [0, nk). unique: duplicates numbered. */
static enum ctq_status index_build(struct index *ix, const struct ctq_table *t, const int *cols,
				   int nk, bool unique, struct ctq_error *err)
{
	ix->n = 0;
	ix->v = calloc(t->n_rows + 1, sizeof *ix->v);
	if (!ix->v)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "compare", "out of memory");
	for (size_t r = 0; r < t->n_rows; r++) {
		size_t len = 16;
		for (int k = 0; k < nk; k++)
			len += strlen(ctq_table_get(t, r, cols[k])) + 2;
		char *s = malloc(len);
		if (!s) {
			index_free(ix);
			return ctq_error_set(err, CTQ_ERR_NOMEM, "compare", "out of memory");
		}
		s[0] = '\0';
		for (int k = 0; k < nk; k++) {
			if (k)
				strcat(s, ", ");
			strcat(s, ctq_table_get(t, r, cols[k]));
		}
		ix->v[ix->n++] = (struct keyed){s, r};
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
		char *s = malloc(len);
		if (!s) {
			index_free(ix);
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

static const struct keyed *index_find(const struct index *ix, const char *key)
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

struct pair_ctx {
	struct ctq_comparison *c;
	const struct ctq_compare_policy *p;
	const char *file;       /* display name */
	const char *base_path, *new_path;
	struct ctq_table tb, tn;
	struct index ib, in;
};

static void pair_free(struct pair_ctx *x)
{
	ctq_table_free(&x->tb);
	ctq_table_free(&x->tn);
	index_free(&x->ib);
	index_free(&x->in);
}

/* Loads both tables and indexes them by the key columns. */
static enum ctq_status pair_load(struct pair_ctx *x, const char *const *key_names, int nk,
				 bool unique, int *cb, int *cn, struct ctq_error *err)
{
	enum ctq_status st;
	if ((st = ctq_table_load(&x->tb, x->base_path, err)) ||
	    (st = ctq_table_load(&x->tn, x->new_path, err)) ||
	    (st = need_cols(&x->tb, x->base_path, key_names, nk, cb, err)) ||
	    (st = need_cols(&x->tn, x->new_path, key_names, nk, cn, err)) ||
	    (st = index_build(&x->ib, &x->tb, cb, nk, unique, err)) ||
	    (st = index_build(&x->in, &x->tn, cn, nk, unique, err)))
		return st;
	return CTQ_OK;
}

/* Counts of keys only in base (removed) and only in new (added). */
static void added_removed(const struct pair_ctx *x, size_t *added, size_t *removed)
{
	*added = *removed = 0;
	for (size_t i = 0; i < x->ib.n; i++)
		if (!index_find(&x->in, x->ib.v[i].key))
			(*removed)++;
	for (size_t i = 0; i < x->in.n; i++)
		if (!index_find(&x->ib, x->in.v[i].key))
			(*added)++;
}

/* ---- conformance ------------------------------------------------------------- */

static enum ctq_status cmp_conform(struct pair_ctx *x, struct ctq_error *err)
{
	static const char *const keys[] = {"case_id", "semantics", "check", "outcome", "detail"};
	int cb[5], cn[5];
	enum ctq_status st = pair_load(x, keys, 3, true, cb, cn, err);
	if (st || (st = need_cols(&x->tb, x->base_path, keys + 3, 2, cb + 3, err)) ||
	    (st = need_cols(&x->tn, x->new_path, keys + 3, 2, cn + 3, err)))
		return st;
	size_t fail_b = 0, fail_n = 0, flips = 0, fixes = 0, added, removed;
	for (size_t r = 0; r < x->tb.n_rows; r++)
		fail_b += strcmp(ctq_table_get(&x->tb, r, cb[3]), "pass") != 0;
	for (size_t r = 0; r < x->tn.n_rows; r++)
		fail_n += strcmp(ctq_table_get(&x->tn, r, cn[3]), "pass") != 0;
	for (size_t i = 0; i < x->in.n; i++) {
		const struct keyed *kb = index_find(&x->ib, x->in.v[i].key);
		if (!kb)
			continue;
		const char *ob = ctq_table_get(&x->tb, kb->row, cb[3]);
		const char *on = ctq_table_get(&x->tn, x->in.v[i].row, cn[3]);
		if (!strcmp(ob, on))
			continue;
		struct ctq_cmp_row *r = new_row(x->c, CTQ_FAM_CONFORM, x->file, err);
		if (!r)
			return CTQ_ERR_NOMEM;
		snprintf(r->key, sizeof r->key, "%s", x->in.v[i].key);
		snprintf(r->metric, sizeof r->metric, "outcome %s -> %s", ob, on);
		bool bad = !strcmp(ob, "pass");
		set_verdict(x->c, r, bad ? "regression" : "improvement", bad);
		snprintf(r->detail, sizeof r->detail, "%s",
			 bad ? ctq_table_get(&x->tn, x->in.v[i].row, cn[4]) : "now passes");
		bad ? flips++ : fixes++;
	}
	added_removed(x, &added, &removed);
	struct ctq_cmp_row *r = new_row(x->c, CTQ_FAM_CONFORM, x->file, err);
	if (!r)
		return CTQ_ERR_NOMEM;
	r->summary = true;
	snprintf(r->key, sizeof r->key, "(all checks)");
	snprintf(r->metric, sizeof r->metric, "failed checks");
	r->base = (double)fail_b;
	r->cand = (double)fail_n;
	snprintf(r->detail, sizeof r->detail,
		 "%zu checks paired: %zu pass->fail, %zu fail->pass; %zu new, %zu gone",
		 x->in.n - added, flips, fixes, added, removed);
	snprintf(r->verdict, sizeof r->verdict, "%s",
		 flips ? "regression" : fixes ? "improvement" : "same");
	return CTQ_OK;
}

/* ---- probes ------------------------------------------------------------------ */

static enum ctq_status probe_row(struct pair_ctx *x, const char *key, const char *metric,
				 double b, double n, const char *verdict, bool bad,
				 const char *detail, struct ctq_error *err)
{
	struct ctq_cmp_row *r = new_row(x->c, CTQ_FAM_PROBE, x->file, err);
	if (!r)
		return CTQ_ERR_NOMEM;
	snprintf(r->key, sizeof r->key, "%s", key);
	snprintf(r->metric, sizeof r->metric, "%s", metric);
	r->base = b;
	r->cand = n;
	r->change = b > 0 && isfinite(b) && isfinite(n) ? n / b : NAN;
	set_verdict(x->c, r, verdict, bad);
	snprintf(r->detail, sizeof r->detail, "%s", detail);
	return CTQ_OK;
}

static enum ctq_status cmp_probe(struct pair_ctx *x, struct ctq_error *err)
{
	static const char *const keys[] = {"layer", "K", "N", "M", "weights", "acts", "backend",
					   "nan_count", "inf_count", "kernel_rel_l2",
					   "quant_rel_l2", "outcome"};
	int cb[12], cn[12];
	enum ctq_status st = pair_load(x, keys, 7, true, cb, cn, err);
	if (st || (st = need_cols(&x->tb, x->base_path, keys + 7, 5, cb + 7, err)) ||
	    (st = need_cols(&x->tn, x->new_path, keys + 7, 5, cn + 7, err)))
		return st;
	const double factor = x->p->v[CTQ_POL_PROBE_FACTOR];
	const double floors[2] = {x->p->v[CTQ_POL_PROBE_KERNEL_FLOOR],
				  x->p->v[CTQ_POL_PROBE_QUANT_FLOOR]};
	static const char *const names[2] = {"kernel_rel_l2", "quant_rel_l2"};
	size_t regress = 0, improve = 0, paired = 0, added, removed;
	char detail[256];
	for (size_t i = 0; i < x->in.n && !st; i++) {
		const struct keyed *kb = index_find(&x->ib, x->in.v[i].key);
		if (!kb)
			continue;
		paired++;
		size_t rb = kb->row, rn = x->in.v[i].row;
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
	added_removed(x, &added, &removed);
	struct ctq_cmp_row *r = new_row(x->c, CTQ_FAM_PROBE, x->file, err);
	if (!r)
		return CTQ_ERR_NOMEM;
	r->summary = true;
	snprintf(r->key, sizeof r->key, "(all probes)");
	snprintf(r->metric, sizeof r->metric, "probes regressed");
	r->base = 0;
	r->cand = (double)regress;
	snprintf(r->detail, sizeof r->detail,
		 "%zu probes paired: %zu regressed, %zu improved; %zu new, %zu gone", paired, regress,
		 improve, added, removed);
	snprintf(r->verdict, sizeof r->verdict, "%s",
		 regress ? "regression" : improve ? "improvement" : "same");
	return CTQ_OK;
}

/* ---- timings ----------------------------------------------------------------- */

/* Samples of column col of the rows [lo, hi) of an index. */
static size_t gather(const struct ctq_table *t, const struct index *ix, size_t lo, size_t hi,
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
static size_t run_end(const struct index *ix, size_t i)
{
	size_t j = i + 1;
	while (j < ix->n && !strcmp(ix->v[j].key, ix->v[i].key))
		j++;
	return j;
}

static const char *const timing_metrics[] = {"ttft_ms", "decode_ms_per_step"};

/* Whether the CSV at path has a "role" column (its header names it). */
static bool has_col(const char *path)
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
static enum ctq_status timing_row(struct pair_ctx *x, int fam, const char *key, const char *metric,
				  const double *sb, size_t nb, const double *sn, size_t nn,
				  const char *note, bool refuse, struct ctq_cmp_row **out,
				  struct ctq_error *err)
{
	struct ctq_timing_result tr;
	/* One run a side: its samples are one replicate (ctq_compare_timing_run). */
	enum ctq_status st = ctq_compare_timing_run(sb, nb, sn, nn, x->p, &tr, err);
	if (st)
		return st;
	struct ctq_cmp_row *r = new_row(x->c, fam, x->file, err);
	if (!r)
		return CTQ_ERR_NOMEM;
	snprintf(r->key, sizeof r->key, "%s", key);
	snprintf(r->metric, sizeof r->metric, "%s", metric);
	r->base = tr.base.median;
	r->cand = tr.cand.median;
	r->change = tr.change;
	r->p = tr.mwu.p;
	if (refuse)
		set_verdict(x->c, r, "ambiguous", false);
	else
		set_verdict(x->c, r, tr.verdict, tr.regression);
	snprintf(r->detail, sizeof r->detail, "%s%sn %zu/%zu, cv %.3g/%.3g; %s",
		 note && !refuse ? note : "", note && !refuse ? "; " : "", nb, nn, tr.base.cv,
		 tr.cand.cv, refuse ? note : tr.why);
	if (out)
		*out = r;
	return CTQ_OK;
}

/* Timing rows of every key of both tables, the rows of a key being its
 * samples: nm metrics, their columns at cb[nk..] and cn[nk..]. A metric
 * neither side measured (empty cells) gets no row. note and refuse as
 * timing_row. */
static enum ctq_status timing_keys(struct pair_ctx *x, int fam, const char *const *metrics, int nm,
				   int nk, const int *cb, const int *cn, const char *note,
				   bool refuse, struct ctq_error *err)
{
	double *sb = malloc((x->tb.n_rows + 1) * sizeof *sb); /* samples of one key */
	double *sn = malloc((x->tn.n_rows + 1) * sizeof *sn);
	enum ctq_status st = CTQ_OK;
	if (!sb || !sn)
		st = ctq_error_set(err, CTQ_ERR_NOMEM, "compare", "out of memory");
	for (size_t i = 0; i < x->in.n && !st;) {
		size_t j = run_end(&x->in, i);
		const struct keyed *kb = index_find(&x->ib, x->in.v[i].key);
		if (kb) {
			size_t lo = (size_t)(kb - x->ib.v), hi = run_end(&x->ib, lo);
			const char *key = nk ? x->in.v[i].key : "(all requests)";
			for (int m = 0; m < nm && !st; m++) {
				size_t nb = gather(&x->tb, &x->ib, lo, hi, cb[nk + m], sb);
				size_t nn = gather(&x->tn, &x->in, i, j, cn[nk + m], sn);
				if (nb || nn)
					st = timing_row(x, fam, key, metrics[m], sb, nb, sn, nn, note, refuse,
							NULL, err);
			}
		}
		i = j;
	}
	free(sb);
	free(sn);
	return st;
}

static enum ctq_status cmp_timing(struct pair_ctx *x, struct ctq_error *err)
{
	/* bench model --ref-model writes both roles into one file: the role is
	 * part of the key when both sides have it. */
	static const char *const keys_role[] = {"role", "backend", "batch", "input_tokens",
						"output_tokens"};
	const bool role = has_col(x->base_path) && has_col(x->new_path);
	const char *const *keys = role ? keys_role : keys_role + 1;
	const int nk = role ? 5 : 4;
	int cb[7], cn[7];
	enum ctq_status st = pair_load(x, keys, nk, false, cb, cn, err);
	if (st || (st = need_cols(&x->tb, x->base_path, timing_metrics, 2, cb + nk, err)) ||
	    (st = need_cols(&x->tn, x->new_path, timing_metrics, 2, cn + nk, err)))
		return st;
	return timing_keys(x, CTQ_FAM_BENCH_MODEL, timing_metrics, 2, nk, cb, cn, NULL, false, err);
}

/* A key only in the baseline: "removed", a regression when the policy says
 * missing observations are. */
static enum ctq_status removed_rows(struct pair_ctx *x, int fam, const char *metric,
				    size_t *removed, struct ctq_error *err)
{
	*removed = 0;
	for (size_t i = 0; i < x->ib.n; i++) {
		if (index_find(&x->in, x->ib.v[i].key) || (i && !strcmp(x->ib.v[i].key, x->ib.v[i - 1].key)))
			continue;
		struct ctq_cmp_row *r = new_row(x->c, fam, x->file, err);
		if (!r)
			return CTQ_ERR_NOMEM;
		snprintf(r->key, sizeof r->key, "%s", x->ib.v[i].key[0] ? x->ib.v[i].key : "(all requests)");
		snprintf(r->metric, sizeof r->metric, "%s", metric);
		set_verdict(x->c, r, "removed", x->p->v[CTQ_POL_MISSING_IS_REGRESSION] != 0);
		snprintf(r->detail, sizeof r->detail, "only in the baseline run (policy %s)",
			 ctq_compare_policy_name(CTQ_POL_MISSING_IS_REGRESSION));
		(*removed)++;
	}
	return CTQ_OK;
}

/* ---- GEMM points (bench_gemm.csv, bench/gemm.h) ------------------------ */

/* The per-call times beside a bench_gemm.csv (CTQ_GEMM_SAMPLES_FILE),
 * indexed by the point's key; present false when there is no such file. */
struct gemm_samples {
	bool present;
	char path[1200];
	struct ctq_table t;
	struct index ix;
	int col; /* time_us */
};

static enum ctq_status gemm_samples_load(struct gemm_samples *s, const char *csv_path,
					 struct ctq_error *err)
{
	static const char *const names[] = {"shape", "K", "N", "M", "impl", "time_us"};
	const char *slash = strrchr(csv_path, '/');
	int cols[6];
	snprintf(s->path, sizeof s->path, "%.*s%s", slash ? (int)(slash - csv_path + 1) : 0, csv_path,
		 CTQ_GEMM_SAMPLES_FILE);
	if (!ctq_path_exists(s->path))
		return CTQ_OK;
	s->present = true;
	enum ctq_status st;
	if ((st = ctq_table_load(&s->t, s->path, err)) ||
	    (st = need_cols(&s->t, s->path, names, 6, cols, err)) ||
	    (st = index_build(&s->ix, &s->t, cols, 5, false, err)))
		return st;
	s->col = cols[5];
	return CTQ_OK;
}

static void gemm_samples_free(struct gemm_samples *s)
{
	ctq_table_free(&s->t);
	index_free(&s->ix);
}

/* The samples of key into out (room for every row); 0 without any. */
static size_t gemm_samples_of(const struct gemm_samples *s, const char *key, double *out)
{
	const struct keyed *k = s->present ? index_find(&s->ix, key) : NULL;
	if (!k)
		return 0;
	size_t lo = (size_t)(k - s->ix.v);
	return gather(&s->t, &s->ix, lo, run_end(&s->ix, lo), s->col, out);
}

/* bench_gemm.csv by (shape, K, N, M, impl): the per-call samples of each
 * point through the timing verdict; a ctq implementation whose check is not
 * pass on the new side is a regression whatever its time. K and N are part
 * of the key so that a shape name reused with other dimensions (another
 * model) does not pair. */
static enum ctq_status cmp_gemm(struct pair_ctx *x, struct ctq_error *err)
{
	static const char *const keys[] = {"shape", "K", "N", "M", "impl", "check", "time_us_median",
					   "note"};
	int cb[8], cn[8];
	struct gemm_samples gb = {0}, gn = {0};
	double *sb = NULL, *sn = NULL;
	size_t paired = 0, added = 0, removed = 0, slower = 0, faster = 0, same = 0, ambiguous = 0,
	       failed = 0;
	char note[1400];
	enum ctq_status st = pair_load(x, keys, 5, true, cb, cn, err);
	if (st || (st = need_cols(&x->tb, x->base_path, keys + 5, 3, cb + 5, err)) ||
	    (st = need_cols(&x->tn, x->new_path, keys + 5, 3, cn + 5, err)) ||
	    (st = gemm_samples_load(&gb, x->base_path, err)) ||
	    (st = gemm_samples_load(&gn, x->new_path, err)))
		goto done;
	sb = malloc((gb.t.n_rows + 1) * sizeof *sb);
	sn = malloc((gn.t.n_rows + 1) * sizeof *sn);
	if (!sb || !sn) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, "compare", "out of memory");
		goto done;
	}
	for (size_t i = 0; i < x->in.n && !st; i++) {
		const char *key = x->in.v[i].key;
		const size_t rn = x->in.v[i].row;
		const struct keyed *kb = index_find(&x->ib, key);
		enum ctq_gemm_impl impl;
		const bool ctq = ctq_gemm_impl_parse(ctq_table_get(&x->tn, rn, cn[4]), &impl) &&
				 ctq_gemm_impl_is_ctq(impl);
		const char *ckn = ctq_table_get(&x->tn, rn, cn[5]);
		const char *ckb = kb ? ctq_table_get(&x->tb, kb->row, cb[5]) : "(absent)";
		if (ctq && (strcmp(ckn, "pass") || strcmp(ckb, "pass"))) {
			const bool bad = strcmp(ckn, "pass") != 0;
			struct ctq_cmp_row *r = new_row(x->c, CTQ_FAM_BENCH_GEMM, x->file, err);
			if (!r) {
				st = CTQ_ERR_NOMEM;
				break;
			}
			snprintf(r->key, sizeof r->key, "%s", key);
			snprintf(r->metric, sizeof r->metric, "check %s -> %s", ckb, ckn);
			set_verdict(x->c, r, bad ? "regression" : "improvement", bad);
			if (bad)
				snprintf(r->detail, sizeof r->detail,
					 "the ctq output is not bit-exact against the CPU reference: %s",
					 ctq_table_get(&x->tn, rn, cn[7]));
			else
				snprintf(r->detail, sizeof r->detail, "now bit-exact against the CPU reference");
			failed += bad;
			if (bad)
				continue;
		}
		if (!kb) {
			added++;
			continue;
		}
		paired++;
		const double mb = ctq_table_num(&x->tb, kb->row, cb[6]);
		const double mn = ctq_table_num(&x->tn, rn, cn[6]);
		if (isnan(mb) && isnan(mn))
			continue; /* timed on neither side (a failed check, unsupported) */
		size_t nb = gemm_samples_of(&gb, key, sb), nn = gemm_samples_of(&gn, key, sn);
		size_t len = 0;
		note[0] = '\0';
		if (!gb.present || !gn.present)
			len = (size_t)snprintf(note, sizeof note, "no per-call samples (%s%s%s missing), "
				 "the medians are bench_gemm.csv's", !gb.present ? gb.path : "",
				 !gb.present && !gn.present ? " and " : "", !gn.present ? gn.path : "");
		if (isnan(mb) != isnan(mn) && len < sizeof note)
			snprintf(note + len, sizeof note - len, "%snot timed on the %s side: %s",
				 len ? "; " : "", isnan(mb) ? "base" : "new",
				 isnan(mb) ? ctq_table_get(&x->tb, kb->row, cb[7])
					   : ctq_table_get(&x->tn, rn, cn[7]));
		struct ctq_cmp_row *r;
		if ((st = timing_row(x, CTQ_FAM_BENCH_GEMM, key, "time_us", sb, nb, sn, nn,
				     note[0] ? note : NULL, false, &r, err)))
			break;
		if (isnan(r->base))
			r->base = mb;
		if (isnan(r->cand))
			r->cand = mn;
		if (isnan(r->change) && r->base > 0 && isfinite(r->cand))
			r->change = (r->cand - r->base) / r->base;
		slower += !strcmp(r->verdict, "slower");
		faster += !strcmp(r->verdict, "faster");
		same += !strcmp(r->verdict, "same");
		ambiguous += !strcmp(r->verdict, "ambiguous");
	}
	if (st || (st = removed_rows(x, CTQ_FAM_BENCH_GEMM, "time_us", &removed, err)))
		goto done;
	struct ctq_cmp_row *r = new_row(x->c, CTQ_FAM_BENCH_GEMM, x->file, err);
	if (!r) {
		st = CTQ_ERR_NOMEM;
		goto done;
	}
	r->summary = true;
	snprintf(r->key, sizeof r->key, "(all points)");
	snprintf(r->metric, sizeof r->metric, "points regressed");
	r->base = 0;
	r->cand = (double)(slower + failed);
	snprintf(r->detail, sizeof r->detail,
		 "%zu points paired: %zu slower, %zu faster, %zu same, %zu ambiguous; %zu failed "
		 "checks; %zu new, %zu gone", paired, slower, faster, same, ambiguous, failed, added,
		 removed);
	snprintf(r->verdict, sizeof r->verdict, "%s",
		 slower + failed ? "regression" : faster ? "improvement" : "same");
done:
	free(sb);
	free(sn);
	gemm_samples_free(&gb);
	gemm_samples_free(&gn);
	return st;
}

/* ---- serving load (bench_serve.csv, harness/cmd_bench_serve.c) --------------- */

static const char *const serve_metrics[] = {"ttft_ms", "tpot_ms", "latency_ms"};

/* The load a bench_serve.csv was served under, from the bench_serve member
 * of the manifest in its folder, as "name value, ..."; "" without one. */
static void serve_load(const char *csv_path, char *buf, size_t cap)
{
	static const char *const names[] = {"requests", "concurrency", "max_batch", "cache_len",
					    "max_tokens", "input_tokens", "output_tokens", "arrival",
					    "rate_per_s", "tp"};
	char dir[1200];
	const char *slash = strrchr(csv_path, '/');
	snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - csv_path) : 1, slash ? csv_path : ".");
	cJSON *m = NULL;
	size_t len = 0;
	buf[0] = '\0';
	if (ctq_results_manifest(dir, &m, NULL) || !m)
		return;
	const cJSON *sv = ctq_json_get(m, "bench_serve");
	for (size_t i = 0; i < sizeof names / sizeof *names && len < cap; i++) {
		const cJSON *v = ctq_json_get(sv, names[i]);
		if (cJSON_IsNumber(v))
			len += (size_t)snprintf(buf + len, cap - len, "%s%s %g", len ? ", " : "", names[i],
						v->valuedouble);
		else if (cJSON_IsString(v))
			len += (size_t)snprintf(buf + len, cap - len, "%s%s %s", len ? ", " : "", names[i],
						v->valuestring);
	}
	cJSON_Delete(m);
}

/* bench_serve.csv, one row per request: TTFT, TPOT and latency over the
 * served requests of each key (the role when both files have one, else the
 * whole file) through the timing verdict, with serving.max_cv for the
 * noise limit; a request not served on the new side is a regression. When
 * the manifests say the two loads differ (concurrency, lengths, arrival),
 * the latencies are shown but not judged. */
static enum ctq_status cmp_serve(struct pair_ctx *x, struct ctq_error *err)
{
	static const char *const keys[] = {"role", "status", "ttft_ms", "tpot_ms", "latency_ms"};
	const bool role = has_col(x->base_path) && has_col(x->new_path);
	const int nk = role ? 1 : 0;
	int cb[5], cn[5];
	enum ctq_status st = pair_load(x, keys, nk, false, cb, cn, err);
	if (st || (st = need_cols(&x->tb, x->base_path, keys + 1, 4, cb + nk, err)) ||
	    (st = need_cols(&x->tn, x->new_path, keys + 1, 4, cn + nk, err)))
		return st;
	struct ctq_compare_policy sp = *x->p;
	sp.v[CTQ_POL_TIMING_MAX_CV] = sp.v[CTQ_POL_SERVE_MAX_CV];
	const struct ctq_compare_policy *saved = x->p;
	x->p = &sp;
	char lb[600], ln[600], note[1400];
	serve_load(x->base_path, lb, sizeof lb);
	serve_load(x->new_path, ln, sizeof ln);
	const bool differ = lb[0] && ln[0] && strcmp(lb, ln) != 0;
	snprintf(note, sizeof note, "the loads differ (base: %s; new: %s), latencies do not compare", lb,
		 ln);
	/* Timing columns follow the status column: cb + nk + 1. */
	st = timing_keys(x, CTQ_FAM_BENCH_SERVE, serve_metrics, 3, nk, cb + 1, cn + 1,
			 differ ? note : NULL, differ, err);
	x->p = saved;
	for (size_t i = 0; i < x->in.n && !st;) {
		size_t j = run_end(&x->in, i), nb = 0, n_base = 0, nn = 0;
		const struct keyed *kb = index_find(&x->ib, x->in.v[i].key);
		if (kb)
			for (size_t k = (size_t)(kb - x->ib.v), hi = run_end(&x->ib, k); k < hi; k++, n_base++)
				nb += strcmp(ctq_table_get(&x->tb, x->ib.v[k].row, cb[nk]), "ok") != 0;
		for (size_t k = i; k < j; k++)
			nn += strcmp(ctq_table_get(&x->tn, x->in.v[k].row, cn[nk]), "ok") != 0;
		struct ctq_cmp_row *r = new_row(x->c, CTQ_FAM_BENCH_SERVE, x->file, err);
		if (!r) {
			st = CTQ_ERR_NOMEM;
			break;
		}
		snprintf(r->key, sizeof r->key, "%s", nk ? x->in.v[i].key : "(all requests)");
		snprintf(r->metric, sizeof r->metric, "errors");
		r->base = kb ? (double)nb : NAN;
		r->cand = (double)nn;
		if (nn)
			set_verdict(x->c, r, "regression", true);
		else if (nb)
			set_verdict(x->c, r, "improvement", false);
		snprintf(r->detail, sizeof r->detail,
			 "requests not served (status other than ok): %zu of %zu new, %zu of %zu base%s", nn,
			 j - i, nb, n_base, kb ? "" : " (no such key in the baseline)");
		i = j;
	}
	size_t removed;
	return st ? st : removed_rows(x, CTQ_FAM_BENCH_SERVE, "errors", &removed, err);
}

/* ---- accuracy ---------------------------------------------------------------- */

static bool truthy(const char *s)
{
	return !strcmp(s, "true") || !strcmp(s, "1");
}

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

static enum ctq_status acc_row(struct pair_ctx *x, const char *key, const char *metric,
			       const struct tally *t, bool gate, struct ctq_error *err)
{
	struct ctq_paired pr;
	ctq_stats_paired(&pr, t->a, t->b, t->c, t->d, CTQ_Z95);
	struct ctq_cmp_row *r = new_row(x->c, CTQ_FAM_EVAL, x->file, err);
	if (!r)
		return CTQ_ERR_NOMEM;
	snprintf(r->key, sizeof r->key, "%s", key);
	snprintf(r->metric, sizeof r->metric, "%s", metric);
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
		set_verdict(x->c, r, "regression", true);
	else if (sig && pr.diff >= drop * (1 - 1e-12))
		set_verdict(x->c, r, "improvement", false);
	return CTQ_OK;
}

static enum ctq_status cmp_eval(struct pair_ctx *x, struct ctq_error *err)
{
	static const char *const keys[] = {"benchmark", "subject", "id", "correct"};
	int cb[4], cn[4];
	enum ctq_status st = pair_load(x, keys, 3, true, cb, cn, err);
	if (st || (st = need_cols(&x->tb, x->base_path, keys + 3, 1, cb + 3, err)) ||
	    (st = need_cols(&x->tn, x->new_path, keys + 3, 1, cn + 3, err)))
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
		const struct keyed *kb = index_find(&x->ib, x->in.v[i].key);
		if (!kb)
			continue;
		size_t rb = kb->row, rn = x->in.v[i].row;
		const char *s = ctq_table_get(&x->tn, rn, sn);
		if (cur && strcmp(cur, s) != 0) {
			st = acc_row(x, cur, "accuracy", &subj, false, err);
			memset(&subj, 0, sizeof subj);
		}
		cur = s;
		bool okb = truthy(ctq_table_get(&x->tb, rb, cb[3]));
		bool okn = truthy(ctq_table_get(&x->tn, rn, cn[3]));
		tally_add(&all, okb, okn);
		tally_add(&subj, okb, okn);
		const char *rfb = ctq_table_get(&x->tb, rb, rcb), *rfn = ctq_table_get(&x->tn, rn, rcn);
		if (*rfb && *rfn) {
			tally_add(&ref, truthy(rfb), truthy(rfn));
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
	added_removed(x, &added, &removed);
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
		struct ctq_cmp_row *r = new_row(x->c, CTQ_FAM_EVAL, x->file, err);
		if (!r)
			return CTQ_ERR_NOMEM;
		snprintf(r->key, sizeof r->key, "(all questions)");
		snprintf(r->metric, sizeof r->metric, "answer agreement");
		r->cand = (double)n_agree / (double)n_chosen;
		r->summary = true;
		snprintf(r->verdict, sizeof r->verdict, "%s", n_agree == n_chosen ? "same" : "changed");
		snprintf(r->detail, sizeof r->detail,
			 "%zu of %zu questions choose the same letter (%.2f%%), %zu differ", n_agree,
			 n_chosen, 100.0 * r->cand, n_chosen - n_agree);
	}
	return CTQ_OK;
}

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
		struct ctq_cmp_row *r = new_row(c, CTQ_FAM_STEPS, "manifest.json", err);
		if (!r)
			return CTQ_ERR_NOMEM;
		snprintf(r->key, sizeof r->key, "%s", id->valuestring);
		snprintf(r->metric, sizeof r->metric, "status %s -> %s", ob, on);
		bool bad = !strcmp(ob, "passed") && (!strcmp(on, "failed") || !strcmp(on, "error"));
		bool good = strcmp(ob, "passed") != 0 && strcmp(ob, "skipped") != 0 &&
			    !strcmp(on, "passed");
		const cJSON *why = ctq_json_get(s, "reason");
		snprintf(r->detail, sizeof r->detail, "%s", cJSON_IsString(why) ? why->valuestring : "");
		set_verdict(c, r, bad ? "regression" : good ? "improvement" : "changed", bad);
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
	pg->match = malloc((rb->n + 1) * sizeof *pg->match);
	pg->used = calloc(rn->n + 1, sizeof *pg->used);
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
		struct ctq_cmp_row *r = new_row(c, f, file, err);
		if (!r)
			return CTQ_ERR_NOMEM;
		enum ctq_policy_key k = (enum ctq_policy_key)(CTQ_POL_MISSING_FAMILY + f);
		bool bad = p->v[k] != 0;
		snprintf(r->key, sizeof r->key, "(family)");
		snprintf(r->metric, sizeof r->metric, "present");
		r->summary = true;
		set_verdict(c, r, "removed", bad);
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
	if ((st = ctq_results_find(&rb, base_dir, err)) || (st = ctq_results_find(&rn, new_dir, err)) ||
	    (st = ctq_results_manifest(base_dir, &mb, err)) ||
	    (st = ctq_results_manifest(new_dir, &mn, err)))
		goto done;
	if (!rb.n && !rn.n && !(cJSON_IsArray(ctq_json_get(mb, "steps")) &&
				cJSON_IsArray(ctq_json_get(mn, "steps")))) {
		st = ctq_error_set(err, CTQ_ERR_USAGE, new_dir,
				   "neither run holds results to compare (conform.csv, probe.csv, "
				   "bench_model.csv, bench_gemm.csv, bench_serve.csv, "
				   "eval_questions.csv, or a plan's steps)");
		goto done;
	}
	if ((st = cmp_steps(c, mb, mn, err)) || (st = pair_files(&rb, &rn, &pg, err)) ||
	    (st = missing_families(c, &rb, &rn, p, err)))
		goto done;
	for (size_t i = 0; i < rb.n && !st; i++) {
		char pb[1200], pn[1200], disp[1100];
		const struct ctq_result_file *fb = &rb.v[i];
		if (pg.match[i] < 0) {
			struct ctq_cmp_row *r = new_row(c, (int)fb->fam, fb->rel, err);
			if (!r) {
				st = CTQ_ERR_NOMEM;
				break;
			}
			snprintf(r->key, sizeof r->key, "(file)");
			snprintf(r->metric, sizeof r->metric, "present");
			r->summary = true;
			bool bad = p->v[CTQ_POL_MISSING_IS_REGRESSION] != 0;
			set_verdict(c, r, "removed", bad);
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
		struct pair_ctx x = {.c = c, .p = p, .file = disp, .base_path = pb, .new_path = pn};
		c->n_files++;
		switch (fb->fam) {
		case CTQ_FAM_CONFORM: st = cmp_conform(&x, err); break;
		case CTQ_FAM_PROBE: st = cmp_probe(&x, err); break;
		case CTQ_FAM_BENCH_MODEL: st = cmp_timing(&x, err); break;
		case CTQ_FAM_EVAL: st = cmp_eval(&x, err); break;
		case CTQ_FAM_BENCH_GEMM: st = cmp_gemm(&x, err); break;
		case CTQ_FAM_BENCH_SERVE: st = cmp_serve(&x, err); break;
		default: c->n_files--; break;
		}
		pair_free(&x);
	}
	for (size_t j = 0; j < rn.n && !st; j++) {
		if (pg.used[j])
			continue;
		struct ctq_cmp_row *r = new_row(c, (int)rn.v[j].fam, rn.v[j].rel, err);
		if (!r) {
			st = CTQ_ERR_NOMEM;
			break;
		}
		snprintf(r->key, sizeof r->key, "(file)");
		snprintf(r->metric, sizeof r->metric, "present");
		r->summary = true;
		set_verdict(c, r, "added", false);
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
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			char **v = realloc(*out, cap * sizeof *v);
			if (!v) {
				st = ctq_error_set(err, CTQ_ERR_NOMEM, set, "out of memory");
				break;
			}
			*out = v;
		}
		if (!((*out)[*n] = strdup(e->d_name)))
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
	if (!(runs = calloc(2 * kb, sizeof *runs))) {
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
	struct ab_run *sorted = malloc(2 * kb * sizeof *sorted);
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
	if (fam == CTQ_FAM_BENCH_MODEL)
		return !strcmp(metric, "ttft_ms") || !strcmp(metric, "decode_ms_per_step");
	if (fam == CTQ_FAM_BENCH_GEMM)
		return !strcmp(metric, "time_us") || !strcmp(metric, "time_us_median");
	if (fam == CTQ_FAM_BENCH_SERVE)
		return !strcmp(metric, "ttft_ms") || !strcmp(metric, "tpot_ms") ||
		       !strcmp(metric, "latency_ms");
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
		set_verdict(c, &c->rows[w], r->verdict, r->regression);
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
	return k % 2 ? tmp[k / 2] : 0.5 * (tmp[k / 2 - 1] + tmp[k / 2]);
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
	struct ctq_cmp_row *r = new_row(c, sb->fam, sb->file, err);
	if (!r)
		return CTQ_ERR_NOMEM;
	snprintf(r->key, sizeof r->key, "%s", sb->key);
	snprintf(r->metric, sizeof r->metric, "%s", sb->metric);
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
		set_verdict(c, r, "ambiguous", false);
		snprintf(r->detail, sizeof r->detail,
			 "too few interleaved pairs: %zu (policy: at least %zu)", n, min_pairs);
	} else if (fabs(r->change) < thr) {
		set_verdict(c, r, "same", false);
		snprintf(r->detail, sizeof r->detail,
			 "%zu pairs%s: geometric mean ratio %+.2f%%, within +-%.3g%%", n, aside,
			 100 * r->change, 100 * thr);
	} else if (t.p < alpha) {
		set_verdict(c, r, r->change > 0 ? "slower" : "faster", r->change > 0);
		snprintf(r->detail, sizeof r->detail,
			 "%zu pairs%s: geometric mean ratio %+.2f%% (threshold %.3g%%), paired t %.3g, "
			 "p %.3g < %.3g", n, aside, 100 * r->change, 100 * thr, t.t, t.p, alpha);
	} else {
		set_verdict(c, r, "ambiguous", false);
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
	struct ctq_trend tb = {0}, tn = {0};
	bool have_b = false, have_n = false;
	enum ctq_status st = ab_runs(base_set, new_set, &runs, &R, err);
	if (st)
		return st;
	db = calloc(R, sizeof *db);
	dn = calloc(R, sizeof *dn);
	d = malloc(R * sizeof *d);
	tmp = malloc(2 * R * sizeof *tmp);
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
	if ((st = ctq_trend_collect(&tb, db, R, err)))
		goto done;
	have_b = true;
	if ((st = ctq_trend_collect(&tn, dn, R, err)))
		goto done;
	have_n = true;
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
	if (have_b)
		ctq_trend_free(&tb);
	if (have_n)
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

static void fmt_change(char *buf, size_t cap, const struct ctq_cmp_row *r)
{
	if (isnan(r->change))
		snprintf(buf, cap, "-");
	else if (r->fam == CTQ_FAM_BENCH_MODEL || r->fam == CTQ_FAM_BENCH_GEMM ||
		 r->fam == CTQ_FAM_BENCH_SERVE)
		snprintf(buf, cap, "%+.1f%%", 100 * r->change);
	else if (r->fam == CTQ_FAM_EVAL)
		snprintf(buf, cap, "%+.2f pt", 100 * r->change);
	else
		snprintf(buf, cap, "x%.3g", r->change);
}

static void fmt_value(char *buf, size_t cap, const struct ctq_cmp_row *r, double v)
{
	if (r->fam == CTQ_FAM_EVAL && !isnan(v))
		snprintf(buf, cap, "%.2f%%", 100 * v);
	else
		fmt_num(buf, cap, v);
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
		ctq_csv_field(&w, fam_label(r->fam));
		ctq_csv_field(&w, r->file);
		ctq_csv_field(&w, r->key);
		ctq_csv_field(&w, r->metric);
		const double v[4] = {r->base, r->cand, r->change, r->p};
		for (int k = 0; k < 4; k++) {
			if (isnan(v[k]))
				ctq_csv_field(&w, "");
			else
				ctq_csv_fieldf(&w, "%.17g", v[k]);
		}
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
	return r->summary || r->fam == CTQ_FAM_BENCH_MODEL || r->fam == CTQ_FAM_BENCH_SERVE ||
	       strcmp(r->verdict, "same") != 0;
}

void ctq_comparison_print(const struct ctq_comparison *c, FILE *f)
{
	fprintf(f, "%-12s %-34s %-40s %-20s %10s %10s %9s %8s  %s\n", "FAMILY", "FILE", "KEY",
		"METRIC", "BASE", "NEW", "CHANGE", "P", "VERDICT");
	for (size_t i = 0; i < c->n; i++) {
		const struct ctq_cmp_row *r = &c->rows[i];
		if (!shown(r))
			continue;
		char b[32], n[32], ch[32], p[32];
		fmt_value(b, sizeof b, r, r->base);
		fmt_value(n, sizeof n, r, r->cand);
		fmt_change(ch, sizeof ch, r);
		fmt_num(p, sizeof p, r->p);
		fprintf(f, "%-12s %-34.34s %-40.40s %-20.20s %10s %10s %9s %8s  %s%s\n",
			fam_label(r->fam), r->file, r->key, r->metric, b, n, ch, p,
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
	static const int order[] = {CTQ_FAM_STEPS, CTQ_FAM_CONFORM, CTQ_FAM_PROBE,
				    CTQ_FAM_BENCH_MODEL, CTQ_FAM_BENCH_GEMM, CTQ_FAM_BENCH_SERVE,
				    CTQ_FAM_EVAL};
	static const char *const titles[] = {"Plan steps", "Conformance", "Kernel probes",
					     "Timings", "GEMM points (unchanged ones in compare.csv)",
					     "Serving load (per request)",
					     "Accuracy (paired by question)"};
	for (size_t k = 0; k < sizeof order / sizeof *order; k++) {
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
			char b[32], n[32], ch[32], pv[32];
			fmt_value(b, sizeof b, r, r->base);
			fmt_value(n, sizeof n, r, r->cand);
			fmt_change(ch, sizeof ch, r);
			fmt_num(pv, sizeof pv, r->p);
			ctq_strbuf_append(out, "| ");
			md_escape(out, r->file);
			ctq_strbuf_append(out, " | ");
			md_escape(out, r->key);
			ctq_strbuf_append(out, " | ");
			md_escape(out, r->metric);
			ctq_strbuf_printf(out, " | %s | %s | %s | %s | %s%s%s | ", b, n, ch, pv,
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

static struct ctq_trend_series *series(struct ctq_trend *t, int fam, const char *file,
				       const char *key, const char *metric, const char *unit,
				       struct ctq_error *err)
{
	for (size_t i = 0; i < t->n; i++) {
		struct ctq_trend_series *s = &t->s[i];
		if (s->fam == fam && !strcmp(s->file, file) && !strcmp(s->key, key) &&
		    !strcmp(s->metric, metric))
			return s;
	}
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 32;
		struct ctq_trend_series *v = realloc(t->s, cap * sizeof *v);
		if (!v) {
			ctq_error_set(err, CTQ_ERR_NOMEM, "trend", "out of memory");
			return NULL;
		}
		t->s = v;
		t->cap = cap;
	}
	struct ctq_trend_series *s = &t->s[t->n];
	memset(s, 0, sizeof *s);
	s->v = malloc(t->n_runs * sizeof *s->v);
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

static enum ctq_status put(struct ctq_trend *t, size_t run, int fam, const char *file,
			   const char *key, const char *metric, const char *unit, double v,
			   struct ctq_error *err)
{
	struct ctq_trend_series *s = series(t, fam, file, key, metric, unit, err);
	if (!s)
		return CTQ_ERR_NOMEM;
	s->v[run] = v;
	return CTQ_OK;
}

/* The median of each of nm metric columns over the rows of each key (nk
 * key columns; none: one key, "(all requests)"), one series per key and
 * metric; a key without a number in a column gets no value there. */
static enum ctq_status trend_medians(struct ctq_trend *t, size_t run, int fam, const char *file,
				     const struct ctq_table *tb, const char *path,
				     const char *const *keys, int nk, const char *const *metrics,
				     int nm, const char *unit, struct ctq_error *err)
{
	int cols[16];
	struct index ix = {0};
	double *v = NULL;
	enum ctq_status st;
	if ((st = need_cols(tb, path, keys, nk, cols, err)) ||
	    (st = need_cols(tb, path, metrics, nm, cols + nk, err)) ||
	    (st = index_build(&ix, tb, cols, nk, false, err)))
		goto done;
	if (!(v = malloc((tb->n_rows + 1) * sizeof *v))) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, "trend", "out of memory");
		goto done;
	}
	for (size_t i = 0; i < ix.n && !st;) {
		size_t j = run_end(&ix, i);
		for (int m = 0; m < nm && !st; m++) {
			size_t n = gather(tb, &ix, i, j, cols[nk + m], v);
			struct ctq_sample_summary s;
			if (n && !(st = ctq_sample_summarize(v, n, &s, err)))
				st = put(t, run, fam, file, nk ? ix.v[i].key : "(all requests)", metrics[m],
					 unit, s.median, err);
		}
		i = j;
	}
done:
	free(v);
	index_free(&ix);
	return st;
}

static enum ctq_status trend_file(struct ctq_trend *t, size_t run, const char *path,
				  enum ctq_family fam, const char *file, struct ctq_error *err)
{
	struct ctq_table tb;
	enum ctq_status st = ctq_table_load(&tb, path, err);
	if (st)
		return st;
	if (fam == CTQ_FAM_CONFORM) {
		int oc = ctq_table_col(&tb, "outcome");
		if (oc < 0) {
			st = ctq_error_set(err, CTQ_ERR_PARSE, path, "has no column \"outcome\"");
		} else {
			size_t failed = 0;
			for (size_t r = 0; r < tb.n_rows; r++)
				failed += strcmp(ctq_table_get(&tb, r, oc), "pass") != 0;
			st = put(t, run, fam, file, "(all checks)", "failed checks", "", (double)failed, err);
			if (!st)
				st = put(t, run, fam, file, "(all checks)", "checks", "", (double)tb.n_rows, err);
		}
	} else if (fam == CTQ_FAM_PROBE) {
		int bc = ctq_table_col(&tb, "backend"), kc = ctq_table_col(&tb, "kernel_rel_l2");
		int qc = ctq_table_col(&tb, "quant_rel_l2");
		int oc = ctq_table_col(&tb, "outcome");
		if (bc < 0 || kc < 0 || qc < 0 || oc < 0) {
			st = ctq_error_set(err, CTQ_ERR_PARSE, path,
					   "lacks backend, kernel_rel_l2, quant_rel_l2 or outcome");
		}
		for (size_t r = 0; r < tb.n_rows && !st; r++) {
			const char *b = ctq_table_get(&tb, r, bc);
			int ac = ctq_table_col(&tb, "acts");
			double vals[3] = {ctq_table_num(&tb, r, kc), ctq_table_num(&tb, r, qc),
					  strcmp(ctq_table_get(&tb, r, oc), "pass") != 0};
			if (!strcmp(ctq_table_get(&tb, r, ac), "bf16-limit"))
				vals[1] = NAN; /* overflows by design (not judged) */
			static const char *const ms[3] = {"worst kernel_rel_l2", "worst quant_rel_l2",
							  "failed probes"};
			for (int m = 0; m < 3 && !st; m++) {
				struct ctq_trend_series *s = series(t, fam, file, b, ms[m], "", err);
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
	} else if (fam == CTQ_FAM_BENCH_MODEL) {
		static const char *const keys_role[] = {"role", "backend", "batch", "input_tokens",
							"output_tokens"};
		const bool role = ctq_table_col(&tb, "role") >= 0;
		st = trend_medians(t, run, fam, file, &tb, path, role ? keys_role : keys_role + 1,
				   role ? 5 : 4, timing_metrics, 2, "ms", err);
	} else if (fam == CTQ_FAM_BENCH_GEMM) {
		static const char *const keys[] = {"shape", "K", "N", "M", "impl"};
		static const char *const metric[] = {"time_us_median"};
		st = trend_medians(t, run, fam, file, &tb, path, keys, 5, metric, 1, "us", err);
	} else if (fam == CTQ_FAM_BENCH_SERVE) {
		static const char *const role[] = {"role"};
		const int rc = ctq_table_col(&tb, "role"), sc = ctq_table_col(&tb, "status");
		if (sc < 0)
			st = ctq_error_set(err, CTQ_ERR_PARSE, path, "has no column \"status\"");
		else
			st = trend_medians(t, run, fam, file, &tb, path, role, rc >= 0, serve_metrics, 3,
					   "ms", err);
		for (size_t r = 0; r < tb.n_rows && !st; r++) {
			struct ctq_trend_series *s = series(t, fam, file,
							    rc >= 0 ? ctq_table_get(&tb, r, rc)
								    : "(all requests)",
							    "errors", "", err);
			if (!s) {
				st = CTQ_ERR_NOMEM;
				break;
			}
			s->v[run] = (isnan(s->v[run]) ? 0 : s->v[run]) +
				    (strcmp(ctq_table_get(&tb, r, sc), "ok") != 0);
		}
	} else if (fam == CTQ_FAM_EVAL) {
		int cc = ctq_table_col(&tb, "correct"), rc = ctq_table_col(&tb, "ref_correct");
		if (cc < 0) {
			st = ctq_error_set(err, CTQ_ERR_PARSE, path, "has no column \"correct\"");
		} else {
			size_t k = 0, kr = 0, nr = 0;
			for (size_t r = 0; r < tb.n_rows; r++) {
				k += truthy(ctq_table_get(&tb, r, cc));
				const char *s = ctq_table_get(&tb, r, rc);
				if (*s) {
					nr++;
					kr += truthy(s);
				}
			}
			if (tb.n_rows)
				st = put(t, run, fam, file, "(all questions)", "accuracy", "",
					 (double)k / (double)tb.n_rows, err);
			if (!st && nr)
				st = put(t, run, fam, file, "(all questions)", "reference accuracy", "",
					 (double)kr / (double)nr, err);
		}
	}
	ctq_table_free(&tb);
	return st;
}

enum ctq_status ctq_trend_collect(struct ctq_trend *t, char *const *dirs, size_t n_runs,
				  struct ctq_error *err)
{
	memset(t, 0, sizeof *t);
	t->n_runs = n_runs;
	t->labels = calloc(n_runs + 1, sizeof *t->labels);
	struct ctq_results *rs = calloc(n_runs + 1, sizeof *rs);
	enum ctq_status st = CTQ_OK;
	if (!t->labels || !rs) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, "trend", "out of memory");
		goto done;
	}
	for (size_t i = 0; i < n_runs && !st; i++) {
		if ((st = ctq_results_find(&rs[i], dirs[i], err)))
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
			ctq_csv_field(&w, fam_label(s->fam));
			ctq_csv_field(&w, s->file);
			ctq_csv_field(&w, s->key);
			ctq_csv_field(&w, s->metric);
			ctq_csv_field(&w, s->unit);
			ctq_csv_fieldf(&w, "%zu", r + 1);
			ctq_csv_field(&w, t->labels[r]);
			if (isnan(s->v[r]))
				ctq_csv_field(&w, "");
			else
				ctq_csv_fieldf(&w, "%.17g", s->v[r]);
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
