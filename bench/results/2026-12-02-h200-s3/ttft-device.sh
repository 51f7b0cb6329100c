#!/bin/bash
# The GPU proof (quick) with this tree, then the warm time to first token of 1024² and 2048²
# (second job of --repeat 2). On the GPU machine: source .device/setup.sh && OUT=... this script
set -uo pipefail
OUT=${OUT:-/tmp/ttft}
mkdir -p "$OUT"
HYOCR_GPU_QUICK=1 HYOCR_BENCH_SKIP_HF=1 OUT=$OUT timeout 400 tests/gpu/run.sh >"$OUT/run.log" 2>&1
echo "run.sh rc=$?" >>"$OUT/run.log"
for s in 1024 2048; do
    build-gpu/src/cli/hyocr run --device cuda --model /tmp/hy-full --image /tmp/hyocr-img/page_$s.png \
        --task recognize --repeat 2 --max-batch 1 --max-new-tokens 16 --ignore-eos --format json \
        >"$OUT/ttft-$s.json" 2>"$OUT/ttft-$s.err"
done
# only a few files come back from the device: keep one summary, drop the rest
cd "$OUT" && for f in run.log meson-test.log tiny-f16.txt overflow.txt parity.txt memory-pressure.txt bench.md \
    profile-warm.md; do echo "##### $f"; cat "$f"; done >ttft-summary.txt 2>&1
grep -h -o '"first_token_ms" : [0-9.]*' ttft-1024.json ttft-2048.json >>ttft-summary.txt
find "$OUT" -mindepth 1 ! -name ttft-summary.txt ! -name 'profile-[13].txt' -delete
