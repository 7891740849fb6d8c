/* ctq verify-weights: dequantized modules against their source (see
 * verify_weights.h). */
#include "conform/verify_weights.h"
#include "checkpoint/packed.h"
#include "checkpoint/target.h"
#include "core/json.h"
#include "core/policy.h"
#include "core/numerics.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- the policy ------------------------------------------------------------ */

static enum ctq_status policy_apply(void *policy, const cJSON *root, const char *file,
				    struct ctq_error *err)
{
	struct ctq_vw_policy *p = policy;
	const cJSON *m = ctq_json_get(root, "rel_l2_max");
	if (m && !cJSON_IsObject(m))
		return ctq_error_set(err, CTQ_ERR_USAGE, "rel_l2_max",
				     "is not an object of scheme: number (in %s)", file);
	for (const cJSON *c = m ? m->child : NULL; c; c = c->next) {
		if (!cJSON_IsNumber(c) || !(c->valuedouble >= 0.0) || strlen(c->string) >= 32)
			return ctq_error_set(err, CTQ_ERR_USAGE, c->string,
					     "rel_l2_max.%s is not a number >= 0 for a scheme name of at "
					     "most 31 characters (in %s)", c->string, file);
		int i = 0;
		while (i < p->n && strcmp(p->scheme[i], c->string))
			i++;
		if (i == CTQ_VW_MAX_SCHEMES)
			return ctq_error_set(err, CTQ_ERR_USAGE, c->string,
					     "more than %d schemes in rel_l2_max (in %s)",
					     CTQ_VW_MAX_SCHEMES, file);
		snprintf(p->scheme[i], sizeof p->scheme[i], "%s", c->string);
		p->rel_l2_max[i] = c->valuedouble;
		if (i == p->n)
			p->n++;
	}
	return CTQ_OK;
}

void ctq_vw_policy_default(struct ctq_vw_policy *p)
{
	ctq_policy_default(p, sizeof *p, CTQ_VW_POLICY_FILE, policy_apply, p->source);
}

enum ctq_status ctq_vw_policy_load(struct ctq_vw_policy *p, const char *path,
				   struct ctq_error *err)
{
	return ctq_policy_load(p, path, policy_apply, p->source, err);
}

static double threshold(const struct ctq_vw_policy *p, const char *scheme)
{
	for (int i = 0; i < p->n; i++)
		if (!strcmp(p->scheme[i], scheme))
			return p->rel_l2_max[i];
	return -1.0;
}

/* ---- rows ------------------------------------------------------------------ */

void ctq_vw_result_free(struct ctq_vw_result *r)
{
	if (!r)
		return;
	ctq_free(r->rows);
	ctq_arena_free(&r->arena);
	memset(r, 0, sizeof *r);
}

static struct ctq_vw_row *add_row(struct ctq_vw_result *r, const char *tensor, const char *module,
				  const char *scheme)
{
	if (r->n_rows == r->cap_rows) {
		size_t cap = r->cap_rows ? 2 * r->cap_rows : 64;
		struct ctq_vw_row *v = ctq_malloc(cap * sizeof *v);
		if (!v)
			return NULL;
		if (r->n_rows)
			memcpy(v, r->rows, r->n_rows * sizeof *v);
		ctq_free(r->rows);
		r->rows = v;
		r->cap_rows = cap;
	}
	struct ctq_vw_row *row = &r->rows[r->n_rows];
	memset(row, 0, sizeof *row);
	row->tensor = ctq_arena_strdup(&r->arena, tensor);
	row->module = ctq_arena_strdup(&r->arena, module);
	row->scheme = ctq_arena_strdup(&r->arena, scheme);
	if (!row->tensor || !row->module || !row->scheme)
		return NULL;
	row->rel_l2 = row->max_abs_err = NAN;
	row->rel_l2_max = -1.0;
	r->n_rows++;
	return row;
}

static void fail_row(struct ctq_vw_result *r, struct ctq_vw_row *row, const char *reason)
{
	row->passed = false;
	row->reason = ctq_arena_strdup(&r->arena, reason);
	if (!row->reason)
		row->reason = "out of memory";
	r->n_failed++;
}

/* ---- one quantized module --------------------------------------------------- */

/* A W8A8 (int-quantized, int8) module read into the unpacked form:
 * weight I8 [N, K], weight_scale [N, 1], [N], [1] or [N, G]; symmetric. */
static enum ctq_status read_int8(const struct ctq_checkpoint *ck, const char *module,
				 const struct ctq_packed_args *a, struct ctq_packed_module *m,
				 struct ctq_error *err)
{
	char name[CTQ_PATH_MAX];
	memset(m, 0, sizeof *m);
	m->a = *a;
	snprintf(name, sizeof name, "%s.weight", module);
	const struct ctq_st_tensor *w = ctq_checkpoint_find(ck, name, NULL);
	if (!w || w->dtype != CTQ_DTYPE_I8 || w->ndim != 2)
		return ctq_error_set(err, CTQ_ERR_CHECKPOINT, name,
				     w ? "is %s with %d dimension(s); expected I8 [N, K]" : "is missing",
				     w ? ctq_dtype_name(w->dtype) : "", w ? w->ndim : 0);
	m->N = w->shape[0];
	m->K = w->shape[1];
	m->n_groups = ctq_packed_groups(m->K, a->group_size);
	snprintf(name, sizeof name, "%s.weight_scale", module);
	const struct ctq_st_tensor *s = ctq_checkpoint_find(ck, name, NULL);
	const bool per_tensor = s && s->n_elements == 1;
	if (!s)
		return ctq_error_set(err, CTQ_ERR_CHECKPOINT, name, "is missing");
	if ((s->dtype != CTQ_DTYPE_BF16 && s->dtype != CTQ_DTYPE_F16 && s->dtype != CTQ_DTYPE_F32) ||
	    (!per_tensor && s->n_elements != (uint64_t)(m->N * m->n_groups)))
		return ctq_error_set(err, CTQ_ERR_CHECKPOINT, name,
				     "is %s with %llu element(s); expected a float scale per tensor or "
				     "per output channel%s (%lld)", ctq_dtype_name(s->dtype),
				     (unsigned long long)s->n_elements, m->n_groups > 1 ? " and group" : "",
				     (long long)(m->N * m->n_groups));
	m->q = ctq_malloc((size_t)(m->N * m->K));
	m->scale = ctq_malloc((size_t)(m->N * m->n_groups) * sizeof *m->scale);
	if (!m->q || !m->scale) {
		ctq_packed_free(m);
		return ctq_error_set(err, CTQ_ERR_NOMEM, module, "out of memory");
	}
	memcpy(m->q, w->data, w->n_bytes);
	ctq_convert_to_f32(s->data, s->dtype, (size_t)s->n_elements, m->scale);
	for (int64_t i = 1; per_tensor && i < m->N * m->n_groups; i++)
		m->scale[i] = m->scale[0];
	m->scale_dtype = s->dtype;
	return CTQ_OK;
}

/* Compares module m's dequantized weight with src into row. */
static void compare(const struct ctq_packed_module *m, const struct ctq_st_tensor *src,
		    float *w_ref, float *w_deq, struct ctq_vw_row *row)
{
	const size_t esz = ctq_dtype_size(src->dtype);
	double e2 = 0.0, w2 = 0.0, worst = 0.0;
	int64_t bad = 0;
	for (int64_t n = 0; n < m->N; n++) {
		ctq_convert_to_f32((const unsigned char *)src->data + (size_t)(n * m->K) * esz,
				   src->dtype, (size_t)m->K, w_ref);
		ctq_packed_dequant_row(m, n, w_deq);
		for (int64_t k = 0; k < m->K; k++) {
			if (!isfinite(w_ref[k]) || !isfinite(w_deq[k])) {
				bad++;
				continue;
			}
			const double d = (double)w_deq[k] - (double)w_ref[k];
			e2 += d * d;
			w2 += (double)w_ref[k] * (double)w_ref[k];
			worst = fabs(d) > worst ? fabs(d) : worst;
		}
	}
	row->rel_l2 = w2 > 0.0 ? sqrt(e2 / w2) : (e2 > 0.0 ? INFINITY : 0.0);
	row->max_abs_err = worst;
	row->nonfinite = bad;
}

static enum ctq_status check_module(struct ctq_vw_result *r, const struct ctq_target *t,
				    const struct ctq_checkpoint *ref, size_t i,
				    const struct ctq_vw_policy *p, struct ctq_error *err)
{
	const struct ctq_plan_entry *e = &t->plan.entries[i];
	const char *module = t->mods.v[i].name;
	char src_name[CTQ_PATH_MAX], why[CTQ_MESSAGE_MAX];
	snprintf(src_name, sizeof src_name, "%s.weight", module);
	struct ctq_vw_row *row = add_row(r, src_name, module, e->scheme ? e->scheme : "error");
	if (!row)
		return ctq_error_set(err, CTQ_ERR_NOMEM, module, "out of memory");
	r->n_modules++;
	if (e->error) {
		snprintf(why, sizeof why, "the config does not resolve it: %s", e->message);
		fail_row(r, row, why);
		return CTQ_OK;
	}
	row->rel_l2_max = threshold(p, e->scheme);
	const struct ctq_st_tensor *src = ctq_checkpoint_find(ref, src_name, NULL);
	if (!src || src->ndim != 2 ||
	    (src->dtype != CTQ_DTYPE_BF16 && src->dtype != CTQ_DTYPE_F16 && src->dtype != CTQ_DTYPE_F32)) {
		fail_row(r, row, src ? "the source weight is not a 2-D float tensor"
				     : "the source has no such weight (a module the source does not have)");
		return CTQ_OK;
	}
	struct ctq_packed_args a;
	bool packed = false;
	const char *no = ctq_packed_layout(e->group >= 0 ? t->cfg.groups[e->group].scheme.weights : NULL,
					   e->format, &a, &packed);
	if (no) {
		snprintf(why, sizeof why, "cannot be dequantized: %s (format %s)", no,
			 e->format ? e->format : "none");
		fail_row(r, row, why);
		return CTQ_OK;
	}
	struct ctq_packed_module m;
	struct ctq_error sub = {0};
	if (packed ? ctq_packed_read(&t->ck, module, &a, &m, &sub) : read_int8(&t->ck, module, &a, &m, &sub)) {
		if (sub.status == CTQ_ERR_NOMEM)
			return ctq_error_set(err, CTQ_ERR_NOMEM, module, "out of memory");
		snprintf(why, sizeof why, "%s: %s", sub.path, sub.message);
		fail_row(r, row, why);
		return CTQ_OK;
	}
	row->N = m.N;
	row->K = m.K;
	if (m.N != src->shape[0] || m.K != src->shape[1]) {
		snprintf(why, sizeof why, "dequantizes to [%lld, %lld]; the source weight is [%lld, %lld]",
			 (long long)m.N, (long long)m.K, (long long)src->shape[0], (long long)src->shape[1]);
		ctq_packed_free(&m);
		fail_row(r, row, why);
		return CTQ_OK;
	}
	float *w_ref = ctq_malloc((size_t)m.K * sizeof *w_ref), *w_deq = ctq_malloc((size_t)m.K * sizeof *w_deq);
	if (!w_ref || !w_deq) {
		ctq_free(w_ref);
		ctq_free(w_deq);
		ctq_packed_free(&m);
		return ctq_error_set(err, CTQ_ERR_NOMEM, module, "out of memory");
	}
	compare(&m, src, w_ref, w_deq, row);
	ctq_free(w_ref);
	ctq_free(w_deq);
	ctq_packed_free(&m);
	if (r->n_modules == 1 || row->rel_l2 < r->rel_l2_min)
		r->rel_l2_min = row->rel_l2;
	if (r->n_modules == 1 || row->rel_l2 > r->rel_l2_max)
		r->rel_l2_max = row->rel_l2;
	if (row->nonfinite) {
		snprintf(why, sizeof why, "%lld NaN or Inf element(s) in the dequantized or source weight",
			 (long long)row->nonfinite);
		fail_row(r, row, why);
	} else if (row->rel_l2_max < 0) {
		snprintf(why, sizeof why, "no rel_l2_max for scheme %s in %s: no verdict without a "
			 "threshold", e->scheme, p->source);
		fail_row(r, row, why);
	} else if (!(row->rel_l2 <= row->rel_l2_max)) {
		snprintf(why, sizeof why, "rel-L2 %.4g exceeds %s's %.4g (%s): a wrong scheme, a "
			 "transposed or mis-grouped scale, or other weights", row->rel_l2, e->scheme,
			 row->rel_l2_max, p->source);
		fail_row(r, row, why);
	} else {
		row->passed = true;
		row->reason = "within the threshold";
	}
	return CTQ_OK;
}

/* ---- the inventory ---------------------------------------------------------- */

/* The module index when name is <module>.<suffix> of a quantized module
 * (quantized: per module), with suffix one a quantized module may hold. */
static bool quant_tensor(const struct ctq_target *t, const bool *quantized, const char *name,
			 bool source_side)
{
	static const char *const suffixes[] = {"weight", "weight_packed", "weight_scale",
					       "weight_shape", "weight_zero_point", "weight_g_idx",
					       "input_scale", "input_zero_point", "output_scale",
					       "output_zero_point", "weight_global_scale",
					       "input_global_scale"};
	const char *dot = strrchr(name, '.');
	if (!dot || (size_t)(dot - name) >= CTQ_PATH_MAX)
		return false;
	char module[CTQ_PATH_MAX];
	memcpy(module, name, (size_t)(dot - name));
	module[dot - name] = '\0';
	long i = ctq_modules_find(&t->mods, module);
	if (i < 0 || !quantized[i])
		return false;
	if (source_side)
		return !strcmp(dot + 1, "weight");
	for (size_t s = 0; s < sizeof suffixes / sizeof *suffixes; s++)
		if (!strcmp(dot + 1, suffixes[s]))
			return true;
	return false;
}

static enum ctq_status inventory(struct ctq_vw_result *r, const struct ctq_target *t,
				 const struct ctq_checkpoint *ref, const bool *quantized,
				 struct ctq_error *err)
{
	for (size_t i = 0; i < ctq_checkpoint_count(ref); i++) {
		const struct ctq_st_tensor *s = ctq_checkpoint_at(ref, i, NULL);
		if (quant_tensor(t, quantized, s->name, true))
			continue;
		const struct ctq_st_tensor *q = ctq_checkpoint_find(&t->ck, s->name, NULL);
		const char *why = !q ? "is in the source and missing from the quantized checkpoint"
				  : q->dtype != s->dtype || q->n_bytes != s->n_bytes || q->ndim != s->ndim ||
					  memcmp(q->shape, s->shape, sizeof q->shape)
				  ? "differs in dtype or shape from the source's"
				  : memcmp(q->data, s->data, s->n_bytes) ? "differs from the source's bytes"
									 : NULL;
		if (!why) {
			r->n_copied++;
			continue;
		}
		struct ctq_vw_row *row = add_row(r, s->name, "", "copy");
		if (!row)
			return ctq_error_set(err, CTQ_ERR_NOMEM, s->name, "out of memory");
		fail_row(r, row, why);
	}
	for (size_t i = 0; i < ctq_checkpoint_count(&t->ck); i++) {
		const struct ctq_st_tensor *q = ctq_checkpoint_at(&t->ck, i, NULL);
		if (quant_tensor(t, quantized, q->name, false) || ctq_checkpoint_find(ref, q->name, NULL))
			continue;
		struct ctq_vw_row *row = add_row(r, q->name, "", "extra");
		if (!row)
			return ctq_error_set(err, CTQ_ERR_NOMEM, q->name, "out of memory");
		fail_row(r, row, "is in the quantized checkpoint and neither a source tensor nor a "
				 "quantized module's");
	}
	return CTQ_OK;
}

enum ctq_status ctq_verify_weights(const char *quant, const char *ref,
				   const struct ctq_vw_policy *p, struct ctq_vw_result *r,
				   struct ctq_error *err)
{
	memset(r, 0, sizeof *r);
	ctq_arena_init(&r->arena);
	struct ctq_target t;
	struct ctq_checkpoint rck;
	memset(&rck, 0, sizeof rck);
	bool *quantized = NULL;
	enum ctq_status st;
	if ((st = ctq_target_open(&t, quant, CTQ_SEM_CT, CTQ_TARGET_TENSORS, err)) ||
	    (st = ctq_checkpoint_open(&rck, ref, err)))
		goto done;
	quantized = ctq_calloc(t.mods.n ? t.mods.n : 1, sizeof *quantized);
	if (!quantized) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, quant, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < t.mods.n; i++) {
		const struct ctq_plan_entry *e = &t.plan.entries[i];
		quantized[i] = e->error || (e->scheme && strcmp(e->scheme, "unquantized"));
		if (quantized[i] && (st = check_module(r, &t, &rck, i, p, err)))
			goto done;
	}
	if (!r->n_modules) {
		st = ctq_error_set(err, CTQ_ERR_USAGE, quant,
				   "quantizes no module (its config resolves every module to "
				   "unquantized): nothing to verify");
		goto done;
	}
	st = inventory(r, &t, &rck, quantized, err);
done:
	ctq_free(quantized);
	ctq_checkpoint_close(&rck);
	ctq_target_close(&t);
	return st;
}
