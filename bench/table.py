#!/usr/bin/env python3
"""Prints the benchmark table from the JSON files gpu-bench.sh wrote."""
import glob
import json
import os
import sys

out = sys.argv[1]
rows = []
for path in sorted(glob.glob(os.path.join(out, "hf_*.json"))):
    r = json.load(open(path))
    rows.append((r["image"], r["impl"], r["prompt_tokens"], r["ttft_ms"], r["decode_tok_s"], r["peak_gib"]))
for path in sorted(glob.glob(os.path.join(out, "hyocr_*.json"))):
    try:
        r = json.load(open(path))
    except ValueError:
        continue
    t, m = r.get("timings", {}), r.get("memory", {})
    rows.append((os.path.basename(path).replace("hyocr_", "page_").replace(".json", ".png"), "hyocr-cuda",
                 r.get("prompt_tokens", 0), t.get("first_token_ms", 0), t.get("decode_tokens_per_s", 0),
                 m.get("peak", 0) / 2 ** 30))
print("| image | engine | prompt tokens | time to first token (ms) | decode (tokens/s) | peak GPU memory (GiB) |")
print("|---|---|---:|---:|---:|---:|")
for r in sorted(rows):
    print("| %s | %s | %d | %.1f | %.1f | %.2f |" % r)
