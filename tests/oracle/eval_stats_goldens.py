#!/usr/bin/env python3
"""Golden numbers for tests/test_eval_stats.c, computed with scipy and
statsmodels rather than with ctq's formulas:

  McNemar exact p   scipy.stats.binomtest(min(b, c), b + c, 0.5).pvalue
  Wilson interval   statsmodels proportion_confint(method="wilson")
  Newcombe paired   Newcombe (1998) method 10 from the two Wilson intervals
                    above and phi = (ad - bc) / sqrt((a+b)(c+d)(a+c)(b+d))
  Wald paired       mean of the per-question differences +- z * SE, from the
                    vector of differences (numpy, ddof=0)
  binomial SE       numpy on the 0/1 vector: std(ddof=0) / sqrt(n)
  KL(ref || new)    scipy.special.rel_entr on softmax(scipy.special)
  z                 scipy.stats.norm.ppf(0.975)

Prints the C tables pasted into tests/test_eval_stats.c. With --coverage it
also checks by simulation that the Newcombe interval covers the true paired
difference about 95 % of the time (a sanity check, not a golden).

Usage: python3 tests/oracle/eval_stats_goldens.py [--coverage]
"""
import sys

import numpy as np
from scipy import special, stats
from statsmodels.stats.proportion import proportion_confint

Z = stats.norm.ppf(0.975)

# (a, b, c, d): both right, ref right / new wrong, ref wrong / new right, both wrong.
TABLES = [
    (36, 12, 2, 0),
    (0, 0, 0, 10),
    (50, 0, 0, 50),
    (40, 5, 5, 50),
    (700, 21, 9, 270),
    (9000, 120, 80, 4842),
    (1, 0, 1, 0),
    (0, 3, 0, 0),
    (5000, 1000, 1200, 2800),
]


def r(x):
    return repr(float(x))


def newcombe(a, b, c, d):
    n = a + b + c + d
    p1, p2 = (a + c) / n, (a + b) / n  # new, ref
    l1, u1 = proportion_confint(a + c, n, alpha=0.05, method="wilson")
    l2, u2 = proportion_confint(a + b, n, alpha=0.05, method="wilson")
    den = (a + b) * (c + d) * (a + c) * (b + d)
    phi = (a * d - b * c) / np.sqrt(den) if den > 0 else 0.0
    dl = (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2
    du = (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2
    diff = p1 - p2
    return max(-1.0, diff - np.sqrt(max(dl, 0))), min(1.0, diff + np.sqrt(max(du, 0)))


def wald(a, b, c, d):
    x = np.array([0] * a + [-1] * b + [1] * c + [0] * d, dtype=float)
    se = x.std(ddof=0) / np.sqrt(len(x))
    return x.mean() - Z * se, x.mean() + Z * se


def mcnemar(b, c):
    if b + c == 0:
        return 1.0
    return stats.binomtest(min(b, c), b + c, 0.5).pvalue


def coverage():
    rng = np.random.default_rng(1)
    for n, probs in [(100, [0.6, 0.05, 0.03, 0.32]), (300, [0.5, 0.02, 0.02, 0.46]),
                     (1000, [0.55, 0.06, 0.04, 0.35])]:
        true = probs[2] - probs[1]
        hits = 0
        trials = 4000
        for _ in range(trials):
            a, b, c, d = rng.multinomial(n, probs)
            lo, hi = newcombe(a, b, c, d)
            hits += lo <= true <= hi
        print(f"n={n} p={probs}: Newcombe coverage {hits / trials:.3f}")


def main():
    print(f"/* z = {r(Z)} */")
    print("/* a, b, c, d, lo, hi, wald_lo, wald_hi, p_mcnemar */")
    for a, b, c, d in TABLES:
        lo, hi = newcombe(a, b, c, d)
        wl, wh = wald(a, b, c, d)
        print(f"\t{{{a}, {b}, {c}, {d}, {r(lo)}, {r(hi)}, {r(wl)}, {r(wh)}, {r(mcnemar(b, c))}}},")
    print("/* b, c, p (large counts and tiny p) */")
    for b, c in [(0, 1), (0, 5), (3, 3), (10, 20), (480, 520), (20000, 20500), (50, 300),
                 (200, 400), (100000, 101500)]:
        print(f"\t{{{b}, {c}, {r(mcnemar(b, c))}}},")
    print("/* k, n, wilson lo, hi, binomial se */")
    for k, n in [(0, 10), (10, 10), (3, 7), (1000, 1531), (1, 1)]:
        lo, hi = proportion_confint(k, n, alpha=0.05, method="wilson")
        x = np.array([1.0] * k + [0.0] * (n - k))
        print(f"\t{{{k}, {n}, {r(lo)}, {r(hi)}, {r(x.std(ddof=0) / np.sqrt(n))}}},")
    print("/* ref lp[4], new lp[4], KL(ref || new) */")
    for rl, ql in [([-1.0, -2.0, -3.0, -4.0], [-1.0, -2.0, -3.0, -4.0]),
                 ([-0.1, -3.0, -4.0, -5.0], [-2.0, -0.5, -1.0, -3.0]),
                 ([-30.0, -31.0, -29.5, -40.0], [-12.0, -11.0, -13.0, -14.0]),
                 ([-1.2, -1.4, -1.5, -1.3], [-1.25, -1.35, -1.55, -1.28])]:
        pr, pq = special.softmax(rl), special.softmax(ql)
        print(f"\t{{{{{', '.join(repr(v) for v in rl)}}}, {{{', '.join(repr(v) for v in ql)}}}, "
              f"{r(special.rel_entr(pr, pq).sum())}}},")
    print("/* macro SE: k[3], n[3], se */")
    ks, ns = [30, 45, 12], [100, 120, 40]
    se = np.sqrt(sum((k / n) * (1 - k / n) / n for k, n in zip(ks, ns))) / 3
    print(f"\t{{{{{', '.join(map(str, ks))}}}, {{{', '.join(map(str, ns))}}}, {r(se)}}},")
    if "--coverage" in sys.argv:
        coverage()


if __name__ == "__main__":
    main()
