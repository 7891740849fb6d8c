#!/usr/bin/env python3
"""Oracle: ctq eval kld's statistics recomputed by the real libraries.

transformers loads the reference (BF16) folder and the candidate folder; a
W8A8 candidate (compressed-tensors int-quantized, as `ctq quantize` writes
it) is loaded through compressed-tensors, so its int8 weights and its
dynamic per-token activation quantization are the library's own (its fake
quantization divides an activation amax by 127.5, vLLM's kernels and ctq by
127: docs/semantics.md). Both run in float32 on the CPU (or CUDA when
present), over the same windows ctq scores: windows of --ctx tokens every
--ctx tokens from the start of each text, the last ctx - 1 - ctx/2 positions
of each scored against the next token. Per window: KL(ref || new) summed
over its tokens, top-1 agreements, and each model's negative log-likelihood
of the actual next tokens, as eval_kld.csv holds them.

With --ctq-run RUN (a `ctq eval kld` run directory over the same texts) it
checks that each text is the one ctq tokenized (sha256 against the
manifest's sources, token counts against tokens_in_text) and prints ctq's
figures beside its own for the same windows, with the paired difference of
the per-window mean KL and top-1.

Usage:
  kld_hf.py --model W8A8 --ref-model BF16 --text FILE [--text FILE ...]
            [--ctx 512] [--max-tokens N] [--windows N] [--ctq-run RUN]
            [--out CSV] [--threads N]

The texts of --data sources come from `ctq eval kld ... --save-text DIR`.
Exit 0 when done (it states numbers, it does not judge); 2 on bad input or
when a text is not the one the ctq run tokenized.
"""
import argparse
import csv
import hashlib
import json
import math
import os
import sys
import time

import torch
import transformers
from transformers import AutoModelForCausalLM
from tokenizers import Tokenizer


def die(msg):
    print(f"kld_hf.py: {msg}", file=sys.stderr)
    sys.exit(2)


def load_model(path, device):
    m = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    m = m.to(device).eval()
    # a compressed-tensors model decompresses its weights on the first
    # forward; its Linear modules then fake-quantize their inputs
    with torch.no_grad():
        m(torch.tensor([[1, 2, 3, 4]], device=device))
    return m


def describe(m):
    q = m.model.layers[0].self_attn.q_proj
    scheme = getattr(q, "quantization_scheme", None)
    if scheme is None:
        return "unquantized"
    ia = scheme.input_activations
    return (f"compressed-tensors {getattr(q, 'quantization_status', '?')}, weights "
            f"{scheme.weights.num_bits}-bit {scheme.weights.strategy}, input activations "
            + (f"{ia.num_bits}-bit {ia.strategy} dynamic={ia.dynamic}" if ia else "none"))


def window_stats(lr, ln, targets):
    """lr, ln: (n, V) float32 logits; targets: (n,) next tokens."""
    pr = torch.log_softmax(lr.double(), dim=-1)
    pn = torch.log_softmax(ln.double(), dim=-1)
    kl = (pr.exp() * (pr - pn)).sum(dim=-1)  # (n)
    agree = (lr.argmax(dim=-1) == ln.argmax(dim=-1)).sum().item()
    nll_ref = -pr.gather(1, targets[:, None]).sum().item()
    nll_new = -pn.gather(1, targets[:, None]).sum().item()
    return kl.sum().item(), agree, nll_ref, nll_new, kl


def ctq_windows(run):
    rows = {}
    with open(os.path.join(run, "eval_kld.csv"), newline="") as f:
        for r in csv.DictReader(f):
            rows[(r["source"], int(r["window"]))] = r
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--ref-model", required=True)
    ap.add_argument("--text", action="append", required=True)
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--max-tokens", type=int, default=0, help="tokens of each text used (0: all)")
    ap.add_argument("--windows", type=int, default=0, help="windows of each text scored (0: all)")
    ap.add_argument("--ctq-run", help="a ctq eval kld run over the same texts, to compare")
    ap.add_argument("--names", help="comma-separated source names of the ctq run, one per --text "
                    "(default: the run's sources in order)")
    ap.add_argument("--out", help="per-window CSV (eval_kld.csv's columns)")
    ap.add_argument("--threads", type=int, default=0)
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    if a.ctx < 4:
        die(f"--ctx {a.ctx}: at least 4")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    tok_path = os.path.join(a.ref_model, "tokenizer.json")
    if not os.path.isfile(tok_path):
        die(f"{tok_path}: no tokenizer.json in the reference folder")
    tok = Tokenizer.from_file(tok_path)

    man_sources = None
    if a.ctq_run:
        with open(os.path.join(a.ctq_run, "manifest.json")) as f:
            man = json.load(f)
        man_sources = man["eval_kld"]["sources"]
        if len(man_sources) != len(a.text):
            die(f"{a.ctq_run}: {len(man_sources)} sources, {len(a.text)} --text given")
        ctq_rows = ctq_windows(a.ctq_run)
    names = a.names.split(",") if a.names else (
        [s["name"] for s in man_sources] if man_sources else list(a.text))

    sources = []
    for i, path in enumerate(a.text):
        data = open(path, "rb").read()
        ids = tok.encode(data.decode("utf-8"), add_special_tokens=False).ids
        if man_sources:
            s = man_sources[i]
            sha = hashlib.sha256(data).hexdigest()
            if sha != s["text_sha256"]:
                die(f"{path}: sha256 {sha} is not the ctq run's {s['name']} ({s['text_sha256']})")
            if len(ids) != s["tokens_in_text"]:
                die(f"{path}: {len(ids)} tokens here, {s['tokens_in_text']} in the ctq run "
                    "(the tokenizers disagree)")
        n = min(len(ids), a.max_tokens) if a.max_tokens else len(ids)
        if n < a.ctx:
            die(f"{path}: {n} tokens, less than one window of {a.ctx}")
        nw = (n - a.ctx) // a.ctx + 1
        if a.windows:
            nw = min(nw, a.windows)
        sources.append((names[i], ids, nw))
        print(f"{names[i]}: {len(ids)} tokens, {nw} windows of {a.ctx}", file=sys.stderr)

    t0 = time.time()
    ref = load_model(a.ref_model, device)
    cand = load_model(a.model, device)
    print(f"loaded in {time.time() - t0:.1f} s (transformers {transformers.__version__}, "
          f"torch {torch.__version__}, {device}); reference: {describe(ref)}; candidate: "
          f"{describe(cand)}", file=sys.stderr)

    first = a.ctx // 2
    per = a.ctx - 1 - first
    out_rows = []
    done, total = 0, sum(s[2] for s in sources)
    for name, ids, nw in sources:
        for w in range(nw):
            x = torch.tensor([ids[w * a.ctx:(w + 1) * a.ctx]], device=device)
            with torch.no_grad():
                lr = ref(x).logits[0, first:first + per].float()
                ln = cand(x).logits[0, first:first + per].float()
            targets = x[0, first + 1:first + 1 + per]
            kl_sum, agree, nll_r, nll_n, _ = window_stats(lr, ln, targets)
            out_rows.append({"source": name, "window": w, "start_token": w * a.ctx, "tokens": per,
                             "kl_sum_nats": kl_sum, "top1_agree": agree, "nll_ref_sum_nats": nll_r,
                             "nll_new_sum_nats": nll_n})
            done += 1
            el = time.time() - t0
            print(f"\rwindow {done}/{total}  {el:.0f} s", end="", file=sys.stderr)
    print(file=sys.stderr)
    if a.out:
        with open(a.out, "w", newline="") as f:
            wr = csv.DictWriter(f, fieldnames=list(out_rows[0].keys()))
            wr.writeheader()
            wr.writerows(out_rows)

    def agg(rows):
        n = sum(r["tokens"] for r in rows)
        return (sum(r["kl_sum_nats"] for r in rows) / n, sum(r["top1_agree"] for r in rows) / n,
                math.exp(sum(r["nll_ref_sum_nats"] for r in rows) / n),
                math.exp(sum(r["nll_new_sum_nats"] for r in rows) / n), n)

    print("source         tokens   KL mean (HF)  top-1 % (HF)   ppl ref / new (HF)" +
          ("   |  KL mean (ctq)  top-1 % (ctq)  ppl ref / new (ctq)   paired d KL, d top-1 (95% CI)"
           if a.ctq_run else ""))
    for name in [s[0] for s in sources] + ["(all)"]:
        rows = [r for r in out_rows if name == "(all)" or r["source"] == name]
        kl, t1, pr, pn, n = agg(rows)
        line = f"{name:<14} {n:>6}   {kl:12.5f}  {100 * t1:11.2f}   {pr:8.3f} / {pn:8.3f}"
        if a.ctq_run:
            cr = []
            for r in rows:
                c = ctq_rows.get((r["source"], r["window"]))
                if c is None:
                    die(f"{a.ctq_run}: no window {r['window']} of {r['source']} in eval_kld.csv")
                cr.append({"tokens": int(c["tokens"]), "kl_sum_nats": float(c["kl_sum_nats"]),
                           "top1_agree": int(c["top1_agree"]),
                           "nll_ref_sum_nats": float(c["nll_ref_sum_nats"]),
                           "nll_new_sum_nats": float(c["nll_new_sum_nats"])})
            ckl, ct1, cpr, cpn, _ = agg(cr)
            # paired over windows: per-window mean KL and top-1 share, ctq - HF
            dk = [c["kl_sum_nats"] / c["tokens"] - r["kl_sum_nats"] / r["tokens"] for c, r in zip(cr, rows)]
            dt = [(c["top1_agree"] - r["top1_agree"]) / r["tokens"] for c, r in zip(cr, rows)]

            def ci(d):
                m = sum(d) / len(d)
                sd = math.sqrt(sum((v - m) ** 2 for v in d) / max(len(d) - 1, 1))
                h = 1.96 * sd / math.sqrt(len(d))
                return m, m - h, m + h
            mk, lk, hk = ci(dk)
            mt, lt, ht = ci(dt)
            line += (f"   |  {ckl:12.5f}  {100 * ct1:12.2f}  {cpr:8.3f} / {cpn:8.3f}   "
                     f"{mk:+.5f} [{lk:+.5f}, {hk:+.5f}], {100 * mt:+.2f} [{100 * lt:+.2f}, {100 * ht:+.2f}] pt")
        print(line)


if __name__ == "__main__":
    main()
