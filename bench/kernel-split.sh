#!/bin/bash
# Kernel-by-kernel GPU time of batch-1 decode steps at a 2048²-page context (4191 tokens),
# CUDA graph nodes included (the engine's HYOCR_PROFILE cannot see inside a replayed graph).
# Nsight Compute profiles a window of kernel launches well past the prefill and the capture
# of the test-decode benchmark (graph mode: each kernel node is one launch; HYOCR_NO_GRAPH=1
# gives the uncaptured steps, whose attention uses the unbound split plan). ncu serialises
# the kernels and flushes the caches between them (as 1 GB of weights per step does), so
# the sum is the step's time without launch gaps and without the PDL overlap.
#   source .device/setup.sh && OUT=/tmp/o bench/kernel-split.sh [graph|eager]
# Env: SKIP (launches skipped, default 3000), COUNT (launches profiled, default 360),
# HYOCR_BENCH_CKPT (full-size checkpoint, default /tmp/hy-full), TAG (file prefix), BATCH (a batch
# of that many 1087-token sequences, a 1024² page's, instead of batch 1 at context 4191).
# Writes $OUT/${TAG}split-raw.csv, ${TAG}split.txt (per kernel: calls per step, µs per call,
# µs per step) and ${TAG}split-order.txt (one step's kernels in launch order).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/hyocr-split}
MODE=${1:-graph}
TAG=${TAG:-}
mkdir -p "$OUT"
CKPT=${HYOCR_BENCH_CKPT:-/tmp/hy-full}
export PATH=/usr/local/cuda/bin:$PATH
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[ -n "$NCU" ] || { echo "no ncu on this machine"; exit 1; }
[ -d "$CKPT" ] || python3 bench/make_random_checkpoint.py "$CKPT" >/dev/null
NOGRAPH=0
[ "$MODE" = eager ] && NOGRAPH=1
MODES=2
[ "$MODE" = eager ] && MODES=1
# the benchmark sets HYOCR_NO_GRAPH itself from its mode
if [ -n "${BATCH:-}" ]; then
    export HYOCR_DECODE_BENCH_BATCHES=$BATCH
    WHAT="batch $BATCH, context 1087"
else
    export HYOCR_DECODE_BENCH_NO_BATCH=1
    WHAT="batch 1, context 4191"
fi
HYOCR_DECODE_BENCH_MODES=$MODES HYOCR_DECODE_BENCH=$CKPT \
    timeout 500 "$NCU" --graph-profiling node --clock-control none --metrics gpu__time_duration.sum \
    --launch-skip "${SKIP:-3000}" --launch-count "${COUNT:-360}" --csv --print-units base \
    build-gpu/tests/test-decode -p /decode/cuda/bench >"$OUT/${TAG}split-raw.csv" 2>"$OUT/${TAG}split-ncu.log" ||
    { tail -20 "$OUT/${TAG}split-ncu.log"; tail -5 "$OUT/${TAG}split-raw.csv"; exit 1; }
python3 - "$OUT/${TAG}split-raw.csv" "$OUT/${TAG}split.txt" "$OUT/${TAG}split-order.txt" "$MODE" "$WHAT" <<'PY'
import csv, sys, re, collections
lines = open(sys.argv[1]).read().splitlines()
start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
if start is None:
    print("no ncu results (see split-ncu.log; graph nodes not counted as launches? try eager)"); sys.exit(1)
rows = [r for r in csv.DictReader(lines[start:]) if r.get("Metric Name") == "gpu__time_duration.sum"]
def short(n):
    n = re.sub(r"^void ", "", n)
    depth, out = 0, ""
    for ch in n:   # drop the parameter list, keep template arguments
        if ch == "(" and depth == 0: break
        depth += ch == "<"; depth -= ch == ">"
        out += ch
    return out.replace("__half", "h").replace("__nv_bfloat16", "bf")[:60]
seq = [(short(r["Kernel Name"]), float(r["Metric Value"].replace(",", "")) / 1e3, r["Grid Size"], r["Block Size"]) for r in rows]
# one step starts at the embedding kernel: keep whole steps only
starts = [i for i, s in enumerate(seq) if s[0].startswith("k_embed")]
if len(starts) < 2:
    print("fewer than two whole steps in the window; raise COUNT"); sys.exit(1)
win = seq[starts[0]:starts[-1]]
steps = len(starts) - 1
agg = collections.OrderedDict()
for n, us, g, b in win:
    a = agg.setdefault(n, [0, 0.0, g, b]); a[0] += 1; a[1] += us
tot = sum(a[1] for a in agg.values()) / steps
with open(sys.argv[2], "w") as f:
    f.write(f"decode step kernels ({sys.argv[4]}), {sys.argv[5]}: {steps} steps, "
            f"{len(win) / steps:.0f} kernels, {tot:.1f} us of kernel time per step\n")
    f.write(f"{'kernel':60s} {'grid':>14s} {'calls':>6s} {'us/call':>8s} {'us/step':>8s} {'%':>6s}\n")
    for n, (c, t, g, b) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
        f.write(f"{n:60s} {g:>14s} {c / steps:6.0f} {t / c:8.2f} {t / steps:8.1f} {100 * t / steps / tot:6.1f}\n")
with open(sys.argv[3], "w") as f:
    for n, us, g, b in seq[starts[0]:starts[1]]:
        f.write(f"{us:8.2f}  {n}  grid {g} block {b}\n")
print(open(sys.argv[2]).read())
PY
