/* ctq resolver internals shared by quant/resolve.c (the profiles) and
 * quant/resolve_moe.c (mixture-of-experts blocks): the resolution context
 * and the helpers both use. Not a public header: only those two files
 * include it. */
#ifndef CTQ_QUANT_RESOLVE_CTX_H
#define CTQ_QUANT_RESOLVE_CTX_H

#include "quant/resolve.h"

enum level { LV_NAME, LV_REGEX, LV_TYPE, LV_NONE };

/* One entry of the target map: a unique target string and the group it
 * resolves to (ct/vllm: the last group listing it; strict keeps all). */
struct tmap {
	const char *target;
	const char *vtarget;  /* vllm: the target as apply_vllm_mapper left it */
	const char *path;
	long group;
};

struct ctx {
	struct ctq_plan *plan;
	const struct ctq_qconfig *cfg;
	const struct ctq_modules *mods;
	struct ctq_regex_cache *rc;
	struct ctq_error *err;
	struct tmap *map;     /* ct/vllm target map, in first-position order */
	size_t n_map;
	size_t *ct_order;     /* ct: map indices sorted by ("re:" in t, t) */
	bool *dropped;        /* vllm: attention groups dropped (per group) */
	const char **vignore; /* vllm: the ignore entries as apply_vllm_mapper left them */
};

/* out-of-memory into c->err. */
enum ctq_status ctq_resolve_nomem(struct ctx *c);

/* Records a module error cls with a printf message on e (CTQ_OK, or
 * out-of-memory). */
enum ctq_status ctq_resolve_set_error(struct ctx *c, struct ctq_plan_entry *e, enum ctq_status cls,
				      const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* vLLM: resolves the runtime layer of module m (fs: its fused set, or NULL)
 * into e — ignore, then name / regex, class substring, shards. */
enum ctq_status ctq_resolve_vllm_layer(struct ctx *c, struct ctq_plan_entry *e,
				       const struct ctq_module *m, const struct ctq_fused_set *fs);

/* ---- quant/resolve_names.c ---- */

/* A name as vLLM has it (struct ctq_vllm_names): a layer's runtime name
 * (layer), or a target / ignore entry after apply_vllm_mapper; NULL when out
 * of memory. */
const char *ctq_resolve_vmap(struct ctx *c, const char *name, bool layer);

/* vllm: c->vignore and the map's vtarget, where the model's layers have
 * names of their own (c->mods->vnames). */
enum ctq_status ctq_resolve_vllm_names(struct ctx *c);

/* ---- quant/resolve_moe.c ---- */

/* vLLM: resolves MoE block b as FusedMoE does and copies the answer to
 * every expert of the block. */
enum ctq_status ctq_resolve_moe_vllm(struct ctx *c, size_t b);

/* strict: one scheme across each expert's gate, up and down
 * (fused-mismatch on all three otherwise), as vLLM's fused kernel runs them. */
enum ctq_status ctq_resolve_moe_strict(struct ctx *c);

/* strict: the engine divergence of expert module i, whose strict entry
 * resolved without error, against compressed-tensors' (ct) and vLLM's
 * (vllm) plans; *handled false when i is no expert. */
enum ctq_status ctq_resolve_moe_diverge(struct ctx *c, size_t i, const struct ctq_plan *ct,
					const struct ctq_plan *vllm, bool *handled);

#endif
