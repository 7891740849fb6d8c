/* ctq GGUF llama -> Hugging Face import (see gguf.h): the tensor map and
 * plan, config.json and generation_config.json, and writing the folder.
 * The tokenizer half is gguf_tokenizer.c; the reader is gguf.c. */
#include "checkpoint/gguf.h"
#include "checkpoint/gguf_internal.h"
#include "core/utf8.h"

#include "core/dtype.h"
#include "core/fileio.h"
#include "core/json_write.h"
#include "core/strbuf.h"
#include "checkpoint/safetensors.h"
#include "quant/modules.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- import: the llama tensor map ------------------------------------------ */

/* What a tensor is, for its expected shape and the rotary un-permutation. */
enum role {
	R_EMBED, R_NORM, R_Q, R_K, R_V, R_O, R_GATE, R_UP, R_DOWN, R_LM_HEAD,
};

/* Per-layer tensors: GGUF suffix after "blk.N.", role, bias, and for the
 * norms the HF suffix after "model.layers.N." (a projection's HF name comes
 * from quant/'s table of the seven linears, see hf_layer_name). */
static const struct layer_map {
	const char *gguf;
	enum role role;
	bool bias;
	const char *hf_norm;
} layer_map[] = {
	{"attn_norm.weight", R_NORM, false, "input_layernorm.weight"},
	{"attn_q.weight", R_Q, false, NULL},
	{"attn_k.weight", R_K, false, NULL},
	{"attn_v.weight", R_V, false, NULL},
	{"attn_output.weight", R_O, false, NULL},
	{"ffn_norm.weight", R_NORM, false, "post_attention_layernorm.weight"},
	{"ffn_gate.weight", R_GATE, false, NULL},
	{"ffn_up.weight", R_UP, false, NULL},
	{"ffn_down.weight", R_DOWN, false, NULL},
	{"attn_q.bias", R_Q, true, NULL},
	{"attn_k.bias", R_K, true, NULL},
	{"attn_v.bias", R_V, true, NULL},
	{"attn_output.bias", R_O, true, NULL},
	{"ffn_gate.bias", R_GATE, true, NULL},
	{"ffn_up.bias", R_UP, true, NULL},
	{"ffn_down.bias", R_DOWN, true, NULL},
};
#define N_LAYER_MAP (sizeof layer_map / sizeof *layer_map)
#define N_LAYER_WEIGHTS 9 /* the first nine entries: required in every layer */

/* The shortest decimal that reads back as the same float32, as a double:
 * FLOAT32 metadata (9.999999747378752e-06) becomes what the producer wrote
 * in its config.json (1e-05). Other doubles come back unchanged. */
static double f32_shortest(double v)
{
	float x = (float)v;
	if ((double)x != v || !isfinite(v))
		return v;
	char buf[32];
	for (int p = 1; p <= 9; p++) {
		snprintf(buf, sizeof buf, "%.*g", p, (double)x);
		if (strtof(buf, NULL) == x)
			return strtod(buf, NULL);
	}
	return v;
}

static enum ctq_status read_rope_scaling(struct import *im)
{
	char sb[128];
	struct ctq_gguf_file *f = &im->f;
	struct ctq_error *err = im->err;
	const struct ctq_gguf_value *type;
	double factor = 1.0, linear = 1.0;
	bool has_factor = false, has_linear = false, has_orig = false;
	uint64_t orig = 0;
	enum ctq_status st;
	if ((st = ctq_gguf_get_string(f, "llama.rope.scaling.type", false, &type, err)) ||
	    (st = ctq_gguf_get_float(f, "llama.rope.scaling.factor", false, &factor,
				     &has_factor, err)) ||
	    (st = ctq_gguf_get_float(f, "llama.rope.scale_linear", false, &linear,
				     &has_linear, err)) ||
	    (st = ctq_gguf_get_uint(f, "llama.rope.scaling.original_context_length", false,
				    UINT32_MAX, &orig, &has_orig, err)))
		return st;
	const char *kind = type ? type->v.str.s : (has_linear && linear != 1.0 ? "linear" : "none");
	if (!type && has_linear) {
		factor = linear;
		has_factor = true;
	}
	if (!strcmp(kind, "none"))
		return CTQ_OK;
	uint64_t at = type ? type->file_offset : 0;
	if (strcmp(kind, "linear") && strcmp(kind, "yarn"))
		return IM_UNSUP(im, at, "llama.rope.scaling.type is \"%s\"; ctq converts none, linear and yarn",
				ctq_gguf_shown(kind, strlen(kind), sb, sizeof sb));
	if (!has_factor || !(factor > 0) || !isfinite(factor))
		return IM_FAIL(im, at, "rope scaling \"%s\" needs a positive llama.rope.scaling.factor",
			       kind);
	if (!strcmp(kind, "yarn") && !has_orig)
		return IM_FAIL(im, at, "rope scaling yarn needs llama.rope.scaling.original_context_length");
	cJSON *o = cJSON_CreateObject();
	if (!o || !cJSON_AddNumberToObject(o, "factor", f32_shortest(factor)) ||
	    (has_orig && !strcmp(kind, "yarn") &&
	     !cJSON_AddNumberToObject(o, "original_max_position_embeddings", (double)orig)) ||
	    !cJSON_AddStringToObject(o, "rope_type", kind)) {
		cJSON_Delete(o);
		return nomem(im);
	}
	im->hp.rope_scaling = o;
	return CTQ_OK;
}

static enum ctq_status read_hparams(struct import *im)
{
	char sb[128];
	struct ctq_gguf_file *f = &im->f;
	struct ctq_error *err = im->err;
	struct hparams *hp = &im->hp;
	const struct ctq_gguf_value *arch;
	enum ctq_status st = ctq_gguf_get_string(f, "general.architecture", true, &arch, err);
	if (st)
		return st;
	if (strcmp(arch->v.str.s, "llama"))
		return IM_UNSUP(im, arch->file_offset,
				"general.architecture is \"%s\"; ctq imports llama only",
				ctq_gguf_shown(arch->v.str.s, (size_t)arch->v.str.len, sb, sizeof sb));
	uint64_t key_len = 0, val_len = 0, rope_dim = 0;
	bool has_kv, has_key_len, has_val_len, has_rope_dim, has_theta;
	const uint64_t dim_max = (uint64_t)1 << 20;
	if ((st = ctq_gguf_get_uint(f, "llama.block_count", true, 1 << 16, &hp->n_layers, NULL, err)) ||
	    (st = ctq_gguf_get_uint(f, "llama.context_length", true, (uint64_t)1 << 31, &hp->context, NULL, err)) ||
	    (st = ctq_gguf_get_uint(f, "llama.embedding_length", true, dim_max, &hp->hidden, NULL, err)) ||
	    (st = ctq_gguf_get_uint(f, "llama.feed_forward_length", true, dim_max, &hp->inter, NULL, err)) ||
	    (st = ctq_gguf_get_uint(f, "llama.attention.head_count", true, 1 << 16, &hp->n_head, NULL, err)) ||
	    (st = ctq_gguf_get_uint(f, "llama.attention.head_count_kv", false, 1 << 16, &hp->n_kv, &has_kv, err)) ||
	    (st = ctq_gguf_get_uint(f, "llama.attention.key_length", false, dim_max, &key_len, &has_key_len, err)) ||
	    (st = ctq_gguf_get_uint(f, "llama.attention.value_length", false, dim_max, &val_len, &has_val_len, err)) ||
	    (st = ctq_gguf_get_uint(f, "llama.rope.dimension_count", false, dim_max, &rope_dim, &has_rope_dim, err)) ||
	    (st = ctq_gguf_get_float(f, "llama.rope.freq_base", false, &hp->rope_theta, &has_theta, err)) ||
	    (st = ctq_gguf_get_float(f, "llama.attention.layer_norm_rms_epsilon", true, &hp->eps, NULL, err)))
		return st;
	if (!has_theta)
		hp->rope_theta = 10000.0; /* llama.cpp's default for llama */
	if (!has_kv)
		hp->n_kv = hp->n_head;
	const struct ctq_gguf_kv *kv;
	if (!hp->n_layers || !hp->hidden || !hp->inter || !hp->n_head || !hp->n_kv ||
	    !hp->context) {
		kv = ctq_gguf_find_kv(f, !hp->n_layers ? "llama.block_count"
					 : !hp->hidden ? "llama.embedding_length"
					 : !hp->inter ? "llama.feed_forward_length"
					 : !hp->n_head ? "llama.attention.head_count"
					 : !hp->n_kv ? "llama.attention.head_count_kv"
						     : "llama.context_length");
		return IM_FAIL(im, kv ? kv->file_offset : 0, "metadata \"%s\" is 0; expected a positive value",
			       kv ? kv->key : "?");
	}
	if (hp->n_head % hp->n_kv) {
		kv = ctq_gguf_find_kv(f, "llama.attention.head_count_kv");
		return IM_FAIL(im, kv ? kv->file_offset : 0,
			       "llama.attention.head_count %" PRIu64 " is not a multiple of head_count_kv %" PRIu64,
			       hp->n_head, hp->n_kv);
	}
	if (has_key_len) {
		hp->head_dim = key_len;
	} else if (hp->hidden % hp->n_head) {
		kv = ctq_gguf_find_kv(f, "llama.attention.head_count");
		return IM_FAIL(im, kv->file_offset,
			       "llama.embedding_length %" PRIu64 " is not a multiple of head_count %" PRIu64
			       " and llama.attention.key_length is absent", hp->hidden, hp->n_head);
	} else {
		hp->head_dim = hp->hidden / hp->n_head;
	}
	if (!hp->head_dim || hp->head_dim % 2) {
		kv = ctq_gguf_find_kv(f, has_key_len ? "llama.attention.key_length" : "llama.attention.head_count");
		return IM_FAIL(im, kv->file_offset, "head_dim is %" PRIu64 "; expected a positive even number",
			       hp->head_dim);
	}
	if (has_val_len && val_len != hp->head_dim) {
		kv = ctq_gguf_find_kv(f, "llama.attention.value_length");
		return IM_UNSUP(im, kv->file_offset,
				"llama.attention.value_length %" PRIu64 " differs from the key length %" PRIu64
				"; transformers' llama has one head_dim", val_len, hp->head_dim);
	}
	if (has_rope_dim && rope_dim != hp->head_dim) {
		kv = ctq_gguf_find_kv(f, "llama.rope.dimension_count");
		return IM_UNSUP(im, kv->file_offset,
				"llama.rope.dimension_count %" PRIu64 " differs from head_dim %" PRIu64
				" (partial rotary); ctq converts full-rotary llama only", rope_dim, hp->head_dim);
	}
	if (!(hp->eps > 0) || !isfinite(hp->eps)) {
		kv = ctq_gguf_find_kv(f, "llama.attention.layer_norm_rms_epsilon");
		return IM_FAIL(im, kv->file_offset, "layer_norm_rms_epsilon is %g; expected a positive number",
			       hp->eps);
	}
	if (!(hp->rope_theta > 0) || !isfinite(hp->rope_theta)) {
		kv = ctq_gguf_find_kv(f, "llama.rope.freq_base");
		return IM_FAIL(im, kv->file_offset, "rope.freq_base is %g; expected a positive number",
			       hp->rope_theta);
	}
	hp->eps = f32_shortest(hp->eps);
	hp->rope_theta = f32_shortest(hp->rope_theta);
	return read_rope_scaling(im);
}

/* Parses "blk.N.rest": N (no sign, no leading zeros) and rest. */
static bool parse_block(const char *name, uint64_t *n, const char **rest)
{
	if (strncmp(name, "blk.", 4))
		return false;
	const char *p = name + 4;
	if (*p < '0' || *p > '9' || (*p == '0' && p[1] != '.'))
		return false;
	uint64_t v = 0;
	while (*p >= '0' && *p <= '9') {
		if (v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(*p++ - '0');
	}
	if (*p != '.')
		return false;
	*n = v;
	*rest = p + 1;
	return true;
}

/* Expected HF shape of a tensor of role r (rows, cols; cols 0 for 1-D). */
static void expected_shape(const struct hparams *hp, enum role r, bool bias,
			   int64_t *rows, int64_t *cols)
{
	int64_t h = (int64_t)hp->hidden, q = (int64_t)(hp->n_head * hp->head_dim);
	int64_t kvd = (int64_t)(hp->n_kv * hp->head_dim), ff = (int64_t)hp->inter;
	int64_t v = (int64_t)hp->vocab;
	switch (r) {
	case R_EMBED:
	case R_LM_HEAD: *rows = v; *cols = h; break;
	case R_NORM: *rows = h; *cols = 0; break;
	case R_Q: *rows = q; *cols = h; break;
	case R_K:
	case R_V: *rows = kvd; *cols = h; break;
	case R_O: *rows = h; *cols = q; break;
	case R_GATE:
	case R_UP: *rows = ff; *cols = h; break;
	case R_DOWN: *rows = h; *cols = ff; break;
	}
	if (bias)
		*cols = 0;
}

static enum ctq_status add_item(struct import *im, const struct ctq_gguf_tensor *t,
				const char *hf_name, enum role r, bool bias)
{
	int64_t rows = 0, cols = 0;
	expected_shape(&im->hp, r, bias, &rows, &cols);
	int want_dims = cols ? 2 : 1;
	bool ok = t->n_dims == want_dims &&
		  (cols ? t->ne[0] == cols && t->ne[1] == rows : t->ne[0] == rows);
	if (!ok) {
		char got[96];
		int n = snprintf(got, sizeof got, "[");
		for (int d = 0; d < t->n_dims && n > 0 && (size_t)n < sizeof got; d++)
			n += snprintf(got + n, sizeof got - (size_t)n, "%s%" PRId64, d ? ", " : "",
				      t->ne[d]);
		if (n > 0 && (size_t)n < sizeof got)
			snprintf(got + n, sizeof got - (size_t)n, "]");
		if (cols)
			return IM_FAIL(im, t->info_offset,
				       "tensor \"%s\" has GGUF dims %s; expected [%" PRId64 ", %" PRId64
				       "] (HF %s [%" PRId64 ", %" PRId64 "]) from the llama.* metadata",
				       t->name, got, cols, rows, hf_name, rows, cols);
		return IM_FAIL(im, t->info_offset,
			       "tensor \"%s\" has GGUF dims %s; expected [%" PRId64 "] from the llama.* metadata",
			       t->name, got, rows);
	}
	if (!ctq_ggml_type_dequantizable(t->type))
		return IM_UNSUP(im, t->info_offset,
				"tensor \"%s\" has type %s, which ctq does not dequantize "
				"(supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1)",
				t->name, ctq_ggml_type_name(t->type));
	struct plan_item *it = &im->items[im->n_items++];
	it->t = t;
	it->hf_name = hf_name;
	it->ndim = want_dims;
	it->shape[0] = rows;
	it->shape[1] = cols;
	if (r == R_Q)
		it->permute_heads = (int64_t)im->hp.n_head;
	else if (r == R_K)
		it->permute_heads = (int64_t)im->hp.n_kv;
	return CTQ_OK;
}

/* Maps every GGUF tensor to its HF name and checks shapes, types, and that
 * the model is complete. */
/* The HF name of layer tensor m in layer `layer`, in im's arena. */
static const char *hf_layer_name(struct import *im, uint64_t layer, const struct layer_map *m)
{
	if (m->hf_norm)
		return ctq_arena_printf(&im->arena, "model.layers.%" PRIu64 ".%s", layer, m->hf_norm);
	/* R_Q .. R_DOWN are in the table's order. */
	const struct ctq_hf_linear_info *li = &ctq_hf_linears[CTQ_HF_Q + (m->role - R_Q)];
	return ctq_arena_printf(&im->arena, "model.layers.%" PRIu64 ".%s.%s.%s", layer, li->parent,
				li->leaf, m->bias ? "bias" : "weight");
}

static enum ctq_status plan_tensors(struct import *im)
{
	struct ctq_gguf_file *f = &im->f;
	struct hparams *hp = &im->hp;
	const struct ctq_gguf_tensor *embd = ctq_gguf_find_tensor(f, "token_embd.weight");
	if (!embd)
		return IM_FAIL(im, 0, "tensor \"token_embd.weight\" is missing");
	if (embd->n_dims != 2 || embd->ne[0] != (int64_t)hp->hidden)
		return IM_FAIL(im, embd->info_offset,
			       "tensor \"token_embd.weight\" has %d dim(s), ne[0] = %" PRId64
			       "; expected [%" PRIu64 ", vocab]", embd->n_dims, embd->ne[0], hp->hidden);
	hp->vocab = (uint64_t)embd->ne[1];
	hp->tied = ctq_gguf_find_tensor(f, "output.weight") == NULL;
	im->items = ctq_arena_calloc(&im->arena, f->n_tensors ? f->n_tensors : 1,
				     sizeof *im->items);
	/* seen[layer * N_LAYER_MAP + k] */
	bool *seen = ctq_arena_calloc(&im->arena, (size_t)hp->n_layers * N_LAYER_MAP, 1);
	if (!im->items || !seen)
		return nomem(im);
	enum ctq_status st;
	for (size_t i = 0; i < f->n_tensors; i++) {
		const struct ctq_gguf_tensor *t = &f->tensors[i];
		uint64_t layer;
		const char *rest;
		if (!strcmp(t->name, "token_embd.weight")) {
			st = add_item(im, t, "model.embed_tokens.weight", R_EMBED, false);
		} else if (!strcmp(t->name, "output_norm.weight")) {
			st = add_item(im, t, "model.norm.weight", R_NORM, false);
		} else if (!strcmp(t->name, "output.weight")) {
			st = add_item(im, t, "lm_head.weight", R_LM_HEAD, false);
		} else if (!strcmp(t->name, "rope_freqs.weight")) {
			st = IM_UNSUP(im, t->info_offset,
				      "tensor \"rope_freqs.weight\" (llama3-style rope scaling factors) "
				      "cannot be expressed as a transformers rope_scaling; not converted");
		} else if (parse_block(t->name, &layer, &rest)) {
			size_t k = 0;
			while (k < N_LAYER_MAP && strcmp(rest, layer_map[k].gguf))
				k++;
			if (k == N_LAYER_MAP)
				return IM_FAIL(im, t->info_offset,
					       "tensor \"%s\" is not part of a llama layer (expected blk.N.{attn_norm,"
					       "attn_q,attn_k,attn_v,attn_output,ffn_norm,ffn_gate,ffn_up,ffn_down}.weight "
					       "or a projection .bias)", t->name);
			if (layer >= hp->n_layers)
				return IM_FAIL(im, t->info_offset,
					       "tensor \"%s\": layer %" PRIu64 " is past llama.block_count %" PRIu64,
					       t->name, layer, hp->n_layers);
			seen[layer * N_LAYER_MAP + k] = true;
			const char *hf = hf_layer_name(im, layer, &layer_map[k]);
			if (!hf)
				return nomem(im);
			st = add_item(im, t, hf, layer_map[k].role, layer_map[k].bias);
			if (!st && layer_map[k].bias) {
				if (layer_map[k].role == R_GATE || layer_map[k].role == R_UP ||
				    layer_map[k].role == R_DOWN)
					hp->mlp_bias = true;
				else
					hp->attn_bias = true;
			}
		} else {
			return IM_FAIL(im, t->info_offset,
				       "tensor \"%s\" is not part of a llama model (expected token_embd, "
				       "output_norm, output or blk.N.*)", t->name);
		}
		if (st)
			return st;
	}
	if (!ctq_gguf_find_tensor(f, "output_norm.weight"))
		return IM_FAIL(im, 0, "tensor \"output_norm.weight\" is missing");
	/* Every layer has the nine weights; biases are all there or all absent
	 * per family (transformers' attention_bias / mlp_bias cover all
	 * projections of every layer). */
	for (uint64_t l = 0; l < hp->n_layers; l++)
		for (size_t k = 0; k < N_LAYER_MAP; k++) {
			bool is_mlp = layer_map[k].role == R_GATE || layer_map[k].role == R_UP ||
				      layer_map[k].role == R_DOWN;
			bool need = k < N_LAYER_WEIGHTS ||
				    (layer_map[k].bias && (is_mlp ? hp->mlp_bias : hp->attn_bias));
			if (need && !seen[l * N_LAYER_MAP + k])
				return IM_FAIL(im, 0, "tensor \"blk.%" PRIu64 ".%s\" is missing%s", l,
					       layer_map[k].gguf,
					       layer_map[k].bias ? " (other layers have this bias)" : "");
		}
	return CTQ_OK;
}

/* ---- import: config.json ------------------------------------------------------- */

static enum ctq_status config_json(struct import *im, cJSON **config, cJSON **gen)
{
	const struct hparams *hp = &im->hp;
	cJSON *c = cJSON_CreateObject(), *g = cJSON_CreateObject(), *arch;
	*config = *gen = NULL;
	if (!c || !g || !(arch = cJSON_AddArrayToObject(c, "architectures")))
		goto oom;
	cJSON_AddItemToArray(arch, cJSON_CreateString("LlamaForCausalLM"));
	if (!cJSON_AddBoolToObject(c, "attention_bias", hp->attn_bias) ||
	    !cJSON_AddNumberToObject(c, "attention_dropout", 0.0) ||
	    !cJSON_AddNumberToObject(c, "head_dim", (double)hp->head_dim) ||
	    !cJSON_AddStringToObject(c, "hidden_act", "silu") ||
	    !cJSON_AddNumberToObject(c, "hidden_size", (double)hp->hidden) ||
	    !cJSON_AddNumberToObject(c, "intermediate_size", (double)hp->inter) ||
	    !cJSON_AddNumberToObject(c, "max_position_embeddings", (double)hp->context) ||
	    !cJSON_AddBoolToObject(c, "mlp_bias", hp->mlp_bias) ||
	    !cJSON_AddStringToObject(c, "model_type", "llama") ||
	    !cJSON_AddNumberToObject(c, "num_attention_heads", (double)hp->n_head) ||
	    !cJSON_AddNumberToObject(c, "num_hidden_layers", (double)hp->n_layers) ||
	    !cJSON_AddNumberToObject(c, "num_key_value_heads", (double)hp->n_kv) ||
	    !cJSON_AddNumberToObject(c, "pretraining_tp", 1) ||
	    !cJSON_AddNumberToObject(c, "rms_norm_eps", hp->eps) ||
	    !cJSON_AddNumberToObject(c, "rope_theta", hp->rope_theta) ||
	    !cJSON_AddBoolToObject(c, "tie_word_embeddings", hp->tied) ||
	    !cJSON_AddStringToObject(c, "torch_dtype", "bfloat16") ||
	    !cJSON_AddBoolToObject(c, "use_cache", true) ||
	    !cJSON_AddNumberToObject(c, "vocab_size", (double)hp->vocab))
		goto oom;
	if (hp->rope_scaling) {
		cJSON *rs = cJSON_Duplicate(hp->rope_scaling, true);
		if (!rs)
			goto oom;
		cJSON_AddItemToObject(c, "rope_scaling", rs);
	} else if (!cJSON_AddNullToObject(c, "rope_scaling")) {
		goto oom;
	}
	if (!cJSON_AddBoolToObject(g, "_from_model_config", true))
		goto oom;
	static const char *const id_keys[4] = {"bos_token_id", "eos_token_id", NULL, "pad_token_id"};
	for (int s = 0; s < 4; s++) {
		if (!id_keys[s] || !im->has_special[s])
			continue;
		if (!cJSON_AddNumberToObject(c, id_keys[s], (double)im->special[s]) ||
		    !cJSON_AddNumberToObject(g, id_keys[s], (double)im->special[s]))
			goto oom;
	}
	*config = c;
	*gen = g;
	return CTQ_OK;
oom:
	cJSON_Delete(c);
	cJSON_Delete(g);
	return nomem(im);
}

/* ---- import: writing ------------------------------------------------------------- */

static enum ctq_status write_json(const char *dir, const char *name, const cJSON *v,
				  bool sort_keys, struct ctq_error *err)
{
	struct ctq_strbuf sb;
	ctq_strbuf_init(&sb);
	enum ctq_status st = ctq_json_write_python(v, 2, sort_keys, &sb);
	char *path = ctq_path_join(dir, name);
	if (st == CTQ_ERR_PARSE)
		st = ctq_error_set(err, CTQ_ERR_CHECKPOINT, name,
				   "cannot be written as JSON (invalid text)");
	else if (st || !path)
		st = ctq_error_set(err, CTQ_ERR_NOMEM, name, "out of memory");
	else {
		ctq_strbuf_append(&sb, "\n");
		st = sb.oom ? ctq_error_set(err, CTQ_ERR_NOMEM, name, "out of memory")
			    : ctq_file_write_atomic(path, sb.data, sb.len, err);
	}
	free(path);
	ctq_strbuf_free(&sb);
	return st;
}

/* Dequantizes every planned tensor into one BF16 buffer (owned, returned in
 * *buf) and adds it to the writer. */
static enum ctq_status convert_tensors(struct import *im, struct ctq_st_writer *w,
				       uint16_t **buf, struct ctq_gguf_import_summary *sum)
{
	uint64_t total = 0, max_el = 0;
	for (size_t i = 0; i < im->n_items; i++) {
		total += im->items[i].t->n_elements;
		if (im->items[i].t->n_elements > max_el)
			max_el = im->items[i].t->n_elements;
	}
	/* Every element came from at least half a byte of the file. */
	if (total > SIZE_MAX / 2 || max_el > SIZE_MAX / sizeof(float))
		return nomem(im);
	*buf = ctq_malloc((size_t)total * 2);
	float *scratch = ctq_malloc((size_t)max_el * sizeof *scratch); /* (max_el) f32 */
	enum ctq_status st = CTQ_OK;
	if (!*buf || !scratch) {
		st = nomem(im);
		goto done;
	}
	uint16_t *dst = *buf;
	for (size_t i = 0; i < im->n_items; i++) {
		struct plan_item *it = &im->items[i];
		const struct ctq_gguf_tensor *t = it->t;
		if ((st = ctq_gguf_dequantize(&im->f, t, scratch, im->err)))
			goto done;
		/* (rows, K) row-major in both layouts; only the row order
		 * changes for q / k. */
		int64_t k = t->ne[0], rows = (int64_t)(t->n_elements / (uint64_t)k);
		if (it->ndim == 1) {
			k = 1;
			rows = t->ne[0];
		}
		int64_t hd = it->permute_heads ? rows / it->permute_heads : 0;
		for (int64_t r = 0; r < rows; r++) {
			int64_t src = hd ? ctq_gguf_unpermuted_src_row(r, hd) : r;
			ctq_convert_f32_to_bf16(scratch + src * k, (size_t)k, dst + r * k);
		}
		it->bf16 = dst;
		dst += t->n_elements;
		if ((st = ctq_st_writer_add(w, it->hf_name, CTQ_DTYPE_BF16, it->ndim, it->shape,
					    it->bf16, t->n_elements * 2, im->err)))
			goto done;
		sum->n_params += t->n_elements;
		sum->n_bytes += t->n_elements * 2;
		if (t->type < sizeof sum->n_type / sizeof *sum->n_type)
			sum->n_type[t->type]++;
	}
	sum->n_tensors = im->n_items;
done:
	free(scratch);
	return st;
}

/* HF's default max_shard_size ("5GB"). */
#define HF_MAX_SHARD_BYTES ((uint64_t)5000000000)

enum ctq_status ctq_gguf_import(const char *gguf_path, const char *out_dir,
				bool replace,
				struct ctq_gguf_import_summary *summary,
				struct ctq_error *err)
{
	struct import im;
	memset(&im, 0, sizeof im);
	im.err = err;
	ctq_arena_init(&im.arena);
	struct ctq_gguf_import_summary sum;
	memset(&sum, 0, sizeof sum);
	struct ctq_st_writer w;
	ctq_st_writer_init(&w);
	cJSON *tok = NULL, *tok_cfg = NULL, *cfg = NULL, *gen = NULL;
	uint16_t *buf = NULL;
	char tmp[4096] = "";
	enum ctq_status st;
	if (ctq_path_exists(out_dir) && !replace) {
		st = ctq_error_set(err, CTQ_ERR_IO, out_dir, "already exists; not replaced");
		goto done;
	}
	if ((st = ctq_gguf_open(&im.f, gguf_path, err)) || (st = read_hparams(&im)) ||
	    (st = plan_tensors(&im)) || (st = ctq_gguf_read_tokenizer(&im)) ||
	    (st = ctq_gguf_tokenizer_json(&im, &tok)) || (st = ctq_gguf_tokenizer_config_json(&im, &tok_cfg)) ||
	    (st = config_json(&im, &cfg, &gen)) || (st = convert_tensors(&im, &w, &buf, &sum)) ||
	    /* as save_pretrained writes it; transformers checks the format */
	    (st = ctq_st_writer_set_metadata(&w, "format", "pt", err)))
		goto done;
	if ((st = ctq_tmpdir_beside(out_dir, tmp, sizeof tmp, err))) {
		tmp[0] = '\0';
		goto done;
	}
	if ((st = ctq_checkpoint_write(tmp, &w, HF_MAX_SHARD_BYTES, err)) ||
	    (st = write_json(tmp, "config.json", cfg, true, err)) ||
	    (st = write_json(tmp, "generation_config.json", gen, true, err)) ||
	    (st = write_json(tmp, "tokenizer.json", tok, false, err)) ||
	    (st = write_json(tmp, "tokenizer_config.json", tok_cfg, false, err)) ||
	    (st = ctq_tmpdir_commit(tmp, out_dir, replace, err)))
		goto done;
	tmp[0] = '\0';
	snprintf(sum.architecture, sizeof sum.architecture, "llama");
	sum.n_layers = im.hp.n_layers;
	sum.hidden = im.hp.hidden;
	sum.intermediate = im.hp.inter;
	sum.n_head = im.hp.n_head;
	sum.n_head_kv = im.hp.n_kv;
	sum.head_dim = im.hp.head_dim;
	sum.vocab = im.hp.vocab;
	sum.context = im.hp.context;
	sum.rope_theta = im.hp.rope_theta;
	sum.rms_eps = im.hp.eps;
	sum.tied = im.hp.tied;
	sum.n_tokens = (size_t)im.tokens->v.arr.n;
	sum.n_merges = (size_t)im.merges->v.arr.n;
	sum.n_added = im.n_added;
	snprintf(sum.pre, sizeof sum.pre, "%s", im.pre ? im.pre->v.str.s : "");
	sum.has_chat_template = im.chat_template != NULL;
	if (summary)
		*summary = sum;
done:
	if (tmp[0])
		ctq_remove_tree(tmp);
	cJSON_Delete(tok);
	cJSON_Delete(tok_cfg);
	cJSON_Delete(cfg);
	cJSON_Delete(gen);
	cJSON_Delete(im.hp.rope_scaling);
	ctq_st_writer_free(&w);
	free(buf);
	ctq_gguf_close(&im.f);
	ctq_arena_free(&im.arena);
	return st;
}
