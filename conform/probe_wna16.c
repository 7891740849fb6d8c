/* Probes of weight-only kernel plug-ins (see probe_wna16.h). */
#include "conform/probe_wna16.h"
#include "backend/plugin.h"
#include "checkpoint/packed.h"
#include "checkpoint/quantize_wna16.h"
#include "checkpoint/target.h"
#include "core/arena.h"
#include "core/numerics.h"
#include "core/rng.h"
#include "core/split.h"
#include "reference/ref_ops.h"
#include "reference/ref_wna16.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool ctq_wna16_cfg_parse(const char *s, struct ctq_wna16_cfg *out)
{
	memset(out, 0, sizeof *out);
	if (strncmp(s, "w4a16", 5) && strncmp(s, "w8a16", 5))
		return false;
	out->bits = s[1] - '0';
	const char *p = s + 5;
	if (!strncmp(p, "-asym", 5)) {
		out->asym = true;
		p += 5;
	}
	if (!strncmp(p, "-g", 2)) {
		char *end;
		long g = strtol(p + 2, &end, 10);
		if (end == p + 2 || g < 1 || g > (1L << 20))
			return false;
		out->group_size = g;
		p = end;
	}
	if (*p || strlen(s) >= sizeof out->name)
		return false;
	snprintf(out->name, sizeof out->name, "%s", s);
	return true;
}

bool ctq_wna16_cfg_declared(uint32_t caps, const struct ctq_wna16_cfg *c)
{
	return (caps & (c->bits == 4 ? CTQ_KERNEL_PLUGIN_WNA16_INT4 : CTQ_KERNEL_PLUGIN_WNA16_INT8)) &&
	       (!c->group_size || (caps & CTQ_KERNEL_PLUGIN_WNA16_GROUPS)) &&
	       (!c->asym || (caps & CTQ_KERNEL_PLUGIN_WNA16_ASYM));
}

bool ctq_wna16_cfg_fits(const struct ctq_wna16_cfg *c, int64_t K)
{
	return !c->group_size || K % c->group_size == 0;
}

enum ctq_status ctq_wna16_layouts(const struct ctq_kernel_plugin *pt, const char *path, const char *list,
				  struct ctq_wna16_cfg *cfgs, int *n, struct ctq_error *err)
{
	*n = 0;
	if (!pt->gemm_wna16)
		return list ? ctq_error_set(err, CTQ_ERR_USAGE, path,
					    "--wna16: the plug-in %s has no gemm_wna16 (ABI version 2)",
					    pt->name)
			    : CTQ_OK;
	if (!list) {
		*n = ctq_wna16_cfg_defaults(pt->caps, cfgs);
		return *n ? CTQ_OK
			  : ctq_error_set(err, CTQ_ERR_USAGE, path,
					  "the weight-only plug-in %s declares none of the default layouts "
					  "(w4a16-g128, w4a16-asym-g128, w8a16): name them with --wna16",
					  pt->name);
	}
	char buf[512];
	const char *items[CTQ_WNA16_MAX_LAYOUTS];
	const int count = ctq_split_list("--wna16", list, buf, sizeof buf, items, CTQ_WNA16_MAX_LAYOUTS, err);
	if (count < 0)
		return err->status;
	for (int i = 0; i < count; i++) {
		if (!ctq_wna16_cfg_parse(items[i], &cfgs[i]))
			return ctq_error_set(err, CTQ_ERR_USAGE, "--wna16",
					     "\"%s\" is not a layout w4a16[-asym][-gG] or w8a16[-asym][-gG]",
					     items[i]);
		if (!ctq_wna16_cfg_declared(pt->caps, &cfgs[i]))
			return ctq_error_set(err, CTQ_ERR_USAGE, "--wna16",
					     "%s is not declared by plug-in %s's capability bits", items[i],
					     pt->name);
	}
	*n = count;
	return CTQ_OK;
}

int ctq_wna16_cfg_defaults(uint32_t caps, struct ctq_wna16_cfg *out)
{
	static const char *const names[] = {"w4a16-g128", "w4a16-asym-g128", "w8a16"};
	int n = 0;
	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		if (ctq_wna16_cfg_parse(names[i], &out[n]) && ctq_wna16_cfg_declared(caps, &out[n]))
			n++;
	return n;
}

/* The host side of one probe. */
struct wbufs {
	uint16_t *x;      /* (M, K) bf16 */
	float *x_f;       /* (M, K) */
	int8_t *q;        /* (N, K) codes */
	float *w_orig;    /* (N, K) the unquantized (or dequantized) weights */
	int32_t *packed;  /* (N, words) */
	float *scale;     /* (N, n_groups) f32 as the plug-in gets it */
	int8_t *zero;     /* (N, n_groups) */
	int32_t *zpacked; /* (zrows, n_groups) or NULL */
	float *bias;      /* (N) */
	uint16_t *y_ref, *y; /* (M, N) */
	double *y64;      /* (M, N) */
};

static void wbufs_free(struct wbufs *b)
{
	ctq_free(b->x);
	ctq_free(b->x_f);
	ctq_free(b->q);
	ctq_free(b->w_orig);
	ctq_free(b->packed);
	ctq_free(b->scale);
	ctq_free(b->zero);
	ctq_free(b->zpacked);
	ctq_free(b->bias);
	ctq_free(b->y_ref);
	ctq_free(b->y);
	ctq_free(b->y64);
}

/* Synthetic codes and their scales and zero points, or L->w quantized by
 * ctq's producer; w_orig what the FP64 product multiplies. */
static enum ctq_status make_weights(struct wbufs *b, const struct ctq_probe_layer *L,
				    const struct ctq_wna16_cfg *c, enum ctq_probe_weights wp,
				    struct ctq_rng *rng, struct ctq_error *err)
{
	const int64_t N = L->N, K = L->K, G = ctq_packed_groups(K, c->group_size);
	const int64_t gs = c->group_size ? c->group_size : K;
	const int qmin = ctq_wna16_qmin(c->bits), qmax = ctq_wna16_qmax(c->bits);
	if (wp == CTQ_PW_CHECKPOINT) {
		const struct ctq_packed_args a = {c->bits, c->group_size, c->asym};
		double *e2 = ctq_malloc((size_t)N * sizeof *e2), *w2 = ctq_malloc((size_t)N * sizeof *w2);
		int64_t bad = e2 && w2 ? ctq_wna16_quantize_weight(L->w, CTQ_DTYPE_F32, N, K, &a, b->packed,
								   b->scale, b->zpacked, e2, w2)
				       : -2;
		ctq_free(e2);
		ctq_free(w2);
		if (bad == -2)
			return ctq_error_set(err, CTQ_ERR_NOMEM, L->name, "out of memory");
		if (bad >= 0)
			return ctq_error_set(err, CTQ_ERR_CHECKPOINT, L->name,
					     "row %lld holds NaN or Inf", (long long)bad);
		memcpy(b->w_orig, L->w, (size_t)(N * K) * sizeof *b->w_orig);
		return CTQ_OK;
	}
	for (int64_t n = 0; n < N; n++)
		for (int64_t g = 0; g < G; g++) {
			/* |w| up to ~0.05 as in a typical linear, varied per group */
			b->scale[n * G + g] = (float)((0.5 + ctq_rng_uniform(rng)) * 0.05 / qmax);
			b->zero[n * G + g] = c->asym ? (int8_t)((int)ctq_rng_below(rng, (uint64_t)(qmax + 1)) - qmax / 2)
						     : 0;
		}
	for (int64_t n = 0; n < N; n++)
		for (int64_t k = 0; k < K; k++) {
			const int64_t g = k / gs;
			const int z = b->zero[n * G + g];
			int v;
			switch (wp) {
			case CTQ_PW_PM127: v = (ctq_rng_next(rng) & 1) ? qmax : qmin; break;
			case CTQ_PW_CONSTANT: v = (qmax + 1) / 2; break;
			default: v = qmin + (int)ctq_rng_below(rng, (uint64_t)(qmax - qmin + 1));
			}
			if (wp == CTQ_PW_ZERO_ROW && n == N / 2)
				v = z; /* dequantizes to 0 */
			b->q[n * K + k] = (int8_t)v;
			b->w_orig[n * K + k] = ctq_wna16_dequant(v, z, b->scale[n * G + g]);
		}
	ctq_pack_rows(b->q, N, K, c->bits, b->packed);
	if (c->asym)
		ctq_pack_dim0(b->zero, N, G, c->bits, b->zpacked);
	return CTQ_OK;
}

/* The plug-in's y against the reference and the FP64 product, into r
 * (ctq_probe_compare_outputs), and when the plug-in declares itself exact,
 * each BF16 output against the reference's bits. */
static bool compare(const struct wbufs *b, int64_t M, int64_t N, bool exact,
		    struct ctq_probe_result *r, char *ywhere, size_t cap)
{
	r->y_mismatch = exact ? 0 : -1;
	for (int64_t i = 0; exact && i < M * N; i++) {
		const double got = ctq_bf16_to_f32(b->y[i]), ref = ctq_bf16_to_f32(b->y_ref[i]);
		if (b->y[i] != b->y_ref[i] && !(isnan(got) && isnan(ref))) {
			if (!r->y_mismatch)
				snprintf(ywhere, cap, "[%lld, %lld]: 0x%04x, reference 0x%04x",
					 (long long)(i / N), (long long)(i % N), b->y[i], b->y_ref[i]);
			r->y_mismatch++;
		}
	}
	return ctq_probe_compare_outputs(b->y, b->y_ref, b->y64, M * N, N, r);
}

static void judge(struct ctq_probe_result *r, const struct ctq_probe_policy *policy,
		  bool ref_any, const char *ywhere)
{
	const double qmax = policy->quant_rel_l2_max[r->acts];
	/* The policy's quantization bound is W8A8's (int8 activations per
	 * token). Here the activations stay BF16 and the error is the weight
	 * grid's: on synthetic weights drawn on the grid it is ~0, and real
	 * weights' rounding (4 bits: 5-15%) is verify-weights' to judge
	 * (policies/verify_weights.json); quant_rel_l2 is still reported. */
	const double qbound = r->weights == CTQ_PW_CHECKPOINT ? -1.0 : qmax;
	const char *layer = r->layer;
	if (r->nonfinite_mismatch)
		snprintf(r->reason, sizeof r->reason,
			 "%s (%s): %lld output(s) NaN/Inf where the reference is finite, or the reverse (NaN %lld, Inf %lld)",
			 layer, r->kernel_path, (long long)r->nonfinite_mismatch, (long long)r->nan_count,
			 (long long)r->inf_count);
	else if (r->all_zero)
		snprintf(r->reason, sizeof r->reason, "%s (%s): the output is all zero; the reference is not",
			 layer, r->kernel_path);
	else if (r->y_mismatch > 0)
		snprintf(r->reason, sizeof r->reason,
			 "%s (%s): bit-exact output (declared by the plug-in): %lld of %lld outputs differ; first %s",
			 layer, r->kernel_path, (long long)r->y_mismatch, (long long)(r->M * r->N), ywhere);
	else if (policy->kernel_rel_l2_max >= 0 && !(r->kernel_rel_l2 <= policy->kernel_rel_l2_max))
		snprintf(r->reason, sizeof r->reason,
			 "%s (%s): kernel rel-L2 %.3g > %.3g; worst at [%lld, %lld]: %g, reference %g",
			 layer, r->kernel_path, r->kernel_rel_l2, policy->kernel_rel_l2_max,
			 (long long)r->max_m, (long long)r->max_n, r->got_at_max, r->ref_at_max);
	else if (qbound >= 0 && !(r->quant_rel_l2 <= qbound))
		snprintf(r->reason, sizeof r->reason,
			 "%s (%s): quantization rel-L2 %.3g > %.3g (vs the FP64 product)", layer,
			 r->kernel_path, r->quant_rel_l2, qbound);
	else if (!ref_any && qmax >= 0)
		snprintf(r->reason, sizeof r->reason,
			 "%s (%s): the reference output is all zero, so the comparison proves nothing",
			 layer, r->kernel_path);
	r->passed = r->reason[0] == '\0';
}

/* The buffers on the plug-in's device, the call, y back. */
static enum ctq_status run_plugin(struct ctq_backend *be, const struct wbufs *b,
				  const struct ctq_wna16_cfg *c, int64_t M, int64_t N, int64_t K,
				  uint16_t *y, struct ctq_error *err)
{
	const int64_t G = ctq_packed_groups(K, c->group_size);
	const size_t sizes[6] = {(size_t)(M * K) * 2, (size_t)(N * ctq_pack_words(K, c->bits)) * 4,
				 (size_t)(N * G) * 4, c->asym ? (size_t)(ctq_pack_words(N, c->bits) * G) * 4 : 0,
				 (size_t)N * 4, (size_t)(M * N) * 2};
	const void *host[6] = {b->x, b->packed, b->scale, b->zpacked, b->bias, NULL};
	void *d[6] = {0};
	enum ctq_status st = CTQ_OK;
	for (int i = 0; i < 6 && !st; i++) {
		if (!sizes[i])
			continue;
		if (!(st = be->ops->alloc(be, sizes[i], &d[i], err)) && host[i])
			st = be->ops->upload(be, d[i], host[i], sizes[i], err);
	}
	if (!st) {
		const struct ctq_wna16_call call = {.x = d[0], .w_packed = d[1], .scale = d[2],
						    .zero_packed = d[3], .bias = d[4], .M = M, .N = N,
						    .K = K, .bits = c->bits, .group_size = c->group_size,
						    .y = d[5]};
		if (!(st = ctq_backend_plugin_gemm_wna16(be, &call, err)) && !(st = be->ops->sync(be, err)))
			st = be->ops->download(be, y, d[5], sizes[5], err);
	}
	for (int i = 0; i < 6; i++)
		be->ops->free(be, d[i]);
	return st;
}

/* One probe; stored (non-NULL): a checkpoint module's weights as stored
 * (wp is then CTQ_PW_CHECKPOINT and the FP64 yardstick its dequantized
 * weight). */
static enum ctq_status probe_one(struct ctq_backend *be, const struct ctq_probe_layer *L,
				 const struct ctq_wna16_cfg *c, enum ctq_probe_weights wp,
				 enum ctq_probe_acts ap, int64_t M, uint64_t seed,
				 const struct ctq_probe_policy *policy,
				 const struct ctq_packed_module *stored, struct ctq_probe_result *r,
				 struct ctq_error *err)
{
	const int64_t N = L->N, K = L->K, G = ctq_packed_groups(K, c->group_size);
	memset(r, 0, sizeof *r);
	snprintf(r->layer, sizeof r->layer, "%s", L->name);
	snprintf(r->backend, sizeof r->backend, "%s", be->ops->name);
	snprintf(r->kernel_path, sizeof r->kernel_path, "%s", c->name);
	r->K = K;
	r->N = N;
	r->M = M;
	r->weights = wp;
	r->acts = ap;
	r->q_mismatch = r->s_mismatch = r->y_mismatch = -1;
	if (wp == CTQ_PW_CHECKPOINT && !L->w && !stored)
		return ctq_error_set(err, CTQ_ERR_USAGE, L->name, "has no float weights to quantize");
	if (!ctq_wna16_cfg_fits(c, K))
		return ctq_error_set(err, CTQ_ERR_USAGE, L->name,
				     "K = %lld is not a multiple of %s's group size", (long long)K, c->name);
	struct wbufs b = {0};
	b.x = ctq_malloc((size_t)(M * K) * sizeof *b.x);
	b.x_f = ctq_malloc((size_t)(M * K) * sizeof *b.x_f);
	b.q = ctq_malloc((size_t)(N * K));
	b.w_orig = ctq_malloc((size_t)(N * K) * sizeof *b.w_orig);
	b.packed = ctq_malloc((size_t)(N * ctq_pack_words(K, c->bits)) * sizeof *b.packed);
	b.scale = ctq_malloc((size_t)(N * G) * sizeof *b.scale);
	b.zero = ctq_calloc((size_t)(N * G), 1);
	b.zpacked = c->asym ? ctq_malloc((size_t)(ctq_pack_words(N, c->bits) * G) * sizeof *b.zpacked) : NULL;
	b.bias = ctq_malloc((size_t)N * sizeof *b.bias);
	b.y_ref = ctq_malloc((size_t)(M * N) * sizeof *b.y_ref);
	b.y = ctq_malloc((size_t)(M * N) * sizeof *b.y);
	b.y64 = ctq_malloc((size_t)(M * N) * sizeof *b.y64);
	enum ctq_status st = CTQ_OK;
	if (!b.x || !b.x_f || !b.q || !b.w_orig || !b.packed || !b.scale || !b.zero ||
	    (c->asym && !b.zpacked) || !b.bias || !b.y_ref || !b.y || !b.y64) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, L->name, "out of memory for M=%lld K=%lld N=%lld",
				   (long long)M, (long long)K, (long long)N);
		goto done;
	}
	struct ctq_rng rng;
	ctq_rng_seed(&rng, seed ^ ((uint64_t)wp << 40) ^ ((uint64_t)ap << 48) ^
			       ((uint64_t)c->bits << 56) ^ (uint64_t)(K * 131 + N));
	if (stored) {
		memcpy(b.packed, stored->packed, (size_t)(N * ctq_pack_words(K, c->bits)) * sizeof *b.packed);
		memcpy(b.scale, stored->scale, (size_t)(N * G) * sizeof *b.scale);
		if (c->asym)
			memcpy(b.zpacked, stored->zero_packed,
			       (size_t)(ctq_pack_words(N, c->bits) * G) * sizeof *b.zpacked);
		for (int64_t n = 0; n < N; n++)
			ctq_packed_dequant_row(stored, n, b.w_orig + n * K);
	} else if ((st = make_weights(&b, L, c, wp, &rng, err))) {
		goto done;
	}
	ctq_probe_make_acts(b.x, b.x_f, M, K, ap, &rng);
	for (int64_t n = 0; n < N; n++)
		b.bias[n] = L->bias ? L->bias[n] : (float)(0.1 * ctq_rng_normal(&rng));
	/* the oracle: the dequantized reference, and the FP64 product */
	if ((st = ctq_ref_gemm_wna16(b.x, b.packed, b.scale, c->asym ? b.zpacked : NULL, b.bias, M, N,
				     K, c->bits, c->group_size, b.y_ref, err)))
		goto done;
	ctq_ref_gemm_f64(b.x_f, b.w_orig, b.bias, M, N, K, b.y64);
	if ((st = run_plugin(be, &b, c, M, N, K, b.y, err)))
		goto done;
	char ywhere[160] = "";
	const uint32_t caps = ctq_backend_plugin_table(be)->caps;
	const bool ref_any = compare(&b, M, N, (caps & CTQ_KERNEL_PLUGIN_WNA16_EXACT) != 0, r, ywhere,
				     sizeof ywhere);
	judge(r, policy, ref_any, ywhere);
done:
	wbufs_free(&b);
	return st;
}

enum ctq_status ctq_probe_wna16_run(struct ctq_backend *be, const struct ctq_probe_layer *L,
				    const struct ctq_wna16_cfg *c, enum ctq_probe_weights wp,
				    enum ctq_probe_acts ap, int64_t M, uint64_t seed,
				    const struct ctq_probe_policy *policy, struct ctq_probe_result *r,
				    struct ctq_error *err)
{
	return probe_one(be, L, c, wp, ap, M, seed, policy, NULL, r, err);
}

/* r into S: probe.json's row, the tallies, on_result. */
static enum ctq_status session_add(struct ctq_probe_session *S, const struct ctq_probe_result *r,
				   struct ctq_error *err)
{
	cJSON *row = ctq_probe_result_json(r);
	if (!row || !cJSON_AddItemToArray(S->rows, row)) {
		cJSON_Delete(row);
		return ctq_error_set(err, CTQ_ERR_NOMEM, r->layer, "out of memory");
	}
	if (r->passed)
		S->passed++;
	else
		S->failed++;
	if (S->on_result)
		S->on_result(S->ctx, r);
	return CTQ_OK;
}

enum ctq_status ctq_probe_wna16_model(struct ctq_probe_session *S, struct ctq_backend *b,
				      const char *dir, size_t *n_skipped, struct ctq_error *err)
{
	struct ctq_target t;
	enum ctq_status st = ctq_target_open(&t, dir, CTQ_SEM_CT, CTQ_TARGET_TENSORS, err);
	const uint32_t caps = ctq_backend_plugin_table(b)->caps;
	size_t n_probed = 0;
	for (size_t i = 0; !st && i < t.mods.n; i++) {
		const struct ctq_plan_entry *e = &t.plan.entries[i];
		const char *name = t.mods.v[i].name;
		if (e->error) {
			st = ctq_error_set(err, e->error, name, "%s", e->message);
			break;
		}
		if (!strcmp(e->scheme, "unquantized"))
			continue;
		struct ctq_packed_args a;
		bool packed = false;
		struct ctq_wna16_cfg c = {0};
		if (ctq_packed_layout(e->group >= 0 ? t.cfg.groups[e->group].scheme.weights : NULL,
				      e->format, &a, &packed) || !packed) {
			(*n_skipped)++; /* not weight-only pack-quantized: W8A8's probe */
			continue;
		}
		c.bits = a.bits;
		c.group_size = a.group_size;
		c.asym = a.asym;
		if (a.group_size)
			snprintf(c.name, sizeof c.name, "w%da16%s-g%lld", a.bits, a.asym ? "-asym" : "",
				 (long long)a.group_size);
		else
			snprintf(c.name, sizeof c.name, "w%da16%s", a.bits, a.asym ? "-asym" : "");
		if (!ctq_wna16_cfg_declared(caps, &c)) {
			(*n_skipped)++;
			continue;
		}
		struct ctq_packed_module pm;
		if ((st = ctq_packed_read(&t.ck, name, &a, &pm, err)))
			break;
		if (!ctq_wna16_cfg_fits(&c, pm.K)) {
			ctq_packed_free(&pm);
			(*n_skipped)++;
			continue;
		}
		const struct ctq_probe_layer L = {.name = name, .K = pm.K, .N = pm.N};
		for (int ap = 0; ap < CTQ_PA_COUNT && !st; ap++) {
			if (!S->real_asel[ap])
				continue;
			for (size_t m = 0; m < S->n_m && !st; m++) {
				if (ap == CTQ_PA_ZERO_ROWS && S->ms[m] == 1) {
					(*n_skipped)++;
					continue;
				}
				struct ctq_probe_result r;
				if (!(st = probe_one(b, &L, &c, CTQ_PW_CHECKPOINT, (enum ctq_probe_acts)ap,
						     S->ms[m], S->seed, S->policy, &pm, &r, err)))
					st = session_add(S, &r, err);
				n_probed++;
			}
		}
		ctq_packed_free(&pm);
	}
	if (!st && !n_probed)
		st = ctq_error_set(err, CTQ_ERR_USAGE, dir,
				   "holds no pack-quantized module the plug-in serves (%zu not probed): "
				   "nothing to probe", *n_skipped);
	ctq_target_close(&t);
	return st;
}

enum ctq_status ctq_probe_wna16_layer(struct ctq_probe_session *S, struct ctq_backend *b,
				      const struct ctq_probe_layer *L,
				      const struct ctq_wna16_cfg *cfgs, int n_cfg,
				      size_t *n_skipped, struct ctq_error *err)
{
	enum ctq_status st = CTQ_OK;
	for (int c = 0; c < n_cfg && !st; c++) {
		if (!ctq_wna16_cfg_fits(&cfgs[c], L->K)) {
			(*n_skipped)++;
			continue;
		}
		for (int w = 0; w < CTQ_PW_COUNT && !st; w++) {
			if (!(w == CTQ_PW_CHECKPOINT ? L->w != NULL : S->wsel[w]))
				continue;
			for (int a = 0; a < CTQ_PA_COUNT && !st; a++) {
				if (!(w == CTQ_PW_CHECKPOINT ? S->real_asel[a] : S->asel[a]))
					continue;
				for (size_t i = 0; i < S->n_m && !st; i++) {
					/* zero-rows zeroes every fourth row from row 0: at M = 1
					 * the output is the bias alone, whatever the weights */
					if (a == CTQ_PA_ZERO_ROWS && S->ms[i] == 1) {
						(*n_skipped)++;
						continue;
					}
					struct ctq_probe_result r;
					if (!(st = ctq_probe_wna16_run(b, L, &cfgs[c], (enum ctq_probe_weights)w,
								       (enum ctq_probe_acts)a, S->ms[i], S->seed,
								       S->policy, &r, err)))
						st = session_add(S, &r, err);
				}
			}
		}
	}
	return st;
}
