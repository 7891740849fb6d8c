/* ctq calibration (eval/calib.h). */
#include "eval/calib.h"
#include "model/model.h"
#include "core/arena.h"
#include "core/fileio.h"
#include "core/rng.h"
#include "text/tokenizer.h"
#include "checkpoint/safetensors.h"
#include "core/numerics.h"
#include "quant/modules.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Calibration text read at most (the whole text is tokenised). */
#define CALIB_MAX_TEXT_BYTES ((size_t)256 << 20)

/* n windows of len tokens cut from all (n_tok) at seeded offsets, each led
 * by bos when bos >= 0; path names the source in errors. */
static enum ctq_status cut_windows(const int32_t *all, size_t n_tok, int32_t bos, const char *path,
				   int64_t n, int64_t len, uint64_t seed, int32_t **ids,
				   int64_t *n_text, struct ctq_error *err)
{
	const int64_t span = bos >= 0 ? len - 1 : len; /* text tokens per window */
	*n_text = (int64_t)n_tok;
	if ((int64_t)n_tok < span)
		return ctq_error_set(err, CTQ_ERR_USAGE, path,
				     "holds %zu tokens; one calibration window needs %lld (--calib-len)", n_tok,
				     (long long)span);
	if (!(*ids = ctq_malloc((size_t)(n * len) * sizeof **ids)))
		return ctq_error_set(err, CTQ_ERR_NOMEM, path, "out of memory");
	struct ctq_rng rng;
	ctq_rng_seed(&rng, seed);
	for (int64_t w = 0; w < n; w++) {
		const uint64_t start = ctq_rng_below(&rng, (uint64_t)n_tok - (uint64_t)span + 1);
		int32_t *row = *ids + w * len;
		if (bos >= 0)
			*row++ = bos;
		memcpy(row, all + start, (size_t)span * sizeof *row);
	}
	return CTQ_OK;
}

static enum ctq_status check_shape(int64_t n, int64_t len, struct ctq_error *err)
{
	if (n < 1 || len < 2)
		return ctq_error_set(err, CTQ_ERR_USAGE, "calib",
				     "%lld windows of %lld tokens; expected at least 1 window of 2 tokens",
				     (long long)n, (long long)len);
	return CTQ_OK;
}

enum ctq_status ctq_calib_windows_ids(const char *ids_path, int64_t n, int64_t len, uint64_t seed,
				      int32_t **ids, int64_t *n_text, struct ctq_error *err)
{
	*ids = NULL;
	*n_text = 0;
	enum ctq_status st = check_shape(n, len, err);
	char *text = NULL;
	size_t n_bytes = 0, n_tok = 0, cap = 0;
	int32_t *all = NULL;
	if (st || (st = ctq_file_read(ids_path, CALIB_MAX_TEXT_BYTES, &text, &n_bytes, err)))
		goto done;
	for (size_t i = 0; i < n_bytes && !st;) {
		if (text[i] == ' ' || text[i] == '\n' || text[i] == '\t' || text[i] == '\r') {
			i++;
			continue;
		}
		int64_t v = 0;
		size_t j = i;
		while (j < n_bytes && text[j] >= '0' && text[j] <= '9' && v <= INT32_MAX)
			v = v * 10 + (text[j++] - '0');
		if (j == i || v > INT32_MAX ||
		    (j < n_bytes && text[j] != ' ' && text[j] != '\n' && text[j] != '\t' && text[j] != '\r')) {
			st = ctq_error_set(err, CTQ_ERR_USAGE, ids_path,
					   "byte %zu: expected token ids (decimal integers 0 to 2^31 - 1) separated by white space",
					   j);
			break;
		}
		if (n_tok == cap) {
			cap = cap ? 2 * cap : 4096;
			int32_t *g = ctq_realloc(all, cap * sizeof *all);
			if (!g) {
				st = ctq_error_set(err, CTQ_ERR_NOMEM, ids_path, "out of memory");
				break;
			}
			all = g;
		}
		all[n_tok++] = (int32_t)v;
		i = j;
	}
	if (!st)
		st = cut_windows(all, n_tok, -1, ids_path, n, len, seed, ids, n_text, err);
done:
	if (st) {
		ctq_free(*ids);
		*ids = NULL;
	}
	ctq_free(all);
	free(text);
	return st;
}

enum ctq_status ctq_calib_windows(const char *dir, const char *text_path, int64_t n, int64_t len,
				  uint64_t seed, int32_t **ids, int64_t *n_text,
				  struct ctq_error *err)
{
	*ids = NULL;
	*n_text = 0;
	enum ctq_status st = check_shape(n, len, err);
	if (st)
		return st;
	struct ctq_tokenizer tok;
	memset(&tok, 0, sizeof tok);
	char *tpath = ctq_path_join(dir, "tokenizer.json");
	char *text = NULL;
	size_t n_bytes = 0, n_tok = 0;
	int32_t *all = NULL;
	if (!tpath) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
		goto done;
	}
	if (!ctq_path_exists(tpath)) {
		st = ctq_error_set(err, CTQ_ERR_USAGE, tpath,
				   "is missing; calibration tokenises --calib with the model's tokenizer.json");
		goto done;
	}
	if ((st = ctq_tokenizer_load(&tok, tpath, err)) ||
	    (st = ctq_file_read(text_path, CALIB_MAX_TEXT_BYTES, &text, &n_bytes, err)) ||
	    (st = ctq_tokenizer_encode(&tok, text, n_bytes, false, &all, &n_tok, err)))
		goto done;
	st = cut_windows(all, n_tok, tok.adds_bos ? tok.bos_id : -1, text_path, n, len, seed, ids,
			 n_text, err);
done:
	if (st) {
		ctq_free(*ids);
		*ids = NULL;
	}
	free(all);
	free(text);
	free(tpath);
	ctq_tokenizer_free(&tok);
	return st;
}

enum ctq_status ctq_calib_windows_write(const char *path, const int32_t *ids, int64_t n, int64_t len,
					struct ctq_error *err)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return ctq_error_set(err, CTQ_ERR_IO, path, "cannot create");
	for (int64_t w = 0; w < n; w++)
		for (int64_t t = 0; t < len; t++)
			fprintf(f, "%ld%c", (long)ids[w * len + t], t + 1 < len ? ' ' : '\n');
	bool bad = ferror(f) != 0;
	bad |= fclose(f) != 0;
	return bad ? ctq_error_set(err, CTQ_ERR_IO, path, "cannot write") : CTQ_OK;
}

/* What both calibrations need of the model opened from dir: no quantized
 * linear module (what names the pass in the message), and every one of
 * the n x len window ids inside its vocabulary. */
static enum ctq_status check_model(const struct ctq_model *m, const char *dir, const char *what,
				   const int32_t *ids, int64_t n, int64_t len, struct ctq_error *err)
{
	if (m->n_quantized > 0)
		return ctq_error_set(err, CTQ_ERR_USAGE, dir,
				     "holds %lld quantized linear module(s); %s the unquantized model",
				     (long long)m->n_quantized, what);
	const int64_t vocab = ctq_model_cfg(m)->vocab;
	for (int64_t i = 0; i < n * len; i++)
		if (ids[i] < 0 || ids[i] >= vocab)
			return ctq_error_set(err, CTQ_ERR_USAGE, "calib",
					     "window %lld, token %lld: id %d is outside the model's vocabulary (%lld)",
					     (long long)(i / len), (long long)(i % len), ids[i], (long long)vocab);
	return CTQ_OK;
}

static void observe(void *ctx, int64_t layer, enum ctq_observe_site site, const float *x,
		    int64_t M, int64_t K)
{
	struct ctq_smooth_stats *s = ctx;
	(void)K; /* the hidden size for both mappings observed */
	if (site == CTQ_OBSERVE_QKV)
		ctq_smooth_stats_add(s, layer, 0, x, M);
	else if (site == CTQ_OBSERVE_GATE_UP)
		ctq_smooth_stats_add(s, layer, 1, x, M);
}

enum ctq_status ctq_calib_smooth_stats(const char *dir, const char *backend, const int32_t *ids,
				       int64_t n, int64_t len,
				       struct ctq_smooth_stats *stats, struct ctq_error *err)
{
	memset(stats, 0, sizeof *stats);
	struct ctq_model m;
	int32_t *slot = NULL, *pos = NULL;
	const struct ctq_model_options o = {
		.dir = dir,
		.backend = backend ? backend : "reference",
		.tp = 1,
		.numerics = CTQ_ACT_NUMERICS_CTQ,
		.limits = {.max_slots = 1, .max_len = len, .max_tokens = len, .no_graphs = true,
			   .observe = observe, .observe_ctx = stats},
	};
	enum ctq_status st = ctq_model_open(&m, &o, err);
	if (st)
		goto done;
	const struct ctq_model_config *c = ctq_model_cfg(&m);
	if ((st = check_model(&m, dir, "calibration runs", ids, n, len, err)))
		goto done;
	if ((st = ctq_smooth_stats_init(stats, c->layers, c->hidden, err)))
		goto done;
	slot = ctq_calloc((size_t)len, sizeof *slot);
	pos = ctq_malloc((size_t)len * sizeof *pos);
	if (!slot || !pos) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
		goto done;
	}
	for (int64_t t = 0; t < len; t++)
		pos[t] = (int32_t)t;
	for (int64_t w = 0; w < n && !st; w++)
		st = ctq_model_forward(&m, ids + w * len, slot, pos, len, NULL, 0, NULL, err);
done:
	ctq_free(slot);
	ctq_free(pos);
	ctq_model_close(&m);
	return st;
}

/* ---- GPTQ, layer by layer ------------------------------------------------- */

/* The state the runner's hooks share during ctq_calib_gptq. */
struct gptq_run {
	int64_t target;           /* the layer being calibrated or propagated */
	bool propagate;           /* false: sum Hessians; true: store layer outputs */
	int64_t w, len, H;        /* the window running, its tokens, hidden size */
	float *cache;             /* (n, len, H) each window's input to `target` */
	struct ctq_gptq_hessian hess[CTQ_OBSERVE_N_SITES];
	enum ctq_status st;       /* the first failure inside a hook */
	struct ctq_error *err;
};

static void gptq_observe(void *ctx, int64_t layer, enum ctq_observe_site site, const float *x,
			 int64_t M, int64_t K)
{
	struct gptq_run *g = ctx;
	if (g->propagate || layer != g->target || g->st || (unsigned)site >= CTQ_OBSERVE_N_SITES)
		return;
	if (g->hess[site].K != K) {
		g->st = ctq_error_set(g->err, CTQ_ERR_USAGE, "calib",
				      "layer %lld, site %d: %lld input channels, expected %lld",
				      (long long)layer, (int)site, (long long)K, (long long)g->hess[site].K);
		return;
	}
	g->st = ctq_gptq_hessian_add(&g->hess[site], x, M, g->err);
}

/* Each call runs layer `target` alone: it starts there from the cached
 * input (layer 0 from the embedding) and ends after it, storing the output
 * when propagating. */
static int64_t gptq_layer_end(void *ctx, int64_t layer, float *x, int64_t T, int64_t H)
{
	struct gptq_run *g = ctx;
	float *slot = g->cache + (size_t)g->w * (size_t)g->len * (size_t)H;
	(void)T; /* == len */
	if (layer < 0) {
		if (g->target > 0)
			memcpy(x, slot, (size_t)g->len * (size_t)H * sizeof *x);
		return g->target;
	}
	if (layer == g->target && g->propagate)
		memcpy(slot, x, (size_t)g->len * (size_t)H * sizeof *x);
	return -1;
}

void ctq_calib_gptq_result_free(struct ctq_calib_gptq_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n_mods; i++) {
		ctq_free(r->mods[i].name);
		ctq_free(r->mods[i].q);
		ctq_free(r->mods[i].scale);
	}
	ctq_free(r->mods);
	memset(r, 0, sizeof *r);
}

/* The linears of each site, in model order. */
static const struct {
	enum ctq_hf_linear first;
	int n;
} site_members[CTQ_OBSERVE_N_SITES] = {
	[CTQ_OBSERVE_QKV] = {CTQ_HF_Q, 3}, [CTQ_OBSERVE_GATE_UP] = {CTQ_HF_GATE, 2},
	[CTQ_OBSERVE_DOWN] = {CTQ_HF_DOWN, 1}, [CTQ_OBSERVE_O] = {CTQ_HF_O, 1}};

static void member_name(int64_t l, enum ctq_observe_site site, int i, char *name, size_t cap)
{
	const struct ctq_hf_linear_info *h = &ctq_hf_linears[site_members[site].first + i];
	snprintf(name, cap, "model.layers.%lld.%s.%s", (long long)l, h->parent, h->leaf);
}

/* GPTQ of layer l's linear at site (its members in order) under v, the
 * results appended to res, and the linear's weight in the runner replaced
 * by the rounded one, dequantized (q * s rounded to BF16, as the library's
 * quantize_weight returns W.to(final_dtype)). */
static enum ctq_status gptq_linear(struct ctq_runner *r, const struct ctq_checkpoint *ck, int64_t l,
				   enum ctq_observe_site site, const struct ctq_gptq_hinv *v,
				   const struct ctq_calib_gptq_options *opt,
				   struct ctq_calib_gptq_result *res, uint64_t *bytes_done,
				   uint64_t bytes_total, struct ctq_error *err)
{
	enum ctq_status st = CTQ_OK;
	int64_t n_rows = 0;
	uint16_t *dq = NULL; /* (rows of the fused linear, K) bf16 */
	for (int i = 0; i < site_members[site].n && !st; i++) {
		char name[CTQ_PATH_MAX], wname[CTQ_PATH_MAX + 8];
		member_name(l, site, i, name, sizeof name);
		snprintf(wname, sizeof wname, "%s.weight", name);
		const struct ctq_st_tensor *t = ctq_checkpoint_find(ck, wname, NULL);
		if (!t || t->ndim != 2 || t->shape[1] != v->K ||
		    (t->dtype != CTQ_DTYPE_BF16 && t->dtype != CTQ_DTYPE_F16 && t->dtype != CTQ_DTYPE_F32)) {
			st = ctq_error_set(err, CTQ_ERR_CHECKPOINT, wname,
					   "%s; GPTQ needs a BF16, F16 or F32 [N, %lld] weight",
					   t ? "has another shape or dtype" : "is missing", (long long)v->K);
			break;
		}
		const int64_t N = t->shape[0], K = v->K;
		uint16_t *g2 = ctq_realloc(dq, (size_t)((n_rows + N) * K) * sizeof *dq);
		if (!g2) {
			st = ctq_error_set(err, CTQ_ERR_NOMEM, name, "out of memory");
			break;
		}
		dq = g2;
		uint16_t *dqm = dq + n_rows * K; /* (N, K) this member's rows */
		n_rows += N;
		struct ctq_calib_gptq_module *g = &res->mods[res->n_mods];
		g->N = N, g->K = K, g->dtype = t->dtype;
		g->name = ctq_strdup(name);
		g->q = ctq_malloc((size_t)(N * K) + 1);
		g->scale = ctq_malloc((size_t)N * ctq_dtype_size(t->dtype) + 4);
		double *e2 = ctq_malloc((size_t)N * sizeof *e2 + 8), *w2 = ctq_malloc((size_t)N * sizeof *w2 + 8);
		float *sf = ctq_malloc((size_t)N * sizeof *sf + 4);
		res->n_mods++; /* freed with the result from here on */
		if (!g->name || !g->q || !g->scale || !e2 || !w2 || !sf)
			st = ctq_error_set(err, CTQ_ERR_NOMEM, name, "out of memory");
		if (!st)
			st = ctq_gptq_weight(t->data, t->dtype, N, K, v, opt->block_size, wname, g->q,
					     g->scale, e2, w2, &g->loss, err);
		if (!st) {
			double se = 0.0, sw = 0.0;
			for (int64_t k = 0; k < N; k++) {
				se += e2[k], sw += w2[k];
				sf[k] = ctq_float_at(g->scale, g->dtype, k);
			}
			g->rel_l2 = sw > 0.0 ? sqrt(se / sw) : 0.0;
			/* q * s is exact in f32 (8 + 8 significant bits) */
			for (int64_t k = 0; k < N * K; k++)
				dqm[k] = ctq_f32_to_bf16((float)g->q[k] * sf[k / K]);
		}
		*bytes_done += (uint64_t)(N * K);
		if (!st && opt->progress)
			opt->progress(opt->progress_ctx, name, *bytes_done, bytes_total);
		ctq_free(e2);
		ctq_free(w2);
		ctq_free(sf);
	}
	if (!st)
		st = ctq_runner_set_dense(r, l, site, dq, err);
	ctq_free(dq);
	return st;
}

/* Whether layer l's linear at site is to be quantized: its first member is
 * in modules (n; NULL: every linear). */
static bool site_selected(const char *const *modules, size_t n, int64_t l, enum ctq_observe_site site)
{
	if (!modules)
		return true;
	char name[CTQ_PATH_MAX];
	member_name(l, site, 0, name, sizeof name);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(modules[i], name))
			return true;
	return false;
}

/* Runs window w of ids through layer g->target. */
static enum ctq_status gptq_pass(struct ctq_model *m, struct gptq_run *g, const int32_t *ids,
				 int64_t n, const int32_t *slot, const int32_t *pos,
				 struct ctq_error *err)
{
	enum ctq_status st = CTQ_OK;
	for (g->w = 0; g->w < n && !st && !g->st; g->w++)
		st = ctq_model_forward(m, ids + g->w * g->len, slot, pos, g->len, NULL, 0, NULL, err);
	return st ? st : g->st;
}

enum ctq_status ctq_calib_gptq(const char *src, const char *const *modules, size_t n_modules,
			       const int32_t *ids, int64_t n, int64_t len,
			       const struct ctq_calib_gptq_options *opt, struct ctq_calib_gptq_result *res,
			       struct ctq_error *err)
{
	memset(res, 0, sizeof *res);
	struct gptq_run g;
	memset(&g, 0, sizeof g);
	g.len = len;
	g.err = err;
	struct ctq_model m;
	memset(&m, 0, sizeof m);
	struct ctq_checkpoint ck;
	memset(&ck, 0, sizeof ck);
	struct ctq_gptq_hinv v;
	memset(&v, 0, sizeof v);
	int32_t *slot = NULL, *pos = NULL;
	enum ctq_status st = check_shape(n, len, err);
	if (st)
		return st;
	if (!(opt->dampening_frac >= 0.0 && opt->dampening_frac <= 1.0) || opt->block_size < 1)
		return ctq_error_set(err, CTQ_ERR_USAGE, "gptq",
				     "dampening_frac %g, block_size %lld; expected [0, 1] and >= 1",
				     opt->dampening_frac, (long long)opt->block_size);
	const struct ctq_model_options o = {
		.dir = src,
		.backend = opt->backend ? opt->backend : "reference",
		.tp = 1,
		.numerics = CTQ_ACT_NUMERICS_CTQ,
		.limits = {.max_slots = 1, .max_len = len, .max_tokens = len, .no_graphs = true,
			   .observe = gptq_observe, .observe_ctx = &g,
			   .layer_end = gptq_layer_end, .layer_end_ctx = &g},
	};
	if ((st = ctq_model_open(&m, &o, err)) || (st = ctq_checkpoint_open(&ck, src, err)))
		goto done;
	const struct ctq_model_config *c = ctq_model_cfg(&m);
	struct ctq_runner *r = &m.r[0];
	if ((st = check_model(&m, src, "GPTQ calibrates", ids, n, len, err)))
		goto done;
	const struct ctq_layer *y0 = &r->layers[0];
	const struct ctq_lin *lins[CTQ_OBSERVE_N_SITES] = {
		[CTQ_OBSERVE_QKV] = &y0->qkv, [CTQ_OBSERVE_GATE_UP] = &y0->gu,
		[CTQ_OBSERVE_DOWN] = &y0->down, [CTQ_OBSERVE_O] = &y0->o};
	for (int s = 0; s < CTQ_OBSERVE_N_SITES && !st; s++)
		st = ctq_gptq_hessian_init(&g.hess[s], lins[s]->K, err);
	g.H = c->hidden;
	g.cache = ctq_malloc((size_t)n * (size_t)len * (size_t)c->hidden * sizeof *g.cache);
	slot = ctq_calloc((size_t)len, sizeof *slot);
	pos = ctq_malloc((size_t)len * sizeof *pos);
	res->mods = ctq_calloc((size_t)(c->layers * CTQ_HF_LINEARS), sizeof *res->mods);
	if (!st && (!g.cache || !slot || !pos || !res->mods))
		st = ctq_error_set(err, CTQ_ERR_NOMEM, "calib",
				   "out of memory (the layer inputs of %lld windows of %lld tokens)",
				   (long long)n, (long long)len);
	if (st)
		goto done;
	for (int64_t t = 0; t < len; t++)
		pos[t] = (int32_t)t;
	uint64_t bytes_done = 0, bytes_total = 0;
	for (int64_t l = 0; l < c->layers; l++)
		for (int s = 0; s < CTQ_OBSERVE_N_SITES; s++)
			if (site_selected(modules, n_modules, l, (enum ctq_observe_site)s))
				bytes_total += (uint64_t)(lins[s]->N * lins[s]->K);
	for (int64_t l = 0; l < c->layers && !st; l++) {
		g.target = l;
		g.propagate = false;
		for (int s = 0; s < CTQ_OBSERVE_N_SITES; s++)
			ctq_gptq_hessian_reset(&g.hess[s]);
		if ((st = gptq_pass(&m, &g, ids, n, slot, pos, err)))
			break;
		/* in model order; the order is of no consequence to the result:
		 * each linear has its Hessian, taken before any was rounded */
		static const enum ctq_observe_site order[CTQ_OBSERVE_N_SITES] = {
			CTQ_OBSERVE_QKV, CTQ_OBSERVE_O, CTQ_OBSERVE_GATE_UP, CTQ_OBSERVE_DOWN};
		for (int k = 0; k < CTQ_OBSERVE_N_SITES && !st; k++) {
			const enum ctq_observe_site s = order[k];
			if (!site_selected(modules, n_modules, l, s))
				continue;
			if ((st = ctq_gptq_hinv_init(&v, &g.hess[s], opt->dampening_frac, opt->actorder, err)))
				break;
			res->n_fallback += v.fallback;
			res->n_dead += v.n_dead;
			res->n_tokens = g.hess[s].n_tokens;
			st = gptq_linear(r, &ck, l, s, &v, opt, res, &bytes_done,
					 bytes_total, err);
			ctq_gptq_hinv_free(&v);
		}
		if (!st && l + 1 < c->layers) {
			g.propagate = true;
			st = gptq_pass(&m, &g, ids, n, slot, pos, err);
		}
	}
done:
	ctq_gptq_hinv_free(&v);
	for (int s = 0; s < CTQ_OBSERVE_N_SITES; s++)
		ctq_gptq_hessian_free(&g.hess[s]);
	ctq_free(g.cache);
	ctq_free(slot);
	ctq_free(pos);
	ctq_checkpoint_close(&ck);
	ctq_model_close(&m);
	return st;
}

int64_t ctq_calib_gptq_weight(void *ctx, const char *module, const void *w, enum ctq_dtype dtype,
			      int64_t N, int64_t K, int8_t *q, void *scale, double *err2,
			      double *norm2)
{
	const struct ctq_calib_gptq_result *r = ctx;
	const struct ctq_calib_gptq_module *g = NULL;
	for (size_t i = 0; i < r->n_mods && !g; i++)
		if (!strcmp(r->mods[i].name, module))
			g = &r->mods[i];
	if (!g || g->N != N || g->K != K || g->dtype != dtype)
		return -3;
	const size_t esz = ctq_dtype_size(dtype);
	memcpy(q, g->q, (size_t)(N * K));
	memcpy(scale, g->scale, (size_t)N * esz);
	float *row = ctq_malloc((size_t)K * sizeof *row + 4); /* (K) */
	if (!row)
		return -2;
	for (int64_t i = 0; i < N; i++) {
		ctq_convert_to_f32((const unsigned char *)w + (size_t)(i * K) * esz, dtype, (size_t)K, row);
		const double s = ctq_float_at(scale, dtype, i);
		double e2 = 0.0, w2 = 0.0;
		for (int64_t k = 0; k < K; k++) {
			const double d = (double)q[i * K + k] * s - (double)row[k];
			e2 += d * d;
			w2 += (double)row[k] * (double)row[k];
		}
		if (!isfinite(w2)) {
			ctq_free(row);
			return i;
		}
		err2[i] = e2, norm2[i] = w2;
	}
	ctq_free(row);
	return -1;
}
