#!/bin/bash
# The GPU proof in one go, on the GPU machine, from the repository root:
#   source .device/setup.sh && OUT=/some/dir tests/gpu/run.sh
# 1. build with CUDA (sm_90 only, to save time there) and run the whole suite, the CUDA
#    backend, decode and batch tests live on the GPU;
# 2. tiny fixtures on CUDA: greedy tokens (with and without penalty) against transformers;
#    FP16 overflow → the job redone in BF16;
# 3. full-size random checkpoint: first-step logits against transformers fp32;
# 4. memory pressure (tests/gpu/memory.sh);
# 5. the benchmark table (bench/gpu-bench.sh) and the per-op profile of a warm 2048² job.
# HYOCR_GPU_QUICK=1 skips the BF16 tiny run and the 1024² parity; HYOCR_BENCH_SKIP_HF=1 skips
# transformers in the benchmark.
set -uo pipefail
OUT=${OUT:-/tmp/hyocr-gpu}
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
T0=$(date +%s)
step() { echo; echo "=== [$(( $(date +%s) - T0 )) s] $*"; }
CKPT=${HYOCR_BENCH_CKPT:-/tmp/hy-full}
HY=build-gpu/src/cli/hyocr

step build
( [ -f "$CKPT/model.safetensors" ] || python3 bench/make_random_checkpoint.py "$CKPT" >"$OUT/ckpt.log" 2>&1
  python3 bench/make_images.py /tmp/hyocr-img >/dev/null ) &
if [ ! -f build-gpu/build.ninja ]; then
    meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=disabled \
        --buildtype=release >"$OUT/setup.log" 2>&1 || { tail -30 "$OUT/setup.log"; exit 1; }
fi
ninja -C build-gpu >"$OUT/build.log" 2>&1 || { grep -E "error|FAILED" "$OUT/build.log" | head -30; exit 1; }
wait

step "meson test (CUDA live)"
timeout 300 meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 8 >"$OUT/meson-test.log" 2>&1
grep -E "^ *[0-9]+/[0-9]+ |^Ok:|^Fail:|^Skipped:" "$OUT/meson-test.log"

step "tiny fixtures on CUDA"
python3 tests/gpu/tiny_parity.py $HY tests/data f16 2>&1 | tee "$OUT/tiny-f16.txt" | tail -4
[ -n "${HYOCR_GPU_QUICK:-}" ] || python3 tests/gpu/tiny_parity.py $HY tests/data bf16 2>&1 | tee "$OUT/tiny-bf16.txt" | tail -4
python3 tests/gpu/overflow.py $HY tests/data 2>&1 | tee "$OUT/overflow.txt"

step "full-size parity against transformers fp32"
sizes="1024 2048"
[ -z "${HYOCR_GPU_QUICK:-}" ] || sizes=2048
for size in $sizes; do
    img=/tmp/hyocr-img/page_$size.png
    python3 bench/hf_reference.py parity --model "$CKPT" --image "$img" --out /tmp/par-$size >>"$OUT/parity.log" 2>&1
    $HY run --device cuda --model "$CKPT" --image "$img" --task recognize \
        --max-new-tokens 1 --dump /tmp/hy-$size --format json >/tmp/hy-$size.json 2>>"$OUT/parity.log"
    python3 tests/gpu/compare.py /tmp/par-$size /tmp/hy-$size "page_$size" | tee -a "$OUT/parity.txt"
done

step "memory pressure"
OUT=$OUT tests/gpu/memory.sh 2>&1 | tee "$OUT/memory-pressure.txt" | grep -E "PASS|FAIL|exit"

step "benchmark"
OUT=$OUT bench/gpu-bench.sh

step "profile of a warm 2048² job: (3 jobs − 1 job) / 2, per op"
for n in 1 3; do
    HYOCR_PROFILE=1 $HY run --device cuda --model "$CKPT" --image /tmp/hyocr-img/page_2048.png --task recognize \
        --repeat $n --max-batch 1 --max-new-tokens 256 --ignore-eos --format json >"$OUT/profile-$n.json" \
        2>"$OUT/profile-$n.txt"
done
python3 bench/profile_diff.py "$OUT/profile-1.txt" "$OUT/profile-3.txt" 2 | tee "$OUT/profile-warm.md" | head -40
step done
