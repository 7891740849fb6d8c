#!/usr/bin/env python3
"""Sum an ncu --csv --metrics gpu__time_duration.sum log by kernel name.

usage: tools/ncu-summary.py NCU.csv [TOP]
Prints the number of kernels, their total device time, and the TOP (default
14) kernels by total time with launches, share and time per launch.
"""
import collections
import csv
import sys

rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
if not rows:
    sys.exit(f"{sys.argv[1]}: no ncu rows")
head, rows = rows[0], rows[1:]
ki, vi = head.index("Kernel Name"), head.index("Metric Value")
tot, cnt = collections.Counter(), collections.Counter()
for r in rows:
    name = r[ki].split("(")[0].split("<")[0]
    tot[name] += float(r[vi].replace(",", ""))
    cnt[name] += 1
s = sum(tot.values())
print(f"{len(rows)} kernels, {s / 1e3:.1f} us in all")
for k, v in tot.most_common(int(sys.argv[2]) if len(sys.argv) > 2 else 14):
    print(f"  {k:40s} {cnt[k]:5d} launches {v / 1e3:9.1f} us {100 * v / s:5.1f}%  {v / cnt[k] / 1e3:7.2f} us each")
