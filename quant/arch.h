/* ctq architecture table: the one owner of "which module tree does this
 * model_type / architectures[0] have". Each row names the transformers
 * classes a config's targets match (attention, decoder layer, MLP, MoE
 * block, experts, router), the layout of its Linears (separate or fused
 * q/k/v and gate/up, MLA projections, experts and shared experts), and the
 * two facts the resolvers need from the engines' model classes: whether
 * vLLM's model has no ParallelLMHead when the embeddings are tied, and
 * whether transformers 5 fuses the experts into one 3-D module.
 *
 * Rows are read from the libraries' own model files, named beside each row
 * in arch.c. Not the enumeration itself (quant/modules.c walks a row) and
 * not what the runner executes (a row's runner is NULL for the trees ctq
 * only inspects, probes and quantizes). */
#ifndef CTQ_QUANT_ARCH_H
#define CTQ_QUANT_ARCH_H

#include <stdbool.h>
#include <stddef.h>

enum ctq_arch_attn {
	CTQ_ATTN_QKV,       /* q_proj, k_proj, v_proj, o_proj */
	CTQ_ATTN_QKV_FUSED, /* qkv_proj, o_proj as the checkpoint stores them (Phi-3) */
	CTQ_ATTN_MLA,       /* q_a_proj, q_b_proj (or q_proj), kv_a_proj_with_mqa, kv_b_proj, o_proj */
};

enum ctq_arch_mlp {
	CTQ_MLP_GATED,       /* gate_proj, up_proj, down_proj */
	CTQ_MLP_GATED_FUSED, /* gate_up_proj, down_proj (Phi-3) */
};

enum ctq_arch_shared {
	CTQ_SHARED_NONE,
	CTQ_SHARED_EXPERT,  /* Qwen2-MoE: mlp.shared_expert.{gate,up,down}_proj + mlp.shared_expert_gate */
	CTQ_SHARED_EXPERTS, /* DeepSeek-V3: mlp.shared_experts.{gate,up,down}_proj */
};

struct ctq_arch {
	const char *model_type; /* config.json model_type, e.g. "qwen3_moe" */
	const char *causal_lm;  /* architectures[0] of the causal LM */
	const char *runner;     /* the family ctq's runner executes (qwen3, qwen2, llama), or NULL */
	const char *attention_class, *layer_class, *mlp_class;
	const char *norm_class;  /* the RMSNorm class (q_norm / k_norm when qk_norm) */
	enum ctq_arch_attn attn;
	enum ctq_arch_mlp mlp;
	bool qk_norm;            /* self_attn.q_norm / k_norm (tree tests see them) */
	bool attention_bias;     /* q/k/v carry a bias unless attention_bias says not */
	bool tie_default;        /* tie_word_embeddings when the config omits it (Gemma) */
	/* vLLM's model class has no ParallelLMHead when tied: lm_head is
	 * model.embed_tokens (Qwen2/Qwen3ForCausalLM, Gemma*). Llama and its
	 * subclasses (Mistral, Phi-3) always build one and resolve its scheme
	 * before tying the weight. */
	bool vllm_head_is_embedding;
	/* Mixture of experts; moe_parent NULL for a dense model. */
	const char *moe_parent;     /* "mlp" or "block_sparse_moe" */
	const char *moe_class;      /* Qwen3MoeSparseMoeBlock, ... */
	const char *experts_class;  /* transformers 5's fused experts module */
	const char *router_class;   /* transformers 5's router module */
	const char *expert_leaf[3]; /* gate, up, down as the checkpoint names them */
	enum ctq_arch_shared shared;
	bool ct_fused_experts;      /* transformers 5 fuses the experts (3-D parameters) */
	/* vLLM builds the router as ReplicatedLinear(..., quant_config=quant_config)
	 * (qwen3_moe.py: a Linear target reaches it); false: quant_config=None
	 * (mixtral.py, qwen2_moe.py, deepseek_v2.py's GateLinear). */
	bool vllm_router_quantized;
	/* embed_tokens' class where it is an nn.Embedding subclass (Gemma's
	 * <Family>TextScaledWordEmbedding); NULL: nn.Embedding */
	const char *embedding_class;
	/* The configuration class's defaults where a config omits the field:
	 * the expert count, the experts' and shared experts' intermediate
	 * sizes, DeepSeek's first_k_dense_replace. */
	long experts_default, moe_inter_default, shared_inter_default, first_k_dense_default;
	const char *source;         /* the transformers file the row was read from */
};

/* A diffusion transformer (diffusers), found by its config's _class_name:
 * the classes of its blocks. Its tree is quant/trees.c's. */
struct ctq_dit_arch {
	const char *class_name;  /* config.json _class_name, e.g. QwenImageTransformer2DModel */
	const char *name;        /* ctq's name, e.g. qwen_image_dit */
	const char *block_class; /* QwenImageTransformerBlock */
	const char *attention_class, *ff_class;
	const char *source;      /* the diffusers file the row was read from */
};

/* The DiT row of a _class_name, or NULL. */
const struct ctq_dit_arch *ctq_arch_dit_find(const char *class_name);

/* The row of a model_type ("qwen3_moe") or an architectures[] class
 * ("Qwen3MoeForCausalLM", "*ForSequenceClassification" of a row's family);
 * NULL when ctq has no row. */
const struct ctq_arch *ctq_arch_find(const char *name);

/* Row i of the table, NULL past its end. */
const struct ctq_arch *ctq_arch_at(size_t i);

/* The model_types of every row, comma separated (for messages). */
const char *ctq_arch_list(void);

#endif
