/* ctq resolver: vLLM's names for a model whose layers it names otherwise than
 * the checkpoint (struct ctq_vllm_names in modules.h: Llava, Qwen3-VL), see
 * resolve_ctx.h and docs/semantics.md, "Vision towers". */
#include "quant/resolve_ctx.h"

#include <string.h>

const char *ctq_resolve_vmap(struct ctx *c, const char *name, bool layer)
{
	const struct ctq_vllm_names *vn = c->mods->vnames;
	if (!vn || !name)
		return name;
	if (layer && vn->lm_head && !strcmp(name, "lm_head"))
		return vn->lm_head;
	/* apply_vllm_mapper's _map_target: a layer path has a "." and no "re:" */
	if (!layer && (!strncmp(name, "re:", 3) || !strchr(name, '.')))
		return name;
	for (size_t i = 0; i < vn->n_prefix; i++) {
		size_t n = strlen(vn->prefix[i][0]);
		if (!strncmp(name, vn->prefix[i][0], n))
			return ctq_arena_printf(&c->plan->arena, "%s%s", vn->prefix[i][1], name + n);
	}
	return name;
}

enum ctq_status ctq_resolve_vllm_names(struct ctx *c)
{
	if (!c->mods->vnames)
		return CTQ_OK;
	c->vignore = ctq_arena_calloc(&c->plan->arena, c->cfg->n_ignore + 1, sizeof *c->vignore);
	if (!c->vignore)
		return ctq_resolve_nomem(c);
	for (size_t i = 0; i < c->cfg->n_ignore; i++)
		if (!(c->vignore[i] = ctq_resolve_vmap(c, c->cfg->ignore[i], false)))
			return ctq_resolve_nomem(c);
	for (size_t k = 0; k < c->n_map; k++)
		if (!(c->map[k].vtarget = ctq_resolve_vmap(c, c->map[k].target, false)))
			return ctq_resolve_nomem(c);
	return CTQ_OK;
}
