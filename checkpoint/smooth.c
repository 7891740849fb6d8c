/* ctq SmoothQuant weight transform (checkpoint/smooth.h). */
#include "checkpoint/smooth.h"
#include "checkpoint/quantize.h"
#include "checkpoint/safetensors.h"
#include "checkpoint/synth.h"
#include "core/arena.h"
#include "core/dtype.h"
#include "core/fileio.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONFIG_MAX_BYTES ((size_t)64 << 20)

/* The library's DEFAULT_SMOOTHQUANT_MAPPINGS: smooth layer, balance layers. */
static const char *const smooth_layer[CTQ_SMOOTH_N_MAPPINGS] = {
	"input_layernorm", "post_attention_layernorm"};
static const char *const balance_layers[CTQ_SMOOTH_N_MAPPINGS][3] = {
	{"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"},
	{"mlp.gate_proj", "mlp.up_proj", NULL}};

enum ctq_status ctq_smooth_stats_init(struct ctq_smooth_stats *s, int64_t layers, int64_t hidden,
				      struct ctq_error *err)
{
	memset(s, 0, sizeof *s);
	if (layers < 1 || hidden < 1)
		return ctq_error_set(err, CTQ_ERR_USAGE, "smooth", "%lld layers of %lld channels",
				     (long long)layers, (long long)hidden);
	const size_t n = (size_t)(layers * CTQ_SMOOTH_N_MAPPINGS * hidden);
	s->min = ctq_malloc(n * sizeof *s->min);
	s->max = ctq_malloc(n * sizeof *s->max);
	if (!s->min || !s->max) {
		ctq_smooth_stats_free(s);
		return ctq_error_set(err, CTQ_ERR_NOMEM, "smooth", "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		s->min[i] = INFINITY;
		s->max[i] = -INFINITY;
	}
	s->layers = layers;
	s->hidden = hidden;
	return CTQ_OK;
}

void ctq_smooth_stats_free(struct ctq_smooth_stats *s)
{
	if (!s)
		return;
	ctq_free(s->min);
	ctq_free(s->max);
	memset(s, 0, sizeof *s);
}

void ctq_smooth_stats_add(struct ctq_smooth_stats *s, int64_t l, int mapping, const float *x,
			  int64_t M)
{
	if (l < 0 || l >= s->layers || mapping < 0 || mapping >= CTQ_SMOOTH_N_MAPPINGS)
		return;
	const int64_t H = s->hidden;
	float *mn = s->min + (l * CTQ_SMOOTH_N_MAPPINGS + mapping) * H;
	float *mx = s->max + (l * CTQ_SMOOTH_N_MAPPINGS + mapping) * H;
	for (int64_t m = 0; m < M; m++)
		for (int64_t j = 0; j < H; j++) {
			const float v = x[m * H + j];
			mn[j] = v < mn[j] ? v : mn[j];
			mx[j] = v > mx[j] ? v : mx[j];
		}
	if (l == 0 && mapping == 0)
		s->n_rows += M;
}

/* v rounded to the model dtype, as a torch op on tensors of that dtype
 * stores its f32 result. */
static float round_to(int dtype, float v)
{
	if (dtype == CTQ_DTYPE_BF16)
		return ctq_bf16_to_f32(ctq_f32_to_bf16(v));
	if (dtype == CTQ_DTYPE_F16)
		return ctq_f16_to_f32(ctq_f32_to_f16(v));
	return v;
}

void ctq_smooth_scales(const float *range, const float *wmax, int64_t hidden, double alpha,
		       int dtype, float *s)
{
	/* Python floats reach the pow kernels as the f32 exponent of its opmath */
	const float a = (float)alpha, b = (float)(1.0 - alpha);
	for (int64_t j = 0; j < hidden; j++) {
		float v = round_to(dtype, round_to(dtype, powf(range[j], a)) /
					  round_to(dtype, powf(wmax[j], b)));
		v = wmax[j] > 0.0f ? v : range[j];          /* torch.where(weight_scales > 0.0, ...) */
		s[j] = v > CTQ_SMOOTH_MIN_SCALE ? v : CTQ_SMOOTH_MIN_SCALE; /* torch.maximum: f32 */
	}
}

/* What an input tensor is to the transform. */
enum role { ROLE_COPY = 0, ROLE_NORM, ROLE_BALANCE };

struct sctx {
	const struct ctq_checkpoint *ck;
	int64_t layers, hidden;
	float *scales;          /* (layers, CTQ_SMOOTH_N_MAPPINGS, hidden) */
	unsigned char *role;    /* (n tensors) enum role */
	int64_t *role_idx;      /* (n tensors) layer * CTQ_SMOOTH_N_MAPPINGS + mapping */
	float *buf;             /* (largest smoothed tensor) f32 */
};

/* The role of tensor name, and its (layer, mapping) index. */
static enum role role_of(const char *name, int64_t *layer, int *mapping)
{
	static const char prefix[] = "model.layers.";
	if (strncmp(name, prefix, sizeof prefix - 1))
		return ROLE_COPY;
	const char *p = name + sizeof prefix - 1;
	char *end;
	long long l = strtoll(p, &end, 10);
	if (end == p || *end != '.' || l < 0 || *p < '0' || *p > '9')
		return ROLE_COPY;
	const char *suf = end + 1;
	char want[64];
	for (int m = 0; m < CTQ_SMOOTH_N_MAPPINGS; m++) {
		*layer = l;
		*mapping = m;
		snprintf(want, sizeof want, "%s.weight", smooth_layer[m]);
		if (!strcmp(suf, want))
			return ROLE_NORM;
		for (int k = 0; k < 3 && balance_layers[m][k]; k++) {
			snprintf(want, sizeof want, "%s.weight", balance_layers[m][k]);
			if (!strcmp(suf, want))
				return ROLE_BALANCE;
		}
	}
	return ROLE_COPY;
}

static bool is_float(enum ctq_dtype t)
{
	return t == CTQ_DTYPE_BF16 || t == CTQ_DTYPE_F16 || t == CTQ_DTYPE_F32;
}

static void from_f32(const float *src, size_t n, enum ctq_dtype t, void *dst)
{
	if (t == CTQ_DTYPE_BF16)
		ctq_convert_f32_to_bf16(src, n, dst);
	else if (t == CTQ_DTYPE_F16)
		ctq_convert_f32_to_f16(src, n, dst);
	else
		memcpy(dst, src, n * sizeof *src);
}

/* A checked tensor of a mapping: float, [hidden] for a norm, [N, hidden] for
 * a balance weight. */
static enum ctq_status get_tensor(const struct ctq_checkpoint *ck, int64_t l, const char *mod,
				  bool norm, int64_t H, const struct ctq_st_tensor **out,
				  struct ctq_error *err)
{
	char name[160];
	snprintf(name, sizeof name, "model.layers.%lld.%s.weight", (long long)l, mod);
	const struct ctq_st_tensor *t = ctq_checkpoint_find(ck, name, NULL);
	if (!t)
		return ctq_error_set(err, CTQ_ERR_CHECKPOINT, name,
				     "is missing; SmoothQuant's default mappings need it");
	if (!is_float(t->dtype))
		return ctq_error_set(err, CTQ_ERR_CHECKPOINT, name, "is %s; expected BF16, F16 or F32",
				     ctq_dtype_name(t->dtype));
	if (norm ? t->ndim != 1 || t->shape[0] != H : t->ndim != 2 || t->shape[1] != H)
		return ctq_error_set(err, CTQ_ERR_CHECKPOINT, name,
				     "has %d dimension(s) [%lld, ...]; expected %s with %lld input channels",
				     t->ndim, (long long)t->shape[0], norm ? "[hidden]" : "[N, hidden]",
				     (long long)H);
	*out = t;
	return CTQ_OK;
}

static enum ctq_status produce_smooth(void *vctx, size_t i, const struct ctq_stream_tensor *t,
				      void *dst, struct ctq_error *err)
{
	struct sctx *c = vctx;
	const struct ctq_st_tensor *in = ctq_checkpoint_at(c->ck, i, NULL);
	const int64_t H = c->hidden;
	const float *s = c->scales + c->role_idx[i] * H;
	const size_t n = (size_t)in->n_elements;
	if (!ctq_convert_to_f32(in->data, in->dtype, n, c->buf))
		return ctq_error_set(err, CTQ_ERR_CHECKPOINT, t->name, "cannot convert (internal error)");
	if (c->role[i] == ROLE_NORM)
		for (int64_t j = 0; j < H; j++)
			c->buf[j] = c->buf[j] / s[j];    /* smooth_layer.weight.div_(scales) */
	else
		for (size_t r = 0; r < n / (size_t)H; r++)
			for (int64_t j = 0; j < H; j++)
				c->buf[r * (size_t)H + (size_t)j] *= s[j]; /* weight.mul_(scales.view(1, -1)) */
	from_f32(c->buf, n, in->dtype, dst);
	return CTQ_OK;
}

/* config.json byte for byte. */
static enum ctq_status copy_config(const char *in, const char *dir, struct ctq_error *err)
{
	char *src = ctq_path_join(in, "config.json"), *dst = ctq_path_join(dir, "config.json");
	char *data = NULL;
	size_t n = 0;
	enum ctq_status st;
	if (!src || !dst)
		st = ctq_error_set(err, CTQ_ERR_NOMEM, in, "out of memory");
	else if (!(st = ctq_file_read(src, CONFIG_MAX_BYTES, &data, &n, err)))
		st = ctq_file_write_atomic(dst, data, n, err);
	free(data);
	free(src);
	free(dst);
	return st;
}

enum ctq_status ctq_smooth_checkpoint(const char *in, const char *dir,
				      const struct ctq_smooth_stats *stats, double alpha,
				      struct ctq_smooth_result *res, struct ctq_error *err)
{
	struct ctq_checkpoint ck;
	memset(&ck, 0, sizeof ck);
	struct sctx c;
	memset(&c, 0, sizeof c);
	struct ctq_stream_tensor *list = NULL;
	float *range = NULL, *wmax = NULL;
	enum ctq_status st = CTQ_OK;
	if (res) {
		memset(res, 0, sizeof *res);
		res->scale_min = INFINITY;
		res->scale_max = -INFINITY;
	}
	if (!(alpha >= 0.0 && alpha <= 1.0))
		return ctq_error_set(err, CTQ_ERR_USAGE, "smoothing_strength", "is %g; expected 0 to 1",
				     alpha);
	if (!stats || stats->layers < 1 || stats->n_rows < 1)
		return ctq_error_set(err, CTQ_ERR_USAGE, "smooth",
				     "no calibration activations were observed");
	if ((st = ctq_checkpoint_open(&ck, in, err)))
		goto done;
	const int64_t L = stats->layers, H = stats->hidden;
	c.ck = &ck;
	c.layers = L;
	c.hidden = H;
	const size_t n_in = ctq_checkpoint_count(&ck);
	c.scales = ctq_malloc((size_t)(L * CTQ_SMOOTH_N_MAPPINGS * H) * sizeof *c.scales);
	c.role = ctq_calloc(n_in ? n_in : 1, sizeof *c.role);
	c.role_idx = ctq_calloc(n_in ? n_in : 1, sizeof *c.role_idx);
	list = ctq_calloc(n_in ? n_in : 1, sizeof *list);
	range = ctq_malloc((size_t)H * sizeof *range);
	wmax = ctq_malloc((size_t)H * sizeof *wmax);
	if (!c.scales || !c.role || !c.role_idx || !list || !range || !wmax) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, in, "out of memory");
		goto done;
	}
	/* The stats must cover exactly the checkpoint's layers. */
	char name[160];
	snprintf(name, sizeof name, "model.layers.%lld.%s.weight", (long long)L, smooth_layer[0]);
	if (ctq_checkpoint_find(&ck, name, NULL)) {
		st = ctq_error_set(err, CTQ_ERR_USAGE, name,
				   "exists, but the calibration statistics cover %lld layers", (long long)L);
		goto done;
	}
	/* The scales of every (layer, mapping), and the largest tensor. */
	size_t max_elems = 0;
	for (int64_t l = 0; l < L; l++)
		for (int m = 0; m < CTQ_SMOOTH_N_MAPPINGS; m++) {
			const int64_t idx = l * CTQ_SMOOTH_N_MAPPINGS + m;
			const struct ctq_st_tensor *norm, *w;
			if ((st = get_tensor(&ck, l, smooth_layer[m], true, H, &norm, err)))
				goto done;
			const int dt = norm->dtype;
			for (int64_t j = 0; j < H; j++) {
				const float lo = stats->min[idx * H + j], hi = stats->max[idx * H + j];
				if (!isfinite(lo) || !isfinite(hi)) {
					st = ctq_error_set(err, CTQ_ERR_USAGE, smooth_layer[m],
							   "layer %lld channel %lld: no finite activation range (%g, %g)",
							   (long long)l, (long long)j, (double)lo, (double)hi);
					goto done;
				}
				/* max_channel_vals - min_channel_vals, bf16 tensors under torch */
				range[j] = round_to(dt, round_to(dt, hi) - round_to(dt, lo));
				wmax[j] = 0.0f;
			}
			for (int k = 0; k < 3 && balance_layers[m][k]; k++) {
				if ((st = get_tensor(&ck, l, balance_layers[m][k], false, H, &w, err)))
					goto done;
				const size_t n = (size_t)w->n_elements;
				max_elems = n > max_elems ? n : max_elems;
				float *buf = ctq_malloc(n * sizeof *buf);
				if (!buf) {
					st = ctq_error_set(err, CTQ_ERR_NOMEM, in, "out of memory");
					goto done;
				}
				ctq_convert_to_f32(w->data, w->dtype, n, buf);
				for (size_t r = 0; r < n / (size_t)H; r++)
					for (int64_t j = 0; j < H; j++) {
						const float a = fabsf(buf[r * (size_t)H + (size_t)j]);
						wmax[j] = a > wmax[j] ? a : wmax[j];
					}
				ctq_free(buf);
			}
			for (int64_t j = 0; j < H; j++)
				wmax[j] = round_to(dt, 2.0f * wmax[j]); /* 2.0 * cat(...).max(dim=0) */
			float *s = c.scales + idx * H;
			ctq_smooth_scales(range, wmax, H, alpha, dt, s);
			if (res)
				for (int64_t j = 0; j < H; j++) {
					res->scale_min = s[j] < res->scale_min ? s[j] : res->scale_min;
					res->scale_max = s[j] > res->scale_max ? s[j] : res->scale_max;
				}
		}
	max_elems = max_elems > (size_t)H ? max_elems : (size_t)H;
	if (!(c.buf = ctq_malloc(max_elems * sizeof *c.buf))) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, in, "out of memory");
		goto done;
	}

	/* Every tensor in name order: the smoothed ones produced, the rest borrowed. */
	for (size_t i = 0; i < n_in; i++) {
		const struct ctq_st_tensor *t = ctq_checkpoint_at(&ck, i, NULL);
		int64_t l = 0;
		int m = 0;
		enum role r = role_of(t->name, &l, &m);
		if (r != ROLE_COPY && l >= L) {
			st = ctq_error_set(err, CTQ_ERR_USAGE, t->name,
					   "is past the %lld layers the calibration statistics cover",
					   (long long)L);
			goto done;
		}
		c.role[i] = (unsigned char)r;
		c.role_idx[i] = l * CTQ_SMOOTH_N_MAPPINGS + m;
		list[i].name = t->name;
		list[i].dtype = t->dtype;
		list[i].ndim = t->ndim;
		memcpy(list[i].shape, t->shape, sizeof list[i].shape);
		list[i].n_bytes = t->n_bytes;
		list[i].borrowed = r == ROLE_COPY ? t->data : NULL;
		if (res && r == ROLE_NORM)
			res->n_norms++;
		else if (res && r == ROLE_BALANCE)
			res->n_linears++;
	}
	if ((st = ctq_mkdirs(dir, err)) || (st = copy_config(in, dir, err)) ||
	    (st = ctq_stream_write(dir, ck.stem, list, n_in, CTQ_HF_MAX_SHARD_BYTES, produce_smooth, &c, NULL,
				   NULL, err)) ||
	    (st = ctq_quantize_copy_aux(in, dir, err)))
		goto done;
done:
	ctq_free(range);
	ctq_free(wmax);
	ctq_free(list);
	ctq_free(c.scales);
	ctq_free(c.role);
	ctq_free(c.role_idx);
	ctq_free(c.buf);
	ctq_checkpoint_close(&ck);
	return st;
}
