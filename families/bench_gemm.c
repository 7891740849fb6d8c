/* The bench gemm family (see bench_gemm.h). */
#include "families/bench_gemm.h"
#include "core/arena.h"
#include "families/verdict.h"
#include "bench/gemm.h"
#include "core/fileio.h"
#include "core/json.h"
#include "results/table.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- comparison -------------------------------------------------------------- */

/* The per-call times beside a bench_gemm.csv (CTQ_GEMM_SAMPLES_FILE),
 * indexed by the point's key; present false when there is no such file. */
struct gemm_samples {
	bool present;
	char path[1200];
	struct ctq_table t;
	struct ctq_cmp_index ix;
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
	    (st = ctq_cmp_need_cols(&s->t, s->path, names, 6, cols, err)) ||
	    (st = ctq_cmp_index_build(&s->ix, &s->t, cols, 5, false, err)))
		return st;
	s->col = cols[5];
	return CTQ_OK;
}

static void gemm_samples_free(struct gemm_samples *s)
{
	ctq_table_free(&s->t);
	ctq_cmp_index_free(&s->ix);
}

/* The samples of key into out (room for every row); 0 without any. */
static size_t gemm_samples_of(const struct gemm_samples *s, const char *key, double *out)
{
	const struct ctq_cmp_keyed *k = s->present ? ctq_cmp_index_find(&s->ix, key) : NULL;
	if (!k)
		return 0;
	size_t lo = (size_t)(k - s->ix.v);
	return ctq_cmp_gather(&s->t, &s->ix, lo, ctq_cmp_run_end(&s->ix, lo), s->col, out);
}

/* bench_gemm.csv by (shape, K, N, M, impl): the per-call samples of each
 * point through the timing verdict; a ctq implementation whose check is not
 * pass on the new side is a regression whatever its time. K and N are part
 * of the key so that a shape name reused with other dimensions (another
 * model) does not pair. */
enum ctq_status ctq_fam_bench_gemm_compare(struct ctq_cmp_pair *x, struct ctq_error *err)
{
	static const char *const keys[] = {"shape", "K", "N", "M", "impl", "check", "time_us_median",
					   "note"};
	int cb[8], cn[8];
	struct gemm_samples gb = {0}, gn = {0};
	double *sb = NULL, *sn = NULL;
	size_t paired = 0, added = 0, removed = 0, slower = 0, faster = 0, same = 0, ambiguous = 0,
	       failed = 0;
	char note[1400];
	enum ctq_status st = ctq_cmp_pair_load(x, keys, 5, true, cb, cn, err);
	if (st || (st = ctq_cmp_need_cols(&x->tb, x->base_path, keys + 5, 3, cb + 5, err)) ||
	    (st = ctq_cmp_need_cols(&x->tn, x->new_path, keys + 5, 3, cn + 5, err)) ||
	    (st = gemm_samples_load(&gb, x->base_path, err)) ||
	    (st = gemm_samples_load(&gn, x->new_path, err)))
		goto done;
	sb = ctq_malloc((gb.t.n_rows + 1) * sizeof *sb);
	sn = ctq_malloc((gn.t.n_rows + 1) * sizeof *sn);
	if (!sb || !sn) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, "compare", "out of memory");
		goto done;
	}
	for (size_t i = 0; i < x->in.n && !st; i++) {
		const char *key = x->in.v[i].key;
		const size_t rn = x->in.v[i].row;
		const struct ctq_cmp_keyed *kb = ctq_cmp_index_find(&x->ib, key);
		enum ctq_gemm_impl impl;
		const bool ctq = ctq_gemm_impl_parse(ctq_table_get(&x->tn, rn, cn[4]), &impl) &&
				 ctq_gemm_impl_is_ctq(impl);
		const char *ckn = ctq_table_get(&x->tn, rn, cn[5]);
		const char *ckb = kb ? ctq_table_get(&x->tb, kb->row, cb[5]) : "(absent)";
		if (ctq && (strcmp(ckn, "pass") || strcmp(ckb, "pass"))) {
			const bool bad = strcmp(ckn, "pass") != 0;
			struct ctq_cmp_row *r = ctq_cmp_new_row(x->c, CTQ_FAM_BENCH_GEMM, x->file,
								key, NULL, err);
			if (!r) {
				st = CTQ_ERR_NOMEM;
				break;
			}
			snprintf(r->metric, sizeof r->metric, "check %s -> %s", ckb, ckn);
			ctq_cmp_set_verdict(x->c, r, bad ? "regression" : "improvement", bad);
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
		if ((st = ctq_cmp_timing_row(x, CTQ_FAM_BENCH_GEMM, key, "time_us", sb, nb, sn, nn,
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
	if (st || (st = ctq_cmp_removed_rows(x, CTQ_FAM_BENCH_GEMM, "time_us", &removed, err)))
		goto done;
	struct ctq_cmp_row *r = ctq_cmp_new_row(x->c, CTQ_FAM_BENCH_GEMM, x->file,
						"(all points)", "points regressed", err);
	if (!r) {
		st = CTQ_ERR_NOMEM;
		goto done;
	}
	r->summary = true;
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

/* ---- trend ------------------------------------------------------------------- */

enum ctq_status ctq_fam_bench_gemm_trend(struct ctq_trend *t, size_t run, const struct ctq_table *tb,
					 const char *path, const char *file, struct ctq_error *err)
{
	static const char *const keys[] = {"shape", "K", "N", "M", "impl"};
	static const char *const metric[] = {"time_us_median"};
	return ctq_trend_medians(t, run, CTQ_FAM_BENCH_GEMM, file, tb, path, keys, 5, metric, 1,
				 "us", err);
}

/* ---- report section ------------------------------------------------------------ */

/* The points of a shape where cuBLASLt refused the shape, with its note. */
static bool i8_note(const struct ctq_gemm_row *rows, size_t n, const char *shape, char *buf, size_t cap)
{
	size_t len = 0;
	const char *note = NULL;
	for (size_t i = 0; i < n; i++) {
		const struct ctq_gemm_row *x = &rows[i];
		if (x->impl != CTQ_GEMM_I8 || strcmp(x->shape, shape) || !isnan(x->time_us_median))
			continue;
		if (!len)
			len = (size_t)snprintf(buf, cap, "cublaslt_i8 not timed at M =");
		if (len < cap)
			len += (size_t)snprintf(buf + len, cap - len, " %lld", (long long)x->M);
		note = x->note;
	}
	if (len && len < cap)
		snprintf(buf + len, cap - len, " (%s).", note && *note ? note : "no note");
	return len > 0;
}

/* bench_gemm.csv (ctq bench gemm, bench/gemm.h): how it was timed,
 * the points whose ctq outputs differ from the reference (a failure), the
 * targets per shape as pass / miss, a table and a TOPS-against-M plot per
 * shape. */
enum ctq_status ctq_fam_bench_gemm_report(struct ctq_rep *r, const struct ctq_result_file *f)
{
	char path[1200], line[1200];
	snprintf(path, sizeof path, "%s/%s", r->dir, f->rel);
	struct ctq_gemm_row *rows = NULL;
	size_t n = 0, nt = 0;
	struct ctq_gemm_target *t = NULL;
	enum ctq_status st = ctq_gemm_rows_load(path, &rows, &n, r->err);
	if (st || (st = ctq_gemm_targets(rows, n, &t, &nt, r->err))) {
		free(rows);
		return st;
	}
	cJSON *m = ctq_rep_step_manifest(r->dir, f->dir);
	const cJSON *g = ctq_json_get(m, "bench_gemm");
	snprintf(line, sizeof line, "%s — %s", f->rel, ctq_json_str_at(g, "device", "unknown device"));
	ctq_rep_heading(r, 3, line);
	const cJSON *pk = ctq_json_get(g, "peaks"), *me = ctq_json_get(g, "method");
	char tops[32] = "unknown", gbps[32] = "unknown";
	if (!isnan(ctq_rep_jnum(pk, "int8_dense_tops")))
		snprintf(tops, sizeof tops, "%.0f", ctq_rep_jnum(pk, "int8_dense_tops"));
	if (!isnan(ctq_rep_jnum(pk, "hbm_gbps")))
		snprintf(gbps, sizeof gbps, "%.0f", ctq_rep_jnum(pk, "hbm_gbps"));
	snprintf(line, sizeof line,
		 "Peaks: INT8 dense %s TOPS, HBM %s GB/s (%s). Per-call times from CUDA graphs of "
		 "consecutive calls rotating through buffer copies that touch >= %gx the L2; %g samples "
		 "after %g warm-up launches; median, min and cv. Every point was checked bit-exact against "
		 "the CPU reference on %g rows before timing. Targets are held by ctq_gemm (the GEMM with "
		 "its fused epilogue) and ctq_quantize; %% of peak and speedups are against the INT8 peak "
		 "and cuBLAS BF16.",
		 tops, gbps, ctq_json_str_at(pk, "source", "unknown"), ctq_rep_jnum(me, "l2_factor"),
		 ctq_rep_jnum(me, "samples"), ctq_rep_jnum(me, "warmup"), ctq_rep_jnum(me, "check_rows"));
	ctq_rep_para(r, line);
	size_t failed = 0;
	for (size_t i = 0; i < n; i++)
		if (ctq_gemm_impl_is_ctq(rows[i].impl) && !strcmp(rows[i].check, "fail")) {
			if (!failed++)
				snprintf(line, sizeof line, "FAILED: %s M=%lld %s differs from the reference (%s).",
					 rows[i].shape, (long long)rows[i].M, ctq_gemm_impl_name(rows[i].impl),
					 rows[i].note);
		}
	if (failed) {
		r->gemm_failed += failed;
		ctq_rep_para(r, line);
	}

	/* Targets: one row per target, one column per shape. */
	const char **shapes = ctq_calloc(n + 1, sizeof *shapes);
	size_t ns = 0;
	for (size_t i = 0; shapes && i < n; i++) {
		size_t j = 0;
		while (j < ns && strcmp(shapes[j], rows[i].shape))
			j++;
		if (j == ns)
			shapes[ns++] = rows[i].shape;
	}
	const char **cols = ctq_calloc(ns + 3, sizeof *cols);
	if (!shapes || !cols) {
		free(shapes);
		free(cols);
		free(t);
		free(rows);
		cJSON_Delete(m);
		return ctq_error_set(r->err, CTQ_ERR_NOMEM, path, "out of memory");
	}
	cols[0] = "target";
	cols[1] = "all shapes";
	for (size_t s = 0; s < ns; s++)
		cols[s + 2] = shapes[s];
	ctq_rep_table_head(r, cols);
	for (int id = 0; id < CTQ_GEMM_TGT_COUNT; id++) {
		const char *wd, *wsh;
		enum ctq_gemm_verdict v = ctq_gemm_target_overall(t, nt, (enum ctq_gemm_target_id)id, &wd, &wsh);
		static const char *const cls[] = {"passed", "failed", "skipped"};
		ctq_rep_row_begin(r);
		ctq_rep_cell(r, ctq_gemm_target_text((enum ctq_gemm_target_id)id), NULL);
		ctq_rep_cell(r, ctq_gemm_verdict_name(v), cls[v]);
		for (size_t s = 0; s < ns; s++)
			for (size_t k = 0; k < nt; k++)
				if ((int)t[k].id == id && !strcmp(t[k].shape, shapes[s]))
					ctq_rep_cellf(r, cls[t[k].verdict], "%s: %s", ctq_gemm_verdict_name(t[k].verdict),
					      t[k].detail);
		ctq_rep_row_end(r);
	}
	ctq_rep_table_end(r);

	static const char *const pcols[] = {"M", "ctq_w8a8 us", "ctq_gemm us", "ctq_gemm TOPS", "% INT8 peak",
					    "% HBM (int8 weights)", "cv", "cublas_bf16 us", "speedup vs BF16",
					    "cublaslt_i8 us", "ctq_quantize us", "quantize % HBM", NULL};
	for (size_t s = 0; s < ns; s++) {
		const struct ctq_gemm_row *any = NULL;
		for (size_t i = 0; i < n && !any; i++)
			if (!strcmp(rows[i].shape, shapes[s]))
				any = &rows[i];
		snprintf(line, sizeof line, "%s: K=%lld, N=%lld", shapes[s], (long long)any->K, (long long)any->N);
		ctq_rep_heading(r, 4, line);
		ctq_rep_table_head(r, pcols);
		/* Points in M order; the five rows of a point share shape and M. */
		int64_t last = 0;
		for (;;) {
			int64_t next = INT64_MAX;
			for (size_t i = 0; i < n; i++)
				if (!strcmp(rows[i].shape, shapes[s]) && rows[i].M > last && rows[i].M < next)
					next = rows[i].M;
			if (next == INT64_MAX)
				break;
			last = next;
			const struct ctq_gemm_row *p[CTQ_GEMM_IMPL_COUNT] = {0};
			for (size_t i = 0; i < n; i++)
				if (!strcmp(rows[i].shape, shapes[s]) && rows[i].M == next)
					p[rows[i].impl] = &rows[i];
			char v[12][48];
#define G(i, field) (p[i] ? p[i]->field : NAN)
			snprintf(v[0], sizeof v[0], "%lld", (long long)next);
			ctq_rep_fmt_g(v[1], sizeof v[1], G(CTQ_GEMM_W8A8, time_us_median));
			ctq_rep_fmt_g(v[2], sizeof v[2], G(CTQ_GEMM_GEMM, time_us_median));
			ctq_rep_fmt_g(v[3], sizeof v[3], G(CTQ_GEMM_GEMM, tops));
			ctq_rep_fmt_g(v[4], sizeof v[4], G(CTQ_GEMM_GEMM, pct_int8_peak));
			ctq_rep_fmt_g(v[5], sizeof v[5], G(CTQ_GEMM_GEMM, pct_hbm_weights));
			ctq_rep_fmt_g(v[6], sizeof v[6], G(CTQ_GEMM_GEMM, time_cv));
			ctq_rep_fmt_g(v[7], sizeof v[7], G(CTQ_GEMM_BF16, time_us_median));
			ctq_rep_fmt_g(v[8], sizeof v[8], G(CTQ_GEMM_GEMM, speedup_vs_bf16));
			ctq_rep_fmt_g(v[9], sizeof v[9], G(CTQ_GEMM_I8, time_us_median));
			ctq_rep_fmt_g(v[10], sizeof v[10], G(CTQ_GEMM_QUANTIZE, time_us_median));
			ctq_rep_fmt_g(v[11], sizeof v[11], G(CTQ_GEMM_QUANTIZE, pct_hbm));
#undef G
			bool bad = p[CTQ_GEMM_GEMM] && !strcmp(p[CTQ_GEMM_GEMM]->check, "fail");
			ctq_rep_row_begin(r);
			for (int c = 0; c < 12; c++)
				ctq_rep_cell(r, c == 2 && bad ? "FAIL" : v[c], c == 2 && bad ? "bad" : "num");
			ctq_rep_row_end(r);
		}
		ctq_rep_table_end(r);
		if (i8_note(rows, n, shapes[s], line, sizeof line))
			ctq_rep_para(r, line);
		struct ctq_strbuf body, data;
		ctq_strbuf_init(&body);
		ctq_strbuf_init(&data);
		char name[300], base[200];
		ctq_gemm_plot_name(base, sizeof base, shapes[s]);
		ctq_rep_plot_name(name, sizeof name, base, f->dir);
		snprintf(line, sizeof line, "%s (K=%lld, N=%lld): TOPS against M (dashed: INT8 peak)", shapes[s],
			 (long long)any->K, (long long)any->N);
		if (ctq_gemm_plot(rows, n, shapes[s], name, ctq_rep_jnum(pk, "int8_dense_tops"), &body, &data) &&
		    !body.oom && !data.oom)
			ctq_rep_plot(r, name, 900, 520, line, body.data, data.data);
		ctq_strbuf_free(&body);
		ctq_strbuf_free(&data);
	}
	free(shapes);
	free(cols);
	free(t);
	free(rows);
	cJSON_Delete(m);
	return CTQ_OK;
}
