/* The bench gemm family (see bench_gemm.h). */
#include "families/bench_gemm.h"
#include "core/arena.h"
#include "families/verdict.h"
#include "core/fileio.h"
#include "backend/paths.h"
#include "core/json.h"
#include "results/table.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- implementation names -------------------------------------------------- */

static const char *const impl_names[CTQ_GEMM_IMPL_COUNT] = {
	"ctq_w8a8", "ctq_gemm", "ctq_quantize", "cublas_bf16", "cublaslt_i8",
};

const char *ctq_gemm_impl_name(enum ctq_gemm_impl i)
{
	return (unsigned)i < CTQ_GEMM_IMPL_COUNT ? impl_names[i] : "unknown";
}

bool ctq_gemm_impl_parse(const char *s, enum ctq_gemm_impl *out)
{
	enum ctq_gemm_path p;
	if (!strncmp(s, "ctq_gemm@", 9) && ctq_gemm_path_parse(s + 9, &p)) {
		*out = CTQ_GEMM_GEMM;
		return true;
	}
	for (int i = 0; i < CTQ_GEMM_IMPL_COUNT; i++)
		if (!strcmp(s, impl_names[i])) {
			*out = (enum ctq_gemm_impl)i;
			return true;
		}
	return false;
}

bool ctq_gemm_impl_is_ctq(enum ctq_gemm_impl i)
{
	return i == CTQ_GEMM_W8A8 || i == CTQ_GEMM_GEMM || i == CTQ_GEMM_QUANTIZE;
}

const char *const ctq_gemm_csv_header[] = {CTQ_BENCH_GEMM_CSV_COLUMNS};
const size_t ctq_gemm_csv_cols = sizeof ctq_gemm_csv_header / sizeof *ctq_gemm_csv_header;

/* Numbers with 9 significant digits (a float's round trip; timings come
 * from float event milliseconds); NaN is an empty cell. */
static void num(struct ctq_csv *w, double v)
{
	if (isnan(v) || isinf(v))
		ctq_csv_field(w, "");
	else
		ctq_csv_fieldf(w, "%.9g", v);
}

void ctq_fam_bench_gemm_samples_csv_row(struct ctq_csv *w, const struct ctq_gemm_row *r, int k,
					double time_us)
{
	ctq_csv_field(w, r->shape);
	ctq_csv_fieldf(w, "%lld", (long long)r->K);
	ctq_csv_fieldf(w, "%lld", (long long)r->N);
	ctq_csv_fieldf(w, "%lld", (long long)r->M);
	/* the row's own label, as in bench_gemm.csv: a forced path
	 * (ctq_gemm@PATH) or a plug-in keeps its samples apart from the
	 * dispatched ctq_gemm's, which compare pairs by this key */
	ctq_csv_field(w, r->impl_label[0] ? r->impl_label : ctq_gemm_impl_name(r->impl));
	ctq_csv_fieldf(w, "%d", k);
	ctq_csv_fieldf(w, "%.9g", time_us);
	ctq_csv_end_row(w);
}

void ctq_gemm_csv_row(struct ctq_csv *w, const struct ctq_gemm_row *r)
{
	ctq_csv_field(w, r->shape);
	ctq_csv_fieldf(w, "%lld", (long long)r->K);
	ctq_csv_fieldf(w, "%lld", (long long)r->N);
	ctq_csv_fieldf(w, "%lld", (long long)r->M);
	ctq_csv_field(w, r->impl_label[0] ? r->impl_label : ctq_gemm_impl_name(r->impl));
	ctq_csv_field(w, r->check);
	ctq_csv_fieldf(w, "%d", r->samples);
	ctq_csv_fieldf(w, "%d", r->copies);
	ctq_csv_fieldf(w, "%d", r->calls);
	num(w, r->time_us_median);
	num(w, r->time_us_min);
	num(w, r->time_cv);
	num(w, r->ops);
	num(w, r->tops);
	num(w, r->peak_tops);
	num(w, r->pct_int8_peak);
	num(w, r->bytes);
	num(w, r->gbps);
	num(w, r->hbm_gbps);
	num(w, r->pct_hbm);
	num(w, r->weight_bytes);
	num(w, r->pct_hbm_weights);
	num(w, r->speedup_vs_bf16);
	ctq_csv_field(w, r->note);
	ctq_csv_field(w, r->kernel_path);
	ctq_csv_end_row(w);
}

enum ctq_status ctq_gemm_rows_load(const char *path, struct ctq_gemm_row **rows, size_t *n,
				   struct ctq_error *err)
{
	*rows = NULL;
	*n = 0;
	struct ctq_table t;
	enum ctq_status st = ctq_table_load(&t, path, err);
	if (st)
		return st;
	int c[sizeof ctq_gemm_csv_header / sizeof *ctq_gemm_csv_header];
	for (size_t i = 0; i < ctq_gemm_csv_cols; i++)
		if ((c[i] = ctq_table_col(&t, ctq_gemm_csv_header[i])) < 0 && i < CTQ_BENCH_GEMM_CSV_REQUIRED) {
			ctq_table_free(&t);
			return ctq_error_set(err, CTQ_ERR_PARSE, path, "has no column %s (ctq bench gemm writes %zu)",
					     ctq_gemm_csv_header[i], ctq_gemm_csv_cols);
		}
	struct ctq_gemm_row *v = ctq_calloc(t.n_rows ? t.n_rows : 1, sizeof *v);
	if (!v) {
		ctq_table_free(&t);
		return ctq_error_set(err, CTQ_ERR_NOMEM, path, "out of memory");
	}
	for (size_t i = 0; i < t.n_rows && !st; i++) {
		struct ctq_gemm_row *r = &v[i];
		double d[sizeof ctq_gemm_csv_header / sizeof *ctq_gemm_csv_header];
		for (size_t k = 0; k < ctq_gemm_csv_cols; k++)
			d[k] = c[k] >= 0 ? ctq_table_num(&t, i, c[k]) : NAN;
		snprintf(r->shape, sizeof r->shape, "%s", ctq_table_get(&t, i, c[0]));
		snprintf(r->check, sizeof r->check, "%s", ctq_table_get(&t, i, c[5]));
		snprintf(r->note, sizeof r->note, "%s", ctq_table_get(&t, i, c[23]));
		const char *impl = ctq_table_get(&t, i, c[4]);
		if (c[24] >= 0)
			snprintf(r->kernel_path, sizeof r->kernel_path, "%s", ctq_table_get(&t, i, c[24]));
		if (!strncmp(impl, "ctq_gemm@", 9)) {
			r->forced = true;
			snprintf(r->impl_label, sizeof r->impl_label, "%s", impl);
		}
		if (!ctq_gemm_impl_parse(impl, &r->impl)) {
			st = ctq_error_set(err, CTQ_ERR_PARSE, path, "row %zu: impl \"%s\" is none of ctq bench gemm's",
					   i + 2, ctq_table_get(&t, i, c[4]));
			break;
		}
		for (int k = 1; k <= 3; k++)
			if (!(d[k] >= 1 && d[k] <= 9e15))
				st = ctq_error_set(err, CTQ_ERR_PARSE, path, "row %zu: %s is \"%s\"; expected a positive integer",
						   i + 2, ctq_gemm_csv_header[k], ctq_table_get(&t, i, c[k]));
		/* Counts: empty (NaN) is 0; anything else must be a count an int
		 * holds (a cast of NaN or 1e300 is undefined; found by fuzz_csv). */
		for (int k = 6; k <= 8; k++)
			if (!isnan(d[k]) && !(d[k] >= 0 && d[k] <= 2e9))
				st = ctq_error_set(err, CTQ_ERR_PARSE, path, "row %zu: %s is \"%s\"; expected a count from 0 to 2e9",
						   i + 2, ctq_gemm_csv_header[k], ctq_table_get(&t, i, c[k]));
		if (st)
			break;
		r->K = (int64_t)d[1], r->N = (int64_t)d[2], r->M = (int64_t)d[3];
		r->samples = isnan(d[6]) ? 0 : (int)d[6];
		r->copies = isnan(d[7]) ? 0 : (int)d[7];
		r->calls = isnan(d[8]) ? 0 : (int)d[8];
		r->time_us_median = d[9], r->time_us_min = d[10], r->time_cv = d[11];
		r->ops = d[12], r->tops = d[13], r->peak_tops = d[14], r->pct_int8_peak = d[15];
		r->bytes = d[16], r->gbps = d[17], r->hbm_gbps = d[18], r->pct_hbm = d[19];
		r->weight_bytes = d[20], r->pct_hbm_weights = d[21], r->speedup_vs_bf16 = d[22];
	}
	const size_t n_rows = t.n_rows;
	ctq_table_free(&t);
	if (st) {
		free(v);
		return st;
	}
	*rows = v;
	*n = n_rows;
	return CTQ_OK;
}

/* ---- plot --------------------------------------------------------------------------- */

void ctq_gemm_plot_name(char *buf, size_t cap, const char *shape)
{
	snprintf(buf, cap, "gemm_%s", shape);
	for (char *c = buf; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
		      *c == '-' || *c == '_'))
			*c = '_';
}

bool ctq_gemm_row_first_of_shape(const struct ctq_gemm_row *rows, size_t i)
{
	for (size_t j = 0; j < i; j++)
		if (!strcmp(rows[j].shape, rows[i].shape))
			return false;
	return true;
}

size_t ctq_gemm_shapes(const struct ctq_gemm_row *rows, size_t n, const char **shapes)
{
	size_t ns = 0;
	for (size_t i = 0; i < n; i++)
		if (ctq_gemm_row_first_of_shape(rows, i))
			shapes[ns++] = rows[i].shape;
	return ns;
}

/* Indices of shape's rows of impl with a TOPS value, sorted by M: the
 * dispatched rows (path NULL), or those of one forced kernel path. */
static size_t series_of(const struct ctq_gemm_row *rows, size_t n, const char *shape,
			enum ctq_gemm_impl impl, const char *path, bool need_tops, size_t *idx)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (rows[i].impl == impl && rows[i].forced == (path != NULL) &&
		    (!path || !strcmp(rows[i].kernel_path, path)) && !strcmp(rows[i].shape, shape) &&
		    !isnan(need_tops ? rows[i].tops : rows[i].time_us_median))
			idx[k++] = i;
	for (size_t a = 1; a < k; a++)
		for (size_t b = a; b > 0 && rows[idx[b - 1]].M > rows[idx[b]].M; b--) {
			size_t t = idx[b];
			idx[b] = idx[b - 1];
			idx[b - 1] = t;
		}
	return k;
}

static size_t series(const struct ctq_gemm_row *rows, size_t n, const char *shape,
		     enum ctq_gemm_impl impl, bool need_tops, size_t *idx)
{
	return series_of(rows, n, shape, impl, NULL, need_tops, idx);
}

size_t ctq_gemm_plot(const struct ctq_gemm_row *rows, size_t n, const char *shape,
		     const char *name, double peak_tops, struct ctq_strbuf *body,
		     struct ctq_strbuf *data)
{
	static const enum ctq_gemm_impl lines[] = {CTQ_GEMM_GEMM, CTQ_GEMM_W8A8, CTQ_GEMM_BF16, CTQ_GEMM_I8};
	size_t *idx = ctq_malloc((n ? n : 1) * sizeof *idx);
	if (!idx)
		return 0;
	int64_t K = 0, N = 0;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(rows[i].shape, shape))
			K = rows[i].K, N = rows[i].N;
	ctq_strbuf_printf(body, "set title \"%s (K=%lld, N=%lld): TOPS against M\"\n"
				"set logscale x 2\nset grid\nset key top left font \",9\"\n"
				"set xlabel \"M (tokens)\"\nset ylabel \"TOPS (2MNK / median time)\"\n"
				"set yrange [0:*]\nset offsets 0, 0, graph 0.06, 0\nplot ",
			  shape, (long long)K, (long long)N);
	size_t drawn = 0;
	for (size_t l = 0; l < sizeof lines / sizeof *lines; l++) {
		size_t k = series(rows, n, shape, lines[l], true, idx);
		if (!k)
			continue;
		ctq_strbuf_printf(data, "# %s %s\n# M tops\n", shape, ctq_gemm_impl_name(lines[l]));
		for (size_t a = 0; a < k; a++)
			ctq_strbuf_printf(data, "%lld %.9g\n", (long long)rows[idx[a]].M, rows[idx[a]].tops);
		ctq_strbuf_append(data, "\n\n");
		ctq_strbuf_printf(body, "%s\"%s.dat\" index %zu using 1:2 with linespoints pt 7 title \"%s\"",
				  drawn ? ", " : "", name, drawn, ctq_gemm_impl_name(lines[l]));
		drawn++;
	}
	/* the kernel paths forced (--paths), dashed */
	for (int p = 0; p < CTQ_GEMM_PATH_COUNT; p++) {
		const char *pn = ctq_gemm_path_name((enum ctq_gemm_path)p);
		size_t k = series_of(rows, n, shape, CTQ_GEMM_GEMM, pn, true, idx);
		if (!k)
			continue;
		ctq_strbuf_printf(data, "# %s ctq_gemm@%s\n# M tops\n", shape, pn);
		for (size_t a = 0; a < k; a++)
			ctq_strbuf_printf(data, "%lld %.9g\n", (long long)rows[idx[a]].M, rows[idx[a]].tops);
		ctq_strbuf_append(data, "\n\n");
		ctq_strbuf_printf(body, "%s\"%s.dat\" index %zu using 1:2 with linespoints dt 3 pt 6 title \"ctq_gemm@%s\"",
				  drawn ? ", " : "", name, drawn, pn);
		drawn++;
	}
	if (drawn && !isnan(peak_tops))
		ctq_strbuf_printf(body, ", %.9g with lines dt 2 lc rgb \"#888888\" title \"INT8 dense peak %.0f TOPS\"",
				  peak_tops, peak_tops);
	ctq_strbuf_append(body, "\n");
	free(idx);
	return drawn;
}

/* ---- targets -------------------------------------------------------------------------- */

const char *ctq_gemm_verdict_name(enum ctq_gemm_verdict v)
{
	return v == CTQ_GEMM_PASS ? "pass" : v == CTQ_GEMM_MISS ? "miss" : "not measured";
}

const char *ctq_gemm_target_text(enum ctq_gemm_target_id id)
{
	switch (id) {
	case CTQ_GEMM_TGT_SPEEDUP: return "M >= 1024: ctq_gemm >= 1.7x cuBLAS BF16";
	case CTQ_GEMM_TGT_PEAK: return "M >= 1024: ctq_gemm >= 65% of INT8 dense peak";
	case CTQ_GEMM_TGT_WEIGHTS: return "M <= 16: ctq_gemm reads its int8 weights at >= 60% of HBM bandwidth";
	case CTQ_GEMM_TGT_JUMP: return "no M where ctq_gemm or ctq_w8a8 time is > 10% above its neighbours' trend";
	case CTQ_GEMM_TGT_QUANT_BW: return "M = 8192: ctq_quantize >= 75% of HBM bandwidth";
	case CTQ_GEMM_TGT_QUANT_LAT: return "M <= 128: ctq_quantize < 3 us";
	default: return "?";
	}
}

/* A threshold target over the rows of one shape and impl within [m_lo,
 * m_hi]: the worst value decides (higher is better unless lower_better). */
static void threshold(struct ctq_gemm_target *t, const struct ctq_gemm_row *rows, size_t n,
		      enum ctq_gemm_impl impl, int64_t m_lo, int64_t m_hi, size_t field_off,
		      double limit, bool lower_better, const char *unit, size_t *idx)
{
	size_t k = series(rows, n, t->shape, impl, false, idx), used = 0;
	double worst = NAN;
	int64_t worst_m = 0;
	bool any_m = false;
	for (size_t a = 0; a < k; a++) {
		const struct ctq_gemm_row *r = &rows[idx[a]];
		if (r->M < m_lo || r->M > m_hi)
			continue;
		any_m = true;
		double v = *(const double *)((const char *)r + field_off);
		if (isnan(v))
			continue;
		used++;
		if (isnan(worst) || (lower_better ? v > worst : v < worst))
			worst = v, worst_m = r->M;
	}
	if (!used) {
		t->verdict = CTQ_GEMM_UNMEASURED;
		snprintf(t->detail, sizeof t->detail, "%s", !any_m ? "no such M measured"
							 : "no value (unknown peak, failed check or no baseline)");
		return;
	}
	bool ok = lower_better ? worst < limit : worst >= limit;
	t->verdict = ok ? CTQ_GEMM_PASS : CTQ_GEMM_MISS;
	if (used > 1)
		snprintf(t->detail, sizeof t->detail, "worst %.4g%s at M=%lld over %zu points", worst, unit,
			 (long long)worst_m, used);
	else
		snprintf(t->detail, sizeof t->detail, "%.4g%s at M=%lld", worst, unit, (long long)worst_m);
}

/* Time over the log-log line through the neighbours, worst over both ctq
 * GEMM paths. */
static void jump(struct ctq_gemm_target *t, const struct ctq_gemm_row *rows, size_t n, size_t *idx)
{
	static const enum ctq_gemm_impl impls[] = {CTQ_GEMM_GEMM, CTQ_GEMM_W8A8};
	double worst = NAN;
	int64_t wm = 0, wlo = 0, whi = 0;
	const char *wimpl = "";
	size_t checked = 0;
	for (size_t s = 0; s < 2; s++) {
		size_t k = series(rows, n, t->shape, impls[s], false, idx);
		for (size_t a = 1; a + 1 < k; a++) {
			const struct ctq_gemm_row *p = &rows[idx[a - 1]], *c = &rows[idx[a]], *q = &rows[idx[a + 1]];
			if (p->M == c->M || c->M == q->M || !(p->time_us_median > 0) || !(q->time_us_median > 0))
				continue;
			double f = (log((double)c->M) - log((double)p->M)) / (log((double)q->M) - log((double)p->M));
			double trend = exp(log(p->time_us_median) + f * (log(q->time_us_median) - log(p->time_us_median)));
			double ratio = c->time_us_median / trend;
			checked++;
			if (isnan(worst) || ratio > worst)
				worst = ratio, wm = c->M, wlo = p->M, whi = q->M, wimpl = ctq_gemm_impl_name(impls[s]);
		}
	}
	if (!checked) {
		t->verdict = CTQ_GEMM_UNMEASURED;
		snprintf(t->detail, sizeof t->detail, "fewer than 3 values of M");
		return;
	}
	t->verdict = worst <= CTQ_GEMM_T_JUMP ? CTQ_GEMM_PASS : CTQ_GEMM_MISS;
	snprintf(t->detail, sizeof t->detail, "worst %s M=%lld: %.3fx the trend of M=%lld and M=%lld (%zu points)",
		 wimpl, (long long)wm, worst, (long long)wlo, (long long)whi, checked);
}

enum ctq_status ctq_gemm_targets(const struct ctq_gemm_row *rows, size_t n,
				 struct ctq_gemm_target **out, size_t *n_out, struct ctq_error *err)
{
	*out = NULL;
	*n_out = 0;
	const char **shapes = ctq_calloc(n ? n : 1, sizeof *shapes);
	size_t *idx = ctq_calloc(n ? n : 1, sizeof *idx);
	if (!shapes || !idx) {
		free(shapes);
		free(idx);
		return ctq_error_set(err, CTQ_ERR_NOMEM, "bench gemm", "out of memory");
	}
	const size_t ns = ctq_gemm_shapes(rows, n, shapes);
	struct ctq_gemm_target *t = ctq_calloc(ns * CTQ_GEMM_TGT_COUNT + 1, sizeof *t);
	if (!t) {
		free(shapes);
		free(idx);
		return ctq_error_set(err, CTQ_ERR_NOMEM, "bench gemm", "out of memory");
	}
	size_t k = 0;
	for (int id = 0; id < CTQ_GEMM_TGT_COUNT; id++)
		for (size_t s = 0; s < ns; s++) {
			struct ctq_gemm_target *x = &t[k++];
			x->id = (enum ctq_gemm_target_id)id;
			snprintf(x->shape, sizeof x->shape, "%s", shapes[s]);
			switch (x->id) {
			case CTQ_GEMM_TGT_SPEEDUP:
				threshold(x, rows, n, CTQ_GEMM_GEMM, 1024, INT64_MAX,
					  offsetof(struct ctq_gemm_row, speedup_vs_bf16), CTQ_GEMM_T_SPEEDUP, false,
					  "x", idx);
				break;
			case CTQ_GEMM_TGT_PEAK:
				threshold(x, rows, n, CTQ_GEMM_GEMM, 1024, INT64_MAX,
					  offsetof(struct ctq_gemm_row, pct_int8_peak), CTQ_GEMM_T_PEAK_PCT, false,
					  "%", idx);
				break;
			case CTQ_GEMM_TGT_WEIGHTS:
				threshold(x, rows, n, CTQ_GEMM_GEMM, 1, 16,
					  offsetof(struct ctq_gemm_row, pct_hbm_weights), CTQ_GEMM_T_WEIGHTS_PCT,
					  false, "%", idx);
				break;
			case CTQ_GEMM_TGT_JUMP: jump(x, rows, n, idx); break;
			case CTQ_GEMM_TGT_QUANT_BW:
				threshold(x, rows, n, CTQ_GEMM_QUANTIZE, 8192, 8192,
					  offsetof(struct ctq_gemm_row, pct_hbm), CTQ_GEMM_T_QUANT_PCT, false, "%",
					  idx);
				break;
			case CTQ_GEMM_TGT_QUANT_LAT:
				threshold(x, rows, n, CTQ_GEMM_QUANTIZE, 1, 128,
					  offsetof(struct ctq_gemm_row, time_us_median), CTQ_GEMM_T_QUANT_US, true,
					  " us", idx);
				break;
			default: break;
			}
		}
	free(shapes);
	free(idx);
	*out = t;
	*n_out = k;
	return CTQ_OK;
}

enum ctq_gemm_verdict ctq_gemm_target_overall(const struct ctq_gemm_target *t, size_t n,
					      enum ctq_gemm_target_id id, const char **worst_detail,
					      const char **worst_shape)
{
	enum ctq_gemm_verdict v = CTQ_GEMM_UNMEASURED;
	*worst_detail = *worst_shape = NULL;
	for (size_t i = 0; i < n; i++) {
		if (t[i].id != id || t[i].verdict == CTQ_GEMM_UNMEASURED)
			continue;
		if (t[i].verdict == CTQ_GEMM_MISS && v != CTQ_GEMM_MISS) {
			v = CTQ_GEMM_MISS;
			*worst_detail = t[i].detail, *worst_shape = t[i].shape;
		} else if (v == CTQ_GEMM_UNMEASURED) {
			v = CTQ_GEMM_PASS;
			*worst_detail = t[i].detail, *worst_shape = t[i].shape;
		}
	}
	return v;
}

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
	struct ctq_cmp_row *r = ctq_cmp_summary_row(x, CTQ_FAM_BENCH_GEMM, "(all points)",
						    "points regressed", 0, (double)(slower + failed),
						    slower + failed, faster, err);
	if (!r) {
		st = CTQ_ERR_NOMEM;
		goto done;
	}
	snprintf(r->detail, sizeof r->detail,
		 "%zu points paired: %zu slower, %zu faster, %zu same, %zu ambiguous; %zu failed "
		 "checks; %zu new, %zu gone", paired, slower, faster, same, ambiguous, failed, added,
		 removed);
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

/* How the run was timed (from its manifest) and the first point whose ctq
 * output differs from the reference, counted into r->gemm_failed. */
static void gemm_report_intro(struct ctq_rep *r, const struct ctq_result_file *f, const cJSON *g,
			      const struct ctq_gemm_row *rows, size_t n)
{
	char line[1200];
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
					 rows[i].shape, (long long)rows[i].M,
					 rows[i].impl_label[0] ? rows[i].impl_label : ctq_gemm_impl_name(rows[i].impl),
					 rows[i].note);
		}
	if (failed) {
		r->gemm_failed += failed;
		ctq_rep_para(r, line);
	}
}

/* Targets: one row per target, one column per shape (cols: room for ns + 3). */
static void gemm_targets_table(struct ctq_rep *r, const struct ctq_gemm_target *t, size_t nt,
			       const char **shapes, size_t ns, const char **cols)
{
	static const char *const cls[] = {"passed", "failed", "skipped"};
	cols[0] = "target";
	cols[1] = "all shapes";
	for (size_t s = 0; s < ns; s++)
		cols[s + 2] = shapes[s];
	ctq_rep_table_head(r, cols);
	for (int id = 0; id < CTQ_GEMM_TGT_COUNT; id++) {
		const char *wd, *wsh;
		enum ctq_gemm_verdict v = ctq_gemm_target_overall(t, nt, (enum ctq_gemm_target_id)id, &wd, &wsh);
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
}

/* The smallest M of shape's rows above last; INT64_MAX when none is. */
static int64_t next_m(const struct ctq_gemm_row *rows, size_t n, const char *shape, int64_t last)
{
	int64_t next = INT64_MAX;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(rows[i].shape, shape) && rows[i].M > last && rows[i].M < next)
			next = rows[i].M;
	return next;
}

/* One shape's table: a row per M, the columns of every implementation. */
static void gemm_shape_table(struct ctq_rep *r, const struct ctq_gemm_row *rows, size_t n,
			     const char *shape)
{
	static const char *const pcols[] = {"M", "ctq_w8a8 us", "ctq_gemm us", "ctq_gemm path", "ctq_gemm TOPS", "% INT8 peak",
					    "% HBM (int8 weights)", "cv", "cublas_bf16 us", "speedup vs BF16",
					    "cublaslt_i8 us", "ctq_quantize us", "quantize % HBM", NULL};
	ctq_rep_table_head(r, pcols);
	/* Points in M order; the five rows of a point share shape and M. */
	for (int64_t next = next_m(rows, n, shape, 0); next != INT64_MAX;
	     next = next_m(rows, n, shape, next)) {
		const struct ctq_gemm_row *p[CTQ_GEMM_IMPL_COUNT] = {0};
		for (size_t i = 0; i < n; i++)
			if (!strcmp(rows[i].shape, shape) && rows[i].M == next && !rows[i].forced)
				p[rows[i].impl] = &rows[i];
		char v[13][48];
#define G(i, field) (p[i] ? p[i]->field : NAN)
		snprintf(v[0], sizeof v[0], "%lld", (long long)next);
		ctq_rep_fmt_g(v[1], sizeof v[1], G(CTQ_GEMM_W8A8, time_us_median));
		ctq_rep_fmt_g(v[2], sizeof v[2], G(CTQ_GEMM_GEMM, time_us_median));
		snprintf(v[3], sizeof v[3], "%s",
			 p[CTQ_GEMM_GEMM] && p[CTQ_GEMM_GEMM]->kernel_path[0] ? p[CTQ_GEMM_GEMM]->kernel_path : "-");
		ctq_rep_fmt_g(v[4], sizeof v[4], G(CTQ_GEMM_GEMM, tops));
		ctq_rep_fmt_g(v[5], sizeof v[5], G(CTQ_GEMM_GEMM, pct_int8_peak));
		ctq_rep_fmt_g(v[6], sizeof v[6], G(CTQ_GEMM_GEMM, pct_hbm_weights));
		ctq_rep_fmt_g(v[7], sizeof v[7], G(CTQ_GEMM_GEMM, time_cv));
		ctq_rep_fmt_g(v[8], sizeof v[8], G(CTQ_GEMM_BF16, time_us_median));
		ctq_rep_fmt_g(v[9], sizeof v[9], G(CTQ_GEMM_GEMM, speedup_vs_bf16));
		ctq_rep_fmt_g(v[10], sizeof v[10], G(CTQ_GEMM_I8, time_us_median));
		ctq_rep_fmt_g(v[11], sizeof v[11], G(CTQ_GEMM_QUANTIZE, time_us_median));
		ctq_rep_fmt_g(v[12], sizeof v[12], G(CTQ_GEMM_QUANTIZE, pct_hbm));
#undef G
		bool bad = p[CTQ_GEMM_GEMM] && !strcmp(p[CTQ_GEMM_GEMM]->check, "fail");
		ctq_rep_row_begin(r);
		for (int c = 0; c < 13; c++)
			ctq_rep_cell(r, c == 2 && bad ? "FAIL" : v[c], c == 2 && bad ? "bad" : c == 3 ? NULL : "num");
		ctq_rep_row_end(r);
	}
	ctq_rep_table_end(r);
}

/* The kernel paths forced at a shape (ctq bench gemm --paths), side by
 * side: per M the time of ctq_gemm on each path and its ratio to
 * cuBLASLt int8 (which has no epilogue) at the same point; nothing when
 * the run forced none. */
static void gemm_paths_table(struct ctq_rep *r, const struct ctq_gemm_row *rows, size_t n,
			     const char *shape)
{
	bool used[CTQ_GEMM_PATH_COUNT] = {false};
	size_t n_used = 0;
	for (size_t i = 0; i < n; i++) {
		enum ctq_gemm_path p;
		if (rows[i].forced && !strcmp(rows[i].shape, shape) &&
		    ctq_gemm_path_parse(rows[i].kernel_path, &p) && !used[p]) {
			used[p] = true;
			n_used++;
		}
	}
	if (!n_used)
		return;
	const char *cols[2 + 2 * CTQ_GEMM_PATH_COUNT + 2];
	char names[2 * CTQ_GEMM_PATH_COUNT][48];
	size_t nc = 0;
	cols[nc++] = "M";
	for (int p = 0; p < CTQ_GEMM_PATH_COUNT; p++)
		if (used[p]) {
			snprintf(names[2 * p], sizeof names[0], "%s us", ctq_gemm_path_name((enum ctq_gemm_path)p));
			snprintf(names[2 * p + 1], sizeof names[0], "%s / cublaslt_i8",
				 ctq_gemm_path_name((enum ctq_gemm_path)p));
			cols[nc++] = names[2 * p];
			cols[nc++] = names[2 * p + 1];
		}
	cols[nc++] = "cublaslt_i8 us";
	cols[nc++] = "dispatch picks";
	cols[nc] = NULL;
	ctq_rep_para(r, "ctq_gemm on each kernel path forced (--paths), beside cuBLASLt int8 "
			"(int32 out, no epilogue) at the same point; each checked bit-exact before timing.");
	ctq_rep_table_head(r, cols);
	for (int64_t next = next_m(rows, n, shape, 0); next != INT64_MAX;
	     next = next_m(rows, n, shape, next)) {
		const struct ctq_gemm_row *fp[CTQ_GEMM_PATH_COUNT] = {0}, *i8 = NULL, *disp = NULL;
		for (size_t i = 0; i < n; i++) {
			const struct ctq_gemm_row *x = &rows[i];
			enum ctq_gemm_path p;
			if (strcmp(x->shape, shape) || x->M != next)
				continue;
			if (x->forced && ctq_gemm_path_parse(x->kernel_path, &p))
				fp[p] = x;
			else if (x->impl == CTQ_GEMM_I8)
				i8 = x;
			else if (x->impl == CTQ_GEMM_GEMM && !x->forced)
				disp = x;
		}
		const double ti8 = i8 ? i8->time_us_median : NAN;
		char buf[48];
		ctq_rep_row_begin(r);
		ctq_rep_cellf(r, "num", "%lld", (long long)next);
		for (int p = 0; p < CTQ_GEMM_PATH_COUNT; p++) {
			if (!used[p])
				continue;
			const bool bad = fp[p] && !strcmp(fp[p]->check, "fail");
			ctq_rep_fmt_g(buf, sizeof buf, fp[p] ? fp[p]->time_us_median : NAN);
			ctq_rep_cell(r, bad ? "FAIL" : buf, bad ? "bad" : "num");
			ctq_rep_fmt_g(buf, sizeof buf, fp[p] ? fp[p]->time_us_median / ti8 : NAN);
			ctq_rep_cell(r, buf, "num");
		}
		ctq_rep_fmt_g(buf, sizeof buf, ti8);
		ctq_rep_cell(r, buf, "num");
		ctq_rep_cell(r, disp && disp->kernel_path[0] ? disp->kernel_path : "-", NULL);
		ctq_rep_row_end(r);
	}
	ctq_rep_table_end(r);
}

/* One shape's heading, table, cuBLASLt note and TOPS plot; any is a row of
 * the shape, peak_tops the INT8 peak (NaN: unknown). */
static void gemm_shape_section(struct ctq_rep *r, const struct ctq_result_file *f,
			       const struct ctq_gemm_row *rows, size_t n, const struct ctq_gemm_row *any,
			       double peak_tops)
{
	char line[1200];
	snprintf(line, sizeof line, "%s: K=%lld, N=%lld", any->shape, (long long)any->K, (long long)any->N);
	ctq_rep_heading(r, 4, line);
	gemm_shape_table(r, rows, n, any->shape);
	if (i8_note(rows, n, any->shape, line, sizeof line))
		ctq_rep_para(r, line);
	gemm_paths_table(r, rows, n, any->shape);
	struct ctq_strbuf body, data;
	ctq_strbuf_init(&body);
	ctq_strbuf_init(&data);
	char name[300], base[200];
	ctq_gemm_plot_name(base, sizeof base, any->shape);
	ctq_rep_plot_name(name, sizeof name, base, f->dir);
	snprintf(line, sizeof line, "%s (K=%lld, N=%lld): TOPS against M (dashed: INT8 peak)", any->shape,
		 (long long)any->K, (long long)any->N);
	if (ctq_gemm_plot(rows, n, any->shape, name, peak_tops, &body, &data) && !body.oom && !data.oom)
		ctq_rep_plot(r, name, 900, 520, line, body.data, data.data);
	ctq_strbuf_free(&body);
	ctq_strbuf_free(&data);
}

/* bench_gemm.csv (written by ctq bench gemm): how it was timed,
 * the points whose ctq outputs differ from the reference (a failure), the
 * targets per shape as pass / miss, a table and a TOPS-against-M plot per
 * shape. */
enum ctq_status ctq_fam_bench_gemm_report(struct ctq_rep *r, const struct ctq_result_file *f)
{
	char path[1200];
	snprintf(path, sizeof path, "%s/%s", r->dir, f->rel);
	struct ctq_gemm_row *rows = NULL;
	size_t n = 0, nt = 0;
	struct ctq_gemm_target *t = NULL;
	const char **shapes = NULL, **cols = NULL;
	cJSON *m = NULL;
	enum ctq_status st = ctq_gemm_rows_load(path, &rows, &n, r->err);
	if (st || (st = ctq_gemm_targets(rows, n, &t, &nt, r->err)))
		goto out;
	m = ctq_rep_step_manifest(r->dir, f->dir);
	const cJSON *g = ctq_json_get(m, "bench_gemm");
	gemm_report_intro(r, f, g, rows, n);
	shapes = ctq_calloc(n + 1, sizeof *shapes);
	const size_t ns = shapes ? ctq_gemm_shapes(rows, n, shapes) : 0;
	cols = ctq_calloc(ns + 3, sizeof *cols);
	if (!shapes || !cols) {
		st = ctq_error_set(r->err, CTQ_ERR_NOMEM, path, "out of memory");
		goto out;
	}
	gemm_targets_table(r, t, nt, shapes, ns, cols);
	const double peak_tops = ctq_rep_jnum(ctq_json_get(g, "peaks"), "int8_dense_tops");
	for (size_t i = 0; i < n; i++)
		if (ctq_gemm_row_first_of_shape(rows, i))
			gemm_shape_section(r, f, rows, n, &rows[i], peak_tops);
out:
	free(shapes);
	free(cols);
	free(t);
	free(rows);
	cJSON_Delete(m);
	return st;
}
