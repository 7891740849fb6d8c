/* ctq module enumeration (see modules.h). */
#include "quant/modules.h"
#include "core/hf_config.h"
#include "core/json.h"

#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

const struct ctq_hf_linear_info ctq_hf_linears[CTQ_HF_LINEARS] = {
	[CTQ_HF_Q] = {"self_attn", "q_proj", false},  [CTQ_HF_K] = {"self_attn", "k_proj", false},
	[CTQ_HF_V] = {"self_attn", "v_proj", false},  [CTQ_HF_O] = {"self_attn", "o_proj", true},
	[CTQ_HF_GATE] = {"mlp", "gate_proj", false}, [CTQ_HF_UP] = {"mlp", "up_proj", false},
	[CTQ_HF_DOWN] = {"mlp", "down_proj", true},
};

int ctq_hf_linear_find(const char *leaf)
{
	for (int i = 0; i < CTQ_HF_LINEARS; i++)
		if (!strcmp(leaf, ctq_hf_linears[i].leaf))
			return i;
	return -1;
}

void ctq_hf_linear_features(const struct ctq_model_shape *s, enum ctq_hf_linear l, long *out,
			    long *in)
{
	const long H = s->hidden_size, I = s->intermediate_size;
	const long q = s->num_attention_heads * s->head_dim, kv = s->num_key_value_heads * s->head_dim;
	const long dims[CTQ_HF_LINEARS][2] = {
		[CTQ_HF_Q] = {q, H},    [CTQ_HF_K] = {kv, H},  [CTQ_HF_V] = {kv, H}, [CTQ_HF_O] = {H, q},
		[CTQ_HF_GATE] = {I, H}, [CTQ_HF_UP] = {I, H}, [CTQ_HF_DOWN] = {H, I},
	};
	*out = dims[l][0];
	*in = dims[l][1];
}

void ctq_modules_init(struct ctq_modules *m)
{
	memset(m, 0, sizeof *m);
	ctq_arena_init(&m->arena);
}

void ctq_modules_free(struct ctq_modules *m)
{
	if (!m)
		return;
	ctq_arena_free(&m->arena);
	memset(m, 0, sizeof *m);
}

static enum ctq_module_kind kind_of(const char *const *types, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(types[i], "Linear"))
			return CTQ_MODULE_LINEAR;
		if (!strcmp(types[i], "Embedding"))
			return CTQ_MODULE_EMBEDDING;
	}
	if (n && strstr(types[0], "Attention"))
		return CTQ_MODULE_ATTENTION;
	return CTQ_MODULE_OTHER;
}

static enum ctq_status push(struct ctq_modules *m, struct ctq_module **vec,
			    size_t *n, size_t *cap, const char *name,
			    const char *const *types, size_t n_types,
			    const char *vllm_type, struct ctq_error *err)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 64;
		struct ctq_module *v = ctq_arena_calloc(&m->arena, c, sizeof *v);
		if (!v)
			return ctq_error_set(err, CTQ_ERR_NOMEM, name, "out of memory");
		if (*n)
			memcpy(v, *vec, *n * sizeof *v);
		*vec = v;
		*cap = c;
	}
	struct ctq_module *mod = &(*vec)[*n];
	mod->name = ctq_arena_strdup(&m->arena, name);
	mod->types = ctq_arena_calloc(&m->arena, n_types + 1, sizeof *mod->types);
	if (!mod->name || !mod->types)
		return ctq_error_set(err, CTQ_ERR_NOMEM, name, "out of memory");
	for (size_t i = 0; i < n_types; i++)
		if (!(mod->types[i] = ctq_arena_strdup(&m->arena, types[i])))
			return ctq_error_set(err, CTQ_ERR_NOMEM, name, "out of memory");
	mod->n_types = n_types;
	mod->vllm_type = vllm_type ? ctq_arena_strdup(&m->arena, vllm_type) : NULL;
	mod->kind = kind_of(types, n_types);
	mod->fused = -1;
	(*n)++;
	return CTQ_OK;
}

enum ctq_status ctq_modules_add(struct ctq_modules *m, const char *name,
				const char *const *types, size_t n_types,
				const char *vllm_type, struct ctq_error *err)
{
	return push(m, &m->v, &m->n, &m->cap, name, types, n_types, vllm_type, err);
}

enum ctq_status ctq_modules_add_aux(struct ctq_modules *m, const char *name,
				    const char *const *types, size_t n_types,
				    struct ctq_error *err)
{
	enum ctq_status st = push(m, &m->aux, &m->n_aux, &m->cap_aux, name, types,
				  n_types, NULL, err);
	if (!st)
		m->aux[m->n_aux - 1].kind = CTQ_MODULE_OTHER;
	return st;
}

const struct ctq_module *ctq_modules_lookup(const struct ctq_modules *m,
					    const char *name)
{
	long i = ctq_modules_find(m, name);
	if (i >= 0)
		return &m->v[i];
	for (size_t k = 0; k < m->n_aux; k++)
		if (!strcmp(m->aux[k].name, name))
			return &m->aux[k];
	return NULL;
}

long ctq_modules_find(const struct ctq_modules *m, const char *name)
{
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->v[i].name, name))
			return (long)i;
	return -1;
}

/* The class of a classification model: Qwen3/Qwen2/Llama ForSequenceClassification. */
static bool is_seq_cls(const char *t, const char *family)
{
	size_t n = strlen(family);
	return !strncmp(t, family, n) && !strcmp(t + n, "ForSequenceClassification");
}

const char *ctq_arch_normalise(const char *t)
{
	if (!t)
		return NULL;
	if (!strcasecmp(t, "qwen3") || !strcmp(t, "Qwen3ForCausalLM") || is_seq_cls(t, "Qwen3"))
		return "qwen3";
	if (!strcasecmp(t, "qwen2") || !strcmp(t, "Qwen2ForCausalLM") || is_seq_cls(t, "Qwen2"))
		return "qwen2";
	if (!strcasecmp(t, "llama") || !strcmp(t, "LlamaForCausalLM") || is_seq_cls(t, "Llama"))
		return "llama";
	return NULL;
}

enum ctq_status ctq_modules_check_arch(const cJSON *config, const char *arch,
				       const char *flag, const char *file,
				       struct ctq_error *err)
{
	const char *where = "";
	const cJSON *mt = ctq_json_get(ctq_hf_config_text(config, &where), "model_type");
	if (!cJSON_IsString(mt)) {
		where = "";
		mt = ctq_json_get(config, "model_type");
	}
	if (!cJSON_IsString(mt) || !arch)
		return CTQ_OK;
	const char *want = ctq_arch_normalise(mt->valuestring), *got = ctq_arch_normalise(arch);
	/* vLLM's MistralForCausalLM is a LlamaForCausalLM (docs/semantics.md). */
	if (!want && !strcmp(mt->valuestring, "mistral"))
		want = "llama";
	if (want && got && !strcmp(want, got))
		return CTQ_OK;
	char p[CTQ_PATH_MAX];
	ctq_json_path_key(p, sizeof p, where, "model_type");
	return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, p, "%s %s contradicts %s's model_type \"%s\"",
			     flag, arch, file, mt->valuestring);
}

/* Adds the module named nm (NULL: its name ran out of memory) to m's
 * modules, or to its aux list. */
static enum ctq_status add_named(struct ctq_modules *m, const char *nm, bool aux,
				 const char *const *types, size_t n, const char *prefix,
				 struct ctq_error *err)
{
	if (!nm)
		return ctq_error_set(err, CTQ_ERR_NOMEM, prefix, "out of memory");
	return aux ? ctq_modules_add_aux(m, nm, types, n, err)
		   : ctq_modules_add(m, nm, types, n, NULL, err);
}

/* The tree of arch with `layers` layers under prefix; seq_cls: the head is
 * score (vLLM ReplicatedLinear), else lm_head. */
static enum ctq_status enumerate(struct ctq_modules *m, const char *arch, int layers,
				 const char *prefix, bool seq_cls, struct ctq_error *err)
{
	const char *a = ctq_arch_normalise(arch);
	if (!a)
		return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, "model_type",
				     "is \"%s\"; ctq enumerates qwen3, qwen2 and llama",
				     arch ? arch : "(missing)");
	if (layers < 1 || layers > CTQ_MODULES_MAX_LAYERS)
		return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG,
				     "num_hidden_layers",
				     "is %d; expected an integer in [1, %d]", layers,
				     CTQ_MODULES_MAX_LAYERS);
	if (!prefix)
		prefix = "model.";
	const char *attn_class = !strcmp(a, "qwen3")   ? "Qwen3Attention"
				 : !strcmp(a, "qwen2") ? "Qwen2Attention"
						       : "LlamaAttention";
	static const char *const linear[] = {"Linear", "Module"};
	static const char *const embedding[] = {"Embedding", "Module"};
	const char *attention[] = {attn_class, "Module"};
	const char *layer_class = !strcmp(a, "qwen3")   ? "Qwen3DecoderLayer"
				  : !strcmp(a, "qwen2") ? "Qwen2DecoderLayer"
							: "LlamaDecoderLayer";
	/* transformers' class hierarchies (MRO, torch.nn.Module subclasses). */
	const char *decoder_layer[] = {layer_class, "GradientCheckpointingLayer", "Module"};
	static const char *const qwen3_norm[] = {"Qwen3RMSNorm", "Module"};
	enum ctq_status st;
	m->shape.arch = a;
	m->shape.layers = layers;
	/* Names are built in the arena: a long prefix must never be cut. */
#define ADD_TO(aux, types, n, ...)                                              \
	do {                                                                    \
		char *nm = ctq_arena_printf(&m->arena, __VA_ARGS__);            \
		if ((st = add_named(m, nm, aux, types, n, prefix, err)))        \
			return st;                                              \
	} while (0)
#define ADD(types, n, ...) ADD_TO(false, types, n, __VA_ARGS__)
#define ADD_AUX(types, n, ...) ADD_TO(true, types, n, __VA_ARGS__)
	ADD(embedding, 2, "%sembed_tokens", prefix);
	for (int l = 0; l < layers; l++) {
		ADD_AUX(decoder_layer, 3, "%slayers.%d", prefix, l);
		if (!strcmp(a, "qwen3")) {
			ADD_AUX(qwen3_norm, 2, "%slayers.%d.self_attn.q_norm", prefix, l);
			ADD_AUX(qwen3_norm, 2, "%slayers.%d.self_attn.k_norm", prefix, l);
		}
		ADD(attention, 2, "%slayers.%d.self_attn", prefix, l);
		for (int i = 0; i < CTQ_HF_LINEARS; i++)
			ADD(linear, 2, "%slayers.%d.%s.%s", prefix, l, ctq_hf_linears[i].parent,
			    ctq_hf_linears[i].leaf);
	}
	if (seq_cls) {
		if ((st = ctq_modules_add(m, "score", linear, 2, "ReplicatedLinear", err)))
			return st;
	} else {
		ADD(linear, 2, "%s", "lm_head");
	}
#undef ADD
#undef ADD_AUX
#undef ADD_TO
	return ctq_modules_finish(m, err);
}

enum ctq_status ctq_modules_from_arch(struct ctq_modules *m, const char *arch,
				      int layers, const char *prefix,
				      struct ctq_error *err)
{
	return enumerate(m, arch, layers, prefix, false, err);
}

/* The known architecture a config.json names: its model_type
 * (text_config's when nested), else architectures[0]; NULL when neither is
 * qwen3, qwen2 or llama. */
static const char *config_arch(const cJSON *config)
{
	const cJSON *mt = ctq_json_get(ctq_hf_config_text(config, NULL), "model_type");
	const char *arch = cJSON_IsString(mt) ? ctq_arch_normalise(mt->valuestring) : NULL;
	const cJSON *archs = ctq_json_get(config, "architectures");
	const cJSON *a0 = cJSON_IsArray(archs) ? archs->child : NULL;
	if (!arch && cJSON_IsString(a0))
		arch = ctq_arch_normalise(a0->valuestring);
	return arch;
}

static enum ctq_status shape_field(const cJSON *cfg, const char *base,
				   const char *key, long *out, bool required, long max,
				   struct ctq_error *err)
{
	const cJSON *it = ctq_json_get(cfg, key);
	if (!it || cJSON_IsNull(it)) {
		if (required) {
			char p[CTQ_PATH_MAX];
			ctq_json_path_key(p, sizeof p, base, key);
			return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, p,
					     "is missing; needed to enumerate the model");
		}
		return CTQ_OK;
	}
	char p[CTQ_PATH_MAX];
	ctq_json_path_key(p, sizeof p, base, key);
	return ctq_json_int(it, p, 1, max, out, err);
}

enum ctq_status ctq_modules_from_config(struct ctq_modules *m,
					const cJSON *config, const char *path,
					const char *prefix, struct ctq_error *err)
{
	char base[CTQ_PATH_MAX];
	snprintf(base, sizeof base, "%s", path ? path : "");
	const char *where = "";
	const cJSON *c = ctq_hf_config_text(config, &where);
	if (*where) {
		ctq_json_path_key(base, sizeof base, path ? path : "", where);
		if (!prefix)
			prefix = "model.language_model.";
	}
	const cJSON *mt = ctq_json_get(c, "model_type");
	const char *arch = config_arch(config);
	const cJSON *archs = ctq_json_get(config, "architectures");
	const cJSON *a0 = cJSON_IsArray(archs) ? archs->child : NULL;
	const bool seq_cls = cJSON_IsString(a0) && (is_seq_cls(a0->valuestring, "Qwen3") ||
						   is_seq_cls(a0->valuestring, "Qwen2") ||
						   is_seq_cls(a0->valuestring, "Llama"));
	if (!arch) {
		char p[CTQ_PATH_MAX];
		ctq_json_path_key(p, sizeof p, base, "model_type");
		return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, p,
				     "is %s%s%s; ctq enumerates qwen3, qwen2 and llama (or name the modules explicitly)",
				     cJSON_IsString(mt) ? "\"" : "",
				     cJSON_IsString(mt) ? mt->valuestring
							: ctq_json_type_name(mt),
				     cJSON_IsString(mt) ? "\"" : "");
	}
	long layers = 0;
	struct ctq_model_shape *s = &m->shape;
	enum ctq_status st;
	/* The layer count's limit is checked here, on the value as written
	 * (1e9 once read "is 4097", the clamp's value). */
	if ((st = shape_field(c, base, "num_hidden_layers", &layers, true, CTQ_MODULES_MAX_LAYERS, err)) ||
	    (st = shape_field(c, base, "hidden_size", &s->hidden_size, false, INT_MAX, err)) ||
	    (st = shape_field(c, base, "intermediate_size", &s->intermediate_size, false, INT_MAX, err)) ||
	    (st = shape_field(c, base, "vocab_size", &s->vocab_size, false, INT_MAX, err)) ||
	    (st = shape_field(c, base, "num_attention_heads", &s->num_attention_heads, false, INT_MAX, err)) ||
	    (st = shape_field(c, base, "num_key_value_heads", &s->num_key_value_heads, false, INT_MAX, err)) ||
	    (st = shape_field(c, base, "head_dim", &s->head_dim, false, INT_MAX, err)))
		return st;
	if (!s->num_key_value_heads)
		s->num_key_value_heads = s->num_attention_heads;
	if (!s->head_dim && s->num_attention_heads && s->hidden_size)
		s->head_dim = s->hidden_size / s->num_attention_heads;
	const cJSON *tie = ctq_json_get(c, "tie_word_embeddings");
	if (!tie)
		tie = ctq_json_get(config, "tie_word_embeddings");
	s->tie_word_embeddings = cJSON_IsTrue(tie);
	s->attention_bias = !strcmp(arch, "qwen2");
	const cJSON *ab = ctq_json_get(c, "attention_bias");
	if (cJSON_IsBool(ab))
		s->attention_bias = cJSON_IsTrue(ab);
	if (seq_cls) {
		/* transformers' PretrainedConfig: num_labels, else id2label's size, else 2. */
		s->seq_cls = true;
		s->num_labels = 2;
		const cJSON *o = ctq_json_get(c, "num_labels") || ctq_json_get(c, "id2label") ? c : config;
		const cJSON *nl = ctq_json_get(o, "num_labels"), *ids = ctq_json_get(o, "id2label");
		if (nl) {
			char p[CTQ_PATH_MAX];
			ctq_json_path_key(p, sizeof p, o == c ? base : (path ? path : ""), "num_labels");
			if ((st = ctq_json_int(nl, p, 1, INT_MAX, &s->num_labels, err)))
				return st;
		} else if (cJSON_IsObject(ids) && ids->child) {
			s->num_labels = cJSON_GetArraySize(ids);
		}
	}
	struct ctq_model_shape keep = *s;
	st = enumerate(m, arch, (int)layers, prefix, seq_cls, err);
	keep.arch = m->shape.arch;
	keep.layers = m->shape.layers;
	m->shape = keep;
	return st;
}

static bool leaf_is(const char *name, const char *leaf)
{
	const char *dot = strrchr(name, '.');
	return !strcmp(dot ? dot + 1 : name, leaf);
}

/* ---- the tree of a checkpoint's tensors ---------------------------------- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The first index of sorted v[0..n) whose string is >= key. */
static size_t lower_bound(const char *const *v, size_t n, const char *key)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(v[mid], key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool sorted_has(const char *const *v, size_t n, const char *key)
{
	size_t i = lower_bound(v, n, key);
	return i < n && !strcmp(v[i], key);
}

/* A module the tensors hold: its name and, from an unpacked X.weight, its
 * (out, in) features. */
struct tensor_module {
	const char *name;
	int64_t out, in;
};

static int cmp_module(const void *a, const void *b)
{
	return strcmp(((const struct tensor_module *)a)->name, ((const struct tensor_module *)b)->name);
}

/* X for a 2-D tensor X.weight or X.weight_packed (compressed-tensors'
 * packed formats); false for anything else (norms, biases, scales, convs). */
static bool module_of(struct ctq_arena *a, const struct ctq_tensor_name *t,
		      struct tensor_module *out)
{
	static const char *const suffix[] = {".weight", ".weight_packed"};
	size_t n = strlen(t->name);
	for (size_t i = 0; t->ndim == 2 && i < sizeof suffix / sizeof *suffix; i++) {
		size_t k = strlen(suffix[i]);
		if (n > k && !strcmp(t->name + n - k, suffix[i])) {
			out->name = ctq_arena_printf(a, "%.*s", (int)(n - k), t->name);
			out->out = i == 0 && t->shape ? t->shape[0] : 0;
			out->in = i == 0 && t->shape ? t->shape[1] : 0;
			return out->name != NULL;
		}
	}
	return false;
}

/* An nn.Embedding by its name (transformers' names for token and position
 * tables). A component "embeddings" alone is not enough: SigLIP2's
 * embeddings.patch_embedding is an nn.Linear. */
static bool looks_embedding(const char *name)
{
	static const char *const leaves[] = {
		"embed_tokens", "wte", "wpe", "word_embeddings", "position_embeddings",
		"token_type_embeddings", "position_embedding", "embed_positions",
	};
	for (size_t i = 0; i < sizeof leaves / sizeof *leaves; i++)
		if (leaf_is(name, leaves[i]))
			return true;
	return false;
}

/* Whether the sorted tensor names hold a tensor of module mod ("mod.*"). */
static bool holds(const char *const *names, size_t n, struct ctq_arena *a, const char *mod)
{
	char *key = ctq_arena_printf(a, "%s.", mod);
	if (!key)
		return false;
	size_t i = lower_bound(names, n, key);
	return i < n && !strncmp(names[i], key, strlen(key));
}

enum ctq_status ctq_modules_from_tensors(struct ctq_modules *m, const cJSON *config,
					 const char *path, const struct ctq_tensor_name *t,
					 size_t n, struct ctq_error *err)
{
	struct ctq_arena scratch;
	struct ctq_modules known, r;
	ctq_arena_init(&scratch);
	ctq_modules_init(&known);
	ctq_modules_init(&r);
	enum ctq_status st = CTQ_OK;
	const char **names = ctq_arena_calloc(&scratch, n + 1, sizeof *names);
	struct tensor_module *mods = ctq_arena_calloc(&scratch, n + 1, sizeof *mods);
	size_t n_mods = 0;
	if (!names || !mods) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, "tensors", "out of memory");
		goto done;
	}
	/* mods: the tensors' modules in name order (a checkpoint lists its
	 * tensors sorted; a suite case in any order). */
	const char *prefix = NULL;
	for (size_t i = 0; i < n; i++) {
		names[i] = t[i].name;
		if (module_of(&scratch, &t[i], &mods[n_mods]))
			n_mods++;
	}
	qsort(names, n, sizeof *names, cmp_str);
	qsort(mods, n_mods, sizeof *mods, cmp_module);
	if (!n_mods) {
		st = ctq_error_set(err, CTQ_ERR_CHECKPOINT, "tensors",
				   "the checkpoint's %zu tensor(s) hold no 2-D weight (X.weight or X.weight_packed): no module to plan",
				   n);
		goto done;
	}
	/* The known tree, under the prefix the checkpoint gives embed_tokens. */
	const char *arch = config_arch(config);
	for (size_t i = 0; i < n_mods && !prefix; i++)
		if (leaf_is(mods[i].name, "embed_tokens"))
			prefix = ctq_arena_printf(&scratch, "%.*s",
						  (int)(strlen(mods[i].name) - strlen("embed_tokens")),
						  mods[i].name);
	if (arch && (st = ctq_modules_from_config(&known, config, path, prefix, err)))
		goto done;
	for (size_t i = 0; i < known.n; i++) {
		const struct ctq_module *k = &known.v[i];
		const char *name = k->name;
		bool weight = k->kind == CTQ_MODULE_LINEAR || k->kind == CTQ_MODULE_EMBEDDING;
		if (weight && !holds(names, n, &scratch, name) && !strcmp(name, "lm_head")) {
			/* Llava's language_model.lm_head, or a tied head the resolvers keep. */
			for (size_t j = 0; j < n_mods; j++)
				if (leaf_is(mods[j].name, "lm_head")) {
					name = mods[j].name;
					break;
				}
			if (name == k->name && known.shape.tie_word_embeddings)
				weight = false;
		}
		if (weight && !holds(names, n, &scratch, name)) {
			st = ctq_error_set(err, CTQ_ERR_CHECKPOINT, name,
					   "is a module of the config's %s tree, but the checkpoint holds no %s.weight (a checkpoint of another architecture?)",
					   known.shape.arch, name);
			goto done;
		}
		if ((st = ctq_modules_add(&r, name, k->types, k->n_types, k->vllm_type, err)))
			goto done;
	}
	for (size_t i = 0; i < known.n_aux; i++)
		if ((st = ctq_modules_add_aux(&r, known.aux[i].name, known.aux[i].types,
					      known.aux[i].n_types, err)))
			goto done;
	/* The rest of the tensors' modules, their class a guess. */
	const char **have = ctq_arena_calloc(&scratch, r.n + 1, sizeof *have);
	if (!have) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, "tensors", "out of memory");
		goto done;
	}
	for (size_t i = 0; i < r.n; i++)
		have[i] = r.v[i].name;
	const size_t n_have = r.n;
	qsort(have, n_have, sizeof *have, cmp_str);
	static const char *const linear[] = {"Linear", "Module"};
	static const char *const embedding[] = {"Embedding", "Module"};
	for (size_t i = 0; i < n_mods; i++) {
		const char *x = mods[i].name;
		if ((i && !strcmp(x, mods[i - 1].name)) || sorted_has(have, n_have, x))
			continue;
		if ((st = ctq_modules_add(&r, x, looks_embedding(x) ? embedding : linear, 2, NULL, err)))
			goto done;
		r.v[r.n - 1].guessed = true;
		r.v[r.n - 1].out_features = mods[i].out;
		r.v[r.n - 1].in_features = mods[i].in;
		r.n_guessed++;
	}
	if ((st = ctq_modules_finish(&r, err)))
		goto done;
	r.shape = known.shape;
	ctq_modules_free(m);
	*m = r;
	ctq_modules_init(&r);
done:
	ctq_modules_free(&r);
	ctq_modules_free(&known);
	ctq_arena_free(&scratch);
	return st;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && !strcmp(s + n - k, suffix);
}

static bool is_sibling(const struct ctq_modules *m, size_t j, const char *name,
		       size_t plen, const char *leaf)
{
	const char *o = m->v[j].name;
	return m->v[j].kind == CTQ_MODULE_LINEAR && !strncmp(o, name, plen) &&
	       !strcmp(o + plen, leaf);
}

/* Finds the sibling of module i whose last component is `leaf`: first among
 * the neighbours (enumerations list a layer's modules together), then
 * anywhere — explicit module lists may come in any order. */
static long sibling(const struct ctq_modules *m, size_t i, const char *leaf)
{
	const char *name = m->v[i].name;
	const char *dot = strrchr(name, '.');
	size_t plen = dot ? (size_t)(dot - name) + 1 : 0;
	size_t lo = i > 16 ? i - 16 : 0, hi = i + 16 < m->n ? i + 16 : m->n;
	for (size_t j = lo; j < hi; j++)
		if (is_sibling(m, j, name, plen, leaf))
			return (long)j;
	for (size_t j = 0; j < m->n; j++)
		if ((j < lo || j >= hi) && is_sibling(m, j, name, plen, leaf))
			return (long)j;
	return -1;
}

static enum ctq_status add_fused(struct ctq_modules *m, const long *idx,
				 size_t n, const char *key, const char *type,
				 struct ctq_error *err)
{
	struct ctq_fused_set *f = &m->fused[m->n_fused];
	const char *name = m->v[idx[0]].name;
	const char *dot = strrchr(name, '.');
	int plen = dot ? (int)(dot - name) + 1 : 0;
	f->runtime_name = ctq_arena_printf(&m->arena, "%.*s%s", plen, name, key);
	if (!f->runtime_name)
		return ctq_error_set(err, CTQ_ERR_NOMEM, name, "out of memory");
	f->runtime_type = type;
	f->key = key;
	f->n_members = n;
	for (size_t i = 0; i < n; i++) {
		f->members[i] = (size_t)idx[i];
		m->v[idx[i]].fused = (int)m->n_fused;
	}
	m->n_fused++;
	return CTQ_OK;
}

enum ctq_status ctq_modules_finish(struct ctq_modules *m, struct ctq_error *err)
{
	m->fused = ctq_arena_calloc(&m->arena, m->n / 2 + 1, sizeof *m->fused);
	m->n_fused = 0;
	if (!m->fused)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "modules", "out of memory");
	enum ctq_status st;
	for (size_t i = 0; i < m->n; i++) {
		struct ctq_module *mod = &m->v[i];
		if (mod->kind != CTQ_MODULE_LINEAR || mod->fused >= 0)
			continue;
		if (leaf_is(mod->name, "q_proj")) {
			long idx[3] = {(long)i, sibling(m, i, "k_proj"),
				       sibling(m, i, "v_proj")};
			if (idx[1] >= 0 && idx[2] >= 0 &&
			    (st = add_fused(m, idx, 3, "qkv_proj",
					    "QKVParallelLinear", err)))
				return st;
		} else if (leaf_is(mod->name, "gate_proj")) {
			long idx[2] = {(long)i, sibling(m, i, "up_proj")};
			if (idx[1] >= 0 &&
			    (st = add_fused(m, idx, 2, "gate_up_proj",
					    "MergedColumnParallelLinear", err)))
				return st;
		}
	}
	for (size_t i = 0; i < m->n; i++) {
		struct ctq_module *mod = &m->v[i];
		if (mod->vllm_type)
			continue;
		switch (mod->kind) {
		case CTQ_MODULE_LINEAR:
			if (mod->fused >= 0)
				mod->vllm_type = m->fused[mod->fused].runtime_type;
			else if (leaf_is(mod->name, "o_proj") ||
				 leaf_is(mod->name, "down_proj"))
				mod->vllm_type = "RowParallelLinear";
			else if (!strcmp(mod->name, "lm_head") ||
				 ends_with(mod->name, ".lm_head"))
				mod->vllm_type = "ParallelLMHead";
			else
				mod->vllm_type = "ColumnParallelLinear";
			break;
		case CTQ_MODULE_EMBEDDING:
			mod->vllm_type = "VocabParallelEmbedding";
			break;
		case CTQ_MODULE_ATTENTION:
			mod->vllm_type = "Attention";
			break;
		default:
			mod->vllm_type = mod->n_types ? mod->types[0] : "Module";
		}
	}
	return CTQ_OK;
}
