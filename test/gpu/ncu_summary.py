#!/usr/bin/env python3
"""Summarise an ncu --csv log (metric gpu__time_duration.sum) per kernel.

usage: ncu_summary.py LABEL REPS FILE
Prints one line per kernel name: launches per call and microseconds per call
(the total over the log divided by REPS), then the sum.  Kernels of the
harness itself (k_gen) are left out.
"""
import csv
import re
import sys

label, reps, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
scale = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3, "second": 1e6, "s": 1e6}
tot, cnt = {}, {}
with open(path, newline="") as f:
    rows = [r for r in csv.reader(f) if r]
hdr = next((i for i, r in enumerate(rows) if "Kernel Name" in r), None)
if hdr is None:
    print(f"{label}: no kernels in {path}")
    sys.exit(0)
h = rows[hdr]
ki, ui, vi, mi = (h.index("Kernel Name"), h.index("Metric Unit"), h.index("Metric Value"),
                  h.index("Metric Name"))
for r in rows[hdr + 1:]:
    if len(r) <= vi or r[mi] != "gpu__time_duration.sum":
        continue
    name = r[ki]
    m = re.match(r"(?:void )?(?:cub::\S*::)?([A-Za-z_0-9]+)", name.split("<")[0].split("(")[0])
    short = m.group(1) if m else name[:40]
    if short == "k_gen":
        continue
    us = float(r[vi].replace(",", "")) * scale.get(r[ui], 1.0)
    tot[short] = tot.get(short, 0.0) + us
    cnt[short] = cnt.get(short, 0) + 1
s = 0.0
for k in sorted(tot, key=lambda k: -tot[k]):
    print(f"{label:14s} {k:40s} {cnt[k] / reps:6.1f} launches {tot[k] / reps:9.1f} us")
    s += tot[k] / reps
print(f"{label:14s} {'(all kernels)':40s} {'':15s} {s:9.1f} us")
