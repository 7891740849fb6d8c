/* ctq resolver: mixture-of-experts blocks under each profile (see
 * resolve_ctx.h and docs/semantics.md, "Mixture of experts").
 *
 * vllm    vLLM 0.26.0 runs a block as one FusedMoE layer (prefix
 *         <parent>.experts) and decides its method once, in
 *         compressed_tensors_moe.py CompressedTensorsMoEMethod.get_moe_method:
 *         the scheme dicts of the names <prefix>.0.gate_proj, .0.up_proj and
 *         .0.down_proj (get_scheme_dict: ignore first, then the target map,
 *         "Linear" extended to FusedMoE) must be equal ("All MoE projections
 *         need to have same quantization scheme but found multiple"), None is
 *         UnquantizedFusedMoEMethod, and the method follows the weights and
 *         activations; every expert runs it. Those are the names vLLM asks
 *         about even where the checkpoint says w1 / w3 / w2 (Mixtral).
 * ct      per expert, in resolve.c (ct_module): a Linear in transformers 4's
 *         per-expert layout, nothing in transformers 5's fused one.
 * strict  per expert like any Linear, plus the rules here: one scheme across
 *         an expert's gate / up / down, and every expert as vLLM runs it
 *         (expert 0's scheme), else engine-divergent. */
#include "quant/resolve_ctx.h"
#include "quant/scheme.h"

#include <stdio.h>
#include <string.h>

/* vLLM's FusedMoE method for the Linear scheme class lin that the block's
 * scheme selects (get_moe_method's branches), or NULL with *why set. */
static const char *moe_method(const char *lin, const struct ctq_qscheme *s, const char *format,
			      char *why, size_t cap)
{
	static const struct {
		const char *linear, *moe;
	} map[] = {
		{"CompressedTensorsW8A8Int8", "CompressedTensorsW8A8Int8MoEMethod"},
		{"CompressedTensorsW8A8Fp8", "CompressedTensorsW8A8Fp8MoEMethod"},
		{"CompressedTensorsWNA16", "CompressedTensorsWNA16MarlinMoEMethod"},
		{"CompressedTensorsW4A8Int", "CompressedTensorsW4A8Int8MoEMethod"},
		{"CompressedTensorsW4A8Fp8", "CompressedTensorsW4A8Fp8MoEMethod"},
		{"CompressedTensorsW4A4Fp4", "CompressedTensorsW4A4Nvfp4MoEMethod"},
		{"CompressedTensorsW4A4Fp4(use_a16)", "CompressedTensorsW4A4Nvfp4MoEMethod"},
		{"CompressedTensorsW4A4Mxfp4", "CompressedTensorsW4A4Mxfp4MoEMethod"},
	};
	const struct ctq_qargs *w = s->weights, *a = s->input;
	if (lin && !strcmp(lin, "CompressedTensorsW8A8Int8") && w->strategy != CTQ_STRATEGY_CHANNEL) {
		/* CompressedTensorsW8A8Int8MoEMethod.__init__ */
		snprintf(why, cap, "ValueError: For INT8 Fused MoE layers, we require channelwise, dynamic per token quantization (weights by %s)",
			 ctq_strategy_name(w->strategy));
		return NULL;
	}
	if (lin && !strcmp(lin, "CompressedTensorsWNA16") &&
	    (!format || strcmp(format, "pack-quantized"))) {
		snprintf(why, cap, "ValueError: For Fused MoE layers, only format: pack-quantized is supported (format %s)",
			 format ? format : "None");
		return NULL;
	}
	for (size_t i = 0; lin && i < sizeof map / sizeof *map; i++)
		if (!strcmp(lin, map[i].linear))
			return map[i].moe;
	snprintf(why, cap, "RuntimeError: Unsupported FusedMoe scheme: weights %s %d-bit by %s, input activations %s",
		 ctq_qtype_name(w->type), w->num_bits, ctq_strategy_name(w->strategy),
		 a ? (a->dynamic == CTQ_DYNAMIC_TRUE ? "dynamic" : "static") : "None");
	return NULL;
}

/* Whether two of the three scheme dicts are equal: both None (ignored or
 * unmatched), or the same scheme and format. */
static bool same_dict(const struct ctq_plan_entry *a, const struct ctq_plan_entry *b)
{
	if ((a->group < 0) != (b->group < 0))
		return false;
	if (a->group < 0 || a->group == b->group)
		return true;
	return !strcmp(a->scheme, b->scheme) &&
	       !strcmp(a->format ? a->format : "", b->format ? b->format : "");
}

enum ctq_status ctq_resolve_moe_vllm(struct ctx *c, size_t b)
{
	const struct ctq_moe_block *blk = &c->mods->moe[b];
	static const char *const proj[3] = {"gate_proj", "up_proj", "down_proj"};
	struct ctq_plan_entry q[3];
	enum ctq_status st;
	for (int p = 0; p < 3; p++) {
		char *name = ctq_arena_printf(&c->plan->arena, "%s.0.%s", blk->runtime_name, proj[p]);
		if (!name)
			return ctq_resolve_nomem(c);
		const struct ctq_module probe = {.name = name, .vllm_type = "FusedMoE",
						 .kind = CTQ_MODULE_LINEAR, .fused = -1, .moe = -1};
		memset(&q[p], 0, sizeof q[p]);
		q[p].group = -1;
		q[p].by = CTQ_BY_DEFAULT;
		if ((st = ctq_resolve_vllm_layer(c, &q[p], &probe, NULL)))
			return st;
	}
	struct ctq_plan_entry r = q[2];
	char why[512] = "";
	enum ctq_status cls = CTQ_OK;
	if (!same_dict(&q[0], &q[2]) || !same_dict(&q[1], &q[2])) {
		cls = CTQ_ERR_FUSED_MISMATCH;
		snprintf(why, sizeof why,
			 "ValueError: All MoE projections need to have same quantization scheme but found multiple (%s.0.gate_proj / up_proj / down_proj: %s, %s, %s)",
			 blk->runtime_name, q[0].error ? "error" : q[0].scheme,
			 q[1].error ? "error" : q[1].scheme, q[2].error ? "error" : q[2].scheme);
	} else if (r.group >= 0 && !r.error && strcmp(r.scheme, "unquantized")) {
		const struct ctq_qgroup *g = &c->cfg->groups[r.group];
		const char *m = moe_method(r.vllm_class, &g->scheme, r.format, why, sizeof why);
		if (m) {
			r.vllm_class = m;
		} else {
			cls = CTQ_ERR_UNSUPPORTED_SCHEME;
		}
	} else if (r.error) {
		cls = r.error;
		const char *rest = strchr(r.message, ':');
		snprintf(why, sizeof why, "%s", rest ? rest + 2 : r.message);
	} else {
		r.scheme = "unquantized";
		r.vllm_class = "UnquantizedFusedMoEMethod";
	}
	for (size_t k = 0; k < blk->n_experts * 3; k++) {
		if (blk->member[k] < 0)
			continue;
		struct ctq_plan_entry *e = &c->plan->entries[blk->member[k]];
		const char *name = c->mods->v[blk->member[k]].name;
		if (cls) {
			if ((st = ctq_resolve_set_error(c, e, cls, "%s: vLLM's FusedMoE %s (decided from %s.0): %s",
							name, blk->runtime_name, blk->runtime_name, why)))
				return st;
			continue;
		}
		size_t module = e->module;
		*e = r;
		e->module = module;
	}
	return CTQ_OK;
}

enum ctq_status ctq_resolve_moe_strict(struct ctx *c)
{
	enum ctq_status st;
	for (size_t b = 0; b < c->mods->n_moe; b++) {
		const struct ctq_moe_block *blk = &c->mods->moe[b];
		for (size_t x = 0; x < blk->n_experts; x++) {
			struct ctq_plan_entry *e[3] = {NULL, NULL, NULL};
			bool clean = true, same = true;
			for (int p = 0; p < 3; p++) {
				long i = blk->member[x * 3 + (size_t)p];
				e[p] = i >= 0 ? &c->plan->entries[i] : NULL;
				clean = clean && e[p] && !e[p]->error;
			}
			if (!clean)
				continue;
			for (int p = 1; p < 3; p++)
				same = same && e[p]->group == e[0]->group &&
				       !strcmp(e[p]->scheme, e[0]->scheme);
			if (same)
				continue;
			const char *n[3];
			for (int p = 0; p < 3; p++)
				n[p] = c->mods->v[blk->member[x * 3 + (size_t)p]].name;
			char d[3][160];
			for (int p = 0; p < 3; p++)
				snprintf(d[p], sizeof d[p], "%s%s%s", e[p]->scheme,
					 e[p]->group >= 0 ? " from " : "",
					 e[p]->group >= 0 ? c->cfg->groups[e[p]->group].name : "");
			for (int p = 0; p < 3; p++)
				if ((st = ctq_resolve_set_error(c, e[p], CTQ_ERR_FUSED_MISMATCH,
								"%s: expert %zu of %s resolves to %s (gate), %s (up), %s (down); vLLM's fused MoE kernel runs an expert's gate, up and down with one scheme (%s, %s, %s)",
								n[p], x, blk->runtime_name, d[0], d[1], d[2],
								n[0], n[1], n[2])))
					return st;
		}
	}
	return CTQ_OK;
}

enum ctq_status ctq_resolve_moe_diverge(struct ctx *c, size_t i, const struct ctq_plan *ct,
					const struct ctq_plan *vllm, bool *handled)
{
	const struct ctq_module *m = &c->mods->v[i];
	struct ctq_plan_entry *e = &c->plan->entries[i];
	const struct ctq_plan_entry *a = &ct->entries[i], *v = &vllm->entries[i];
	*handled = m->moe >= 0;
	if (!*handled || e->error)
		return CTQ_OK;
	const char *blk = c->mods->moe[m->moe].runtime_name;
	const bool sq = strcmp(e->scheme, "unquantized") != 0;
	if (v->error)
		return ctq_resolve_set_error(c, e, CTQ_ERR_ENGINE_DIVERGENT,
					     "%s: the engines diverge: ctq resolves %s, vLLM refuses the FusedMoE block %s (%s)",
					     m->name, e->scheme, blk, v->message);
	const bool vq = strcmp(v->scheme, "unquantized") != 0;
	if (sq != vq || (sq && v->group != e->group))
		return ctq_resolve_set_error(c, e, CTQ_ERR_ENGINE_DIVERGENT,
					     "%s: the engines diverge: this expert resolves to %s%s%s, but vLLM runs the whole FusedMoE %s with what %s.0.{gate,up,down}_proj resolve to (%s%s%s; compressed_tensors_moe.py get_moe_method) — give every expert of a block one scheme (an ignore or a group must cover all experts or none)",
					     m->name, e->scheme, e->group >= 0 ? " from " : "",
					     e->group >= 0 ? c->cfg->groups[e->group].name : "", blk, blk,
					     v->scheme, v->group >= 0 ? " from " : "",
					     v->group >= 0 ? c->cfg->groups[v->group].name : "");
	const bool aq = !a->error && strcmp(a->scheme, "unquantized") != 0;
	if (a->error || aq != sq)
		return ctq_resolve_set_error(c, e, CTQ_ERR_ENGINE_DIVERGENT,
					     m->ct_fused
					     ? "%s: the engines diverge: vLLM runs it %s, but compressed-tensors on transformers 5 holds the experts fused in one module of 3-D parameters (no Linear, no module of this name), so no target gives them a scheme (%s) — quantize MoE checkpoints in the per-expert layout, or leave the experts unquantized"
					     : "%s: the engines diverge: vLLM runs it %s, compressed-tensors gives %s",
					     m->name, e->scheme, a->error ? a->message : a->scheme);
	return CTQ_OK;
}
