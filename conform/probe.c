/* ctq kernel isolation probes (see probe.h). */
#include "conform/probe.h"
#include "core/arena.h"
#include "core/dtype.h"
#include "core/json.h"
#include "core/policy.h"
#include "core/strbuf.h"
#include "core/rng.h"
#include "reference/ref_ops.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const weights_names[] = {"checkpoint", "random", "pm127", "constant", "zero-row"};
static const char *const acts_names[] = {"gaussian", "outliers", "zero-rows", "bf16-limit"};

const char *ctq_probe_weights_name(enum ctq_probe_weights w) { return weights_names[w]; }
const char *ctq_probe_acts_name(enum ctq_probe_acts a) { return acts_names[a]; }

bool ctq_probe_weights_parse(const char *s, enum ctq_probe_weights *out)
{
	long i = ctq_str_index(s, weights_names, CTQ_PW_COUNT);
	if (i >= 0)
		*out = (enum ctq_probe_weights)i;
	return i >= 0;
}

bool ctq_probe_acts_parse(const char *s, enum ctq_probe_acts *out)
{
	long i = ctq_str_index(s, acts_names, CTQ_PA_COUNT);
	if (i >= 0)
		*out = (enum ctq_probe_acts)i;
	return i >= 0;
}

/* The thresholds of root (a policy object) over *p; file names it in
 * errors. */
static enum ctq_status policy_apply(void *policy, const cJSON *root, const char *file,
				    struct ctq_error *err)
{
	struct ctq_probe_policy *p = policy;
	if (!cJSON_IsObject(root))
		return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, file, "a policy is a JSON object");
	const cJSON *k = ctq_json_get(root, "kernel_rel_l2_max");
	if (k) {
		if (!cJSON_IsNumber(k) || k->valuedouble < 0)
			return ctq_error_set(err, CTQ_ERR_USAGE, "kernel_rel_l2_max",
					     "must be a non-negative number (in %s)", file);
		p->kernel_rel_l2_max = k->valuedouble;
	}
	const cJSON *q = ctq_json_get(root, "quant_rel_l2_max");
	for (const cJSON *c = root->child; c; c = c->next)
		if (strcmp(c->string, "about") && strcmp(c->string, "kernel_rel_l2_max") &&
		    strcmp(c->string, "quant_rel_l2_max"))
			return ctq_error_set(err, CTQ_ERR_USAGE, c->string,
					     "unknown key in probe policy %s (about, kernel_rel_l2_max, quant_rel_l2_max)",
					     file);
	for (const cJSON *c = q ? q->child : NULL; c; c = c->next) {
		enum ctq_probe_acts a;
		if (!ctq_probe_acts_parse(c->string, &a) || !(cJSON_IsNumber(c) || cJSON_IsNull(c)))
			return ctq_error_set(err, CTQ_ERR_USAGE, c->string,
					     "quant_rel_l2_max takes gaussian, outliers, zero-rows, bf16-limit: a number or null (in %s)",
					     file);
		p->quant_rel_l2_max[a] = cJSON_IsNull(c) ? -1.0 : c->valuedouble;
	}
	return CTQ_OK;
}

/* The built-in policy is policies/probe.json itself, embedded by the build
 * (core/policy.h): why each number is what it is lives there. A broken
 * embedded file leaves every threshold 0 (nothing passes) and says so in
 * source; tests/test_policies.c checks it parses and equals the file. */
void ctq_probe_policy_default(struct ctq_probe_policy *p)
{
	ctq_policy_default(p, sizeof *p, CTQ_PROBE_POLICY_FILE, policy_apply, p->source);
}

enum ctq_status ctq_probe_policy_load(struct ctq_probe_policy *p, const char *path,
				      struct ctq_error *err)
{
	return ctq_policy_load(p, path, policy_apply, p->source, err);
}

/* The weights of one (layer, weight pattern, activation pattern): drawn
 * once and shared by the probes of every M of a session's list (their
 * random stream is seeded without M and draws the weights first; rng is
 * its state after them, where each probe's activations begin). */
struct wbufs {
	float *w_orig; /* (N, K) unquantized weights */
	int8_t *wq;    /* (N, K) int8 */
	float *sw;     /* (N) */
	struct ctq_rng rng;
};

/* The rest of one probe's host side. */
struct bufs {
	float *x_f;      /* (M, K) activations after BF16 rounding */
	uint16_t *x;     /* (M, K) bf16 */
	float *bias;     /* (N) or NULL */
	int8_t *q;       /* (M, K) */
	float *sa;       /* (M) */
	int32_t *acc;    /* (M, N) */
	uint16_t *y_ref; /* (M, N) */
	uint16_t *y;     /* (M, N) */
	double *y64;     /* (M, N) */
};

/* A block of host memory kept between probes: a probe run is hundreds of
 * probes over a few geometries, and a few hundred MB of fresh pages each
 * time cost more than the arithmetic (the kernel clears every new page). */
struct slab {
	void *p;
	size_t cap;
};

/* The blocks of this thread's probes, kept for its next ones: two of
 * weights and two of the rest, so that one probe's inputs are made while
 * the previous one runs (ctq_probe_run_jobs); ctq_probe_release frees them. */
static _Thread_local struct {
	struct slab w[2], a[2];
} kept;

static void slab_free(struct slab *s)
{
	free(s->p);
	s->p = NULL;
	s->cap = 0;
}

void ctq_probe_release(void)
{
	for (int i = 0; i < 2; i++) {
		slab_free(&kept.w[i]);
		slab_free(&kept.a[i]);
	}
}

/* n blocks of sizes[i] bytes carved from s (grown when needed, 64-byte
 * aligned, zero-filled as fresh memory is) into out[i]; false when memory
 * runs out. */
static bool carve(struct slab *s, const size_t *sizes, int n, char **out)
{
	size_t off[16], need = 0;
	for (int i = 0; i < n; i++) {
		off[i] = need;
		if (sizes[i] > SIZE_MAX - need - 64)
			return false;
		need += (sizes[i] + 63) & ~(size_t)63;
	}
	if (need > s->cap) {
		slab_free(s);
		if (!(s->p = ctq_malloc(need ? need : 1)))
			return false;
		s->cap = need;
	}
	/* in parallel: a geometry the size of a vocabulary is GBs */
	const size_t chunk = (size_t)1 << 22, n_chunks = (need + chunk - 1) / chunk;
#pragma omp parallel for schedule(static)
	for (size_t c = 0; c < n_chunks; c++)
		memset((char *)s->p + c * chunk, 0, c + 1 < n_chunks ? chunk : need - c * chunk);
	for (int i = 0; i < n; i++)
		out[i] = (char *)s->p + off[i];
	return true;
}

static bool alloc_wbufs(struct slab *s, struct wbufs *w, int64_t N, int64_t K)
{
	const size_t nk = (size_t)(N * K);
	const size_t sizes[3] = {nk * sizeof *w->w_orig, nk, (size_t)N * sizeof *w->sw};
	char *o[3];
	if (!carve(s, sizes, 3, o))
		return false;
	w->w_orig = (float *)o[0];
	w->wq = (int8_t *)o[1];
	w->sw = (float *)o[2];
	return true;
}

/* b's buffers for an (M, K) x (N, K)^T probe; false when memory runs out. */
static bool alloc_bufs(struct slab *s, struct bufs *b, int64_t M, int64_t N, int64_t K, bool want_bias)
{
	const size_t mk = (size_t)(M * K), mn = (size_t)(M * N);
	const size_t sizes[9] = {mk * sizeof *b->x_f, mk * sizeof *b->x, mk, (size_t)M * sizeof *b->sa,
				 mn * sizeof *b->acc, mn * sizeof *b->y_ref, mn * sizeof *b->y,
				 mn * sizeof *b->y64, want_bias ? (size_t)N * sizeof *b->bias : 0};
	char *o[9];
	if (!carve(s, sizes, 9, o))
		return false;
	b->x_f = (float *)o[0];
	b->x = (uint16_t *)o[1];
	b->q = (int8_t *)o[2];
	b->sa = (float *)o[3];
	b->acc = (int32_t *)o[4];
	b->y_ref = (uint16_t *)o[5];
	b->y = (uint16_t *)o[6];
	b->y64 = (double *)o[7];
	b->bias = want_bias ? (float *)o[8] : NULL;
	return true;
}

/* false when memory runs out */
static bool make_weights(struct wbufs *b, const struct ctq_probe_layer *L,
			 enum ctq_probe_weights wp, struct ctq_rng *rng)
{
	const int64_t N = L->N, K = L->K;
	if (wp == CTQ_PW_CHECKPOINT && L->wq) {
		/* Already quantized: the unquantized yardstick is the dequantized
		 * weight, so the quantization error is the activations' alone. */
		memcpy(b->sw, L->sw, (size_t)N * sizeof(float));
		/* rows in parallel: a 4B checkpoint is 4e9 of these */
#pragma omp parallel for schedule(static)
		for (int64_t n = 0; n < N; n++) {
			memcpy(b->wq + n * K, L->wq + n * K, (size_t)K);
			for (int64_t k = 0; k < K; k++)
				b->w_orig[n * K + k] = (float)L->wq[n * K + k] * L->sw[n];
		}
		return true;
	}
	if (wp == CTQ_PW_CHECKPOINT) {
#pragma omp parallel for schedule(static)
		for (int64_t n = 0; n < N; n++)
			memcpy(b->w_orig + n * K, L->w + n * K, (size_t)K * sizeof(float));
		uint16_t *sb = ctq_malloc((size_t)N * sizeof *sb);
		if (!sb)
			return false;
		ctq_ref_quantize_weight_rows(L->w, N, K, b->wq, sb);
		for (int64_t n = 0; n < N; n++)
			b->sw[n] = ctq_bf16_to_f32(sb[n]);
		free(sb);
		return true;
	}
	ctq_probe_draw_weights(b->wq, b->w_orig, b->sw, N, K, wp, rng);
	return true;
}

/* Row n of a synthetic pattern: its scale, then its K values, from r. */
static void draw_row(int8_t *wq, float *w_orig, float *sw, int64_t n, int64_t N, int64_t K,
		     enum ctq_probe_weights wp, struct ctq_rng *r)
{
	/* Scales of a typical linear (|w| up to ~0.05), varied per channel. */
	sw[n] = (float)((0.5 + ctq_rng_uniform(r)) * 0.05 / 127.0);
	for (int64_t k = 0; k < K; k++) {
		int v;
		switch (wp) {
		case CTQ_PW_PM127: v = (ctq_rng_next(r) & 1) ? 127 : -127; break;
		case CTQ_PW_CONSTANT: v = 64; break;
		default: v = (int)ctq_rng_below(r, 255) - 127;
		}
		if (wp == CTQ_PW_ZERO_ROW && n == N / 2)
			v = 0;
		wq[n * K + k] = (int8_t)v;
		w_orig[n * K + k] = (float)v * sw[n];
	}
}

void ctq_probe_draw_weights(int8_t *wq, float *w_orig, float *sw, int64_t N, int64_t K,
			    enum ctq_probe_weights wp, struct ctq_rng *rng)
{
	/* One stream, row after row, as a serial loop draws it: row n starts
	 * n * per_row draws in (one for the scale, one per value but for the
	 * constant pattern), so blocks of rows run on every core, each from
	 * its own jump into the stream (core/rng.c), and every value is the
	 * serial loop's. A block is about 2^20 values: jumping costs ~20 us. */
	const uint64_t per_row = 1 + (wp == CTQ_PW_CONSTANT ? 0 : (uint64_t)K);
	const int64_t rows = K < (1 << 20) ? (1 << 20) / K : 1;
	const int64_t blocks = (N + rows - 1) / rows;
	const struct ctq_rng start = *rng;
#pragma omp parallel for schedule(dynamic)
	for (int64_t bi = 0; bi < blocks; bi++) {
		struct ctq_rng r = start;
		ctq_rng_jump(&r, (uint64_t)(bi * rows) * per_row);
		for (int64_t n = bi * rows; n < N && n < (bi + 1) * rows; n++)
			draw_row(wq, w_orig, sw, n, N, K, wp, &r);
	}
	ctq_rng_jump(rng, (uint64_t)N * per_row);
}

void ctq_probe_make_acts(uint16_t *x, float *x_f, int64_t M, int64_t K, enum ctq_probe_acts ap,
			 struct ctq_rng *rng)
{
	int64_t n_out = K / 100 > 0 ? K / 100 : 1;
	for (int64_t m = 0; m < M; m++) {
		for (int64_t k = 0; k < K; k++) {
			double v = ctq_rng_normal(rng);
			if (ap == CTQ_PA_OUTLIERS && (k * 7919) % K < n_out)
				v *= 100.0;
			if (ap == CTQ_PA_ZERO_ROWS && m % 4 == 0)
				v = 0.0;
			if (ap == CTQ_PA_BF16_LIMIT)
				v = (ctq_rng_next(rng) & 1 ? 1.0 : -1.0) * (1.7e38 + ctq_rng_uniform(rng) * 1.69e38);
			uint16_t h = ctq_f32_to_bf16((float)v);
			if ((h & 0x7f80) == 0x7f80) /* never Inf from the generator itself */
				h = (uint16_t)((h & 0x8000) | 0x7f7f);
			x[m * K + k] = h;
			x_f[m * K + k] = ctq_bf16_to_f32(h);
		}
	}
}

static uint32_t f32_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	return u;
}

/* The backend's own quantize of d_x against the reference's q and s, bit
 * for bit (b->exact & CTQ_EXACT_QUANT); the first mismatch goes into
 * where (cap bytes). */
static enum ctq_status exact_quant(struct ctq_backend *be, const void *d_x, int64_t M, int64_t K,
				   const struct bufs *b, struct ctq_probe_result *r, char *where,
				   size_t cap, struct ctq_error *err)
{
	const struct ctq_backend_ops *o = be->ops;
	const size_t mk = (size_t)(M * K);
	int8_t *q = ctq_malloc(mk);
	float *s = ctq_malloc((size_t)M * sizeof *s);
	void *d_q = NULL, *d_s = NULL;
	enum ctq_status st = CTQ_OK;
	if (!q || !s) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, r->layer, "out of memory for the bit-exact check");
		goto done;
	}
	if ((st = o->alloc(be, mk, &d_q, err)) || (st = o->alloc(be, (size_t)M * 4, &d_s, err)) ||
	    (st = o->quantize(be, d_x, M, K, d_q, d_s, err)) || (st = o->download(be, q, d_q, mk, err)) ||
	    (st = o->download(be, s, d_s, (size_t)M * 4, err)))
		goto done;
	r->q_mismatch = r->s_mismatch = 0;
	for (int64_t m = 0; m < M; m++) {
		if (f32_bits(s[m]) != f32_bits(b->sa[m]) && !r->s_mismatch++ && !where[0])
			snprintf(where, cap, "s[%lld] = %.9g, reference %.9g", (long long)m, s[m], b->sa[m]);
		for (int64_t k = 0; k < K; k++)
			if (q[m * K + k] != b->q[m * K + k] && !r->q_mismatch++ && !where[0])
				snprintf(where, cap, "q[%lld, %lld] = %d, reference %d", (long long)m,
					 (long long)k, q[m * K + k], b->q[m * K + k]);
	}
done:
	if (be->ops) {
		o->free(be, d_q);
		o->free(be, d_s);
	}
	free(q);
	free(s);
	return st;
}

/* y against the reference bit for bit (b->exact & CTQ_EXACT_OUTPUT). */
static void exact_output(const struct bufs *b, int64_t M, int64_t N, struct ctq_probe_result *r,
			 char *where, size_t cap)
{
	r->y_mismatch = 0;
	for (int64_t i = 0; i < M * N; i++) {
		bool both_nan = (b->y[i] & 0x7fff) > 0x7f80 && (b->y_ref[i] & 0x7fff) > 0x7f80;
		if (b->y[i] != b->y_ref[i] && !both_nan && !r->y_mismatch++ && !where[0])
			snprintf(where, cap, "y[%lld, %lld] = 0x%04x, reference 0x%04x", (long long)(i / N),
				 (long long)(i % N), b->y[i], b->y_ref[i]);
	}
}

/* The backend under test on b's inputs: b->y, and the bit-exact checks it
 * declares (first mismatches into qwhere and ywhere, cap bytes each). */
static enum ctq_status run_backend(struct ctq_backend *be, const struct wbufs *w, struct bufs *b,
				   int64_t M, int64_t N, int64_t K, struct ctq_probe_result *r,
				   char *qwhere, char *ywhere, size_t cap, struct ctq_error *err)
{
	const struct ctq_backend_ops *o = be->ops;
	size_t mk = (size_t)(M * K), nk = (size_t)(N * K), mn = (size_t)(M * N);
	size_t ws = ctq_w8a8_workspace_bytes(M, K);
	void *d_x = NULL, *d_w = NULL, *d_sw = NULL, *d_bias = NULL, *d_y = NULL, *d_ws = NULL;
	enum ctq_status st;
	if ((st = o->alloc(be, mk * 2, &d_x, err)) || (st = o->alloc(be, nk, &d_w, err)) ||
	    (st = o->alloc(be, (size_t)N * 4, &d_sw, err)) ||
	    (b->bias && (st = o->alloc(be, (size_t)N * 4, &d_bias, err))) ||
	    (st = o->alloc(be, mn * 2, &d_y, err)) || (st = o->alloc(be, ws, &d_ws, err)) ||
	    (st = o->upload(be, d_x, b->x, mk * 2, err)) || (st = o->upload(be, d_w, w->wq, nk, err)) ||
	    (st = o->upload(be, d_sw, w->sw, (size_t)N * 4, err)) ||
	    (b->bias && (st = o->upload(be, d_bias, b->bias, (size_t)N * 4, err))) ||
	    (st = o->w8a8_linear(be, d_x, d_w, d_sw, d_bias, M, N, K, d_y, d_ws, err)) ||
	    (st = o->download(be, b->y, d_y, mn * 2, err)))
		goto done;
	if ((be->exact & CTQ_EXACT_QUANT) &&
	    (st = exact_quant(be, d_x, M, K, b, r, qwhere, cap, err)))
		goto done;
	if (be->exact & CTQ_EXACT_OUTPUT)
		exact_output(b, M, N, r, ywhere, cap);
done:
	if (be->ops) {
		be->ops->free(be, d_x);
		be->ops->free(be, d_w);
		be->ops->free(be, d_sw);
		be->ops->free(be, d_bias);
		be->ops->free(be, d_y);
		be->ops->free(be, d_ws);
	}
	return st;
}

bool ctq_probe_compare_outputs(const uint16_t *y, const uint16_t *y_ref, const double *y64,
			       int64_t mn, int64_t N, struct ctq_probe_result *r)
{
	double num = 0, den = 0, qnum = 0, qden = 0;
	bool any_nonzero = false, ref_nonzero = false;
	r->max_m = r->max_n = -1;
	for (int64_t i = 0; i < mn; i++) {
		double got = ctq_bf16_to_f32(y[i]), ref = ctq_bf16_to_f32(y_ref[i]);
		if (isnan(got))
			r->nan_count++;
		else if (isinf(got))
			r->inf_count++;
		if (got != 0)
			any_nonzero = true;
		if (ref != 0)
			ref_nonzero = true;
		bool fg = isfinite(got), fr = isfinite(ref);
		if (fg != fr || (!fg && !fr && !(isnan(got) && isnan(ref)) && got != ref)) {
			r->nonfinite_mismatch++;
			continue;
		}
		if (!fg)
			continue;
		double d = got - ref;
		num += d * d;
		den += ref * ref;
		if (fabs(d) > r->max_abs_err || r->max_m < 0) {
			r->max_abs_err = fabs(d);
			r->max_m = i / N;
			r->max_n = i % N;
			r->ref_at_max = ref;
			r->got_at_max = got;
		}
		if (isfinite(y64[i])) {
			double e = got - y64[i];
			qnum += e * e;
			qden += y64[i] * y64[i];
		}
	}
	r->all_zero = !any_nonzero && ref_nonzero;
	r->kernel_rel_l2 = den > 0 ? sqrt(num / den) : (num > 0 ? INFINITY : 0.0);
	r->quant_rel_l2 = qden > 0 ? sqrt(qnum / qden) : NAN;
	return ref_nonzero;
}

/* r->passed and r->reason from the measured r: the first reason wins. */
static void judge(struct ctq_probe_result *r, const char *layer,
		  const struct ctq_probe_policy *policy, bool ref_nonzero, int64_t mn,
		  const char *qwhere, const char *ywhere)
{
	const double qmax = policy->quant_rel_l2_max[r->acts];
	/* Constant weights make every output channel the same plain sum of a
	 * row's activations: rel-L2 to the FP64 product divides the rounding
	 * of K activations by |sum x|, which cancellation makes as small as it
	 * likes (Qwen-Image's 256:3072 at M = 1, gaussian: 0.080; its 3072:6144,
	 * outliers: 1.37). Their quantization error is reported, not judged; the
	 * kernel is still held to the exact reference. */
	const double qjudge = r->weights == CTQ_PW_CONSTANT ? -1.0 : qmax;
	r->passed = true;
	if (r->nonfinite_mismatch)
		snprintf(r->reason, sizeof r->reason,
			 "%s: %lld output(s) NaN/Inf where the reference is finite, or the reverse (NaN %lld, Inf %lld)",
			 layer, (long long)r->nonfinite_mismatch, (long long)r->nan_count,
			 (long long)r->inf_count);
	else if (r->all_zero)
		snprintf(r->reason, sizeof r->reason, "%s: the output is all zero; the reference is not",
			 layer);
	else if (r->q_mismatch > 0 || r->s_mismatch > 0)
		snprintf(r->reason, sizeof r->reason,
			 "%s: bit-exact quantize (declared by the backend): %lld q and %lld scale(s) differ from the reference; first %s",
			 layer, (long long)r->q_mismatch, (long long)r->s_mismatch, qwhere);
	else if (r->y_mismatch > 0)
		snprintf(r->reason, sizeof r->reason,
			 "%s: bit-exact output (declared by the backend): %lld of %lld outputs differ from the reference; first %s",
			 layer, (long long)r->y_mismatch, (long long)mn, ywhere);
	else if (policy->kernel_rel_l2_max >= 0 && !(r->kernel_rel_l2 <= policy->kernel_rel_l2_max))
		snprintf(r->reason, sizeof r->reason,
			 "%s: kernel rel-L2 %.3g > %.3g; worst at [%lld, %lld]: %g, reference %g",
			 layer, r->kernel_rel_l2, policy->kernel_rel_l2_max, (long long)r->max_m,
			 (long long)r->max_n, r->got_at_max, r->ref_at_max);
	else if (qjudge >= 0 && !(r->quant_rel_l2 <= qjudge))
		snprintf(r->reason, sizeof r->reason,
			 "%s: quantization rel-L2 %.3g > %.3g (vs the FP64 unquantized product)",
			 layer, r->quant_rel_l2, qmax);
	else if (!ref_nonzero && qmax >= 0 && r->weights != CTQ_PW_ZERO_ROW)
		snprintf(r->reason, sizeof r->reason,
			 "%s: the reference output is all zero, so the comparison proves nothing",
			 layer);
	r->passed = r->reason[0] == '\0';
}

/* One probe's inputs and CPU oracle: what ctq_probe_run_jobs computes
 * for the next probe on a worker thread while the current one runs. */
struct prep {
	const struct ctq_probe_layer *L;
	struct ctq_probe_job job;
	uint64_t seed;
	bool draw;        /* draw the weights into *w (the first probe of its pair) */
	struct wbufs *w;  /* the pair's weights */
	struct slab *ws;  /* their memory, when drawn */
	struct slab *as;  /* the memory of b */
	struct bufs b;    /* filled */
	enum ctq_status st;
	struct ctq_error err;
};

/* Fills p->b (and p->w when p->draw) as one probe always did: the random
 * stream seeded by (seed, weights, acts, K, N), weights first, then the
 * activations, then the bias; then the oracle, once for every backend:
 * the exact-quantized reference and the FP64 product. */
static void prepare(struct prep *p)
{
	const struct ctq_probe_layer *L = p->L;
	const int64_t N = L->N, K = L->K, M = p->job.M;
	const enum ctq_probe_weights wp = p->job.weights;
	const enum ctq_probe_acts ap = p->job.acts;
	const uint64_t job_seed = p->seed ^ ((uint64_t)wp << 40) ^ ((uint64_t)ap << 48) ^ (uint64_t)(K * 131 + N);
	memset(&p->err, 0, sizeof p->err);
	p->st = CTQ_OK;
	if (p->draw) {
		if (!alloc_wbufs(p->ws, p->w, N, K))
			goto nomem;
		ctq_rng_seed(&p->w->rng, job_seed);
		if (!make_weights(p->w, L, wp, &p->w->rng))
			goto nomem;
	}
	struct bufs *b = &p->b;
	if (!alloc_bufs(p->as, b, M, N, K, wp != CTQ_PW_CHECKPOINT || L->bias))
		goto nomem;
	/* the activations continue the weights' stream; checkpoint weights
	 * draw nothing (and serve every activation pattern), so theirs start
	 * at the job's seed */
	struct ctq_rng rng = p->w->rng;
	if (wp == CTQ_PW_CHECKPOINT)
		ctq_rng_seed(&rng, job_seed);
	ctq_probe_make_acts(b->x, b->x_f, M, K, ap, &rng);
	if (b->bias) {
		for (int64_t n = 0; n < N; n++)
			b->bias[n] = L->bias ? L->bias[n] : (float)(0.1 * ctq_rng_normal(&rng));
	}
	ctq_ref_quantize_bf16(b->x, M, K, b->q, b->sa);
	if ((p->st = ctq_ref_gemm_i8(b->q, p->w->wq, M, N, K, b->acc, &p->err)))
		return;
	ctq_ref_w8a8_epilogue(b->acc, b->sa, p->w->sw, b->bias, M, N, b->y_ref);
	ctq_ref_gemm_f64(b->x_f, p->w->w_orig, b->bias, M, N, K, b->y64);
	return;
nomem:
	p->st = ctq_error_set(&p->err, CTQ_ERR_NOMEM, L->name, "out of memory for M=%lld K=%lld N=%lld",
			      (long long)M, (long long)K, (long long)N);
}

static void *prepare_thread(void *arg)
{
	prepare(arg);
	return NULL;
}

/* The backends held to p's oracle: res (n_be). */
static enum ctq_status finish(struct prep *p, struct ctq_backend *const *bes, int n_be,
			      const struct ctq_probe_policy *policy, struct ctq_probe_result *res,
			      struct ctq_error *err)
{
	const struct ctq_probe_layer *L = p->L;
	const int64_t N = L->N, K = L->K, M = p->job.M;
	enum ctq_status st = CTQ_OK;
	for (int i = 0; i < n_be && !st; i++) {
		struct ctq_probe_result *r = &res[i];
		struct ctq_backend *be = bes[i];
		memset(r, 0, sizeof *r);
		snprintf(r->layer, sizeof r->layer, "%s", L->name);
		snprintf(r->backend, sizeof r->backend, "%s%s", be->ops->name,
			 be->act_numerics == CTQ_ACT_NUMERICS_TRANSFORMERS ? "+transformers" : "");
		snprintf(r->kernel_path, sizeof r->kernel_path, "%s",
			 be->ops->w8a8_path ? be->ops->w8a8_path(be, M, N, K) : be->ops->name);
		r->K = K;
		r->N = N;
		r->M = M;
		r->weights = p->job.weights;
		r->acts = p->job.acts;
		r->q_mismatch = r->s_mismatch = r->y_mismatch = -1;
		char qwhere[160] = "", ywhere[160] = "";
		if ((st = run_backend(be, p->w, &p->b, M, N, K, r, qwhere, ywhere, sizeof qwhere, err)))
			break;
		bool ref_nonzero = ctq_probe_compare_outputs(p->b.y, p->b.y_ref, p->b.y64, M * N, N, r);
		judge(r, L->name, policy, ref_nonzero, M * N, qwhere, ywhere);
	}
	return st;
}

/* p's error into err (the first error wins there). */
static enum ctq_status prep_error(const struct prep *p, struct ctq_error *err)
{
	return ctq_error_set(err, p->st, p->err.path, "%s", p->err.message);
}

enum ctq_status ctq_probe_run_jobs(struct ctq_backend *const *bes, int n_be,
				   const struct ctq_probe_layer *L, const struct ctq_probe_job *jobs,
				   size_t n_jobs, uint64_t seed, const struct ctq_probe_policy *policy,
				   bool overlap, ctq_probe_results_fn on_results, void *ctx,
				   struct ctq_error *err)
{
	for (size_t j = 0; j < n_jobs; j++)
		if (jobs[j].weights == CTQ_PW_CHECKPOINT && !L->w && !(L->wq && L->sw))
			return ctq_error_set(err, CTQ_ERR_USAGE, L->name, "has no checkpoint weights to probe");
	if (!n_jobs)
		return CTQ_OK;
	struct ctq_probe_result *res = ctq_calloc(n_be > 0 ? (size_t)n_be : 1, sizeof *res);
	if (!res)
		return ctq_error_set(err, CTQ_ERR_NOMEM, L->name, "out of memory");
	/* job j: its rest in kept.a[j % 2]; the weights of its run of equal
	 * (weights, acts), or of equal checkpoint weights, in wsets and kept.w at the run's index % 2, which
	 * the run before last (all of its probes finished) held */
	struct wbufs wsets[2];
	struct prep preps[2];
	size_t run = 0;
	memset(wsets, 0, sizeof wsets);
	preps[0] = (struct prep){.L = L, .job = jobs[0], .seed = seed, .draw = true, .w = &wsets[0],
				 .ws = &kept.w[0], .as = &kept.a[0]};
	prepare(&preps[0]);
	enum ctq_status st = preps[0].st ? prep_error(&preps[0], err) : CTQ_OK;
	for (size_t j = 0; j < n_jobs && !st; j++) {
		struct prep *cur = &preps[j % 2], *next = NULL;
		pthread_t worker;
		bool started = false;
		if (j + 1 < n_jobs) {
			/* synthetic weights are drawn per (weights, acts); a
			 * checkpoint's are the same for every activation pattern */
			const bool new_run = jobs[j + 1].weights != jobs[j].weights ||
					     (jobs[j + 1].acts != jobs[j].acts &&
					      jobs[j].weights != CTQ_PW_CHECKPOINT);
			run += new_run;
			next = &preps[(j + 1) % 2];
			*next = (struct prep){.L = L, .job = jobs[j + 1], .seed = seed, .draw = new_run,
					      .w = &wsets[run % 2], .ws = &kept.w[run % 2],
					      .as = &kept.a[(j + 1) % 2]};
			/* where no thread can be started, the next one is
			 * prepared after this one, as without overlap */
			started = overlap && !pthread_create(&worker, NULL, prepare_thread, next);
		}
		st = finish(cur, bes, n_be, policy, res, err);
		if (!st && on_results)
			on_results(ctx, res, n_be);
		if (started)
			pthread_join(worker, NULL);
		else if (next && !st)
			prepare(next);
		if (!st && next && next->st)
			st = prep_error(next, err);
	}
	free(res);
	return st;
}

/* on_results of ctq_probe_run_many: the results into ctx. */
static void copy_results(void *ctx, const struct ctq_probe_result *res, int n_be)
{
	memcpy(ctx, res, (size_t)n_be * sizeof *res);
}

enum ctq_status ctq_probe_run_many(struct ctq_backend *const *bes, int n_be,
				   const struct ctq_probe_layer *L, enum ctq_probe_weights wp,
				   enum ctq_probe_acts ap, int64_t M, uint64_t seed,
				   const struct ctq_probe_policy *policy, struct ctq_probe_result *res,
				   struct ctq_error *err)
{
	const struct ctq_probe_job job = {wp, ap, M};
	return ctq_probe_run_jobs(bes, n_be, L, &job, 1, seed, policy, false, copy_results, res, err);
}

enum ctq_status ctq_probe_run(struct ctq_backend *be, const struct ctq_probe_layer *L,
			      enum ctq_probe_weights wp, enum ctq_probe_acts ap, int64_t M,
			      uint64_t seed, const struct ctq_probe_policy *policy,
			      struct ctq_probe_result *r, struct ctq_error *err)
{
	return ctq_probe_run_many(&be, 1, L, wp, ap, M, seed, policy, r, err);
}
