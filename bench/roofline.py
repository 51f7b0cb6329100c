#!/usr/bin/env python3
"""The roofline table of docs/PERFORMANCE.md from bench/vision-profile.sh's per-op tables.

    python3 bench/roofline.py DIR     (DIR holds prof-{wgmma,mma}-{1024,2048,4096}.md)

Each op's work is counted from the model's shapes (hunyuanocr-spec.md), not measured: GEMMs and
attention in FLOPs (2 per multiply-add; vision attention over its 72 real dims, the prefill's
causal attention over the lower triangle), the elementwise ops in the bytes their definition reads
and writes once (fp16). The time is measured: the op's GPU time in one warm job. Peaks: the
H200's dense FP16 tensor rate, 989.5 TFLOP/s, and its HBM, 4.8 TB/s.

The time of an op in one warm job is (3 jobs − 2 jobs) of two runs; where the first job's one-off
cost of that op (cuBLASLt's first call of a shape: ~70 ms for the ViT's q|k|v GEMM) differed between
the two runs, the difference is off by that much. A rate above the peak is impossible and printed
as "(noise)"; the ViT q|k|v GEMM (the first GEMM of every job) is marked † at every size."""
import re
import sys

PEAK_TF, PEAK_TBS = 989.5, 4.8
SIZES = {1024: (4096, 1087), 2048: (16384, 4191), 4096: (65536, 16543)}   # patches, prompt tokens
VC, VH, VD, VI, VL = 1152, 16, 72, 4304, 27        # vision tower
TC, TQ, TK, TD, TI, TL = 1024, 16, 8, 128, 3584, 24  # text model


def work(op, n, t):
    """(stage, what, amount, unit) of one warm job's op, or None when not modelled."""
    m = re.match(r"matmul N=(\d+) K=(\d+) \(>64 rows\)", op)
    if m:
        N, K = int(m[1]), int(m[2])
        vis = {(3 * VC, VC): "q|k|v", (VC, VC): "o", (VI, VC): "fc1", (VC, VI): "fc2"}
        txt = {((TQ + 2 * TK) * TD, TC): "q|k|v", (TC, TQ * TD): "o", (2 * TI, TC): "gate|up", (TC, TI): "down"}
        if (N, K) in vis:
            return "vision", "GEMM %s (%d×%d×%d)" % (vis[(N, K)], n, N, K), 2.0 * n * N * K * VL, "F"
        if (N, K) in txt:
            return "prefill", "GEMM %s (%d×%d×%d)" % (txt[(N, K)], t, N, K), 2.0 * t * N * K * TL, "F"
        return None
    if op == "attention_full (vision)":
        return "vision", "attention (%d² keys, 16 heads × 72)" % n, 4.0 * n * n * VH * VD * VL, "F"
    if op == "attention_paged (prefill)":
        return "prefill", "causal attention (%d tokens, 16 q heads × 128)" % t, 2.0 * t * t * TQ * TD * TL, "F"
    if op == "add_layernorm":
        return "vision", "residual add + LayerNorm", 2 * 4.0 * n * VC * 2 * VL, "B"
    if op == "gelu":
        return "vision", "GELU", 2.0 * n * VI * 2 * VL, "B"
    if op == "add_rmsnorm (>64 rows)":
        return "prefill", "residual add + RMSNorm", 2 * 4.0 * t * TC * 2 * TL, "B"
    if op == "rope_qknorm (>64 rows)":
        return "prefill", "RoPE + QK-norm", 2.0 * t * (TQ + TK) * TD * 2 * TL, "B"
    if op == "swiglu (>64 rows)":
        return "prefill", "SwiGLU", 3.0 * t * TI * 2 * TL, "B"
    return None


def table(path):
    ops = {}
    for line in open(path):
        c = [x.strip() for x in line.strip().strip("|").split("|")]
        if len(c) == 5 and c[2].replace(".", "").isdigit():
            ops[c[0]] = float(c[2])
    return ops


d = sys.argv[1]
print("| page | stage | op | work (model) | ms before → after | rate before → after | % of peak after |")
print("|---|---|---|---:|---:|---:|---:|")
for size, (n, t) in SIZES.items():
    after, before = table("%s/prof-wgmma-%d.md" % (d, size)), table("%s/prof-mma-%d.md" % (d, size))
    rows = []
    for op, ms in after.items():
        w = work(op, n, t)
        if not w:
            continue
        stage, what, amount, unit = w
        b = before.get(op)
        r = lambda x: amount / (x * 1e-3) / 1e12
        peak_of = PEAK_TF if unit == "F" else PEAK_TBS
        fmt = "%.0f TFLOP/s" if unit == "F" else "%.2f TB/s"
        amt = "%.2f TFLOP" % (amount / 1e12) if unit == "F" else "%.2f GB" % (amount / 1e9)
        rate = lambda x: "–" if x is None else "(noise)" if r(x) > peak_of else fmt % r(x)
        pct = "(noise)" if r(ms) > peak_of else "%.0f %%" % (100 * r(ms) / peak_of)
        if stage == "vision" and "q|k|v" in what:
            what += " †"
        what = what.replace("|", "\\|")   # inside a Markdown table cell
        rows.append((stage, -ms, "| %d² | %s | %s | %s | %s → %.2f | %s → %s | %s |" % (
            size, stage, what, amt, "–" if b is None else "%.2f" % b, ms, rate(b), rate(ms), pct)))
    for _, _, line in sorted(rows, key=lambda x: (x[0] != "vision", x[1])):
        print(line)
