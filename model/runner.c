/* ctq transformer runner (see runner.h). */
#include "model/runner.h"
#include "backend/tp.h"
#include "core/arena.h"
#include "core/dtype.h"
#include "core/hf_config.h"
#include "core/json.h"
#include "core/threads.h"
#include "checkpoint/loader.h"
#include "checkpoint/target.h"
#include "quant/arch.h"
#include "quant/modules.h"
#include "quant/qconfig.h"
#include "checkpoint/safetensors.h"
#include "quant/shard.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- config ----------------------------------------------------------------- */

/* config.json as transformers 4 and 5 write it. transformers 5 keeps the
 * RoPE fields in one `rope_parameters` object (rope_type, rope_theta and the
 * scaling keys); transformers 4 wrote `rope_theta` at the top level and the
 * scaling keys in `rope_scaling` (with `type` before `rope_type`). Both are
 * read as transformers 5 reads them (PreTrainedConfig.
 * convert_rope_params_to_dict and standardize_rope_params in
 * modeling_rope_utils.py). Where a field is missing the runner takes the
 * default transformers' Qwen3Config / Qwen2Config / LlamaConfig apply only
 * where that default is the model's own (rms_norm_eps, hidden_act, ...);
 * where it is a guess that silently changes the model (rope_theta 10000,
 * Qwen3's head_dim 128 against another hidden_size / heads) the field is
 * required. Errors name the field by its path from the root of config.json. */

struct cfgctx {
	const cJSON *o;   /* the model's object: the root or text_config */
	const char *base; /* its path: "" or "text_config" */
	struct ctq_error *err;
};

/* The path of key inside member obj (NULL: directly) of the model's object. */
static const char *cfg_path(const struct cfgctx *x, char *buf, size_t cap, const char *obj,
			    const char *key)
{
	char tmp[CTQ_PATH_MAX];
	if (!obj) {
		ctq_json_path_key(buf, cap, x->base, key);
		return buf;
	}
	ctq_json_path_key(tmp, sizeof tmp, x->base, obj);
	ctq_json_path_key(buf, cap, tmp, key);
	return buf;
}

/* A member that is absent or null counts as not written (transformers maps
 * null to its default the same way). */
static const cJSON *cfg_get(const cJSON *o, const char *key)
{
	const cJSON *v = ctq_json_get(o, key);
	return cJSON_IsNull(v) ? NULL : v;
}

/* A finite number in [lo, hi] at path, or an invalid-config error. */
static enum ctq_status cfg_num(const cJSON *v, const char *path, double lo, double hi, double *out,
			       struct ctq_error *err)
{
	if (!cJSON_IsNumber(v))
		return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, path, "is %s; expected a number",
				     ctq_json_type_name(v));
	if (!isfinite(v->valuedouble) || v->valuedouble < lo || v->valuedouble > hi)
		return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, path, "is %g; expected a number in [%g, %g]",
				     v->valuedouble, lo, hi);
	*out = v->valuedouble;
	return CTQ_OK;
}

/* The RoPE fields. P is the RoPE object: rope_scaling when it is set (as in
 * transformers 5, which reads a legacy rope_scaling over rope_parameters),
 * else rope_parameters. */
static enum ctq_status cfg_rope(struct ctq_model_config *c, const struct cfgctx *x)
{
	struct ctq_error *err = x->err;
	char path[CTQ_PATH_MAX], path2[CTQ_PATH_MAX];
	const cJSON *rs = cfg_get(x->o, "rope_scaling"), *rp = cfg_get(x->o, "rope_parameters");
	static const char *const keys[2] = {"rope_scaling", "rope_parameters"};
	const cJSON *objs[2] = {rs, rp};
	for (int i = 0; i < 2; i++)
		if (objs[i] && !cJSON_IsObject(objs[i]))
			return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, cfg_path(x, path, sizeof path, NULL, keys[i]),
					     "is %s; expected an object or null", ctq_json_type_name(objs[i]));
	/* Both written and different: transformers 5 would drop rope_parameters
	 * (its rope_theta included) for rope_scaling; that is never what the
	 * writer meant. */
	if (rs && rp && !cJSON_Compare(rs, rp, true))
		return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, cfg_path(x, path, sizeof path, NULL, "rope_scaling"),
				     "and rope_parameters are both set and differ; write the RoPE fields in one of them");
	const char *pk = rs ? "rope_scaling" : "rope_parameters";
	const cJSON *P = rs ? rs : rp;
	/* rope_parameters keyed by layer type (full_attention, ...) */
	for (const cJSON *m = P ? P->child : NULL; m; m = m->next)
		if (cJSON_IsObject(m))
			return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, cfg_path(x, path, sizeof path, pk, m->string),
					     "per-layer-type RoPE parameters are not implemented by the runner");

	const char *tk = "rope_type";
	const cJSON *t = cfg_get(P, "rope_type");
	if (!t && (t = cfg_get(P, "type")))
		tk = "type"; /* transformers 4's name */
	if (t && !cJSON_IsString(t))
		return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, cfg_path(x, path, sizeof path, pk, tk),
				     "is %s; expected a string", ctq_json_type_name(t));
	const char *type = t ? t->valuestring : "default";
	if (!strcmp(type, "llama3"))
		c->llama3_rope = true;
	else if (strcmp(type, "default"))
		return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, cfg_path(x, path, sizeof path, pk, tk),
				     "is \"%s\"; the runner implements the RoPE types default and llama3", type);

	/* rope_theta: inside the RoPE object first (transformers 5 setdefault()s
	 * the top-level value into it). transformers takes 10000 when neither
	 * is written; no Qwen2/Qwen3 (1e6) or Llama 3 (5e5) checkpoint uses
	 * that, and a config the runner misreads would pass for one, so it is
	 * required here. */
	const cJSON *th = cfg_get(P, "rope_theta");
	cfg_path(x, path, sizeof path, "rope_parameters", "rope_theta");
	if (th)
		cfg_path(x, path, sizeof path, pk, "rope_theta");
	else if ((th = cfg_get(x->o, "rope_theta")))
		cfg_path(x, path, sizeof path, NULL, "rope_theta");
	else
		return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, path,
				     "is missing, and so is %s: the RoPE base must be written (transformers would take 10000)",
				     cfg_path(x, path2, sizeof path2, NULL, "rope_theta"));
	enum ctq_status st = cfg_num(th, path, 1e-30, 1e30, &c->rope_theta, err);
	if (st)
		return st;

	/* The runner rotates the whole head. */
	const cJSON *pr = cfg_get(P, "partial_rotary_factor");
	cfg_path(x, path, sizeof path, pk, "partial_rotary_factor");
	if (!pr && (pr = cfg_get(x->o, "partial_rotary_factor")))
		cfg_path(x, path, sizeof path, NULL, "partial_rotary_factor");
	double prf = 1.0;
	if (pr && ((st = cfg_num(pr, path, 0.0, 1.0, &prf, err)) || prf != 1.0))
		return st ? st : ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, path,
					       "is %g; the runner implements full rotary embeddings only (1.0)", prf);
	if (!c->llama3_rope)
		return CTQ_OK;

	/* llama3: transformers requires factor, low_freq_factor and
	 * high_freq_factor (a KeyError otherwise). original_max_position_embeddings
	 * comes from the top level first (standardize_rope_params, run again
	 * when the model builds its rotary embedding, gives a config attribute
	 * of that name priority), then the RoPE object, then
	 * max_position_embeddings. */
	static const struct { const char *k; double lo; size_t off; } req[] = {
		{"factor", 1e-6, offsetof(struct ctq_model_config, rope_factor)},
		{"low_freq_factor", 1e-6, offsetof(struct ctq_model_config, rope_low)},
		{"high_freq_factor", 1e-6, offsetof(struct ctq_model_config, rope_high)},
	};
	for (size_t i = 0; i < sizeof req / sizeof *req; i++) {
		const cJSON *v = cfg_get(P, req[i].k);
		cfg_path(x, path, sizeof path, pk, req[i].k);
		if (!v)
			return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, path, "is missing (rope_type llama3 requires it)");
		if ((st = cfg_num(v, path, req[i].lo, 1e30, (double *)((char *)c + req[i].off), err)))
			return st;
	}
	/* The smoothing divides by high - low; transformers warns on high <= low. */
	if (!(c->rope_high > c->rope_low))
		return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, cfg_path(x, path, sizeof path, pk, "high_freq_factor"),
				     "is %g; llama3 RoPE needs it above low_freq_factor (%g)", c->rope_high, c->rope_low);
	const cJSON *om = cfg_get(x->o, "original_max_position_embeddings");
	cfg_path(x, path, sizeof path, NULL, "original_max_position_embeddings");
	if (!om && (om = cfg_get(P, "original_max_position_embeddings")))
		cfg_path(x, path, sizeof path, pk, "original_max_position_embeddings");
	if (!om && (om = cfg_get(x->o, "max_position_embeddings")))
		cfg_path(x, path, sizeof path, NULL, "max_position_embeddings");
	if (!om)
		return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG,
				     cfg_path(x, path, sizeof path, pk, "original_max_position_embeddings"),
				     "is missing, and so is max_position_embeddings (rope_type llama3 requires one)");
	return cfg_num(om, path, 1.0, 1e12, &c->rope_orig_max, err);
}

enum ctq_status ctq_model_config_parse(struct ctq_model_config *c, const cJSON *root,
				       struct ctq_error *err)
{
	memset(c, 0, sizeof *c);
	const char *where = "";
	const cJSON *text = ctq_hf_config_text(root, &where);
	struct cfgctx x = {text, where, err};
	const cJSON *o = x.o;
	char path[CTQ_PATH_MAX];
	const cJSON *mt = ctq_json_get(o, "model_type");
	c->arch = cJSON_IsString(mt) ? ctq_arch_normalise(mt->valuestring) : NULL;
	const cJSON *cn = ctq_json_get(root, "_class_name");
	if (!c->arch && cJSON_IsString(cn) && ctq_arch_dit_find(cn->valuestring))
		return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, "_class_name",
				     "is %s, a diffusion transformer: inspect and probe only — ctq inspects, probes (probe --model) and quantizes this tree, but the runner executes qwen3, qwen2 and llama",
				     cn->valuestring);
	if (!c->arch && cJSON_IsString(mt) && ctq_arch_find(mt->valuestring))
		return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, cfg_path(&x, path, sizeof path, NULL, "model_type"),
				     "is %s: inspect and probe only — ctq inspects, probes (probe --model) and quantizes this tree, but the runner executes qwen3, qwen2 and llama",
				     mt->valuestring);
	if (!c->arch)
		return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, cfg_path(&x, path, sizeof path, NULL, "model_type"),
				     "is %s; the runner executes qwen3, qwen2 and llama",
				     cJSON_IsString(mt) ? mt->valuestring : "missing");
	const bool qwen3 = !strcmp(c->arch, "qwen3"), qwen = qwen3 || !strcmp(c->arch, "qwen2");
	static const struct { const char *k; size_t off; } req[] = {
		{"hidden_size", offsetof(struct ctq_model_config, hidden)},
		{"num_hidden_layers", offsetof(struct ctq_model_config, layers)},
		{"num_attention_heads", offsetof(struct ctq_model_config, heads)},
		{"intermediate_size", offsetof(struct ctq_model_config, intermediate)},
		{"vocab_size", offsetof(struct ctq_model_config, vocab)},
	};
	enum ctq_status st;
	for (size_t i = 0; i < sizeof req / sizeof *req; i++) {
		long v;
		cfg_path(&x, path, sizeof path, NULL, req[i].k);
		if ((st = ctq_json_int(ctq_json_get(o, req[i].k), path, 1, 1L << 30, &v, err)))
			return st;
		*(int64_t *)((char *)c + req[i].off) = v;
	}
	/* num_key_value_heads: null means the attention heads in every config
	 * class; absent, Qwen2Config / Qwen3Config take 32 and LlamaConfig the
	 * attention heads. ctq's module enumeration (quant/modules.c) takes the
	 * attention heads, so an absent value is accepted only where both agree. */
	const cJSON *kv = ctq_json_get(o, "num_key_value_heads");
	long v;
	cfg_path(&x, path, sizeof path, NULL, "num_key_value_heads");
	if (kv && !cJSON_IsNull(kv)) {
		if ((st = ctq_json_int(kv, path, 1, 1L << 30, &v, err)))
			return st;
		c->kv_heads = v;
	} else if (!kv && qwen && c->heads != 32) {
		return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, path,
				     "is missing: transformers' %s config would take 32, not the %lld attention heads; write it",
				     c->arch, (long long)c->heads);
	} else {
		c->kv_heads = c->heads;
	}
	/* head_dim: absent (or null), hidden_size / num_attention_heads, as
	 * LlamaConfig and the Qwen2 attention compute it; Qwen3Config's default
	 * is 128, accepted only where it is that quotient too. */
	const cJSON *hd = cfg_get(o, "head_dim");
	cfg_path(&x, path, sizeof path, NULL, "head_dim");
	if (hd) {
		if ((st = ctq_json_int(hd, path, 2, 1L << 20, &v, err)))
			return st;
		c->head_dim = v;
	} else {
		c->head_dim = c->hidden / c->heads;
		if (qwen3 && c->head_dim != 128)
			return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, path,
					     "is missing: transformers' Qwen3Config would take 128, not hidden_size / num_attention_heads = %lld; write it",
					     (long long)c->head_dim);
	}
	if (c->heads % c->kv_heads || c->head_dim < 2 || c->head_dim % 2)
		return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG,
				     cfg_path(&x, path, sizeof path, NULL, "num_key_value_heads"),
				     "heads %lld, kv heads %lld, head_dim %lld do not form a valid attention",
				     (long long)c->heads, (long long)c->kv_heads, (long long)c->head_dim);
	/* rms_norm_eps: 1e-6 when absent, the default of all three config
	 * classes in transformers 4 and 5 and the value their checkpoints ship
	 * (Llama 2's 1e-5 is always written). */
	double eps = 1e-6;
	const cJSON *e = cfg_get(o, "rms_norm_eps");
	if (e && (st = cfg_num(e, cfg_path(&x, path, sizeof path, NULL, "rms_norm_eps"), 0.0, 1.0, &eps, err)))
		return st;
	c->rms_eps = (float)eps;
	/* hidden_act: silu in all three classes; the runner implements only it. */
	const cJSON *act = cfg_get(o, "hidden_act");
	if (act && !(cJSON_IsString(act) && !strcmp(act->valuestring, "silu")))
		return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, cfg_path(&x, path, sizeof path, NULL, "hidden_act"),
				     "is %s%s%s; the runner implements silu", cJSON_IsString(act) ? "\"" : "",
				     cJSON_IsString(act) ? act->valuestring : ctq_json_type_name(act),
				     cJSON_IsString(act) ? "\"" : "");
	if ((st = cfg_rope(c, &x)))
		return st;
	/* tie_word_embeddings: false when absent in all three classes. */
	const cJSON *tie = cfg_get(o, "tie_word_embeddings");
	if (!tie)
		tie = cfg_get(root, "tie_word_embeddings");
	c->tie = cJSON_IsTrue(tie);
	c->qk_norm = qwen3;
	c->qkv_bias = !strcmp(c->arch, "qwen2");
	const cJSON *ab = ctq_json_get(o, "attention_bias");
	if (cJSON_IsBool(ab))
		c->qkv_bias = cJSON_IsTrue(ab);
	const cJSON *bos = cfg_get(o, "bos_token_id");
	if (!bos)
		bos = cfg_get(root, "bos_token_id");
	c->bos_id = cJSON_IsNumber(bos) ? (int32_t)bos->valuedouble : -1;
	const cJSON *eos = cfg_get(o, "eos_token_id");
	if (!eos)
		eos = cfg_get(root, "eos_token_id");
	if (cJSON_IsArray(eos))
		eos = eos->child;
	c->eos_id = cJSON_IsNumber(eos) ? (int32_t)eos->valuedouble : -1;
	return CTQ_OK;
}

double ctq_log_softmax_norm(const float *logits, int64_t vocab, double *max)
{
	double mx = -INFINITY;
	for (int64_t i = 0; i < vocab; i++)
		if (logits[i] > mx)
			mx = logits[i];
	double sum = 0;
	for (int64_t i = 0; i < vocab; i++)
		sum += exp((double)logits[i] - mx);
	*max = mx;
	return log(sum);
}

double ctq_logprob(const float *logits, int64_t vocab, int32_t token)
{
	double mx;
	const double lse = ctq_log_softmax_norm(logits, vocab, &mx);
	return (double)logits[token] - mx - lse;
}

/* ---- loading ------------------------------------------------------------------ */

struct loadctx {
	struct ctq_runner *r;
	const struct ctq_checkpoint *ck;
	const struct ctq_plan *plan;
	const struct ctq_shard_plan *sp;
	int rank;
	struct ctq_error *err;
};

static enum ctq_status up(struct ctq_runner *r, const void *src, size_t n, void **out,
			  struct ctq_error *err)
{
	struct ctq_backend *b = r->b;
	enum ctq_status st = b->ops->alloc(b, n ? n : 4, out, err);
	if (!st && n && (st = b->ops->upload(b, *out, src, n, err))) {
		b->ops->free(b, *out);
		*out = NULL;
	}
	if (!st)
		r->weight_bytes += n;
	return st;
}

/* Loads and concatenates (by rows) the members of one runtime linear. */
static enum ctq_status load_lin(struct loadctx *L, const char *const *names, size_t n_names,
				struct ctq_lin *out)
{
	struct ctq_runner *r = L->r;
	struct ctq_linear parts[3];
	memset(parts, 0, sizeof parts);
	memset(out, 0, sizeof *out);
	enum ctq_status st = CTQ_OK;
	int64_t N = 0;
	bool any_bias = false;
	for (size_t i = 0; i < n_names && !st; i++) {
		long m = ctq_modules_find(L->plan->mods, names[i]);
		if (m < 0)
			return ctq_error_set(L->err, CTQ_ERR_CHECKPOINT, names[i], "module not in the model");
		st = ctq_load_linear(L->ck, L->plan, L->sp, (size_t)m, L->rank, &parts[i], L->err);
		if (st)
			break;
		if (i && (parts[i].quantized != parts[0].quantized || parts[i].K != parts[0].K))
			st = ctq_error_set(L->err, CTQ_ERR_FUSED_MISMATCH, names[i],
					   "cannot fuse with %s: different scheme or input size", names[0]);
		N += parts[i].N;
		any_bias |= parts[i].bias != NULL;
	}
	if (st)
		goto done;
	const int64_t K = parts[0].K;
	out->quantized = parts[0].quantized;
	out->N = N;
	out->K = K;
	size_t esz = out->quantized ? 1 : 2;
	unsigned char *w = ctq_malloc((size_t)(N * K) * esz + 1);
	float *scale = out->quantized ? ctq_malloc((size_t)N * 4) : NULL;
	float *bias = any_bias ? ctq_calloc((size_t)N, 4) : NULL;
	if (!w || (out->quantized && !scale) || (any_bias && !bias)) {
		ctq_free(w), ctq_free(scale), ctq_free(bias);
		st = ctq_error_set(L->err, CTQ_ERR_NOMEM, names[0], "out of memory");
		goto done;
	}
	int64_t row = 0;
	for (size_t i = 0; i < n_names; i++) {
		const struct ctq_linear *p = &parts[i];
		memcpy(w + (size_t)(row * K) * esz, out->quantized ? (const void *)p->w_i8 : (const void *)p->w_bf16,
		       (size_t)(p->N * K) * esz);
		if (scale)
			memcpy(scale + row, p->scale, (size_t)p->N * 4);
		if (bias && p->bias)
			memcpy(bias + row, p->bias, (size_t)p->N * 4);
		row += p->N;
	}
	if (out->quantized) {
		st = up(r, w, (size_t)(N * K), &out->w, L->err);
		if (!st)
			st = up(r, scale, (size_t)N * 4, (void **)&out->scale, L->err);
		r->n_quantized += (int64_t)n_names;
	} else {
		st = r->b->ops->upload_dense(r->b, (const uint16_t *)w, (size_t)(N * K), &out->w, L->err);
		r->weight_bytes += (uint64_t)(N * K) * (uint64_t)(r->b->ops->act_bytes);
		r->n_dense += (int64_t)n_names;
	}
	if (!st && bias)
		st = up(r, bias, (size_t)N * 4, (void **)&out->bias, L->err);
	ctq_free(w), ctq_free(scale), ctq_free(bias);
done:
	for (size_t i = 0; i < 3; i++)
		ctq_linear_free(&parts[i]);
	return st;
}

static enum ctq_status load_vec(struct loadctx *L, const char *name, int64_t n, float **out)
{
	float *h = NULL;
	int64_t shape[1] = {n};
	enum ctq_status st = ctq_load_f32(L->ck, name, 1, shape, &h, L->err);
	if (!st)
		st = up(L->r, h, (size_t)n * 4, (void **)out, L->err);
	ctq_free(h);
	return st;
}

static void free_lin(struct ctq_backend *b, struct ctq_lin *l)
{
	b->ops->free(b, l->w);
	b->ops->free(b, l->scale);
	b->ops->free(b, l->bias);
	memset(l, 0, sizeof *l);
}

void ctq_runner_free(struct ctq_runner *r)
{
	if (!r || !r->b)
		return;
	struct ctq_backend *b = r->b;
	if (b->ops->bind)
		b->ops->bind(b, NULL);
	for (int64_t l = 0; r->layers && l < r->cfg.layers; l++) {
		struct ctq_layer *y = &r->layers[l];
		b->ops->free(b, y->in_norm);
		b->ops->free(b, y->post_norm);
		b->ops->free(b, y->q_norm);
		b->ops->free(b, y->k_norm);
		free_lin(b, &y->qkv);
		free_lin(b, &y->o);
		free_lin(b, &y->gu);
		free_lin(b, &y->down);
		if (r->k_cache)
			b->ops->free(b, r->k_cache[l]);
		if (r->v_cache)
			b->ops->free(b, r->v_cache[l]);
	}
	free(r->obs_bf16);
	free(r->obs_f32);
	for (int i = 0; i < 65; i++)
		if (r->graphs[i] && b->ops->graph_destroy)
			b->ops->graph_destroy(b, r->graphs[i]);
	if (r->lm_head.w != r->embed)
		free_lin(b, &r->lm_head);
	b->ops->free(b, r->embed);
	b->ops->free(b, r->final_norm);
	b->ops->free(b, r->inv_freq);
	void *scratch[] = {r->x, r->h, r->qkv, r->attn, r->gu, r->act, r->ws, r->rows, r->logits,
			   r->d_ids, r->d_slot, r->d_pos, r->d_rows};
	for (size_t i = 0; i < sizeof scratch / sizeof *scratch; i++)
		b->ops->free(b, scratch[i]);
	ctq_free(r->layers);
	ctq_free(r->k_cache);
	ctq_free(r->v_cache);
	memset(r, 0, sizeof *r);
}

static void inv_freq_host(const struct ctq_model_config *c, float *f)
{
	const int64_t half = c->head_dim / 2;
	for (int64_t i = 0; i < half; i++) {
		double fr = 1.0 / pow(c->rope_theta, (double)(2 * i) / (double)c->head_dim);
		if (c->llama3_rope) {
			const double lo_wl = c->rope_orig_max / c->rope_low;
			const double hi_wl = c->rope_orig_max / c->rope_high;
			const double wl = 6.283185307179586 / fr;
			if (wl > lo_wl) {
				fr /= c->rope_factor;
			} else if (wl >= hi_wl) {
				double sm = (c->rope_orig_max / wl - c->rope_low) / (c->rope_high - c->rope_low);
				fr = (1.0 - sm) * fr / c->rope_factor + sm * fr;
			}
		}
		f[i] = (float)fr;
	}
}

/* Embeddings (and the tied lm_head), converted to bf16 rows on the host. */
static enum ctq_status load_embed(struct loadctx *L, const char *dir)
{
	struct ctq_runner *r = L->r;
	struct ctq_backend *b = r->b;
	const struct ctq_model_config *c = &r->cfg;
	const int64_t H = c->hidden;
	const char *file;
	const struct ctq_st_tensor *e = ctq_checkpoint_find(L->ck, "model.embed_tokens.weight", &file);
	if (!e || e->ndim != 2 || e->shape[0] != c->vocab || e->shape[1] != H)
		return ctq_error_set(L->err, CTQ_ERR_CHECKPOINT, "model.embed_tokens.weight",
				     "is %s; expected [%lld, %lld]", e ? "of another shape" : "missing",
				     (long long)c->vocab, (long long)H);
	uint16_t *bf = ctq_malloc((size_t)e->n_elements * 2);
	float *tmp = ctq_malloc((size_t)H * 4);
	if (!bf || !tmp) {
		ctq_free(bf), ctq_free(tmp);
		return ctq_error_set(L->err, CTQ_ERR_NOMEM, dir, "out of memory");
	}
	for (int64_t v = 0; v < c->vocab; v++) {
		ctq_convert_to_f32((const char *)e->data + (size_t)(v * H) * ctq_dtype_size(e->dtype),
				   e->dtype, (size_t)H, tmp);
		ctq_convert_f32_to_bf16(tmp, (size_t)H, bf + v * H);
	}
	ctq_free(tmp);
	enum ctq_status st = b->ops->upload_dense(b, bf, (size_t)(c->vocab * H), &r->embed, L->err);
	r->weight_bytes += (uint64_t)(c->vocab * H) * b->ops->act_bytes;
	ctq_free(bf);
	return st;
}

/* Layer l: its norms and the fused runtime linears q/k/v, o, gate/up, down. */
static enum ctq_status load_layer(struct loadctx *L, int64_t l)
{
	const struct ctq_model_config *c = &L->r->cfg;
	const int64_t H = c->hidden, d = c->head_dim;
	struct ctq_layer *y = &L->r->layers[l];
	const char *p = "model.layers";
	char n[4][CTQ_PATH_MAX];
	const char *names[3];
	enum ctq_status st;
	snprintf(n[0], sizeof n[0], "%s.%lld.input_layernorm.weight", p, (long long)l);
	snprintf(n[1], sizeof n[1], "%s.%lld.post_attention_layernorm.weight", p, (long long)l);
	if ((st = load_vec(L, n[0], H, &y->in_norm)) || (st = load_vec(L, n[1], H, &y->post_norm)))
		return st;
	if (c->qk_norm) {
		snprintf(n[0], sizeof n[0], "%s.%lld.self_attn.q_norm.weight", p, (long long)l);
		snprintf(n[1], sizeof n[1], "%s.%lld.self_attn.k_norm.weight", p, (long long)l);
		if ((st = load_vec(L, n[0], d, &y->q_norm)) || (st = load_vec(L, n[1], d, &y->k_norm)))
			return st;
	}
	static const struct {
		enum ctq_hf_linear first;
		int n;
	} fused[4] = {{CTQ_HF_Q, 3}, {CTQ_HF_O, 1}, {CTQ_HF_GATE, 2}, {CTQ_HF_DOWN, 1}};
	struct ctq_lin *dst[4] = {&y->qkv, &y->o, &y->gu, &y->down};
	for (int f = 0; f < 4 && !st; f++) {
		for (int i = 0; i < fused[f].n; i++) {
			const struct ctq_hf_linear_info *h = &ctq_hf_linears[fused[f].first + i];
			snprintf(n[i], sizeof n[i], "%s.%lld.%s.%s", p, (long long)l, h->parent, h->leaf);
			names[i] = n[i];
		}
		st = load_lin(L, names, fused[f].n, dst[f]);
	}
	return st;
}

/* lm_head: its own (dense or W8A8) linear, or the embeddings when tied and absent. */
static enum ctq_status load_lm_head(struct loadctx *L, const struct ctq_target *t)
{
	struct ctq_runner *r = L->r;
	const struct ctq_model_config *c = &r->cfg;
	long m = ctq_modules_find(&t->mods, "lm_head");
	const struct ctq_plan_entry *e = m >= 0 ? &t->plan.entries[m] : NULL;
	bool quant = e && !strcmp(e->scheme, "w8a8-int8");
	if (!quant && !ctq_checkpoint_find(&t->ck, "lm_head.weight", NULL)) {
		if (!c->tie)
			return ctq_error_set(L->err, CTQ_ERR_CHECKPOINT, "lm_head.weight",
					     "is missing and tie_word_embeddings is false");
		r->lm_head = (struct ctq_lin){false, c->vocab, c->hidden, r->embed, NULL, NULL};
		r->n_dense++;
		return CTQ_OK;
	}
	const char *names[1] = {"lm_head"};
	return load_lin(L, names, 1, &r->lm_head);
}

/* KV cache, RoPE table and scratch, sized for opt's slots, lengths and tokens. */
static enum ctq_status alloc_state(struct ctq_runner *r, const char *dir, struct ctq_error *err)
{
	struct ctq_backend *b = r->b;
	const struct ctq_runner_options *opt = &r->opt;
	const struct ctq_model_config *c = &r->cfg;
	const int64_t H = c->hidden, d = c->head_dim;
	const int64_t T = opt->max_tokens, kvrow = r->kv_local * d, ab = (int64_t)b->ops->act_bytes;
	const int64_t nqkv = (r->heads_local + 2 * r->kv_local) * d, I = r->inter_local;
	enum ctq_status st;
	for (int64_t l = 0; l < c->layers; l++) {
		size_t bytes = (size_t)(opt->max_slots * opt->max_len * kvrow * ab);
		if ((st = b->ops->alloc(b, bytes, &r->k_cache[l], err)) ||
		    (st = b->ops->alloc(b, bytes, &r->v_cache[l], err)))
			return st;
	}
	float *invf = ctq_malloc((size_t)(d / 2) * 4);
	if (!invf)
		return ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
	inv_freq_host(c, invf);
	st = up(r, invf, (size_t)(d / 2) * 4, (void **)&r->inv_freq, err);
	ctq_free(invf);
	if (st)
		return st;
	int64_t kmax = H > r->heads_local * d ? H : r->heads_local * d;
	if (I > kmax)
		kmax = I;
	r->ws_bytes = ctq_w8a8_workspace_bytes(T, kmax);
	if ((st = b->ops->alloc(b, (size_t)(T * H * ab), &r->x, err)) ||
	    (st = b->ops->alloc(b, (size_t)(T * H * ab), &r->h, err)) ||
	    (st = b->ops->alloc(b, (size_t)(T * nqkv * ab), &r->qkv, err)) ||
	    (st = b->ops->alloc(b, (size_t)(T * r->heads_local * d * ab), &r->attn, err)) ||
	    (st = b->ops->alloc(b, (size_t)(T * 2 * I * ab), &r->gu, err)) ||
	    (st = b->ops->alloc(b, (size_t)(T * I * ab), &r->act, err)) ||
	    (st = b->ops->alloc(b, r->ws_bytes, &r->ws, err)) ||
	    (st = b->ops->alloc(b, (size_t)(T * H * ab), &r->rows, err)) ||
	    (st = b->ops->alloc(b, (size_t)(T * 4), (void **)&r->d_ids, err)) ||
	    (st = b->ops->alloc(b, (size_t)(T * 4), (void **)&r->d_slot, err)) ||
	    (st = b->ops->alloc(b, (size_t)(T * 4), (void **)&r->d_pos, err)) ||
	    (st = b->ops->alloc(b, (size_t)(T * 4), (void **)&r->d_rows, err)))
		return st;
	/* an observer's host view of BF16 activations: the widest it sees */
	if ((opt->observe || opt->layer_end) && ab != 4) {
		r->obs_cap = T * kmax;
		r->obs_bf16 = ctq_malloc((size_t)r->obs_cap * sizeof *r->obs_bf16);
		r->obs_f32 = ctq_malloc((size_t)r->obs_cap * sizeof *r->obs_f32);
		if (!r->obs_bf16 || !r->obs_f32)
			return ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
	}
	/* Logits for up to 64 rows at a time. */
	return b->ops->alloc(b, (size_t)(64 * c->vocab * ab), &r->logits, err);
}

enum ctq_status ctq_runner_load(struct ctq_runner *r, struct ctq_backend *b, const char *dir,
				const struct ctq_runner_options *opt, struct ctq_error *err)
{
	memset(r, 0, sizeof *r);
	r->b = b;
	r->opt = *opt;
	if (b->ops->bind) {
		enum ctq_status bst = b->ops->bind(b, err);
		if (bst)
			return bst;
	}
	struct ctq_target t;
	struct ctq_shard_plan sp;
	memset(&sp, 0, sizeof sp);
	enum ctq_status st;
	if ((st = ctq_target_open(&t, dir, CTQ_SEM_STRICT, CTQ_TARGET_EXECUTABLE, err)) ||
	    (st = ctq_model_config_parse(&r->cfg, t.cfg.raw, err)))
		goto done;
	if (t.mods.shape.seq_cls) {
		st = ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, "architectures",
				   "names a sequence classifier (head score, no lm_head); the runner executes *ForCausalLM models");
		goto done;
	}
	const int tp = opt->tp > 1 ? opt->tp : 1;
	if ((opt->observe || opt->layer_end) && tp > 1) {
		st = ctq_error_set(err, CTQ_ERR_USAGE, "observe",
				   "an activation observer runs without tensor parallelism (tp 1)");
		goto done;
	}
	if (tp > 1 && !opt->group && !b->ops->allreduce_sum) {
		st = ctq_error_set(err, CTQ_ERR_USAGE, "tp", "tensor parallelism needs a rank group");
		goto done;
	}
	if ((st = ctq_checkpoint_open(&t.ck, dir, err)) || (st = ctq_shard_plan_build(&sp, &t.plan, tp, err)))
		goto done;
	r->heads_local = sp.heads_per_rank;
	r->kv_local = sp.kv_heads_per_rank;
	r->inter_local = r->cfg.intermediate / tp;
	const struct ctq_model_config *c = &r->cfg;
	struct loadctx L = {r, &t.ck, &t.plan, &sp, tp > 1 ? opt->rank : 0, err};
	r->layers = ctq_calloc((size_t)c->layers, sizeof *r->layers);
	r->k_cache = ctq_calloc((size_t)c->layers, sizeof *r->k_cache);
	r->v_cache = ctq_calloc((size_t)c->layers, sizeof *r->v_cache);
	if (!r->layers || !r->k_cache || !r->v_cache) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
		goto done;
	}
	if ((st = load_embed(&L, dir)))
		goto done;
	for (int64_t l = 0; l < c->layers && !st; l++)
		st = load_layer(&L, l);
	if (st || (st = load_vec(&L, "model.norm.weight", c->hidden, &r->final_norm)) ||
	    (st = load_lm_head(&L, &t)))
		goto done;
	st = alloc_state(r, dir, err);
done:
	ctq_shard_plan_free(&sp);
	ctq_target_close(&t);
	if (st)
		ctq_runner_free(r);
	return st;
}

/* ---- forward ------------------------------------------------------------------ */

static enum ctq_status linear(struct ctq_runner *r, const struct ctq_lin *l, const void *x,
			      int64_t M, void *y, struct ctq_error *err)
{
	const struct ctq_backend_ops *o = r->b->ops;
	if (l->quantized)
		return o->linear_w8a8(r->b, x, l->w, l->scale, l->bias, M, l->N, l->K, y, r->ws, err);
	return o->linear_dense(r->b, x, l->w, l->bias, M, l->N, l->K, y, err);
}

/* x (n activations in backend memory) as host f32 for an observer: x
 * itself where activations are host f32 (the reference backend), else its
 * BF16 bits downloaded into r->obs_bf16 and widened into r->obs_f32. */
static enum ctq_status host_view(struct ctq_runner *r, const void *x, int64_t n, const float **out,
				 struct ctq_error *err)
{
	if (r->b->ops->act_bytes == 4) {
		*out = x;
		return CTQ_OK;
	}
	if (n > r->obs_cap)
		return ctq_error_set(err, CTQ_ERR_USAGE, "observe", "%lld activations, room for %lld",
				     (long long)n, (long long)r->obs_cap);
	enum ctq_status st = r->b->ops->download(r->b, r->obs_bf16, x, (size_t)n * 2, err);
	if (st)
		return st;
	ctq_convert_to_f32(r->obs_bf16, CTQ_DTYPE_BF16, (size_t)n, r->obs_f32);
	*out = r->obs_f32;
	return CTQ_OK;
}

static enum ctq_status observe(struct ctq_runner *r, int64_t layer, enum ctq_observe_site site,
			       const void *x, int64_t M, int64_t K, struct ctq_error *err)
{
	const float *hx;
	enum ctq_status st = host_view(r, x, M * K, &hx, err);
	if (!st)
		r->opt.observe(r->opt.observe_ctx, layer, site, hx, M, K);
	return st;
}

/* The layer_end hook on the residual stream x (T, H): on a BF16 backend on
 * a host f32 copy, which goes back rounded to BF16 afterwards. Returns the
 * hook's next layer; on a copy's failure st is set and -1 returned. */
static int64_t layer_end(struct ctq_runner *r, int64_t layer, int64_t T, int64_t H, enum ctq_status *st,
			 struct ctq_error *err)
{
	if (r->b->ops->act_bytes == 4)
		return r->opt.layer_end(r->opt.layer_end_ctx, layer, r->x, T, H);
	const float *hx;
	if ((*st = host_view(r, r->x, T * H, &hx, err)))
		return -1;
	const int64_t next = r->opt.layer_end(r->opt.layer_end_ctx, layer, r->obs_f32, T, H);
	for (int64_t i = 0; i < T * H; i++)
		r->obs_bf16[i] = ctq_f32_to_bf16(r->obs_f32[i]);
	if ((*st = r->b->ops->upload(r->b, r->x, r->obs_bf16, (size_t)(T * H) * 2, err)))
		return -1;
	return next;
}

/* RMSNorm (nw != NULL) or SiLU·mul (nw == NULL) of x, then the linear l.
 * With res != NULL (RMSNorm only) x += res first: the residual add of the
 * block before, fused into the norm where the backend offers it. A W8A8 l
 * on a backend with the fused producers gets its activations quantized
 * where they are made (no BF16 round trip, one kernel fewer); otherwise
 * the op writes `mid` and the linear reads it. An observer (calibration)
 * sees `mid`, so it keeps the unfused path: layer and site name it. */
static enum ctq_status producer_linear(struct ctq_runner *r, int64_t layer,
				       enum ctq_observe_site site, void *x, const void *res,
				       const float *nw, const struct ctq_lin *l, int64_t M, void *mid,
				       void *y, struct ctq_error *err)
{
	struct ctq_backend *b = r->b;
	const struct ctq_backend_ops *o = b->ops;
	const float eps = r->cfg.rms_eps;
	/* quantized where made: the fused producers and the GEMM on their workspace */
	const bool fq = l->quantized && !r->opt.no_fuse && !r->opt.observe && o->rmsnorm_quant &&
			o->silu_mul_quant && o->linear_w8a8_q;
	enum ctq_status st;
	if (res && (r->opt.no_fuse || !(fq ? o->add_rmsnorm_quant : o->add_rmsnorm))) {
		if ((st = o->add(b, x, res, M * l->K, err)))
			return st;
		res = NULL;
	}
	if (fq) {
		st = !nw ? o->silu_mul_quant(b, x, M, l->K, r->ws, err)
		   : res ? o->add_rmsnorm_quant(b, x, res, nw, M, l->K, eps, r->ws, err)
			 : o->rmsnorm_quant(b, x, nw, M, l->K, eps, r->ws, err);
		return st ? st : o->linear_w8a8_q(b, r->ws, l->w, l->scale, l->bias, M, l->N, l->K, y, err);
	}
	st = !nw ? o->silu_mul(b, x, M, l->K, mid, err)
	   : res ? o->add_rmsnorm(b, x, res, nw, M, l->K, eps, mid, err)
		 : o->rmsnorm(b, x, nw, M, l->K, eps, mid, err);
	if (!st && r->opt.observe)
		st = observe(r, layer, site, mid, M, l->K, err);
	return st ? st : linear(r, l, mid, M, y, err);
}

/* The observer's view of o_proj's input (the attention output). */
static enum ctq_status observe_o(struct ctq_runner *r, int64_t layer, int64_t T, struct ctq_error *err)
{
	return r->opt.observe ? observe(r, layer, CTQ_OBSERVE_O, r->attn, T, r->layers[layer].o.K, err)
			      : CTQ_OK;
}

enum ctq_status ctq_runner_set_dense(struct ctq_runner *r, int64_t l, enum ctq_observe_site which,
				     const uint16_t *w, struct ctq_error *err)
{
	if (l < 0 || l >= r->cfg.layers || (unsigned)which >= CTQ_OBSERVE_N_SITES)
		return ctq_error_set(err, CTQ_ERR_USAGE, "runner", "layer %lld, linear %d out of range",
				     (long long)l, (int)which);
	struct ctq_layer *y = &r->layers[l];
	struct ctq_lin *lin = which == CTQ_OBSERVE_QKV ? &y->qkv : which == CTQ_OBSERVE_GATE_UP ? &y->gu
			    : which == CTQ_OBSERVE_DOWN ? &y->down : &y->o;
	if (lin->quantized)
		return ctq_error_set(err, CTQ_ERR_USAGE, "runner",
				     "layer %lld, linear %d is W8A8; only an unquantized weight is replaced",
				     (long long)l, (int)which);
	void *nw = NULL;
	enum ctq_status st = r->b->ops->upload_dense(r->b, w, (size_t)(lin->N * lin->K), &nw, err);
	if (st)
		return st;
	r->b->ops->free(r->b, lin->w);
	lin->w = nw;
	return CTQ_OK;
}

/* Sums the ranks' partial outputs in rank order into every rank's buffer. */
static enum ctq_status allreduce(struct ctq_runner *r, void *buf, int64_t n,
				 struct ctq_error *err)
{
	if (r->opt.tp <= 1)
		return CTQ_OK;
	if (r->b->ops->allreduce_sum)
		return r->b->ops->allreduce_sum(r->b, buf, n, err);
	struct ctq_tp_group *g = r->opt.group;
	if (r->b->ops->act_bytes != 4)
		return ctq_error_set(err, CTQ_ERR_ENV, "tp",
				     "in-process tensor parallelism needs host f32 activations (the reference backend)");
	ctq_tp_group_allreduce_f32(g, r->opt.rank, buf, n);
	return CTQ_OK;
}

#define AT(p, elems) ((void *)((char *)(p) + (size_t)(elems) * ab))

/* The logits of the first n rows staged in d_rows. */
static enum ctq_status head(struct ctq_runner *r, int64_t n, struct ctq_error *err)
{
	const struct ctq_backend_ops *o = r->b->ops;
	enum ctq_status st = o->embed(r->b, r->h, r->d_rows, n, r->cfg.hidden, r->rows, err);
	return st ? st : linear(r, &r->lm_head, r->rows, n, r->logits, err);
}

/* Everything between the staged inputs (d_ids, d_slot, d_pos) and the final
 * normalised hidden states; with head_rows > 0 also the lm_head of the
 * first head_rows staged rows. Issues device work only (capturable). */
static enum ctq_status compute(struct ctq_runner *r, int64_t T, int64_t head_rows,
			       struct ctq_error *err)
{
	struct ctq_backend *b = r->b;
	const struct ctq_backend_ops *o = b->ops;
	const struct ctq_model_config *c = &r->cfg;
	const int64_t H = c->hidden, d = c->head_dim, nH = r->heads_local, nKV = r->kv_local;
	const int64_t ld = (nH + 2 * nKV) * d;
	const size_t ab = o->act_bytes;
	const void *pending = NULL; /* a residual not yet added into x */
	enum ctq_status st;
	if ((st = o->embed(b, r->embed, r->d_ids, T, H, r->x, err)))
		return st;
	const ctq_layer_end_fn hook = r->opt.layer_end;
	st = CTQ_OK;
	int64_t l = hook ? layer_end(r, -1, T, H, &st, err) : 0;
	if (st)
		return st;
	while (l >= 0 && l < c->layers) {
		const struct ctq_layer *y = &r->layers[l];
		/* the residual of the block before (pending) is added inside this norm */
		if ((st = producer_linear(r, l, CTQ_OBSERVE_QKV, r->x, pending, y->in_norm, &y->qkv, T,
					  r->h, r->qkv, err)))
			return st;
		void *q = r->qkv, *k = AT(r->qkv, nH * d), *v = AT(r->qkv, (nH + nKV) * d);
		/* the k heads follow the q heads in a qkv row: one RoPE for both,
		 * fused with the q/k norm where the backend offers it, and with
		 * the KV store where it offers that too (attention then gets
		 * k = v = NULL) */
		if (c->qk_norm && o->qk_norm_rope_store && !r->opt.no_fuse) {
			st = o->qk_norm_rope_store(b, q, ld, T, nH, nKV, d, y->q_norm, y->k_norm, c->rms_eps,
						   r->d_pos, r->inv_freq, r->k_cache[l], r->v_cache[l],
						   r->d_slot, r->opt.max_len, err);
			k = v = NULL;
		} else if (c->qk_norm && o->qk_norm_rope && !r->opt.no_fuse) {
			st = o->qk_norm_rope(b, q, ld, T, nH, nKV, d, y->q_norm, y->k_norm, c->rms_eps, r->d_pos,
					     r->inv_freq, err);
		} else {
			if (c->qk_norm && ((st = o->head_norm(b, q, ld, T, nH, d, y->q_norm, c->rms_eps, err)) ||
					   (st = o->head_norm(b, k, ld, T, nKV, d, y->k_norm, c->rms_eps, err))))
				return st;
			st = o->rope(b, q, ld, r->d_pos, T, nH + nKV, d, r->inv_freq, err);
		}
		if (st ||
		    (st = o->attention(b, q, k, v, ld, r->k_cache[l], r->v_cache[l], r->d_slot, r->d_pos,
				       r->call_slot, r->call_pos, T, nH, nKV, d, r->opt.max_len, r->attn, err)) ||
		    (st = observe_o(r, l, T, err)) ||
		    (st = linear(r, &y->o, r->attn, T, r->h, err)) ||
		    (st = allreduce(r, r->h, T * H, err)) ||
		    (st = producer_linear(r, l, CTQ_OBSERVE_GATE_UP, r->x, r->h, y->post_norm, &y->gu, T,
					  r->h, r->gu, err)) ||
		    (st = producer_linear(r, l, CTQ_OBSERVE_DOWN, r->gu, NULL, NULL, &y->down, T, r->act,
					  r->h, err)) ||
		    (st = allreduce(r, r->h, T * H, err)))
			return st;
		pending = r->h; /* x += h inside the next norm */
		if (!hook) {
			l++;
			continue;
		}
		/* the hook sees the whole residual stream */
		if ((st = o->add(b, r->x, pending, T * H, err)))
			return st;
		pending = NULL;
		if ((l = layer_end(r, l, T, H, &st, err)) < 0 && st)
			return st;
	}
	if (l < 0)
		return CTQ_OK; /* ended by the hook: no final norm, no logits */
	if (pending && o->add_rmsnorm && !r->opt.no_fuse)
		st = o->add_rmsnorm(b, r->x, pending, r->final_norm, T, H, c->rms_eps, r->h, err);
	else if (!pending || !(st = o->add(b, r->x, pending, T * H, err)))
		st = o->rmsnorm(b, r->x, r->final_norm, T, H, c->rms_eps, r->h, err);
	if (st)
		return st;
	return head_rows > 0 ? head(r, head_rows, err) : CTQ_OK;
}

/* Rows 0..n-1 of the device logits to the caller: as f32 rows into logits,
 * or (next != NULL) as their greedy picks, on the device where the backend
 * can. */
static enum ctq_status emit_rows(struct ctq_runner *r, int64_t n, float *logits, int32_t *next,
				 struct ctq_error *err)
{
	struct ctq_backend *b = r->b;
	const struct ctq_backend_ops *o = b->ops;
	const int64_t V = r->cfg.vocab;
	if (next && o->rows_argmax)
		return o->rows_argmax(b, r->logits, V, n, next, err);
	int64_t idx[64];
	for (int64_t i = 0; i < n; i++)
		idx[i] = i;
	if (!next)
		return o->rows_to_host(b, r->logits, V, idx, n, logits, err);
	float *rows = ctq_malloc((size_t)(n * V) * sizeof *rows);
	if (!rows)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "forward", "out of memory");
	enum ctq_status st = o->rows_to_host(b, r->logits, V, idx, n, rows, err);
	for (int64_t i = 0; !st && i < n; i++)
		next[i] = ctq_argmax(rows + i * V, V);
	ctq_free(rows);
	return st;
}

/* ctq_runner_forward (logits) and ctq_runner_forward_next (next). */
static enum ctq_status forward_call(struct ctq_runner *r, const int32_t *ids, const int32_t *slot,
				    const int32_t *pos, int64_t T, const int64_t *out_rows,
				    int64_t n_out, float *logits, int32_t *next, struct ctq_error *err)
{
	struct ctq_backend *b = r->b;
	const struct ctq_backend_ops *o = b->ops;
	const struct ctq_model_config *c = &r->cfg;
	if (o->bind) {
		enum ctq_status bst = o->bind(b, err);
		if (bst)
			return bst;
	}
	if (T < 1 || T > r->opt.max_tokens)
		return ctq_error_set(err, CTQ_ERR_USAGE, "forward", "%lld tokens; this runner takes 1..%lld",
				     (long long)T, (long long)r->opt.max_tokens);
	for (int64_t t = 0; t < T; t++)
		if (ids[t] < 0 || ids[t] >= c->vocab || slot[t] < 0 || slot[t] >= r->opt.max_slots ||
		    pos[t] < 0 || pos[t] >= r->opt.max_len)
			return ctq_error_set(err, CTQ_ERR_USAGE, "forward",
					     "token %lld: id %d, slot %d, position %d out of range (vocab %lld, slots %lld, length %lld)",
					     (long long)t, ids[t], slot[t], pos[t], (long long)c->vocab,
					     (long long)r->opt.max_slots, (long long)r->opt.max_len);
	enum ctq_status st;
	if ((st = o->upload(b, r->d_ids, ids, (size_t)T * 4, err)) ||
	    (st = o->upload(b, r->d_slot, slot, (size_t)T * 4, err)) ||
	    (st = o->upload(b, r->d_pos, pos, (size_t)T * 4, err)))
		return st;
	for (int64_t i = 0; i < n_out; i++)
		if (out_rows[i] < 0 || out_rows[i] >= T)
			return ctq_error_set(err, CTQ_ERR_USAGE, "forward", "output row %lld outside %lld tokens",
					     (long long)out_rows[i], (long long)T);
	/* Decode steps (every token's logits, at most 64 tokens) replay a
	 * captured device graph: one launch instead of hundreds. */
	bool all_rows = n_out == T && T <= 64;
	for (int64_t i = 0; all_rows && i < T; i++)
		all_rows = out_rows[i] == i;
	if (all_rows && o->graph_begin && !r->opt.no_graphs && r->opt.tp <= 1) {
		int32_t rows32[64];
		for (int64_t i = 0; i < T; i++)
			rows32[i] = (int32_t)i;
		if ((st = o->upload(b, r->d_rows, rows32, (size_t)T * 4, err)))
			return st;
		if (!r->graphs[T]) {
			if ((st = o->graph_begin(b, err)))
				return st;
			enum ctq_status cst = compute(r, T, T, err);
			void *g = NULL;
			st = o->graph_end(b, &g, err);
			if (cst || st) {
				o->graph_destroy(b, g);
				return cst ? cst : st;
			}
			r->graphs[T] = g;
		}
		r->graph_replays++;
		if ((st = o->graph_launch(b, r->graphs[T], err)))
			return st;
		return emit_rows(r, T, logits, next, err);
	}
	if ((st = compute(r, T, 0, err)))
		return st;
	/* lm_head only on the rows asked for, 64 at a time. */
	for (int64_t i0 = 0; i0 < n_out; i0 += 64) {
		int64_t n = n_out - i0 < 64 ? n_out - i0 : 64;
		int32_t rows32[64];
		for (int64_t i = 0; i < n; i++)
			rows32[i] = (int32_t)out_rows[i0 + i];
		if ((st = o->upload(b, r->d_rows, rows32, (size_t)n * 4, err)) ||
		    (st = head(r, n, err)) ||
		    (st = emit_rows(r, n, logits ? logits + i0 * c->vocab : NULL, next ? next + i0 : NULL,
				    err)))
			return st;
	}
	return CTQ_OK;
}

/* One call with its host layout (slot, pos) lent to the ops that can use
 * it (the attention's split into runs) for the call's duration. */
static enum ctq_status forward(struct ctq_runner *r, const int32_t *ids, const int32_t *slot,
			       const int32_t *pos, int64_t T, const int64_t *out_rows, int64_t n_out,
			       float *logits, int32_t *next, struct ctq_error *err)
{
	r->call_slot = slot, r->call_pos = pos;
	enum ctq_status st = forward_call(r, ids, slot, pos, T, out_rows, n_out, logits, next, err);
	r->call_slot = r->call_pos = NULL;
	return st;
}

enum ctq_status ctq_runner_forward(struct ctq_runner *r, const int32_t *ids, const int32_t *slot,
				   const int32_t *pos, int64_t T, const int64_t *out_rows,
				   int64_t n_out, float *logits, struct ctq_error *err)
{
	return forward(r, ids, slot, pos, T, out_rows, n_out, logits, NULL, err);
}

enum ctq_status ctq_runner_forward_next(struct ctq_runner *r, const int32_t *ids,
					const int32_t *slot, const int32_t *pos, int64_t T,
					const int64_t *out_rows, int64_t n_out, int32_t *next,
					struct ctq_error *err)
{
	return forward(r, ids, slot, pos, T, out_rows, n_out, NULL, next, err);
}

struct tp_job {
	struct ctq_runner *r;
	const int32_t *ids, *slot, *pos;
	int64_t T, n_out;
	const int64_t *out_rows;
	float *logits;
	int threads; /* OpenMP threads of this rank's parallel regions */
	struct ctq_error err;
	enum ctq_status st;
};

static void *tp_thread(void *arg)
{
	struct tp_job *j = arg;
	ctq_threads_set(j->threads); /* this thread's regions only */
	j->st = ctq_runner_forward(j->r, j->ids, j->slot, j->pos, j->T, j->out_rows, j->n_out,
				   j->logits, &j->err);
	return NULL;
}

enum ctq_status ctq_runner_tp_forward(struct ctq_runner *ranks, int tp, const int32_t *ids,
				      const int32_t *slot, const int32_t *pos, int64_t T,
				      const int64_t *out_rows, int64_t n_out, float *logits,
				      struct ctq_error *err)
{
	struct tp_job *jobs = ctq_calloc((size_t)tp, sizeof *jobs);
	pthread_t *th = ctq_calloc((size_t)tp, sizeof *th);
	float *scratch = tp > 1 ? ctq_malloc((size_t)(n_out * ranks[0].cfg.vocab) * 4 * (size_t)(tp - 1)) : NULL;
	enum ctq_status st = CTQ_OK;
	if (!jobs || !th || (tp > 1 && !scratch)) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, "tp", "out of memory");
		goto done;
	}
	/* The ranks share the cores: each rank's parallel regions (the
	 * reference backend's) get its share, not every core each. */
	int threads = ctq_threads_max() / tp;
	if (threads < 1)
		threads = 1;
	for (int k = 0; k < tp; k++) {
		jobs[k] = (struct tp_job){&ranks[k], ids, slot, pos, T, n_out, out_rows,
					  k ? scratch + (size_t)(k - 1) * (size_t)(n_out * ranks[0].cfg.vocab) : logits,
					  threads, {0}, CTQ_OK};
		if (pthread_create(&th[k], NULL, tp_thread, &jobs[k])) {
			/* A rank that never starts would leave the others at a barrier. */
			st = ctq_error_set(err, CTQ_ERR_ENV, "tp", "cannot start a rank thread");
			for (int i = 0; i < k; i++)
				pthread_join(th[i], NULL);
			goto done;
		}
	}
	for (int k = 0; k < tp; k++)
		pthread_join(th[k], NULL);
	for (int k = 0; k < tp && !st; k++)
		if (jobs[k].st)
			st = ctq_error_set(err, jobs[k].st, jobs[k].err.path, "rank %d: %s", k,
					   jobs[k].err.message);
done:
	ctq_free(jobs);
	ctq_free(th);
	ctq_free(scratch);
	return st;
}

int32_t ctq_argmax(const float *v, int64_t n)
{
	int64_t best = 0;
	for (int64_t i = 1; i < n; i++)
		if (v[i] > v[best])
			best = i;
	return (int32_t)best;
}
