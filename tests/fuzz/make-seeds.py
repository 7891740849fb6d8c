#!/usr/bin/env python3
"""Writes the seed corpora of the ctq fuzz targets, tests/fuzz/corpus/<target>/,
from the repository's own data: configs inlined in the conformance suites and
their fixtures, the test fixtures (safetensors, GGUF, tokenizers), the run
plans and the committed H200 baseline CSVs (first rows only). The
safetensors seeds also need a tiny W8A8 checkpoint, made with the ctq binary
given (make-model + quantize, into a temporary folder).

usage: tests/fuzz/make-seeds.py [CTQ_BINARY]   (default build/ctq)
"""
import glob, hashlib, json, os, shutil, struct, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fuzz", "corpus")
CTQ = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "ctq")


def put(target, data, name=None):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    name = name or hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def read(p):
    with open(os.path.join(ROOT, p), "rb") as f:
        return f.read()


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    # (a) qconfig: inline configs of suite cases, then fixture configs.
    n = 0
    for p in sorted(glob.glob(os.path.join(ROOT, "suites", "**", "*.json"), recursive=True)):
        if "/fixtures/" in p:
            put("qconfig", open(p, "rb").read())
            continue
        try:
            cases = json.load(open(p))
        except ValueError:
            continue
        for c in cases if isinstance(cases, list) else []:
            if isinstance(c, dict) and isinstance(c.get("config"), dict) and n < 80:
                put("qconfig", json.dumps(c["config"], indent=1))
                n += 1
    # (f) suite cases and (g) plans: whole files.
    for p in sorted(glob.glob(os.path.join(ROOT, "suites", "*", "*.json"))):
        if os.path.getsize(p) <= 64 << 10:
            put("suite", open(p, "rb").read())
    for p in sorted(glob.glob(os.path.join(ROOT, "plans", "*.json"))):
        put("plan", open(p, "rb").read())
    # (c) GGUF.
    put("gguf", read("tests/fixtures/gguf_tiny.gguf"), "gguf_tiny.gguf")
    # (d) tokenizers: tokenizer.json, NUL, a sample of the tokenizer corpus.
    text = read("tests/fixtures/tokenizers/corpus.txt")[:2048]
    bad = read("tests/fixtures/tokenizers/invalid_utf8.bin")[:512]
    for p in sorted(glob.glob(os.path.join(ROOT, "tests/fixtures/tokenizers/*/tokenizer.json"))):
        name = os.path.basename(os.path.dirname(p))
        put("tokenizer", open(p, "rb").read() + b"\0" + text, name)
        put("tokenizer", open(p, "rb").read() + b"\0" + bad, name + "-invalid-utf8")
    # (e) CSVs: family byte (results/files.h order) + the first 40 lines.
    fams = ["conform.csv", "probe.csv", "bench_model.csv", "bench_gemm.csv",
            "eval_questions.csv", "bench_serve.csv"]
    for p in sorted(glob.glob(os.path.join(ROOT, "reports/baselines/h200/**/*.csv"), recursive=True)):
        base = os.path.basename(p)
        fam = next((i for i, f in enumerate(fams) if base.endswith(f)), None)
        if fam is None:
            continue
        lines = open(p, "rb").read().splitlines(keepends=True)[:40]
        put("csv", bytes([fam]) + b"".join(lines))
    for p in sorted(glob.glob(os.path.join(ROOT, "runs", "*", "**", "conform.csv"), recursive=True))[:2]:
        lines = open(p, "rb").read().splitlines(keepends=True)[:40]
        put("csv", bytes([0]) + b"".join(lines))
    # eval_kld: eval_kld.csv as ctq eval kld writes it (CRLF, %.17g numbers).
    kh = ("source,window,start_token,tokens,kl_sum_nats,kl_median_nats,kl_max_nats,"
          "top1_agree,nll_ref_sum_nats,nll_new_sum_nats\r\n")
    put("eval_kld", kh, "header-only.csv")
    put("eval_kld", kh + "mmlu,0,0,64,0.5,0.004,0.2,62,120.5,121.25\r\n"
        "mmlu,1,64,64,0.75,0.006,0.3,60,118.0,119.5\r\n"
        "ceval,0,0,64,1.25,0.01,0.9,58,200.0,203.0\r\n", "three-windows.csv")
    put("eval_kld", kh + '"a,b",0,0,8,1e-07,0,1e-06,8,3.5,3.5\r\n', "quoted-source.csv")
    # (b) safetensors: length-prefixed config.json + model.safetensors.
    put("safetensors", read("tests/fixtures/oracle.safetensors"), "oracle.safetensors")
    with tempfile.TemporaryDirectory() as tmp:
        bf, q = os.path.join(tmp, "bf16"), os.path.join(tmp, "w8a8")
        subprocess.run([CTQ, "make-model", "--arch", "qwen3", "--preset", "tiny", "--layers", "1",
                        "--quiet", bf], check=True, stdout=subprocess.DEVNULL)
        subprocess.run([CTQ, "quantize", bf, q], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        for name, d in (("tiny-bf16", bf), ("tiny-w8a8", q)):
            cfg = open(os.path.join(d, "config.json"), "rb").read()
            st = open(os.path.join(d, "model.safetensors"), "rb").read()
            put("safetensors", struct.pack("<I", len(cfg)) + cfg + st, name)
    for t in sorted(os.listdir(OUT)):
        print("%-12s %3d seed(s)" % (t, len(os.listdir(os.path.join(OUT, t)))))


main()
