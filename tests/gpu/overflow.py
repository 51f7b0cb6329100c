#!/usr/bin/env python3
"""FP16 overflow on the GPU: the job must be redone in BF16 and say so, never give garbage.

Copies a tiny fixture checkpoint and scales the merger's Linear weight by 2^20 (exact in BF16):
its output (~1e5) overflows FP16 but not BF16, and the RMSNorm after it brings the image
embeddings back to normal size, so a BF16 run is sound. Checks that the default (FP16) run
reports redone_dtype "bf16", logs why, and gives the same tokens as a run asked for in BF16.

    python3 tests/gpu/overflow.py build-gpu/src/cli/hyocr tests/data
"""
import json
import os
import shutil
import struct
import subprocess
import sys

import numpy as np

hyocr, data = sys.argv[1], sys.argv[2]
src = os.path.join(data, "ckpt-flat")
dst = "/tmp/hyocr-overflow-ckpt"
shutil.rmtree(dst, ignore_errors=True)
shutil.copytree(src, dst)
NAME = "vit.perceive.mlp.weight"
index = json.load(open(os.path.join(dst, "model.safetensors.index.json")))
path = os.path.join(dst, index["weight_map"][NAME])
with open(path, "r+b") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    meta = json.loads(f.read(n))[NAME]
    assert meta["dtype"] == "BF16", meta
    a, b = meta["data_offsets"]
    f.seek(8 + n + a)
    raw = np.frombuffer(f.read(b - a), dtype="<u2")
    w = (raw.astype(np.uint32) << 16).view(np.float32) * np.float32(2.0 ** 20)
    f.seek(8 + n + a)
    f.write((w.view(np.uint32) >> 16).astype("<u2").tobytes())

image = os.path.join(data, "images", sorted(os.listdir(os.path.join(data, "images")))[0])


def run(*extra):
    cmd = [hyocr, "run", "--device", "cuda", "--model", dst, "--image", image, "--task", "recognize",
           "--max-new-tokens", "24", "--format", "json", *extra]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        print("FAIL %s: exit %d: %s" % (" ".join(extra), p.returncode, p.stderr.strip()[-600:]))
        sys.exit(1)
    return json.loads(p.stdout)[0], p.stderr   # an array, one object per image


f16, log = run()
bf16, _ = run("--dtype", "bf16")
print("default run: redone_dtype=%s, %d tokens; log: %s" % (f16.get("redone_dtype"), len(f16["token_ids"]),
                                                         " | ".join(l for l in log.splitlines() if "FP16" in l)))
print("--dtype bf16: %d tokens" % len(bf16["token_ids"]))
ok = f16.get("redone_dtype") == "bf16" and "FP16" in log and f16["token_ids"] == bf16["token_ids"] and \
    "redone_dtype" not in bf16
print("PASS overflow redone in BF16" if ok else "FAIL overflow redone in BF16")
sys.exit(0 if ok else 1)
