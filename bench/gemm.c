/* ctq GEMM benchmark driver: metrics, the run directory, the reference
 * check (see gemm.h). */
#include "bench/gemm.h"
#include "backend/paths.h"
#include "core/arena.h"
#include "stats/sample.h"
#include "core/dtype.h"
#include "core/numerics.h"
#include "core/fileio.h"
#include "reference/ref_ops.h"
#include "results/plot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- operations, bytes, copies ------------------------------------------------ */

double ctq_gemm_ops(enum ctq_gemm_impl i, int64_t M, int64_t N, int64_t K)
{
	return i == CTQ_GEMM_QUANTIZE ? 0.0 : 2.0 * (double)M * (double)N * (double)K;
}

double ctq_gemm_bytes(enum ctq_gemm_impl i, int64_t M, int64_t N, int64_t K)
{
	const double m = (double)M, n = (double)N, k = (double)K;
	switch (i) {
	case CTQ_GEMM_W8A8: return 2 * m * k + n * k + 8 * n + 2 * m * n;
	case CTQ_GEMM_GEMM: return m * k + 4 * m + n * k + 8 * n + 2 * m * n;
	case CTQ_GEMM_QUANTIZE: return 2 * m * k + m * k + 4 * m;
	case CTQ_GEMM_BF16: return 2 * m * k + 2 * n * k + 2 * m * n;
	case CTQ_GEMM_I8: return m * k + n * k + 4 * m * n;
	default: return NAN;
	}
}

double ctq_gemm_weight_bytes(enum ctq_gemm_impl i, int64_t N, int64_t K)
{
	const double nk = (double)N * (double)K;
	switch (i) {
	case CTQ_GEMM_QUANTIZE: return 0;
	case CTQ_GEMM_BF16: return 2 * nk;
	default: return nk;
	}
}

double ctq_gemm_touched_bytes(enum ctq_gemm_impl i, int64_t M, int64_t N, int64_t K)
{
	double b = ctq_gemm_bytes(i, M, N, K);
	if (i == CTQ_GEMM_W8A8) /* q and s written by the quantization, read by the GEMM */
		b += 2.0 * ((double)M * (double)K + 4.0 * (double)M);
	return b;
}

int ctq_gemm_copies(double touched_bytes, int64_t l2_bytes)
{
	if (!(touched_bytes > 0) || l2_bytes <= 0)
		return 1;
	double c = ceil(CTQ_GEMM_L2_FACTOR * (double)l2_bytes / touched_bytes);
	if (c < 1)
		c = 1;
	return c > CTQ_GEMM_MAX_COPIES ? CTQ_GEMM_MAX_COPIES : (int)c;
}

/* ---- peaks --------------------------------------------------------------------- */

/* Dense (not 2:4 sparse) INT8 tensor-core TOPS and HBM bandwidth, from
 * NVIDIA's H100 / H200 datasheets (SXM parts; H100 PCIe separately). */
static const struct {
	const char *name;
	double int8_tops, hbm_gbps;
} peak_table[] = {
	{"NVIDIA H200", 1979, 4800},
	{"NVIDIA H100 80GB HBM3", 1979, 3350},
	{"NVIDIA H100 PCIe", 1513, 2000},
};

void ctq_gemm_peaks_for(const char *device_name, double tops_override, double gbps_override,
			struct ctq_gemm_peaks *p)
{
	p->int8_tops = p->hbm_gbps = NAN;
	const char *src = NULL;
	for (size_t i = 0; i < sizeof peak_table / sizeof *peak_table; i++)
		if (device_name && !strcmp(device_name, peak_table[i].name)) {
			p->int8_tops = peak_table[i].int8_tops;
			p->hbm_gbps = peak_table[i].hbm_gbps;
			src = "NVIDIA datasheet (dense INT8 tensor TOPS, HBM bandwidth)";
		}
	if (tops_override > 0)
		p->int8_tops = tops_override;
	if (gbps_override > 0)
		p->hbm_gbps = gbps_override;
	if (tops_override > 0 || gbps_override > 0)
		snprintf(p->source, sizeof p->source, "%s%s%s%s",
			 tops_override > 0 ? "--peak-tops" : "",
			 tops_override > 0 && gbps_override > 0 ? " and " : "",
			 gbps_override > 0 ? "--hbm-gbps" : "",
			 src ? "; the rest from the NVIDIA datasheet" : "");
	else if (src)
		snprintf(p->source, sizeof p->source, "%s", src);
	else
		snprintf(p->source, sizeof p->source,
			 "unknown device \"%.100s\": no peaks (give --peak-tops and --hbm-gbps)",
			 device_name ? device_name : "?");
}

/* ---- statistics ------------------------------------------------------------------ */

/* The one sample summary (stats/sample.h); a time's cv is undefined unless
 * its mean is positive. */
void ctq_gemm_stats(const double *v, size_t n, struct ctq_gemm_stats *s)
{
	s->median = s->min = s->mean = s->stddev = s->cv = NAN;
	struct ctq_sample_summary sum;
	if (!n || ctq_sample_summarize(v, n, &sum, NULL))
		return;
	s->median = sum.median;
	s->min = sum.min;
	s->mean = sum.mean;
	s->stddev = sum.stddev;
	s->cv = sum.mean > 0 ? sum.stddev / sum.mean : NAN;
}

/* ---- rows ------------------------------------------------------------------------- */

void ctq_gemm_row_metrics(struct ctq_gemm_row *r, const struct ctq_gemm_peaks *p)
{
	const double t = r->time_us_median * 1e-6; /* seconds; NaN when unmeasured */
	r->ops = ctq_gemm_ops(r->impl, r->M, r->N, r->K);
	r->bytes = ctq_gemm_bytes(r->impl, r->M, r->N, r->K);
	r->weight_bytes = ctq_gemm_weight_bytes(r->impl, r->N, r->K);
	r->peak_tops = p->int8_tops;
	r->hbm_gbps = p->hbm_gbps;
	r->tops = r->ops > 0 ? r->ops / t / 1e12 : NAN;
	r->pct_int8_peak = 100.0 * r->tops / p->int8_tops;
	r->gbps = r->bytes / t / 1e9;
	r->pct_hbm = 100.0 * r->gbps / p->hbm_gbps;
	r->pct_hbm_weights = r->weight_bytes > 0 ? 100.0 * (r->weight_bytes / t / 1e9) / p->hbm_gbps : NAN;
	r->speedup_vs_bf16 = NAN;
}

void ctq_gemm_row_bytes(struct ctq_gemm_row *r, const struct ctq_gemm_peaks *p, double bytes,
			double weight_bytes)
{
	const double t = r->time_us_median * 1e-6;
	r->bytes = bytes;
	r->weight_bytes = weight_bytes;
	r->gbps = r->bytes / t / 1e9;
	r->pct_hbm = 100.0 * r->gbps / p->hbm_gbps;
	r->pct_hbm_weights = r->weight_bytes > 0 ? 100.0 * (r->weight_bytes / t / 1e9) / p->hbm_gbps : NAN;
}

void ctq_gemm_rows_speedup(struct ctq_gemm_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		rows[i].speedup_vs_bf16 = NAN;
		if (rows[i].impl == CTQ_GEMM_QUANTIZE)
			continue;
		for (size_t j = 0; j < n; j++)
			if (rows[j].impl == CTQ_GEMM_BF16 && rows[j].M == rows[i].M &&
			    rows[j].N == rows[i].N && rows[j].K == rows[i].K &&
			    !strcmp(rows[j].shape, rows[i].shape))
				rows[i].speedup_vs_bf16 = rows[j].time_us_median / rows[i].time_us_median;
	}
}

/* ---- the run directory ------------------------------------------------------------------- */

static cJSON *num_or_null(double v)
{
	return isnan(v) || isinf(v) ? cJSON_CreateNull() : cJSON_CreateNumber(v);
}

static const char *const samples_header[] = {CTQ_BENCH_GEMM_SAMPLES_CSV_COLUMNS};

static enum ctq_status write_csvs(const char *dir, const struct ctq_gemm_row *rows, size_t n,
				  const double *samples, size_t stride, struct ctq_error *err)
{
	char path[1200];
	struct ctq_csv w, sw;
	memset(&w, 0, sizeof w);
	memset(&sw, 0, sizeof sw);
	snprintf(path, sizeof path, "%s/bench_gemm.csv", dir);
	enum ctq_status st = ctq_csv_open(&w, path, ctq_gemm_csv_header, ctq_gemm_csv_cols, err);
	if (st)
		return st;
	for (size_t i = 0; i < n; i++)
		ctq_gemm_csv_row(&w, &rows[i]);
	if ((st = ctq_csv_close(&w, err)))
		return st;
	snprintf(path, sizeof path, "%s/%s", dir, CTQ_GEMM_SAMPLES_FILE);
	if ((st = ctq_csv_open(&sw, path, samples_header, sizeof samples_header / sizeof *samples_header, err)))
		return st;
	for (size_t i = 0; i < n; i++)
		for (int k = 0; samples && k < rows[i].samples && (size_t)k < stride; k++)
			ctq_fam_bench_gemm_samples_csv_row(&sw, &rows[i], k, samples[i * stride + (size_t)k]);
	return ctq_csv_close(&sw, err);
}

static void write_manifest(cJSON *m, const struct ctq_gemm_run_info *in, const struct ctq_gemm_row *rows,
			   size_t n, const struct ctq_gemm_target *t, size_t nt)
{
	cJSON_DeleteItemFromObjectCaseSensitive(m, "bench_gemm");
	cJSON *g = cJSON_AddObjectToObject(m, "bench_gemm");
	cJSON_AddStringToObject(g, "device", in->device ? in->device : "unknown");
	cJSON_AddStringToObject(g, "device_name", in->device_name ? in->device_name : "unknown");
	cJSON_AddNumberToObject(g, "device_index", in->device_index);
	cJSON_AddNumberToObject(g, "l2_bytes", (double)in->l2_bytes);
	cJSON *p = cJSON_AddObjectToObject(g, "peaks");
	cJSON_AddItemToObject(p, "int8_dense_tops", num_or_null(in->peaks.int8_tops));
	cJSON_AddItemToObject(p, "hbm_gbps", num_or_null(in->peaks.hbm_gbps));
	cJSON_AddStringToObject(p, "source", in->peaks.source);
	cJSON *me = cJSON_AddObjectToObject(g, "method");
	cJSON_AddStringToObject(me, "timing",
				"CUDA events between back-to-back launches of a CUDA graph of `calls` consecutive "
				"calls (call j on buffer copy j % copies); per-call time = launch time / calls; "
				"graphs lengthened by whole cycles of copies to at least min_graph_us");
	cJSON_AddStringToObject(me, "cache",
				"each implementation cycles through `copies` distinct buffer sets (activations, "
				"weights, outputs) so that one pass touches >= l2_factor x the L2 size; copies "
				"capped at max_copies (the smallest ctq_quantize points may then stay in L2)");
	cJSON_AddStringToObject(me, "statistics",
				"median, min and cv (sample stddev / mean) of the per-call times of `samples` "
				"launches after `warmup` untimed ones");
	cJSON_AddStringToObject(me, "check",
				"before timing, per point: ctq_quantize q and scales, the ctq GEMM's int32 "
				"accumulators (acc != NULL), ctq_gemm and ctq_w8a8 BF16 outputs, bit-exact against "
				"reference/ref_ops on check_rows rows (first and last included), all columns; "
				"outputs poisoned before each run; a mismatch fails the point (not timed) and the "
				"command (exit 1); cuBLASLt's int32 is checked too (a note, not a failure)");
	cJSON_AddNumberToObject(me, "samples", in->samples);
	cJSON_AddNumberToObject(me, "warmup", in->warmup);
	cJSON_AddNumberToObject(me, "min_graph_us", in->min_graph_us);
	cJSON_AddNumberToObject(me, "l2_factor", CTQ_GEMM_L2_FACTOR);
	cJSON_AddNumberToObject(me, "max_copies", CTQ_GEMM_MAX_COPIES);
	cJSON_AddNumberToObject(me, "check_rows", in->check_rows);
	cJSON_AddNumberToObject(me, "seed", (double)in->seed);
	cJSON_AddStringToObject(me, "ops", "2MNK (none for ctq_quantize); TOPS = ops / median time");
	cJSON *by = cJSON_AddObjectToObject(me, "bytes");
	cJSON_AddStringToObject(by, "ctq_w8a8", "x 2MK + w NK + s_w, bias 8N + y 2MN (q/s round trip not counted)");
	cJSON_AddStringToObject(by, "ctq_gemm", "q MK + s_a 4M + w NK + s_w, bias 8N + y 2MN");
	cJSON_AddStringToObject(by, "ctq_quantize", "x 2MK + q MK + s 4M");
	cJSON_AddStringToObject(by, "cublas_bf16", "x 2MK + w 2NK + y 2MN");
	cJSON_AddStringToObject(by, "cublaslt_i8", "q MK + w NK + acc 4MN");
	cJSON_AddStringToObject(by, "pct_hbm_weights", "weight bytes alone (NK int8, 2NK bf16) / time, % of HBM");
	cJSON_AddStringToObject(g, "shapes_from", in->shapes_from ? in->shapes_from : "unknown");
	cJSON *sa = cJSON_AddArrayToObject(g, "shapes");
	for (size_t i = 0; i < n; i++) {
		if (!ctq_gemm_row_first_of_shape(rows, i))
			continue;
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "name", rows[i].shape);
		cJSON_AddNumberToObject(x, "K", (double)rows[i].K);
		cJSON_AddNumberToObject(x, "N", (double)rows[i].N);
		cJSON_AddItemToArray(sa, x);
	}
	cJSON *ma = cJSON_AddArrayToObject(g, "m");
	for (int i = 0; in->m && i < in->n_m; i++)
		cJSON_AddItemToArray(ma, cJSON_CreateNumber((double)in->m[i]));
	cJSON *ck = cJSON_AddObjectToObject(g, "check");
	cJSON_AddNumberToObject(ck, "points", (double)in->points);
	cJSON_AddNumberToObject(ck, "ctq_failures", (double)in->ctq_failures);
	cJSON_AddNumberToObject(ck, "cublaslt_i8_failures", (double)in->i8_failures);
	if (in->first_failure)
		cJSON_AddStringToObject(ck, "first_failure", in->first_failure);
	cJSON *ta = cJSON_AddArrayToObject(g, "targets");
	for (size_t i = 0; i < nt; i++) {
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "target", ctq_gemm_target_text(t[i].id));
		cJSON_AddStringToObject(x, "shape", t[i].shape);
		cJSON_AddStringToObject(x, "verdict", ctq_gemm_verdict_name(t[i].verdict));
		cJSON_AddStringToObject(x, "detail", t[i].detail);
		cJSON_AddItemToArray(ta, x);
	}
}

enum ctq_status ctq_gemm_write(const char *dir, cJSON *manifest, const struct ctq_gemm_run_info *info,
			       const struct ctq_gemm_row *rows, size_t n, const double *samples,
			       size_t stride, char *plot_note, size_t cap, struct ctq_error *err)
{
	if (cap)
		plot_note[0] = '\0';
	struct ctq_gemm_target *t = NULL;
	size_t nt = 0;
	enum ctq_status st = write_csvs(dir, rows, n, samples, stride, err);
	if (st || (st = ctq_gemm_targets(rows, n, &t, &nt, err)))
		return st;
	write_manifest(manifest, info, rows, n, t, nt);
	free(t);
	struct ctq_plotter p;
	ctq_plot_init(&p);
	if (!p.available) {
		snprintf(plot_note, cap, "no plots: %s", p.why);
		return CTQ_OK;
	}
	char pdir[1200];
	snprintf(pdir, sizeof pdir, "%s/plots", dir);
	if ((st = ctq_mkdirs(pdir, err)))
		return st;
	for (size_t i = 0; i < n; i++) {
		if (!ctq_gemm_row_first_of_shape(rows, i))
			continue;
		char name[128];
		ctq_gemm_plot_name(name, sizeof name, rows[i].shape);
		struct ctq_strbuf body, data;
		ctq_strbuf_init(&body);
		ctq_strbuf_init(&data);
		struct ctq_error pe = {0};
		if (ctq_gemm_plot(rows, n, rows[i].shape, name, info->peaks.int8_tops, &body, &data) &&
		    !body.oom && !data.oom &&
		    ctq_plot_render(&p, pdir, name, 900, 520, body.data, data.data, &pe) && cap)
			snprintf(plot_note, cap, "plot %s not drawn: %s", name, pe.message);
		ctq_strbuf_free(&body);
		ctq_strbuf_free(&data);
	}
	return CTQ_OK;
}

/* ---- the reference check ---------------------------------------------------------------- */

int64_t ctq_gemm_check_rows(int64_t M, int64_t n_max, int64_t *rows)
{
	if (M <= 0 || n_max <= 0)
		return 0;
	if (M <= n_max) {
		for (int64_t i = 0; i < M; i++)
			rows[i] = i;
		return M;
	}
	if (n_max == 1) {
		rows[0] = 0;
		return 1;
	}
	/* Evenly spaced; strictly increasing since M > n_max. */
	for (int64_t i = 0; i < n_max; i++)
		rows[i] = i * (M - 1) / (n_max - 1);
	return n_max;
}

static void bf16_text(char *buf, size_t cap, uint16_t v)
{
	snprintf(buf, cap, "0x%04x (%.9g)", v, (double)ctq_bf16_to_f32(v));
}

/* The first element where got and want differ (bitwise), or -1. */
static int64_t first_diff(const void *got, const void *want, size_t elem, size_t n)
{
	const unsigned char *a = got, *b = want;
	for (size_t i = 0; i < n; i++)
		if (memcmp(a + i * elem, b + i * elem, elem))
			return (int64_t)i;
	return -1;
}

void ctq_gemm_ref_free(struct ctq_gemm_ref *ref)
{
	ctq_free(ref->q);
	ctq_free(ref->s);
	ctq_free(ref->acc);
	ctq_free(ref->y);
	memset(ref, 0, sizeof *ref);
}

enum ctq_status ctq_gemm_ref_rows(const uint16_t *x, const int8_t *w, const float *s_w,
				  const float *bias, const int64_t *rows, int64_t n, int64_t N,
				  int64_t K, struct ctq_gemm_ref *ref, struct ctq_error *err)
{
	memset(ref, 0, sizeof *ref);
	uint16_t *xr = ctq_malloc((size_t)(n * K) * sizeof *xr);
	ref->q = ctq_malloc((size_t)(n * K));
	ref->s = ctq_malloc((size_t)n * sizeof *ref->s);
	ref->acc = ctq_malloc((size_t)(n * N) * sizeof *ref->acc);
	ref->y = ctq_malloc((size_t)(n * N) * sizeof *ref->y);
	enum ctq_status st = CTQ_OK;
	if (!xr || !ref->q || !ref->s || !ref->acc || !ref->y) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, "bench gemm", "out of memory");
	} else {
		for (int64_t i = 0; i < n; i++)
			memcpy(xr + i * K, x + rows[i] * K, (size_t)K * sizeof *xr);
		ctq_ref_quantize_bf16(xr, n, K, ref->q, ref->s);
		if (!(st = ctq_ref_gemm_i8(ref->q, w, n, N, K, ref->acc, err)))
			ctq_ref_w8a8_epilogue(ref->acc, ref->s, s_w, bias, n, N, ref->y);
	}
	ctq_free(xr);
	if (st)
		ctq_gemm_ref_free(ref);
	return st;
}

enum ctq_status ctq_gemm_check(const struct ctq_gemm_check_in *in, char *ctq_mismatch,
			       size_t cap, char *i8_mismatch, size_t i8_cap, struct ctq_error *err)
{
	const int64_t n = in->n_rows, N = in->N, K = in->K;
	ctq_mismatch[0] = '\0';
	if (i8_mismatch && i8_cap)
		i8_mismatch[0] = '\0';
	if (n <= 0)
		return CTQ_OK;
	struct ctq_gemm_ref ref;
	enum ctq_status st = ctq_gemm_ref_rows(in->x, in->w, in->s_w, in->bias, in->rows, n, N, K,
					       &ref, err);
	if (st)
		return st;
	const int8_t *q = ref.q;
	const float *s = ref.s;
	const int32_t *acc = ref.acc;
	const uint16_t *y = ref.y;
	int64_t d;
	char g[64], w[64];
	if ((d = first_diff(in->q, q, 1, (size_t)(n * K))) >= 0) {
		snprintf(ctq_mismatch, cap, "ctq_quantize q row %lld col %lld: got %d, want %d",
			 (long long)in->rows[d / K], (long long)(d % K), in->q[d], q[d]);
	} else if ((d = first_diff(in->s, s, 4, (size_t)n)) >= 0) {
		snprintf(ctq_mismatch, cap, "ctq_quantize scale row %lld: got %.9g, want %.9g",
			 (long long)in->rows[d], (double)in->s[d], (double)s[d]);
	} else if ((d = first_diff(in->acc, acc, 4, (size_t)(n * N))) >= 0) {
		snprintf(ctq_mismatch, cap, "ctq_gemm int32 accumulator row %lld col %lld: got %d, want %d",
			 (long long)in->rows[d / N], (long long)(d % N), in->acc[d], acc[d]);
	} else if ((d = first_diff(in->y_gemm, y, 2, (size_t)(n * N))) >= 0) {
		bf16_text(g, sizeof g, in->y_gemm[d]);
		bf16_text(w, sizeof w, y[d]);
		snprintf(ctq_mismatch, cap, "ctq_gemm bf16 output row %lld col %lld: got %s, want %s",
			 (long long)in->rows[d / N], (long long)(d % N), g, w);
	} else if ((d = first_diff(in->y_w8a8, y, 2, (size_t)(n * N))) >= 0) {
		bf16_text(g, sizeof g, in->y_w8a8[d]);
		bf16_text(w, sizeof w, y[d]);
		snprintf(ctq_mismatch, cap, "ctq_w8a8 bf16 output row %lld col %lld: got %s, want %s",
			 (long long)in->rows[d / N], (long long)(d % N), g, w);
	}
	if (in->acc_i8 && i8_mismatch && (d = first_diff(in->acc_i8, acc, 4, (size_t)(n * N))) >= 0)
		snprintf(i8_mismatch, i8_cap, "cublaslt_i8 int32 row %lld col %lld: got %d, want %d",
			 (long long)in->rows[d / N], (long long)(d % N), in->acc_i8[d], acc[d]);
	ctq_gemm_ref_free(&ref);
	return CTQ_OK;
}

#ifndef CTQ_HAVE_CUDA
/* This build has no CUDA (nvcc was not found): the driver refuses. */
enum ctq_status ctq_gemm_bench_open(struct ctq_gemm_bench **out, int device,
				    struct ctq_gemm_device *info, struct ctq_error *err)
{
	(void)device;
	*out = NULL;
	memset(info, 0, sizeof *info);
	return ctq_error_set(err, CTQ_ERR_ENV, "--device",
			     "this ctq was built without CUDA (CUDA=0, or no nvcc at build time); "
			     "bench gemm needs a GPU");
}

void ctq_gemm_bench_close(struct ctq_gemm_bench *b)
{
	(void)b;
}

enum ctq_status ctq_gemm_bench_load(struct ctq_gemm_bench *b, const struct ctq_gemm_inputs *in,
				    struct ctq_error *err)
{
	(void)b, (void)in;
	return ctq_error_set(err, CTQ_ERR_ENV, "bench gemm", "this ctq was built without CUDA");
}

enum ctq_status ctq_gemm_bench_run_once(struct ctq_gemm_bench *b, struct ctq_gemm_outputs *out,
					struct ctq_error *err)
{
	(void)b, (void)out;
	return ctq_error_set(err, CTQ_ERR_ENV, "bench gemm", "this ctq was built without CUDA");
}

enum ctq_status ctq_gemm_bench_time(struct ctq_gemm_bench *b, enum ctq_gemm_impl impl,
				    struct ctq_gemm_timing *t, struct ctq_error *err)
{
	(void)b, (void)impl, (void)t;
	return ctq_error_set(err, CTQ_ERR_ENV, "bench gemm", "this ctq was built without CUDA");
}

void ctq_gemm_bench_set_plugin(struct ctq_gemm_bench *b, const struct ctq_kernel_plugin *p,
			       const char *path)
{
	(void)b, (void)p, (void)path;
}

void ctq_gemm_bench_set_path(struct ctq_gemm_bench *b, int path)
{
	(void)b, (void)path;
}

int ctq_gemm_bench_path(struct ctq_gemm_bench *b)
{
	(void)b;
	return CTQ_GEMM_PATH_DP4A;
}

enum ctq_status ctq_gemm_bench_plugin_run_once(struct ctq_gemm_bench *b, const int64_t *rows,
					       int64_t n_rows, int8_t *q, float *s, uint16_t *y,
					       struct ctq_error *err)
{
	(void)b, (void)rows, (void)n_rows, (void)q, (void)s, (void)y;
	return ctq_error_set(err, CTQ_ERR_ENV, "bench gemm", "this ctq was built without CUDA");
}

enum ctq_status ctq_gemm_bench_plugin_time(struct ctq_gemm_bench *b, struct ctq_gemm_timing *t,
					   struct ctq_error *err)
{
	(void)b, (void)t;
	return ctq_error_set(err, CTQ_ERR_ENV, "bench gemm", "this ctq was built without CUDA");
}

enum ctq_status ctq_gemm_bench_wna16_load(struct ctq_gemm_bench *b, const struct ctq_gemm_wna16_weights *w,
					  struct ctq_error *err)
{
	(void)b, (void)w;
	return ctq_error_set(err, CTQ_ERR_ENV, "bench gemm", "this ctq was built without CUDA");
}

enum ctq_status ctq_gemm_bench_wna16_run_once(struct ctq_gemm_bench *b, const int64_t *rows,
					      int64_t n_rows, uint16_t *y, struct ctq_error *err)
{
	(void)b, (void)rows, (void)n_rows, (void)y;
	return ctq_error_set(err, CTQ_ERR_ENV, "bench gemm", "this ctq was built without CUDA");
}

enum ctq_status ctq_gemm_bench_wna16_time(struct ctq_gemm_bench *b, struct ctq_gemm_timing *t,
					  struct ctq_error *err)
{
	(void)b, (void)t;
	return ctq_error_set(err, CTQ_ERR_ENV, "bench gemm", "this ctq was built without CUDA");
}
#endif
