#!/usr/bin/env python3
"""Oracle: Hugging Face transformers logits for ctq's synthetic checkpoints.

Runs on the GPU host (PyTorch + transformers). For each model folder it runs
one forward pass over a fixed token sequence in BF16 and writes the logits of
every position, as float32, into a golden JSON that the C tests compare
against without PyTorch:

    {"model": NAME, "arch": ARCH, "ids": [...], "dtype": "bfloat16",
     "transformers": VERSION, "torch": VERSION, "logits": [[...], ...]}

Usage: hf_logits.py [--dtype bfloat16|float32] OUT_DIR NAME=MODEL_DIR [NAME=MODEL_DIR ...]
The token ids are (i * 37 + 11) % vocab for i in range(24), the same in
tests/test_runner.c. --dtype float32 runs the model in float32 (the dtype of
ctq's reference activations): the goldens then isolate the quantization
numerics of a W8A8 checkpoint from BF16 rounding (docs/semantics.md,
"Numerics against transformers and vLLM").
"""
import json
import os
import sys

import torch
import transformers
from transformers import AutoModelForCausalLM


def token_ids(vocab, n=24):
    return [(i * 37 + 11) % vocab for i in range(n)]


def main():
    args = sys.argv[1:]
    dtype = "bfloat16"
    if args[:1] == ["--dtype"]:
        dtype, args = args[1], args[2:]
        if dtype not in ("bfloat16", "float32"):
            sys.exit(f"hf_logits.py: --dtype is {dtype!r}; expected bfloat16 or float32")
    out_dir = args[0]
    os.makedirs(out_dir, exist_ok=True)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    for spec in args[1:]:
        name, path = spec.split("=", 1)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, dtype))
        model = model.to(device).eval()
        vocab = model.config.vocab_size
        ids = token_ids(vocab)
        with torch.no_grad():
            logits = model(torch.tensor([ids], device=device)).logits[0].float().cpu()
        doc = {
            "model": name,
            "arch": model.config.model_type,
            "ids": ids,
            "dtype": dtype,
            "device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu",
            "transformers": transformers.__version__,
            "torch": torch.__version__,
            "logits": [[float("%.6g" % v) for v in row] for row in logits.tolist()],
        }
        with open(os.path.join(out_dir, f"hf-logits-{name}.json"), "w") as f:
            json.dump(doc, f)
        print(f"{name}: {model.config.model_type}, vocab {vocab}, {len(ids)} tokens, "
              f"logit range [{logits.min():.3f}, {logits.max():.3f}]")


if __name__ == "__main__":
    main()
