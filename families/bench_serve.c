/* The bench serve family (see bench_serve.h). */
#include "families/bench_serve.h"
#include "families/verdict.h"
#include "core/json.h"
#include "results/csv_out.h"
#include "results/files.h"
#include "results/table.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ctq_fam_bench_serve_csv_row(struct ctq_csv *w, const struct ctq_bench_serve_row *r)
{
	ctq_csv_fieldf(w, "%ld", r->request);
	ctq_csv_fieldf(w, "%ld", r->input_len);
	ctq_csv_fieldf(w, "%lld", r->output_tokens);
	ctq_csv_fieldf(w, "%.6f", r->arrival_s);
	const double ms[4] = {r->queue_ms, r->ttft_ms, r->latency_ms, r->tpot_ms};
	for (int k = 0; k < 4; k++) {
		if (isnan(ms[k]))
			ctq_csv_field(w, "");
		else
			ctq_csv_fieldf(w, "%.6f", ms[k]);
	}
	ctq_csv_field(w, r->status);
	ctq_csv_field(w, r->tokens);
	ctq_csv_field(w, r->reason);
	ctq_csv_end_row(w);
}

/* ---- comparison -------------------------------------------------------------- */

static const char *const serve_metrics[] = {"ttft_ms", "tpot_ms", "latency_ms"};

/* The bench_serve member of the manifest beside a bench_serve.csv (owned;
 * NULL without one). */
static cJSON *serve_manifest(const char *csv_path, const cJSON **sv)
{
	char dir[1200];
	const char *slash = strrchr(csv_path, '/');
	snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - csv_path) : 1, slash ? csv_path : ".");
	cJSON *m = NULL;
	if (ctq_results_manifest(dir, &m, NULL))
		m = NULL;
	*sv = ctq_json_get(m, "bench_serve");
	return m;
}

/* The load of a bench_serve member sv of a manifest (NULL: none), as
 * "name value, ..."; "" without one. workload_only: the requests and their
 * arrivals alone, without the in-process engine's own settings (slots,
 * cache, tokens per call, tp), which a server run has not: an HTTP run
 * compares with an in-process one on the workload. */
static void serve_load(const cJSON *sv, char *buf, size_t cap, bool workload_only)
{
	static const char *const names[] = {"requests", "concurrency", "input_tokens", "output_tokens",
					    "arrival", "rate_per_s", "max_batch", "cache_len", "max_tokens",
					    "tp"};
	const size_t n_names = workload_only ? 6 : sizeof names / sizeof *names;
	size_t len = 0;
	buf[0] = '\0';
	for (size_t i = 0; sv && i < n_names && len < cap; i++) {
		const cJSON *v = ctq_json_get(sv, names[i]);
		if (cJSON_IsNumber(v))
			len += (size_t)snprintf(buf + len, cap - len, "%s%s %g", len ? ", " : "", names[i],
						v->valuedouble);
		else if (cJSON_IsString(v))
			len += (size_t)snprintf(buf + len, cap - len, "%s%s %s", len ? ", " : "", names[i],
						v->valuestring);
	}
}

/* bench_serve.csv, one row per request: TTFT, TPOT and latency over the
 * served requests of each key (the role when both files have one, else the
 * whole file) through the timing verdict, with serving.max_cv for the
 * noise limit; a request not served on the new side is a regression. When
 * the manifests say the two loads differ (concurrency, lengths, arrival),
 * the latencies are shown but not judged. */
enum ctq_status ctq_fam_bench_serve_compare(struct ctq_cmp_pair *x, struct ctq_error *err)
{
	static const char *const keys[] = {"role", "status", "ttft_ms", "tpot_ms", "latency_ms"};
	const bool role = ctq_cmp_has_role(x->base_path) && ctq_cmp_has_role(x->new_path);
	const int nk = role ? 1 : 0;
	int cb[5], cn[5];
	enum ctq_status st = ctq_cmp_pair_load(x, keys, nk, false, cb, cn, err);
	if (st || (st = ctq_cmp_need_cols(&x->tb, x->base_path, keys + 1, 4, cb + nk, err)) ||
	    (st = ctq_cmp_need_cols(&x->tn, x->new_path, keys + 1, 4, cn + nk, err)))
		return st;
	struct ctq_compare_policy sp = *x->p;
	sp.v[CTQ_POL_TIMING_MAX_CV] = sp.v[CTQ_POL_SERVE_MAX_CV];
	const struct ctq_compare_policy *saved = x->p;
	x->p = &sp;
	char lb[600], ln[600], note[1400];
	const cJSON *svb, *svn;
	cJSON *mb = serve_manifest(x->base_path, &svb), *mn = serve_manifest(x->new_path, &svn);
	const bool http = !strcmp(ctq_json_str_at(svb, "engine", ""), "http") ||
			  !strcmp(ctq_json_str_at(svn, "engine", ""), "http");
	serve_load(svb, lb, sizeof lb, http);
	serve_load(svn, ln, sizeof ln, http);
	cJSON_Delete(mb);
	cJSON_Delete(mn);
	const bool differ = lb[0] && ln[0] && strcmp(lb, ln) != 0;
	snprintf(note, sizeof note, "the loads differ (base: %s; new: %s), latencies do not compare", lb,
		 ln);
	/* Timing columns follow the status column: cb + nk + 1. */
	st = ctq_cmp_timing_keys(x, CTQ_FAM_BENCH_SERVE, serve_metrics, 3, nk, cb + 1, cn + 1,
			 differ ? note : NULL, differ, err);
	x->p = saved;
	for (size_t i = 0; i < x->in.n && !st;) {
		size_t j = ctq_cmp_run_end(&x->in, i), nb = 0, n_base = 0, nn = 0;
		const struct ctq_cmp_keyed *kb = ctq_cmp_index_find(&x->ib, x->in.v[i].key);
		if (kb)
			for (size_t k = (size_t)(kb - x->ib.v), hi = ctq_cmp_run_end(&x->ib, k); k < hi; k++, n_base++)
				nb += strcmp(ctq_table_get(&x->tb, x->ib.v[k].row, cb[nk]), "ok") != 0;
		for (size_t k = i; k < j; k++)
			nn += strcmp(ctq_table_get(&x->tn, x->in.v[k].row, cn[nk]), "ok") != 0;
		const char *key = nk ? x->in.v[i].key : "(all requests)";
		struct ctq_cmp_row *r = ctq_cmp_new_row(x->c, CTQ_FAM_BENCH_SERVE, x->file, key,
							"errors", err);
		if (!r) {
			st = CTQ_ERR_NOMEM;
			break;
		}
		r->base = kb ? (double)nb : NAN;
		r->cand = (double)nn;
		if (nn)
			ctq_cmp_set_verdict(x->c, r, "regression", true);
		else if (nb)
			ctq_cmp_set_verdict(x->c, r, "improvement", false);
		snprintf(r->detail, sizeof r->detail,
			 "requests not served (status other than ok): %zu of %zu new, %zu of %zu base%s", nn,
			 j - i, nb, n_base, kb ? "" : " (no such key in the baseline)");
		i = j;
	}
	size_t removed;
	return st ? st : ctq_cmp_removed_rows(x, CTQ_FAM_BENCH_SERVE, "errors", &removed, err);
}

/* ---- trend ------------------------------------------------------------------- */

enum ctq_status ctq_fam_bench_serve_trend(struct ctq_trend *t, size_t run, const struct ctq_table *tb,
					  const char *path, const char *file, struct ctq_error *err)
{
	static const char *const role[] = {"role"};
	const int rc = ctq_table_col(tb, "role"), sc = ctq_table_col(tb, "status");
	enum ctq_status st;
	if (sc < 0)
		st = ctq_error_set(err, CTQ_ERR_PARSE, path, "has no column \"status\"");
	else
		st = ctq_trend_medians(t, run, CTQ_FAM_BENCH_SERVE, file, tb, path, role, rc >= 0,
				       serve_metrics, 3, "ms", err);
	for (size_t r = 0; r < tb->n_rows && !st; r++) {
		struct ctq_trend_series *s =
			ctq_trend_series_get(t, CTQ_FAM_BENCH_SERVE, file,
					     rc >= 0 ? ctq_table_get(tb, r, rc) : "(all requests)",
					     "errors", "", err);
		if (!s) {
			st = CTQ_ERR_NOMEM;
			break;
		}
		s->v[run] = (isnan(s->v[run]) ? 0 : s->v[run]) +
			    (strcmp(ctq_table_get(tb, r, sc), "ok") != 0);
	}
	return st;
}

/* ---- report section ------------------------------------------------------------ */

/* A ctq bench serve run: the summary its manifest holds (throughput and
 * percentiles) and the request statuses of bench_serve.csv. */
enum ctq_status ctq_fam_bench_serve_report(struct ctq_rep *r, const struct ctq_result_file *f)
{
	static const char *const names[] = {"status"};
	struct ctq_rep_table R;
	enum ctq_status st = ctq_rep_load_result(r, f, names, 1, 1, &R);
	if (st)
		return st;
	const int cs = R.col[0];
	size_t ok = 0;
	for (size_t i = 0; i < R.t.n_rows; i++)
		ok += !strcmp(ctq_table_get(&R.t, i, cs), "ok");
	const size_t n = R.t.n_rows;
	ctq_table_free(&R.t);
	r->serve_errors += n - ok;
	cJSON *m = ctq_rep_step_manifest(r->dir, f->dir);
	const cJSON *sv = ctq_json_get(m, "bench_serve");
	char line[900];
	snprintf(line, sizeof line, "%s — %s on %s", f->rel, ctq_json_str_at(sv, "model", "?"),
		 ctq_json_str_at(sv, "device", "?"));
	ctq_rep_heading(r, 3, line);
	const bool http = !strcmp(ctq_json_str_at(sv, "engine", ""), "http");
	/* Runs before the server profiles were vLLM's requests (ignore_eos). */
	const cJSON *eos = ctq_json_get(sv, "ignore_eos");
	const bool vary = http && cJSON_IsFalse(eos);
	if (http)
		snprintf(line, sizeof line,
			 "%zu requests of %.0f + %.0f tokens (%s prompts, profile %s), %s arrival, concurrency "
			 "%.0f, streamed over HTTP (%s): %zu served, %zu failed%s.",
			 n, ctq_rep_jnum(sv, "input_tokens"), ctq_rep_jnum(sv, "output_tokens"),
			 ctq_json_str_at(sv, "prompt_format", "?"), ctq_json_str_at(sv, "server_profile", "vllm"),
			 ctq_json_str_at(sv, "arrival", "?"), ctq_rep_jnum(sv, "concurrency"),
			 ctq_json_str_at(sv, "endpoint", "?"), ok, n - ok,
			 n - ok ? " (FAILED: every request must be served)" : "");
	else
		snprintf(line, sizeof line,
			 "%zu requests of %.0f + %.0f tokens, %s arrival, concurrency %.0f, %.0f KV slots of %.0f "
			 "positions, %.0f tokens per forward call: %zu served, %zu failed%s.",
			 n, ctq_rep_jnum(sv, "input_tokens"), ctq_rep_jnum(sv, "output_tokens"),
			 ctq_json_str_at(sv, "arrival", "?"), ctq_rep_jnum(sv, "concurrency"),
			 ctq_rep_jnum(sv, "max_batch"), ctq_rep_jnum(sv, "cache_len"),
			 ctq_rep_jnum(sv, "max_tokens"), ok, n - ok,
			 n - ok ? " (FAILED: every request must be served)" : "");
	ctq_rep_para(r, line);
	if (vary) {
		snprintf(line, sizeof line,
			 "Output lengths may vary: no ignore_eos was sent (%s), so a request may end at EOS; "
			 "%.0f stopped early. Output tokens from %s.",
			 ctq_json_str_at(sv, "probe", "")[0] ? ctq_json_str_at(sv, "probe", "") : "profile openai",
			 ctq_rep_jnum(sv, "stopped_early"), ctq_json_str_at(sv, "output_tokens_from", "?"));
		ctq_rep_para(r, line);
	}
	static const char *const cols[] = {"total s", "requests/s", "output tokens/s",
					   "tokens/s through the model", "forward calls", NULL};
	static const char *const hcols[] = {"total s", "requests/s", "output tokens/s",
					    "input + output tokens/s", NULL};
	ctq_rep_table_head(r, http ? hcols : cols);
	ctq_rep_row_begin(r);
	ctq_rep_cellf(r, "num", "%.3f", ctq_rep_jnum(sv, "total_s"));
	ctq_rep_cellf(r, "num", "%.2f", ctq_rep_jnum(sv, "requests_per_s"));
	ctq_rep_cellf(r, "num", "%.1f", ctq_rep_jnum(sv, "output_tokens_per_s"));
	ctq_rep_cellf(r, "num", "%.1f", ctq_rep_jnum(sv, "tokens_per_s"));
	if (!http)
		ctq_rep_cellf(r, "num", "%.0f", ctq_rep_jnum(sv, "forward_calls"));
	ctq_rep_row_end(r);
	ctq_rep_table_end(r);
	static const char *const pcols[] = {"ms", "mean", "p50", "p90", "p99", NULL};
	static const char *const dists[] = {"ttft_ms", "latency_ms", "tpot_ms", "itl_ms", "queue_ms"};
	ctq_rep_table_head(r, pcols);
	for (size_t d = 0; d < sizeof dists / sizeof *dists; d++) {
		const cJSON *j = ctq_json_get(sv, dists[d]);
		if (!j)
			continue; /* itl_ms: HTTP runs only */
		ctq_rep_row_begin(r);
		ctq_rep_cell(r, dists[d], NULL);
		static const char *const k[] = {"mean", "p50", "p90", "p99"};
		for (int i = 0; i < 4; i++)
			ctq_rep_cellf(r, "num", "%.3f", ctq_rep_jnum(j, k[i]));
		ctq_rep_row_end(r);
	}
	ctq_rep_table_end(r);
	cJSON_Delete(m);
	return CTQ_OK;
}
