/* ctq module enumeration (see modules.h). */
#include "quant/modules.h"
#include "quant/arch.h"
#include "quant/trees.h"
#include "core/hf_config.h"
#include "core/json.h"

#include <ctype.h>
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

static const char *last_component(const char *name)
{
	const char *d = strrchr(name, '.');
	return d ? d + 1 : name;
}

int ctq_hf_linear_of(const struct ctq_modules *mods, const struct ctq_module *m)
{
	if (m->guessed || m->moe >= 0 || m->kind != CTQ_MODULE_LINEAR ||
	    (mods->shape.row && mods->shape.row->attn != CTQ_ATTN_QKV))
		return -1;
	int hl = ctq_hf_linear_find(last_component(m->name));
	if (hl < 0)
		return -1;
	/* <...>.<parent>.<leaf> with parent self_attn / mlp itself */
	const char *p = ctq_hf_linears[hl].parent;
	size_t n = strlen(m->name), lp = strlen(p), ll = strlen(ctq_hf_linears[hl].leaf);
	if (n < lp + ll + 1 || strncmp(m->name + n - ll - 1 - lp, p, lp) ||
	    (n > lp + ll + 1 && m->name[n - ll - 2 - lp] != '.'))
		return -1;
	return hl;
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
	mod->moe = mod->expert = mod->expert_proj = -1;
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

/* Whether t names a classifier of a known family (Qwen3ForSequenceClassification, ...). */
static bool is_seq_cls(const char *t)
{
	const char *suffix = "ForSequenceClassification";
	size_t n = strlen(t), k = strlen(suffix);
	return n > k && !strcmp(t + n - k, suffix) && ctq_arch_find(t);
}

const char *ctq_arch_normalise(const char *t)
{
	const struct ctq_arch *a = ctq_arch_find(t);
	return a ? a->runner : NULL;
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
	const struct ctq_arch *want = ctq_arch_find(mt->valuestring), *got = ctq_arch_find(arch);
	/* vLLM's MistralForCausalLM is a LlamaForCausalLM (docs/semantics.md). */
	if (want && got && (want == got || (!strcmp(want->model_type, "mistral") &&
					    !strcmp(got->model_type, "llama"))))
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

/* Which decoder layers hold a MoE block (the rest a dense MLP), from the
 * config's fields as each architecture's decoder layer reads them. */
struct layer_rule {
	const cJSON *mlp_only;  /* Qwen: mlp_only_layers (list of layer indices) */
	long sparse_step;       /* Qwen: decoder_sparse_step; DeepSeek: moe_layer_freq */
	long first_k_dense;     /* DeepSeek: first_k_dense_replace */
};

static bool layer_is_sparse(const struct ctq_arch *a, const struct ctq_model_shape *s,
			    const struct layer_rule *r, int l)
{
	if (!a->moe_parent || s->n_experts <= 0)
		return false;
	if (!a->mlp_class)
		return true; /* Mixtral: every layer */
	if (a->shared == CTQ_SHARED_EXPERTS) /* DeepseekV3DecoderLayer */
		return l >= r->first_k_dense && l % r->sparse_step == 0;
	for (const cJSON *x = r->mlp_only ? r->mlp_only->child : NULL; x; x = x->next)
		if (cJSON_IsNumber(x) && x->valuedouble == l)
			return false;
	return (l + 1) % r->sparse_step == 0; /* Qwen3MoeDecoderLayer, Qwen2MoeDecoderLayer */
}

/* The tree of row a with `layers` layers under prefix; seq_cls: the head is
 * score (vLLM ReplicatedLinear), else lm_head. Each Linear's (out, in)
 * from the shape where the shape gives it (0 otherwise). */
static enum ctq_status enumerate(struct ctq_modules *m, const struct ctq_arch *a, int layers,
				 const char *prefix, bool seq_cls, const struct layer_rule *rule,
				 struct ctq_error *err)
{
	if (layers < 1 || layers > CTQ_MODULES_MAX_LAYERS)
		return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG,
				     "num_hidden_layers",
				     "is %d; expected an integer in [1, %d]", layers,
				     CTQ_MODULES_MAX_LAYERS);
	if (!prefix)
		prefix = "model.";
	const struct ctq_model_shape *s = &m->shape;
	static const char *const linear[] = {"Linear", "Module"};
	static const char *const embedding2[] = {"Embedding", "Module"};
	/* Gemma 1-3: embed_tokens is a <Family>TextScaledWordEmbedding(nn.Embedding)
	 * (modeling_gemma*.py): its class is a target too */
	const char *embedding3[] = {a->embedding_class, "Embedding", "Module"};
	const char *const *embedding = a->embedding_class ? embedding3 : embedding2;
	const size_t n_embedding = a->embedding_class ? 3 : 2;
	const char *attention[] = {a->attention_class, "Module"};
	/* transformers' class hierarchies (MRO, torch.nn.Module subclasses). */
	const char *decoder_layer[] = {a->layer_class, "GradientCheckpointingLayer", "Module"};
	const char *norm[] = {a->norm_class, "Module"};
	const char *router[] = {a->router_class ? a->router_class : "Module", "Module"};
	const long H = s->hidden_size, I = s->intermediate_size, hd = s->head_dim;
	const long q = s->num_attention_heads * hd, kv = s->num_key_value_heads * hd;
	const long nh = s->num_attention_heads, qk = s->qk_nope_head_dim + s->qk_rope_head_dim;
	enum ctq_status st;
	m->shape.arch = a->model_type;
	m->shape.row = a;
	m->shape.layers = layers;
	/* Names are built in the arena: a long prefix must never be cut. */
#define ADD_TO(aux, types, n, ...)                                              \
	do {                                                                    \
		char *nm = ctq_arena_printf(&m->arena, __VA_ARGS__);            \
		if ((st = add_named(m, nm, aux, types, n, prefix, err)))        \
			return st;                                              \
	} while (0)
#define ADD_AUX(types, n, ...) ADD_TO(true, types, n, __VA_ARGS__)
	/* A Linear of (o, i) features. */
#define LIN(o, i, ...)                                                          \
	do {                                                                    \
		ADD_TO(false, linear, 2, __VA_ARGS__);                          \
		m->v[m->n - 1].out_features = (o) > 0 ? (o) : 0;                \
		m->v[m->n - 1].in_features = (i) > 0 ? (i) : 0;                 \
	} while (0)
	ADD_TO(false, embedding, n_embedding, "%sembed_tokens", prefix);
	m->v[m->n - 1].out_features = s->vocab_size;
	m->v[m->n - 1].in_features = H;
	for (int l = 0; l < layers; l++) {
		const char *at = ctq_arena_printf(&m->arena, "%slayers.%d.self_attn", prefix, l);
		if (!at)
			return ctq_error_set(err, CTQ_ERR_NOMEM, prefix, "out of memory");
		ADD_AUX(decoder_layer, 3, "%slayers.%d", prefix, l);
		if (a->qk_norm) {
			ADD_AUX(norm, 2, "%s.q_norm", at);
			ADD_AUX(norm, 2, "%s.k_norm", at);
		}
		ADD_TO(false, attention, 2, "%s", at);
		/* vLLM deepseek_v2.py: the MLA layer's attention is an MLAAttention
		 * (layers/attention/mla_attention.py), not an Attention */
		if (a->attn == CTQ_ATTN_MLA)
			m->v[m->n - 1].vllm_type = "MLAAttention";
		switch (a->attn) {
		case CTQ_ATTN_QKV:
			LIN(q, H, "%s.q_proj", at);
			LIN(kv, H, "%s.k_proj", at);
			LIN(kv, H, "%s.v_proj", at);
			LIN(H, q, "%s.o_proj", at);
			break;
		case CTQ_ATTN_QKV_FUSED:
			LIN(q + 2 * kv, H, "%s.qkv_proj", at);
			LIN(H, q, "%s.o_proj", at);
			break;
		case CTQ_ATTN_MLA:
			/* DeepseekV3Attention: q_a_proj / q_b_proj with q_lora_rank, else q_proj. */
			if (s->q_lora_rank > 0) {
				LIN(s->q_lora_rank, H, "%s.q_a_proj", at);
				LIN(nh * qk, s->q_lora_rank, "%s.q_b_proj", at);
			} else {
				LIN(nh * qk, H, "%s.q_proj", at);
			}
			LIN(s->kv_lora_rank + s->qk_rope_head_dim, H, "%s.kv_a_proj_with_mqa", at);
			LIN(nh * (s->qk_nope_head_dim + s->v_head_dim), s->kv_lora_rank, "%s.kv_b_proj", at);
			LIN(H, nh * s->v_head_dim, "%s.o_proj", at);
			break;
		}
		const char *mp = a->moe_parent && layer_is_sparse(a, s, rule, l) ? a->moe_parent : "mlp";
		if (layer_is_sparse(a, s, rule, l)) {
			const long E = s->moe_intermediate_size;
			const size_t first = m->n;
			ADD_TO(false, a->ct_fused_experts || a->shared == CTQ_SHARED_EXPERTS ? router : linear,
			       2, "%slayers.%d.%s.gate", prefix, l, mp);
			m->v[m->n - 1].out_features = s->n_experts;
			m->v[m->n - 1].in_features = H;
			/* vLLM: a ReplicatedLinear, built with quant_config=None
			 * except in qwen3_moe.py */
			m->v[m->n - 1].vllm_unquantized = !a->vllm_router_quantized;
			m->v[m->n - 1].router = true;
			m->v[m->n - 1].vllm_type = "ReplicatedLinear";
			for (long e = 0; e < s->n_experts; e++) {
				LIN(E, H, "%slayers.%d.%s.experts.%ld.%s", prefix, l, mp, e, a->expert_leaf[0]);
				LIN(E, H, "%slayers.%d.%s.experts.%ld.%s", prefix, l, mp, e, a->expert_leaf[1]);
				LIN(H, E, "%slayers.%d.%s.experts.%ld.%s", prefix, l, mp, e, a->expert_leaf[2]);
			}
			/* transformers 5: experts fused, the router no Linear. */
			for (size_t k = first + 1; a->ct_fused_experts && k < m->n; k++)
				m->v[k].ct_fused = true;
			const long S = s->shared_intermediate_size;
			const char *sh = a->shared == CTQ_SHARED_EXPERT ? "shared_expert" : "shared_experts";
			if (a->shared != CTQ_SHARED_NONE) {
				LIN(S, H, "%slayers.%d.%s.%s.gate_proj", prefix, l, mp, sh);
				LIN(S, H, "%slayers.%d.%s.%s.up_proj", prefix, l, mp, sh);
				LIN(H, S, "%slayers.%d.%s.%s.down_proj", prefix, l, mp, sh);
			}
			if (a->shared == CTQ_SHARED_EXPERT) {
				LIN(1, H, "%slayers.%d.%s.shared_expert_gate", prefix, l, mp);
				m->v[m->n - 1].vllm_unquantized = true;
			}
		} else if (a->mlp == CTQ_MLP_GATED_FUSED) {
			LIN(2 * I, H, "%slayers.%d.mlp.gate_up_proj", prefix, l);
			LIN(H, I, "%slayers.%d.mlp.down_proj", prefix, l);
		} else {
			LIN(I, H, "%slayers.%d.mlp.gate_proj", prefix, l);
			LIN(I, H, "%slayers.%d.mlp.up_proj", prefix, l);
			LIN(H, I, "%slayers.%d.mlp.down_proj", prefix, l);
		}
	}
	if (seq_cls) {
		if ((st = ctq_modules_add(m, "score", linear, 2, "ReplicatedLinear", err)))
			return st;
		m->v[m->n - 1].out_features = s->num_labels;
		m->v[m->n - 1].in_features = H;
	} else {
		LIN(s->vocab_size, H, "%s", "lm_head");
	}
#undef LIN
#undef ADD_AUX
#undef ADD_TO
	return ctq_modules_finish(m, err);
}

static enum ctq_status moe_fields(const struct ctq_arch *a, const cJSON *c, const char *base,
				  struct ctq_model_shape *s, struct layer_rule *rule,
				  struct ctq_error *err);

enum ctq_status ctq_modules_from_arch(struct ctq_modules *m, const char *arch,
				      int layers, const char *prefix,
				      struct ctq_error *err)
{
	const struct ctq_arch *a = ctq_arch_find(arch);
	if (!a)
		return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, "model_type",
				     "is \"%s\"; ctq enumerates %s", arch ? arch : "(missing)",
				     ctq_arch_list());
	/* No config: the configuration class's defaults (quant/arch.c). */
	cJSON *c = cJSON_CreateObject();
	if (!c)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "model_type", "out of memory");
	struct layer_rule rule = {NULL, 1, 0};
	enum ctq_status st = moe_fields(a, c, "", &m->shape, &rule, err);
	cJSON_Delete(c);
	return st ? st : enumerate(m, a, layers, prefix, false, &rule, err);
}

/* The known architecture a config.json names: its model_type
 * (text_config's when nested), else architectures[0]; NULL when ctq has no
 * row for either. */
static const struct ctq_arch *config_arch(const cJSON *config)
{
	const cJSON *mt = ctq_json_get(ctq_hf_config_text(config, NULL), "model_type");
	const struct ctq_arch *arch = cJSON_IsString(mt) ? ctq_arch_find(mt->valuestring) : NULL;
	const cJSON *archs = ctq_json_get(config, "architectures");
	const cJSON *a0 = cJSON_IsArray(archs) ? archs->child : NULL;
	if (!arch && cJSON_IsString(a0))
		arch = ctq_arch_find(a0->valuestring);
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

/* An optional count that may be 0 (DeepSeek's first_k_dense_replace). */
static enum ctq_status nonneg_field(const cJSON *cfg, const char *base, const char *key, long *out,
				    struct ctq_error *err)
{
	const cJSON *it = ctq_json_get(cfg, key);
	if (!it || cJSON_IsNull(it))
		return CTQ_OK;
	char p[CTQ_PATH_MAX];
	ctq_json_path_key(p, sizeof p, base, key);
	return ctq_json_int(it, p, 0, CTQ_MODULES_MAX_LAYERS, out, err);
}

/* transformers' name for the expert count, one per family. */
static const char *expert_count_key(const struct ctq_arch *a)
{
	return !a->mlp_class ? "num_local_experts"
	       : a->shared == CTQ_SHARED_EXPERTS ? "n_routed_experts" : "num_experts";
}

/* The MoE and MLA fields of row a's config c into s and rule. */
static enum ctq_status moe_fields(const struct ctq_arch *a, const cJSON *c, const char *base,
				  struct ctq_model_shape *s, struct layer_rule *rule,
				  struct ctq_error *err)
{
	enum ctq_status st;
	rule->sparse_step = 1;
	if (a->attn == CTQ_ATTN_MLA) {
		/* DeepseekV3Config's defaults; q_lora_rank null: no LoRA (q_proj) */
		s->q_lora_rank = cJSON_IsNull(ctq_json_get(c, "q_lora_rank")) ? 0 : 1536;
		s->kv_lora_rank = 512;
		s->qk_nope_head_dim = 128;
		s->qk_rope_head_dim = 64;
		s->v_head_dim = 128;
	}
	if (a->attn == CTQ_ATTN_MLA &&
	    ((st = shape_field(c, base, "q_lora_rank", &s->q_lora_rank, false, INT_MAX, err)) ||
	     (st = shape_field(c, base, "kv_lora_rank", &s->kv_lora_rank, false, INT_MAX, err)) ||
	     (st = shape_field(c, base, "qk_nope_head_dim", &s->qk_nope_head_dim, false, INT_MAX, err)) ||
	     (st = shape_field(c, base, "qk_rope_head_dim", &s->qk_rope_head_dim, false, INT_MAX, err)) ||
	     (st = shape_field(c, base, "v_head_dim", &s->v_head_dim, false, INT_MAX, err))))
		return st;
	if (!a->moe_parent)
		return CTQ_OK;
	const char *count = expert_count_key(a);
	long shared = 1; /* DeepseekV3Config n_shared_experts=1 */
	s->n_experts = a->experts_default;
	s->moe_intermediate_size = a->moe_inter_default;
	s->shared_intermediate_size = a->shared_inter_default;
	rule->first_k_dense = a->first_k_dense_default;
	if ((st = shape_field(c, base, count, &s->n_experts, false, 1 << 16, err)) ||
	    (st = shape_field(c, base, a->mlp_class ? "moe_intermediate_size" : "intermediate_size",
			      &s->moe_intermediate_size, false, INT_MAX, err)) ||
	    (st = shape_field(c, base, a->shared == CTQ_SHARED_EXPERTS ? "moe_layer_freq" : "decoder_sparse_step",
			      &rule->sparse_step, false, CTQ_MODULES_MAX_LAYERS, err)) ||
	    (st = nonneg_field(c, base, "first_k_dense_replace", &rule->first_k_dense, err)))
		return st;
	if (!rule->sparse_step)
		rule->sparse_step = 1;
	if (a->shared == CTQ_SHARED_EXPERT &&
	    (st = shape_field(c, base, "shared_expert_intermediate_size", &s->shared_intermediate_size,
			      false, INT_MAX, err)))
		return st;
	if (a->shared == CTQ_SHARED_EXPERTS) {
		if ((st = shape_field(c, base, "n_shared_experts", &shared, false, 1 << 16, err)))
			return st;
		s->shared_intermediate_size = s->moe_intermediate_size * shared;
	}
	rule->mlp_only = ctq_json_get(c, "mlp_only_layers");
	/* vLLM qwen3_moe.py Qwen3MoeForCausalLM.__init__: `if getattr(config,
	 * "mlp_only_layers", []): self.packed_modules_mapping["gate_up_proj"] =
	 * ["gate_proj", "up_proj"]` */
	s->vllm_gate_up_unpacked = !strcmp(a->model_type, "qwen3_moe") &&
				   !(cJSON_IsArray(rule->mlp_only) && rule->mlp_only->child);
	return CTQ_OK;
}

/* The DiT row a diffusers config names by _class_name, or NULL. */
static const struct ctq_dit_arch *config_dit(const cJSON *config)
{
	const cJSON *cn = ctq_json_get(config, "_class_name");
	return cJSON_IsString(cn) ? ctq_arch_dit_find(cn->valuestring) : NULL;
}

/* ctq_modules_from_config; vision: add a vision-language config's tower
 * and projector (a checkpoint's tensors list them instead). */
static enum ctq_status from_config(struct ctq_modules *m, const cJSON *config, const char *path,
				   const char *prefix, bool vision, struct ctq_error *err)
{
	const struct ctq_dit_arch *dit = config_dit(config);
	if (dit)
		return ctq_trees_dit(m, dit, config, path, err);
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
	const struct ctq_arch *arch = config_arch(config);
	const cJSON *archs = ctq_json_get(config, "architectures");
	const cJSON *a0 = cJSON_IsArray(archs) ? archs->child : NULL;
	const bool seq_cls = cJSON_IsString(a0) && is_seq_cls(a0->valuestring);
	if (!arch) {
		char p[CTQ_PATH_MAX];
		ctq_json_path_key(p, sizeof p, base, "model_type");
		return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, p,
				     "is %s%s%s; ctq enumerates %s (or name the modules explicitly)",
				     cJSON_IsString(mt) ? "\"" : "",
				     cJSON_IsString(mt) ? mt->valuestring
							: ctq_json_type_name(mt),
				     cJSON_IsString(mt) ? "\"" : "", ctq_arch_list());
	}
	long layers = 0;
	struct ctq_model_shape *s = &m->shape;
	struct layer_rule rule = {NULL, 1, 0};
	enum ctq_status st;
	/* The layer count's limit is checked here, on the value as written
	 * (1e9 once read "is 4097", the clamp's value). */
	if ((st = shape_field(c, base, "num_hidden_layers", &layers, true, CTQ_MODULES_MAX_LAYERS, err)) ||
	    (st = shape_field(c, base, "hidden_size", &s->hidden_size, false, INT_MAX, err)) ||
	    (st = shape_field(c, base, "intermediate_size", &s->intermediate_size, false, INT_MAX, err)) ||
	    (st = shape_field(c, base, "vocab_size", &s->vocab_size, false, INT_MAX, err)) ||
	    (st = shape_field(c, base, "num_attention_heads", &s->num_attention_heads, false, INT_MAX, err)) ||
	    (st = shape_field(c, base, "num_key_value_heads", &s->num_key_value_heads, false, INT_MAX, err)) ||
	    (st = shape_field(c, base, "head_dim", &s->head_dim, false, INT_MAX, err)) ||
	    (st = moe_fields(arch, c, base, s, &rule, err)))
		return st;
	if (!s->num_key_value_heads)
		s->num_key_value_heads = s->num_attention_heads;
	if (!s->head_dim && s->num_attention_heads && s->hidden_size)
		s->head_dim = s->hidden_size / s->num_attention_heads;
	const cJSON *tie = ctq_json_get(c, "tie_word_embeddings");
	if (!tie)
		tie = ctq_json_get(config, "tie_word_embeddings");
	s->tie_word_embeddings = tie ? cJSON_IsTrue(tie) : arch->tie_default;
	s->attention_bias = arch->attention_bias;
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
	st = enumerate(m, arch, (int)layers, prefix, seq_cls, &rule, err);
	keep.arch = m->shape.arch;
	keep.row = m->shape.row;
	keep.layers = m->shape.layers;
	m->shape = keep;
	if (st || !vision || !*where)
		return st;
	const size_t before = m->n;
	if ((st = ctq_trees_vision(m, config, path, prefix, err)) || m->n == before)
		return st;
	return ctq_modules_finish(m, err);
}

enum ctq_status ctq_modules_from_config(struct ctq_modules *m,
					const cJSON *config, const char *path,
					const char *prefix, struct ctq_error *err)
{
	return from_config(m, config, path, prefix, true, err);
}

static bool leaf_is(const char *name, const char *leaf)
{
	const char *dot = strrchr(name, '.');
	return !strcmp(dot ? dot + 1 : name, leaf);
}

/* ---- the tree of a checkpoint's tensors ---------------------------------- */

static bool expert_of(const char *name, size_t *blen, long *e, int *proj);

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

/* The modules of tensor t appended at out[*k]: X for a 2-D tensor X.weight
 * or X.weight_packed (compressed-tensors' packed formats); and the experts
 * of a fused 3-D experts tensor as transformers 5 writes them —
 * P.experts.gate_up_proj (E, 2 I, H) gives P.experts.e.gate_proj and
 * up_proj (I, H), P.experts.down_proj (E, H, I) gives P.experts.e.down_proj
 * (H, I). Nothing for norms, biases, scales, convolutions. *fused is set
 * for a fused experts tensor. */
static bool module_of(struct ctq_arena *a, const struct ctq_tensor_name *t,
		      struct tensor_module *out, size_t *k, bool *fused)
{
	static const char *const suffix[] = {".weight", ".weight_packed"};
	size_t n = strlen(t->name);
	for (size_t i = 0; t->ndim == 2 && i < sizeof suffix / sizeof *suffix; i++) {
		size_t sl = strlen(suffix[i]);
		if (n > sl && !strcmp(t->name + n - sl, suffix[i])) {
			out[*k].name = ctq_arena_printf(a, "%.*s", (int)(n - sl), t->name);
			out[*k].out = i == 0 && t->shape ? t->shape[0] : 0;
			out[*k].in = i == 0 && t->shape ? t->shape[1] : 0;
			if (!out[*k].name)
				return false;
			(*k)++;
			return true;
		}
	}
	static const char *const fused3[] = {".experts.gate_up_proj", ".experts.down_proj"};
	for (int f = 0; t->ndim == 3 && t->shape && f < 2; f++) {
		size_t sl = strlen(fused3[f]);
		if (n <= sl || strcmp(t->name + n - sl, fused3[f]))
			continue;
		const int64_t E = t->shape[0], O = f ? t->shape[1] : t->shape[1] / 2, In = t->shape[2];
		*fused = true;
		for (int64_t e = 0; e < E; e++)
			for (int p = 0; p < (f ? 1 : 2); p++) {
				out[*k].name = ctq_arena_printf(a, "%.*s.experts.%lld.%s",
								(int)(n - sl), t->name, (long long)e,
								f ? "down_proj" : p ? "up_proj" : "gate_proj");
				out[*k].out = O;
				out[*k].in = In;
				if (!out[*k].name)
					return false;
				(*k)++;
			}
		return true;
	}
	return true;
}

/* The module of sorted mods[0..n) named name, or NULL. */
static const struct tensor_module *find_module(const struct tensor_module *mods, size_t n,
					       const char *name)
{
	struct tensor_module key = {name, 0, 0};
	return bsearch(&key, mods, n, sizeof *mods, cmp_module);
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
	/* mods: one per 2-D weight, 3 per expert of a fused 3-D tensor. */
	size_t cap = n + 1;
	for (size_t i = 0; i < n; i++)
		if (t[i].ndim == 3 && t[i].shape && t[i].shape[0] > 0 && t[i].shape[0] <= (1 << 16))
			cap += 2 * (size_t)t[i].shape[0];
	struct tensor_module *mods = ctq_arena_calloc(&scratch, cap, sizeof *mods);
	size_t n_mods = 0;
	bool fused_experts = false;
	if (!names || !mods) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, "tensors", "out of memory");
		goto done;
	}
	/* mods: the tensors' modules in name order (a checkpoint lists its
	 * tensors sorted; a suite case in any order). */
	const char *prefix = NULL;
	for (size_t i = 0; i < n; i++) {
		names[i] = t[i].name;
		if (t[i].ndim == 3 && t[i].shape && (t[i].shape[0] <= 0 || t[i].shape[0] > (1 << 16)))
			continue;
		if (!module_of(&scratch, &t[i], mods, &n_mods, &fused_experts)) {
			st = ctq_error_set(err, CTQ_ERR_NOMEM, "tensors", "out of memory");
			goto done;
		}
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
	const struct ctq_arch *arch = config_arch(config);
	for (size_t i = 0; i < n_mods && !prefix; i++)
		if (leaf_is(mods[i].name, "embed_tokens"))
			prefix = ctq_arena_printf(&scratch, "%.*s",
						  (int)(strlen(mods[i].name) - strlen("embed_tokens")),
						  mods[i].name);
	/* A MoE config without its expert count takes the checkpoint's: the
	 * experts of its first block (a config that names one must match). */
	cJSON *dup = NULL;
	if (arch && arch->moe_parent &&
	    !ctq_json_get(ctq_hf_config_text(config, NULL), expert_count_key(arch))) {
		long experts = 0, e;
		size_t blen;
		int proj;
		for (size_t i = 0; i < n_mods; i++)
			if (expert_of(mods[i].name, &blen, &e, &proj) && e + 1 > experts)
				experts = e + 1;
		dup = cJSON_Duplicate(config, 1);
		cJSON *text = dup ? (cJSON *)ctq_hf_config_text(dup, NULL) : NULL;
		if (!text || (experts && !cJSON_AddNumberToObject(text, expert_count_key(arch),
								  (double)experts))) {
			cJSON_Delete(dup);
			st = ctq_error_set(err, CTQ_ERR_NOMEM, "tensors", "out of memory");
			goto done;
		}
	}
	if ((arch || config_dit(config)) &&
	    (st = from_config(&known, dup ? dup : config, path, prefix, false, err))) {
		cJSON_Delete(dup);
		goto done;
	}
	cJSON_Delete(dup);
	for (size_t i = 0; i < known.n; i++) {
		const struct ctq_module *k = &known.v[i];
		const char *name = k->name;
		bool weight = k->kind == CTQ_MODULE_LINEAR || k->kind == CTQ_MODULE_EMBEDDING;
		const struct tensor_module *tm = find_module(mods, n_mods, name);
		if (weight && !tm && !holds(names, n, &scratch, name) && !strcmp(name, "lm_head")) {
			/* Llava's language_model.lm_head, or a tied head the resolvers keep. */
			for (size_t j = 0; j < n_mods; j++)
				if (leaf_is(mods[j].name, "lm_head")) {
					name = mods[j].name;
					break;
				}
			if (name == k->name && known.shape.tie_word_embeddings)
				weight = false;
		}
		if (weight && !tm && !holds(names, n, &scratch, name)) {
			st = ctq_error_set(err, CTQ_ERR_CHECKPOINT, name,
					   "is a module of the config's %s tree, but the checkpoint holds no %s.weight (a checkpoint of another architecture?)",
					   known.shape.arch, name);
			goto done;
		}
		/* Per-expert tensors (transformers 4's layout, the hub's): the
		 * experts are Linears and the router an nn.Linear, as
		 * compressed-tensors sees them on transformers 4. */
		static const char *const lin[] = {"Linear", "Module"};
		bool t4_router = !fused_experts && arch && arch->ct_fused_experts &&
				 k->kind == CTQ_MODULE_OTHER && arch->router_class && k->n_types &&
				 !strcmp(k->types[0], arch->router_class);
		if ((st = ctq_modules_add(&r, name, t4_router ? lin : k->types,
					  t4_router ? 2 : k->n_types, k->vllm_type, err)))
			goto done;
		struct ctq_module *nm = &r.v[r.n - 1];
		/* A Linear outside the Llama layout (experts, shared experts, MLA,
		 * towers, DiT blocks) whose tensor has another shape than the
		 * config's tree gives: transformers refuses such a checkpoint
		 * (size mismatch); the Llama layout's are the quantizer's check. */
		if (tm && tm->out && k->out_features && k->in_features && k->kind == CTQ_MODULE_LINEAR &&
		    strcmp(name, "lm_head") && ctq_hf_linear_of(&known, k) < 0 &&
		    (tm->out != k->out_features || tm->in != k->in_features)) {
			st = ctq_error_set(err, CTQ_ERR_CHECKPOINT, name,
					   "holds a [%lld, %lld] weight but the config's %s tree makes it [%lld, %lld]; transformers refuses such a checkpoint (size mismatch)",
					   (long long)tm->out, (long long)tm->in, known.shape.arch,
					   (long long)k->out_features, (long long)k->in_features);
			goto done;
		}
		nm->vllm_unquantized = k->vllm_unquantized;
		nm->router = k->router;
		if (k->ct_name && !(nm->ct_name = ctq_arena_strdup(&r.arena, k->ct_name))) {
			st = ctq_error_set(err, CTQ_ERR_NOMEM, name, "out of memory");
			goto done;
		}
		nm->ct_fused = k->ct_fused && fused_experts;
		nm->out_features = tm && tm->out ? tm->out : k->out_features;
		nm->in_features = tm && tm->in ? tm->in : k->in_features;
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
	r.vnames = known.vnames;
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

/* Expert e's projection (0 gate, 1 up, 2 down) when name is
 * <block>.<e>.<leaf> with block ending in ".experts" and leaf one of the
 * layouts' names (gate_proj / up_proj / down_proj; Mixtral's w1 / w3 / w2);
 * *blen is the length of <block>. */
static bool expert_of(const char *name, size_t *blen, long *e, int *proj)
{
	static const char *const leaves[2][3] = {{"gate_proj", "up_proj", "down_proj"},
						 {"w1", "w3", "w2"}};
	const char *x = NULL;
	for (const char *p = strstr(name, ".experts."); p; p = strstr(p + 1, ".experts."))
		x = p;
	if (!x)
		return false;
	const char *d = x + strlen(".experts.");
	char *end;
	long v = strtol(d, &end, 10);
	if (end == d || *end != '.' || v < 0 || !isdigit((unsigned char)*d))
		return false;
	for (int l = 0; l < 2; l++)
		for (int k = 0; k < 3; k++)
			if (!strcmp(end + 1, leaves[l][k])) {
				*blen = (size_t)(x - name) + strlen(".experts");
				*e = v;
				*proj = k;
				return true;
			}
	return false;
}

/* The MoE blocks of m: every Linear named <parent>.experts.<e>.<leaf>,
 * grouped by <parent>.experts (vLLM's FusedMoE prefix). */
static enum ctq_status find_moe(struct ctq_modules *m, struct ctq_error *err)
{
	size_t cap = 0, blen;
	long e;
	int proj;
	for (int pass = 0; pass < 2; pass++) {
		m->n_moe = 0;
		long last = -1;
		for (size_t i = 0; i < m->n; i++) {
			struct ctq_module *mod = &m->v[i];
			if (mod->kind != CTQ_MODULE_LINEAR || !expert_of(mod->name, &blen, &e, &proj))
				continue;
			long b = -1;
			if (last >= 0 && strlen(m->moe[last].runtime_name) == blen &&
			    !strncmp(m->moe[last].runtime_name, mod->name, blen))
				b = last;
			for (size_t k = 0; b < 0 && k < m->n_moe; k++)
				if (strlen(m->moe[k].runtime_name) == blen &&
				    !strncmp(m->moe[k].runtime_name, mod->name, blen))
					b = (long)k;
			if (b < 0) {
				b = (long)m->n_moe++;
				if (pass == 0 && m->n_moe > cap) {
					size_t c = cap ? cap * 2 : 8;
					struct ctq_moe_block *v = ctq_arena_calloc(&m->arena, c, sizeof *v);
					if (!v)
						return ctq_error_set(err, CTQ_ERR_NOMEM, mod->name, "out of memory");
					if (cap)
						memcpy(v, m->moe, cap * sizeof *v);
					m->moe = v;
					cap = c;
				}
				if (pass == 0) {
					m->moe[b].runtime_name = ctq_arena_printf(&m->arena, "%.*s", (int)blen,
										 mod->name);
					if (!m->moe[b].runtime_name)
						return ctq_error_set(err, CTQ_ERR_NOMEM, mod->name, "out of memory");
				}
			}
			last = b;
			struct ctq_moe_block *blk = &m->moe[b];
			if (pass == 0) {
				if ((size_t)e + 1 > blk->n_experts)
					blk->n_experts = (size_t)e + 1;
				continue;
			}
			blk->member[(size_t)e * 3 + (size_t)proj] = (long)i;
			mod->moe = (int)b;
			mod->expert = (int)e;
			mod->expert_proj = proj;
		}
		for (size_t k = 0; pass == 0 && k < m->n_moe; k++) {
			struct ctq_moe_block *blk = &m->moe[k];
			blk->member = ctq_arena_alloc(&m->arena, blk->n_experts * 3 * sizeof *blk->member);
			if (!blk->member)
				return ctq_error_set(err, CTQ_ERR_NOMEM, blk->runtime_name, "out of memory");
			for (size_t j = 0; j < blk->n_experts * 3; j++)
				blk->member[j] = -1;
		}
	}
	return CTQ_OK;
}

enum ctq_status ctq_modules_finish(struct ctq_modules *m, struct ctq_error *err)
{
	m->fused = ctq_arena_calloc(&m->arena, m->n / 2 + 1, sizeof *m->fused);
	m->n_fused = 0;
	if (!m->fused)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "modules", "out of memory");
	for (size_t i = 0; i < m->n; i++) /* a second finish re-derives */
		m->v[i].fused = m->v[i].moe = m->v[i].expert = m->v[i].expert_proj = -1;
	enum ctq_status st = find_moe(m, err);
	if (st)
		return st;
	for (size_t i = 0; i < m->n; i++) {
		struct ctq_module *mod = &m->v[i];
		if (mod->kind != CTQ_MODULE_LINEAR || mod->fused >= 0 || mod->moe >= 0)
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
			if (idx[1] >= 0 && m->shape.vllm_gate_up_unpacked)
				m->fused[m->n_fused - 1].unpacked = true;
		} else if (leaf_is(mod->name, "q_a_proj")) {
			/* vLLM deepseek_v2.py: fused_qkv_a_proj =
			 * MergedColumnParallelLinear(hidden, [q_lora_rank,
			 * kv_lora_rank + qk_rope_head_dim]), packed_modules_mapping
			 * "fused_qkv_a_proj": ["q_a_proj", "kv_a_proj_with_mqa"]. */
			long idx[2] = {(long)i, sibling(m, i, "kv_a_proj_with_mqa")};
			if (idx[1] >= 0 &&
			    (st = add_fused(m, idx, 2, "fused_qkv_a_proj",
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
			else if (mod->moe >= 0)
				mod->vllm_type = "FusedMoE";
			else if (mod->vllm_unquantized || leaf_is(mod->name, "kv_a_proj_with_mqa"))
				/* routers (quant_config=None); DeepSeek without
				 * q_lora_rank: kv_a_proj_with_mqa = ReplicatedLinear(...,
				 * quant_config) (deepseek_v2.py) */
				mod->vllm_type = "ReplicatedLinear";
			else if (leaf_is(mod->name, "qkv_proj"))
				mod->vllm_type = "QKVParallelLinear"; /* Phi-3, stored fused */
			else if (leaf_is(mod->name, "gate_up_proj"))
				mod->vllm_type = "MergedColumnParallelLinear";
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
