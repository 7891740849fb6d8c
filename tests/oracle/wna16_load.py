#!/usr/bin/env python3
"""Oracle: ctq's pack-quantized checkpoints in compressed-tensors and transformers.

`ctq quantize --scheme w4a16|w8a16` writes compressed-tensors' pack-quantized
format (checkpoint/packed.h). This script makes two synthetic BF16 models (the
tiny preset, and one layer of the qwen3-0.6b shape for the presets' groups of
128), quantizes them with ctq in several layouts, and for each checkpoint:

  1. loads it with transformers + compressed-tensors (decompressed:
     CompressedTensorsConfig(run_compressed=False)) and runs one forward
     pass: the logits must be finite;
  2. takes every quantized Linear's weight as the library decompressed it
     (the model's dense weight, or, where the library kept the module
     compressed, its own unpack_from_int32 + (q - z) * s), writes them as a
     BF16 checkpoint beside the source's other tensors, and runs
     `ctq verify-weights QUANT --ref LIBRARY` with every threshold at
     LIB_REL_L2_MAX: ctq's own unpacking and dequantization must equal the
     library's within the library's BF16 rounding of its dense weights
     (at most 2^-8 relative per element; rel-L2 ~0.0016 per module). Packing read differently
     by the two (nibble order, zero points packed along the wrong dimension,
     a transposed or mis-grouped scale) gives rel-L2 near 1;
  3. ctq verify-weights against the BF16 source must pass (exit 0), and the
     library's rel-L2 to the source is printed beside ctq's.

Usage: wna16_load.py --ctq build/ctq [--out DIR]
Exit 0 when every layout passes, 1 otherwise (each failure printed).
"""
import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile

import torch
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM

# The library's dense weights are BF16 (8 significant bits): one rounding
# of ctq's exact dequantization is a relative error of at most 2^-8 per
# element (half an ulp at a mantissa of 1), ~0.0016 in rel-L2 on these
# weights; 2^-8 bounds it whatever the values.
LIB_REL_L2_MAX = 0.0039

# The tiny model (K 64 and 176) takes groups of 16; one layer of the
# qwen3-0.6b shape (K 1024, 2048 and 3072) the presets' groups of 128.
MODELS = {
    "tiny": ["--preset", "tiny"],
    "0.6b-1layer": ["--preset", "qwen3-0.6b-shape", "--layers", "1", "--vocab", "2048"],
}
LAYOUTS = [
    ("w4a16-g16", "tiny", ["--scheme", "w4a16", "--group-size", "16"], 4, 16, True),
    ("w4a16-asym-g16", "tiny", ["--scheme", "w4a16", "--group-size", "16", "--asym"], 4, 16, False),
    ("w8a16", "tiny", ["--scheme", "w8a16"], 8, 0, True),
    ("w8a16-asym-g16", "tiny", ["--scheme", "w8a16", "--group-size", "16", "--asym"], 8, 16, False),
    ("W4A16-0.6b", "0.6b-1layer", ["--scheme", "w4a16", "--group-size", "128"], 4, 128, True),
    ("W4A16_ASYM-0.6b", "0.6b-1layer", ["--scheme", "w4a16", "--asym"], 4, 128, False),
]


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def unpack_int32(packed, bits, n, dim):
    """compressed-tensors' unpack_from_int32, from the library when it has it."""
    for mod in ("compressed_tensors.compressors.quantized_compressors.pack_quantized",
                "compressed_tensors.compressors.quantized_compressors.pack_quantized.helpers",
                "compressed_tensors.compressors"):
        try:
            m = __import__(mod, fromlist=["unpack_from_int32"])
            f = getattr(m, "unpack_from_int32")
        except (ImportError, AttributeError):
            continue
        shape = torch.Size([n, packed.shape[1]]) if dim == 0 else torch.Size([packed.shape[0], n])
        try:
            return f(packed, bits, shape, packed_dim=dim)
        except TypeError:
            return f(packed, bits, shape)
    sys.exit("wna16_load.py: compressed-tensors has no unpack_from_int32 where expected")


def library_weight(model_sd, tensors, name, bits, group, sym):
    """The dense weight the library gives module `name` (float64)."""
    w = model_sd.get(name + ".weight")
    if w is not None and w.dtype in (torch.bfloat16, torch.float16, torch.float32):
        return w.to(torch.float64)
    packed = tensors[name + ".weight_packed"]
    n, k = [int(v) for v in tensors[name + ".weight_shape"].tolist()]
    q = unpack_int32(packed, bits, k, 1).to(torch.int32)[:, :k]
    s_dtype = tensors[name + ".weight_scale"].dtype
    s = tensors[name + ".weight_scale"].to(torch.float32)
    g = group if group else k
    s = s.repeat_interleave(g, dim=1)[:, :k]
    z = torch.zeros_like(q)
    if not sym:
        zp = unpack_int32(tensors[name + ".weight_zero_point"], bits, n, 0).to(torch.int32)[:n]
        z = zp.repeat_interleave(g, dim=1)[:, :k]
    # (q - z) * s is exact in f32 (9 x 8 significant bits): one rounding to
    # the scale's dtype, as the library's multiply in that dtype rounds
    return ((q - z).to(torch.float32) * s).to(s_dtype).to(torch.float64)


def check(ctq, sources, root, layout):
    tag, model_name, args, bits, group, sym = layout
    src = sources[model_name]
    out = os.path.join(root, tag)
    rc, text = run([ctq, "quantize", src, out, "--quiet"] + args)
    if rc:
        return [f"{tag}: ctq quantize failed ({rc}): {text.strip()}"]
    errors = []
    vw = os.path.join(root, tag + "-verify")
    rc, text = run([ctq, "verify-weights", out, "--ref", src, "--out", vw])
    if rc:
        errors.append(f"{tag}: ctq verify-weights exit {rc}: {text.strip()[-400:]}")
    ctq_rel = {}
    with open(os.path.join(vw, "verify.csv"), newline="") as f:
        for row in csv.DictReader(f):
            if row["module"]:
                ctq_rel[row["module"]] = float(row["rel_l2"])
    try:
        from transformers import CompressedTensorsConfig
        qc = CompressedTensorsConfig(run_compressed=False)
        model = AutoModelForCausalLM.from_pretrained(out, quantization_config=qc,
                                                     dtype=torch.bfloat16)
    except Exception as e:  # the load itself is what is being checked
        return errors + [f"{tag}: transformers cannot load it: {type(e).__name__}: {e}"]
    ids = torch.tensor([[(i * 37 + 11) % model.config.vocab_size for i in range(16)]])
    with torch.no_grad():
        logits = model(ids).logits
    if not torch.isfinite(logits).all():
        errors.append(f"{tag}: non-finite logits")
    sd = model.state_dict()
    tensors = load_file(os.path.join(out, "model.safetensors"))
    source = load_file(os.path.join(src, "model.safetensors"))
    lib = dict(source)
    rel_src = []
    for name, rel_ctq in ctq_rel.items():
        w_src = source[name + ".weight"]
        w_lib = library_weight(sd, tensors, name, bits, group, sym)
        if tuple(w_lib.shape) != tuple(w_src.shape):
            errors.append(f"{tag} {name}: the library's weight is {tuple(w_lib.shape)}, "
                          f"the source's {tuple(w_src.shape)}")
            continue
        lib[name + ".weight"] = w_lib.to(w_src.dtype).contiguous()
        d = w_lib - w_src.to(torch.float64)
        rel_src.append((torch.linalg.norm(d) / torch.linalg.norm(w_src.to(torch.float64))).item())
    lib_dir = os.path.join(root, tag + "-library")
    os.makedirs(lib_dir)
    save_file(lib, os.path.join(lib_dir, "model.safetensors"), metadata={"format": "pt"})
    shutil.copy(os.path.join(src, "config.json"), lib_dir)
    policy = os.path.join(root, tag + "-policy.json")
    with open(policy, "w") as f:
        json.dump({"rel_l2_max": {s: LIB_REL_L2_MAX for s in
                                  ("w4a16", "w4a16-asym", "w8a16", "w8a16-asym")}}, f)
    vl = os.path.join(root, tag + "-verify-library")
    rc, text = run([ctq, "verify-weights", out, "--ref", lib_dir, "--policy", policy, "--out", vl])
    worst = 0.0
    with open(os.path.join(vl, "verify.csv"), newline="") as f:
        for row in csv.DictReader(f):
            if row["verdict"] != "pass":
                errors.append(f"{tag} {row['tensor']}: ctq vs the library's dequantization: "
                              f"{row['reason']}")
            elif row["module"]:
                worst = max(worst, float(row["rel_l2"]))
    if rc and not errors:
        errors.append(f"{tag}: verify-weights against the library exit {rc}: {text.strip()[-300:]}")
    print(f"{tag}: {len(ctq_rel)} module(s); ctq's dequantization vs the library's: rel-L2 <= "
          f"{worst:.3g}; vs the source: library {min(rel_src):.4g}..{max(rel_src):.4g}, ctq "
          f"{min(ctq_rel.values()):.4g}..{max(ctq_rel.values()):.4g}; "
          f"{'ok' if not errors else 'FAIL'}")
    return errors


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ctq", required=True)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    root = a.out or tempfile.mkdtemp(prefix="ctq-wna16-oracle-")
    if os.path.exists(root):
        shutil.rmtree(root)
    os.makedirs(root)
    sources = {}
    for name, args in MODELS.items():
        sources[name] = os.path.join(root, "bf16-" + name)
        rc, text = run([a.ctq, "make-model", "--arch", "qwen3", "--seed", "9", "--quiet"] + args +
                       [sources[name]])
        if rc:
            sys.exit(f"wna16_load.py: ctq make-model {name} failed: {text}")
    errors = []
    for layout in LAYOUTS:
        errors += check(a.ctq, sources, root, layout)
    import compressed_tensors
    import transformers
    summary = {"compressed_tensors": compressed_tensors.__version__,
               "transformers": transformers.__version__, "torch": torch.__version__,
               "layouts": [l[0] for l in LAYOUTS], "errors": errors}
    with open(os.path.join(root, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    for e in errors:
        print("FAIL", e)
    print(f"wna16_load: {len(LAYOUTS)} layout(s), {len(errors)} failure(s); {root}/summary.json")
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
