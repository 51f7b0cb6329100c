#!/bin/bash
# One run on the GPU machine: build hyocr with CUDA, make the full-size random checkpoint,
# run transformers 5.17 (fp16, sdpa and eager) and hyocr on the same checkpoint and images,
# and print one table (also written to $OUT/bench.md).
#
#   source .device/setup.sh && bench/gpu-bench.sh
#
# hyocr is measured on a warm engine, as an app or a server runs it: two jobs in one process
# (`--repeat 2 --max-batch 1`), the second reported. transformers is warmed up the same way
# (bench/hf_reference.py). HYOCR_BENCH_SKIP_HF=1 skips transformers (its numbers do not change
# with our code) to save device time; the table then shows hyocr rows only.
# Also: the same job without CUDA graphs (HYOCR_NO_GRAPH=1), with the attention kernels cards
# below Hopper run (the "mma" rows: HYOCR_NO_WGMMA=1 for the vision tower's, HYOCR_PREFILL_TMA=0
# for the prompt's; since session 28 both differ on Hopper), a 4096² page (hyocr only), and 16 concurrent
# 1024² jobs (continuous batching) against the same 16 jobs one at a time.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/hyocr-bench}
mkdir -p "$OUT"
CKPT=${HYOCR_BENCH_CKPT:-/tmp/hy-full}
NEW=${HYOCR_BENCH_NEW_TOKENS:-256}
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
HY=build-gpu/src/cli/hyocr

if [ ! -f build-gpu/build.ninja ]; then
    meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=disabled --buildtype=release \
        >"$OUT/setup.log" 2>&1 || { tail -30 "$OUT/setup.log"; exit 1; }
fi
ninja -C build-gpu src/cli/hyocr >"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
[ -f "$CKPT/model.safetensors" ] || python3 bench/make_random_checkpoint.py "$CKPT" >"$OUT/ckpt.log" 2>&1
python3 bench/make_images.py "$OUT/img" >/dev/null

# $1 = output json (the warm job), $2 = image, then extra env assignments via env(1)
hyocr_warm() {
    local out=$1 img=$2
    shift 2
    env "$@" $HY run --model "$CKPT" --image "$img" --task recognize --device cuda --repeat 2 --max-batch 1 \
        --max-new-tokens "$NEW" --ignore-eos --no-tail-stop ${HY_EXTRA:-} --format json >"$out.all" 2>>"$OUT/hyocr.log" \
        || echo "hyocr $(basename "$img") $* failed (see hyocr.log)"
    python3 -c "import json,sys; json.dump(json.load(open('$out.all'))[1], open('$out','w'), indent=1)" 2>/dev/null
    rm -f "$out.all"
}

for size in 1024 2048 4096; do
    img=$OUT/img/page_${size}.png
    if [ "$size" = 4096 ]; then
        # the 1.5 release's default pixel limit: hyocr only (transformers' numbers of record are in issue 17)
        hyocr_warm "$OUT/hyocr_${size}.json" "$img"
        hyocr_warm "$OUT/hyocr-mma_${size}.json" "$img" HYOCR_NO_WGMMA=1 HYOCR_PREFILL_TMA=0
        continue
    fi
    if [ -z "${HYOCR_BENCH_SKIP_HF:-}" ]; then
        for attn in sdpa eager; do
            python3 bench/hf_reference.py bench --model "$CKPT" --image "$img" --attn $attn --new-tokens "$NEW" \
                --json "$OUT/hf_${attn}_${size}.json" >>"$OUT/hf.log" 2>&1 \
                || echo "transformers $attn $size failed (see hf.log)"
        done
    fi
    hyocr_warm "$OUT/hyocr_${size}.json" "$img"
    hyocr_warm "$OUT/hyocr-nograph_${size}.json" "$img" HYOCR_NO_GRAPH=1
    # the attention kernels cards below Hopper run (vision mma.sync, prefill k_prefill), same build
    hyocr_warm "$OUT/hyocr-mma_${size}.json" "$img" HYOCR_NO_WGMMA=1 HYOCR_PREFILL_TMA=0
done
# Sampling (temperature 0.8, top-k 50, top-p 0.9) chooses on the device too: the 2048² row again.
HY_EXTRA="--temperature 0.8 --top-k 50 --top-p 0.9 --seed 7" hyocr_warm "$OUT/hyocr-sampled_2048.json" \
    "$OUT/img/page_2048.png"

# Continuous batching: 16 concurrent 1024² jobs against the same 16 one at a time, both on a warm
# engine (--warmup: the first job's one-off costs, ~0.2 s, are not in either wall time).
img=$OUT/img/page_1024.png
for mb in 1 16; do
    $HY run --model "$CKPT" --image "$img" --task recognize --device cuda --repeat 16 --max-batch $mb --warmup \
        --max-new-tokens "$NEW" --ignore-eos --no-tail-stop --format jsonl >"$OUT/batch16_mb$mb.jsonl" 2>"$OUT/batch16_mb$mb.err" \
        || echo "hyocr --repeat 16 --max-batch $mb failed (see batch16_mb$mb.err)"
    tail -1 "$OUT/batch16_mb$mb.err"
done
python3 bench/table.py "$OUT" | tee "$OUT/bench.md"
