#!/bin/bash
# Device memory of a long run on the GPU (issue 16: "a document of 50 pages runs in bounded
# memory, host and device"): hyocr run over a folder of N A4 pages at 200 dpi (1654 × 2339,
# N = 1, 10, 50), each page decoded for 128 tokens (ignore_eos), jobs batched as hyocr run
# batches a document's pages. Two figures a run:
#   - the device's used memory, sampled by nvidia-smi every 50 ms (the whole process:
#     CUDA context, weights, KV cache, scratch), its peak above the idle device;
#   - the engine's own peak (the "memory.peak" of each page's JSON line), the largest.
# A document page reaches the engine as the RGB image of its page (src/engine/document.c),
# so an A4 PNG page costs the device what a rendered A4 PDF page does; the GPU machine has
# no poppler, which is why the pages are PNGs here.
#
#   source .device/setup.sh && OUT=DIR bench/document-device-memory.sh     (the GPU machine)
set -uo pipefail
cd "$(dirname "$0")/.."
HY=${HY:-build-gpu/src/cli/hyocr}
CKPT=${HYOCR_BENCH_CKPT:-/tmp/hy-full}
OUT=${OUT:-/tmp/hyocr-doc-dev}
mkdir -p "$OUT"
python3 bench/make_images.py "$OUT/img" >/dev/null || exit 1
idle=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 | head -1)
echo "| pages | device peak above idle (MiB) | engine peak (MiB) | wall (s) |" | tee "$OUT/table.md"
echo "|---:|---:|---:|---:|" | tee -a "$OUT/table.md"
for n in 1 10 50; do
    dir=$OUT/doc-$n
    mkdir -p "$dir"
    for i in $(seq -w 1 $n); do ln -sf "$OUT/img/page_a4.png" "$dir/page-$i.png"; done
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 -lms 50 >"$OUT/smi-$n.txt" &
    smi=$!
    t0=$(date +%s.%N)
    "$HY" run --model "$CKPT" --device cuda --max-new-tokens 128 --ignore-eos --format jsonl "$dir" \
        >"$OUT/run-$n.jsonl" 2>"$OUT/run-$n.err" || { tail -5 "$OUT/run-$n.err"; }
    t1=$(date +%s.%N)
    kill $smi; wait $smi 2>/dev/null
    python3 - "$n" "$idle" "$OUT/smi-$n.txt" "$OUT/run-$n.jsonl" "$t0" "$t1" <<'PY' | tee -a "$OUT/table.md"
import json, sys
n, idle, smi, runs, t0, t1 = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], float(sys.argv[5]), float(sys.argv[6])
used = [int(l) for l in open(smi) if l.strip().isdigit()]
rows = [json.loads(l) for l in open(runs)]
peak = max(r["memory"]["peak"] for r in rows) if rows else 0
print(f"| {n} ({len(rows)} done) | {max(used) - idle} | {peak / 2**20:.0f} | {t1 - t0:.1f} |")
PY
done
