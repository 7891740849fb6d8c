/* ctq architecture table (see arch.h). Class and module names are those of
 * transformers' modeling_<model>.py named in each row's source; the vLLM
 * facts (tied head, routers built with quant_config=None) those of
 * vllm/model_executor/models/<model>.py, quoted in docs/semantics.md. */
#include "quant/arch.h"

#include <string.h>
#include <strings.h>

#define GATED {"gate_proj", "up_proj", "down_proj"}

static const struct ctq_arch arches[] = {
	/* models/qwen3/modeling_qwen3.py; vLLM qwen3.py: lm_head = embed_tokens when tied */
	{.model_type = "qwen3", .causal_lm = "Qwen3ForCausalLM", .runner = "qwen3",
	 .attention_class = "Qwen3Attention", .layer_class = "Qwen3DecoderLayer",
	 .mlp_class = "Qwen3MLP", .norm_class = "Qwen3RMSNorm", .qk_norm = true,
	 .vllm_head_is_embedding = true, .source = "models/qwen3/modeling_qwen3.py"},
	/* models/qwen2/modeling_qwen2.py: q/k/v with bias=True */
	{.model_type = "qwen2", .causal_lm = "Qwen2ForCausalLM", .runner = "qwen2",
	 .attention_class = "Qwen2Attention", .layer_class = "Qwen2DecoderLayer",
	 .mlp_class = "Qwen2MLP", .norm_class = "Qwen2RMSNorm", .attention_bias = true,
	 .vllm_head_is_embedding = true, .source = "models/qwen2/modeling_qwen2.py"},
	/* models/llama/modeling_llama.py; vLLM llama.py builds ParallelLMHead, then ties */
	{.model_type = "llama", .causal_lm = "LlamaForCausalLM", .runner = "llama",
	 .attention_class = "LlamaAttention", .layer_class = "LlamaDecoderLayer",
	 .mlp_class = "LlamaMLP", .norm_class = "LlamaRMSNorm",
	 .source = "models/llama/modeling_llama.py"},
	/* models/mistral/modeling_mistral.py; vLLM's MistralForCausalLM is a LlamaForCausalLM */
	{.model_type = "mistral", .causal_lm = "MistralForCausalLM",
	 .attention_class = "MistralAttention", .layer_class = "MistralDecoderLayer",
	 .mlp_class = "MistralMLP", .norm_class = "MistralRMSNorm",
	 .source = "models/mistral/modeling_mistral.py"},
	/* models/gemma/modeling_gemma.py (tie_word_embeddings defaults to True);
	 * vLLM gemma.py has no lm_head: logits come from model.embed_tokens */
	{.model_type = "gemma", .embedding_class = "GemmaTextScaledWordEmbedding", .causal_lm = "GemmaForCausalLM",
	 .attention_class = "GemmaAttention", .layer_class = "GemmaDecoderLayer",
	 .mlp_class = "GemmaMLP", .norm_class = "GemmaRMSNorm", .tie_default = true,
	 .vllm_head_is_embedding = true, .source = "models/gemma/modeling_gemma.py"},
	/* models/gemma2/modeling_gemma2.py; vLLM gemma2.py as gemma.py */
	{.model_type = "gemma2", .embedding_class = "Gemma2TextScaledWordEmbedding", .causal_lm = "Gemma2ForCausalLM",
	 .attention_class = "Gemma2Attention", .layer_class = "Gemma2DecoderLayer",
	 .mlp_class = "Gemma2MLP", .norm_class = "Gemma2RMSNorm", .tie_default = true,
	 .vllm_head_is_embedding = true, .source = "models/gemma2/modeling_gemma2.py"},
	/* models/gemma3/modeling_gemma3.py (text model, q_norm / k_norm); vLLM gemma3.py */
	{.model_type = "gemma3_text", .embedding_class = "Gemma3TextScaledWordEmbedding", .causal_lm = "Gemma3ForCausalLM",
	 .attention_class = "Gemma3Attention", .layer_class = "Gemma3DecoderLayer",
	 .mlp_class = "Gemma3MLP", .norm_class = "Gemma3RMSNorm", .qk_norm = true,
	 .tie_default = true, .vllm_head_is_embedding = true,
	 .source = "models/gemma3/modeling_gemma3.py"},
	/* models/phi3/modeling_phi3.py: self_attn.qkv_proj and mlp.gate_up_proj are
	 * stored fused; vLLM phi3.py: Phi3ForCausalLM(LlamaForCausalLM) */
	{.model_type = "phi3", .causal_lm = "Phi3ForCausalLM",
	 .attention_class = "Phi3Attention", .layer_class = "Phi3DecoderLayer",
	 .mlp_class = "Phi3MLP", .norm_class = "Phi3RMSNorm", .attn = CTQ_ATTN_QKV_FUSED,
	 .mlp = CTQ_MLP_GATED_FUSED, .source = "models/phi3/modeling_phi3.py"},
	/* models/qwen3_moe/modeling_qwen3_moe.py: Qwen3MoeSparseMoeBlock(gate,
	 * experts) where (layer not in mlp_only_layers) and (layer + 1) %
	 * decoder_sparse_step == 0, else Qwen3MoeMLP; transformers 5 fuses the
	 * experts (Qwen3MoeExperts: gate_up_proj, down_proj) behind a router */
	{.model_type = "qwen3_moe", .causal_lm = "Qwen3MoeForCausalLM",
	 .attention_class = "Qwen3MoeAttention", .layer_class = "Qwen3MoeDecoderLayer",
	 .mlp_class = "Qwen3MoeMLP", .norm_class = "Qwen3MoeRMSNorm", .qk_norm = true,
	 .moe_parent = "mlp", .moe_class = "Qwen3MoeSparseMoeBlock",
	 .experts_class = "Qwen3MoeExperts", .router_class = "Qwen3MoeTopKRouter",
	 .expert_leaf = GATED, .ct_fused_experts = true,
	 /* vLLM qwen3_moe.py Qwen3MoeSparseMoeBlock: self.gate =
	  * ReplicatedLinear(..., quant_config=quant_config, prefix=f"{prefix}.gate") */
	 .vllm_router_quantized = true,
	 /* Qwen3MoeConfig: num_experts=128, moe_intermediate_size=768 */
	 .experts_default = 128, .moe_inter_default = 768,
	 .source = "models/qwen3_moe/modeling_qwen3_moe.py"},
	/* models/qwen2_moe/modeling_qwen2_moe.py: shared_expert (Qwen2MoeMLP of
	 * shared_expert_intermediate_size) and shared_expert_gate Linear(H, 1) */
	{.model_type = "qwen2_moe", .causal_lm = "Qwen2MoeForCausalLM",
	 .attention_class = "Qwen2MoeAttention", .layer_class = "Qwen2MoeDecoderLayer",
	 .mlp_class = "Qwen2MoeMLP", .norm_class = "Qwen2MoeRMSNorm", .attention_bias = true,
	 .moe_parent = "mlp", .moe_class = "Qwen2MoeSparseMoeBlock",
	 .experts_class = "Qwen2MoeExperts", .router_class = "Qwen2MoeTopKRouter",
	 .expert_leaf = GATED, .shared = CTQ_SHARED_EXPERT, .ct_fused_experts = true,
	 /* Qwen2MoeConfig: num_experts=60, moe_intermediate_size=1408,
	  * shared_expert_intermediate_size=5632 */
	 .experts_default = 60, .moe_inter_default = 1408, .shared_inter_default = 5632,
	 .source = "models/qwen2_moe/modeling_qwen2_moe.py"},
	/* models/mixtral/modeling_mixtral.py: block_sparse_moe.gate and
	 * block_sparse_moe.experts.E.{w1 (gate), w3 (up), w2 (down)}, every layer sparse */
	{.model_type = "mixtral", .causal_lm = "MixtralForCausalLM",
	 .attention_class = "MixtralAttention", .layer_class = "MixtralDecoderLayer",
	 .mlp_class = NULL, .norm_class = "MixtralRMSNorm",
	 .moe_parent = "block_sparse_moe", .moe_class = "MixtralSparseMoeBlock",
	 .experts_class = "MixtralExperts", .router_class = "MixtralTopKRouter",
	 .expert_leaf = {"w1", "w3", "w2"}, .ct_fused_experts = true,
	 /* MixtralConfig: num_local_experts=8, intermediate_size=14336 */
	 .experts_default = 8, .moe_inter_default = 14336,
	 .source = "models/mixtral/modeling_mixtral.py"},
	/* models/qwen3_vl/modeling_qwen3_vl.py: the text model of Qwen3-VL
	 * (text_config, under model.language_model.); vLLM qwen3_vl.py's
	 * language model is a Qwen3ForCausalLM (lm_head = embed_tokens when tied) */
	{.model_type = "qwen3_vl_text", .causal_lm = "Qwen3VLForConditionalGeneration",
	 .attention_class = "Qwen3VLTextAttention", .layer_class = "Qwen3VLTextDecoderLayer",
	 .mlp_class = "Qwen3VLTextMLP", .norm_class = "Qwen3VLTextRMSNorm", .qk_norm = true,
	 .vllm_head_is_embedding = true, .source = "models/qwen3_vl/modeling_qwen3_vl.py"},
	/* models/deepseek_v3/modeling_deepseek_v3.py: MLA attention, dense
	 * DeepseekV3MLP below first_k_dense_replace, DeepseekV3MoE (gate is
	 * DeepseekV3TopkRouter, an nn.Module with a weight, never a Linear;
	 * experts; shared_experts) above; transformers 5.23 fuses the experts
	 * (DeepseekV3Experts: gate_up_proj, down_proj 3-D parameters) */
	{.model_type = "deepseek_v3", .causal_lm = "DeepseekV3ForCausalLM",
	 .attention_class = "DeepseekV3Attention", .layer_class = "DeepseekV3DecoderLayer",
	 .mlp_class = "DeepseekV3MLP", .norm_class = "DeepseekV3RMSNorm", .attn = CTQ_ATTN_MLA,
	 .moe_parent = "mlp", .moe_class = "DeepseekV3MoE", .router_class = "DeepseekV3TopkRouter",
	 .experts_class = "DeepseekV3Experts", .expert_leaf = GATED, .shared = CTQ_SHARED_EXPERTS,
	 .ct_fused_experts = true,
	 /* DeepseekV3Config: n_routed_experts=256, moe_intermediate_size=2048,
	  * first_k_dense_replace=3 (MLA defaults in quant/modules.c) */
	 .experts_default = 256, .moe_inter_default = 2048, .first_k_dense_default = 3,
	 .source = "models/deepseek_v3/modeling_deepseek_v3.py"},
};

/* Whether name is family + suffix. */
static bool is_family(const char *name, const char *family, size_t n, const char *suffix)
{
	return !strncmp(name, family, n) && !strcmp(name + n, suffix);
}

const struct ctq_arch *ctq_arch_find(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < sizeof arches / sizeof *arches; i++) {
		const struct ctq_arch *a = &arches[i];
		if (!strcasecmp(name, a->model_type) || !strcmp(name, a->causal_lm))
			return a;
		size_t n = strlen(a->causal_lm) - strlen("ForCausalLM");
		if (is_family(name, a->causal_lm, n, "ForSequenceClassification"))
			return a;
	}
	return NULL;
}

/* diffusers src/diffusers/models/transformers/transformer_qwenimage.py:
 * QwenImageTransformerBlock (img_mod / txt_mod = Sequential(SiLU, Linear),
 * attn = Attention(added_kv_proj_dim=dim), img_mlp / txt_mlp =
 * FeedForward(GELU(approximate="tanh"))). */
static const struct ctq_dit_arch dits[] = {
	{"QwenImageTransformer2DModel", "qwen_image_dit", "QwenImageTransformerBlock", "Attention",
	 "FeedForward", "diffusers/models/transformers/transformer_qwenimage.py"},
};

const struct ctq_dit_arch *ctq_arch_dit_find(const char *class_name)
{
	for (size_t i = 0; class_name && i < sizeof dits / sizeof *dits; i++)
		if (!strcmp(class_name, dits[i].class_name) || !strcmp(class_name, dits[i].name))
			return &dits[i];
	return NULL;
}

const struct ctq_arch *ctq_arch_at(size_t i)
{
	return i < sizeof arches / sizeof *arches ? &arches[i] : NULL;
}

const char *ctq_arch_list(void)
{
	/* Kept in step with the table by tests/test_trees.c. */
	return "qwen3, qwen2, llama, mistral, gemma, gemma2, gemma3_text, phi3, qwen3_moe, qwen2_moe, mixtral, qwen3_vl_text, deepseek_v3";
}
