#!/usr/bin/env python3
"""Differential oracle: ctq's `ct` and `vllm` semantics profiles against the
real libraries, module by module, over seeded generated configs.

What runs on each side (`make test-oracle` installs it under build/):
  ct    compressed-tensors 0.20.0 `QuantizationConfig.model_validate` and
        `apply_quantization_config` on a transformers Qwen3ForCausalLM built on
        the meta device (2-4 layers, tied and untied) — the path transformers
        runs. transformers is pinned to 5.23.0: 5.24 renamed the attention's
        `past_key_values` argument to `cache`, and compressed-tensors 0.20.0
        finds cached attention modules by that name, so with 5.24 no
        kv_cache_scheme or attention target applies at all.
  vllm  vLLM's own resolver source, compressed_tensors/utils.py and
        compressed_tensors/compressed_tensors.py, read from the vLLM 0.26.0
        wheel (`pip download vllm==0.26.0 --no-deps`): `from_config`,
        `get_quant_method` (linear, ParallelLMHead, embedding and Attention
        paths), `get_scheme_dict`, `get_scheme`, `should_ignore_layer`,
        `find_matched_target` (name, then class substring, then fused shards:
        the order of utils.py @ 008014e8, which 0.26.0 has; 0.27 and later try
        the fused shards before the class), `CompressedTensorsKVCacheMethod`.
        The vllm package itself does not import on a CPU-only machine (it pins
        torch 2.14 with CUDA-only dependencies such as flashinfer), so every
        other vllm.* import is stubbed (tests/oracle/vllm_stub.py): import
        plumbing only; the decisions are vLLM's code. The device is taken to
        be SM 9.0, as ctq's vllm profile assumes.

Agreement of one module: the library leaves it unquantized and ctq says
`unquantized`; or the library attaches a scheme and ctq names a group whose
weights / input / output args, parsed by compressed-tensors itself, equal the
attached ones (a KV-cache scheme: ctq says kv-<type><bits>); or the library
raises for that module (vLLM) and ctq reports a module error. A library
exception for the whole config (a pydantic ValidationError, the ValueError
compressed-tensors raises on attention, vLLM's TypeError/AssertionError in
from_config) agrees for every module when ctq reports an error for that
profile (a config error or any module error).

usage: semantics_diff.py --ctq build/ctq --vllm-wheel WHEEL [--n 2000] [--seed 1]
                         [--out build/oracle-out] [--min 99.5]
"""
import argparse, copy, json, os, random, subprocess, sys, tempfile, warnings

warnings.filterwarnings("ignore")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

W8 = {"num_bits": 8, "type": "int", "symmetric": True, "strategy": "channel", "dynamic": False}
W8T = {"num_bits": 8, "type": "int", "symmetric": True, "strategy": "tensor", "dynamic": False}
A8 = {"num_bits": 8, "type": "int", "symmetric": True, "strategy": "token", "dynamic": True}
A8S = {"num_bits": 8, "type": "int", "symmetric": True, "strategy": "tensor", "dynamic": False}
A8A = {"num_bits": 8, "type": "int", "symmetric": False, "strategy": "token", "dynamic": True}
FP8T = {"num_bits": 8, "type": "float", "symmetric": True, "strategy": "tensor", "dynamic": False}
FP8C = {"num_bits": 8, "type": "float", "symmetric": True, "strategy": "channel", "dynamic": False}
FP8D = {"num_bits": 8, "type": "float", "symmetric": True, "strategy": "token", "dynamic": True}
W4G = {"num_bits": 4, "type": "int", "symmetric": True, "strategy": "group", "group_size": 32, "dynamic": False}
W4C = {"num_bits": 4, "type": "int", "symmetric": True, "strategy": "channel", "dynamic": False}
W4G128 = {"num_bits": 4, "type": "int", "symmetric": True, "strategy": "group", "group_size": 128, "dynamic": False}
W8ASYM = {"num_bits": 8, "type": "int", "symmetric": False, "strategy": "channel", "dynamic": False}
FP8B = {"num_bits": 8, "type": "float", "symmetric": True, "strategy": "block", "block_structure": [128, 128],
        "dynamic": False}
A8G = {"num_bits": 8, "type": "float", "symmetric": True, "strategy": "group", "group_size": 32, "dynamic": True}
MX6 = {"num_bits": 6, "type": "float", "symmetric": True, "strategy": "group", "group_size": 32,
       "dynamic": False, "scale_dtype": "uint8", "zp_dtype": "uint8"}

TARGETS = [
    "Linear", "Linear", "linear", "Module", "Embedding", "Qwen3Attention", "Attention", "Qwen3RMSNorm",
    "lm_head", "model.embed_tokens", "model.layers.0.self_attn", "model.layers.1.self_attn",
    "model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.k_proj", "model.layers.1.mlp.down_proj",
    "model.layers.0.mlp.gate_proj", "model.layers.0.self_attn.qkv_proj", "model.layers.1.mlp.gate_up_proj",
    "re:.*down_proj", "re:.*self_attn$", "re:.*self_attn", "re:.*mlp.*", "re:.*layers\\.0\\..*",
    "re:.*lm_head", "re:.*embed.*", "re:.*q_norm", "re:.*(self_attn|norm)$", "re:.*_proj", "re:.*proj",
    "re:.*[qk]_proj", "re:.*gate_up_proj", "re:.*qkv_proj", "re:.*o_proj", "re:.*Linear", "re:Linear",
    "Qwen3MLP", "Qwen3DecoderLayer", "re:.*mlp$", "re:model.*", "re:.*layers\\.1$", "model.layers.0",
    "re:.*norm", "re:.*(q|k|v)_proj$", "ParallelLMHead", "Parallel", "re:.*embed_tokens$",
]
IGNORE = [
    "lm_head", "lm_head", "re:.*lm_head", "Linear", "Qwen3Attention", "Embedding", "model.embed_tokens",
    "model.layers.0.self_attn.q_proj", "model.layers.1.mlp.up_proj", "re:.*self_attn.*",
    "re:.*layers\\.1\\..*", "model.layers.0.self_attn", "re:.*down_proj", "re:.*[kv]_proj",
    "model.layers.0.self_attn.qkv_proj", "re:.*gate_up_proj",
]
PRESETS = ["W8A8", "INT8", "W4A16", "W8A16", "FP8", "FP8_DYNAMIC", "NVFP4A16", "MXFP4A16", "MXFP6A16",
           "MXFP6A8", "MXFP4XFP8", "W4AFP8", "UNQUANTIZED"]


def gen_scheme(r):
    k = r.random()
    if k < 0.40: return {"weights": W8, "input_activations": A8}
    if k < 0.45: return {"weights": W8T, "input_activations": A8}
    if k < 0.50: return {"weights": W8, "input_activations": A8S}
    if k < 0.53: return {"weights": W8, "input_activations": A8A}
    if k < 0.63: return {"weights": r.choice([W4G, W4C])}
    if k < 0.70: return {"weights": W4G, "input_activations": A8}
    if k < 0.78: return {"input_activations": FP8T}
    if k < 0.82: return {"weights": W8}
    if k < 0.90: return {"weights": FP8C, "input_activations": FP8D}
    if k < 0.92: return {"weights": MX6}
    if k < 0.94: return {"weights": W4G128}
    if k < 0.96: return {"weights": W8ASYM, "input_activations": A8}
    if k < 0.98: return {"weights": FP8B, "input_activations": A8G}
    return {"weights": W8, "input_activations": A8, "output_activations": A8S}


def gen_config(r):
    groups = {}
    for g in range(r.choice([1, 1, 2, 2, 3])):
        if r.random() < 0.08:
            name = r.choice(PRESETS)
            groups[name] = r.sample(TARGETS, r.randint(1, 2))
            continue
        grp = dict(targets=r.sample(TARGETS, r.randint(1, 3)), **gen_scheme(r))
        if r.random() < 0.1:
            grp["format"] = r.choice(["int-quantized", "pack-quantized", "float-quantized", "naive-quantized"])
        groups["group_%d" % g] = grp
    q = {"quant_method": "compressed-tensors",
         "format": r.choice(["int-quantized", "int-quantized", "naive-quantized", "pack-quantized",
                             "float-quantized", "mxfp6-pack-quantized"]),
         "config_groups": groups, "ignore": r.sample(IGNORE, r.choice([0, 1, 1, 2, 3]))}
    if r.random() < 0.2:
        q["kv_cache_scheme"] = r.choice([FP8T, FP8T, {"num_bits": 8, "type": "int", "symmetric": True,
                                                      "strategy": "tensor", "dynamic": False},
                                         {"num_bits": 8, "type": "float", "symmetric": True,
                                          "strategy": "channel", "dynamic": False}])
    return {"model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"], "hidden_size": 64,
            "num_hidden_layers": r.choice([2, 3, 4]), "num_attention_heads": 4, "num_key_value_heads": 2,
            "head_dim": 16, "intermediate_size": 128, "vocab_size": 256,
            "tie_word_embeddings": r.random() < 0.5, "quantization_config": q}


# ---- compressed-tensors --------------------------------------------------------

def ct_side(cfg):
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM
    from compressed_tensors.quantization import QuantizationConfig, apply_quantization_config
    c = Qwen3Config(**{k: v for k, v in cfg.items()
                       if k not in ("quantization_config", "architectures", "model_type")})
    with torch.device("meta"):
        model = Qwen3ForCausalLM(c)
    try:
        qc = QuantizationConfig.model_validate(copy.deepcopy(cfg["quantization_config"]))
        apply_quantization_config(model, qc, show_progress=False)
    except Exception as e:  # the library refuses the config
        return None, "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:160])
    return {n: getattr(m, "quantization_scheme", None) for n, m in model.named_modules()}, None


def group_args(cfg, group):
    """The args compressed-tensors parses for one group of the config."""
    from compressed_tensors.quantization import QuantizationConfig
    q = copy.deepcopy(cfg["quantization_config"])
    return QuantizationConfig.model_validate(q).config_groups[group]


def same_args(scheme, g):
    return (scheme.weights == g.weights and scheme.input_activations == g.input_activations
            and scheme.output_activations == g.output_activations)


def agree_ct(cfg, lib, e):
    if "error" in e:
        return False
    if lib is None:
        return e["scheme"] == "unquantized" and e.get("group") is None
    if e["scheme"].startswith("kv-"):
        return lib.weights is None and lib.input_activations is not None and e.get("group") is None
    if e.get("group") is None:
        return False
    return same_args(lib, group_args(cfg, e["group"]))


# ---- vLLM ----------------------------------------------------------------------

FUSED = {"qkv_proj": ["q_proj", "k_proj", "v_proj"], "gate_up_proj": ["gate_proj", "up_proj"]}


def vllm_side(mods, cfg):
    ct, lin, voc, att = mods
    q = copy.deepcopy(cfg["quantization_config"])
    try:
        conf = ct.CompressedTensorsConfig.from_config(q)
    except Exception as e:
        return None, "%s: %s" % (type(e).__name__, str(e)[:160])
    conf.packed_modules_mapping = FUSED
    cls = {n: type(n, (base,), {}) for n, base in [
        ("QKVParallelLinear", lin.LinearBase), ("MergedColumnParallelLinear", lin.LinearBase),
        ("RowParallelLinear", lin.LinearBase)]}
    lmhead = voc.ParallelLMHead
    out = {}

    def run(name, layer, members):
        try:
            method = conf.get_quant_method(layer, name)
            kind = type(method).__name__ if method is not None else None
            if kind in (None, "UnquantizedLinearMethod"):
                res = ("plain", None)
            elif kind == "CompressedTensorsKVCacheMethod":
                res = ("kv", conf.kv_cache_scheme) if conf.kv_cache_scheme else ("plain", None)
            else:
                d = conf.get_scheme_dict(layer, name)
                res = ("quant", d)
        except Exception as e:
            res = ("error", "%s: %s" % (type(e).__name__, str(e)[:160]))
        for m in members:
            out[m] = res

    run("model.embed_tokens", voc.VocabParallelEmbedding(), ["model.embed_tokens"])
    for l in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % l
        run(p + "self_attn.qkv_proj", cls["QKVParallelLinear"](),
            [p + "self_attn." + s for s in FUSED["qkv_proj"]])
        run(p + "self_attn.o_proj", cls["RowParallelLinear"](), [p + "self_attn.o_proj"])
        run(p + "mlp.gate_up_proj", cls["MergedColumnParallelLinear"](),
            [p + "mlp." + s for s in FUSED["gate_up_proj"]])
        run(p + "mlp.down_proj", cls["RowParallelLinear"](), [p + "mlp.down_proj"])
        run(p + "self_attn.attn", att.Attention(), [p + "self_attn"])
    if cfg["tie_word_embeddings"]:
        out["lm_head"] = out["model.embed_tokens"]
    else:
        run("lm_head", lmhead(), ["lm_head"])
    return out, None


def agree_vllm(cfg, res, e):
    kind, val = res
    if kind == "error":
        return "error" in e
    if "error" in e:
        return False
    if kind == "plain":
        return e["scheme"] == "unquantized"
    if kind == "kv":
        return e["scheme"] == "kv-%s%d" % (val["type"], val["num_bits"])
    if e.get("group") is None:
        return False
    g = group_args(cfg, e["group"])
    return (val.get("weights") == g.weights and val.get("input_activations") == g.input_activations
            and val.get("output_activations") == g.output_activations)


# ---- driver --------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ctq", default="build/ctq")
    ap.add_argument("--vllm-wheel", required=True)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default="build/oracle-out")
    ap.add_argument("--min", type=float, default=99.5, help="percent of modules each profile must reach")
    ap.add_argument("--real-configs", metavar="DIR",
                    help="also run every *.json quantization block in DIR (e.g. ../shared/configs), "
                         "put on a 2-layer Qwen3, tied and untied")
    a = ap.parse_args()
    import compressed_tensors.quantization  # noqa: F401  (sets up loguru on import)
    import transformers  # noqa: F401
    from loguru import logger
    logger.remove()  # "Could not match `X` in instance of ..." per unmatched target
    logger.disable("compressed_tensors")
    import logging
    logging.getLogger("compressed_tensors").setLevel(logging.ERROR)
    import vllm_stub
    vmods = vllm_stub.load(a.vllm_wheel)
    os.makedirs(a.out, exist_ok=True)
    r = random.Random(a.seed)
    stats = {p: {"mod": 0, "mod_ok": 0, "cfg_ok": 0, "patterns": {}} for p in ("ct", "vllm")}
    tmp = tempfile.mkdtemp(prefix="ctq-oracle-")
    configs = [("generated", gen_config(r)) for _ in range(a.n)]
    if a.real_configs:
        import glob
        for f in sorted(glob.glob(os.path.join(a.real_configs, "*.json"))):
            with open(f) as fh:
                j = json.load(fh)
            block = j.get("quantization_config") or j.get("compression_config") or j
            for tie in (False, True):
                base = gen_config(random.Random(0))
                base.update(num_hidden_layers=2, tie_word_embeddings=tie, quantization_config=block)
                configs.append((os.path.basename(f), base))
    for i, (origin, cfg) in enumerate(configs):
        path = os.path.join(tmp, "config.json")
        with open(path, "w") as f:
            json.dump(cfg, f)
        p = subprocess.run([a.ctq, "inspect", path, "--semantics", "all", "--json"],
                           capture_output=True, text=True, timeout=60)
        if p.returncode not in (0, 2):
            sys.exit("ctq inspect failed on config %d (exit %d): %s" % (i, p.returncode, p.stderr[-400:]))
        if p.stdout.strip():
            j = json.loads(p.stdout)
        else:  # refused at parse time: every profile is a config error
            why = p.stderr.strip().splitlines()[-1][:200] if p.stderr.strip() else "exit 2"
            names = ["model.embed_tokens"] + ["model.layers.%d.%s" % (l, n)
                                              for l in range(cfg["num_hidden_layers"])
                                              for n in ("self_attn", "self_attn.q_proj", "self_attn.k_proj",
                                                        "self_attn.v_proj", "self_attn.o_proj", "mlp.gate_proj",
                                                        "mlp.up_proj", "mlp.down_proj")] + ["lm_head"]
            j = {"modules": [{"name": n} for n in names],
                 "config_errors": {prof: {"class": "parse", "message": why} for prof in ("ct", "vllm")}}
        cerr = j.get("config_errors", {})
        ct_lib, ct_raise = ct_side(cfg)
        v_lib, v_raise = vllm_side(vmods, cfg)
        for prof, lib, raised in (("ct", ct_lib, ct_raise), ("vllm", v_lib, v_raise)):
            st = stats[prof]
            mods = j.get("modules", [])
            prof_has_error = prof in cerr or any("error" in m.get(prof, {}) for m in mods)
            all_ok = True
            for m in mods:
                e = m.get(prof, {"error": cerr.get(prof, {}).get("class", "config-error")})
                if raised:
                    ok = prof_has_error
                    why = "library raises (%s)" % raised.split(":")[0]
                elif prof in cerr:
                    ok, why = False, "ctq config error %s" % cerr[prof]["class"]
                elif prof == "ct":
                    ok = agree_ct(cfg, lib.get(m["name"]), e)
                    why = "library %s" % ("unquantized" if lib.get(m["name"]) is None else "quantized")
                else:
                    res = lib.get(m["name"], ("plain", None))
                    ok = agree_vllm(cfg, res, e)
                    why = "library %s" % res[0]
                st["mod"] += 1
                st["mod_ok"] += ok
                if not ok:
                    all_ok = False
                    key = "%s: %s, ctq %s%s" % (m["name"].split(".")[-1], why,
                                                e.get("error") or e.get("scheme"),
                                                "" if origin == "generated" else " [%s]" % origin)
                    if key not in st["patterns"]:
                        ex = os.path.join(a.out, "%s-%04d.json" % (prof, len(st["patterns"])))
                        with open(ex, "w") as f:
                            json.dump(cfg, f, indent=1)
                        st["patterns"][key] = [0, ex, m["name"], raised]
                    st["patterns"][key][0] += 1
            st["cfg_ok"] += all_ok
        if (i + 1) % 250 == 0:
            print("oracle: %d/%d configs" % (i + 1, len(configs)), file=sys.stderr, flush=True)
    failed = False
    for prof in ("ct", "vllm"):
        st = stats[prof]
        pct = 100.0 * st["mod_ok"] / max(st["mod"], 1)
        print("%-4s %d/%d modules agree (%.2f%%), %d/%d configs agree fully (%.1f%%)" %
              (prof, st["mod_ok"], st["mod"], pct, st["cfg_ok"], len(configs),
               100.0 * st["cfg_ok"] / len(configs)))
        for key, (count, ex, name, raised) in sorted(st["patterns"].items(), key=lambda x: -x[1][0])[:10]:
            print("     %5d  %s   e.g. %s (module %s)%s" % (count, key, ex, name,
                                                          "  [%s]" % raised if raised else ""))
        failed |= pct < a.min
    if failed:
        print("oracle: below %.1f%% of modules" % a.min)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
