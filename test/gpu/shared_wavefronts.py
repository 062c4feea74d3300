#!/usr/bin/env python3
"""Shared-memory traffic of one kernel, per SASS opcode, from an ncu report's
source page (ncu -i REP --page source --csv --print-source sass > FILE).

usage: shared_wavefronts.py FILE
Prints, for the opcodes with shared-memory wavefronts: wavefronts, the ideal
count (no bank conflicts), executions and the share of lanes active, then the
largest stall reasons.  This is how NOTES-gpu.md §5 H found that the spread
passes are bound by bank conflicts of their random lookups.
"""
import collections
import csv
import sys

rows = list(csv.reader(open(sys.argv[1])))
hdr = next(r for r in rows if "Source" in r and "Instructions Executed" in r)
data = rows[rows.index(hdr) + 1:]
col = {h: i for i, h in enumerate(hdr)}


def num(r, name):
    v = r[col[name]] if name in col and col[name] < len(r) else ""
    try:
        return float(v)
    except ValueError:
        return 0.0


agg = collections.defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])
for r in data:
    toks = r[col["Source"]].split()
    if not toks:
        continue
    op = toks[1] if toks[0].startswith("@") and len(toks) > 1 else toks[0]
    a = agg[op]
    a[0] += num(r, "L1 Wavefronts Shared")
    a[1] += num(r, "L1 Wavefronts Shared Ideal")
    a[2] += num(r, "Instructions Executed")
    a[3] += num(r, "Predicated-On Thread Instructions Executed")
total = sum(a[0] for a in agg.values())
print(f"shared wavefronts {total / 1e6:.1f}M, instructions {sum(a[2] for a in agg.values()) / 1e6:.1f}M")
for op, a in sorted(agg.items(), key=lambda kv: -kv[1][0]):
    if a[0] == 0:
        continue
    lanes = a[3] / a[2] / 32 if a[2] else 0
    print(f"  {op:20s} {a[0] / 1e6:7.1f}M wavefronts (ideal {a[1] / 1e6:6.1f}M) for {a[2] / 1e6:6.1f}M instructions, "
          f"{lanes:.0%} of lanes")
stalls = {h[6:]: sum(num(r, h) for r in data) for h in hdr if h.startswith("stall_") and "Not Issued" not in h}
s = sum(stalls.values()) or 1
print("  stalls: " + ", ".join(f"{k} {v / s:.0%}" for k, v in sorted(stalls.items(), key=lambda kv: -kv[1])[:6]))
