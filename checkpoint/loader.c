/* ctq checkpoint loader (see loader.h). */
#include "checkpoint/loader.h"
#include "core/arena.h"
#include "core/dtype.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static enum ctq_status ck_err(struct ctq_error *err, const char *module, const char *tensor,
			      const char *file, const struct ctq_st_tensor *t, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

/* checkpoint-error at "module.tensor" with the shard file:offset in the
 * message, so the user finds both the module and the bytes. */
static enum ctq_status ck_err(struct ctq_error *err, const char *module, const char *tensor,
			      const char *file, const struct ctq_st_tensor *t, const char *fmt, ...)
{
	char path[CTQ_PATH_MAX], msg[CTQ_MESSAGE_MAX];
	snprintf(path, sizeof path, "%s.%s", module, tensor);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (file && t)
		return ctq_error_set(err, CTQ_ERR_CHECKPOINT, path, "%s (in %s at byte %llu)", msg, file,
				     (unsigned long long)t->file_offset);
	return ctq_error_set(err, CTQ_ERR_CHECKPOINT, path, "%s", msg);
}

static const struct ctq_st_tensor *find(const struct ctq_checkpoint *ck, const char *module,
					const char *tensor, const char **file)
{
	char name[CTQ_PATH_MAX * 2];
	snprintf(name, sizeof name, "%s.%s", module, tensor);
	return ctq_checkpoint_find(ck, name, file);
}

static void shape_str(const struct ctq_st_tensor *t, char *buf, size_t cap)
{
	size_t n = (size_t)snprintf(buf, cap, "[");
	for (int i = 0; i < t->ndim && n < cap; i++)
		n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
	if (n < cap)
		snprintf(buf + n, cap - n, "]");
}

static bool is_float(enum ctq_dtype d)
{
	return d == CTQ_DTYPE_BF16 || d == CTQ_DTYPE_F16 || d == CTQ_DTYPE_F32;
}

/* Converts n elements starting at element `first` of a float tensor. */
static bool to_f32(const struct ctq_st_tensor *t, uint64_t first, size_t n, float *dst)
{
	const unsigned char *p = (const unsigned char *)t->data + first * ctq_dtype_size(t->dtype);
	return ctq_convert_to_f32(p, t->dtype, n, dst);
}

/* §4.2: stale all-zero symmetric zero points are ignored; anything else
 * (non-zero, or a dtype that cannot be read) is refused. */
static bool zero_points_all_zero(const struct ctq_st_tensor *t)
{
	float *zp = ctq_malloc((size_t)t->n_elements * sizeof *zp);
	bool zero = zp && (t->dtype == CTQ_DTYPE_I8 || t->dtype == CTQ_DTYPE_I32 ||
			   is_float(t->dtype));
	if (zero) {
		if (t->dtype == CTQ_DTYPE_I8) {
			for (uint64_t j = 0; j < t->n_elements && zero; j++)
				zero = ((const int8_t *)t->data)[j] == 0;
		} else if (ctq_convert_to_f32(t->data, t->dtype, (size_t)t->n_elements, zp)) {
			for (uint64_t j = 0; j < t->n_elements && zero; j++)
				zero = zp[j] == 0.0f;
		} else {
			zero = false;
		}
	}
	free(zp);
	return zero;
}

/* Tensors that contradict the scheme. */
static enum ctq_status check_scheme_tensors(const struct ctq_checkpoint *ck,
					    const struct ctq_plan_entry *e, const char *m,
					    bool quantized, struct ctq_error *err)
{
	static const char *const quant_only[] = {"weight_scale", "weight_zero_point", "input_scale",
						 "input_zero_point", "weight_packed", "weight_shape"};
	for (size_t i = 0; i < sizeof quant_only / sizeof *quant_only; i++) {
		const char *f = NULL;
		const struct ctq_st_tensor *t = find(ck, m, quant_only[i], &f);
		if (!t)
			continue;
		if (!quantized)
			return ck_err(err, m, quant_only[i], f, t,
				      "is present but the plan says this module is unquantized (%s/%s); a quantized checkpoint under an unquantized plan would run BF16 kernels on int8 data",
				      ctq_match_by_name(e->by), e->target ? e->target : "default");
		if (!strcmp(quant_only[i], "weight_zero_point")) {
			if (!zero_points_all_zero(t))
				return ck_err(err, m, "weight_zero_point", f, t,
					      "is non-zero; w8a8-int8 is symmetric (zero points must be absent or all zero)");
			continue;
		}
		if (!strcmp(quant_only[i], "weight_scale"))
			continue;
		return ck_err(err, m, quant_only[i], f, t,
			      "is present but w8a8-int8 quantizes activations dynamically per token (a static input scale or packed weights belong to another scheme)");
	}
	return CTQ_OK;
}

/* The rank's slice of the checkpoint weight: rows [r0, r0 + out->N) and
 * columns [c0, c0 + out->K) of a [full_n, full_k] tensor. */
struct weight_slice {
	const struct ctq_st_tensor *w;
	const char *file;
	int64_t full_n, full_k, r0, c0;
};

/* The per-channel or per-tensor weight_scale of a w8a8-int8 module, checked
 * against the plan's strategy and read for the rank's rows. */
static enum ctq_status load_weight_scale(const struct ctq_checkpoint *ck,
					 const struct ctq_plan *plan,
					 const struct ctq_plan_entry *e, const char *m,
					 const struct weight_slice *ws, struct ctq_linear *out,
					 struct ctq_error *err)
{
	const int64_t full_n = ws->full_n, r0 = ws->r0;
	char shp[96];
	const char *sfile = NULL;
	const struct ctq_st_tensor *s = find(ck, m, "weight_scale", &sfile);
	if (!s)
		return ck_err(err, m, "weight_scale", NULL, NULL, "is missing; w8a8-int8 needs per-channel or per-tensor scales");
	shape_str(s, shp, sizeof shp);
	if (!is_float(s->dtype))
		return ck_err(err, m, "weight_scale", sfile, s, "is %s; expected BF16, F16 or F32",
			      ctq_dtype_name(s->dtype));
	bool per_tensor = s->n_elements == 1 && full_n != 1;
	bool per_channel = (s->ndim == 2 && s->shape[0] == full_n && s->shape[1] == 1) ||
			   (s->ndim == 1 && s->shape[0] == full_n);
	if (!per_tensor && !per_channel)
		return ck_err(err, m, "weight_scale", sfile, s,
			      "has shape %s; expected [%lld, 1], [%lld] or per-tensor [1]", shp,
			      (long long)full_n, (long long)full_n);
	const struct ctq_qargs *wa = plan->cfg->groups[e->group].scheme.weights;
	if (per_tensor && wa->strategy == CTQ_STRATEGY_CHANNEL)
		return ck_err(err, m, "weight_scale", sfile, s,
			      "has shape %s (per tensor) but %s says strategy channel", shp,
			      wa->path);
	if (per_channel && full_n > 1 && wa->strategy == CTQ_STRATEGY_TENSOR)
		return ck_err(err, m, "weight_scale", sfile, s,
			      "has shape %s (per channel) but %s says strategy tensor", shp,
			      wa->path);
	float *scale = ctq_malloc((size_t)(out->N ? out->N : 1) * sizeof *scale);
	if (!scale)
		return ctq_error_set(err, CTQ_ERR_NOMEM, m, "out of memory");
	out->owned[1] = scale;
	out->scale = scale;
	if (per_tensor) {
		float v;
		to_f32(s, 0, 1, &v);
		for (int64_t n = 0; n < out->N; n++)
			scale[n] = v;
	} else {
		to_f32(s, (uint64_t)r0, (size_t)out->N, scale);
	}
	for (int64_t n = 0; n < out->N; n++)
		if (!(scale[n] > 0.0f) || isinf(scale[n]))
			return ck_err(err, m, "weight_scale", sfile, s,
				      "channel %lld is %g; scales must be finite and positive",
				      (long long)(per_tensor ? 0 : r0 + n), (double)scale[n]);
	return CTQ_OK;
}

/* int8 weights are used in place when the slice spans whole rows. */
static enum ctq_status load_int8_weight(const char *m, const struct weight_slice *ws,
					struct ctq_linear *out, struct ctq_error *err)
{
	const struct ctq_st_tensor *w = ws->w;
	const int64_t full_k = ws->full_k, r0 = ws->r0, c0 = ws->c0;
	if (w->dtype != CTQ_DTYPE_I8)
		return ck_err(err, m, "weight", ws->file, w, "is %s; w8a8-int8 needs I8",
			      ctq_dtype_name(w->dtype));
	if (c0 == 0 && out->K == full_k) {
		out->w_i8 = (const int8_t *)w->data + r0 * full_k;
		return CTQ_OK;
	}
	const size_t nk = (size_t)(out->N * out->K);
	int8_t *copy = ctq_malloc(nk ? nk : 1);
	if (!copy)
		return ctq_error_set(err, CTQ_ERR_NOMEM, m, "out of memory");
	out->owned[0] = copy;
	for (int64_t r = 0; r < out->N; r++)
		memcpy(copy + r * out->K, (const int8_t *)w->data + (r0 + r) * full_k + c0,
		       (size_t)out->K);
	out->w_i8 = copy;
	return CTQ_OK;
}

/* BF16 weights spanning whole rows are used in place; any other float slice
 * is converted to BF16. */
static enum ctq_status load_float_weight(const char *m, const struct weight_slice *ws,
					 struct ctq_linear *out, struct ctq_error *err)
{
	const struct ctq_st_tensor *w = ws->w;
	const int64_t full_k = ws->full_k, r0 = ws->r0, c0 = ws->c0;
	if (!is_float(w->dtype))
		return ck_err(err, m, "weight", ws->file, w,
			      "is %s; an unquantized module needs BF16, F16 or F32",
			      ctq_dtype_name(w->dtype));
	if (w->dtype == CTQ_DTYPE_BF16 && c0 == 0 && out->K == full_k) {
		out->w_bf16 = (const uint16_t *)w->data + r0 * full_k;
		return CTQ_OK;
	}
	const size_t nk = (size_t)(out->N * out->K);
	uint16_t *copy = ctq_malloc((nk ? nk : 1) * sizeof *copy);
	float *row = ctq_malloc((size_t)(out->K ? out->K : 1) * sizeof *row);
	if (!copy || !row) {
		free(copy);
		free(row);
		return ctq_error_set(err, CTQ_ERR_NOMEM, m, "out of memory");
	}
	for (int64_t r = 0; r < out->N; r++) {
		to_f32(w, (uint64_t)((r0 + r) * full_k + c0), (size_t)out->K, row);
		ctq_convert_f32_to_bf16(row, (size_t)out->K, copy + r * out->K);
	}
	free(row);
	out->owned[0] = copy;
	out->w_bf16 = copy;
	return CTQ_OK;
}

/* The bias is added once: by every column shard, or only by rank 0 of a row
 * split, as the shard plan says. */
static enum ctq_status load_bias(const struct ctq_checkpoint *ck, const struct ctq_shard *sh,
				 int rank, const char *m, const struct weight_slice *ws,
				 struct ctq_linear *out, struct ctq_error *err)
{
	char shp[96];
	const char *bfile = NULL;
	const struct ctq_st_tensor *b = find(ck, m, "bias", &bfile);
	if (!b)
		return CTQ_OK;
	shape_str(b, shp, sizeof shp);
	if (!is_float(b->dtype) || b->ndim != 1 || b->shape[0] != ws->full_n)
		return ck_err(err, m, "bias", bfile, b, "is %s %s; expected a float [%lld]",
			      ctq_dtype_name(b->dtype), shp, (long long)ws->full_n);
	bool add = sh->bias != CTQ_BIAS_RANK0 || rank == 0;
	if (sh->bias == CTQ_BIAS_NONE && sh->kind != CTQ_SHARD_REPLICATED)
		add = sh->kind == CTQ_SHARD_COLUMN || rank == 0;
	if (!add)
		return CTQ_OK;
	int64_t b0 = sh->kind == CTQ_SHARD_COLUMN ? ws->r0 : 0;
	float *bias = ctq_malloc((size_t)(out->N ? out->N : 1) * sizeof *bias);
	if (!bias)
		return ctq_error_set(err, CTQ_ERR_NOMEM, m, "out of memory");
	out->owned[2] = bias;
	out->bias = bias;
	to_f32(b, (uint64_t)b0, (size_t)out->N, bias);
	return CTQ_OK;
}

enum ctq_status ctq_load_linear(const struct ctq_checkpoint *ck, const struct ctq_plan *plan,
				const struct ctq_shard_plan *sp, size_t module, int rank,
				struct ctq_linear *out, struct ctq_error *err)
{
	memset(out, 0, sizeof *out);
	const struct ctq_module *mod = &plan->mods->v[module];
	const struct ctq_plan_entry *e = &plan->entries[module];
	const struct ctq_shard *sh = ctq_shard_at(sp, module, rank);
	const char *m = mod->name;
	out->module = module;
	out->name = m;
	if (e->error)
		return ctq_error_set(err, CTQ_ERR_USAGE, m,
				     "the plan cannot execute this module (%s): %s",
				     ctq_status_name(e->error), e->message);
	if (mod->kind != CTQ_MODULE_LINEAR || sh->kind == CTQ_SHARD_NONE)
		return ctq_error_set(err, CTQ_ERR_USAGE, m, "is not a linear module");
	out->quantized = !strcmp(e->scheme, "w8a8-int8");
	if (!out->quantized && strcmp(e->scheme, "unquantized"))
		return ctq_error_set(err, CTQ_ERR_UNSUPPORTED_SCHEME, m, "scheme %s is not executable",
				     e->scheme);
	const int64_t O = sp->out_features[module], I = sp->in_features[module];
	const char *wfile = NULL;
	const struct ctq_st_tensor *w = find(ck, m, "weight", &wfile);
	char shp[96];

	/* Tied lm_head: the embedding matrix serves as its weight. */
	if (!w && !out->quantized && plan->mods->shape.tie_word_embeddings &&
	    (!strcmp(m, "lm_head") || strstr(m, ".lm_head")))
		w = ctq_checkpoint_find(ck, "model.embed_tokens.weight", &wfile);
	/* An expert held fused (transformers 5's layout): its rows of the 3-D
	 * experts.gate_up_proj (E, 2 I, H) or experts.down_proj (E, H, I),
	 * viewed as a 2-D [E x rows, cols] matrix. Unquantized only (a
	 * quantized checkpoint stores experts one by one). */
	int64_t base = 0;
	bool fused = false;
	if (!w && mod->ct_fused && !out->quantized && mod->moe >= 0) {
		const char *blk = plan->mods->moe[mod->moe].runtime_name;
		const bool down = mod->expert_proj == 2;
		char fname[CTQ_PATH_MAX];
		snprintf(fname, sizeof fname, "%s.%s", blk, down ? "down_proj" : "gate_up_proj");
		const struct ctq_st_tensor *f = ctq_checkpoint_find(ck, fname, &wfile);
		const int64_t per = down ? O : 2 * O;
		if (f && f->ndim == 3 && f->shape[1] == per && (!I || f->shape[2] == I) &&
		    mod->expert < f->shape[0]) {
			w = f;
			fused = true;
			base = (int64_t)mod->expert * per + (mod->expert_proj == 1 ? O : 0);
		}
	}
	if (!w)
		return ck_err(err, m, "weight", NULL, NULL,
			      "is missing; the plan runs this module as %s", e->scheme);
	shape_str(w, shp, sizeof shp);
	if (!fused && (w->ndim != 2 || (O && w->shape[0] != O) || (I && w->shape[1] != I)))
		return ck_err(err, m, "weight", wfile, w, "has shape %s; expected [%lld, %lld]", shp,
			      (long long)O, (long long)I);
	enum ctq_status st = check_scheme_tensors(ck, e, m, out->quantized, err);
	if (st)
		return st;

	const int64_t full_n = fused ? w->shape[0] * w->shape[1] : w->shape[0];
	const int64_t full_k = fused ? w->shape[2] : w->shape[1];
	const struct weight_slice ws = {w, wfile, full_n, full_k, base + sh->rows[0], sh->cols[0]};
	const int64_t r0 = sh->rows[0], r1 = sh->rows[1], c0 = sh->cols[0], c1 = sh->cols[1];
	if (base + r1 > ws.full_n || c1 > ws.full_k)
		return ck_err(err, m, "weight", wfile, w, "has shape %s; rank %d needs rows [%lld, %lld) and columns [%lld, %lld)",
			      shp, rank, (long long)r0, (long long)r1, (long long)c0, (long long)c1);
	out->N = r1 - r0;
	out->K = c1 - c0;

	if (out->quantized) {
		st = load_int8_weight(m, &ws, out, err);
		if (!st)
			st = load_weight_scale(ck, plan, e, m, &ws, out, err);
	} else {
		st = load_float_weight(m, &ws, out, err);
	}
	if (!st)
		st = load_bias(ck, sh, rank, m, &ws, out, err);
	return st;
}

void ctq_linear_free(struct ctq_linear *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < sizeof l->owned / sizeof *l->owned; i++)
		free(l->owned[i]);
	memset(l, 0, sizeof *l);
}

enum ctq_status ctq_load_check(const struct ctq_checkpoint *ck, const struct ctq_plan *plan,
			       size_t *n_loaded, struct ctq_error *err)
{
	*n_loaded = 0;
	struct ctq_shard_plan sp;
	enum ctq_status st = ctq_shard_plan_build(&sp, plan, 1, err);
	if (st)
		return st;
	for (size_t i = 0; i < plan->n && !st; i++) {
		if (plan->mods->v[i].kind != CTQ_MODULE_LINEAR)
			continue;
		struct ctq_linear l;
		st = ctq_load_linear(ck, plan, &sp, i, 0, &l, err);
		ctq_linear_free(&l);
		if (!st)
			(*n_loaded)++;
	}
	ctq_shard_plan_free(&sp);
	return st;
}

enum ctq_status ctq_load_f32(const struct ctq_checkpoint *ck, const char *name, int ndim,
			     const int64_t *shape, float **out, struct ctq_error *err)
{
	*out = NULL;
	const char *file = NULL;
	const struct ctq_st_tensor *t = ctq_checkpoint_find(ck, name, &file);
	if (!t)
		return ctq_error_set(err, CTQ_ERR_CHECKPOINT, name, "is missing from the checkpoint");
	bool ok = t->ndim == ndim && is_float(t->dtype);
	for (int i = 0; ok && i < ndim; i++)
		ok = shape[i] < 0 || t->shape[i] == shape[i];
	if (!ok) {
		char shp[96], want[96];
		shape_str(t, shp, sizeof shp);
		size_t n = (size_t)snprintf(want, sizeof want, "[");
		for (int i = 0; i < ndim && n < sizeof want; i++)
			n += (size_t)snprintf(want + n, sizeof want - n, "%s%lld", i ? ", " : "",
					      (long long)shape[i]);
		if (n < sizeof want)
			snprintf(want + n, sizeof want - n, "]");
		return ctq_error_set(err, CTQ_ERR_CHECKPOINT, name,
				     "is %s %s; expected a float tensor %s (in %s at byte %llu)",
				     ctq_dtype_name(t->dtype), shp, want, file,
				     (unsigned long long)t->file_offset);
	}
	float *buf = ctq_malloc((size_t)(t->n_elements ? t->n_elements : 1) * sizeof *buf);
	if (!buf)
		return ctq_error_set(err, CTQ_ERR_NOMEM, name, "out of memory");
	ctq_convert_to_f32(t->data, t->dtype, (size_t)t->n_elements, buf);
	for (uint64_t i = 0; i < t->n_elements; i++)
		if (!isfinite(buf[i])) {
			free(buf);
			return ctq_error_set(err, CTQ_ERR_CHECKPOINT, name,
					     "element %llu is %s (in %s)", (unsigned long long)i,
					     "not finite", file);
		}
	*out = buf;
	return CTQ_OK;
}
