#!/usr/bin/env python3
"""The per-op GPU time of warm jobs alone, from two HYOCR_PROFILE tables of the same job run
1 and 1 + k times in one process: (long − short) / k per op. The first job's one-off costs
(lazy module loading, cuBLASLt heuristics, first allocations) cancel out.

    python3 bench/profile_diff.py short.txt long.txt k"""
import re
import sys

ROW = re.compile(r"^(.*?)\s+(\d+)\s+([\d.]+)\s+([\d.]+)%\s+([\d.]+)\s*$")


def table(path):
    """The first table of each profile only (GPU time per op): the ones after it (the card's idle
    time before each op, the host's time between op calls) are not GPU work."""
    ops, n = {}, 0
    for line in open(path, errors="replace"):
        if line.startswith("hyocr CUDA profile"):
            n += 1
        m = ROW.match(line.rstrip("\n"))
        if m and n == 1 and not line.startswith("op "):
            ops[m.group(1).strip()] = (int(m.group(2)), float(m.group(3)))
    return ops


short, long_, k = table(sys.argv[1]), table(sys.argv[2]), int(sys.argv[3])
rows = []
for op, (calls, ms) in long_.items():
    c0, m0 = short.get(op, (0, 0.0))
    d_calls, d_ms = (calls - c0) / k, (ms - m0) / k
    if d_calls > 0 and not op.startswith("[graph]"):
        rows.append((d_ms, op, d_calls))
total = sum(r[0] for r in rows)
print("GPU time of one warm job, per op (%s − %s, over %d jobs): %.1f ms" % (sys.argv[2], sys.argv[1], k, total))
print("| op | calls | ms | % | µs/call |")
print("|---|---:|---:|---:|---:|")
for ms, op, calls in sorted(rows, reverse=True):
    if ms / total < 0.002:
        continue
    print("| %s | %g | %.2f | %.1f | %.1f |" % (op, calls, ms, 100 * ms / total, 1000 * ms / calls))
