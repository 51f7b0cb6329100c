#!/bin/bash
# One run on the GPU machine: build hyocr with CUDA, make the full-size random checkpoint,
# run transformers 5.17 (fp16, sdpa and eager) and hyocr on the same checkpoint and images,
# and print one table (also written to $OUT/bench.md when OUT is set).
#
#   source .device/setup.sh && bench/gpu-bench.sh [--quick]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/hyocr-bench}
mkdir -p "$OUT"
CKPT=${HYOCR_BENCH_CKPT:-/tmp/hy-full}
NEW=${HYOCR_BENCH_NEW_TOKENS:-256}
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1

if [ ! -f build-gpu/build.ninja ]; then
    meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 --buildtype=release >"$OUT/setup.log" 2>&1 \
        || { tail -30 "$OUT/setup.log"; exit 1; }
fi
ninja -C build-gpu >"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
[ -f "$CKPT/model.safetensors" ] || python3 bench/make_random_checkpoint.py "$CKPT" >"$OUT/ckpt.log" 2>&1
python3 bench/make_images.py "$OUT/img" >/dev/null

rows=()
for size in 1024 2048; do
    img=$OUT/img/page_${size}.png
    for attn in sdpa eager; do
        python3 bench/hf_reference.py bench --model "$CKPT" --image "$img" --attn $attn --new-tokens "$NEW" \
            --json "$OUT/hf_${attn}_${size}.json" >>"$OUT/hf.log" 2>&1 || echo "transformers $attn $size failed (see hf.log)"
    done
    # hyocr: the first run warms the caches; the second is reported
    for rep in 1 2; do
        build-gpu/src/cli/hyocr run --model "$CKPT" --image "$img" --task recognize --device cuda \
            --max-new-tokens "$NEW" --ignore-eos --format json >"$OUT/hyocr_${size}.json" 2>>"$OUT/hyocr.log" \
            || echo "hyocr $size failed (see hyocr.log)"
    done
done
python3 bench/table.py "$OUT" | tee "$OUT/bench.md"
