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

static bool st_is(const struct ctq_qargs *a, enum ctq_strategy x)
{
	return a && a->strategy == x;
}

static bool dyn(const struct ctq_qargs *a)
{
	return a && a->dynamic != CTQ_DYNAMIC_FALSE;
}

static bool flt(const struct ctq_qargs *a, int bits)
{
	return a && a->type == CTQ_QTYPE_FLOAT && a->num_bits == bits;
}

/* vLLM 0.26.0's FusedMoE method for a block whose scheme dict (expert 0's
 * down_proj) holds weights W, input activations A and format (the group's,
 * or the config's: get_scheme_dict fills a missing one in), or NULL with
 * *why set: the branches of
 * compressed_tensors_moe.py CompressedTensorsMoEMethod.get_moe_method in
 * order, with the predicates of compressed_tensors.py, then what each MoE
 * method's constructor refuses. SM 9.0 (ctq's vllm profile); the Marlin MoE
 * kernel taken as supporting the layer (check_moe_marlin_supports_layer:
 * hidden % 128 and the group dividing the intermediate size, true of real
 * models). hidden / inter: the block's widths, 0 when unknown. */
static const char *moe_method(const struct ctq_qscheme *s, const char *format, int64_t hidden,
			      int64_t inter, char *why, size_t cap)
{
	const struct ctq_qargs *W = s->weights, *A = s->input;
	/* _is_mxfp4 / _is_mxfp8 (None-safe) */
	if (W && st_is(W, CTQ_STRATEGY_GROUP) && flt(W, 4) && W->has_group_size && W->group_size == 32 &&
	    W->symmetric)
		return "CompressedTensorsW4A4Mxfp4MoEMethod";
	if (W && st_is(W, CTQ_STRATEGY_GROUP) && flt(W, 8) && W->has_group_size && W->group_size == 32 &&
	    W->symmetric && W->scale_dtype && strstr(W->scale_dtype, "uint8"))
		return "CompressedTensorsW8A8Mxfp8MoEMethod";
	if (!W) {
		/* _is_wNa16_group_channel(None, ...) reads weight_quant.strategy */
		snprintf(why, cap, "AttributeError: 'NoneType' object has no attribute 'strategy' (the block's scheme has no weights)");
		return NULL;
	}
	if ((st_is(W, CTQ_STRATEGY_CHANNEL) || st_is(W, CTQ_STRATEGY_GROUP)) && !A && !dyn(W)) {
		/* WNA16_SUPPORTED_BITS 2..8 and format == pack-quantized; then
		 * CompressedTensorsWNA16MarlinMoEMethod: the scalar type map
		 * (KeyError for asymmetric bits other than 4 / 8) and "only
		 * supports int4 and int8" */
		if (W->num_bits < 2 || W->num_bits > 8 || !format || strcmp(format, "pack-quantized")) {
			snprintf(why, cap, "ValueError: For Fused MoE layers, only format: pack-quantized and bits: [2, 3, 4, 5, 6, 7, 8] is supported but got format: %s and bits: %d",
				 format ? format : "None", W->num_bits);
			return NULL;
		}
		if (W->num_bits != 4 && W->num_bits != 8) {
			snprintf(why, cap, "%s", W->symmetric
				 ? "ValueError: CompressedTensorsWNA16MarlinMoEMethod only supports int4 and int8 now."
				 : "KeyError: asymmetric (zero-point) MoE weights exist for 4 and 8 bits only");
			return NULL;
		}
		return "CompressedTensorsWNA16MarlinMoEMethod";
	}
	const bool nv = flt(W, 4) && st_is(W, CTQ_STRATEGY_TENSOR_GROUP) && W->has_group_size &&
			W->group_size == 16 && W->symmetric;
	if (nv) {
		const bool nva = flt(A, 4) && st_is(A, CTQ_STRATEGY_TENSOR_GROUP) && A->has_group_size &&
				 A->group_size == 16 && A->symmetric;
		if (A && !nva) {
			snprintf(why, cap, "ValueError: For NVFP4 weights, input quantization must also be NVFP4 format or None for NVFP4A16");
			return NULL;
		}
		return "CompressedTensorsW4A4Nvfp4MoEMethod";
	}
	/* _is_fp8_w8a8: float weights and activations (any width), symmetric
	 * static weights by tensor, channel or block; dynamic activations, or
	 * symmetric per-tensor ones */
	if (A && W->type == CTQ_QTYPE_FLOAT && A->type == CTQ_QTYPE_FLOAT && W->symmetric && !dyn(W) &&
	    (st_is(W, CTQ_STRATEGY_TENSOR) || st_is(W, CTQ_STRATEGY_CHANNEL) || st_is(W, CTQ_STRATEGY_BLOCK)) &&
	    (dyn(A) || (A->symmetric && st_is(A, CTQ_STRATEGY_TENSOR)))) {
		/* CompressedTensorsW8A8Fp8MoEMethod.__init__ */
		const bool per_tensor = st_is(W, CTQ_STRATEGY_TENSOR) && st_is(A, CTQ_STRATEGY_TENSOR);
		const bool per_channel = st_is(W, CTQ_STRATEGY_CHANNEL) && st_is(A, CTQ_STRATEGY_TOKEN);
		if (!per_tensor && !per_channel && !st_is(W, CTQ_STRATEGY_BLOCK)) {
			snprintf(why, cap, "AssertionError: CompressedTensorsW8A8Fp8MoEMethod wants weights by tensor with activations by tensor, by channel with activations by token, or by block (weights by %s, activations by %s)",
				 ctq_strategy_name(W->strategy), ctq_strategy_name(A->strategy));
			return NULL;
		}
		if (!dyn(A) && per_channel) {
			snprintf(why, cap, "ValueError: For FP8 Fused MoE layer, we require either per tensor or channelwise, dynamic per token quantization.");
			return NULL;
		}
		return "CompressedTensorsW8A8Fp8MoEMethod";
	}
	if (!A) {
		/* _is_dynamic_token_w8a8 reads input_quant.num_bits */
		snprintf(why, cap, "AttributeError: 'NoneType' object has no attribute 'num_bits' (weights %s %d-bit by %s without input activations)",
			 ctq_qtype_name(W->type), W->num_bits, ctq_strategy_name(W->strategy));
		return NULL;
	}
	/* _is_dynamic_token_w8a8: 8-bit weights and activations of any type,
	 * symmetric static weights by tensor or channel, dynamic per token */
	if (W->num_bits == 8 && A->num_bits == 8 &&
	    (st_is(W, CTQ_STRATEGY_TENSOR) || st_is(W, CTQ_STRATEGY_CHANNEL)) && st_is(A, CTQ_STRATEGY_TOKEN) &&
	    W->symmetric && !dyn(W) && dyn(A)) {
		if (!st_is(W, CTQ_STRATEGY_CHANNEL)) {
			snprintf(why, cap, "ValueError: For INT8 Fused MoE layers, we require channelwise, dynamic per token quantization (weights by %s)",
				 ctq_strategy_name(W->strategy));
			return NULL;
		}
		return "CompressedTensorsW8A8Int8MoEMethod";
	}
	/* _is_fp8_w4a8_sm90: 4-bit weights by group, 8-bit activations by
	 * token, both symmetric, weights static and activations dynamic */
	if (W->num_bits == 4 && A->num_bits == 8 && st_is(W, CTQ_STRATEGY_GROUP) && st_is(A, CTQ_STRATEGY_TOKEN) &&
	    W->symmetric && A->symmetric && !dyn(W) && dyn(A)) {
		if (W->actorder == CTQ_ACTORDER_GROUP || !W->has_group_size || W->group_size != 128) {
			snprintf(why, cap, "AssertionError: Only group size 128 supported for W4A8 MoE (and no group activation order)");
			return NULL;
		}
		return "CompressedTensorsW4A8Fp8MoEMethod";
	}
	/* _is_dynamic_token_w4a8_int */
	if (W->num_bits == 4 && A->num_bits == 8 &&
	    (st_is(W, CTQ_STRATEGY_GROUP) || st_is(W, CTQ_STRATEGY_CHANNEL)) && st_is(A, CTQ_STRATEGY_TOKEN) &&
	    W->symmetric && !dyn(W) && dyn(A)) {
		if (W->has_group_size && W->group_size > 0 &&
		    ((hidden && hidden % W->group_size) || (inter && inter % W->group_size))) {
			snprintf(why, cap, "ValueError: Group size (%d) must evenly divide both hidden size (%lld) and intermediate size per partition (%lld).",
				 W->group_size, (long long)hidden, (long long)inter);
			return NULL;
		}
		return "CompressedTensorsW4A8Int8MoEMethod";
	}
	snprintf(why, cap, "RuntimeError: Unsupported FusedMoe scheme: weights %s %d-bit by %s, input activations %s %d-bit by %s",
		 ctq_qtype_name(W->type), W->num_bits, ctq_strategy_name(W->strategy), ctq_qtype_name(A->type),
		 A->num_bits, ctq_strategy_name(A->strategy));
	return NULL;
}

/* Whether two parsed args are equal as QuantizationArgs compare (every
 * field after parsing; NULL: None). */
static bool args_eq(const struct ctq_qargs *a, const struct ctq_qargs *b)
{
	if (!a || !b)
		return a == b;
	const char *sa = a->scale_dtype ? a->scale_dtype : "", *sb = b->scale_dtype ? b->scale_dtype : "";
	const char *za = a->zp_dtype ? a->zp_dtype : "", *zb = b->zp_dtype ? b->zp_dtype : "";
	const char *oa = a->observer ? a->observer : "", *ob = b->observer ? b->observer : "";
	return a->num_bits == b->num_bits && a->type == b->type && a->symmetric == b->symmetric &&
	       a->has_group_size == b->has_group_size && (!a->has_group_size || a->group_size == b->group_size) &&
	       a->strategy == b->strategy && a->has_block == b->has_block &&
	       (!a->has_block || (a->block[0] == b->block[0] && a->block[1] == b->block[1])) &&
	       a->dynamic == b->dynamic && a->actorder == b->actorder && !strcmp(sa, sb) && !strcmp(za, zb) &&
	       !strcmp(oa, ob);
}

/* Whether two of the three scheme dicts are equal (get_moe_method compares
 * the dicts: weights, input and output args and the format, the group's or
 * the config's):
 * both None (ignored or unmatched), or groups with equal args and format.
 * An entry vLLM's Linear selection refused still has its group's dict. */
static bool same_dict(const struct ctx *c, const struct ctq_plan_entry *a, const struct ctq_plan_entry *b)
{
	if ((a->group < 0) != (b->group < 0))
		return false;
	if (a->group < 0 || a->group == b->group)
		return true;
	const struct ctq_qscheme *x = &c->cfg->groups[a->group].scheme, *y = &c->cfg->groups[b->group].scheme;
	const char *fa = ctq_qconfig_group_format(c->cfg, &c->cfg->groups[a->group]);
	const char *fb = ctq_qconfig_group_format(c->cfg, &c->cfg->groups[b->group]);
	return args_eq(x->weights, y->weights) && args_eq(x->input, y->input) && args_eq(x->output, y->output) &&
	       !strcmp(fa ? fa : "", fb ? fb : "");
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
		/* fused_moe/routed_experts.py: the layer FusedMoE(prefix=...)
		 * hands get_quant_method is a RoutedExperts */
		const struct ctq_module probe = {.name = name, .vllm_type = "RoutedExperts",
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
	if (!same_dict(c, &q[0], &q[2]) || !same_dict(c, &q[1], &q[2])) {
		cls = CTQ_ERR_FUSED_MISMATCH;
		snprintf(why, sizeof why,
			 "ValueError: All MoE projections need to have same quantization scheme but found multiple (%s.0.gate_proj / up_proj / down_proj: %s, %s, %s)",
			 blk->runtime_name, q[0].scheme ? q[0].scheme : "error",
			 q[1].scheme ? q[1].scheme : "error", q[2].scheme ? q[2].scheme : "error");
	} else if (r.group >= 0 && (r.error == CTQ_ERR_UNSUPPORTED_SCHEME || !r.error)) {
		/* get_moe_method never builds the Linear scheme: a group vLLM's
		 * Linear selection refuses may still run as a MoE method */
		const struct ctq_qgroup *g = &c->cfg->groups[r.group];
		int64_t hidden = 0, inter = 0;
		if (blk->member[2] >= 0) {
			hidden = c->mods->v[blk->member[2]].out_features;
			inter = c->mods->v[blk->member[2]].in_features;
		}
		const char *m = moe_method(&g->scheme, r.format, hidden, inter, why, sizeof why);
		if (m) {
			r.vllm_class = m;
			if (r.error) {
				char buf[CTQ_SCHEME_NAME_MAX];
				r.error = CTQ_OK;
				r.message = NULL;
				r.scheme = ctq_arena_printf(&c->plan->arena, "%s",
							    ctq_scheme_name(&g->scheme, buf, sizeof buf));
				if (!r.scheme)
					return ctq_resolve_nomem(c);
			}
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
