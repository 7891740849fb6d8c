/* ctq bench gemm's measurement loop (bench/gemm_session.h). */
#include "bench/gemm_session.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint/packed.h"
#include "checkpoint/quantize_wna16.h"
#include "core/arena.h"
#include "core/dtype.h"
#include "core/numerics.h"
#include "core/rng.h"
#include "kernels/gemm_timing.h"
#include "reference/ref_wna16.h"
#include "results/csv_out.h"

/* A line to the session's say callback (none: dropped). */
__attribute__((format(printf, 3, 4))) static void say_line(struct ctq_gemm_session *S, bool error,
							    const char *fmt, ...)
{
	if (!S->say)
		return;
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	size_t n = strlen(line);
	if (n && line[n - 1] == '\n')
		line[n - 1] = '\0';
	S->say(S->say_ctx, error, line);
}

/* Seeded inputs of one shape, x for the largest M (smaller M use its first
 * rows): activations uniform in ±scale with a per-row scale in [0.25, 2),
 * so the per-token scales differ; int8 weights uniform in [-127, 127];
 * weight scales around 1e-3; small biases. No zeros that could flatter a
 * kernel (METHOD: random data, never zeros). */

void ctq_gemm_host_free(struct ctq_gemm_host *h)
{
	free(h->x);
	free(h->w);
	free(h->s_w);
	free(h->bias);
	memset(h, 0, sizeof *h);
}

enum ctq_status ctq_gemm_host_make(struct ctq_gemm_host *h, int64_t M, int64_t N, int64_t K,
				   uint64_t seed, struct ctq_error *err)
{
	h->x = ctq_malloc((size_t)(M * K) * sizeof *h->x);
	h->w = ctq_malloc((size_t)(N * K));
	h->s_w = ctq_malloc((size_t)N * sizeof *h->s_w);
	h->bias = ctq_malloc((size_t)N * sizeof *h->bias);
	if (!h->x || !h->w || !h->s_w || !h->bias) {
		ctq_gemm_host_free(h);
		return ctq_error_set(err, CTQ_ERR_NOMEM, "bench gemm", "out of host memory for M %lld x K %lld",
				     (long long)M, (long long)K);
	}
	struct ctq_rng r;
	ctq_rng_seed(&r, seed);
	for (int64_t n = 0; n < N * K; n++)
		h->w[n] = (int8_t)((int)ctq_rng_below(&r, 255) - 127);
	for (int64_t n = 0; n < N; n++) {
		h->s_w[n] = (float)(1e-3 * (0.5 + ctq_rng_uniform(&r)));
		h->bias[n] = (float)(0.05 * (2 * ctq_rng_uniform(&r) - 1));
	}
	for (int64_t m = 0; m < M; m++) {
		float scale = (float)(0.25 + 1.75 * ctq_rng_uniform(&r));
		for (int64_t k = 0; k < K; k++) {
			/* 24 random bits per element, mapped to [-1, 1). */
			float u = (float)((int64_t)(ctq_rng_next(&r) >> 40) - (1 << 23)) * (1.0f / (1 << 23));
			h->x[m * K + k] = ctq_f32_to_bf16(scale * u);
		}
	}
	return CTQ_OK;
}


static enum ctq_status keep_row(struct ctq_gemm_session *S, const struct ctq_gemm_row *r, const double *t,
				struct ctq_error *err)
{
	const size_t ns = (size_t)S->o.samples;
	if (S->n_rows == S->cap_rows) {
		size_t c = S->cap_rows ? 2 * S->cap_rows : 64;
		struct ctq_gemm_row *v = ctq_realloc(S->rows, c * sizeof *v);
		if (v)
			S->rows = v;
		double *w = v ? ctq_realloc(S->samples, c * ns * sizeof *w) : NULL;
		if (!w)
			return ctq_error_set(err, CTQ_ERR_NOMEM, "bench gemm", "out of memory");
		S->samples = w;
		S->cap_rows = c;
	}
	S->rows[S->n_rows] = *r;
	if (r->samples > 0)
		memcpy(S->samples + S->n_rows * ns, t, (size_t)r->samples * sizeof *t);
	S->n_rows++;
	return CTQ_OK;
}

/* A timed row's samples, copies, calls and its median / min / cv per call. */
static void row_timing(struct ctq_gemm_row *x, const struct ctq_gemm_timing *t)
{
	struct ctq_gemm_stats s;
	ctq_gemm_stats(t->time_us, (size_t)t->samples, &s);
	x->samples = t->samples, x->copies = t->copies, x->calls = t->calls;
	x->time_us_median = s.median, x->time_us_min = s.min, x->time_cv = s.cv;
}

static enum ctq_status plugin_point(struct ctq_gemm_session *S, const struct ctq_gemm_shape *sh,
				    const struct ctq_gemm_host *h, int64_t M, const int64_t *rows,
				    int64_t nr, double bf16_us, struct ctq_error *err);

static enum ctq_status path_point(struct ctq_gemm_session *S, const struct ctq_gemm_shape *sh,
				  const struct ctq_gemm_host *h, int64_t M, enum ctq_gemm_path path,
				  struct ctq_gemm_outputs *out, const struct ctq_gemm_row *bf16,
				  double *times, struct ctq_error *err);

static enum ctq_status wna16_point(struct ctq_gemm_session *S, const struct ctq_gemm_shape *sh,
				   const struct ctq_gemm_host *h, int64_t M, const int64_t *rows,
				   int64_t nr, double bf16_us, struct ctq_error *err);

/* One point: load, check against the reference, time each implementation,
 * then keep the five rows (speedups need the BF16 median). */
enum ctq_status ctq_gemm_session_point(struct ctq_gemm_session *S, const struct ctq_gemm_shape *sh, const struct ctq_gemm_host *h,
			     int64_t M, struct ctq_error *err)
{
	const struct ctq_gemm_session_opts *o = &S->o;
	const int64_t N = sh->N, K = sh->K;
	struct ctq_gemm_inputs in = {.M = M, .N = N, .K = K, .x = h->x, .w = h->w, .s_w = h->s_w, .bias = h->bias};
	for (int i = 0; i < CTQ_GEMM_IMPL_COUNT; i++)
		in.copies[i] = ctq_gemm_copies(ctq_gemm_touched_bytes((enum ctq_gemm_impl)i, M, N, K),
					       S->dev.l2_bytes);
	int64_t rows[1024];
	const int64_t nr = ctq_gemm_check_rows(M, o->check_rows, rows);
	struct ctq_gemm_outputs out = {.rows = rows, .n_rows = nr};
	out.q = ctq_malloc((size_t)(nr * K));
	out.s = ctq_malloc((size_t)nr * sizeof *out.s);
	out.acc = ctq_malloc((size_t)(nr * N) * sizeof *out.acc);
	out.y_w8a8 = ctq_malloc((size_t)(nr * N) * sizeof *out.y_w8a8);
	out.y_gemm = ctq_malloc((size_t)(nr * N) * sizeof *out.y_gemm);
	out.acc_i8 = ctq_malloc((size_t)(nr * N) * sizeof *out.acc_i8);
	double *times = ctq_malloc((size_t)CTQ_GEMM_IMPL_COUNT * (size_t)o->samples * sizeof *times);
	enum ctq_status st = CTQ_OK;
	char mismatch[300] = "", i8_mismatch[300] = "";
	if (!out.q || !out.s || !out.acc || !out.y_w8a8 || !out.y_gemm || !out.acc_i8 || !times) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, "bench gemm", "out of memory");
		goto done;
	}
	if ((st = ctq_gemm_bench_load(S->b, &in, err)) || (st = ctq_gemm_bench_run_once(S->b, &out, err)))
		goto done;
	struct ctq_gemm_check_in ci = {
		.M = M, .N = N, .K = K, .x = h->x, .w = h->w, .s_w = h->s_w, .bias = h->bias,
		.rows = rows, .n_rows = nr, .q = out.q, .s = out.s, .acc = out.acc, .y_gemm = out.y_gemm,
		.y_w8a8 = out.y_w8a8, .acc_i8 = out.i8_ok ? out.acc_i8 : NULL};
	if ((st = ctq_gemm_check(&ci, mismatch, sizeof mismatch, i8_mismatch, sizeof i8_mismatch, err)))
		goto done;
	if (mismatch[0]) {
		if (!S->failures++)
			snprintf(S->first_failure, sizeof S->first_failure, "%s M=%lld: %s", sh->name,
				 (long long)M, mismatch);
		say_line(S, true, "ctq bench gemm: FAIL %s (K=%lld, N=%lld) M=%lld: %s\n", sh->name, (long long)K,
			(long long)N, (long long)M, mismatch);
	}
	if (i8_mismatch[0]) {
		S->i8_failures++;
		say_line(S, true, "ctq bench gemm: warning: %s M=%lld: %s (a baseline, not ctq)\n", sh->name,
			(long long)M, i8_mismatch);
	}
	struct ctq_gemm_row r[CTQ_GEMM_IMPL_COUNT];
	memset(r, 0, sizeof r);
	for (int i = 0; i < CTQ_GEMM_IMPL_COUNT && !st; i++) {
		struct ctq_gemm_row *x = &r[i];
		const enum ctq_gemm_impl impl = (enum ctq_gemm_impl)i;
		snprintf(x->shape, sizeof x->shape, "%s", sh->name);
		x->K = K, x->N = N, x->M = M, x->impl = impl;
		x->time_us_median = x->time_us_min = x->time_cv = NAN;
		const bool ctq = ctq_gemm_impl_is_ctq(impl);
		if (impl == CTQ_GEMM_GEMM || impl == CTQ_GEMM_W8A8)
			snprintf(x->kernel_path, sizeof x->kernel_path, "%s",
				 ctq_gemm_path_name((enum ctq_gemm_path)ctq_gemm_bench_path(S->b)));
		snprintf(x->check, sizeof x->check, "%s",
			 ctq ? (mismatch[0] ? "fail" : "pass")
			     : impl == CTQ_GEMM_I8 && out.i8_ok ? (i8_mismatch[0] ? "fail" : "pass") : "-");
		if (ctq && mismatch[0]) {
			snprintf(x->note, sizeof x->note, "not timed: %s", mismatch);
		} else {
			struct ctq_gemm_timing t = {.warmup = (int)o->warmup, .samples = (int)o->samples,
						    .min_graph_us = CTQ_GEMM_MIN_GRAPH_US,
						    .time_us = times + (size_t)i * (size_t)o->samples};
			if ((st = ctq_gemm_bench_time(S->b, impl, &t, err)))
				break;
			snprintf(x->note, sizeof x->note, "%s",
				 impl == CTQ_GEMM_I8 && i8_mismatch[0] ? i8_mismatch : t.note);
			if (t.supported) {
				row_timing(x, &t);
			}
		}
		ctq_gemm_row_metrics(x, &S->peaks);
	}
	if (st)
		goto done;
	ctq_gemm_rows_speedup(r, CTQ_GEMM_IMPL_COUNT);
	for (int i = 0; i < CTQ_GEMM_IMPL_COUNT && !st; i++)
		st = keep_row(S, &r[i], times + (size_t)i * (size_t)o->samples, err);
	for (int k = 0; k < o->n_paths && !st; k++)
		st = path_point(S, sh, h, M, (enum ctq_gemm_path)o->paths[k], &out, &r[CTQ_GEMM_BF16], times, err);
	if (!st && S->lib.t && S->lib.t->gemm_w8a8)
		st = plugin_point(S, sh, h, M, rows, nr, r[CTQ_GEMM_BF16].time_us_median, err);
	if (!st && S->lib.t && S->lib.t->gemm_wna16)
		st = wna16_point(S, sh, h, M, rows, nr, r[CTQ_GEMM_BF16].time_us_median, err);
	S->points++;
	say_line(S, false,
		"bench gemm [%zu/%zu] %s K=%lld N=%lld M=%lld: check %s; ctq_gemm %.2f us %.0f TOPS "
		"(%.1f%% peak, %.2fx bf16); ctq_w8a8 %.2f us; ctq_quantize %.2f us; cublas_bf16 %.2f us; "
		"cublaslt_i8 %.2f us\n",
		S->points, S->n_points, sh->name, (long long)K, (long long)N, (long long)M,
		mismatch[0] ? "FAIL" : "ok", r[CTQ_GEMM_GEMM].time_us_median, r[CTQ_GEMM_GEMM].tops,
		r[CTQ_GEMM_GEMM].pct_int8_peak, r[CTQ_GEMM_GEMM].speedup_vs_bf16, r[CTQ_GEMM_W8A8].time_us_median,
		r[CTQ_GEMM_QUANTIZE].time_us_median, r[CTQ_GEMM_BF16].time_us_median,
		r[CTQ_GEMM_I8].time_us_median);
done:
	free(out.q);
	free(out.s);
	free(out.acc);
	free(out.y_w8a8);
	free(out.y_gemm);
	free(out.acc_i8);
	free(times);
	return st;
}

/* ctq_gemm on one kernel path forced at the loaded point: checked against
 * the reference on the same rows as the dispatched run (out's buffers are
 * reused), then timed; one row, impl ctq_gemm@PATH. A path that does not
 * take the point on this GPU gets an untimed row saying so. times: room
 * for o->samples. */
static enum ctq_status path_point(struct ctq_gemm_session *S, const struct ctq_gemm_shape *sh,
				  const struct ctq_gemm_host *h, int64_t M, enum ctq_gemm_path path,
				  struct ctq_gemm_outputs *out, const struct ctq_gemm_row *bf16,
				  double *times, struct ctq_error *err)
{
	const struct ctq_gemm_session_opts *o = &S->o;
	struct ctq_gemm_row x;
	memset(&x, 0, sizeof x);
	snprintf(x.shape, sizeof x.shape, "%s", sh->name);
	x.K = sh->K, x.N = sh->N, x.M = M, x.impl = CTQ_GEMM_GEMM, x.forced = true;
	snprintf(x.impl_label, sizeof x.impl_label, "ctq_gemm@%s", ctq_gemm_path_name(path));
	snprintf(x.kernel_path, sizeof x.kernel_path, "%s", ctq_gemm_path_name(path));
	x.time_us_median = x.time_us_min = x.time_cv = NAN;
	char mismatch[300] = "", i8m[8];
	struct ctq_error e2 = {0};
	ctq_gemm_bench_set_path(S->b, (int)path);
	enum ctq_status st = ctq_gemm_bench_run_once(S->b, out, &e2);
	if (st == CTQ_ERR_USAGE) {
		/* the path does not take this point here: said, not timed */
		snprintf(x.check, sizeof x.check, "-");
		snprintf(x.note, sizeof x.note, "not run: %s: %s", e2.path, e2.message);
		st = CTQ_OK;
		goto keep;
	}
	if (st) {
		*err = e2;
		goto out;
	}
	struct ctq_gemm_check_in ci = {
		.M = M, .N = sh->N, .K = sh->K, .x = h->x, .w = h->w, .s_w = h->s_w, .bias = h->bias,
		.rows = out->rows, .n_rows = out->n_rows, .q = out->q, .s = out->s, .acc = out->acc,
		.y_gemm = out->y_gemm, .y_w8a8 = out->y_w8a8, .acc_i8 = NULL};
	if ((st = ctq_gemm_check(&ci, mismatch, sizeof mismatch, i8m, sizeof i8m, err)))
		goto out;
	snprintf(x.check, sizeof x.check, "%s", mismatch[0] ? "fail" : "pass");
	if (mismatch[0]) {
		if (!S->failures++)
			snprintf(S->first_failure, sizeof S->first_failure, "%s M=%lld %s: %s", sh->name,
				 (long long)M, x.impl_label, mismatch);
		say_line(S, true, "ctq bench gemm: FAIL %s (K=%lld, N=%lld) M=%lld %s: %s\n", sh->name,
			(long long)sh->K, (long long)sh->N, (long long)M, x.impl_label, mismatch);
		snprintf(x.note, sizeof x.note, "not timed: %s", mismatch);
		goto keep;
	}
	struct ctq_gemm_timing t = {.warmup = (int)o->warmup, .samples = (int)o->samples,
				    .min_graph_us = CTQ_GEMM_MIN_GRAPH_US, .time_us = times};
	if ((st = ctq_gemm_bench_time(S->b, CTQ_GEMM_GEMM, &t, err)))
		goto out;
	snprintf(x.note, sizeof x.note, "%s", t.note);
	if (t.supported) {
		row_timing(&x, &t);
	}
keep:
	ctq_gemm_row_metrics(&x, &S->peaks);
	x.speedup_vs_bf16 = bf16 && x.time_us_median > 0 ? bf16->time_us_median / x.time_us_median : NAN;
	st = keep_row(S, &x, times, err);
	if (isnan(x.time_us_median))
		say_line(S, false, "bench gemm   %s M=%lld %s: %s\n", sh->name, (long long)M, x.impl_label, x.note);
	else
		say_line(S, false, "bench gemm   %s M=%lld %s: check %s, %.2f us %.0f TOPS\n", sh->name,
			(long long)M, x.impl_label, x.check, x.time_us_median, x.tops);
out:
	ctq_gemm_bench_set_path(S->b, -1);
	return st;
}

/* One of the plug-in's rows kept. */
static enum ctq_status add_prow(struct ctq_gemm_session *S, const struct ctq_gemm_row *x,
				struct ctq_error *err)
{
	if (S->n_prows == S->cap_prows) {
		size_t c = S->cap_prows ? 2 * S->cap_prows : 32;
		struct ctq_gemm_row *v = ctq_realloc(S->prows, c * sizeof *v);
		if (!v)
			return ctq_error_set(err, CTQ_ERR_NOMEM, "bench gemm", "out of memory");
		S->prows = v;
		S->cap_prows = c;
	}
	S->prows[S->n_prows++] = *x;
	return CTQ_OK;
}

/* The plug-in at one point: check its rows against the reference, then
 * time it as ctq_w8a8 is timed (not timed when the check fails). bf16_us:
 * the point's cublas_bf16 median, for the speedup. */
static enum ctq_status plugin_point(struct ctq_gemm_session *S, const struct ctq_gemm_shape *sh,
				    const struct ctq_gemm_host *h, int64_t M, const int64_t *rows,
				    int64_t nr, double bf16_us, struct ctq_error *err)
{
	const struct ctq_gemm_session_opts *o = &S->o;
	const int64_t N = sh->N, K = sh->K;
	const struct ctq_kernel_plugin *t = S->lib.t;
	int8_t *q = ctq_malloc((size_t)(nr * K));
	float *s = ctq_malloc((size_t)nr * sizeof *s);
	uint16_t *y = ctq_malloc((size_t)(nr * N) * sizeof *y);
	double *times = ctq_malloc((size_t)o->samples * sizeof *times);
	struct ctq_gemm_row x;
	memset(&x, 0, sizeof x);
	char mismatch[300] = "";
	double rel = NAN;
	enum ctq_status st = CTQ_OK;
	if (!q || !s || !y || !times) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, "bench gemm", "out of memory");
		goto done;
	}
	const unsigned both = CTQ_KERNEL_PLUGIN_QUANT_EXACT | CTQ_KERNEL_PLUGIN_GEMM_EXACT;
	struct ctq_gemm_plugin_check_in ci = {
		.M = M, .N = N, .K = K, .x = h->x, .w = h->w, .s_w = h->s_w, .bias = h->bias, .rows = rows,
		.n_rows = nr, .q = q, .s = s, .y = y, .quant_exact = t->caps & CTQ_KERNEL_PLUGIN_QUANT_EXACT,
		.out_exact = (t->caps & both) == both};
	if ((st = ctq_gemm_bench_plugin_run_once(S->b, rows, nr, q, s, y, err)) ||
	    (st = ctq_gemm_plugin_check(&ci, &rel, mismatch, sizeof mismatch, err)))
		goto done;
	snprintf(x.shape, sizeof x.shape, "%s", sh->name);
	snprintf(x.impl_label, sizeof x.impl_label, "%s", t->name);
	x.K = K, x.N = N, x.M = M, x.impl = CTQ_GEMM_W8A8; /* charged ctq_w8a8's bytes and ops */
	x.time_us_median = x.time_us_min = x.time_cv = NAN;
	snprintf(x.check, sizeof x.check, "%s", mismatch[0] ? "fail" : "pass");
	if (mismatch[0]) {
		if (!S->plugin_failures++)
			snprintf(S->plugin_first_failure, sizeof S->plugin_first_failure, "%s M=%lld: %s",
				 sh->name, (long long)M, mismatch);
		say_line(S, true, "ctq bench gemm: FAIL plug-in %s, %s (K=%lld, N=%lld) M=%lld: %s\n", t->name,
			sh->name, (long long)K, (long long)N, (long long)M, mismatch);
		snprintf(x.note, sizeof x.note, "not timed: %s", mismatch);
	} else {
		struct ctq_gemm_timing tm = {.warmup = (int)o->warmup, .samples = (int)o->samples,
					     .min_graph_us = CTQ_GEMM_MIN_GRAPH_US, .time_us = times};
		if ((st = ctq_gemm_bench_plugin_time(S->b, &tm, err)))
			goto done;
		row_timing(&x, &tm);
		snprintf(x.note, sizeof x.note, "kernel plug-in %s; rel-L2 %.3g", t->name, rel);
	}
	ctq_gemm_row_metrics(&x, &S->peaks);
	x.speedup_vs_bf16 = bf16_us / x.time_us_median;
	if ((st = add_prow(S, &x, err)))
		goto done;
	say_line(S, false, "bench gemm        %s K=%lld N=%lld M=%lld: plug-in %s check %s; %.2f us %.0f TOPS (%.2fx bf16)\n",
		sh->name, (long long)K, (long long)N, (long long)M, t->name, mismatch[0] ? "FAIL" : "ok",
		x.time_us_median, x.tops, x.speedup_vs_bf16);
done:
	free(q);
	free(s);
	free(y);
	free(times);
	return st;
}

static void wna16_host_free(struct ctq_gemm_session *S)
{
	for (int i = 0; i < 8; i++) {
		struct ctq_gemm_wna16_host *w = &S->wh[i];
		ctq_free(w->packed);
		ctq_free(w->scale);
		ctq_free(w->zero);
		memset(w, 0, sizeof *w);
	}
	S->wh_shape = NULL;
}

/* Each layout's weights for shape sh, made once per shape: the point's
 * int8 weights times their scales, quantized by ctq's producer. */
static enum ctq_status wna16_host_make(struct ctq_gemm_session *S, const struct ctq_gemm_shape *sh,
				       const struct ctq_gemm_host *h, struct ctq_error *err)
{
	if (S->wh_shape == sh)
		return CTQ_OK;
	wna16_host_free(S);
	const int64_t N = sh->N, K = sh->K;
	float *src = ctq_malloc((size_t)(N * K) * sizeof *src);
	double *e2 = ctq_malloc((size_t)N * sizeof *e2), *w2 = ctq_malloc((size_t)N * sizeof *w2);
	enum ctq_status st = CTQ_OK;
	if (!src || !e2 || !w2) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, "bench gemm", "out of memory");
		goto done;
	}
	for (int64_t n = 0; n < N; n++)
		for (int64_t k = 0; k < K; k++)
			src[n * K + k] = (float)h->w[n * K + k] * h->s_w[n];
	for (int i = 0; i < S->o.n_wna16 && !st; i++) {
		const struct ctq_wna16_cfg *c = &S->o.wna16[i];
		struct ctq_gemm_wna16_host *w = &S->wh[i];
		w->fits = ctq_wna16_cfg_fits(c, K);
		if (!w->fits)
			continue;
		w->words = ctq_pack_words(K, c->bits);
		w->groups = ctq_packed_groups(K, c->group_size);
		w->zrows = c->asym ? ctq_pack_words(N, c->bits) : 0;
		w->packed = ctq_malloc((size_t)(N * w->words) * sizeof *w->packed);
		w->scale = ctq_malloc((size_t)(N * w->groups) * sizeof *w->scale);
		w->zero = c->asym ? ctq_malloc((size_t)(w->zrows * w->groups) * sizeof *w->zero) : NULL;
		const struct ctq_packed_args a = {c->bits, c->group_size, c->asym};
		int64_t bad = w->packed && w->scale && (!c->asym || w->zero)
				      ? ctq_wna16_quantize_weight(src, CTQ_DTYPE_F32, N, K, &a, w->packed, w->scale,
								  w->zero, e2, w2)
				      : -2;
		if (bad == -2)
			st = ctq_error_set(err, CTQ_ERR_NOMEM, "bench gemm", "out of memory");
		else if (bad >= 0)
			st = ctq_error_set(err, CTQ_ERR_USAGE, sh->name, "%s: weight row %lld is not finite",
					   c->name, (long long)bad);
	}
	if (!st)
		S->wh_shape = sh;
done:
	ctq_free(src);
	ctq_free(e2);
	ctq_free(w2);
	if (st)
		wna16_host_free(S);
	return st;
}

/* The weight-only plug-in at one point, each layout that fits K: its
 * gemm_wna16 checked on the point's rows against reference/ref_wna16.h
 * (bit for bit where it declares WNA16_EXACT, else NaN/Inf and rel-L2 <=
 * CTQ_GEMM_PLUGIN_REL_L2_MAX), then timed as the others; one row each,
 * impl NAME:LAYOUT, charged the packed weights' bytes. */
static enum ctq_status wna16_point(struct ctq_gemm_session *S, const struct ctq_gemm_shape *sh,
				   const struct ctq_gemm_host *h, int64_t M, const int64_t *rows,
				   int64_t nr, double bf16_us, struct ctq_error *err)
{
	const struct ctq_gemm_session_opts *o = &S->o;
	const int64_t N = sh->N, K = sh->K;
	const struct ctq_kernel_plugin *t = S->lib.t;
	enum ctq_status st = wna16_host_make(S, sh, h, err);
	if (st)
		return st;
	uint16_t *xr = ctq_malloc((size_t)(nr * K) * sizeof *xr);
	uint16_t *y = ctq_malloc((size_t)(nr * N) * sizeof *y), *yr = ctq_malloc((size_t)(nr * N) * sizeof *yr);
	double *times = ctq_malloc((size_t)o->samples * sizeof *times);
	if (!xr || !y || !yr || !times) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, "bench gemm", "out of memory");
		goto done;
	}
	for (int64_t i = 0; i < nr; i++)
		memcpy(xr + i * K, h->x + rows[i] * K, (size_t)K * sizeof *xr);
	for (int i = 0; i < o->n_wna16 && !st; i++) {
		const struct ctq_wna16_cfg *c = &o->wna16[i];
		const struct ctq_gemm_wna16_host *w = &S->wh[i];
		if (!w->fits)
			continue; /* its group does not divide K: said once per shape below */
		const double wbytes = 4.0 * (double)(N * w->words) + 4.0 * (double)(N * w->groups) +
				      4.0 * (double)(w->zrows * w->groups);
		const double touched = 2.0 * (double)(M * K) + wbytes + 4.0 * (double)N + 2.0 * (double)(M * N);
		struct ctq_gemm_wna16_weights wd = {
			.packed = w->packed, .words = w->words, .scale = w->scale, .groups = w->groups,
			.zero = w->zero, .zrows = w->zrows, .bits = c->bits, .group_size = c->group_size,
			.copies = ctq_gemm_copies(touched, S->dev.l2_bytes)};
		if ((st = ctq_gemm_bench_wna16_load(S->b, &wd, err)) ||
		    (st = ctq_gemm_bench_wna16_run_once(S->b, rows, nr, y, err)) ||
		    (st = ctq_ref_gemm_wna16(xr, w->packed, w->scale, w->zero, h->bias, nr, N, K, c->bits,
					      c->group_size, yr, err)))
			break;
		double rel = NAN;
		char mismatch[300] = "";
		ctq_gemm_compare_y(rows, nr, N, y, yr, (t->caps & CTQ_KERNEL_PLUGIN_WNA16_EXACT) != 0, &rel,
				   mismatch, sizeof mismatch);
		struct ctq_gemm_row x;
		memset(&x, 0, sizeof x);
		snprintf(x.shape, sizeof x.shape, "%s", sh->name);
		snprintf(x.impl_label, sizeof x.impl_label, "%s:%s", t->name, c->name);
		snprintf(x.kernel_path, sizeof x.kernel_path, "%s", c->name);
		x.K = K, x.N = N, x.M = M, x.impl = CTQ_GEMM_BF16; /* a BF16 product's operations */
		x.time_us_median = x.time_us_min = x.time_cv = NAN;
		snprintf(x.check, sizeof x.check, "%s", mismatch[0] ? "fail" : "pass");
		if (mismatch[0]) {
			if (!S->plugin_failures++)
				snprintf(S->plugin_first_failure, sizeof S->plugin_first_failure, "%s M=%lld %s: %s",
					 sh->name, (long long)M, c->name, mismatch);
			say_line(S, true, "ctq bench gemm: FAIL plug-in %s %s, %s (K=%lld, N=%lld) M=%lld: %s\n",
				t->name, c->name, sh->name, (long long)K, (long long)N, (long long)M, mismatch);
			snprintf(x.note, sizeof x.note, "not timed: %s", mismatch);
		} else {
			struct ctq_gemm_timing tm = {.warmup = (int)o->warmup, .samples = (int)o->samples,
						     .min_graph_us = CTQ_GEMM_MIN_GRAPH_US, .time_us = times};
			if ((st = ctq_gemm_bench_wna16_time(S->b, &tm, err)))
				break;
			row_timing(&x, &tm);
			snprintf(x.note, sizeof x.note, "weight-only plug-in %s, %s; rel-L2 %.3g to the reference",
				 t->name, c->name, rel);
		}
		ctq_gemm_row_metrics(&x, &S->peaks);
		ctq_gemm_row_bytes(&x, &S->peaks, 2.0 * (double)(M * K) + wbytes + 4.0 * (double)N +
							   2.0 * (double)(M * N), wbytes);
		x.speedup_vs_bf16 = bf16_us / x.time_us_median;
		if ((st = add_prow(S, &x, err)))
			break;
		say_line(S, false, "bench gemm        %s K=%lld N=%lld M=%lld: plug-in %s %s check %s; %.2f us, "
			"%.0f%% HBM (weights) (%.2fx bf16)\n", sh->name, (long long)K, (long long)N, (long long)M,
			t->name, c->name, mismatch[0] ? "FAIL" : "ok", x.time_us_median, x.pct_hbm_weights,
			x.speedup_vs_bf16);
	}
done:
	ctq_free(xr);
	ctq_free(y);
	ctq_free(yr);
	free(times);
	return st;
}

/* bench_gemm_plugin.csv (bench_gemm.csv's columns) and the manifest's
 * bench_gemm.plugin member. */
enum ctq_status ctq_gemm_session_plugin_write(const struct ctq_gemm_session *S, const char *dir, cJSON *manifest,
				    struct ctq_error *err)
{
	char path[1200];
	snprintf(path, sizeof path, "%s/bench_gemm_plugin.csv", dir);
	struct ctq_csv w;
	enum ctq_status st = ctq_csv_open(&w, path, ctq_gemm_csv_header, ctq_gemm_csv_cols, err);
	for (size_t i = 0; i < S->n_prows && !st; i++)
		ctq_gemm_csv_row(&w, &S->prows[i]);
	if (st || (st = ctq_csv_close(&w, err)))
		return st;
	cJSON *bg = cJSON_GetObjectItemCaseSensitive(manifest, "bench_gemm");
	cJSON *p = cJSON_AddObjectToObject(bg ? bg : manifest, "plugin");
	const struct ctq_kernel_plugin *t = S->lib.t;
	cJSON_AddStringToObject(p, "path", S->lib.path);
	cJSON_AddStringToObject(p, "name", t->name);
	cJSON_AddNumberToObject(p, "abi_version", t->abi_version);
	cJSON_AddBoolToObject(p, "quant_exact", (t->caps & CTQ_KERNEL_PLUGIN_QUANT_EXACT) != 0);
	cJSON_AddBoolToObject(p, "gemm_exact", (t->caps & CTQ_KERNEL_PLUGIN_GEMM_EXACT) != 0);
	cJSON_AddNumberToObject(p, "rel_l2_max", CTQ_GEMM_PLUGIN_REL_L2_MAX);
	if (t->gemm_wna16) {
		cJSON_AddBoolToObject(p, "wna16_exact", (t->caps & CTQ_KERNEL_PLUGIN_WNA16_EXACT) != 0);
		cJSON *l = cJSON_AddArrayToObject(p, "wna16_layouts");
		for (int i = 0; i < S->o.n_wna16; i++)
			cJSON_AddItemToArray(l, cJSON_CreateString(S->o.wna16[i].name));
	}
	cJSON_AddNumberToObject(p, "points", (double)S->n_prows);
	cJSON_AddNumberToObject(p, "failures", (double)S->plugin_failures);
	cJSON_AddStringToObject(p, "file", "bench_gemm_plugin.csv");
	return CTQ_OK;
}


void ctq_gemm_session_free(struct ctq_gemm_session *S)
{
	if (!S)
		return;
	ctq_gemm_bench_close(S->b);
	S->b = NULL;
	ctq_kernel_lib_close(&S->lib);
	wna16_host_free(S);
	free(S->rows);
	free(S->samples);
	free(S->prows);
	S->rows = S->prows = NULL;
	S->samples = NULL;
	S->n_rows = S->cap_rows = S->n_prows = S->cap_prows = 0;
}
