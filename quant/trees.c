/* ctq module trees beyond a decoder-only language model (see trees.h).
 * Names and classes from transformers' models/llava/modeling_llava.py,
 * models/clip/modeling_clip.py, models/siglip/modeling_siglip.py,
 * models/qwen3_vl/modeling_qwen3_vl.py and diffusers'
 * models/transformers/transformer_qwenimage.py. */
#include "quant/trees.h"
#include "core/json.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const linear[] = {"Linear", "Module"};
static const char *const embedding[] = {"Embedding", "Module"};

/* Adds a Linear (or, embed, an Embedding) of (o, i) features named by the
 * printf format; vllm_type may be NULL (derived by ctq_modules_finish). */
static enum ctq_status add(struct ctq_modules *m, bool embed, const char *vllm_type, long o, long i,
			   struct ctq_error *err, const char *fmt, ...) __attribute__((format(printf, 7, 8)));

static enum ctq_status add(struct ctq_modules *m, bool embed, const char *vllm_type, long o, long i,
			   struct ctq_error *err, const char *fmt, ...)
{
	char name[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(name, sizeof name, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof name)
		return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, "modules", "a module name is longer than %zu bytes",
				     sizeof name - 1);
	enum ctq_status st = ctq_modules_add(m, name, embed ? embedding : linear, 2, vllm_type, err);
	if (!st) {
		m->v[m->n - 1].out_features = o > 0 ? o : 0;
		m->v[m->n - 1].in_features = i > 0 ? i : 0;
	}
	return st;
}

static enum ctq_status add_aux(struct ctq_modules *m, const char *cls, struct ctq_error *err,
			       const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static enum ctq_status add_aux(struct ctq_modules *m, const char *cls, struct ctq_error *err,
			       const char *fmt, ...)
{
	char name[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(name, sizeof name, fmt, ap);
	va_end(ap);
	const char *types[] = {cls, "Module"};
	return ctq_modules_add_aux(m, name, types, 2, err);
}

/* o[key] into *out when present (an integer in [lo, INT_MAX]); required
 * fields missing are invalid-config at base.key. */
static enum ctq_status field(const cJSON *o, const char *base, const char *key, bool required,
			     long lo, long *out, struct ctq_error *err)
{
	char p[CTQ_PATH_MAX];
	ctq_json_path_key(p, sizeof p, base, key);
	const cJSON *it = ctq_json_get(o, key);
	if (!it || cJSON_IsNull(it))
		return required ? ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, p,
						"is missing; needed to enumerate the model's modules")
				: CTQ_OK;
	return ctq_json_int(it, p, lo, INT_MAX, out, err);
}

#define TRY(x)                        \
	do {                          \
		if ((st = (x)))       \
			return st;    \
	} while (0)

/* Llava's CLIP / SigLIP tower and LlavaMultiModalProjector; Gemma 3's
 * SigLIP tower (its Gemma3MultiModalProjector holds a weight parameter, no
 * Linear: projector false). */
static enum ctq_status llava(struct ctq_modules *m, const cJSON *config, const cJSON *vc,
			     const char *base, const char *root, bool projector, struct ctq_error *err)
{
	enum ctq_status st;
	long layers = 0, hs = 768, is = 3072, image = 224, patch = 16;
	TRY(field(vc, base, "num_hidden_layers", true, 1, &layers, err));
	TRY(field(vc, base, "hidden_size", false, 1, &hs, err));
	TRY(field(vc, base, "intermediate_size", false, 1, &is, err));
	TRY(field(vc, base, "image_size", false, 1, &image, err));
	TRY(field(vc, base, "patch_size", false, 1, &patch, err));
	if (layers > CTQ_MODULES_MAX_LAYERS)
		return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, base, "num_hidden_layers is %ld; at most %d",
				     layers, CTQ_MODULES_MAX_LAYERS);
	const cJSON *vmt = ctq_json_get(vc, "model_type");
	const bool clip = cJSON_IsString(vmt) && !strncmp(vmt->valuestring, "clip", 4);
	const char *fam = clip ? "CLIP" : "Siglip";
	const long grid = image / patch, positions = grid * grid + (clip ? 1 : 0);
	char cls[64];
	const char *t = "vision_tower.vision_model.";
	/* vLLM llava.py builds the tower up to vision_feature_layer
	 * (_get_num_hidden_layers, utils.py get_layer_index: n + index + 1 for
	 * a negative index, the index itself otherwise; a list: the deepest;
	 * LlavaConfig's default -2): the layers above are never built, never
	 * quantized. Only Llava (projector); Gemma 3's tower is whole. */
	long built = layers;
	if (projector) {
		const cJSON *fl = ctq_json_get(config, "vision_feature_layer");
		long deepest = -1;
		bool any = false;
		if (!fl)
			deepest = layers - 2 + 1, any = true;
		for (const cJSON *x = cJSON_IsArray(fl) ? fl->child : fl; x; x = cJSON_IsArray(fl) ? x->next : NULL) {
			if (!cJSON_IsNumber(x))
				continue;
			long v = (long)x->valuedouble, n = v < 0 ? layers + v + 1 : v;
			if (!any || n > deepest)
				deepest = n;
			any = true;
		}
		if (any && deepest >= 0 && deepest < layers)
			built = deepest;
	}
	const size_t first = m->n;
	TRY(add(m, true, NULL, positions, hs, err, "%s%sembeddings.position_embedding", root, t));
	/* CLIPVisionEmbeddings / SiglipVisionEmbeddings: position_embedding is
	 * an nn.Embedding in vLLM (clip.py, siglip.py), never quantized there */
	m->v[m->n - 1].vllm_unquantized = true;
	for (long l = 0; l < layers; l++) {
		const size_t lfirst = m->n;
		snprintf(cls, sizeof cls, "%sEncoderLayer", fam);
		TRY(add_aux(m, cls, err, "%s%sencoder.layers.%ld", root, t, l));
		static const char *const qkv[] = {"q_proj", "k_proj", "v_proj"};
		for (int k = 0; k < 3; k++)
			TRY(add(m, false, NULL, hs, hs, err, "%s%sencoder.layers.%ld.self_attn.%s", root, t, l,
				qkv[k]));
		TRY(add(m, false, "RowParallelLinear", hs, hs, err, "%s%sencoder.layers.%ld.self_attn.out_proj",
			root, t, l));
		TRY(add(m, false, "ColumnParallelLinear", is, hs, err, "%s%sencoder.layers.%ld.mlp.fc1", root, t, l));
		TRY(add(m, false, "RowParallelLinear", hs, is, err, "%s%sencoder.layers.%ld.mlp.fc2", root, t, l));
		for (size_t k = lfirst; l >= built && k < m->n; k++)
			m->v[k].vllm_unquantized = true;
	}
	/* SiglipVisionModel's attention-pooling head (vision_use_head, default
	 * true; modeling_siglip.py SiglipMultiheadAttentionPoolingHead: an
	 * nn.MultiheadAttention whose out_proj is a NonDynamicallyQuantizableLinear,
	 * and an MLP). vLLM's Llava builds its SigLIP tower with use_head=False
	 * (siglip.py): never quantized there. */
	const cJSON *uh = ctq_json_get(vc, "vision_use_head");
	if (projector && !clip && !cJSON_IsFalse(uh)) {
		static const char *const ndq[] = {"NonDynamicallyQuantizableLinear", "Linear", "Module"};
		char nm[512];
		snprintf(nm, sizeof nm, "%s%shead.attention.out_proj", root, t);
		TRY(ctq_modules_add(m, nm, ndq, 3, "ColumnParallelLinear", err));
		m->v[m->n - 1].out_features = hs;
		m->v[m->n - 1].in_features = hs;
		TRY(add(m, false, "ColumnParallelLinear", is, hs, err, "%s%shead.mlp.fc1", root, t));
		TRY(add(m, false, "RowParallelLinear", hs, is, err, "%s%shead.mlp.fc2", root, t));
		for (size_t k = m->n - 3; k < m->n; k++)
			m->v[k].vllm_unquantized = true;
	}
	/* transformers 5.23 loads a Llava's CLIP or SigLIP tower without its
	 * vision_model level (conversion_mapping.py "CLIPVisionModel":
	 * PrefixChange(prefix_to_remove="vision_model"), SiglipVisionModel mapped
	 * to it): compressed-tensors sees model.vision_tower.encoder... */
	for (size_t k = first; projector && k < m->n; k++) {
		const char *nm = m->v[k].name, *at = strstr(nm, "vision_tower.vision_model.");
		if (!at)
			continue;
		m->v[k].ct_name = ctq_arena_printf(&m->arena, "%.*svision_tower.%s", (int)(at - nm), nm,
						   at + strlen("vision_tower.vision_model."));
		if (!m->v[k].ct_name)
			return ctq_error_set(err, CTQ_ERR_NOMEM, nm, "out of memory");
	}
	if (!projector)
		return CTQ_OK;
	/* LlavaMultiModalProjector: linear_1 (text hidden, vision hidden x the
	 * feature layers it concatenates), linear_2 (text hidden, text hidden). */
	long th = 0;
	const cJSON *tc = ctq_json_get(config, "text_config");
	TRY(field(tc, "text_config", "hidden_size", false, 1, &th, err));
	const cJSON *fl = ctq_json_get(config, "vision_feature_layer");
	const long nfl = cJSON_IsArray(fl) ? cJSON_GetArraySize(fl) : 1;
	TRY(add(m, false, "ColumnParallelLinear", th, hs * nfl, err, "%smulti_modal_projector.linear_1", root));
	TRY(add(m, false, "RowParallelLinear", th, th, err, "%smulti_modal_projector.linear_2", root));
	return CTQ_OK;
}

/* Qwen3-VL's Qwen3VLVisionModel: blocks, the patch merger and the
 * deepstack mergers (Qwen3VLVisionPatchMerger: linear_fc1 over
 * spatial_merge_size^2 patches, linear_fc2 to out_hidden_size). */
static enum ctq_status qwen3_vl(struct ctq_modules *m, const cJSON *vc, const char *base,
				const char *root, struct ctq_error *err)
{
	enum ctq_status st;
	long depth = 0, hs = 1152, is = 4304, out = 0, merge = 2, pos = 2304;
	TRY(field(vc, base, "depth", true, 1, &depth, err));
	TRY(field(vc, base, "hidden_size", false, 1, &hs, err));
	TRY(field(vc, base, "intermediate_size", false, 1, &is, err));
	TRY(field(vc, base, "out_hidden_size", false, 1, &out, err));
	TRY(field(vc, base, "spatial_merge_size", false, 1, &merge, err));
	TRY(field(vc, base, "num_position_embeddings", false, 1, &pos, err));
	if (depth > CTQ_MODULES_MAX_LAYERS)
		return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, base, "depth is %ld; at most %d", depth,
				     CTQ_MODULES_MAX_LAYERS);
	TRY(add(m, true, NULL, pos, hs, err, "%svisual.pos_embed", root));
	m->v[m->n - 1].vllm_unquantized = true; /* vLLM qwen3_vl.py: nn.Embedding */
	for (long l = 0; l < depth; l++) {
		TRY(add_aux(m, "Qwen3VLVisionBlock", err, "%svisual.blocks.%ld", root, l));
		TRY(add(m, false, "QKVParallelLinear", 3 * hs, hs, err, "%svisual.blocks.%ld.attn.qkv", root, l));
		TRY(add(m, false, "RowParallelLinear", hs, hs, err, "%svisual.blocks.%ld.attn.proj", root, l));
		TRY(add(m, false, "ColumnParallelLinear", is, hs, err, "%svisual.blocks.%ld.mlp.linear_fc1", root, l));
		TRY(add(m, false, "RowParallelLinear", hs, is, err, "%svisual.blocks.%ld.mlp.linear_fc2", root, l));
	}
	const long mh = hs * merge * merge;
	const cJSON *ds = ctq_json_get(vc, "deepstack_visual_indexes");
	const long nds = cJSON_IsArray(ds) ? cJSON_GetArraySize(ds) : 0;
	for (long k = -1; k < nds; k++) {
		char p[96];
		if (k < 0)
			snprintf(p, sizeof p, "visual.merger");
		else
			snprintf(p, sizeof p, "visual.deepstack_merger_list.%ld", k);
		TRY(add(m, false, "ColumnParallelLinear", mh, mh, err, "%s%s.linear_fc1", root, p));
		TRY(add(m, false, "RowParallelLinear", out, mh, err, "%s%s.linear_fc2", root, p));
	}
	return CTQ_OK;
}

enum ctq_status ctq_trees_vision(struct ctq_modules *m, const cJSON *config, const char *path,
				 const char *text_prefix, struct ctq_error *err)
{
	const cJSON *mt = ctq_json_get(config, "model_type");
	const cJSON *vc = ctq_json_get(config, "vision_config");
	if (!cJSON_IsString(mt) || !cJSON_IsObject(vc) || !text_prefix)
		return CTQ_OK;
	/* The tower sits beside the language model: model.language_model. ->
	 * model., language_model.model. -> (nothing). */
	const char *lm = strstr(text_prefix, "language_model.");
	char root[256];
	snprintf(root, sizeof root, "%.*s", lm ? (int)(lm - text_prefix) : 0, text_prefix);
	char base[CTQ_PATH_MAX];
	ctq_json_path_key(base, sizeof base, path ? path : "", "vision_config");
	/* vLLM llava.py / qwen3_vl.py hf_to_vllm_mapper (orig_to_new_prefix)
	 * and where their heads live (LlavaForConditionalGeneration: the
	 * language model's ParallelLMHead, language_model.lm_head;
	 * Qwen3LLMForCausalLM: ParallelLMHead(prefix="lm_head")) */
	static const char *const llava_map[][2] = {
		{"model.language_model.", "language_model.model."}, {"model.vision_tower.", "vision_tower."},
		{"model.multi_modal_projector.", "multi_modal_projector."}, {"lm_head.", "language_model.lm_head."}};
	static const struct ctq_vllm_names llava_names = {llava_map, 4, "language_model.lm_head"};
	static const char *const qwen3_vl_map[][2] = {
		{"model.visual.", "visual."}, {"lm_head.", "language_model.lm_head."},
		{"model.language_model.", "language_model.model."}};
	static const struct ctq_vllm_names qwen3_vl_names = {qwen3_vl_map, 3, NULL};
	if (!strcmp(mt->valuestring, "llava")) {
		m->vnames = &llava_names;
		return llava(m, config, vc, base, root, true, err);
	}
	if (!strcmp(mt->valuestring, "gemma3"))
		return llava(m, config, vc, base, root, false, err);
	if (!strcmp(mt->valuestring, "qwen3_vl")) {
		m->vnames = &qwen3_vl_names;
		return qwen3_vl(m, vc, base, root, err);
	}
	/* A tower ctq cannot list from a config (Mistral3's Pixtral, ...):
	 * refused rather than a plan that silently lacks it. */
	return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, base,
			     "belongs to a %s model, whose vision tower ctq does not enumerate from a config (it does llava, gemma3 and qwen3_vl); give the checkpoint folder: its tensors list the tower",
			     mt->valuestring);
}

enum ctq_status ctq_trees_dit(struct ctq_modules *m, const struct ctq_dit_arch *d,
			      const cJSON *config, const char *path, struct ctq_error *err)
{
	enum ctq_status st;
	const char *b = path ? path : "";
	long layers = 0, heads = 24, hd = 128, in_ch = 64, out_ch = 16, joint = 3584, patch = 2;
	TRY(field(config, b, "num_layers", true, 1, &layers, err));
	TRY(field(config, b, "num_attention_heads", false, 1, &heads, err));
	TRY(field(config, b, "attention_head_dim", false, 1, &hd, err));
	TRY(field(config, b, "in_channels", false, 1, &in_ch, err));
	TRY(field(config, b, "out_channels", false, 1, &out_ch, err));
	TRY(field(config, b, "joint_attention_dim", false, 1, &joint, err));
	TRY(field(config, b, "patch_size", false, 1, &patch, err));
	if (layers > CTQ_MODULES_MAX_LAYERS) {
		char p[CTQ_PATH_MAX];
		ctq_json_path_key(p, sizeof p, b, "num_layers");
		return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, p, "is %ld; expected an integer in [1, %d]",
				     layers, CTQ_MODULES_MAX_LAYERS);
	}
	const long D = heads * hd; /* inner_dim */
	m->shape.arch = d->name;
	m->shape.layers = (int)layers;
	m->shape.hidden_size = D;
	m->shape.num_attention_heads = heads;
	m->shape.num_key_value_heads = heads;
	m->shape.head_dim = hd;
	/* QwenImageTransformer2DModel.__init__ */
	TRY(add(m, false, NULL, D, in_ch, err, "img_in"));
	TRY(add(m, false, NULL, D, joint, err, "txt_in"));
	/* QwenTimestepProjEmbeddings: Timesteps(256) -> TimestepEmbedding(256, D) */
	TRY(add(m, false, NULL, D, 256, err, "time_text_embed.timestep_embedder.linear_1"));
	TRY(add(m, false, NULL, D, D, err, "time_text_embed.timestep_embedder.linear_2"));
	for (long l = 0; l < layers; l++) {
		TRY(add_aux(m, d->block_class, err, "transformer_blocks.%ld", l));
		TRY(add_aux(m, d->attention_class, err, "transformer_blocks.%ld.attn", l));
		static const char *const stream[2] = {"img", "txt"};
		for (int s = 0; s < 2; s++) {
			TRY(add(m, false, NULL, 6 * D, D, err, "transformer_blocks.%ld.%s_mod.1", l, stream[s]));
			TRY(add_aux(m, d->ff_class, err, "transformer_blocks.%ld.%s_mlp", l, stream[s]));
			TRY(add(m, false, NULL, 4 * D, D, err, "transformer_blocks.%ld.%s_mlp.net.0.proj", l,
				stream[s]));
			TRY(add(m, false, NULL, D, 4 * D, err, "transformer_blocks.%ld.%s_mlp.net.2", l, stream[s]));
		}
		static const char *const proj[] = {"to_q", "to_k", "to_v", "add_q_proj", "add_k_proj",
						   "add_v_proj", "to_out.0", "to_add_out"};
		for (size_t k = 0; k < sizeof proj / sizeof *proj; k++)
			TRY(add(m, false, NULL, D, D, err, "transformer_blocks.%ld.attn.%s", l, proj[k]));
	}
	/* AdaLayerNormContinuous(D, D): linear (2 D, D); proj_out to patches. */
	TRY(add(m, false, NULL, 2 * D, D, err, "norm_out.linear"));
	TRY(add(m, false, NULL, patch * patch * out_ch, D, err, "proj_out"));
	return ctq_modules_finish(m, err);
}
