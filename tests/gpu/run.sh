#!/bin/bash
# The GPU proof in one go, on the GPU machine, from the repository root:
#   source .device/setup.sh && tests/gpu/run.sh
# 1. build with CUDA (sm_90 only, to save time there) and run the whole suite — the CUDA
#    backend-consistency test is live on a GPU;
# 2. tiny fixtures on CUDA: greedy tokens (with and without penalty) against transformers;
# 3. full-size random checkpoint: first-step logits against transformers fp32;
# 4. the benchmark table (bench/gpu-bench.sh).
set -uo pipefail
OUT=${OUT:-/tmp/hyocr-gpu}
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
step() { echo; echo "=== $*"; }

step build
if [ ! -f build-gpu/build.ninja ]; then
    meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=disabled \
        --buildtype=debugoptimized >"$OUT/setup.log" 2>&1 || { tail -30 "$OUT/setup.log"; exit 1; }
fi
ninja -C build-gpu >"$OUT/build.log" 2>&1 || { grep -E "error|FAILED" "$OUT/build.log" | head -30; exit 1; }

step "meson test (CUDA live)"
meson test -C build-gpu --print-errorlogs --num-processes 4 >"$OUT/meson-test.log" 2>&1
grep -E "^ *[0-9]+/[0-9]+ |^Ok:|^Fail:|^Skipped:" "$OUT/meson-test.log"

step "tiny fixtures on CUDA (fp16, then bf16)"
python3 tests/gpu/tiny_parity.py build-gpu/src/cli/hyocr tests/data f16 2>&1 | tee "$OUT/tiny-f16.txt"
python3 tests/gpu/tiny_parity.py build-gpu/src/cli/hyocr tests/data bf16 2>&1 | tee "$OUT/tiny-bf16.txt"

step "full-size parity against transformers fp32"
CKPT=${HYOCR_BENCH_CKPT:-/tmp/hy-full}
[ -f "$CKPT/model.safetensors" ] || python3 bench/make_random_checkpoint.py "$CKPT" >"$OUT/ckpt.log" 2>&1
python3 bench/make_images.py /tmp/hyocr-img >/dev/null
for size in 1024 2048; do
    img=/tmp/hyocr-img/page_$size.png
    python3 bench/hf_reference.py parity --model "$CKPT" --image "$img" --out /tmp/par-$size >>"$OUT/parity.log" 2>&1
    build-gpu/src/cli/hyocr run --device cuda --model "$CKPT" --image "$img" --task recognize \
        --max-new-tokens 1 --dump /tmp/hy-$size --format json >/tmp/hy-$size.json 2>>"$OUT/parity.log"
    python3 tests/gpu/compare.py /tmp/par-$size /tmp/hy-$size "page_$size" | tee -a "$OUT/parity.txt"
done

step "memory pressure"
echo "-- budget 1G (smaller than the weights): must refuse with a clear message"
build-gpu/src/cli/hyocr run --device cuda --gpu-memory-limit 1G --model "$CKPT" --image /tmp/hyocr-img/page_1024.png \
    --task recognize --max-new-tokens 4 --format json >/dev/null 2>"$OUT/mem1g.err"; echo "exit $?: $(cat "$OUT/mem1g.err")"
echo "-- 4096x4096 page under a 3G budget"
build-gpu/src/cli/hyocr run --device cuda --gpu-memory-limit 3G --model "$CKPT" --image /tmp/hyocr-img/page_4096.png \
    --task recognize --max-new-tokens 16 --ignore-eos --format json >"$OUT/mem3g.json" 2>"$OUT/mem3g.err"
echo "exit $?: $(tail -c 600 "$OUT/mem3g.err")"
python3 -c "import json,sys; r=json.load(open('$OUT/mem3g.json')); print('prompt', r['prompt_tokens'], 'timings', r['timings'], 'memory', r['memory'])" 2>/dev/null

step benchmark
OUT=$OUT bench/gpu-bench.sh
