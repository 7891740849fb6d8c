#!/usr/bin/env python3
"""Differential oracle: ctq's `ct` and `vllm` semantics profiles against the
real libraries, module by module, over seeded generated configs.

    ORACLE_PY=/path/to/python make test-oracle        # or: make test-oracle (venv under build/)
    python tests/oracle/semantics_diff.py --ctq build/ctq --vllm-wheel WHEEL [--n 500] [--seed 1]
        [--family all|F1,F2,...] [--out build/oracle-out] [--min 99.5] [--real-configs ../shared/configs]
        [--shrink 25]

Families (--family, default all; --n configs each, results per family under
--out/<family>/ and all of them in --out/summary.json):
  qwen3-llama   the first generator, below (Qwen3, one in four Llama, tied or not)
  llama-tied, mistral, gemma2, gemma3 (gemma3_text), phi3 (fused qkv_proj /
  gate_up_proj), seqcls (Qwen3ForSequenceClassification, `score`), qwen3_moe,
  mixtral, deepseek_v3 (MLA, shared experts, dense first layers), llava (CLIP
  tower, projector, text_config), qwen3_vl (vision blocks, mergers), dit
  (diffusers QwenImageTransformer2DModel)
tests/oracle/families.py holds each: a tiny config generator (2-3 layers, 2-4
experts, hidden 128), the model the ct side builds on the meta device
(transformers 5.23's own class named in `architectures`, through
AutoConfig.for_model; diffusers 0.35.2's QwenImageTransformer2DModel for the
DiT), the name transformers gives a module ctq names by its checkpoint name,
and the runtime layers vLLM 0.26.0 builds (read in the wheel's
vllm/model_executor/models/*.py; its docstring cites them): fused layers,
FusedMoE blocks (a RoutedExperts layer asked with the FusedMoE prefix, whose
method vLLM's own compressed_tensors_moe.py get_moe_method picks, executed from
the wheel with the MoE methods' constructors), routers built with or without
quant_config, MLAAttention, the multimodal models' hf_to_vllm_mapper and head
layers, Llava's tower built up to vision_feature_layer. Targets and ignore
entries of the other families are drawn from the family's own names and
classes (the transformers model's modules, ctq's module list and vLLM's layer
names of a 3-layer config) and from regexes built on their components; the
args, presets, formats and KV schemes are the first generator's. A module the
library quantizes that ctq does not list counts as a disagreement.


Each generated case is a full config.json of a small transformers Qwen3
(model_type qwen3, Qwen3ForCausalLM, 2-4 layers, hidden 64, 4 heads, 2 KV heads,
head_dim 16, intermediate 128, vocab 256, tie_word_embeddings true or false),
or in one case of four the same shape as a Llama (model_type llama,
LlamaForCausalLM; Qwen3 class names in targets and ignore read as Llama's),
with a compressed-tensors `quantization_config`: class, exact-name, fused-name
and `re:` targets, repeated and overlapping groups, ignore lists (names,
regexes, class names, one fused shard), every preset of compressed-tensors
0.20.0 (as preset-list groups and as explicit args), hand-written args, args in
the producer's full-key style, per-group and global formats, kv_cache_scheme,
attention and input-only groups (weights null), and some invalid shapes (then
both sides must refuse).

What runs on each side:
  ct    compressed-tensors 0.20.0 on transformers (5.23.0 in make test-oracle):
        the path transformers' CompressedTensorsHfQuantizer runs before weight
        loading: CompressedTensorsConfig.from_dict (which calls
        compressed_tensors' QuantizationConfig.model_validate, and skips
        quantization when there are no config_groups and no kv_cache_scheme),
        ModelCompressor.from_compression_config, then
        apply_quantization_config(model, deepcopy(config), run_compressed=False)
        on a Qwen3ForCausalLM built on the meta device. compress_model (the
        packed-tensor layout that follows) is not run: it decides no scheme.
        Each module's `quantization_scheme` is read (None: unquantized). Any
        exception from these calls refuses the whole config.
        transformers 5.24 renamed the attention's `past_key_values` argument
        to `cache`; compressed-tensors 0.20.0 finds cached attention modules by
        that name, so under 5.24 no kv_cache_scheme or attention group applies.
  vllm  vLLM's own resolver source, read from the wheel of vLLM 0.26.0
        (`pip download vllm==0.26.0 --no-deps`, into build/oracle-wheels by
        make test-oracle; no vLLM code is kept in this tree) and executed with
        every other vllm.* import stubbed (tests/oracle/vllm_stub.py: import
        plumbing, the layer classes and an SM 9.0 device; every decision is
        vLLM's text): CompressedTensorsConfig.from_config, apply_vllm_mapper
        (Qwen3's unstacked mapper, which renames nothing), get_quant_method
        for each runtime layer (the LinearBase path with get_scheme,
        _get_scheme_from_parts and the scheme classes' constructors; the
        ParallelLMHead path that catches ValueError and falls through to the
        embedding path; the VocabParallelEmbedding WNA16 check; Attention ->
        CompressedTensorsKVCacheMethod and its kv_cache_scheme validation),
        should_ignore_layer and find_matched_target.
        Why 0.26.0: ctq's vllm profile follows utils.py @ 008014e8 and
        compressed_tensors.py @ f14c4ffd, where find_matched_target tries the
        layer name, then the class-name substring, then the fused shards.
        Among the releases on PyPI, 0.11.0 ... 0.26.0 have that order; 0.27.0
        and later (0.27.0, 0.30.0, 0.33.0 checked) try the fused shards before
        the class. 0.26.0 is the last release with name -> class -> fused and
        the one that has everything else spec section 5.2 / 6 describe (the
        embedding path with `_is_wNa16_group_channel(weights, None)`, None on
        no match, WNA8O8Int, the WNA8Int/WNA4Int "Humming" schemes, the
        Attention-group drop in from_config). One difference from the spec:
        its is_activation_quantization_format has no mxfp4-pack-quantized.
        vLLM itself does not import here: the package needs its compiled CUDA
        extensions (vllm/_C*.so) and pins torch==2.11.0 and
        compressed-tensors==0.17.0 (conflicting with the 0.20.0 under test),
        plus server-only dependencies (zmq, fastapi, ...) absent on a CPU-only
        machine. Its resolver is therefore run against compressed-tensors
        0.20.0's QuantizationArgs, not the 0.17.0 a vLLM 0.26.0 install
        brings: where the two parse args differently (0.20.0 refuses
        actorder "group", which 0.17.0 accepts), the vllm side shows 0.20.0's
        answer. vLLM's runtime layers for a Qwen3:
        model.embed_tokens (VocabParallelEmbedding), per layer
        self_attn.qkv_proj (QKVParallelLinear) and mlp.gate_up_proj
        (MergedColumnParallelLinear), self_attn.o_proj and mlp.down_proj
        (RowParallelLinear), self_attn.attn (Attention); lm_head
        (ParallelLMHead) only when not tied (tied: lm_head is embed_tokens).
        vLLM's LlamaForCausalLM builds lm_head as a ParallelLMHead whether
        tied or not (llama.py: ParallelLMHead(..., quant_config, prefix
        "lm_head"), then tie_weights), so a Llama's lm_head always runs
        through get_quant_method as a ParallelLMHead.
        A fused layer's result is given to each HF member; ctq's self_attn is
        vLLM's Attention (its KV-cache method).

How agreement is counted, per module and profile (ctq: `inspect --semantics
all --json`):
  - the library leaves it unquantized: ctq says `unquantized`;
  - the library attaches a scheme: ctq names a group whose weights / input /
    output args, as the library parses them, equal the attached ones (a
    KV-cache scheme: ctq says kv-*); for vLLM also ctq's `vllm_class` is the
    scheme class vLLM builds (CompressedTensorsW8A8Int8, ...WNA16,
    ...EmbeddingWNA16Int);
  - vLLM raises for that layer (NotImplementedError / ValueError from scheme
    selection, a scheme constructor, the embedding path, the fused ignore
    check, the KV-cache validation): ctq reports a module error;
  - the library refuses the whole config (ValidationError, KeyError for an
    unknown preset, compressed-tensors' "Cannot apply weight quantization to
    attention", vLLM's TypeError / AssertionError in from_config), or ctq
    reports a config error: both agree for every module when the other side
    also fails (ctq: a config error or any module error; the library: a
    whole-config error or an error on any layer, which stops a vLLM load).
Per profile it prints modules agreeing / total, configs agreeing in every
module / total, the split by the library's outcome, and the disagreement
patterns (module kind | library outcome | ctq outcome) with an example config
shrunk greedily to a minimal one that still shows the pattern
(build/oracle-out/<profile>-NN.json; rerun `ctq inspect FILE --semantics all`),
plus build/oracle-out/summary.json with every pattern. Not counted, shown
apart: the whole-config refusals both sides share, and configs on which
transformers' compress_model fails after apply_quantization_config accepted.
The ctq binary is copied once at start, so a rebuild meanwhile does not mix
two builds. Exit 1 when a profile is below --min percent of modules.
"""
import argparse
import copy
import glob
import json
import logging
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import warnings



warnings.filterwarnings("ignore")
os.environ.setdefault("TQDM_DISABLE", "1")  # compress_model's progress bars
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from families import GENERIC_CLASSES  # noqa: E402

PROFILES = ("ct", "vllm")
LEGACY = "qwen3-llama"  # the generator of the first oracle: Qwen3 and Llama, tied or not
ALL_FAMILIES = [LEGACY, "llama-tied", "mistral", "gemma2", "gemma3", "phi3", "seqcls", "qwen3_moe", "mixtral",
                "deepseek_v3", "llava", "qwen3_vl", "dit"]
FUSED = {"qkv_proj": ["q_proj", "k_proj", "v_proj"], "gate_up_proj": ["gate_proj", "up_proj"]}
PROJ = ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
        "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"]

# ---- generator -------------------------------------------------------------------

def _a(bits, typ, strat, sym=True, dyn=False, gs=None, **kw):
    d = {"num_bits": bits, "type": typ, "symmetric": sym, "strategy": strat, "dynamic": dyn}
    if gs is not None:
        d["group_size"] = gs
    d.update(kw)
    return d


WEIGHTS = [  # (weight, args)
    (12, _a(8, "int", "channel")), (3, _a(8, "int", "tensor")), (2, _a(8, "int", "channel", sym=False)),
    (2, _a(8, "int", "group", gs=128)), (1, _a(8, "int", "group", gs=32)),
    (6, _a(4, "int", "group", gs=128)), (3, _a(4, "int", "group", gs=32)), (2, _a(4, "int", "group", sym=False, gs=128)),
    (2, _a(4, "int", "channel")), (1, _a(4, "int", "channel", sym=False)),
    (1, _a(2, "int", "group", gs=128)), (1, _a(3, "int", "group", gs=64)), (1, _a(5, "int", "group", gs=128)),
    (1, _a(6, "int", "channel")), (1, _a(7, "int", "group", gs=128)),
    (1, _a(4, "int", "group", gs=128, actorder="weight")), (1, _a(4, "int", "group", gs=128, actorder=None)),
    (0.3, _a(4, "int", "group", gs=128, actorder="group")),
    (1, _a(8, "int", "tensor", dyn=True)), (1, _a(8, "int", "block", block_structure=[128, 128])),
    (4, _a(8, "float", "tensor")), (4, _a(8, "float", "channel")), (2, _a(8, "float", "block", block_structure=[128, 128])),
    (1, _a(8, "float", "group", gs=128)), (1, _a(8, "float", "channel", sym=False)),
    (3, _a(4, "float", "tensor_group", gs=16, scale_dtype="float8_e4m3fn")),
    (2, _a(4, "float", "group", gs=32, scale_dtype="uint8")), (1, _a(8, "float", "group", gs=32, scale_dtype="uint8")),
    (1, _a(6, "float", "group", gs=32, scale_dtype="uint8")), (1, _a(4, "float", "group", gs=16)),
    (1, _a(16, "int", "channel")), (1, _a(1, "int", "group", gs=128)),
]
INPUTS = [
    (30, None), (14, _a(8, "int", "token", dyn=True)), (3, _a(8, "int", "token", sym=False, dyn=True)),
    (4, _a(8, "int", "tensor")), (2, _a(8, "int", "tensor", sym=False)), (1, _a(8, "int", "tensor", dyn=True)),
    (1, _a(4, "int", "token", dyn=True)), (1, _a(8, "int", "group", dyn=True, gs=128)),
    (8, _a(8, "float", "token", dyn=True)), (4, _a(8, "float", "tensor")), (1, _a(8, "float", "tensor", dyn=True)),
    (1, _a(8, "float", "group", dyn=True, gs=128)),
    (2, _a(4, "float", "tensor_group", dyn="local", gs=16, scale_dtype="float8_e4m3fn")),
    (1, _a(4, "float", "group", dyn=True, gs=32, scale_dtype="uint8")), (1, _a(8, "int", "token")),
    (1, _a(8, "float", "group", dyn=True, gs=32, scale_dtype="uint8")),
]
OUTPUTS = [(92, None), (4, _a(8, "int", "tensor")), (2, _a(8, "float", "tensor")), (2, _a(8, "int", "token", dyn=True))]
FORMATS = [(8, "int-quantized"), (5, "pack-quantized"), (5, "float-quantized"), (4, "naive-quantized"),
           (2, "nvfp4-pack-quantized"), (2, "mxfp4-pack-quantized"), (1, "mxfp8-quantized"),
           (1, "mxfp6-pack-quantized"), (1, "dense"), (1, "marlin-24"), (1, "mixed-precision"),
           (1, "fakequant"), (1, "sparse-bitmask"), (1, "INT-QUANTIZED")]
GROUP_FORMATS = [(8, "int-quantized"), (6, "pack-quantized"), (5, "float-quantized"), (3, "naive-quantized"),
                 (2, "nvfp4-pack-quantized"), (2, "mxfp4-pack-quantized"), (1, "mxfp8-quantized"),
                 (1, "mxfp6-pack-quantized"), (1, "dense"), (1, "mixed-precision"), (1, "fakequant")]
CLASSES = [(30, "Linear"), (2, "linear"), (1, "Module"), (3, "Embedding"), (2, "Qwen3Attention"), (1, "Attention"),
           (1, "Qwen3MLP"), (1, "Qwen3RMSNorm"), (1, "Qwen3DecoderLayer"), (1, "LinearBase"), (1, "Parallel"),
           (1, "QKVParallelLinear"), (1, "RowParallelLinear"), (1, "ParallelLMHead"), (1, "VocabParallelEmbedding"),
           (1, "embedding"), (1, "MLP"), (1, "LINEAR"), (1, "Qwen3ForCausalLM")]
REGEXES = ["re:.*down_proj", "re:.*self_attn$", "re:.*self_attn", "re:.*mlp.*", r"re:.*layers\.0\..*",
           "re:.*lm_head", "re:.*embed.*", "re:.*q_norm", "re:.*_proj", "re:.*proj", "re:.*proj$",
           "re:.*[qkv]_proj", "re:.*(q|k|v)_proj$", "re:.*qkv_proj", "re:.*gate_up_proj", "re:.*o_proj",
           "re:.*up_proj", "re:.*gate_proj", "re:.*(gate|up)_proj", r"re:.*mlp\.(gate|up|down)_proj$",
           r"re:.*self_attn\..*", "re:.*attn.*", "re:.*norm", "re:.*norm$", r"re:model\.layers\.[01]\..*",
           "re:model.layers.1.*", r"re:.*layers\.1\.mlp.*", "re:.*", "re:lm_head", "re:q_proj", "re:.*k_proj$",
           r"re:.*layers\.\d+\.self_attn\.[qkv]_proj", r"re:.*self_attn\.(q|k|v|o)_proj", "re:.*embed_tokens$",
           "re:.*Linear", "re:Linear", "re:.*mlp$", r"re:.*layers\.1$", "re:model.*", "re:.*(self_attn|attention)$",
           "re:(?i).*DOWN_PROJ", "re:.*self_attn.attn", r"re:.*\.(k|v)_proj", "re:.*v_proj|.*o_proj"]
BAD_REGEXES = ["re:.*[", "re:(unclosed", "re:*x"]
PRESET_GROUP_NAMES = None  # filled from compressed_tensors at run time


def wchoice(r, table):
    tot = sum(w for w, _ in table)
    x = r.random() * tot
    for w, v in table:
        x -= w
        if x < 0:
            return v
    return table[-1][1]


def name_target(r, L):
    i = r.randrange(L) if r.random() < 0.97 else L + 1
    p = "model.layers.%d." % i
    k = r.random()
    if k < 0.45:
        return p + r.choice(PROJ)
    if k < 0.52:
        return p + r.choice(["self_attn", "mlp", "self_attn"]) if r.random() < 0.9 else p[:-1]
    if k < 0.65:
        return p + r.choice(["self_attn.qkv_proj", "mlp.gate_up_proj"])
    if k < 0.68:
        return p + r.choice(["self_attn.attn", "self_attn.q_norm", "input_layernorm"])
    return r.choice(["lm_head", "lm_head", "model.embed_tokens", "model.embed_tokens", "model.norm", "model"])


POOL = None  # families.Pool of the family being generated; None: the qwen3/llama generator


def target(r, L):
    if POOL is not None:
        k = r.random()
        if k < 0.40:
            return r.choice(POOL.classes + GENERIC_CLASSES * 3)
        if k < 0.70:
            return POOL.name(r)
        if k < 0.995:
            return r.choice(POOL.regexes) if r.random() < 0.8 else r.choice(REGEXES)
        return r.choice(BAD_REGEXES)
    k = r.random()
    if k < 0.45:
        return wchoice(r, CLASSES)
    if k < 0.70:
        return name_target(r, L)
    if k < 0.995:
        return r.choice(REGEXES)
    return r.choice(BAD_REGEXES)


def producer_style(r, args):
    """The same args as a producer writes them: all keys (llm-compressor), the
    minimal set, or with a defaulted key left out."""
    if args is None:
        return None
    d = dict(args)
    k = r.random()
    if k < 0.35:
        full = {"num_bits": None, "type": "int", "symmetric": True, "group_size": None, "strategy": None,
                "block_structure": None, "dynamic": False, "actorder": None, "scale_dtype": None,
                "zp_dtype": None, "observer": "minmax" if not d.get("dynamic") else "memoryless",
                "observer_kwargs": {}}
        full.update(d)
        d = full
    elif k < 0.42:  # keys left at their default
        for key, default in (("symmetric", True), ("dynamic", False), ("type", "int")):
            if d.get(key) == default and r.random() < 0.6:
                del d[key]
    return d


def mutate(r, args):
    if args is None or r.random() > 0.08:
        return args
    d = dict(args)
    m = r.randrange(5)
    if m == 0:
        d["symmetric"] = not d.get("symmetric", True)
    elif m == 1:
        d["strategy"] = r.choice(["channel", "tensor", "group", "token", "tensor_group", "block", "attn_head"])
        if d["strategy"] in ("group", "tensor_group") and "group_size" not in d:
            d["group_size"] = r.choice([16, 32, 128])
    elif m == 2:
        d["dynamic"] = r.choice([True, False, "local"])
    elif m == 3:
        d["num_bits"] = r.choice([2, 4, 6, 8])
    else:
        d["group_size"] = r.choice([16, 32, 64, 128, None])
    return d


def preset_args(name):
    from compressed_tensors.quantization.quant_scheme import PRESET_SCHEMES
    from compressed_tensors.quantization import QuantizationArgs
    out = {}
    for k, v in PRESET_SCHEMES[name].items():
        if isinstance(v, QuantizationArgs):
            d = v.model_dump(mode="json")
            for key in ("scale_dtype", "zp_dtype"):
                if isinstance(d.get(key), str) and d[key].startswith("torch."):
                    d[key] = d[key][len("torch."):]
            out[k] = d
        else:
            out[k] = v
    return out


def gen_scheme(r):
    if r.random() < 0.45:
        name = r.choice(PRESET_GROUP_NAMES)
        s = preset_args(name)
        return {k: mutate(r, s.get(k)) for k in ("weights", "input_activations", "output_activations")}
    return {"weights": mutate(r, wchoice(r, WEIGHTS)), "input_activations": mutate(r, wchoice(r, INPUTS)),
            "output_activations": wchoice(r, OUTPUTS)}


def infer_format(s):
    """The format a producer would write for the first group (spec section 4.1)."""
    w, a = s.get("weights"), s.get("input_activations")
    if not w:
        return "dense"
    if w.get("type") == "float" and w.get("num_bits") == 4:
        return "mxfp4-pack-quantized" if w.get("group_size") == 32 else "nvfp4-pack-quantized"
    if w.get("type") == "float" and w.get("num_bits") == 6:
        return "mxfp6-pack-quantized"
    if w.get("type") == "float" and w.get("group_size") == 32:
        return "mxfp8-quantized"
    if w.get("type") == "int":
        return "int-quantized" if a and a.get("type") != "float" else "pack-quantized"
    return "float-quantized" if a else "naive-quantized"


def gen_group(r, L):
    k = r.random()
    if k < 0.04:  # preset-list group
        name = r.choice(PRESET_GROUP_NAMES + ["w8a8", "fp8_dynamic", "W9A9"])
        return name, [target(r, L) for _ in range(r.randint(1, 2))]
    if k < 0.09:  # attention group (llm-compressor's attention quantization)
        g = {"targets": [r.choice(["Qwen3Attention", "Qwen3Attention", "Qwen3Attention", "Attention", "re:.*self_attn$",
                                   "model.layers.0.self_attn", "re:.*(self_attn|attention)$", "re:.*self_attn"])]}
        if r.random() < 0.15:
            g["targets"].append(target(r, L))
        g["input_activations"] = producer_style(r, r.choice([_a(8, "float", "tensor"), _a(8, "float", "tensor"),
                                                             _a(8, "int", "tensor"), _a(8, "float", "attn_head")]))
        x = r.random()
        if x < 0.5:
            g["weights"] = None
        elif x < 0.75:
            pass
        else:
            g["weights"] = producer_style(r, wchoice(r, WEIGHTS))
        return None, g
    if k < 0.11:  # input-only group
        g = {"targets": [target(r, L)], "weights": None,
             "input_activations": producer_style(r, _a(8, "int", "token", dyn=True))}
        return None, g
    s = gen_scheme(r)
    n = r.choice([1, 1, 1, 2, 2, 3]) if r.random() > 0.01 else 0
    g = {"targets": [target(r, L) for _ in range(n)]}
    for key in ("weights", "input_activations", "output_activations"):
        v = producer_style(r, s.get(key))
        if v is not None or r.random() < 0.3:
            g[key] = v
    if r.random() < 0.25:
        g["format"] = wchoice(r, GROUP_FORMATS)
    return None, g


def ignore_entry(r, L):
    if POOL is not None:
        k = r.random()
        if k < 0.25:
            return r.choice(["lm_head", "re:.*lm_head", "re:.*gate$", "re:.*mlp.gate$", "re:.*shared_expert_gate",
                             "re:.*embed_tokens", "re:.*vision.*", "re:.*visual.*", "re:.*multi_modal_projector.*",
                             "re:.*mod.*", "re:.*score", "score", "re:.*experts.*", r"re:.*experts\.0\..*"])
        if k < 0.65:
            n = POOL.name(r)
            if r.random() < 0.15 and n.rsplit(".", 1)[-1] in ("q_proj", "gate_proj", "w1", "q_a_proj"):
                sib = {"q_proj": ["k_proj", "v_proj"], "gate_proj": ["up_proj"], "w1": ["w3", "w2"],
                       "q_a_proj": ["kv_a_proj_with_mqa"]}[n.rsplit(".", 1)[-1]]
                return [n] + [n.rsplit(".", 1)[0] + "." + x for x in sib]
            return n
        if k < 0.9:
            return r.choice(POOL.regexes)
        return r.choice(POOL.classes)
    i = r.randrange(L)
    p = "model.layers.%d." % i
    return r.choice([
        "lm_head", "lm_head", "lm_head", "re:.*lm_head", "model.embed_tokens", "re:.*embed_tokens",
        p + "self_attn.q_proj", p + "self_attn.v_proj", p + "mlp.up_proj", p + "mlp.down_proj", p + "self_attn.o_proj",
        [p + "self_attn.q_proj", p + "self_attn.k_proj", p + "self_attn.v_proj"], [p + "mlp.gate_proj", p + "mlp.up_proj"],
        p + "self_attn.qkv_proj", p + "mlp.gate_up_proj", "re:.*qkv_proj$", "re:.*gate_up_proj", "Linear",
        "Qwen3Attention", "Embedding", "re:.*self_attn.*", "re:.*down_proj", "re:model.layers.1.*", "self_attn",
        p + "self_attn", p + "mlp", r"re:.*mlp\..*", "re:.*[kv]_proj", "Qwen3RMSNorm", "re:.*norm", "re:.*q_proj",
        "re:.*gate_proj", "QKVParallelLinear", "model.layers.%d" % i, "re:.*self_attn$"])


def gen_config(r):
    L = r.choice([2, 3, 4])
    groups = {}
    ng = r.choice([1, 1, 1, 2, 2, 3, 4]) if r.random() > 0.02 else 0
    for gi in range(ng):
        pname, g = gen_group(r, L)
        name = pname if pname else r.choice(["group_%d" % gi] * 6 + ["attn", "g%d" % gi, "FP8"])
        while name in groups:
            name += "_"
        groups[name] = g
    q = {"quant_method": "compressed-tensors"}
    if r.random() < 0.9:
        q["version"] = "0.20.0"
    first = next((g for g in groups.values() if isinstance(g, dict)), {})
    inferred = {infer_format(g) for g in groups.values() if isinstance(g, dict) and g.get("weights")}
    k = r.random()
    if len(inferred) > 1 and k < 0.6:  # what llm-compressor writes for mixed groups
        q["format"] = "mixed-precision"
        for g in groups.values():
            if isinstance(g, dict) and g.get("weights") and "format" not in g:
                g["format"] = infer_format(g)
    elif k < 0.7:
        q["format"] = infer_format(first)
    elif k < 0.92:
        q["format"] = wchoice(r, FORMATS)
    q["config_groups"] = groups
    ign = []
    for _ in range(r.choice([0, 1, 1, 1, 2, 3])):
        e = ignore_entry(r, L)
        ign.extend(e if isinstance(e, list) else [e])
    if ign or r.random() < 0.5:
        q["ignore"] = ign
    k = r.random()
    if k < 0.25:
        q["kv_cache_scheme"] = producer_style(r, _a(8, "float", "tensor"))
    elif k < 0.30:
        q["kv_cache_scheme"] = producer_style(r, _a(8, "float", "attn_head"))
    elif k < 0.34:
        q["kv_cache_scheme"] = producer_style(r, _a(8, "int", "tensor"))
    elif k < 0.36:
        q["kv_cache_scheme"] = _a(8, "float", "tensor", sym=False)
    elif k < 0.38:
        q["kv_cache_scheme"] = _a(8, "float", r.choice(["channel", "token", "group"]), gs=r.choice([None, 16]),
                                  dyn=r.choice([False, True]))
    elif k < 0.39:
        q["kv_cache_scheme"] = _a(4, "float", "tensor")
    elif k < 0.55:
        q["kv_cache_scheme"] = None
    k = r.random()
    if k < 0.7:
        q["quantization_status"] = "compressed"
    elif k < 0.8:
        q["quantization_status"] = r.choice(["frozen", "initialized"])
    if r.random() < 0.3:
        q["global_compression_ratio"] = r.choice([None, 1.53])
    if r.random() < 0.04:
        q["sparsity_config"] = {}
    if POOL is not None:
        c = POOL.fam.config(r)
        c["quantization_config"] = json.loads(json.dumps(q).replace('"Qwen3Attention"', json.dumps(POOL.fam.attention)))
        return c
    tie = r.random() < 0.5
    return wrap(q, L, tie, "llama" if r.random() < 0.25 else "qwen3")


ARCHS = {"qwen3": "Qwen3ForCausalLM", "llama": "LlamaForCausalLM"}


def wrap(block, L=2, tie=False, model_type="qwen3"):
    # every in_features (128, 128, 256) divisible by the group sizes of the
    # presets (16, 32, 128), as in real checkpoints
    if model_type == "llama":  # the Qwen3 class names the generator writes, as Llama's
        block = json.loads(json.dumps(block).replace('"Qwen3', '"Llama'))
    return {"model_type": model_type, "architectures": [ARCHS[model_type]], "hidden_size": 128,
            "num_hidden_layers": L, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
            "intermediate_size": 256, "vocab_size": 256, "tie_word_embeddings": tie, "quantization_config": block}


def fmt_exc(e):
    msg = str(e).strip().splitlines()
    return "%s: %s" % (type(e).__name__, (msg[0] if msg else "")[:240])


# ---- compressed-tensors ------------------------------------------------------------

def ct_side(cfg, fam=None):
    """({module name: QuantizationScheme or None}, the parsed QuantizationConfig,
    None, compress error or None), or (None, None, error, None) when the
    library refuses the config. Module names are the model's own (a family's
    ct_name maps ctq's to them)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen3Config, Qwen3ForCausalLM
    from transformers.utils.quantization_config import CompressedTensorsConfig
    from transformers.quantizers.quantizer_compressed_tensors import CompressedTensorsHfQuantizer
    from compressed_tensors.quantization import apply_quantization_config
    if fam is not None:
        model = fam.build(cfg)
    else:
        conf_cls, model_cls = ((LlamaConfig, LlamaForCausalLM) if cfg.get("model_type") == "llama"
                               else (Qwen3Config, Qwen3ForCausalLM))
        c = conf_cls(**{k: v for k, v in cfg.items() if k not in ("quantization_config", "model_type")})
        with torch.device("meta"):
            model = model_cls(c)
    try:
        # from_pretrained with a compressed-tensors quantization_config: the
        # quantizer, then its _process_model_before_weight_loading (dequantize
        # and use_optimized_inference off, their defaults) up to
        # compress_model, which is run apart below
        hq = CompressedTensorsConfig.from_dict(copy.deepcopy(cfg["quantization_config"]))
        quantizer = CompressedTensorsHfQuantizer(hq)
        quantizer.validate_environment()
        qc = quantizer.compressor.quantization_config
        apply_quantization_config(model, copy.deepcopy(qc), run_compressed=False, show_progress=False)
    except Exception as e:  # the library refuses the config
        return None, None, fmt_exc(e), None
    schemes = {n: getattr(m, "quantization_scheme", None) for n, m in model.named_modules()}
    cerr = None
    try:
        if hq.is_quantization_compressed:
            quantizer.compressor.compress_model(model=model)
    except Exception as e:  # packing the weights into the format's layout
        cerr = fmt_exc(e)
    return schemes, qc, None, cerr


def args_eq(a, b):
    return a == b


def ct_compare(e, lib, qc):
    """(agree, library summary) for one module of a config the library accepted."""
    if lib is None or (lib.weights is None and lib.input_activations is None and lib.output_activations is None):
        # no scheme, or one that quantizes nothing (the UNQUANTIZED preset)
        return ("error" not in e and e.get("scheme") == "unquantized"), "unquantized"
    w, i, o = lib.weights, lib.input_activations, lib.output_activations
    summ = "quantized (%s)" % argsum(w, i, o)
    if "error" in e or e.get("scheme") == "unquantized":
        return False, summ
    g = e.get("group")
    if g is None:
        if e.get("scheme", "").startswith("kv-") and qc is not None and qc.kv_cache_scheme is not None:
            return (w is None and o is None and args_eq(i, qc.kv_cache_scheme)), summ
        return False, summ
    if qc is None or g not in qc.config_groups:
        return False, summ
    s = qc.config_groups[g]
    ok = args_eq(w, s.weights) and args_eq(i, s.input_activations) and args_eq(o, s.output_activations)
    return ok, summ if ok else summ + " != ctq group %s (%s)" % (g, argsum(s.weights, s.input_activations,
                                                                            s.output_activations))


def a1(x):
    if x is None:
        return "-"
    if isinstance(x, dict):
        t, b, s = x.get("type"), x.get("num_bits"), x.get("strategy")
    else:
        t, b, s = x.type, x.num_bits, x.strategy
    return "%s%s/%s" % ({"int": "i", "float": "f"}.get(str(t), str(t)), b, s)


def argsum(w, i, o):
    return "W %s A %s%s" % (a1(w), a1(i), "" if o is None else " O " + a1(o))


# ---- vLLM ---------------------------------------------------------------------------

class _UnstackedQwen3Mapper:
    """Qwen3ForCausalLM.hf_to_vllm_mapper.get_unstacked_mapper() in vLLM 0.26.0:
    Qwen2Model's mapper has only orig_to_new_stacked, which get_unstacked_mapper
    drops, so every name maps to itself."""
    def _map_name(self, key):
        return key


def vllm_side(v, cfg, fam=None):
    """({hf module name: result}, None) or (None, error). A result is a dict:
    kind plain|quant|kv|error, cls (scheme class), w/i/o args, target, err."""
    q = copy.deepcopy(cfg["quantization_config"])
    layers = None
    packed = FUSED
    try:
        conf = v.ct.CompressedTensorsConfig.from_config(q)
        if fam is not None:
            mapper, packed, layers = fam.vllm(v, cfg)
            conf.apply_vllm_mapper(mapper or _UnstackedQwen3Mapper())
        else:
            conf.apply_vllm_mapper(_UnstackedQwen3Mapper())
        conf.packed_modules_mapping = packed
    except Exception as e:
        return None, fmt_exc(e)
    out = {}

    def run(prefix, layer, members):
        if prefix.startswith("="):  # the layer is another's (a tied head that is the embedding)
            for m in members:
                out[m] = out[prefix[1:]]
            return
        if layer is None:  # built with quant_config=None: never asks
            for m in members:
                out[m] = {"kind": "plain", "layer": prefix, "nq": True}
            return
        try:
            method = conf.get_quant_method(layer, prefix)
            kind = type(method).__name__ if method is not None else None
            if isinstance(layer, v.RoutedExperts):
                if method is None or kind == "UnquantizedFusedMoEMethod":
                    res = {"kind": "plain"}
                else:
                    d = conf.get_scheme_dict(layer, prefix + ".0.down_proj") or {}
                    res = {"kind": "quant", "cls": kind, "w": d.get("weights"), "i": d.get("input_activations"),
                           "o": d.get("output_activations"), "format": d.get("format")}
            elif method is None or isinstance(method, v.UnquantizedLinearMethod):
                res = {"kind": "plain"}
            elif kind == "CompressedTensorsKVCacheMethod":
                res = {"kind": "kv", "kv": conf.kv_cache_scheme, "cls": kind} \
                    if conf.kv_cache_scheme is not None else {"kind": "plain"}
            else:
                cls = kind
                if kind == "CompressedTensorsLinearMethod":
                    sch = layer.scheme
                    cls = type(sch).__name__
                    # the qualifiers ctq writes after the class name
                    if getattr(sch, "use_a16", False):
                        cls += "(use_a16)"
                    elif cls == "CompressedTensorsW8A8Int8" and getattr(sch, "is_static_input_scheme", False):
                        cls += "(static)"
                d = conf.get_scheme_dict(layer, prefix) or {}
                res = {"kind": "quant", "cls": cls, "w": d.get("weights"), "i": d.get("input_activations"),
                       "o": d.get("output_activations"), "format": d.get("format")}
                try:
                    res["target"] = v.utils.find_matched_target(prefix, layer, conf.target_scheme_map.keys(), packed)
                except Exception:
                    pass
        except Exception as e:
            res = {"kind": "error", "err": fmt_exc(e)}
        res["layer"] = prefix
        for m in members:
            out[m] = res

    if layers is not None:
        for prefix, layer, members in layers:
            run(prefix, layer, members)
        return out, None
    run("model.embed_tokens", v.VocabParallelEmbedding(), ["model.embed_tokens"])
    for l in range(cfg.get("num_hidden_layers", 2)):
        p = "model.layers.%d." % l
        run(p + "self_attn.qkv_proj", v.QKVParallelLinear(), [p + "self_attn." + s for s in FUSED["qkv_proj"]])
        run(p + "self_attn.o_proj", v.RowParallelLinear(), [p + "self_attn.o_proj"])
        run(p + "self_attn.attn", v.Attention(), [p + "self_attn"])
        run(p + "mlp.gate_up_proj", v.MergedColumnParallelLinear(), [p + "mlp." + s for s in FUSED["gate_up_proj"]])
        run(p + "mlp.down_proj", v.RowParallelLinear(), [p + "mlp.down_proj"])
    if cfg.get("tie_word_embeddings") and cfg.get("model_type") != "llama":
        out["lm_head"] = out["model.embed_tokens"]
    else:
        run("lm_head", v.ParallelLMHead(), ["lm_head"])
    return out, None


def vllm_group_args(cfg, group):
    """A group's args as vLLM's _quantization_scheme_map_from_config parses them."""
    from compressed_tensors.quantization import QuantizationArgs
    g = cfg["quantization_config"]["config_groups"].get(group)
    if not isinstance(g, dict):
        return None
    try:
        w = QuantizationArgs.model_validate(g.get("weights"))
        i = QuantizationArgs.model_validate(g["input_activations"]) if g.get("input_activations") else None
        o = QuantizationArgs.model_validate(g["output_activations"]) if g.get("output_activations") else None
    except Exception:
        return None
    return w, i, o


def vllm_compare(cfg, e, res):
    kind = res["kind"]
    if kind == "error":
        return "error" in e, "error %s" % res["err"]
    if kind == "plain":
        return ("error" not in e and e.get("scheme") == "unquantized"), "unquantized"
    if kind == "kv":
        ok = "error" not in e and e.get("scheme", "").startswith("kv-") and e.get("vllm_class", res["cls"]) == res["cls"]
        return ok, "kv-cache %s %s" % (a1(res["kv"]), res["cls"])
    summ = "%s (%s, target %s)" % (res["cls"], argsum(res["w"], res["i"], res["o"]), res.get("target"))
    if "error" in e or e.get("scheme") == "unquantized" or e.get("group") is None:
        return False, summ
    ga = vllm_group_args(cfg, e["group"])
    if ga is None or not (ga[0] == res["w"] and ga[1] == res["i"] and ga[2] == res["o"]):
        return False, summ + " != ctq group %s (%s)" % (e["group"], "?" if ga is None else argsum(*ga))
    if e.get("vllm_class", res["cls"]) != res["cls"]:
        return False, summ
    return True, summ


# ---- ctq ----------------------------------------------------------------------------

def ctq_names(cfg, fam=None, v=None):
    if fam is not None:
        return [m for _, _, ms in fam.vllm(v, cfg)[2] for m in ms]
    L = cfg.get("num_hidden_layers", 2)
    return (["model.embed_tokens"] + ["model.layers.%d.%s" % (l, n) for l in range(L)
                                      for n in ["self_attn"] + PROJ] + ["lm_head"])


def run_ctq(ctq, path, cfg):
    p = subprocess.run([ctq, "inspect", path, "--semantics", "all", "--json"],
                       capture_output=True, text=True, timeout=60)
    if p.returncode in (0, 2) and p.stdout.strip():
        try:
            return json.loads(p.stdout)
        except ValueError:
            pass
    why = (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1][:240]
    cls = "refused" if p.returncode == 2 else "crash (exit %d)" % p.returncode
    return {"modules": [], "crash": p.returncode not in (0, 2),
            "config_errors": {pr: {"class": cls, "message": why} for pr in PROFILES}}


def ctq_summary(e, cerr):
    if cerr is not None:
        return "config error %s" % cerr.get("class")
    if "error" in e:
        return "error %s" % e["error"]
    s = "%s by %s" % (e.get("scheme"), e.get("by"))
    if e.get("group"):
        s += " (group %s, target %s)" % (e["group"], e.get("target"))
    if e.get("vllm_class"):
        s += " %s" % e["vllm_class"]
    return s


def role(name):
    if name.endswith("self_attn") or name.endswith(".attn"):
        return "attention"
    if name.endswith("embed_tokens") or name.endswith("embedding") or name.endswith("pos_embed"):
        return "embedding"
    if ".experts." in name:
        return "expert"
    if name.endswith(".gate") or name.endswith("shared_expert_gate"):
        return "router"
    if ".shared_expert" in name:
        return "shared expert"
    if "vision" in name or "visual" in name or "multi_modal_projector" in name:
        return "vision linear"
    return name if name in ("lm_head", "score") else "linear"


def shape(s, literals=()):
    """A library or ctq outcome with the config-specific parts cut away, for grouping."""
    for lit, by in literals:
        s = s.replace(lit, by)
    s = re.sub(r" != ctq group \S+", " != ctq group", s)
    s = re.sub(r"config_groups\.[^.\s]+\.", "config_groups.<group>.", s)
    s = re.sub(r"layer_name='[^']*'.*", "", s)
    s = re.sub(r"\[[^\]]*\]|'[^']*'|\b\d+\b", "#", s)
    return re.sub(r"\s+", " ", s).strip()[:200]


class Oracle:
    def __init__(self, ctq, vllm, tmp):
        self.ctq, self.v, self.tmp = ctq, vllm, tmp
        self.n = 0
        self.fam = None  # families.Family of the configs evaluated; None: qwen3+llama

    def evaluate(self, cfg):
        """{profile: [(module, agree, key, detail)]} for one config."""
        self.n += 1
        path = os.path.join(self.tmp, "config-%d.json" % self.n)
        with open(path, "w") as f:
            json.dump(cfg, f)
        j = run_ctq(self.ctq, path, cfg)
        os.unlink(path)
        cerrs = j.get("config_errors") or {}
        fam = self.fam
        mods = j.get("modules") or [{"name": n} for n in ctq_names(cfg, fam, self.v)]
        ct_lib, qc, ct_raise, ct_compress = ct_side(cfg, fam)
        self.last_compress_error = ct_compress
        v_lib, v_raise = vllm_side(self.v, cfg, fam)
        if fam is not None and not j.get("crash"):
            # modules the libraries quantize that ctq does not list: a row each,
            # never an agreement (ctq's plan would leave them out)
            have = {m["name"] for m in mods}
            ct_have = {fam.ct_name(n, cfg) for n in have}
            if ct_lib:
                for n, sch in ct_lib.items():
                    if n not in ct_have and sch is not None and (sch.weights or sch.input_activations
                                                                 or sch.output_activations):
                        mods.append({"name": n, "missing": "ct"})
            if v_lib:
                for n, res in v_lib.items():
                    if n not in have and res["kind"] != "plain":
                        mods.append({"name": n, "missing": "vllm"})
            ct_lib = {m["name"]: ct_lib.get(fam.ct_name(m["name"], cfg)) for m in mods} if ct_lib is not None else None
        out = {}
        for prof in PROFILES:
            cerr = cerrs.get(prof)
            ctq_fails = cerr is not None or any("error" in m.get(prof, {}) for m in mods)
            if prof == "ct":
                lib_fails, raised = ct_raise is not None, ct_raise
            else:
                raised = v_raise
                lib_fails = raised is not None or any(r["kind"] == "error" for r in v_lib.values())
                if raised is None and lib_fails:
                    raised = next(r["err"] for r in v_lib.values() if r["kind"] == "error")
            rows = []
            for m in mods:
                name = m["name"]
                if m.get("missing") and m["missing"] != prof:
                    continue
                e = m.get(prof, {})
                cs = ctq_summary(e, cerr)
                if m.get("missing"):
                    ok, ls, cs = False, "quantizes a module ctq does not list", "(no such module)"
                    rows.append((name, ok, "%s | library quantizes it | ctq lists no such module" % role(name),
                                 {"library": ls, "ctq": cs, "ctq_message": None}))
                    continue
                if j.get("crash"):  # never an agreement, whatever the library does
                    ok, ls = False, "(not compared: ctq crashed)"
                elif (prof == "ct" and ct_raise is not None) or (prof == "vllm" and v_raise is not None):
                    ok, ls = ctq_fails, "refuses the config: %s" % raised
                elif cerr is not None:
                    ok, ls = lib_fails, ("fails on a layer: %s" % raised) if lib_fails else "accepts the config"
                    if not ok:
                        ls = "accepts the config; here %s" % (
                            "unquantized" if prof == "ct" and ct_lib.get(name) is None else
                            (vllm_compare(cfg, {}, v_lib.get(name, {"kind": "plain"}))[1] if prof == "vllm"
                             else "quantized (%s)" % argsum(ct_lib[name].weights, ct_lib[name].input_activations,
                                                           ct_lib[name].output_activations)))
                elif prof == "ct":
                    ok, ls = ct_compare(e, ct_lib.get(name), qc)
                else:
                    ok, ls = vllm_compare(cfg, e, v_lib.get(name, {"kind": "plain"}))
                if cerr is not None or (prof == "ct" and ct_raise is not None) or \
                        (prof == "vllm" and v_raise is not None):
                    key = "config | library %s | ctq %s" % (
                        shape(ls.split("; here")[0]),
                        "%s: %s" % (shape(cs), shape(cerr.get("message") or "")[:90]) if cerr is not None
                        else "accepts the config (no module error)")
                else:
                    lr = v_lib.get(name, {}) if prof == "vllm" and v_lib else {}
                    lits = [(" (group %s, target %s)" % (e.get("group"), e.get("target")), ""),
                            (", target %s)" % lr.get("target"), ")")]
                    key = "%s | library %s | ctq %s" % (role(name), shape(ls, lits), shape(cs, lits))
                rows.append((name, ok, key, {"library": ls, "ctq": cs, "ctq_message": e.get("message") or
                                             (cerr or {}).get("message")}))
            out[prof] = rows
        return out


# ---- shrinking ----------------------------------------------------------------------

def _moves(cfg):
    q = cfg["quantization_config"]
    if cfg.get("num_hidden_layers", 2) > 2:
        c = copy.deepcopy(cfg)
        c["num_hidden_layers"] = 2
        yield c
    groups = q.get("config_groups") or {}
    for g in list(groups):
        c = copy.deepcopy(cfg)
        del c["quantization_config"]["config_groups"][g]
        yield c
    for g, v in groups.items():
        t = v if isinstance(v, list) else (v.get("targets") if isinstance(v, dict) else None)
        if isinstance(t, list) and len(t) > 1:
            for k in range(len(t)):
                c = copy.deepcopy(cfg)
                cg = c["quantization_config"]["config_groups"][g]
                del (cg if isinstance(cg, list) else cg["targets"])[k]
                yield c
    for k in range(len(q.get("ignore") or [])):
        c = copy.deepcopy(cfg)
        del c["quantization_config"]["ignore"][k]
        yield c
    for key in ("kv_cache_scheme", "version", "quantization_status", "global_compression_ratio", "sparsity_config",
                "ignore", "format"):
        if key in q:
            c = copy.deepcopy(cfg)
            del c["quantization_config"][key]
            yield c
    for g, v in groups.items():
        if not isinstance(v, dict):
            continue
        for key in ("format", "output_activations", "input_activations", "weights"):
            if key in v:
                c = copy.deepcopy(cfg)
                del c["quantization_config"]["config_groups"][g][key]
                yield c
        for key in ("weights", "input_activations", "output_activations"):
            a = v.get(key)
            if isinstance(a, dict):
                for ak in list(a):
                    if ak in ("num_bits", "strategy", "type") or (ak == "group_size" and a[ak] is not None):
                        continue
                    c = copy.deepcopy(cfg)
                    del c["quantization_config"]["config_groups"][g][key][ak]
                    yield c
    kv = q.get("kv_cache_scheme")
    if isinstance(kv, dict):
        for ak in list(kv):
            if ak not in ("num_bits", "strategy", "type"):
                c = copy.deepcopy(cfg)
                del c["quantization_config"]["kv_cache_scheme"][ak]
                yield c


def shrink(oracle, cfg, prof, key, budget=150):
    """Greedy: drop groups, targets, ignore entries, keys and args while the
    disagreement `key` still shows under `prof`."""
    cur = cfg
    tries = 0
    changed = True
    while changed and tries < budget:
        changed = False
        for c in _moves(cur):
            tries += 1
            if tries > budget:
                break
            try:
                rows = oracle.evaluate(c)[prof]
            except Exception:
                continue
            if any((not ok) and k == key for _, ok, k, _ in rows):
                cur = c
                changed = True
                break
    return cur


# ---- driver -------------------------------------------------------------------------

def quiet():
    import compressed_tensors.quantization  # noqa: F401  (sets up loguru on import)
    import transformers
    from loguru import logger
    logger.remove()
    logger.disable("compressed_tensors")
    logging.getLogger("compressed_tensors").setLevel(logging.ERROR)
    transformers.logging.set_verbosity_error()


def versions(wheel):
    import compressed_tensors
    import torch
    import transformers
    return {"compressed_tensors": compressed_tensors.__version__, "transformers": transformers.__version__,
            "torch": torch.__version__, "vllm_wheel": os.path.basename(wheel)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ctq", default="build/ctq")
    ap.add_argument("--vllm-wheel", required=True)
    ap.add_argument("--n", type=int, default=500, help="generated configs per family")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default="build/oracle-out")
    ap.add_argument("--min", type=float, default=99.5, help="percent of modules each profile must reach")
    ap.add_argument("--real-configs", metavar="DIR",
                    help="also run every *.json quantization block in DIR (e.g. ../shared/configs), "
                         "on a 2-layer Qwen3, tied and untied")
    ap.add_argument("--top", type=int, default=12, help="disagreement patterns shown per profile")
    ap.add_argument("--shrink", type=int, default=25, help="patterns per profile whose example is minimised")
    ap.add_argument("--family", default="all",
                    help="comma-separated families (default all): %s" % ", ".join(ALL_FAMILIES))
    a = ap.parse_args()
    quiet()
    global PRESET_GROUP_NAMES
    from compressed_tensors.quantization.quant_scheme import PRESET_SCHEMES
    PRESET_GROUP_NAMES = sorted(PRESET_SCHEMES)
    import shutil
    import vllm_stub
    tmp = tempfile.mkdtemp(prefix="ctq-oracle-")
    ctq = os.path.join(tmp, "ctq")
    shutil.copy2(a.ctq, ctq)  # one binary for the whole run, whatever rebuilds build/ctq meanwhile
    oracle = Oracle(ctq, vllm_stub.load(a.vllm_wheel), tmp)
    fams = ALL_FAMILIES if a.family == "all" else a.family.split(",")
    for f in fams:
        if f not in ALL_FAMILIES:
            ap.error("unknown family %s (known: %s)" % (f, ", ".join(ALL_FAMILIES)))
    top_out = a.out
    summary_all = {"families": {}}
    failed_any = False
    t_all = time.time()
    for fname in fams:
        a.out = os.path.join(top_out, fname)
        sm, failed = run_family(a, oracle, fname)
        summary_all["families"][fname] = sm
        failed_any |= failed
    summary_all["seconds"] = round(time.time() - t_all, 1)
    print("\noracle: per family and profile, modules agreeing (%% of modules; configs agreeing fully), %.0f s in all:"
          % summary_all["seconds"])
    for fname, sm in summary_all["families"].items():
        print("  %-12s %s  (%d configs, %.0f s)" % (fname, "  ".join(
            "%s %.2f%% (%.1f%%)" % (p, sm["profiles"][p]["modules_pct"], sm["profiles"][p]["configs_pct"])
            for p in PROFILES), sm["configs"], sm["seconds"]))
    with open(os.path.join(top_out, "summary.json"), "w") as f:
        json.dump(summary_all, f, indent=1, default=str)
    return 1 if failed_any else 0


def run_family(a, oracle, fname):
    global POOL
    import families
    os.makedirs(a.out, exist_ok=True)
    for pat in ("ct-*.json", "vllm-*.json", "compress-*.json", "summary.json"):  # this tool's own files only
        for f in glob.glob(os.path.join(a.out, pat)):
            os.unlink(f)
    if fname == LEGACY:
        POOL, oracle.fam = None, None
    else:
        fam = families.FAMILIES[fname]
        oracle.fam = fam
        probe = fam.config(random.Random(0))
        if "num_hidden_layers" in probe:
            probe["num_hidden_layers"] = 3
        probe["quantization_config"] = {"quant_method": "compressed-tensors", "format": "dense",
                                        "config_groups": {"g": {"targets": ["Linear"], "weights": _a(8, "int", "channel")}}}
        path = os.path.join(oracle.tmp, "probe.json")
        with open(path, "w") as f:
            json.dump(probe, f)
        j = run_ctq(oracle.ctq, path, probe)
        POOL = families.pool_for(fam, [m["name"] for m in j.get("modules") or []],
                                 [t for m in j.get("modules") or [] for t in m.get("types") or []] +
                                 [m.get("vllm_type") for m in j.get("modules") or [] if m.get("vllm_type")])
    t0 = time.time()
    r = random.Random(a.seed)
    configs = []
    for i in range(a.n):
        configs.append(("generated #%d" % i, gen_config(random.Random(r.getrandbits(64)))))
    if a.real_configs and fname == LEGACY:
        for f in sorted(glob.glob(os.path.join(a.real_configs, "*.json"))):
            with open(f) as fh:
                j = json.load(fh)
            block = j.get("quantization_config") or j.get("compression_config") or j
            for tie in (False, True):
                configs.append((os.path.basename(f) + (" tied" if tie else ""), wrap(block, 2, tie)))
    stats = {p: {"mod": 0, "ok": 0, "cfg": 0, "cfg_ok": 0, "patterns": {}} for p in PROFILES}
    lib_refused = {p: 0 for p in PROFILES}
    refusals = {p: {} for p in PROFILES}  # why the library refuses whole configs
    compress = {}  # transformers' compress_model failures after apply_quantization_config accepted
    for idx, (origin, cfg) in enumerate(configs):
        res = oracle.evaluate(cfg)
        if oracle.last_compress_error:
            c = compress.setdefault(shape(oracle.last_compress_error), [0, idx, oracle.last_compress_error])
            c[0] += 1
        for prof in PROFILES:
            st = stats[prof]
            st["cfg"] += 1
            rows = res[prof]
            if rows and all("refuses the config" in d["library"] for _, _, _, d in rows):
                lib_refused[prof] += 1
                why = shape(rows[0][3]["library"].split("refuses the config: ", 1)[1])
                refusals[prof][why] = refusals[prof].get(why, 0) + 1
            allok = True
            for name, ok, key, detail in rows:
                st["mod"] += 1
                st["ok"] += ok
                lib = detail["library"]
                kind = ("config refused" if lib.startswith("refuses") else "not compared" if lib.startswith("(not")
                        else "ctq config error" if lib.startswith("accepts") or lib.startswith("fails on")
                        else "unquantized" if lib == "unquantized" else "layer error" if lib.startswith("error")
                        else "kv-cache" if lib.startswith("kv-cache") else "quantized")
                cov = st.setdefault("coverage", {}).setdefault(kind, [0, 0])
                cov[0] += 1
                cov[1] += ok
                if ok:
                    continue
                allok = False
                pat = st["patterns"].setdefault(key, {"count": 0, "configs": set(), "example": None})
                pat["count"] += 1
                pat["configs"].add(idx)
                size = len(json.dumps(cfg))
                if pat["example"] is None or size < pat["example"][0]:
                    pat["example"] = (size, idx, origin, name, detail)
            st["cfg_ok"] += allok
        if (idx + 1) % 500 == 0:
            print("oracle: %d/%d configs (%.0f s)" % (idx + 1, len(configs), time.time() - t0),
                  file=sys.stderr, flush=True)
    t_run = time.time() - t0
    summary = {"versions": versions(a.vllm_wheel), "n": a.n, "seed": a.seed, "configs": len(configs),
               "seconds": round(t_run, 1), "profiles": {}}
    print("\n== family %s\noracle: %d configs (seed %d, %d generated%s), %s; %.0f s" % (
        fname, len(configs), a.seed, a.n, ", plus real configs from %s" % a.real_configs if a.real_configs else "",
        ", ".join("%s %s" % kv for kv in summary["versions"].items()), t_run))
    failed = False
    for prof in PROFILES:
        st = stats[prof]
        pct = 100.0 * st["ok"] / max(st["mod"], 1)
        cpct = 100.0 * st["cfg_ok"] / max(st["cfg"], 1)
        print("%-4s %d/%d modules agree (%.2f%%), %d/%d configs agree fully (%.2f%%); the library refuses %d configs"
              % (prof, st["ok"], st["mod"], pct, st["cfg_ok"], st["cfg"], cpct, lib_refused[prof]))
        print("     by the library's outcome (agree/modules): " + ", ".join(
            "%s %d/%d" % (k, v[1], v[0]) for k, v in sorted(st.get("coverage", {}).items(), key=lambda kv: -kv[1][0])))
        failed |= pct < a.min
        pats = sorted(st["patterns"].items(), key=lambda kv: (-len(kv[1]["configs"]), -kv[1]["count"]))
        plist = []
        for k, (key, pat) in enumerate(pats):
            size, idx, origin, name, detail = pat["example"]
            cfg = configs[idx][1]
            if k < a.shrink:
                cfg = shrink(oracle, cfg, prof, key)
                row = next((rw for rw in oracle.evaluate(cfg)[prof] if not rw[1] and rw[2] == key), None)
                if row:
                    name, detail = row[0], row[3]
            ex = os.path.join(a.out, "%s-%02d.json" % (prof, k))
            with open(ex, "w") as f:
                json.dump(cfg, f, indent=1)
            plist.append({"key": key, "modules": pat["count"], "configs": len(pat["configs"]), "example": ex,
                          "origin": origin, "module": name, "detail": detail, "config": cfg})
            if k < a.top:
                print("  %5d modules in %4d configs  %s" % (pat["count"], len(pat["configs"]), key))
                print("         e.g. %s, module %s (from %s)" % (ex, name, origin))
                print("         library: %s" % detail["library"])
                print("         ctq:     %s%s" % (detail["ctq"], ("  -- " + detail["ctq_message"][:200])
                                                    if detail.get("ctq_message") else ""))
        if len(pats) > a.top:
            print("  ... %d more patterns in %s" % (len(pats) - a.top, os.path.join(a.out, "summary.json")))
        summary["profiles"][prof] = {"modules": st["mod"], "modules_agree": st["ok"], "modules_pct": round(pct, 3),
                                     "configs": st["cfg"], "configs_agree": st["cfg_ok"],
                                     "configs_pct": round(cpct, 3), "library_refuses": lib_refused[prof],
                                     "by_library_outcome": st.get("coverage", {}),
                                     "patterns": plist}
    print("library refusals of whole configs (both sides must refuse; not disagreements by themselves):")
    for prof in PROFILES:
        for why, n in sorted(refusals[prof].items(), key=lambda kv: -kv[1])[:8]:
            print("  %-4s %5d  %s" % (prof, n, why[:150]))
    summary["refusals"] = refusals
    if compress:
        print("not counted: transformers' compress_model (packing the weights into the format's layout, after "
              "apply_quantization_config accepted) fails on %d configs:" % sum(c[0] for c in compress.values()))
        for k, (n, idx, msg) in sorted(compress.items(), key=lambda kv: -kv[1][0])[:8]:
            ex = os.path.join(a.out, "compress-%d.json" % idx)
            with open(ex, "w") as f:
                json.dump(configs[idx][1], f, indent=1)
            print("  %5d  %s  e.g. %s" % (n, msg[:150], ex))
        summary["compress_model_failures"] = {k: {"configs": n, "example": configs[idx][1], "message": msg}
                                              for k, (n, idx, msg) in compress.items()}
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1, default=str)
    if failed:
        print("oracle: family %s: a profile is below %.1f%% of modules" % (fname, a.min))
    return summary, failed


if __name__ == "__main__":
    sys.exit(main())
