"""The model families of semantics_diff.py (--family): for each, a tiny config
generator, the real model it is built as on the compressed-tensors side, and
the runtime layers vLLM 0.26.0 builds for it (read in the wheel's
vllm/model_executor/models/*.py; line numbers are the 0.26.0 wheel's).

A family gives:
  config(r)     a small config.json of the family (no quantization_config)
  build(cfg)    the library model on the meta device: transformers 5.23's own
                class for the architecture (AutoConfig.for_model + the class in
                `architectures`), diffusers' QwenImageTransformer2DModel for the DiT
  ct_name(n)    the name transformers 5.23 gives the module that ctq calls n
                (checkpoint names; transformers renames some at load through
                conversion_mapping.py, and compressed-tensors matches the model's
                names): identity except Llava's CLIP tower (CLIPVisionModel:
                PrefixChange(prefix_to_remove="vision_model"))
  vllm(v, cfg)  (mapper, packed_modules_mapping, [(vLLM prefix, layer, [ctq names])]):
                vLLM's runtime layers with the HF modules they hold; a layer that
                vLLM builds with quant_config=None is given as None (never asks
                the quantization config)
  attention     the attention class name attention groups target

The layers, per family (vLLM 0.26.0):
  dense (qwen3, llama, mistral, gemma2, gemma3_text): self_attn.qkv_proj
      (QKVParallelLinear), o_proj (RowParallelLinear), self_attn.attn (Attention),
      mlp.gate_up_proj (MergedColumnParallelLinear), mlp.down_proj (RowParallelLinear);
      embed_tokens (VocabParallelEmbedding); the head per model class: qwen3.py
      `lm_head = model.embed_tokens` when tied; llama.py (and MistralForCausalLM,
      Phi3ForCausalLM, its subclasses) a ParallelLMHead always; gemma2.py / gemma3.py
      no lm_head at all (logits from embed_tokens)
  phi3: phi3.py packed_modules_mapping {"qkv_proj": ["qkv_proj"], "gate_up_proj":
      ["gate_up_proj"]}: the checkpoint's fused Linears are the layers
  seqcls (Qwen3ForSequenceClassification, one in three LlamaForSequenceClassification): adapters.py as_seq_cls_model: `score`
      is ReplicatedLinear(..., quant_config=vllm_config.quant_config) (checkpoint
      based, lines 315-329); the causal model's layers as qwen3
  qwen3_moe: qwen3_moe.py: a layer not in mlp_only_layers with (i + 1) %
      decoder_sparse_step == 0 (lines 386-393) has mlp.gate = ReplicatedLinear(...,
      quant_config=quant_config) (line 172: the router IS quantizable) and
      mlp.experts = FusedMoE(prefix=f"{prefix}.experts"), whose RoutedExperts
      (fused_moe/routed_experts.py, layer_name = prefix) asks get_quant_method;
      packed_modules_mapping has gate_up_proj only when mlp_only_layers is set
      (lines 551-574); lm_head a ParallelLMHead, tied or not
  mixtral: mixtral.py: block_sparse_moe.gate ReplicatedLinear(quant_config=None)
      (line 117), block_sparse_moe.experts FusedMoE; packed qkv_proj only
  deepseek_v3: deepseek_v2.py: MLA (DeepseekV2MLAAttention): fused_qkv_a_proj =
      DeepSeekV2FusedQkvAProjLinear(MergedColumnParallelLinear) of [q_a_proj,
      kv_a_proj_with_mqa] when q_lora_rank is set (lines 1003-1007, packed
      "fused_qkv_a_proj" lines 1816-1822), else kv_a_proj_with_mqa
      ReplicatedLinear and q_proj ColumnParallelLinear; q_b_proj, kv_b_proj
      ColumnParallelLinear, o_proj RowParallelLinear; the attention is an
      MLAAttention (layers/attention/mla_attention.py, not an Attention: no
      KV-cache method from compressed-tensors); mlp.gate GateLinear
      (quant_config=None), experts FusedMoE, shared_experts a DeepseekV2MLP
      (gate_up_proj / down_proj); dense layers below first_k_dense_replace
  llava (CLIP or SigLIP tower): llava.py: mapper model.language_model. -> language_model.model.,
      model.vision_tower. -> vision_tower., model.multi_modal_projector. ->
      multi_modal_projector., lm_head. -> language_model.lm_head.; CLIP tower
      (clip.py) vision_tower.vision_model.encoder.layers.N.self_attn.qkv_proj
      (QKVParallelLinear), out_proj (RowParallelLinear), mlp.fc1 / fc2, built up to
      vision_feature_layer (_get_num_hidden_layers: -2 builds N - 1 layers);
      position_embedding an nn.Embedding, MMEncoderAttention (no KV cache); SigLIP
      (siglip.py) the same names, built with use_head=False (no pooling head);
      projector linear_1 (ColumnParallelLinear) / linear_2 (RowParallelLinear);
      the language model a LlamaForCausalLM under language_model.
  qwen3_vl: qwen3_vl.py: mapper model.visual. -> visual., lm_head. ->
      language_model.lm_head., model.language_model. -> language_model.model.;
      visual.blocks.N.attn.qkv (QKVParallelLinear; packed "qkv": ["qkv"]),
      attn.proj, mlp.linear_fc1 / linear_fc2, merger and deepstack_merger_list.K
      linear_fc1 / linear_fc2; pos_embed an nn.Embedding; Qwen3LLMForCausalLM
      (lines 1640-1663): lm_head prefix "lm_head", = embed_tokens when tied
  dit (QwenImageTransformer2DModel, diffusers 0.35.2 on the ct side): vLLM 0.26.0
      has no such model (vllm-omni serves it; not in the wheel); the vllm side is
      ctq's documented reading, vLLM's resolver over each diffusers Linear as a
      ColumnParallelLinear of its own name (no fusion, no attention layer):
      it checks the resolver's decisions on DiT names, not vllm-omni's layers.
"""
import copy
import random
import re

DENSE_PROJ = ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
              "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"]


def _dims(r):
    return {"hidden_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
            "intermediate_size": 256, "vocab_size": 256}


class Family:
    name = None
    attention = "Attention"
    model_type = None
    arch = None
    head = "lmhead"  # lmhead: always ParallelLMHead; embed_if_tied; embed (gemma)

    def config(self, r):
        L = r.choice([2, 3])
        c = {"model_type": self.model_type, "architectures": [self.arch], "num_hidden_layers": L,
             "tie_word_embeddings": r.random() < 0.5}
        c.update(_dims(r))
        return c

    def build(self, cfg):
        import torch
        import transformers
        kw = {k: v for k, v in cfg.items() if k not in ("quantization_config", "model_type", "architectures")}
        conf = transformers.AutoConfig.for_model(cfg["model_type"], **kw)
        with torch.device("meta"):
            return getattr(transformers, cfg["architectures"][0])(conf)

    def ct_name(self, name, cfg=None):
        return name

    def layers(self, cfg):
        return cfg.get("text_config", cfg)["num_hidden_layers"]

    # vLLM ---------------------------------------------------------------------
    packed = {"qkv_proj": ["q_proj", "k_proj", "v_proj"], "gate_up_proj": ["gate_proj", "up_proj"]}

    def mapper(self):
        return None

    def decoder_layer(self, v, cfg, i, vp, hp):
        """Runtime layers of decoder layer i: vLLM prefix vp, HF prefix hp."""
        out = [(vp + "self_attn.qkv_proj", v.QKVParallelLinear(), [hp + "self_attn." + s for s in ("q_proj", "k_proj", "v_proj")]),
               (vp + "self_attn.o_proj", v.RowParallelLinear(), [hp + "self_attn.o_proj"]),
               (vp + "self_attn.attn", v.Attention(), [hp + "self_attn"])]
        out += self.mlp_layers(v, cfg, i, vp + "mlp.", hp + "mlp.")
        return out

    def mlp_layers(self, v, cfg, i, vp, hp):
        return [(vp + "gate_up_proj", v.MergedColumnParallelLinear(), [hp + "gate_proj", hp + "up_proj"]),
                (vp + "down_proj", v.RowParallelLinear(), [hp + "down_proj"])]

    def text_layers(self, v, cfg, vroot="model.", hroot="model.", head_v="lm_head", head_h="lm_head"):
        out = [(vroot + "embed_tokens", v.VocabParallelEmbedding(), [hroot + "embed_tokens"])]
        for i in range(self.layers(cfg)):
            out += self.decoder_layer(v, cfg, i, "%slayers.%d." % (vroot, i), "%slayers.%d." % (hroot, i))
        tied = cfg.get("tie_word_embeddings", False)
        if head_h is None:  # a classifier: no lm_head in the checkpoint
            pass
        elif self.head == "embed" or (self.head == "embed_if_tied" and tied):
            out.append(("=" + hroot + "embed_tokens", None, [head_h]))  # the embedding's result
        else:
            out.append((head_v, v.ParallelLMHead(), [head_h]))
        return out

    def vllm(self, v, cfg):
        return self.mapper(), dict(self.packed), self.text_layers(v, cfg)


class Qwen3(Family):
    name, model_type, arch, attention, head = "qwen3", "qwen3", "Qwen3ForCausalLM", "Qwen3Attention", "embed_if_tied"


class LlamaTied(Family):
    name, model_type, arch, attention = "llama-tied", "llama", "LlamaForCausalLM", "LlamaAttention"

    def config(self, r):
        c = Family.config(self, r)
        c["tie_word_embeddings"] = True
        return c


class Mistral(Family):
    name, model_type, arch, attention = "mistral", "mistral", "MistralForCausalLM", "MistralAttention"


class Gemma2(Family):
    name, model_type, arch, attention, head = "gemma2", "gemma2", "Gemma2ForCausalLM", "Gemma2Attention", "embed"

    def config(self, r):
        c = Family.config(self, r)
        if r.random() < 0.5:
            del c["tie_word_embeddings"]  # GemmaConfig's default: tied
        else:
            c["tie_word_embeddings"] = True
        return c


class Gemma3(Gemma2):
    name, model_type, arch, attention = "gemma3", "gemma3_text", "Gemma3ForCausalLM", "Gemma3Attention"


class Phi3(Family):
    name, model_type, arch, attention = "phi3", "phi3", "Phi3ForCausalLM", "Phi3Attention"
    packed = {"qkv_proj": ["qkv_proj"], "gate_up_proj": ["gate_up_proj"]}

    def config(self, r):
        c = Family.config(self, r)
        c["pad_token_id"] = 0  # Phi3Config's default 32000 is outside the tiny vocabulary
        c["bos_token_id"], c["eos_token_id"] = 1, 2
        return c

    def decoder_layer(self, v, cfg, i, vp, hp):
        return [(vp + "self_attn.qkv_proj", v.QKVParallelLinear(), [hp + "self_attn.qkv_proj"]),
                (vp + "self_attn.o_proj", v.RowParallelLinear(), [hp + "self_attn.o_proj"]),
                (vp + "self_attn.attn", v.Attention(), [hp + "self_attn"]),
                (vp + "mlp.gate_up_proj", v.MergedColumnParallelLinear(), [hp + "mlp.gate_up_proj"]),
                (vp + "mlp.down_proj", v.RowParallelLinear(), [hp + "mlp.down_proj"])]


class SeqCls(Qwen3):
    name, arch = "seqcls", "Qwen3ForSequenceClassification"

    def config(self, r):
        c = Qwen3.config(self, r)
        c["num_labels"] = r.choice([2, 3])
        if r.random() < 0.3:  # LlamaForSequenceClassification: the same score, Llama's classes
            c["model_type"], c["architectures"] = "llama", ["LlamaForSequenceClassification"]
        return c

    def vllm(self, v, cfg):
        out = self.text_layers(v, cfg, head_h=None)
        out.append(("score", v.ReplicatedLinear(), ["score"]))
        return self.mapper(), dict(self.packed), out


class MoE(Family):
    leaf = ("gate_proj", "up_proj", "down_proj")
    block = "mlp"
    router_quantized = True

    def sparse(self, cfg, i):
        return True

    def n_experts(self, cfg):
        return cfg["num_experts"]

    def moe_layers(self, v, cfg, i, vp, hp):
        n = self.n_experts(cfg)
        out = [(vp + "gate", v.ReplicatedLinear() if self.router_quantized else None, [hp + "gate"])]
        out.append((vp + "experts", v.RoutedExperts(cfg["hidden_size"], cfg["moe_intermediate_size"], n),
                    [hp + "experts.%d.%s" % (e, l) for e in range(n) for l in self.leaf]))
        return out

    def decoder_layer(self, v, cfg, i, vp, hp):
        out = Family.decoder_layer(self, v, cfg, i, vp, hp)
        if self.sparse(cfg, i):
            out = out[:3] + self.moe_layers(v, cfg, i, vp + self.block + ".", hp + self.block + ".")
        return out


class Qwen3Moe(MoE):
    name, model_type, arch, attention = "qwen3_moe", "qwen3_moe", "Qwen3MoeForCausalLM", "Qwen3MoeAttention"

    def config(self, r):
        c = Family.config(self, r)
        c.update({"num_experts": r.choice([2, 3, 4]), "num_experts_per_tok": 2, "moe_intermediate_size": 128,
                  "decoder_sparse_step": r.choice([1, 1, 2]), "norm_topk_prob": True})
        k = r.random()
        if k < 0.3:
            c["mlp_only_layers"] = [0]
        elif k < 0.4:
            c["mlp_only_layers"] = []
        return c

    def sparse(self, cfg, i):
        return i not in (cfg.get("mlp_only_layers") or []) and (i + 1) % cfg.get("decoder_sparse_step", 1) == 0

    def vllm(self, v, cfg):
        packed = {"qkv_proj": ["q_proj", "k_proj", "v_proj"]}
        if cfg.get("mlp_only_layers"):
            packed["gate_up_proj"] = ["gate_proj", "up_proj"]
        return None, packed, self.text_layers(v, cfg)


class Mixtral(MoE):
    name, model_type, arch, attention = "mixtral", "mixtral", "MixtralForCausalLM", "MixtralAttention"
    leaf = ("w1", "w3", "w2")
    block = "block_sparse_moe"
    router_quantized = False
    packed = {"qkv_proj": ["q_proj", "k_proj", "v_proj"]}

    def config(self, r):
        c = Family.config(self, r)
        c.update({"num_local_experts": r.choice([2, 3, 4]), "num_experts_per_tok": 2})
        return c

    def n_experts(self, cfg):
        return cfg["num_local_experts"]

    def moe_layers(self, v, cfg, i, vp, hp):
        n = self.n_experts(cfg)
        return [(vp + "gate", None, [hp + "gate"]),
                (vp + "experts", v.RoutedExperts(cfg["hidden_size"], cfg["intermediate_size"], n),
                 [hp + "experts.%d.%s" % (e, l) for e in range(n) for l in self.leaf])]


class DeepseekV3(MoE):
    name, model_type, arch, attention = "deepseek_v3", "deepseek_v3", "DeepseekV3ForCausalLM", "DeepseekV3Attention"
    router_quantized = False
    packed = {"gate_up_proj": ["gate_proj", "up_proj"]}

    def config(self, r):
        c = Family.config(self, r)
        c.update({"n_routed_experts": r.choice([2, 3, 4]), "num_experts_per_tok": 2, "moe_intermediate_size": 128,
                  "first_k_dense_replace": r.choice([0, 1, 1]), "n_shared_experts": r.choice([1, 1, None]),
                  "q_lora_rank": r.choice([64, 64, None]), "kv_lora_rank": 64, "qk_rope_head_dim": 16,
                  "qk_nope_head_dim": 16, "v_head_dim": 32, "n_group": 1, "topk_group": 1})
        if c["n_shared_experts"] is None:
            del c["n_shared_experts"]  # DeepseekV3Config's default: 1
        c["num_key_value_heads"] = 4
        return c

    def n_experts(self, cfg):
        return cfg["n_routed_experts"]

    def sparse(self, cfg, i):
        return i >= cfg.get("first_k_dense_replace", 3) and i % cfg.get("moe_layer_freq", 1) == 0

    def decoder_layer(self, v, cfg, i, vp, hp):
        a, h = vp + "self_attn.", hp + "self_attn."
        if cfg.get("q_lora_rank") is not None:
            out = [(a + "fused_qkv_a_proj", v.MergedColumnParallelLinear(), [h + "q_a_proj", h + "kv_a_proj_with_mqa"]),
                   (a + "q_b_proj", v.ColumnParallelLinear(), [h + "q_b_proj"])]
        else:
            out = [(a + "kv_a_proj_with_mqa", v.ReplicatedLinear(), [h + "kv_a_proj_with_mqa"]),
                   (a + "q_proj", v.ColumnParallelLinear(), [h + "q_proj"])]
        out += [(a + "kv_b_proj", v.ColumnParallelLinear(), [h + "kv_b_proj"]),
                (a + "o_proj", v.RowParallelLinear(), [h + "o_proj"]),
                (a + "mla_attn.mla_attn", v.MLAAttention(), [h[:-1]])]
        m, hm = vp + "mlp.", hp + "mlp."
        if self.sparse(cfg, i):
            out += self.moe_layers(v, cfg, i, m, hm)
            if cfg.get("n_shared_experts", 1):
                out += self.mlp_layers(v, cfg, i, m + "shared_experts.", hm + "shared_experts.")
        else:
            out += self.mlp_layers(v, cfg, i, m, hm)
        return out

    def vllm(self, v, cfg):
        packed = dict(self.packed)
        if cfg.get("q_lora_rank") is not None:
            packed["fused_qkv_a_proj"] = ["q_a_proj", "kv_a_proj_with_mqa"]
        return None, packed, self.text_layers(v, cfg)


class _PrefixMapper:
    """vLLM's WeightsMapper(orig_to_new_prefix=...) as _map_name applies it
    (models/utils.py): the first matching prefix is replaced."""
    def __init__(self, prefixes):
        self.prefixes = prefixes

    def _map_name(self, key):
        for p, new in self.prefixes.items():
            if key.startswith(p):
                return None if new is None else new + key[len(p):]
        return key


class Llava(Family):
    name, model_type, arch, attention = "llava", "llava", "LlavaForConditionalGeneration", "LlamaAttention"

    def config(self, r):
        t = {"model_type": "llama", "num_hidden_layers": r.choice([1, 2])}
        t.update(_dims(r))
        vis = {"model_type": r.choice(["clip_vision_model", "clip_vision_model", "siglip_vision_model"]),
               "num_hidden_layers": r.choice([2, 3]), "hidden_size": 128,
               "intermediate_size": 256, "num_attention_heads": 4, "image_size": 32, "patch_size": 8}
        c = {"model_type": "llava", "architectures": [self.arch], "text_config": t, "vision_config": vis,
             "image_token_index": 3, "tie_word_embeddings": False}
        k = r.random()
        if k < 0.2:
            c["vision_feature_layer"] = -1
        elif k < 0.3:
            c["vision_feature_layer"] = [-2, -1]
        elif k < 0.4:
            c["vision_feature_layer"] = 1
        return c

    def ct_name(self, name, cfg=None):
        # conversion_mapping.py: "CLIPVisionModel": PrefixChange(prefix_to_remove="vision_model"),
        # and "SiglipVisionModel": "CLIPVisionModel"
        return name.replace("model.vision_tower.vision_model.", "model.vision_tower.", 1)

    def mapper(self):
        return _PrefixMapper({"model.language_model.": "language_model.model.", "model.vision_tower.": "vision_tower.",
                              "model.multi_modal_projector.": "multi_modal_projector.",
                              "lm_head.": "language_model.lm_head."})

    def vllm(self, v, cfg):
        tc = dict(cfg["text_config"])
        out = self.text_layers(v, tc, "language_model.model.", "model.language_model.", "language_model.lm_head")
        vis = cfg["vision_config"]
        fl = cfg.get("vision_feature_layer", -2)
        # llava.py _get_num_hidden_layers / utils.py get_layer_index
        idx = lambda x: vis["num_hidden_layers"] + x + 1 if x < 0 else x
        n = max(idx(x) for x in fl) if isinstance(fl, list) else idx(fl)
        for i in range(n):
            vp, hp = "vision_tower.vision_model.encoder.layers.%d." % i, \
                "model.vision_tower.vision_model.encoder.layers.%d." % i
            out += [(vp + "self_attn.qkv_proj", v.QKVParallelLinear(),
                     [hp + "self_attn." + s for s in ("q_proj", "k_proj", "v_proj")]),
                    (vp + "self_attn.out_proj", v.RowParallelLinear(), [hp + "self_attn.out_proj"]),
                    (vp + "mlp.fc1", v.ColumnParallelLinear(), [hp + "mlp.fc1"]),
                    (vp + "mlp.fc2", v.RowParallelLinear(), [hp + "mlp.fc2"])]
        out += [("multi_modal_projector.linear_1", v.ColumnParallelLinear(), ["model.multi_modal_projector.linear_1"]),
                ("multi_modal_projector.linear_2", v.RowParallelLinear(), ["model.multi_modal_projector.linear_2"])]
        return self.mapper(), {"qkv_proj": ["q_proj", "k_proj", "v_proj"], "gate_up_proj": ["gate_proj", "up_proj"]}, out


class Qwen3VL(Family):
    name, model_type, arch, attention, head = "qwen3_vl", "qwen3_vl", "Qwen3VLForConditionalGeneration", \
        "Qwen3VLTextAttention", "embed_if_tied"

    def config(self, r):
        t = {"model_type": "qwen3_vl_text", "num_hidden_layers": r.choice([1, 2])}
        t.update(_dims(r))
        vis = {"model_type": "qwen3_vl", "depth": r.choice([2, 3]), "hidden_size": 128, "intermediate_size": 256,
               "num_heads": 4, "out_hidden_size": 128, "spatial_merge_size": 2,
               "deepstack_visual_indexes": r.choice([[0], [0, 1], []]), "num_position_embeddings": 16}
        return {"model_type": "qwen3_vl", "architectures": [self.arch], "text_config": t, "vision_config": vis,
                "tie_word_embeddings": r.random() < 0.5}

    def mapper(self):
        return _PrefixMapper({"model.visual.": "visual.", "lm_head.": "language_model.lm_head.",
                              "model.language_model.": "language_model.model."})

    def vllm(self, v, cfg):
        tc = dict(cfg["text_config"])
        tc["tie_word_embeddings"] = cfg.get("tie_word_embeddings", False)
        out = self.text_layers(v, tc, "language_model.model.", "model.language_model.", "lm_head")
        vis = cfg["vision_config"]
        for i in range(vis["depth"]):
            vp, hp = "visual.blocks.%d." % i, "model.visual.blocks.%d." % i
            out += [(vp + "attn.qkv", v.QKVParallelLinear(), [hp + "attn.qkv"]),
                    (vp + "attn.proj", v.RowParallelLinear(), [hp + "attn.proj"]),
                    (vp + "mlp.linear_fc1", v.ColumnParallelLinear(), [hp + "mlp.linear_fc1"]),
                    (vp + "mlp.linear_fc2", v.RowParallelLinear(), [hp + "mlp.linear_fc2"])]
        for m in ["merger"] + ["deepstack_merger_list.%d" % k for k in range(len(vis["deepstack_visual_indexes"]))]:
            out += [("visual.%s.linear_fc1" % m, v.ColumnParallelLinear(), ["model.visual.%s.linear_fc1" % m]),
                    ("visual.%s.linear_fc2" % m, v.RowParallelLinear(), ["model.visual.%s.linear_fc2" % m])]
        packed = {"qkv_proj": ["q_proj", "k_proj", "v_proj"], "gate_up_proj": ["gate_proj", "up_proj"], "qkv": ["qkv"]}
        return self.mapper(), packed, out


class Dit(Family):
    name, attention = "dit", "Attention"

    def config(self, r):
        return {"_class_name": "QwenImageTransformer2DModel", "_diffusers_version": "0.35.2",
                "num_layers": r.choice([1, 2]), "num_attention_heads": 2, "attention_head_dim": 64,
                "in_channels": 64, "out_channels": 16, "joint_attention_dim": 128, "patch_size": 2,
                "axes_dims_rope": [16, 24, 24]}

    def build(self, cfg):
        import torch
        from diffusers import QwenImageTransformer2DModel
        kw = {k: v for k, v in cfg.items() if not k.startswith("_") and k != "quantization_config"}
        with torch.device("meta"):
            return QwenImageTransformer2DModel(**kw)

    def linears(self, cfg):
        out = ["img_in", "txt_in", "time_text_embed.timestep_embedder.linear_1",
               "time_text_embed.timestep_embedder.linear_2"]
        for i in range(cfg["num_layers"]):
            p = "transformer_blocks.%d." % i
            out += [p + "img_mod.1", p + "txt_mod.1"]
            out += [p + "attn." + s for s in ("to_q", "to_k", "to_v", "add_q_proj", "add_k_proj", "add_v_proj",
                                              "to_out.0", "to_add_out")]
            out += [p + m + "_mlp.net." + s for m in ("img", "txt") for s in ("0.proj", "2")]
        return out + ["norm_out.linear", "proj_out"]

    def vllm(self, v, cfg):
        return None, {}, [(n, v.ColumnParallelLinear(), [n]) for n in self.linears(cfg)]


class Llama(Family):
    name, model_type, arch, attention = "llama", "llama", "LlamaForCausalLM", "LlamaAttention"


# the generated families (--family); qwen3 and llama are the first generator's
# (semantics_diff.py), here for suite_check.py
EXTRA = {f.name: f for f in (Qwen3(), Llama())}
FAMILIES = {f.name: f for f in (Qwen3(), LlamaTied(), Mistral(), Gemma2(), Gemma3(), Phi3(), SeqCls(), Qwen3Moe(),
                                Mixtral(), DeepseekV3(), Llava(), Qwen3VL(), Dit())}


# ---- name pools: what targets and ignore entries are drawn from ---------------------

GENERIC_CLASSES = ["Linear", "Linear", "Linear", "Linear", "Linear", "Linear", "Embedding", "Module", "LinearBase",
                   "Parallel", "QKVParallelLinear", "RowParallelLinear", "ColumnParallelLinear", "ReplicatedLinear",
                   "MergedColumnParallelLinear", "ParallelLMHead", "VocabParallelEmbedding", "FusedMoE",
                   "RoutedExperts", "Experts", "linear", "MLP", "Attention", "LINEAR"]


class Pool:
    """Names, classes and regexes of one family, from the transformers / diffusers
    model, ctq's module list and vLLM's runtime layers of a 3-layer config."""
    def __init__(self, fam, names, classes):
        self.fam = fam
        self.names = sorted(set(names))
        self.classes = sorted(set(classes))
        leaves, parents = set(), set()
        for n in self.names:
            parts = n.split(".")
            leaves.add(parts[-1])
            for p in parts[:-1]:
                if not p.isdigit():
                    parents.add(p)
        self.regexes = []
        for l in sorted(leaves):
            if l.isdigit():
                continue
            self.regexes += ["re:.*%s$" % re.escape(l).replace("\\_", "_"), "re:.*%s" % l]
        for p in sorted(parents):
            self.regexes += [r"re:.*%s\..*" % p, "re:.*%s$" % p]
        self.regexes += ["re:.*", "re:.*proj", r"re:.*layers\.0\..*", r"re:.*\.0\..*", "re:.*(q|k|v)_proj$",
                         "re:.*experts.*", r"re:.*experts\.0\..*", r"re:.*experts\.1\..*", "re:.*gate$",
                         "re:.*shared_expert.*", "re:.*vision.*", "re:.*visual.*", "re:.*language_model.*",
                         "re:.*lm_head", "re:.*embed.*", "re:.*norm", "re:.*attn.*", "re:.*mlp.*"]

    def name(self, r):
        n = r.choice(self.names)
        if r.random() < 0.03:  # a layer the config does not have
            n = re.sub(r"\.(\d+)\.", ".9.", n, count=1)
        return n


def pool_for(fam, ctq_names, ctq_types):
    import torch
    r = random.Random(0)
    cfg = fam.config(r)
    if "num_hidden_layers" in cfg:
        cfg["num_hidden_layers"] = 3
    names, classes = list(ctq_names), list(ctq_types) + GENERIC_CLASSES + [fam.attention] * 3
    m = fam.build(cfg)
    for n, mod in m.named_modules():
        if n:
            names.append(n)
            classes.append(type(mod).__name__)
    return Pool(fam, names, classes)
