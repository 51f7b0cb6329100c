#!/usr/bin/env python3
"""Prints the benchmark tables from the files gpu-bench.sh wrote.

Time to first token is given two ways: as transformers' bench measures it (vision + prefill +
first token, the image processor excluded) and end to end from the image file (hyocr only:
PNG decode and preprocessing included)."""
import glob
import json
import os
import re
import sys

out = sys.argv[1]
rows = []
for path in sorted(glob.glob(os.path.join(out, "hf_*.json"))):
    r = json.load(open(path))
    rows.append((r["image"], r["impl"], r["prompt_tokens"], "%.1f" % r["ttft_ms"], "–", "–", "–",
                 "%.1f" % r["decode_tok_s"], "%.2f" % r["peak_gib"]))
for path in sorted(glob.glob(os.path.join(out, "hyocr*_*.json"))):
    try:
        r = json.load(open(path))
    except ValueError:
        continue
    base = os.path.basename(path)[:-5]
    impl, size = base.rsplit("_", 1)
    t, m = r.get("timings", {}), r.get("memory", {})
    first = t.get("first_token_ms", 0)
    rows.append(("page_%s.png" % size, impl.replace("hyocr", "hyocr-cuda"), r.get("prompt_tokens", 0),
                 "%.1f" % (first - t.get("preprocess_ms", 0)), "%.1f" % first,
                 "%.1f" % t.get("vision_ms", 0), "%.1f" % t.get("prefill_ms", 0),
                 "%.1f" % t.get("decode_tokens_per_s", 0), "%.2f" % (m.get("peak", 0) / 2 ** 30)))
print("| image | engine | prompt tokens | time to first token, processor excluded (ms) "
      "| from the file (ms) | vision (ms) | prefill (ms) | decode (tokens/s) | peak GPU memory (GiB) |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
for r in sorted(rows):
    print("| %s | %s | %d | %s | %s | %s | %s | %s | %s |" % r)

# Continuous batching: the CLI's summary line, and the decode-phase rate from the per-job timings.
summ = re.compile(r"(\d+) jobs \((\d+) failed\), (\d+) tokens in ([\d.]+) s: ([\d.]+) tokens/s")
batch = {}
for mb in (1, 16):
    err = os.path.join(out, "batch16_mb%d.err" % mb)
    if not os.path.exists(err):
        continue
    m = None
    for line in open(err, errors="replace"):
        m = summ.search(line) or m
    if not m:
        continue
    jobs = [json.loads(l) for l in open(os.path.join(out, "batch16_mb%d.jsonl" % mb)) if l.strip()]
    peak = max((j.get("memory", {}).get("peak", 0) for j in jobs), default=0) / 2 ** 30
    pre = max((j.get("preempted", 0) for j in jobs), default=0)
    batch[mb] = (int(m.group(1)), int(m.group(2)), int(m.group(3)), float(m.group(4)), float(m.group(5)), peak, pre)
if batch:
    print()
    print("| 1024² jobs | max batch | failed | tokens | wall time (s) | aggregate tokens/s | × batch 1 "
          "| peak GPU memory (GiB) | preemptions (max per job) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    base = batch.get(1, (0,) * 7)[4]
    for mb, (n, failed, tok, wall, rate, peak, pre) in sorted(batch.items()):
        ratio = "%.1f×" % (rate / base) if base else "–"
        print("| %d | %d | %d | %d | %.2f | %.1f | %s | %.2f | %d |" % (n, mb, failed, tok, wall, rate, ratio, peak, pre))
