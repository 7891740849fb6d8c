/* ctq quantizer: BF16 / F16 / F32 checkpoint -> compressed-tensors W8A8
 * (see quantize.h). */
#include "checkpoint/quantize.h"
#include "checkpoint/quantize_wna16.h"
#include "checkpoint/target.h"
#include "core/hf_config.h"
#include "core/fileio.h"
#include "core/json.h"
#include "core/numerics.h"
#include "core/threads.h"
#include "quant/modules.h"
#include "quant/qconfig.h"
#include "quant/regex.h"
#include "quant/resolve.h"
#include "checkpoint/safetensors.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AUX_MAX_BYTES ((size_t)1 << 30)

/* ---- the quantization_config block --------------------------------------- */

/* One QuantizationArgs with every field, as model_dump writes it (§1.2). */
static cJSON *args_json(bool weights)
{
	cJSON *a = cJSON_CreateObject();
	bool ok = a != NULL;
	ok = ok && cJSON_AddNullToObject(a, "actorder");
	ok = ok && cJSON_AddNullToObject(a, "block_structure");
	ok = ok && cJSON_AddBoolToObject(a, "dynamic", !weights);
	ok = ok && cJSON_AddNullToObject(a, "group_size");
	ok = ok && cJSON_AddNumberToObject(a, "num_bits", 8);
	/* dynamic=true forces observer null; static weights default to
	 * memoryless_minmax (§2.3 steps 7-8). */
	ok = ok && (weights ? cJSON_AddStringToObject(a, "observer", "memoryless_minmax") != NULL
			    : cJSON_AddNullToObject(a, "observer") != NULL);
	ok = ok && cJSON_AddObjectToObject(a, "observer_kwargs");
	ok = ok && cJSON_AddNullToObject(a, "scale_dtype");
	ok = ok && cJSON_AddStringToObject(a, "strategy", weights ? "channel" : "token");
	ok = ok && cJSON_AddBoolToObject(a, "symmetric", true);
	ok = ok && cJSON_AddStringToObject(a, "type", "int");
	ok = ok && cJSON_AddNullToObject(a, "zp_dtype"); /* null when symmetric */
	if (!ok) {
		cJSON_Delete(a);
		return NULL;
	}
	return a;
}

cJSON *ctq_quantize_config_block(const char *const *ignore, size_t n_ignore)
{
	cJSON *b = cJSON_CreateObject();
	cJSON *groups = cJSON_AddObjectToObject(b, "config_groups");
	cJSON *g0 = cJSON_AddObjectToObject(groups, "group_0");
	bool ok = b && groups && g0;
	ok = ok && cJSON_AddStringToObject(g0, "format", "int-quantized");
	cJSON *in = ok ? args_json(false) : NULL;
	ok = ok && in && cJSON_AddItemToObject(g0, "input_activations", in);
	ok = ok && cJSON_AddNullToObject(g0, "output_activations");
	cJSON *targets = cJSON_AddArrayToObject(g0, "targets");
	ok = ok && targets && cJSON_AddItemToArray(targets, cJSON_CreateString("Linear"));
	cJSON *w = ok ? args_json(true) : NULL;
	ok = ok && w && cJSON_AddItemToObject(g0, "weights", w);
	ok = ok && cJSON_AddStringToObject(b, "format", "int-quantized");
	ok = ok && cJSON_AddNullToObject(b, "global_compression_ratio");
	cJSON *ig = cJSON_AddArrayToObject(b, "ignore");
	ok = ok && ig;
	for (size_t i = 0; ok && i < n_ignore; i++)
		ok = cJSON_AddItemToArray(ig, cJSON_CreateString(ignore[i]));
	ok = ok && cJSON_AddNullToObject(b, "kv_cache_scheme");
	ok = ok && cJSON_AddStringToObject(b, "quant_method", "compressed-tensors");
	ok = ok && cJSON_AddStringToObject(b, "quantization_status", "compressed");
	ok = ok && cJSON_AddObjectToObject(b, "sparsity_config");
	ok = ok && cJSON_AddObjectToObject(b, "transform_config");
	ok = ok && cJSON_AddStringToObject(b, "version", CTQ_QUANTIZE_CT_VERSION);
	if (!ok) {
		cJSON_Delete(b);
		return NULL;
	}
	return b;
}

/* ---- one weight matrix ----------------------------------------------------- */

int64_t ctq_quantize_weight(const void *w, enum ctq_dtype dtype, int64_t N, int64_t K,
			    int8_t *q, void *scale, double *err2, double *norm2)
{
	return ctq_quantize_weight_bits(w, dtype, N, K, 8, q, scale, err2, norm2);
}

int64_t ctq_quantize_weight_bits(const void *w, enum ctq_dtype dtype, int64_t N, int64_t K,
				 int bits, int8_t *q, void *scale, double *err2, double *norm2)
{
	const size_t esz = ctq_dtype_size(dtype);
	const int n_threads = ctq_threads_max();
	/* (n_threads, K) f32: each thread converts its current row here. */
	float *rows = ctq_malloc((size_t)n_threads * (size_t)(K ? K : 1) * sizeof *rows);
	if (!rows)
		return -2;
#pragma omp parallel for schedule(static)
	for (int64_t n = 0; n < N; n++) {
		const int tid = ctq_thread_id();
		float *wr = rows + (size_t)tid * (size_t)K; /* (K) */
		ctq_convert_to_f32((const unsigned char *)w + (size_t)n * (size_t)K * esz, dtype,
				   (size_t)K, wr);
		float amax = 0.0f;
		for (int64_t k = 0; k < K; k++)
			amax = ctq_amax_update(amax, wr[k]);
		/* The clamped scale is stored in the weight dtype and the row
		 * quantized with the stored value. */
		float clamped = ctq_weight_scale_bits(amax, bits);
		const float sc = ctq_float_store(scale, dtype, n, clamped);
		if (!isfinite(amax) || !isfinite(sc)) {
			err2[n] = NAN;
			norm2[n] = 0.0;
			continue;
		}
		double e2 = 0.0, w2 = 0.0;
		int8_t *qr = q + (size_t)n * (size_t)K;
		for (int64_t k = 0; k < K; k++) {
			int8_t v = ctq_quantize_bits(wr[k], sc, bits);
			qr[k] = v;
			double d = (double)v * (double)sc - (double)wr[k];
			e2 += d * d;
			w2 += (double)wr[k] * (double)wr[k];
		}
		err2[n] = e2;
		norm2[n] = w2;
	}
	free(rows);
	for (int64_t n = 0; n < N; n++)
		if (isnan(err2[n]))
			return n;
	return -1;
}

/* ---- the checkpoint -------------------------------------------------------- */

/* W8A8: weight + scale; weight-only: packed weight, scale, shape and, when
 * asymmetric, zero point. */
enum role { ROLE_COPY, ROLE_WEIGHT, ROLE_SCALE, ROLE_PACKED, ROLE_SHAPE, ROLE_ZERO };

struct qmod {
	size_t module;                    /* index into the modules */
	const char *name;                 /* module name (modules' arena) */
	const struct ctq_st_tensor *w;    /* source weight, in the mapping */
	int64_t N, K;
	void *scale;                      /* (N) in w->dtype once quantized;
					   * weight-only (N, G) */
	int32_t *packed, *zero_packed;    /* weight-only, owned until its last
					   * tensor is written (n_left) */
	int n_left;
	double rel_l2;
	bool done;
};

struct qctx {
	struct ctq_arena arena;           /* scales, names, tables */
	struct qmod *qm;                  /* (n_qm) quantized modules, model order */
	size_t n_qm;
	enum role *role;                  /* (n_out) per output tensor */
	size_t *role_qm;                  /* (n_out) qm index for weight/scale */
	int bits;                         /* weight grid, 2..8 (8: W8A8 as producers write it) */
	ctq_quantize_weight_fn weight_fn; /* or NULL (round to nearest) */
	void *weight_ctx;
	struct ctq_packed_args wa;        /* wa.bits 0: W8A8; else weight-only */
};

static void quantize_result_init(struct ctq_quantize_result *r)
{
	memset(r, 0, sizeof *r);
	ctq_arena_init(&r->arena);
}

void ctq_quantize_result_free(struct ctq_quantize_result *r)
{
	if (!r)
		return;
	ctq_arena_free(&r->arena);
	memset(r, 0, sizeof *r);
}

/* Quantizes module m; q (N, K) receives the int8 weight, or a scratch
 * buffer is used when q is NULL (only the scale is wanted). */
static enum ctq_status quantize_module(struct qctx *c, struct qmod *m, int8_t *q,
				       struct ctq_error *err)
{
	enum ctq_status st = CTQ_OK;
	size_t N = (size_t)m->N, K = (size_t)m->K;
	const bool wna16 = c->wa.bits != 0;
	const size_t G = wna16 ? (size_t)ctq_packed_groups(m->K, c->wa.group_size) : 1;
	int8_t *scratch = NULL;                                /* (N, K) */
	double *e2 = ctq_malloc((N ? N : 1) * sizeof *e2);     /* (N) */
	double *w2 = ctq_malloc((N ? N : 1) * sizeof *w2);     /* (N) */
	if (!m->scale)
		m->scale = ctq_arena_alloc(&c->arena, (N ? N : 1) * G * ctq_dtype_size(m->w->dtype));
	if (wna16) {
		m->packed = ctq_malloc((size_t)(m->N * ctq_pack_words(m->K, c->wa.bits)) * sizeof(int32_t));
		if (c->wa.asym)
			m->zero_packed = ctq_malloc((size_t)ctq_pack_words(m->N, c->wa.bits) * G *
						    sizeof(int32_t));
	} else if (!q) {
		q = scratch = ctq_malloc(N * K > 0 ? N * K : 1);
	}
	if (!e2 || !w2 || !m->scale || (wna16 ? !m->packed || (c->wa.asym && !m->zero_packed) : !q)) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, m->name, "out of memory");
		goto done;
	}
	int64_t bad = wna16 ? ctq_wna16_quantize_weight(m->w->data, m->w->dtype, m->N, m->K, &c->wa,
							m->packed, m->scale, m->zero_packed, e2, w2)
		    : c->weight_fn ? c->weight_fn(c->weight_ctx, m->name, m->w->data, m->w->dtype, m->N,
						  m->K, q, m->scale, e2, w2)
				   : ctq_quantize_weight_bits(m->w->data, m->w->dtype, m->N, m->K, c->bits,
							      q, m->scale, e2, w2);
	if (bad == -3) {
		st = ctq_error_set(err, CTQ_ERR_CHECKPOINT, m->name,
				   "the calibrated weights hold no %lld x %lld %s weight for this module",
				   (long long)m->N, (long long)m->K, ctq_dtype_name(m->w->dtype));
		goto done;
	}
	if (bad == -2) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, m->name, "out of memory");
		goto done;
	}
	if (bad >= 0) {
		st = ctq_error_set(err, CTQ_ERR_CHECKPOINT, m->w->name,
				   "row %" PRId64 " holds NaN or infinite values (or its scale overflows %s); refusing to quantize it",
				   bad, ctq_dtype_name(m->w->dtype));
		goto done;
	}
	/* Row sums added in row order: the report is the same whatever the
	 * thread count. */
	double se = 0.0, sw = 0.0;
	for (size_t n = 0; n < N; n++) {
		se += e2[n];
		sw += w2[n];
	}
	m->rel_l2 = sw > 0.0 ? sqrt(se / sw) : 0.0;
	m->done = true;
done:
	free(scratch);
	free(e2);
	free(w2);
	return st;
}

/* A weight-only module's tensors: quantized at its first one, in any
 * order the shards put them, its buffers freed after its last. */
static enum ctq_status produce_wna16(struct qctx *c, struct qmod *m, enum role role,
				     const struct ctq_stream_tensor *t, void *dst,
				     struct ctq_error *err)
{
	if (!m->done) {
		enum ctq_status st = quantize_module(c, m, NULL, err);
		if (st)
			return st;
	}
	if (role == ROLE_SHAPE) {
		const int64_t nk[2] = {m->N, m->K};
		memcpy(dst, nk, sizeof nk);
	} else {
		memcpy(dst, role == ROLE_PACKED ? (const void *)m->packed
			    : role == ROLE_ZERO ? (const void *)m->zero_packed : m->scale,
		       t->n_bytes);
	}
	if (--m->n_left == 0) {
		ctq_free(m->packed);
		ctq_free(m->zero_packed);
		m->packed = m->zero_packed = NULL;
	}
	return CTQ_OK;
}

static enum ctq_status produce_quant(void *vctx, size_t i, const struct ctq_stream_tensor *t,
				     void *dst, struct ctq_error *err)
{
	struct qctx *c = vctx;
	struct qmod *m = &c->qm[c->role_qm[i]];
	if (c->wa.bits)
		return produce_wna16(c, m, c->role[i], t, dst, err);
	if (c->role[i] == ROLE_WEIGHT)
		return quantize_module(c, m, dst, err);
	/* The scale normally follows its weight; should the shard split put it
	 * first, quantize now and keep the scale for the weight's turn. */
	if (!m->done) {
		enum ctq_status st = quantize_module(c, m, NULL, err);
		if (st)
			return st;
	}
	memcpy(dst, m->scale, t->n_bytes);
	return CTQ_OK;
}

/* Natural order of tensor names: digit runs compare as numbers, so
 * model.layers.2 comes before model.layers.10. */
static int natural_cmp(const char *a, const char *b)
{
	while (*a && *b) {
		if (*a >= '0' && *a <= '9' && *b >= '0' && *b <= '9') {
			const char *a0 = a, *b0 = b;
			while (*a0 == '0' && a0[1] >= '0' && a0[1] <= '9')
				a0++;
			while (*b0 == '0' && b0[1] >= '0' && b0[1] <= '9')
				b0++;
			const char *a1 = a0, *b1 = b0;
			while (*a1 >= '0' && *a1 <= '9')
				a1++;
			while (*b1 >= '0' && *b1 <= '9')
				b1++;
			if (a1 - a0 != b1 - b0)
				return a1 - a0 < b1 - b0 ? -1 : 1;
			int c = strncmp(a0, b0, (size_t)(a1 - a0));
			if (c)
				return c;
			a = a1, b = b1;
			continue;
		}
		if (*a != *b)
			return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
		a++, b++;
	}
	if (*a || *b)
		return *a ? 1 : -1;
	return 0;
}

struct out_item {
	struct ctq_stream_tensor t;
	enum role role;
	size_t qm;
};

/* Output order: natural order, lm_head last, as a *ForCausalLM state dict
 * lists it (model.* first). Shards are filled in this order. */
static int cmp_out_item(const void *x, const void *y)
{
	const struct out_item *a = x, *b = y;
	bool la = !strncmp(a->t.name, "lm_head.", 8), lb = !strncmp(b->t.name, "lm_head.", 8);
	if (la != lb)
		return la ? 1 : -1;
	int c = natural_cmp(a->t.name, b->t.name);
	return c ? c : strcmp(a->t.name, b->t.name);
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && !strcmp(s + n - k, suffix);
}

/* Marks the Linear modules the ignore entries name. */
static enum ctq_status apply_ignores(const struct ctq_modules *mods,
				     const struct ctq_quantize_options *opt, bool *ignored,
				     struct ctq_error *err)
{
	enum ctq_status st = CTQ_OK;
	struct ctq_regex_cache rc;
	ctq_regex_cache_init(&rc);
	for (size_t j = 0; opt && j < opt->n_ignore; j++) {
		const char *e = opt->ignore[j];
		char path[64];
		snprintf(path, sizeof path, "--ignore[%zu]", j);
		size_t hits = 0;
		if (!strncmp(e, "re:", 3)) {
			for (size_t i = 0; i < mods->n; i++) {
				if (mods->v[i].kind != CTQ_MODULE_LINEAR)
					continue;
				bool m = false;
				if ((st = ctq_regex_match(&rc, e + 3, path, mods->v[i].name, &m, err)))
					goto done;
				if (m) {
					ignored[i] = true;
					hits++;
				}
			}
			if (!hits) {
				st = ctq_error_set(err, CTQ_ERR_USAGE, path,
						   "\"%s\" matches no Linear module of the model (Python re.match: anchored at the start only)",
						   e);
				goto done;
			}
			continue;
		}
		long i = ctq_modules_find(mods, e);
		if (i < 0) {
			st = ctq_error_set(err, CTQ_ERR_USAGE, path,
					   "\"%s\" is not a module of the model; expected a Linear module name (e.g. model.layers.0.self_attn.o_proj) or re:PATTERN",
					   e);
			goto done;
		}
		if (mods->v[i].kind != CTQ_MODULE_LINEAR) {
			st = ctq_error_set(err, CTQ_ERR_USAGE, path,
					   "\"%s\" is a %s, not a Linear module; only Linear modules are quantized",
					   e, mods->v[i].types[0]);
			goto done;
		}
		ignored[i] = true;
	}
	/* q/k/v and gate/up run as one GEMM in serving engines; ctq's strict
	 * resolver rejects a fused set with mixed schemes (fused-mismatch), so
	 * such a checkpoint could never pass the self-check. */
	for (size_t f = 0; f < mods->n_fused; f++) {
		const struct ctq_fused_set *fs = &mods->fused[f];
		size_t n_ign = 0;
		for (size_t k = 0; k < fs->n_members; k++)
			n_ign += ignored[fs->members[k]];
		if (n_ign && n_ign < fs->n_members) {
			char names[CTQ_MESSAGE_MAX / 2] = "";
			size_t len = 0;
			for (size_t k = 0; k < fs->n_members && len < sizeof names; k++)
				len += (size_t)snprintf(names + len, sizeof names - len, "%s%s%s",
							k ? ", " : "", mods->v[fs->members[k]].name,
							ignored[fs->members[k]] ? " (ignored)" : "");
			st = ctq_error_set(err, CTQ_ERR_USAGE, "--ignore",
					   "splits the fused set %s: %s; engines run it as one GEMM and ctq's strict resolver rejects mixed schemes (fused-mismatch): ignore every member or none",
					   fs->runtime_name, names);
			goto done;
		}
	}
done:
	ctq_regex_cache_free(&rc);
	return st;
}

enum ctq_status ctq_quantize_copy_aux(const char *in, const char *dir, struct ctq_error *err)
{
	static const char *const names[] = {
		"generation_config.json", "tokenizer.json", "tokenizer_config.json",
		"special_tokens_map.json", "vocab.json", "merges.txt", "tokenizer.model",
		"added_tokens.json", "chat_template.jinja",
	};
	enum ctq_status st = CTQ_OK;
	for (size_t i = 0; i < sizeof names / sizeof *names && !st; i++) {
		char *src = ctq_path_join(in, names[i]);
		char *dst = ctq_path_join(dir, names[i]);
		char *data = NULL;
		size_t n = 0;
		if (!src || !dst)
			st = ctq_error_set(err, CTQ_ERR_NOMEM, in, "out of memory");
		else if (ctq_path_exists(src) &&
			 !(st = ctq_file_read(src, AUX_MAX_BYTES, &data, &n, err)))
			st = ctq_file_write_atomic(dst, data, n, err);
		free(data);
		free(src);
		free(dst);
	}
	return st;
}

/* The [N, K] config.json gives a projection (transformers builds the
 * nn.Linear from these fields and refuses a checkpoint tensor of another
 * shape); false when a field it needs is absent or the module is no
 * projection ctq knows. */
static bool expected_shape(const struct ctq_model_shape *s, const char *name,
			   long *n, long *k)
{
	const char *dot = strrchr(name, '.');
	const int l = ctq_hf_linear_find(dot ? dot + 1 : name);
	if (l < 0)
		return false;
	ctq_hf_linear_features(s, (enum ctq_hf_linear)l, n, k);
	return *n > 0 && *k > 0;
}

/* Reads dir back: the config must resolve (strict) to w8a8-int8 exactly on
 * the quantized modules, and the checkpoint hold I8 weights and [N, 1]
 * scales for them. A mismatch sets *failed; running out of memory or an I/O
 * error while reading back is returned as it is (the check did not run). */
static enum ctq_status self_check(const char *dir, const struct qctx *c,
				  const struct ctq_modules *src_mods, bool *failed,
				  struct ctq_error *err)
{
	struct ctq_target t;
	struct ctq_error sub = {0};
	char what[CTQ_MESSAGE_MAX / 2] = "";
	*failed = false;
	/* strict executes W8A8 only; weight-only schemes resolve under ct. */
	if (ctq_target_open(&t, dir, c->wa.bits ? CTQ_SEM_CT : CTQ_SEM_STRICT, 0, &sub)) {
		snprintf(what, sizeof what, "%s at %s: %s", ctq_status_name(sub.status), sub.path,
			 sub.message);
		goto done;
	}
	const struct ctq_modules *mods = &t.mods;
	const struct ctq_plan *plan = &t.plan;
	if (mods->n != src_mods->n) {
		snprintf(what, sizeof what, "%zu modules enumerated, %zu expected", mods->n,
			 src_mods->n);
		goto done;
	}
	size_t k = 0; /* next quantized module, both lists in model order */
	for (size_t i = 0; i < mods->n; i++) {
		const struct ctq_plan_entry *e = &plan->entries[i];
		bool quantized = k < c->n_qm && c->qm[k].module == i;
		const char *want = !quantized ? "unquantized"
				   : c->wa.bits ? ctq_wna16_scheme_name(&c->wa) : "w8a8-int8";
		if (quantized)
			k++;
		if (e->error || strcmp(e->scheme, want) ||
		    (!quantized && mods->v[i].kind == CTQ_MODULE_LINEAR && e->by != CTQ_BY_IGNORE)) {
			snprintf(what, sizeof what, "%s resolves to %s (by %s); expected %s%s",
				 mods->v[i].name, e->error ? ctq_status_name(e->error) : e->scheme,
				 ctq_match_by_name(e->by), want,
				 quantized || mods->v[i].kind != CTQ_MODULE_LINEAR ? "" : " by ignore");
			goto done;
		}
	}
	if (ctq_checkpoint_open(&t.ck, dir, &sub)) {
		snprintf(what, sizeof what, "%s at %s: %s", ctq_status_name(sub.status), sub.path,
			 sub.message);
		goto done;
	}
	for (size_t j = 0; c->wa.bits && j < c->n_qm; j++) {
		const struct qmod *m = &c->qm[j];
		struct ctq_packed_module pm;
		if (ctq_packed_read(&t.ck, m->name, &c->wa, &pm, &sub)) {
			snprintf(what, sizeof what, "%s at %s: %s", ctq_status_name(sub.status),
				 sub.path, sub.message);
			goto done;
		}
		const bool same = pm.N == m->N && pm.K == m->K && pm.scale_dtype == m->w->dtype;
		ctq_packed_free(&pm);
		if (!same) {
			snprintf(what, sizeof what, "%s: weight_shape or the scale dtype differs from the source",
				 m->name);
			goto done;
		}
	}
	for (size_t j = 0; !c->wa.bits && j < c->n_qm; j++) {
		const struct qmod *m = &c->qm[j];
		char name[CTQ_PATH_MAX];
		snprintf(name, sizeof name, "%s.weight", m->name);
		const struct ctq_st_tensor *w = ctq_checkpoint_find(&t.ck, name, NULL);
		snprintf(name, sizeof name, "%s.weight_scale", m->name);
		const struct ctq_st_tensor *s = ctq_checkpoint_find(&t.ck, name, NULL);
		if (!w || w->dtype != CTQ_DTYPE_I8 || w->ndim != 2 || w->shape[0] != m->N ||
		    w->shape[1] != m->K || !s || s->dtype != m->w->dtype || s->ndim != 2 ||
		    s->shape[0] != m->N || s->shape[1] != 1) {
			snprintf(what, sizeof what, "%s: weight or weight_scale missing or of the wrong dtype or shape",
				 m->name);
			goto done;
		}
	}
done:
	ctq_target_close(&t);
	if (sub.status == CTQ_ERR_NOMEM || sub.status == CTQ_ERR_IO)
		return ctq_error_set(err, sub.status, sub.path, "%s", sub.message);
	if (what[0]) {
		*failed = true;
		return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, "quantization_config",
				     "self-check of the written checkpoint failed: %s", what);
	}
	return CTQ_OK;
}

/* in's config.json into *config: an object, text-only, not yet quantized
 * (a null quantization block is dropped). */
static enum ctq_status read_config(const char *path, cJSON **config, struct ctq_error *err)
{
	enum ctq_status st;
	if ((st = ctq_hf_config_load(path, config, NULL, NULL, 0, err)))
		return st;
	if (ctq_json_get(*config, "text_config")) {
		/* A multimodal model's vision Linear modules are not enumerated:
		 * they would be neither quantized nor listed in ignore, and a
		 * Linear target would claim them. */
		return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, "text_config",
				     "is present in %s: ctq quantize handles text-only qwen3, qwen2 and llama checkpoints",
				     path);
	}
	static const char *const qkeys[] = {"quantization_config", "compression_config"};
	for (size_t i = 0; i < 2; i++) {
		const cJSON *q = ctq_json_get(*config, qkeys[i]);
		if (cJSON_IsNull(q)) {
			/* null: not quantized; replaced by the block below. */
			cJSON_DeleteItemFromObjectCaseSensitive(*config, qkeys[i]);
		} else if (q) {
			st = ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, qkeys[i],
					   "is present in %s: the checkpoint is already quantized; ctq quantize takes a BF16, F16 or F32 one",
					   path);
			return st;
		}
	}
	return CTQ_OK;
}

/* What was quantized, into res (its own arena). */
static enum ctq_status fill_result(struct ctq_quantize_result *res, const struct qctx *cx,
				   const char *const *ign, size_t n_ign, size_t n_out,
				   size_t n_copied, uint64_t n_bytes, const char *dir,
				   struct ctq_error *err)
{
	res->modules = ctq_arena_calloc(&res->arena, cx->n_qm ? cx->n_qm : 1, sizeof *res->modules);
	res->ignore = ctq_arena_calloc(&res->arena, n_ign ? n_ign : 1, sizeof *res->ignore);
	bool ok = res->modules && res->ignore;
	double sum = 0.0;
	for (size_t j = 0; ok && j < cx->n_qm; j++) {
		struct ctq_quantize_module *r = &res->modules[j];
		ok = (r->name = ctq_arena_strdup(&res->arena, cx->qm[j].name)) != NULL;
		r->N = cx->qm[j].N;
		r->K = cx->qm[j].K;
		r->dtype = cx->qm[j].w->dtype;
		r->rel_l2 = cx->qm[j].rel_l2;
		sum += r->rel_l2;
		if (ok && (!res->rel_l2_max_module || r->rel_l2 > res->rel_l2_max)) {
			res->rel_l2_max = r->rel_l2;
			res->rel_l2_max_module = r->name;
		}
	}
	for (size_t j = 0; ok && j < n_ign; j++)
		ok = (res->ignore[j] = ctq_arena_strdup(&res->arena, ign[j])) != NULL;
	if (!ok)
		return ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
	res->n_modules = cx->n_qm;
	res->n_ignore = n_ign;
	res->n_tensors = n_out;
	res->n_copied = n_copied;
	res->n_bytes = n_bytes;
	res->rel_l2_mean = cx->n_qm ? sum / (double)cx->n_qm : 0.0;
	return CTQ_OK;
}

/* The Linear modules to quantize, into c->qm: all but lm_head and the
 * ignored ones (their names into ign), each with a 2-D float weight of the
 * shape the config makes. */
static enum ctq_status select_modules(const struct ctq_modules *mods, const struct ctq_checkpoint *ck,
				      const bool *ignored, const char *in, struct qctx *c,
				      const char **ign, size_t *n_ign, struct ctq_error *err)
{
	for (size_t i = 0; i < mods->n; i++) {
		const struct ctq_module *m = &mods->v[i];
		if (m->kind != CTQ_MODULE_LINEAR)
			continue;
		/* vLLM builds most routers and Qwen2-MoE's shared_expert_gate
		 * with quant_config=None: an int8 weight there would not load;
		 * routers stay in BF16 everywhere (Qwen3-MoE's too), as
		 * llm-compressor's recipes keep them. */
		if (ignored[i] || !strcmp(m->name, "lm_head") || m->vllm_unquantized || m->router) {
			ign[(*n_ign)++] = m->name;
			continue;
		}
		char wname[CTQ_PATH_MAX];
		snprintf(wname, sizeof wname, "%s.weight", m->name);
		const struct ctq_st_tensor *w = ctq_checkpoint_find(ck, wname, NULL);
		if (!w && m->ct_fused)
			return ctq_error_set(err, CTQ_ERR_CHECKPOINT, wname,
					     "is held fused in %s's 3-D gate_up_proj / down_proj (transformers 5's layout); ctq quantize reads per-expert weights (transformers 4's layout, the hub's)",
					     mods->moe[m->moe].runtime_name);
		if (!w) {
			return ctq_error_set(err, CTQ_ERR_CHECKPOINT, wname,
					   "is missing from %s; the config's model has this Linear module",
					   in);
		}
		if ((w->dtype != CTQ_DTYPE_BF16 && w->dtype != CTQ_DTYPE_F16 &&
		     w->dtype != CTQ_DTYPE_F32) ||
		    w->ndim != 2 || w->shape[0] < 1 || w->shape[1] < 1) {
			return ctq_error_set(err, CTQ_ERR_CHECKPOINT, wname,
					   "is %s with %d dimension(s); expected a 2-D BF16, F16 or F32 weight [N, K]",
					   ctq_dtype_name(w->dtype), w->ndim);
		}
		long en, ek;
		if (ctq_hf_linear_of(mods, m) >= 0 && expected_shape(&mods->shape, m->name, &en, &ek) &&
		    (w->shape[0] != en || w->shape[1] != ek)) {
			return ctq_error_set(err, CTQ_ERR_CHECKPOINT, wname,
					   "is [%lld, %lld] but config.json (hidden_size %ld, intermediate_size %ld, %ld heads, %ld kv heads, head_dim %ld) makes it [%ld, %ld]; transformers refuses such a checkpoint (size mismatch), so ctq does not quantize it",
					   (long long)w->shape[0], (long long)w->shape[1],
					   mods->shape.hidden_size, mods->shape.intermediate_size,
					   mods->shape.num_attention_heads, mods->shape.num_key_value_heads,
					   mods->shape.head_dim, en, ek);
		}
		if (c->wa.bits && c->wa.group_size > 0 && w->shape[1] % c->wa.group_size) {
			return ctq_error_set(err, CTQ_ERR_USAGE, wname,
					   "has %lld input features, not a multiple of the group size %lld; "
					   "choose a group size that divides it or --ignore the module",
					   (long long)w->shape[1], (long long)c->wa.group_size);
		}
		struct qmod *q = &c->qm[c->n_qm++];
		q->module = i;
		q->name = m->name;
		q->w = w;
		q->N = w->shape[0];
		q->K = w->shape[1];
	}
	return CTQ_OK;
}

/* One output item: name (printf'd into c's arena), dtype and 1-D / 2-D shape. */
static bool out_item_set(struct qctx *c, struct out_item *it, enum role role, size_t j,
			 enum ctq_dtype dtype, int64_t d0, int64_t d1, const char *name,
			 const char *suffix)
{
	memset(it, 0, sizeof *it);
	it->t.name = ctq_arena_printf(&c->arena, "%s.%s", name, suffix);
	it->t.dtype = dtype;
	it->t.ndim = d1 > 0 ? 2 : 1;
	it->t.shape[0] = d0;
	it->t.shape[1] = d1 > 0 ? d1 : 0;
	it->t.n_bytes = (uint64_t)d0 * (uint64_t)(d1 > 0 ? d1 : 1) * ctq_dtype_size(dtype);
	it->role = role;
	it->qm = j;
	return it->t.name != NULL;
}

/* A weight-only module's tensors in place of its weight (items[*k - 1]):
 * weight_packed, weight_scale, weight_shape and, asymmetric, the zero
 * point (checkpoint/packed.h gives their layout). */
static enum ctq_status list_wna16(struct qctx *c, struct qmod *m, size_t j,
				  struct out_item *items, size_t *k, const char *in,
				  struct ctq_error *err)
{
	const int bits = c->wa.bits;
	const int64_t G = ctq_packed_groups(m->K, c->wa.group_size);
	bool ok = out_item_set(c, &items[*k - 1], ROLE_PACKED, j, CTQ_DTYPE_I32, m->N,
			       ctq_pack_words(m->K, bits), m->name, "weight_packed");
	ok = ok && out_item_set(c, &items[(*k)++], ROLE_SCALE, j, m->w->dtype, m->N, G, m->name,
				"weight_scale");
	ok = ok && out_item_set(c, &items[(*k)++], ROLE_SHAPE, j, CTQ_DTYPE_I64, 2, 0, m->name,
				"weight_shape");
	m->n_left = 3;
	if (ok && c->wa.asym) {
		ok = out_item_set(c, &items[(*k)++], ROLE_ZERO, j, CTQ_DTYPE_I32,
				  ctq_pack_words(m->N, bits), G, m->name, "weight_zero_point");
		m->n_left = 4;
	}
	return ok ? CTQ_OK : ctq_error_set(err, CTQ_ERR_NOMEM, in, "out of memory");
}

/* items[] from the input tensors: each borrowed as it is, except a
 * quantized weight, which becomes an int8 weight followed by its scale. */
static enum ctq_status list_outputs(const struct ctq_checkpoint *ck, struct qctx *c,
				    struct out_item *items, const char *in, struct ctq_error *err)
{
	size_t k = 0, n_in = ctq_checkpoint_count(ck);
	for (size_t i = 0; i < n_in; i++) {
		const struct ctq_st_tensor *t = ctq_checkpoint_at(ck, i, NULL);
		struct out_item *it = &items[k++];
		it->t.name = t->name;
		it->t.dtype = t->dtype;
		it->t.ndim = t->ndim;
		memcpy(it->t.shape, t->shape, sizeof t->shape);
		it->t.n_bytes = t->n_bytes;
		it->t.borrowed = t->data;
		it->role = ROLE_COPY;
		size_t j = 0;
		while (j < c->n_qm && c->qm[j].w != t)
			j++;
		if (j == c->n_qm)
			continue;
		struct qmod *m = &c->qm[j];
		if (c->wa.bits) {
			enum ctq_status st = list_wna16(c, m, j, items, &k, in, err);
			if (st)
				return st;
			continue;
		}
		it->role = ROLE_WEIGHT;
		it->qm = j;
		it->t.dtype = CTQ_DTYPE_I8;
		it->t.n_bytes = (uint64_t)m->N * (uint64_t)m->K;
		it->t.borrowed = NULL;
		struct out_item *sc = &items[k++];
		sc->t.name = ctq_arena_printf(&c->arena, "%s.weight_scale", m->name);
		if (!sc->t.name)
			return ctq_error_set(err, CTQ_ERR_NOMEM, in, "out of memory");
		sc->t.dtype = t->dtype;
		sc->t.ndim = 2;
		sc->t.shape[0] = m->N;
		sc->t.shape[1] = 1;
		sc->t.n_bytes = (uint64_t)m->N * ctq_dtype_size(t->dtype);
		sc->role = ROLE_SCALE;
		sc->qm = j;
	}
	return CTQ_OK;
}

/* The sorted items into the stream list and c's role tables, counting the
 * copied tensors and the bytes; a stray quantization tensor is refused. */
static enum ctq_status order_outputs(const struct out_item *items, size_t n_out, struct qctx *c,
				     struct ctq_stream_tensor *list, size_t *n_copied,
				     uint64_t *n_bytes, struct ctq_error *err)
{
	for (size_t i = 0; i < n_out; i++) {
		list[i] = items[i].t;
		c->role[i] = items[i].role;
		c->role_qm[i] = items[i].qm;
		*n_copied += items[i].role == ROLE_COPY;
		*n_bytes += items[i].t.n_bytes;
		if (items[i].role == ROLE_COPY &&
		    (has_suffix(list[i].name, ".weight_scale") || has_suffix(list[i].name, ".input_scale") ||
		     has_suffix(list[i].name, ".weight_packed")))
			return ctq_error_set(err, CTQ_ERR_CHECKPOINT, list[i].name,
					     "is a quantization tensor in an unquantized checkpoint");
	}
	return CTQ_OK;
}

/* config.json into dir: every field kept, quantization_config added. */
static enum ctq_status write_config(cJSON *config, const char *const *ign, size_t n_ign,
				    int bits, const struct ctq_packed_args *wa, const char *in,
				    const char *dir, struct ctq_error *err)
{
	enum ctq_status st;
	cJSON *block = wa->bits ? ctq_wna16_config_block(wa, ign, n_ign)
				: ctq_quantize_config_block(ign, n_ign);
	if (!block || !cJSON_AddItemToObject(config, "quantization_config", block)) {
		cJSON_Delete(block);
		return ctq_error_set(err, CTQ_ERR_NOMEM, in, "out of memory");
	}
	/* A lower-precision simulation says so at the top level of config.json
	 * (the quantization block stays the valid int8 one it runs as). */
	if (bits < 8 && !cJSON_AddNumberToObject(config, "ctq_simulated_weight_bits", bits))
		return ctq_error_set(err, CTQ_ERR_NOMEM, in, "out of memory");
	if ((st = ctq_mkdirs(dir, err)))
		return st;
	char *path = ctq_path_join(dir, "config.json");
	if (!path)
		return ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
	st = ctq_json_save_hf(path, config, err);
	free(path);
	return st;
}

enum ctq_status ctq_quantize_checkpoint(const char *in, const char *dir,
					const struct ctq_quantize_options *opt,
					struct ctq_quantize_result *res,
					struct ctq_error *err)
{
	enum ctq_status st = CTQ_OK;
	cJSON *config = NULL;
	char *path = NULL;
	bool *ignored = NULL;
	struct out_item *items = NULL;
	struct ctq_stream_tensor *list = NULL;
	struct ctq_modules mods;
	struct ctq_checkpoint ck;
	struct qctx c;
	memset(&ck, 0, sizeof ck);
	memset(&c, 0, sizeof c);
	ctq_arena_init(&c.arena);
	c.bits = opt && opt->weight_bits ? opt->weight_bits : 8;
	c.weight_fn = opt ? opt->weight_fn : NULL;
	c.weight_ctx = opt ? opt->weight_ctx : NULL;
	if (opt)
		c.wa = opt->wna16;
	ctq_modules_init(&mods);
	if (res)
		quantize_result_init(res);

	if (!(path = ctq_path_join(in, "config.json"))) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, in, "out of memory");
		goto done;
	}
	if (c.weight_fn && c.bits != 8) {
		st = ctq_error_set(err, CTQ_ERR_USAGE, "weight_bits",
				   "is %d; calibrated weights are W8A8 (8)", c.bits);
		goto done;
	}
	if (c.bits < 2 || c.bits > 8) {
		st = ctq_error_set(err, CTQ_ERR_USAGE, "weight_bits", "is %d; expected 2 to 8", c.bits);
		goto done;
	}
	if (c.wa.bits && ((c.wa.bits != 4 && c.wa.bits != 8) || c.bits != 8 || c.wa.group_size < 0)) {
		st = ctq_error_set(err, CTQ_ERR_USAGE, "wna16",
				   "bits %d, group size %lld, weight_bits %d; expected 4 or 8 bits, a group "
				   "size >= 0 and no --weight-bits simulation",
				   c.wa.bits, (long long)c.wa.group_size, c.bits);
		goto done;
	}
	if (!ctq_path_is_dir(in)) {
		st = ctq_error_set(err, CTQ_ERR_IO, in,
				   "is not a directory; expected a Hugging Face checkpoint folder");
		goto done;
	}
	if ((st = read_config(path, &config, err)))
		goto done;
	/* The config's tree refuses an architecture ctq does not know; the
	 * tensors' tree then holds every Linear of the checkpoint, so that a
	 * Linear target claims none that stays unquantized and unignored. */
	if ((st = ctq_checkpoint_open(&ck, in, err)) ||
	    (st = ctq_target_modules(&ck, config, &mods, err)))
		goto done;
	if (!mods.shape.arch) {
		/* no known tree (every module guessed): the config's own
		 * enumeration says why */
		ctq_modules_free(&mods);
		if (!(st = ctq_modules_from_config(&mods, config, "", NULL, err)))
			st = ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, "model_type",
					   "names no architecture ctq knows");
		goto done;
	}

	/* Which modules are quantized. */
	ignored = ctq_malloc((mods.n ? mods.n : 1) * sizeof *ignored);
	c.qm = ctq_arena_calloc(&c.arena, mods.n ? mods.n : 1, sizeof *c.qm);
	const char **ign = ctq_arena_calloc(&c.arena, mods.n ? mods.n : 1, sizeof *ign);
	if (!ignored || !c.qm || !ign) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, in, "out of memory");
		goto done;
	}
	memset(ignored, 0, (mods.n ? mods.n : 1) * sizeof *ignored);
	if ((st = apply_ignores(&mods, opt, ignored, err)))
		goto done;
	size_t n_ign = 0;
	if ((st = select_modules(&mods, &ck, ignored, in, &c, ign, &n_ign, err)))
		goto done;

	/* The output tensors: two per quantized weight, every other tensor
	 * borrowed from the input mapping. */
	size_t n_in = ctq_checkpoint_count(&ck);
	size_t n_out = n_in + c.n_qm * (c.wa.bits ? (c.wa.asym ? 3 : 2) : 1);
	items = ctq_malloc((n_out ? n_out : 1) * sizeof *items);
	list = ctq_malloc((n_out ? n_out : 1) * sizeof *list);
	c.role = ctq_arena_calloc(&c.arena, n_out ? n_out : 1, sizeof *c.role);
	c.role_qm = ctq_arena_calloc(&c.arena, n_out ? n_out : 1, sizeof *c.role_qm);
	if (!items || !list || !c.role || !c.role_qm) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, in, "out of memory");
		goto done;
	}
	memset(items, 0, (n_out ? n_out : 1) * sizeof *items);
	if ((st = list_outputs(&ck, &c, items, in, err)))
		goto done;
	qsort(items, n_out, sizeof *items, cmp_out_item);
	size_t n_copied = 0;
	uint64_t n_bytes = 0;
	if ((st = order_outputs(items, n_out, &c, list, &n_copied, &n_bytes, err)))
		goto done;
	if ((st = write_config(config, ign, n_ign, c.bits, &c.wa, in, dir, err)))
		goto done;
	if ((st = ctq_stream_write(dir, ck.stem, list, n_out,
				   opt && opt->max_shard_bytes ? opt->max_shard_bytes
							       : CTQ_HF_MAX_SHARD_BYTES,
				   produce_quant, &c, opt ? opt->progress : NULL,
				   opt ? opt->progress_ctx : NULL, err)))
		goto done;
	for (size_t j = 0; j < c.n_qm; j++)
		if (!c.qm[j].done) {
			st = ctq_error_set(err, CTQ_ERR_CHECKPOINT, c.qm[j].name,
					   "was never quantized (internal error)");
			goto done;
		}
	if ((st = ctq_quantize_copy_aux(in, dir, err)))
		goto done;
	bool check_failed = false;
	if ((st = self_check(dir, &c, &mods, &check_failed, err))) {
		if (res)
			res->self_check_failed = check_failed;
		goto done;
	}

	if (res)
		st = fill_result(res, &c, ign, n_ign, n_out, n_copied, n_bytes, dir, err);
done:
	for (size_t j = 0; c.qm && j < c.n_qm; j++) {
		ctq_free(c.qm[j].packed);
		ctq_free(c.qm[j].zero_packed);
	}
	free(items);
	free(list);
	free(ignored);
	free(path);
	cJSON_Delete(config);
	ctq_checkpoint_close(&ck);
	ctq_modules_free(&mods);
	ctq_arena_free(&c.arena);
	return st;
}
