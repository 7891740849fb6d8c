/* ctq tensor-parallel shard planner (see shard.h; spec §7.2–§7.5). */
#include "quant/shard.h"
#include "core/arena.h"
#include "quant/arch.h"

#include <stdlib.h>
#include <string.h>

const char *ctq_shard_kind_name(enum ctq_shard_kind k)
{
	switch (k) {
	case CTQ_SHARD_REPLICATED: return "replicated";
	case CTQ_SHARD_COLUMN: return "column";
	case CTQ_SHARD_ROW: return "row";
	default: return "none";
	}
}

static const char *leaf(const char *name)
{
	const char *d = strrchr(name, '.');
	return d ? d + 1 : name;
}

static void set_range(int64_t r[2], int64_t a, int64_t b)
{
	r[0] = a;
	r[1] = b;
}

/* The layout vLLM gives a module outside the Llama layout, by its runtime
 * class: experts as the dense MLP (FusedMoE splits every expert's gate/up
 * rows and down columns over the ranks), ReplicatedLinear whole (routers,
 * shared_expert_gate, DeepSeek's q_a_proj / kv_a_proj_with_mqa, which
 * fused_qkv_a_proj builds with disable_tp), column / row parallel by
 * class. *why is set where ctq knows no layout for tp > 1. */
static enum ctq_shard_kind other_layout(const struct ctq_modules *mods, const struct ctq_module *m,
					const char **why)
{
	const char *l = leaf(m->name), *t = m->vllm_type ? m->vllm_type : "";
	if (m->moe >= 0)
		return m->expert_proj == 2 ? CTQ_SHARD_ROW : CTQ_SHARD_COLUMN;
	if (m->vllm_unquantized || !strcmp(t, "ReplicatedLinear") || !strcmp(l, "q_a_proj") ||
	    !strcmp(l, "kv_a_proj_with_mqa"))
		return CTQ_SHARD_REPLICATED;
	if (!mods->shape.row && !strcmp(mods->shape.arch ? mods->shape.arch : "", "qwen_image_dit")) {
		*why = "is a module of a diffusion transformer; ctq knows no tensor-parallel layout for it (vllm-omni's is not modelled)";
		return CTQ_SHARD_REPLICATED;
	}
	if (m->fused < 0 && (!strcmp(t, "QKVParallelLinear") || !strcmp(t, "MergedColumnParallelLinear"))) {
		*why = "is stored fused (q/k/v or gate/up in one tensor); each part is split on its own, which ctq's contiguous ranges do not express";
		return CTQ_SHARD_REPLICATED;
	}
	if (!strcmp(t, "RowParallelLinear"))
		return CTQ_SHARD_ROW;
	return CTQ_SHARD_COLUMN;
}

enum ctq_status ctq_shard_plan_build(struct ctq_shard_plan *sp,
				     const struct ctq_plan *plan, int tp,
				     struct ctq_error *err)
{
	memset(sp, 0, sizeof *sp);
	const struct ctq_modules *mods = plan->mods;
	const struct ctq_model_shape *s = &mods->shape;
	if (tp < 1)
		return ctq_error_set(err, CTQ_ERR_SHARD_INVALID, "tp",
				     "is %d; tensor parallelism needs at least 1 rank", tp);
	static const struct {
		const char *field;
		size_t off;
	} need[] = {
		{"hidden_size", offsetof(struct ctq_model_shape, hidden_size)},
		{"intermediate_size", offsetof(struct ctq_model_shape, intermediate_size)},
		{"num_attention_heads", offsetof(struct ctq_model_shape, num_attention_heads)},
		{"num_key_value_heads", offsetof(struct ctq_model_shape, num_key_value_heads)},
		{"head_dim", offsetof(struct ctq_model_shape, head_dim)},
	};
	/* The head and MLP arithmetic of the Llama layout is needed only where
	 * a module takes it (ctq_hf_linear_of); other trees carry each
	 * module's (out, in). */
	bool llama_layout = false;
	for (size_t m = 0; m < mods->n && !llama_layout; m++)
		llama_layout = ctq_hf_linear_of(mods, &mods->v[m]) >= 0;
	for (size_t i = 0; i < sizeof need / sizeof *need && llama_layout; i++)
		if (*(const long *)((const char *)s + need[i].off) <= 0)
			return ctq_error_set(err, CTQ_ERR_SHARD_INVALID, need[i].field,
					     "is unknown; the shard planner needs the model's %s",
					     need[i].field);
	const long H = s->num_attention_heads > 0 ? s->num_attention_heads : 1;
	const long KV = s->num_key_value_heads > 0 ? s->num_key_value_heads : 1, d = s->head_dim;
	const long hidden = s->hidden_size, I = s->intermediate_size, V = s->vocab_size;
	if (llama_layout && H % tp)
		return ctq_error_set(err, CTQ_ERR_SHARD_INVALID, "num_attention_heads",
				     "is %ld, not divisible by tp %d (heads per rank must be whole)",
				     H, tp);
	if (llama_layout && H % KV)
		return ctq_error_set(err, CTQ_ERR_SHARD_INVALID, "num_key_value_heads",
				     "is %ld, which does not divide num_attention_heads %ld", KV, H);
	long kv_per_rank = 1, replicas = 1;
	if (!llama_layout) {
		/* no attention head arithmetic needed */
	} else if (tp >= KV) {
		if (tp % KV)
			return ctq_error_set(err, CTQ_ERR_SHARD_INVALID, "num_key_value_heads",
					     "is %ld; tp %d is not a multiple of it, so kv heads cannot be replicated evenly",
					     KV, tp);
		kv_per_rank = 1;
		replicas = tp / KV;
	} else {
		if (KV % tp)
			return ctq_error_set(err, CTQ_ERR_SHARD_INVALID, "num_key_value_heads",
					     "is %ld, not divisible by tp %d", KV, tp);
		kv_per_rank = KV / tp;
		replicas = 1;
	}
	if (llama_layout && I % tp)
		return ctq_error_set(err, CTQ_ERR_SHARD_INVALID, "intermediate_size",
				     "is %ld, not divisible by tp %d", I, tp);
	sp->tp = tp;
	sp->n_modules = mods->n;
	sp->heads_per_rank = H / tp;
	sp->kv_heads_per_rank = kv_per_rank;
	sp->kv_replicas = replicas;
	sp->v = ctq_calloc(mods->n * (size_t)tp + 1, sizeof *sp->v);
	sp->out_features = ctq_calloc(mods->n + 1, sizeof *sp->out_features);
	sp->in_features = ctq_calloc(mods->n + 1, sizeof *sp->in_features);
	if (!sp->v || !sp->out_features || !sp->in_features) {
		ctq_shard_plan_free(sp);
		return ctq_error_set(err, CTQ_ERR_NOMEM, "tp", "out of memory");
	}
	const long hpr = H / tp;
	for (size_t m = 0; m < mods->n; m++) {
		const struct ctq_module *mod = &mods->v[m];
		const struct ctq_plan_entry *e = &plan->entries[m];
		const char *l = leaf(mod->name);
		int64_t O = 0, In = 0;
		int hl = -1; /* which of the layer's linears, ctq_hf_linears */
		enum ctq_shard_kind kind = CTQ_SHARD_REPLICATED;
		bool bias = false;
		if (mod->kind == CTQ_MODULE_ATTENTION || mod->kind == CTQ_MODULE_OTHER) {
			kind = CTQ_SHARD_NONE;
		} else if (mod->guessed) {
			/* From the tensors only (a vision tower, an expert): its
			 * layout under tensor parallelism is not known, and its
			 * leaf (q_proj) must not borrow the text model's. */
			if (tp > 1 || mod->out_features <= 0 || mod->in_features <= 0) {
				ctq_shard_plan_free(sp);
				return ctq_error_set(err, CTQ_ERR_SHARD_INVALID, mod->name,
						     tp > 1 ? "has a class guessed from the checkpoint's tensors; ctq knows no tensor-parallel layout for it"
							    : "has a class guessed from the checkpoint's tensors and a packed weight; its features are not known");
			}
			O = mod->out_features;
			In = mod->in_features;
		} else if (mod->kind == CTQ_MODULE_EMBEDDING || !strcmp(l, "lm_head")) {
			O = V;
			In = hidden;
		} else if (s->seq_cls && !strcmp(mod->name, "score")) {
			/* vLLM's ReplicatedLinear(hidden_size, num_labels): whole on every rank. */
			O = s->num_labels;
			In = hidden;
		} else if ((hl = ctq_hf_linear_of(mods, mod)) < 0 && mod->out_features > 0 &&
			   mod->in_features > 0) {
			/* A module of the tree with its own (out, in): experts,
			 * routers, shared experts, MLA, vision towers, DiT blocks. */
			O = mod->out_features;
			In = mod->in_features;
			const char *why = NULL;
			kind = other_layout(mods, mod, &why);
			if (why && tp > 1) {
				ctq_shard_plan_free(sp);
				return ctq_error_set(err, CTQ_ERR_SHARD_INVALID, mod->name, "%s", why);
			}
			const int64_t split = kind == CTQ_SHARD_COLUMN ? O : In;
			if ((kind == CTQ_SHARD_COLUMN || kind == CTQ_SHARD_ROW) && split % tp) {
				ctq_shard_plan_free(sp);
				return ctq_error_set(err, CTQ_ERR_SHARD_INVALID, mod->name,
						     "has %lld %s features, not divisible by tp %d", (long long)split,
						     kind == CTQ_SHARD_COLUMN ? "output" : "input", tp);
			}
		} else if (hl >= 0) {
			long o, in;
			ctq_hf_linear_features(s, (enum ctq_hf_linear)hl, &o, &in);
			O = o, In = in;
			kind = ctq_hf_linears[hl].row_parallel ? CTQ_SHARD_ROW : CTQ_SHARD_COLUMN;
			bias = hl <= CTQ_HF_V && s->attention_bias;
		} else {
			ctq_shard_plan_free(sp);
			return ctq_error_set(err, CTQ_ERR_SHARD_INVALID, mod->name,
					     "has no known tensor-parallel layout (ctq plans qwen3, qwen2 and llama modules)");
		}
		sp->out_features[m] = O;
		sp->in_features[m] = In;
		bool quantized = e->error == CTQ_OK && e->scheme && strcmp(e->scheme, "unquantized") &&
				 e->group >= 0;
		bool per_tensor = quantized && plan->cfg->groups[e->group].scheme.weights &&
				  plan->cfg->groups[e->group].scheme.weights->strategy ==
					  CTQ_STRATEGY_TENSOR;
		for (int r = 0; r < tp; r++) {
			struct ctq_shard *sh = &sp->v[m * (size_t)tp + (size_t)r];
			sh->kind = kind;
			if (kind == CTQ_SHARD_NONE)
				continue;
			set_range(sh->rows, 0, O);
			set_range(sh->cols, 0, In);
			if (kind == CTQ_SHARD_COLUMN) {
				int64_t a, n;
				if (hl == CTQ_HF_Q) {
					n = hpr * d;
					a = r * n;
				} else if (hl == CTQ_HF_K || hl == CTQ_HF_V) {
					n = kv_per_rank * d;
					a = (r / replicas) * n;
				} else if (hl >= 0) {
					n = I / tp;
					a = r * n;
				} else {
					n = O / tp;
					a = r * n;
				}
				set_range(sh->rows, a, a + n);
			} else if (kind == CTQ_SHARD_ROW) {
				int64_t n = In / tp;
				set_range(sh->cols, r * n, (r + 1) * n);
			}
			if (!quantized)
				sh->scale = CTQ_SCALE_NONE;
			else if (kind == CTQ_SHARD_COLUMN && !per_tensor) {
				sh->scale = CTQ_SCALE_SLICED;
				set_range(sh->scale_rows, sh->rows[0], sh->rows[1]);
			} else {
				sh->scale = CTQ_SCALE_REPLICATED;
			}
			if (!bias)
				sh->bias = CTQ_BIAS_NONE;
			else if (kind == CTQ_SHARD_COLUMN) {
				sh->bias = CTQ_BIAS_SLICED;
				set_range(sh->bias_rows, sh->rows[0], sh->rows[1]);
			} else if (kind == CTQ_SHARD_ROW) {
				sh->bias = CTQ_BIAS_RANK0;
			} else {
				sh->bias = CTQ_BIAS_REPLICATED;
			}
		}
	}
	return CTQ_OK;
}

void ctq_shard_plan_free(struct ctq_shard_plan *sp)
{
	if (!sp)
		return;
	free(sp->v);
	free(sp->out_features);
	free(sp->in_features);
	memset(sp, 0, sizeof *sp);
}
