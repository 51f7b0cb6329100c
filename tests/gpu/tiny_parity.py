#!/usr/bin/env python3
"""Greedy tokens of `hyocr run --device cuda` on the tiny fixtures against transformers.
Prints one line per case; at a divergence, the margin between the two best logits of hyocr at that
step (a near-tie is a documented divergence, not a bug)."""
import json
import os
import struct
import subprocess
import sys

hyocr, data, dtype = sys.argv[1], sys.argv[2], sys.argv[3]
bad = 0
for ck in ("ckpt-flat", "ckpt-nested"):
    root = os.path.join(data, "model", ck)
    for case in sorted(os.listdir(root)):
        image, task = case.split("__")
        for fname, rp in (("greedy.txt", "1.0"), ("greedy_rp.txt", "1.08")):
            want = [int(x) for x in open(os.path.join(root, case, fname)).read().split()]
            dump = "/tmp/tiny-dump-%s-%s" % (case, fname)
            cmd = [hyocr, "run", "--device", "cuda", "--dtype", dtype, "--model", os.path.join(data, ck),
                   "--image", os.path.join(data, "images", image), "--task", task, "--max-new-tokens", "48",
                   "--repetition-penalty", rp, "--format", "json", "--dump", dump]
            if task == "extract_fields":
                cmd += ["--fields", "姓名,date,total"]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                print("FAIL %s %s %s: exit %d: %s" % (ck, case, fname, p.returncode, p.stderr.strip()[-400:]))
                bad += 1
                continue
            got = json.loads(p.stdout)[0]["token_ids"]
            if got == want:
                print("ok   %s %s %s: %d tokens identical" % (ck, case, fname, len(got)))
                continue
            k = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
            raw = open(os.path.join(dump, "logits.f32"), "rb").read()
            n_vocab = len(raw) // 4 // max(len(got), 1)
            row = struct.unpack_from("<%df" % n_vocab, raw, 4 * n_vocab * k) if k < len(got) else []
            top = sorted(row, reverse=True)[:2] if row else [0, 0]
            print("DIFF %s %s %s: first divergence at step %d (hyocr %s, ref %s), margin %.3g"
                  % (ck, case, fname, k, got[k] if k < len(got) else "-", want[k] if k < len(want) else "-",
                     top[0] - top[1]))
            bad += 1
print("tiny parity (%s): %s" % (dtype, "all identical" if bad == 0 else "%d cases differ" % bad))
