/* ctq synthetic models and the streaming sharded writer (see synth.h). */
#include "checkpoint/synth.h"
#include "core/arena.h"
#include "core/fileio.h"
#include "core/json_write.h"
#include "core/rng.h"
#include "core/strbuf.h"
#include "quant/modules.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- presets --------------------------------------------------------------- */

struct preset {
	const char *name;
	long hidden, layers, heads, kv_heads, head_dim, intermediate, vocab, max_pos;
	long bos, eos;
};

/* The two -shape presets are the published Qwen3-0.6B and Qwen3-4B
 * configs (token ids included); tiny keeps the same proportions
 * (GQA 2:1, intermediate ~2.75 x hidden) at a size a unit test runs in
 * milliseconds. */
static const struct preset presets[] = {
	{"tiny", 64, 2, 4, 2, 16, 176, 512, 2048, 1, 2},
	{"qwen3-0.6b-shape", 1024, 28, 16, 8, 128, 3072, 151936, 40960, 151643, 151645},
	{"qwen3-4b-shape", 2560, 36, 32, 8, 128, 9728, 151936, 40960, 151643, 151645},
};

enum ctq_status ctq_synth_spec_init(struct ctq_synth_spec *s, const char *arch,
				    const char *preset, struct ctq_error *err)
{
	memset(s, 0, sizeof *s);
	static const char *const archs[] = {"qwen3", "qwen2", "llama", "qwen3_moe", "qwen_image_dit"};
	int ai = -1;
	for (int i = 0; arch && i < 5; i++)
		if (!strcmp(arch, archs[i]))
			ai = i;
	if (ai < 0)
		return ctq_error_set(err, CTQ_ERR_USAGE, "--arch",
				     "is \"%s\"; expected qwen3, qwen2, llama, qwen3_moe or qwen_image_dit",
				     arch ? arch : "(missing)");
	/* The MoE and DiT trees: tiny, or the published geometry of
	 * Qwen3-30B-A3B (config.json: hidden 2048, 48 layers, 32/4 heads of
	 * 128, 128 experts of 768, 8 per token) and of Qwen-Image's
	 * transformer (60 blocks, 24 heads of 128, 64 in / 16 out channels,
	 * joint_attention_dim 3584): with --layers 1 a probe sees their real
	 * expert and block shapes. */
	static const struct tree_preset {
		const char *arch, *name, *base; /* base: the dense preset it extends */
		long hidden, layers, heads, kv_heads, head_dim, intermediate, vocab;
		long experts, per_tok, moe_inter;
	} tree_presets[] = {
		{"qwen3_moe", "tiny", "tiny", 0, 0, 0, 0, 0, 0, 0, 8, 2, 32},
		{"qwen3_moe", "qwen3-30b-a3b-shape", "qwen3-4b-shape", 2048, 48, 32, 4, 128, 6144, 151936,
		 128, 8, 768},
		{"qwen_image_dit", "tiny", "tiny", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
		{"qwen_image_dit", "qwen-image-shape", "tiny", 3072, 60, 24, 24, 128, 0, 0, 0, 0, 0},
	};
	const struct tree_preset *tp = NULL;
	for (size_t i = 0; ai >= 3 && i < sizeof tree_presets / sizeof *tree_presets; i++)
		if (preset && !strcmp(arch, tree_presets[i].arch) && !strcmp(preset, tree_presets[i].name))
			tp = &tree_presets[i];
	if (ai >= 3 && !tp)
		return ctq_error_set(err, CTQ_ERR_USAGE, "--preset",
				     "is \"%s\"; %s takes tiny or %s", preset ? preset : "(missing)", arch,
				     ai == 3 ? "qwen3-30b-a3b-shape" : "qwen-image-shape");
	const struct preset *p = NULL;
	for (size_t i = 0; i < sizeof presets / sizeof *presets; i++)
		if (preset && !strcmp(tp ? tp->base : preset, presets[i].name))
			p = &presets[i];
	if (!p)
		return ctq_error_set(err, CTQ_ERR_USAGE, "--preset",
				     "is \"%s\"; expected tiny, qwen3-0.6b-shape or qwen3-4b-shape",
				     preset ? preset : "(missing)");
	s->arch = archs[ai];
	s->preset = p->name;
	s->hidden_size = p->hidden;
	s->intermediate_size = p->intermediate;
	s->num_hidden_layers = p->layers;
	s->num_attention_heads = p->heads;
	s->num_key_value_heads = p->kv_heads;
	s->head_dim = p->head_dim;
	s->vocab_size = p->vocab;
	s->max_position_embeddings = p->max_pos;
	s->bos_token_id = p->bos;
	s->eos_token_id = p->eos;
	/* Qwen2/Qwen3 ship rope_theta 1e6; Llama 3 5e5. */
	s->rope_theta = !strcmp(s->arch, "llama") ? 500000.0 : 1000000.0;
	s->rms_norm_eps = 1e-6;
	s->tie_word_embeddings = true;
	s->attention_bias = !strcmp(s->arch, "qwen2");
	s->qk_norm = !strcmp(s->arch, "qwen3") || !strcmp(s->arch, "qwen3_moe");
	if (tp && tp->hidden) {
		s->preset = tp->name;
		s->hidden_size = tp->hidden;
		s->num_hidden_layers = tp->layers;
		s->num_attention_heads = tp->heads;
		s->num_key_value_heads = tp->kv_heads;
		s->head_dim = tp->head_dim;
		if (tp->intermediate)
			s->intermediate_size = tp->intermediate;
		if (tp->vocab)
			s->vocab_size = tp->vocab;
	}
	if (!strcmp(s->arch, "qwen3_moe")) {
		s->num_experts = tp->experts;
		s->num_experts_per_tok = tp->per_tok;
		s->moe_intermediate_size = tp->moe_inter;
	} else if (!strcmp(s->arch, "qwen_image_dit")) {
		const bool full = tp->hidden != 0;
		s->in_channels = full ? 64 : 16;
		s->out_channels = full ? 16 : 4;
		s->joint_attention_dim = full ? 3584 : 64;
		s->patch_size = 2;
		s->tie_word_embeddings = false;
	}
	return CTQ_OK;
}

/* Whether the runner executes spec s's architecture (else: a tree for
 * inspect, probe and quantize, written from quant/modules.c's tree). */
static bool is_tree_only(const struct ctq_synth_spec *s)
{
	return !strcmp(s->arch, "qwen3_moe") || !strcmp(s->arch, "qwen_image_dit");
}

static enum ctq_status check_spec(const struct ctq_synth_spec *s, struct ctq_error *err)
{
	const struct {
		const char *name;
		long v, max;
	} f[] = {
		{"hidden_size", s->hidden_size, 1L << 20},
		{"intermediate_size", s->intermediate_size, 1L << 22},
		{"num_hidden_layers", s->num_hidden_layers, 4096},
		{"num_attention_heads", s->num_attention_heads, 4096},
		{"num_key_value_heads", s->num_key_value_heads, 4096},
		{"head_dim", s->head_dim, 4096},
		{"vocab_size", s->vocab_size, 1L << 24},
	};
	for (size_t i = 0; i < sizeof f / sizeof *f; i++)
		if (f[i].v < 1 || f[i].v > f[i].max)
			return ctq_error_set(err, CTQ_ERR_USAGE, f[i].name,
					     "is %ld; expected 1..%ld", f[i].v, f[i].max);
	if (s->num_attention_heads % s->num_key_value_heads)
		return ctq_error_set(err, CTQ_ERR_USAGE, "num_key_value_heads",
				     "is %ld; it must divide num_attention_heads (%ld)",
				     s->num_key_value_heads, s->num_attention_heads);
	if (s->outliers && s->hidden_size < CTQ_SYNTH_N_OUTLIERS)
		return ctq_error_set(err, CTQ_ERR_USAGE, "hidden_size",
				     "is %ld; outliers need at least %d channels",
				     s->hidden_size, CTQ_SYNTH_N_OUTLIERS);
	if (!(s->logit_gain >= 0 && s->logit_gain <= 1e4))
		return ctq_error_set(err, CTQ_ERR_USAGE, "logit_gain",
				     "is %g; expected 0 (none) or a gain up to 10000", s->logit_gain);
	if (!s->arch || !s->preset)
		return ctq_error_set(err, CTQ_ERR_USAGE, "arch",
				     "spec not initialised (use ctq_synth_spec_init)");
	return CTQ_OK;
}

/* ---- random streams -------------------------------------------------------- */

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

/* The generator of one row of one tensor: a function of (seed, name, row)
 * only, so rows can be drawn in any order by any thread. */
static void rng_for_row(struct ctq_rng *r, uint64_t seed, uint64_t name_hash, uint64_t row)
{
	uint64_t x = seed;
	uint64_t a = ctq_splitmix64(&x) ^ name_hash;
	uint64_t b = ctq_splitmix64(&a) ^ row;
	ctq_rng_seed(r, ctq_splitmix64(&b));
}

/* Two independent N(0, 1) draws (Marsaglia's polar method: no trigonometry,
 * about 1.27 uniform pairs per normal pair). */
static void normal_pair(struct ctq_rng *r, double *z0, double *z1)
{
	double u, v, q;
	do {
		u = 2.0 * ctq_rng_uniform(r) - 1.0;
		v = 2.0 * ctq_rng_uniform(r) - 1.0;
		q = u * u + v * v;
	} while (q >= 1.0 || q == 0.0);
	double f = sqrt(-2.0 * log(q) / q);
	*z0 = u * f;
	*z1 = v * f;
}

void ctq_synth_outlier_channels(const struct ctq_synth_spec *s,
				long out[CTQ_SYNTH_N_OUTLIERS])
{
	struct ctq_rng r;
	rng_for_row(&r, s->seed, fnv1a("ctq-synth-outlier-channels"), 0);
	long h = s->hidden_size;
	int n = 0;
	while (n < CTQ_SYNTH_N_OUTLIERS) {
		if (h < CTQ_SYNTH_N_OUTLIERS) { /* not enough channels: 0, 1, ... */
			out[n] = n < h ? n : h - 1;
			n++;
			continue;
		}
		long c = (long)ctq_rng_below(&r, (uint64_t)h);
		bool dup = false;
		for (int k = 0; k < n; k++)
			dup |= out[k] == c;
		if (!dup)
			out[n++] = c;
	}
	for (int i = 1; i < CTQ_SYNTH_N_OUTLIERS; i++) /* insertion sort */
		for (int k = i; k > 0 && out[k - 1] > out[k]; k--) {
			long t = out[k];
			out[k] = out[k - 1];
			out[k - 1] = t;
		}
}

/* ---- config.json ----------------------------------------------------------- */

static const char *arch_class(const char *arch)
{
	return !strcmp(arch, "qwen3")       ? "Qwen3ForCausalLM"
	       : !strcmp(arch, "qwen2")     ? "Qwen2ForCausalLM"
	       : !strcmp(arch, "qwen3_moe") ? "Qwen3MoeForCausalLM"
					    : "LlamaForCausalLM";
}

/* A diffusers QwenImageTransformer2DModel config.json (the fields its
 * __init__ takes, as diffusers' save_config writes them). */
static bool dit_config(const struct ctq_synth_spec *s, cJSON *c)
{
	bool ok = cJSON_AddStringToObject(c, "_class_name", "QwenImageTransformer2DModel") &&
		  cJSON_AddStringToObject(c, "_diffusers_version", "0.35.0") &&
		  cJSON_AddNumberToObject(c, "attention_head_dim", (double)s->head_dim);
	cJSON *axes = cJSON_AddArrayToObject(c, "axes_dims_rope");
	/* QwenEmbedRope: the three axes split head_dim (16, 56, 56 of 128),
	 * each even (diffusers' rope_params asserts it: 4, 6, 6 of 16) */
	long a0 = s->head_dim / 8, a1 = (s->head_dim - a0) / 2;
	a0 += a0 & 1;
	a1 -= a1 & 1;
	ok = ok && axes && cJSON_AddItemToArray(axes, cJSON_CreateNumber((double)a0)) &&
	     cJSON_AddItemToArray(axes, cJSON_CreateNumber((double)a1)) &&
	     cJSON_AddItemToArray(axes, cJSON_CreateNumber((double)(s->head_dim - a0 - a1)));
	ok = ok && cJSON_AddBoolToObject(c, "guidance_embeds", false) &&
	     cJSON_AddNumberToObject(c, "in_channels", (double)s->in_channels) &&
	     cJSON_AddNumberToObject(c, "joint_attention_dim", (double)s->joint_attention_dim) &&
	     cJSON_AddNumberToObject(c, "num_attention_heads", (double)s->num_attention_heads) &&
	     cJSON_AddNumberToObject(c, "num_layers", (double)s->num_hidden_layers) &&
	     cJSON_AddNumberToObject(c, "out_channels", (double)s->out_channels) &&
	     cJSON_AddNumberToObject(c, "patch_size", (double)s->patch_size);
	return ok;
}

enum ctq_status ctq_synth_config(const struct ctq_synth_spec *s, cJSON **config,
				 cJSON **generation, struct ctq_error *err)
{
	*config = *generation = NULL;
	enum ctq_status st = check_spec(s, err);
	if (st)
		return st;
	cJSON *c = cJSON_CreateObject();
	cJSON *g = cJSON_CreateObject();
	bool ok = c && g;
	if (ok && !strcmp(s->arch, "qwen_image_dit")) {
		/* a diffusers model folder has no generation_config.json */
		cJSON_Delete(g);
		g = NULL;
		if (!dit_config(s, c)) {
			cJSON_Delete(c);
			return ctq_error_set(err, CTQ_ERR_NOMEM, "config.json", "out of memory");
		}
		*config = c;
		return CTQ_OK;
	}
	/* The fields transformers' Qwen3Config / Qwen2Config / LlamaConfig
	 * write, with the values of the published checkpoints. head_dim is
	 * written for every architecture: transformers reads it when present
	 * (the -shape presets have head_dim * heads != hidden_size). */
	cJSON *archs = cJSON_AddArrayToObject(c, "architectures");
	ok = ok && archs && cJSON_AddItemToArray(archs, cJSON_CreateString(arch_class(s->arch)));
	ok = ok && cJSON_AddBoolToObject(c, "attention_bias", s->attention_bias);
	ok = ok && cJSON_AddNumberToObject(c, "attention_dropout", 0.0);
	ok = ok && cJSON_AddNumberToObject(c, "bos_token_id", (double)s->bos_token_id);
	ok = ok && cJSON_AddNumberToObject(c, "eos_token_id", (double)s->eos_token_id);
	ok = ok && cJSON_AddNumberToObject(c, "head_dim", (double)s->head_dim);
	ok = ok && cJSON_AddStringToObject(c, "hidden_act", "silu");
	ok = ok && cJSON_AddNumberToObject(c, "hidden_size", (double)s->hidden_size);
	ok = ok && cJSON_AddNumberToObject(c, "initializer_range", CTQ_SYNTH_INIT_STD);
	ok = ok && cJSON_AddNumberToObject(c, "intermediate_size", (double)s->intermediate_size);
	ok = ok && cJSON_AddNumberToObject(c, "max_position_embeddings",
					   (double)s->max_position_embeddings);
	ok = ok && cJSON_AddStringToObject(c, "model_type", s->arch);
	ok = ok && cJSON_AddNumberToObject(c, "num_attention_heads", (double)s->num_attention_heads);
	ok = ok && cJSON_AddNumberToObject(c, "num_hidden_layers", (double)s->num_hidden_layers);
	ok = ok && cJSON_AddNumberToObject(c, "num_key_value_heads", (double)s->num_key_value_heads);
	ok = ok && cJSON_AddNumberToObject(c, "rms_norm_eps", s->rms_norm_eps);
	ok = ok && cJSON_AddNullToObject(c, "rope_scaling");
	ok = ok && cJSON_AddNumberToObject(c, "rope_theta", s->rope_theta);
	ok = ok && cJSON_AddBoolToObject(c, "tie_word_embeddings", s->tie_word_embeddings);
	ok = ok && cJSON_AddStringToObject(c, "torch_dtype", "bfloat16");
	ok = ok && cJSON_AddBoolToObject(c, "use_cache", true);
	ok = ok && cJSON_AddNumberToObject(c, "vocab_size", (double)s->vocab_size);
	if (!strcmp(s->arch, "qwen3_moe")) {
		/* Qwen3MoeConfig's expert fields (every layer sparse) */
		ok = ok && cJSON_AddNumberToObject(c, "decoder_sparse_step", 1);
		ok = ok && cJSON_AddArrayToObject(c, "mlp_only_layers");
		ok = ok && cJSON_AddNumberToObject(c, "moe_intermediate_size",
						   (double)s->moe_intermediate_size);
		ok = ok && cJSON_AddBoolToObject(c, "norm_topk_prob", true);
		ok = ok && cJSON_AddNumberToObject(c, "num_experts", (double)s->num_experts);
		ok = ok && cJSON_AddNumberToObject(c, "num_experts_per_tok", (double)s->num_experts_per_tok);
	}
	if (!strcmp(s->arch, "llama")) {
		ok = ok && cJSON_AddBoolToObject(c, "mlp_bias", false);
		ok = ok && cJSON_AddNumberToObject(c, "pretraining_tp", 1);
	} else {
		ok = ok && cJSON_AddNumberToObject(c, "max_window_layers",
						   (double)s->num_hidden_layers);
		ok = ok && cJSON_AddNullToObject(c, "sliding_window");
		ok = ok && cJSON_AddBoolToObject(c, "use_sliding_window", false);
	}
	/* Provenance: transformers keeps unknown config keys as attributes. */
	cJSON *prov = cJSON_AddObjectToObject(c, "ctq_synthetic");
	ok = ok && prov && cJSON_AddStringToObject(prov, "preset", s->preset);
	if (s->seed <= (1ULL << 53))
		ok = ok && cJSON_AddNumberToObject(prov, "seed", (double)s->seed);
	else {
		char buf[32];
		snprintf(buf, sizeof buf, "%" PRIu64, s->seed);
		ok = ok && cJSON_AddStringToObject(prov, "seed", buf);
	}
	ok = ok && cJSON_AddBoolToObject(prov, "outliers", s->outliers);
	if (s->logit_gain > 0 && s->logit_gain != 1)
		ok = ok && cJSON_AddNumberToObject(prov, "logit_gain", s->logit_gain);
	if (ok && s->outliers) {
		long ch[CTQ_SYNTH_N_OUTLIERS];
		ctq_synth_outlier_channels(s, ch);
		cJSON *a = cJSON_AddArrayToObject(prov, "outlier_channels");
		ok = a != NULL;
		for (int i = 0; ok && i < CTQ_SYNTH_N_OUTLIERS; i++)
			ok = cJSON_AddItemToArray(a, cJSON_CreateNumber((double)ch[i]));
		ok = ok && cJSON_AddNumberToObject(prov, "outlier_gain", CTQ_SYNTH_OUTLIER_GAIN);
	}
	ok = ok && cJSON_AddNumberToObject(g, "bos_token_id", (double)s->bos_token_id);
	ok = ok && cJSON_AddBoolToObject(g, "do_sample", false);
	ok = ok && cJSON_AddNumberToObject(g, "eos_token_id", (double)s->eos_token_id);
	if (!ok) {
		cJSON_Delete(c);
		cJSON_Delete(g);
		return ctq_error_set(err, CTQ_ERR_NOMEM, "config.json", "out of memory");
	}
	*config = c;
	*generation = g;
	return CTQ_OK;
}

enum ctq_status ctq_json_save_hf(const char *path, const cJSON *v, struct ctq_error *err)
{
	struct ctq_strbuf sb;
	ctq_strbuf_init(&sb);
	enum ctq_status st = ctq_json_write_python(v, 2, true, &sb);
	ctq_strbuf_append(&sb, "\n");
	if (st == CTQ_OK && sb.oom)
		st = CTQ_ERR_NOMEM;
	if (st == CTQ_ERR_NOMEM)
		st = ctq_error_set(err, st, path, "out of memory");
	else if (st)
		st = ctq_error_set(err, st, path,
				   "holds a value JSON cannot carry (a string that is not UTF-8)");
	else
		st = ctq_file_write_atomic(path, sb.data, sb.len, err);
	ctq_strbuf_free(&sb);
	return st;
}

/* ---- streaming sharded writer ---------------------------------------------- */

static uint64_t stream_tensor_bytes(const void *tensors, size_t i)
{
	return ((const struct ctq_stream_tensor *)tensors)[i].n_bytes;
}

enum ctq_status ctq_stream_write(const char *dir, const char *stem, const struct ctq_stream_tensor *t,
				 size_t n, uint64_t max_shard_bytes,
				 ctq_stream_produce_fn produce, void *produce_ctx,
				 ctq_progress_fn progress, void *progress_ctx,
				 struct ctq_error *err)
{
	if (!stem)
		stem = CTQ_ST_STEM;
	enum ctq_status st = CTQ_OK;
	size_t *shard_of = ctq_malloc((n ? n : 1) * sizeof *shard_of); /* (n) */
	size_t *pending = ctq_malloc((n ? n : 1) * sizeof *pending);   /* (n) */
	void **bufs = ctq_malloc((n ? n : 1) * sizeof *bufs);          /* (n) produced data */
	char *path = NULL;
	cJSON *index = NULL;
	size_t n_shards = 0;
	struct ctq_st_writer w;
	ctq_st_writer_init(&w);
	if (!shard_of || !pending || !bufs) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
		goto done;
	}
	memset(bufs, 0, (n ? n : 1) * sizeof *bufs);
	if ((st = ctq_mkdirs(dir, err)))
		goto done;

	uint64_t total = 0, done_bytes = 0;
	n_shards = ctq_st_split_shards(t, n, stream_tensor_bytes, max_shard_bytes,
				       shard_of, pending, &total);
	bool sharded = n_shards > 1;
	if (sharded && !(index = cJSON_CreateObject())) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
		goto done;
	}
	cJSON *wmap = NULL;
	if (sharded) {
		cJSON *meta = cJSON_AddObjectToObject(index, "metadata");
		wmap = cJSON_AddObjectToObject(index, "weight_map");
		if (!meta || !wmap || !cJSON_AddNumberToObject(meta, "total_size", (double)total)) {
			st = ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
			goto done;
		}
	}

	for (size_t s = 0; s < (n_shards ? n_shards : 1); s++) {
		char name[96];
		if (sharded)
			snprintf(name, sizeof name, "%s-%05zu-of-%05zu.safetensors", stem, s + 1, n_shards);
		else
			snprintf(name, sizeof name, "%s.safetensors", stem);
		ctq_st_writer_free(&w);
		ctq_st_writer_init(&w);
		if ((st = ctq_st_writer_set_metadata(&w, "format", "pt", err)))
			goto done;
		for (size_t i = 0; i < n; i++) {
			if (shard_of[i] != s)
				continue;
			const void *data = t[i].borrowed;
			if (!data && t[i].n_bytes) {
				if (!(bufs[i] = ctq_malloc(t[i].n_bytes))) {
					st = ctq_error_set(err, CTQ_ERR_NOMEM, t[i].name,
							   "out of memory for %" PRIu64 " bytes",
							   t[i].n_bytes);
					goto done;
				}
				if ((st = produce(produce_ctx, i, &t[i], bufs[i], err)))
					goto done;
				data = bufs[i];
			}
			if ((st = ctq_st_writer_add(&w, t[i].name, t[i].dtype, t[i].ndim,
						    t[i].shape, data, t[i].n_bytes, err)))
				goto done;
			if (wmap && !cJSON_AddItemToObject(wmap, t[i].name, cJSON_CreateString(name))) {
				st = ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
				goto done;
			}
			done_bytes += t[i].n_bytes;
			if (progress)
				progress(progress_ctx, t[i].name, done_bytes, total);
		}
		free(path);
		if (!(path = ctq_path_join(dir, name))) {
			st = ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
			goto done;
		}
		if ((st = ctq_st_writer_write(&w, path, err)))
			goto done;
		if (progress)
			progress(progress_ctx, name, done_bytes, total);
		for (size_t i = 0; i < n; i++)
			if (shard_of[i] == s) {
				free(bufs[i]);
				bufs[i] = NULL;
			}
	}
	if (sharded) {
		free(path);
		char ix[96];
		snprintf(ix, sizeof ix, "%s.safetensors.index.json", stem);
		if (!(path = ctq_path_join(dir, ix))) {
			st = ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
			goto done;
		}
		st = ctq_json_save_hf(path, index, err);
	}
done:
	if (bufs)
		for (size_t i = 0; i < n; i++)
			free(bufs[i]);
	ctq_st_writer_free(&w);
	cJSON_Delete(index);
	free(path);
	free(bufs);
	free(pending);
	free(shard_of);
	return st;
}

/* ---- the model's tensors --------------------------------------------------- */

enum init_kind {
	INIT_NORMAL,   /* N(0, std) */
	INIT_NORM,     /* 1 + N(0, std) */
	INIT_NORM_OUT, /* 1 + N(0, std), outlier channels x gain */
	INIT_NORM_LOGIT, /* (1 + N(0, std)) x spec's logit_gain: the final norm */
};

struct synth_ctx {
	const struct ctq_synth_spec *spec;
	enum init_kind *kind;       /* (n) per tensor */
	long outliers[CTQ_SYNTH_N_OUTLIERS];
};

/* Fills one BF16 tensor of shape (rows, cols) row by row in parallel. A
 * 1-D tensor is one row. */
static enum ctq_status produce_synth(void *vctx, size_t i, const struct ctq_stream_tensor *t,
				     void *dst, struct ctq_error *err)
{
	(void)err;
	const struct synth_ctx *ctx = vctx;
	const struct ctq_synth_spec *s = ctx->spec;
	enum init_kind kind = ctx->kind[i];
	int64_t rows = t->ndim == 2 ? t->shape[0] : 1;
	int64_t cols = t->ndim == 2 ? t->shape[1] : t->shape[0];
	uint16_t *out = dst; /* (rows, cols) bf16 */
	uint64_t h = fnv1a(t->name);
	const double std = CTQ_SYNTH_INIT_STD;
	const double mean = kind == INIT_NORMAL ? 0.0 : 1.0;
	const double gain = kind == INIT_NORM_LOGIT && s->logit_gain > 0 ? s->logit_gain : 1.0;
#pragma omp parallel for schedule(static)
	for (int64_t r = 0; r < rows; r++) {
		struct ctq_rng rng;
		rng_for_row(&rng, s->seed, h, (uint64_t)r);
		uint16_t *row = out + r * cols;
		for (int64_t k = 0; k < cols; k += 2) {
			double z0, z1;
			normal_pair(&rng, &z0, &z1);
			row[k] = ctq_f32_to_bf16((float)((mean + std * z0) * gain));
			if (k + 1 < cols)
				row[k + 1] = ctq_f32_to_bf16((float)((mean + std * z1) * gain));
		}
		if (kind == INIT_NORM_OUT)
			for (int c = 0; c < CTQ_SYNTH_N_OUTLIERS; c++) {
				long ch = ctx->outliers[c];
				float v = ctq_bf16_to_f32(row[ch]);
				row[ch] = ctq_f32_to_bf16((float)(v * CTQ_SYNTH_OUTLIER_GAIN));
			}
	}
	return CTQ_OK;
}

/* The tensors a writer streams, in order, each with how it is drawn; ok
 * turns false (and stays) on exhaustion or more than cap tensors. */
struct tensor_list {
	struct ctq_arena *arena;
	struct ctq_stream_tensor *t; /* (cap) */
	enum init_kind *kind;        /* (cap) */
	size_t n, cap;
	bool ok;
};

static void list_open(struct tensor_list *l, struct ctq_arena *arena, size_t cap)
{
	l->arena = arena;
	l->t = ctq_arena_calloc(arena, cap, sizeof *l->t);
	l->kind = ctq_arena_calloc(arena, cap, sizeof *l->kind);
	l->n = 0;
	l->cap = cap;
	l->ok = l->t && l->kind;
}

/* One BF16 tensor named by fmt: (rows, cols), or 1-D of cols elements
 * when rows is 0. */
__attribute__((format(printf, 5, 6))) static void list_add(struct tensor_list *l, enum init_kind k,
							    long rows, long cols, const char *fmt, ...)
{
	if (!l->ok || l->n >= l->cap) {
		l->ok = false;
		return;
	}
	va_list ap;
	va_start(ap, fmt);
	char *name = ctq_arena_vprintf(l->arena, fmt, ap);
	va_end(ap);
	struct ctq_stream_tensor *e = &l->t[l->n];
	e->name = name;
	e->dtype = CTQ_DTYPE_BF16;
	e->ndim = rows ? 2 : 1;
	e->shape[0] = rows ? (int64_t)rows : (int64_t)cols;
	e->shape[1] = rows ? (int64_t)cols : 0;
	e->n_bytes = 2 * (uint64_t)(rows ? rows : 1) * (uint64_t)cols;
	l->kind[l->n++] = k;
	l->ok = name != NULL;
}

/* The listed tensors drawn (produce_synth) and streamed into dir's shards
 * named by stem (max_shard_bytes, 0: CTQ_HF_MAX_SHARD_BYTES); out of memory
 * when the list ran out. */
static enum ctq_status list_write(const struct tensor_list *l, const struct ctq_synth_spec *s,
				  const char *dir, const char *stem, uint64_t max_shard_bytes,
				  ctq_progress_fn progress, void *pctx, struct ctq_error *err)
{
	if (!l->ok)
		return ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
	struct synth_ctx ctx = {.spec = s, .kind = l->kind};
	ctq_synth_outlier_channels(s, ctx.outliers);
	return ctq_stream_write(dir, stem, l->t, l->n, max_shard_bytes ? max_shard_bytes : CTQ_HF_MAX_SHARD_BYTES,
				produce_synth, &ctx, progress, pctx, err);
}

/* The tensors of a tree-only model (qwen3_moe, qwen_image_dit), in the
 * order of the module tree ctq_modules_from_config gives config: each
 * module's X.weight with its (out, in) (the router's too), a bias for
 * every DiT Linear (diffusers builds them with bias=True), and the norms
 * (decoder: input / post_attention layernorm, q_norm / k_norm, model.norm;
 * DiT: txt_norm and the attention's norm_q / norm_k / norm_added_q /
 * norm_added_k), written as ctq_synth_write writes a dense model. */
static enum ctq_status write_tree(const struct ctq_synth_spec *s, const cJSON *config, const char *dir,
				  uint64_t max_shard_bytes, ctq_progress_fn progress, void *pctx,
				  struct ctq_error *err)
{
	struct ctq_modules mods;
	struct ctq_arena arena;
	ctq_modules_init(&mods);
	ctq_arena_init(&arena);
	enum ctq_status st = ctq_modules_from_config(&mods, config, "", NULL, err);
	if (st)
		goto done;
	const bool dit = !strcmp(s->arch, "qwen_image_dit");
	const long H = s->hidden_size, d = s->head_dim;
	struct tensor_list tl;
	list_open(&tl, &arena, 3 * mods.n + 4 * (size_t)s->num_hidden_layers + 8);
#define ADD(...) list_add(&tl, __VA_ARGS__)
	if (dit)
		ADD(INIT_NORM, 0, s->joint_attention_dim, "txt_norm.weight");
	long layer = -1;
	for (size_t i = 0; i < mods.n; i++) {
		const struct ctq_module *m = &mods.v[i];
		if (!strcmp(m->name, "lm_head") && s->tie_word_embeddings)
			continue;
		long l = -1;
		const char *p = strstr(m->name, "layers.");
		if (!dit && p)
			l = strtol(p + strlen("layers."), NULL, 10);
		if (l != layer && layer >= 0) {
			ADD(INIT_NORM, 0, H, "model.layers.%ld.input_layernorm.weight", layer);
			ADD(INIT_NORM, 0, H, "model.layers.%ld.post_attention_layernorm.weight", layer);
		}
		layer = l;
		if (m->out_features <= 0 || m->in_features <= 0)
			continue;
		ADD(INIT_NORMAL, m->out_features, m->in_features, "%s.weight", m->name);
		if (dit)
			ADD(INIT_NORMAL, 0, m->out_features, "%s.bias", m->name);
		if (m->kind == CTQ_MODULE_EMBEDDING)
			continue;
		const size_t len = strlen(m->name);
		if (!dit && s->qk_norm && len > 7 && !strcmp(m->name + len - 7, ".q_proj")) {
			ADD(INIT_NORM, 0, d, "%.*sq_norm.weight", (int)(len - 6), m->name);
			ADD(INIT_NORM, 0, d, "%.*sk_norm.weight", (int)(len - 6), m->name);
		}
		if (dit && len > 5 && !strcmp(m->name + len - 5, ".to_q")) {
			static const char *const qk[] = {"norm_q", "norm_k", "norm_added_q", "norm_added_k"};
			for (int k = 0; k < 4; k++)
				ADD(INIT_NORM, 0, d, "%.*s%s.weight", (int)(len - 4), m->name, qk[k]);
		}
	}
	if (layer >= 0) { /* the last layer's, when a tied lm_head (skipped above) ends the list */
		ADD(INIT_NORM, 0, H, "model.layers.%ld.input_layernorm.weight", layer);
		ADD(INIT_NORM, 0, H, "model.layers.%ld.post_attention_layernorm.weight", layer);
	}
	if (!dit)
		ADD(INIT_NORM_LOGIT, 0, H, "model.norm.weight");
#undef ADD
	st = list_write(&tl, s, dir, dit ? CTQ_ST_DIFFUSERS_STEM : CTQ_ST_STEM, max_shard_bytes, progress,
			pctx, err);
done:
	ctq_modules_free(&mods);
	ctq_arena_free(&arena);
	return st;
}

enum ctq_status ctq_synth_write(const struct ctq_synth_spec *s, const char *dir,
				uint64_t max_shard_bytes, ctq_progress_fn progress,
				void *pctx, struct ctq_error *err)
{
	cJSON *config = NULL, *gen = NULL;
	char *path = NULL;
	struct ctq_arena arena;
	ctq_arena_init(&arena);
	enum ctq_status st = ctq_synth_config(s, &config, &gen, err);
	if (st)
		goto done;
	if ((st = ctq_mkdirs(dir, err)))
		goto done;
	if (!(path = ctq_path_join(dir, "config.json"))) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
		goto done;
	}
	if ((st = ctq_json_save_hf(path, config, err)))
		goto done;
	free(path);
	path = NULL;
	if (gen && !(path = ctq_path_join(dir, "generation_config.json"))) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
		goto done;
	}
	if (gen && (st = ctq_json_save_hf(path, gen, err)))
		goto done;
	if (is_tree_only(s)) {
		st = write_tree(s, config, dir, max_shard_bytes, progress, pctx, err);
		goto done;
	}

	const long H = s->hidden_size, V = s->vocab_size;
	const long d = s->head_dim;
	const long L = s->num_hidden_layers;
	const struct ctq_model_shape shape = {
		.hidden_size = H,
		.intermediate_size = s->intermediate_size,
		.num_attention_heads = s->num_attention_heads,
		.num_key_value_heads = s->num_key_value_heads,
		.head_dim = d,
	};
	struct tensor_list tl;
	list_open(&tl, &arena, 3 + (size_t)L * 16);
#define ADD(...) list_add(&tl, __VA_ARGS__)
	/* state-dict order of transformers' *ForCausalLM: rows 0 marks a 1-D
	 * tensor of `c` elements. */
	ADD(INIT_NORMAL, V, H, "model.embed_tokens.weight");
	enum init_kind ln = s->outliers ? INIT_NORM_OUT : INIT_NORM;
	for (long l = 0; l < L; l++) {
		for (int i = 0; i < CTQ_HF_LINEARS; i++) {
			const struct ctq_hf_linear_info *li = &ctq_hf_linears[i];
			if (i == CTQ_HF_GATE && s->qk_norm) {
				ADD(INIT_NORM, 0, d, "model.layers.%ld.self_attn.q_norm.weight", l);
				ADD(INIT_NORM, 0, d, "model.layers.%ld.self_attn.k_norm.weight", l);
			}
			long rows, cols;
			ctq_hf_linear_features(&shape, (enum ctq_hf_linear)i, &rows, &cols);
			ADD(INIT_NORMAL, rows, cols, "model.layers.%ld.%s.%s.weight", l, li->parent,
			    li->leaf);
			if (s->attention_bias && i <= CTQ_HF_V)
				ADD(INIT_NORMAL, 0, rows, "model.layers.%ld.%s.%s.bias", l, li->parent,
				    li->leaf);
		}
		ADD(ln, 0, H, "model.layers.%ld.input_layernorm.weight", l);
		ADD(ln, 0, H, "model.layers.%ld.post_attention_layernorm.weight", l);
	}
	ADD(INIT_NORM_LOGIT, 0, H, "model.norm.weight");
	if (!s->tie_word_embeddings)
		ADD(INIT_NORMAL, V, H, "lm_head.weight");
#undef ADD
	st = list_write(&tl, s, dir, CTQ_ST_STEM, max_shard_bytes, progress, pctx, err);
done:
	free(path);
	cJSON_Delete(config);
	cJSON_Delete(gen);
	ctq_arena_free(&arena);
	return st;
}
