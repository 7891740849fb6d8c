#!/usr/bin/env python3
"""Cross-checks `ctq eval` against Hugging Face transformers on a GPU host:
for the first N questions of each subject, renders the prompt with
tests/oracle/render_prompts.py (the spec's protocol text, not ctq's C code),
tokenizes it with the `tokenizers` library as lm-eval's _encode_pair does,
runs the checkpoint with transformers (float32) and compares the four
continuation log-probabilities and the chosen letter with the columns of
ctq's eval_questions.csv.

Usage (repository root):
  python3 tests/oracle/eval_hf_check.py --model DIR --data DIR --bench mmlu \
      --split test --protocol original --shots 5 --csv RUN/eval_questions.csv \
      [--columns ref|candidate] [--limit 3]
--columns ref reads ref_logprob_* (the --ref-model of that run), candidate
reads logprob_*. Prints agreement and the largest differences; exits 1 when
the chosen letters agree on fewer than 95 % of the questions.
"""
import argparse
import csv
import importlib.util
import os
import sys

import torch
from tokenizers import Tokenizer
from transformers import AutoModelForCausalLM

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("render_prompts", os.path.join(HERE, "render_prompts.py"))
rp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rp)


def chinese_names(bench):
    """The Chinese subject names from eval/datasets.c's tables."""
    import re
    src = open(os.path.join(HERE, "..", "..", "eval", "datasets.c"), encoding="utf-8").read()
    pat = r'C\("(\w+)", "([^"]+)"' if bench == "ceval" else r'X\("(\w+)", "([^"]+)"'
    return dict(re.findall(pat, src))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--data", required=True, help="the benchmark folder, e.g. .../datasets/mmlu")
    ap.add_argument("--bench", required=True, choices=["mmlu", "ceval", "cmmlu"])
    ap.add_argument("--split", required=True)
    ap.add_argument("--protocol", default="original", choices=["original", "lm-eval"])
    ap.add_argument("--shots", type=int, default=5)
    ap.add_argument("--csv", required=True)
    ap.add_argument("--columns", default="ref", choices=["ref", "candidate"])
    ap.add_argument("--limit", type=int, default=3)
    a = ap.parse_args()
    if a.bench == "ceval":
        rp.CEVAL_ZH.update(chinese_names("ceval"))
    if a.bench == "cmmlu":
        rp.CMMLU_ZH.update(chinese_names("cmmlu"))
    render = rp.RENDER[(a.bench, a.protocol)]
    spaced = a.protocol == "lm-eval" or a.bench == "mmlu"
    tok = Tokenizer.from_file(os.path.join(a.model, "tokenizer.json"))
    model = AutoModelForCausalLM.from_pretrained(a.model, torch_dtype=torch.float32).cuda().eval()
    prefix = "ref_" if a.columns == "ref" else ""
    rows = list(csv.DictReader(open(a.csv, newline="", encoding="utf-8")))
    root = os.path.dirname(os.path.abspath(a.data))
    seen, cache = {}, {}
    n = agree = 0
    worst, worst_at, total = 0.0, None, 0.0
    for r in rows:
        subj = r["subject"]
        i = seen.get(subj, 0)
        seen[subj] = i + 1
        if i >= a.limit:
            continue
        if subj not in cache:
            items = rp.read_rows(a.bench, rp.file_of(a.bench, root, a.split, subj))
            dev = rp.read_rows(a.bench, rp.file_of(a.bench, root, "dev", subj)) if a.shots else []
            cache[subj] = (items, dev)
        items, dev = cache[subj]
        pool = [d for j, d in enumerate(dev) if not (a.split == "dev" and j == i)]
        k = int(r["shots"])
        text = render(subj, pool[:k], items[i])
        ctx = tok.encode(text, add_special_tokens=False).ids
        if int(r["context_tokens"]) != len(ctx):
            print(f"{subj} {i}: {len(ctx)} context tokens, ctq {r['context_tokens']} (truncated?)")
            continue
        lps = []
        with torch.no_grad():
            for L in "ABCD":
                whole = tok.encode(text + (" " if spaced else "") + L, add_special_tokens=False).ids
                cont = whole[len(ctx):]
                ids = torch.tensor([ctx + cont[:-1]], device="cuda")
                logp = torch.log_softmax(model(ids).logits[0].float(), dim=-1)
                lps.append(sum(logp[len(ctx) - 1 + j, t].item() for j, t in enumerate(cont)))
        mine = [float(r[f"{prefix}logprob_{L}"]) for L in "ABCD"]
        hf_choice = max(range(4), key=lambda j: (lps[j], -j))
        ctq_choice = "ABCD".index(r[f"{prefix}chosen"])
        agree += hf_choice == ctq_choice
        n += 1
        for j in range(4):
            d = abs(mine[j] - lps[j])
            total += d
            if d > worst:
                worst, worst_at = d, (subj, i, "ABCD"[j], mine[j], lps[j])
    if not n:
        sys.exit("no question compared")
    print(f"{n} questions: chosen letter agrees on {agree} ({100.0 * agree / n:.1f}%); "
          f"|ctq - transformers| log-prob mean {total / (4 * n):.4f}, max {worst:.4f} at {worst_at}")
    sys.exit(0 if agree >= 0.95 * n else 1)


if __name__ == "__main__":
    main()
