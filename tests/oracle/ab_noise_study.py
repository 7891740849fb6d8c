#!/usr/bin/env python3
"""Drift statistics and the planted-slowdown half of the real-data check of
`ctq compare --ab` (tools/ab-noise-study.sh makes RUNS: back-to-back runs of
one build, run0001 ...).

For every timing series of the default plan (bench model TTFT and decode,
bench serve TTFT, TPOT and latency): the sd of the per-run log median, its
lag-1 autocorrelation, and the runs beyond 1.5x of the series' median
(stalls); then, cutting the runs into interleaved sets of PAIRS pairs as the
shell script does, the share of sets gated slower by the --ab rule
(reports/compare.c ab_row: stall pairs set aside, paired t on the log
differences, timing.threshold 5%, timing.ab_alpha 0.001, at least 5 pairs)
with nothing planted and with +30% planted on each family's new side.

    python3 tests/oracle/ab_noise_study.py RUNS [PAIRS]

A test oracle: it reads what ctq wrote and re-derives the verdict
independently (scipy's t distribution), never in the product path."""
import csv
import math
import os
import statistics as st
import sys

from scipy import stats

SERIES = [("serve-tiny-w8a8", "bench_serve.csv", ["ttft_ms", "tpot_ms", "latency_ms"]),
          ("bench-tiny-bf16", "bench_model.csv", ["ttft_ms", "decode_ms_per_step"]),
          ("bench-tiny-w8a8", "bench_model.csv", ["ttft_ms", "decode_ms_per_step"])]


def verdict(d, thr=0.05, alpha=0.001, min_pairs=5):
    n = len(d)
    if n >= 4:
        md = st.median(d)
        mad = st.median([abs(x - md) for x in d])
        cut = max(math.log(1.5), 5 * 1.4826 * mad)
        out = [x for x in d if abs(x - md) > cut]
        if 0 < len(out) <= n // 4:
            d = [x for x in d if abs(x - md) <= cut]
    n = len(d)
    if n < min_pairs:
        return "ambiguous"
    m = st.mean(d)
    if abs(math.expm1(m)) < thr:
        return "same"
    sd = st.stdev(d)
    p = 0.0 if sd == 0 else 2 * stats.t.sf(abs(m / (sd / math.sqrt(n))), n - 1)
    return ("slower" if m > 0 else "faster") if p < alpha else "ambiguous"


def main():
    root = sys.argv[1]
    pairs = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    runs = sorted(r for r in os.listdir(root) if r.startswith("run"))
    data = {}
    for step, f, metrics in SERIES:
        for m in metrics:
            v = []
            for r in runs:
                rows = list(csv.DictReader(open(os.path.join(root, r, step, f))))
                v.append(math.log(st.median(float(x[m]) for x in rows)))
            data[(step, m)] = v
    n = len(runs)
    for k, v in data.items():
        mu = st.mean(v)
        lag = sum((v[i] - mu) * (v[i + 1] - mu) for i in range(n - 1)) / sum((x - mu) ** 2 for x in v)
        med = st.median(v)
        stalls = sum(abs(x - med) > math.log(1.5) for x in v)
        print(f"{k[0]} {k[1]}: sd {st.stdev(v):.3f}, lag-1 autocorrelation {lag:.2f}, "
              f"stalls (beyond 1.5x) {stalls} of {n}")
    per = 2 * pairs
    sets = [[(s * per + 2 * j, s * per + 2 * j + 1) if j % 2 == 0 else
             (s * per + 2 * j + 1, s * per + 2 * j) for j in range(pairs)]
            for s in range(n // per)]
    fams = sorted({k[0] for k in data})
    noise = 0
    caught = {f: 0 for f in fams}
    for pairs_of_set in sets:
        noise += any(verdict([v[b] - v[a] for a, b in pairs_of_set]) == "slower"
                     for v in data.values())
        for f in fams:
            caught[f] += any(verdict([v[b] + math.log(1.3) - v[a] for a, b in pairs_of_set]) == "slower"
                             for k, v in data.items() if k[0] == f)
    print(f"{len(sets)} sets of {pairs} interleaved pairs: noise gated slower in {noise} "
          f"({100 * noise / len(sets):.1f}%)")
    for f in fams:
        print(f"  +30% planted on {f}: gated in {caught[f]} of {len(sets)} "
              f"({100 * caught[f] / len(sets):.0f}%)")


if __name__ == "__main__":
    main()
