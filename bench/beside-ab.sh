#!/bin/bash
# A vision pass beside the decode steps (HYOCR_VISION_BESIDE, issues 15 and 17), off against on,
# alternated, on the GPU machine from the repository root after
#   source .device/setup.sh && meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 \
#       --buildtype=release && ninja -C build-gpu
# run:  OUT=/some/dir bench/beside-ab.sh          (about 2 minutes at the default 5 rounds)
# Each round: 16 concurrent 1024² pages (256 tokens each, ignore_eos, a warm engine) with the
# switch off, then on; the table gives each side's tokens/s, median and range, and the median
# time a beside pass took and the decode steps that ran beside it (debug lines, stdout).
# Session 9 measured single runs only (bench/results/2026-12-03-h200-s9/ call7): on 4833, off
# 4540–4750 tokens/s; this settles the default with repeats.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/hyocr-beside-ab}
ROUNDS=${HYOCR_AB_ROUNDS:-5}
CKPT=${HYOCR_BENCH_CKPT:-/tmp/hy-full}
HY=build-gpu/src/cli/hyocr
mkdir -p "$OUT"
[ -f "$CKPT/model.safetensors" ] || python3 bench/make_random_checkpoint.py "$CKPT" >"$OUT/ckpt.log" 2>&1
[ -f "$OUT/img/page_1024.png" ] || python3 bench/make_images.py "$OUT/img" >/dev/null

one() {   # $1: 0 or 1; writes a line "beside tokens/s pass_ms steps"
    G_MESSAGES_DEBUG=all HYOCR_VISION_BESIDE=$1 $HY run --model "$CKPT" --image "$OUT/img/page_1024.png" \
        --task recognize --device cuda --repeat 16 --max-batch 16 --warmup --max-new-tokens 256 --ignore-eos \
        --no-tail-stop --format jsonl >"$OUT/run$1.out" 2>"$OUT/run$1.err" || { echo "run failed: $OUT/run$1.err" >&2; return; }
    python3 - "$1" "$OUT/run$1.out" "$OUT/run$1.err" <<'PY'
import re, statistics, sys
side, out, err = sys.argv[1], open(sys.argv[2]).read(), open(sys.argv[3]).read()
tps = re.search(r"([0-9.]+) tokens/s", err)
passes = [(float(a), int(b)) for a, b in re.findall(r"done after ([0-9.]+) ms, ([0-9]+) decode steps", out)]
pm = statistics.median(p for p, _ in passes) if passes else 0
st = statistics.median(s for _, s in passes) if passes else 0
print(side, tps.group(1) if tps else "nan", pm, st)
PY
}

: >"$OUT/rows.txt"
for r in $(seq "$ROUNDS"); do one 0 >>"$OUT/rows.txt"; one 1 >>"$OUT/rows.txt"; done
python3 - "$OUT/rows.txt" <<'PY' | tee "$OUT/beside-ab.md"
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
print("| HYOCR_VISION_BESIDE | runs | tokens/s median | min–max | a pass, median ms | steps beside it |")
print("|---|---:|---:|---|---:|---:|")
for side in ("0", "1"):
    r = [x for x in rows if x[0] == side]
    t = [float(x[1]) for x in r]
    if not t:
        continue
    print("| %s | %d | %.1f | %.1f–%.1f | %s | %s |" % (side, len(t), statistics.median(t), min(t), max(t),
          "%.1f" % statistics.median(float(x[2]) for x in r) if side == "1" else "–",
          "%.0f" % statistics.median(float(x[3]) for x in r) if side == "1" else "–"))
PY
