#!/usr/bin/env python3
"""Record counts and field digests of the real benchmark files in
../shared/datasets, read with Python's csv module, for
tests/test_eval_datasets.c (which parses the same files with eval/datasets.c
and must get the same fields, byte for byte).

Digest: sha256 over the split's subjects in C-locale order of the subject
handle, each file's records in order (header excluded, BOM stripped), each
record's fields joined by 0x1F and terminated by 0x1E.

Usage: python3 tests/oracle/eval_data_digests.py   (from the repository root)
"""
import csv
import glob
import hashlib
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REAL = os.path.join(os.path.dirname(ROOT), "shared", "datasets")


def subject_of(bench, split, path):
    name = os.path.basename(path)[: -len(".csv")]
    return name if bench == "cmmlu" else name[: -len("_" + split)]


def digest(bench, split):
    files = glob.glob(os.path.join(REAL, bench, split, "*.csv"))
    files.sort(key=lambda p: subject_of(bench, split, p).encode())
    h, n = hashlib.sha256(), 0
    for p in files:
        with open(p, newline="", encoding="utf-8-sig") as f:
            rows = list(csv.reader(f))
        for r in rows if bench == "mmlu" else rows[1:]:
            h.update("\x1f".join(r).encode("utf-8") + b"\x1e")
            n += 1
    return len(files), n, h.hexdigest()


for bench, split in [("mmlu", "dev"), ("mmlu", "val"), ("mmlu", "test"), ("ceval", "dev"),
                     ("ceval", "val"), ("ceval", "test"), ("cmmlu", "dev"), ("cmmlu", "test")]:
    files, n, hx = digest(bench, split)
    print(f'\t{{"{bench}", "{split}", {files}, {n}, "{hx}"}},')
