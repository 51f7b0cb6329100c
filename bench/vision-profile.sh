#!/bin/bash
# Per-op GPU time of one warm job at 1024², 2048² and 4096², with the Hopper (wgmma) vision
# attention and with the mma.sync one (HYOCR_NO_WGMMA=1): the data of the roofline table in
# docs/PERFORMANCE.md (bench/roofline.py). Each is (3 jobs − 2 jobs) of HYOCR_PROFILE tables, so
# every one-off cost (module loading, cuBLASLt's first calls) is in both runs and cancels.
#   source .device/setup.sh && OUT=/some/dir bench/vision-profile.sh
# after tests/gpu/run.sh (or bench/gpu-bench.sh) built build-gpu, the checkpoint and the images.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/hyocr-prof}
mkdir -p "$OUT"
CKPT=${HYOCR_BENCH_CKPT:-/tmp/hy-full}
IMG=${HYOCR_BENCH_IMG:-/tmp/hyocr-img}
HY=build-gpu/src/cli/hyocr
for size in 1024 2048 4096; do
    for mode in wgmma mma; do
        sw=HYOCR_NO_WGMMA=0
        [ $mode = mma ] && sw=HYOCR_NO_WGMMA=1
        for n in 2 3; do
            env $sw HYOCR_PROFILE=1 $HY run --device cuda --model "$CKPT" --image "$IMG/page_$size.png" \
                --task recognize --repeat $n --max-batch 1 --max-new-tokens 8 --ignore-eos --format json \
                >"$OUT/prof-$mode-$size-$n.json" 2>"$OUT/prof-$mode-$size-$n.txt" || echo "profile $mode $size $n failed"
        done
        python3 bench/profile_diff.py "$OUT/prof-$mode-$size-2.txt" "$OUT/prof-$mode-$size-3.txt" 1 \
            >"$OUT/prof-$mode-$size.md"
        head -4 "$OUT/prof-$mode-$size.md" | tail -2
    done
done
