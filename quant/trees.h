/* ctq module trees beyond a decoder-only language model, as
 * quant/modules.c's enumeration adds them: the vision tower and projector
 * of a vision-language config, and a diffusion transformer. Internal to
 * quant/ (modules.c and trees.c). */
#ifndef CTQ_QUANT_TREES_H
#define CTQ_QUANT_TREES_H

#include "quant/arch.h"
#include "quant/modules.h"

/* Adds the vision tower and projector Linears (and position Embeddings)
 * of a vision-language config to m: Llava (model_type llava, a CLIP or
 * SigLIP vision_config; vision_tower.vision_model.encoder.layers.N.
 * {self_attn.{q,k,v,out}_proj, mlp.fc1, mlp.fc2}, multi_modal_projector.
 * linear_1 / linear_2) or Qwen3-VL (model_type qwen3_vl; visual.blocks.N.
 * {attn.qkv, attn.proj, mlp.linear_fc1, mlp.linear_fc2}, visual.merger,
 * visual.deepstack_merger_list.K), under the root the text prefix gives
 * ("model.language_model." -> "model."). Other configs: nothing. path
 * names the config in errors. Errors: invalid-config (a vision_config
 * without its layer count), out-of-memory. */
enum ctq_status ctq_trees_vision(struct ctq_modules *m, const cJSON *config, const char *path,
				 const char *text_prefix, struct ctq_error *err);

/* Enumerates the diffusion transformer d of a diffusers config.json
 * (num_layers, num_attention_heads, attention_head_dim, in_channels,
 * out_channels, joint_attention_dim, patch_size) into m and finishes it.
 * Errors: invalid-config (a field missing or out of range), out-of-memory. */
enum ctq_status ctq_trees_dit(struct ctq_modules *m, const struct ctq_dit_arch *d,
			      const cJSON *config, const char *path, struct ctq_error *err);

#endif
