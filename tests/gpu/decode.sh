#!/bin/bash
# The decode fast path on the GPU machine, from the repository root:
#   source .device/setup.sh && OUT=/some/dir tests/gpu/decode.sh
# build; the decode and CUDA backend tests live; decode speed (host sampler / device
# pick / graphs) at a 2048²-page context and in batches; the per-op profile of a
# decode and of a whole 2048² job; tiny FP16 parity; kernel by kernel GPU time of a replayed
# step (ncu, bench/kernel-split.sh). STEPS picks some of: build tests bench quick fuse split
# profile job run parity kernels (default: all but quick), e.g. STEPS="build tests quick parity
# kernels" (quick: the graph benchmark alone, batch 1 at 4191 and batches at 1087).
set -uo pipefail
OUT=${OUT:-/tmp/hyocr-decode}
STEPS=${STEPS:-build tests bench fuse split profile job run parity kernels}
want() { [[ " $STEPS " == *" $1 "* ]]; }
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
T0=$(date +%s)
step() { echo; echo "=== [$(( $(date +%s) - T0 )) s] $*"; }
CKPT=/tmp/hy-full
IMG=/tmp/img/page_2048.png

if want build; then
step build
(python3 bench/make_random_checkpoint.py $CKPT >"$OUT/ckpt.log" 2>&1; python3 bench/make_images.py /tmp/img >/dev/null) &
meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=disabled --buildtype=release \
    >"$OUT/setup.log" 2>&1 || { tail -20 "$OUT/setup.log"; exit 1; }
ninja -C build-gpu src/cli/hyocr tests/test-decode tests/test-backend-cuda tests/test-batch >"$OUT/build.log" 2>&1 ||
    { grep -E "error|FAILED" "$OUT/build.log" | head -30; exit 1; }
wait

fi

if want tests; then
step "tests (CUDA live)"
timeout 240 meson test -C build-gpu --no-rebuild --print-errorlogs decode backend-cuda batch >"$OUT/meson-test.log" 2>&1
grep -E "^ *[0-9]+/[0-9]+ |^Ok:|^Fail:" "$OUT/meson-test.log"
grep -E "^(ok|not ok)" build-gpu/meson-logs/testlog.txt | grep -v "^ok" | head -20

fi

if want bench; then
step "decode benchmark"
HYOCR_DECODE_BENCH=$CKPT timeout 150 build-gpu/tests/test-decode -p /decode/cuda/bench 2>&1 | tee "$OUT/decode-bench.txt" | grep "^#"

step "decode benchmark, cuBLAS instead of the GEMV kernels (HYOCR_NO_GEMV=1)"
HYOCR_NO_GEMV=1 HYOCR_DECODE_BENCH=$CKPT timeout 150 build-gpu/tests/test-decode -p /decode/cuda/bench 2>&1 |
    tee "$OUT/decode-bench-nogemv.txt" | grep "^# decode"

fi

if want quick; then
step "decode benchmark, graphs only"
HYOCR_DECODE_BENCH_MODES=2 HYOCR_DECODE_BENCH=$CKPT timeout 120 build-gpu/tests/test-decode -p /decode/cuda/bench 2>&1 |
    tee "$OUT/decode-bench-quick.txt" | grep "^# decode"

fi

if want fuse; then
step "fused batch-1 decode (HYOCR_FUSE, HYOCR_PDL): graphs, then uncaptured per-op profiles"
for v in "0 0" "1 0" "1 1"; do
    set -- $v
    HYOCR_FUSE=$1 HYOCR_PDL=$2 HYOCR_DECODE_BENCH_MODES=2 HYOCR_DECODE_BENCH=$CKPT timeout 90 \
        build-gpu/tests/test-decode -p /decode/cuda/bench 2>&1 | grep "^# decode" | sed "s/^/fuse $1 pdl $2: /" |
        tee -a "$OUT/fuse-bench.txt"
done
for f in 0 1; do
    HYOCR_FUSE=$f HYOCR_PROFILE=1 HYOCR_DECODE_BENCH_MODES=1 HYOCR_DECODE_BENCH_NO_BATCH=1 HYOCR_DECODE_BENCH=$CKPT \
        timeout 60 build-gpu/tests/test-decode -p /decode/cuda/bench >"$OUT/fuse$f-profile-decode.txt" 2>&1
    head -40 "$OUT/fuse$f-profile-decode.txt"
done
fi

if want split; then
step "split length of the graphs' decode attention (batch 1, context 4191; default: policy)"
for len in 64 128 256 384 512; do
    HYOCR_DECODE_SPLIT=$len HYOCR_DECODE_BENCH_NO_BATCH=1 HYOCR_DECODE_BENCH_MODES=2 HYOCR_DECODE_BENCH=$CKPT \
        timeout 60 build-gpu/tests/test-decode -p /decode/cuda/bench 2>&1 | grep "^# decode" | sed "s/^/split $len: /" |
        tee -a "$OUT/decode-split.txt"
done

fi

if want profile; then
step "decode profile (per op: uncaptured steps; a graph counts as one op)"
HYOCR_PROFILE=1 HYOCR_DECODE_BENCH_MODES=12 HYOCR_DECODE_BENCH=$CKPT timeout 120 build-gpu/tests/test-decode \
    -p /decode/cuda/bench >"$OUT/profile-decode.txt" 2>&1
head -60 "$OUT/profile-decode.txt"

fi

if want job; then
step "whole 2048² job profile (hyocr run)"
HYOCR_PROFILE=1 timeout 60 build-gpu/src/cli/hyocr run --device cuda --model $CKPT --image $IMG --task recognize \
    --max-new-tokens 256 --ignore-eos --format json >"$OUT/profile-job.json" 2>"$OUT/profile-job.txt"
head -30 "$OUT/profile-job.txt"

fi

if want run; then
step "hyocr run 2048², batch 1: graphs vs HYOCR_NO_GRAPH=1 (second run of each counts)"
for mode in 0 1 0 1; do
    HYOCR_NO_GRAPH=$mode timeout 60 build-gpu/src/cli/hyocr run --device cuda --model $CKPT --image $IMG \
        --task recognize --max-new-tokens 256 --ignore-eos --format json >"$OUT/run-nograph$mode.json" 2>/dev/null
    python3 -c "import json; r=json.load(open('$OUT/run-nograph$mode.json'))[0]; print('HYOCR_NO_GRAPH=$mode', r['timings'])" |
        tee -a "$OUT/run-graph-vs-nograph.txt"
done

fi

if want parity; then
step "tiny fixtures FP16 parity"
timeout 120 python3 tests/gpu/tiny_parity.py build-gpu/src/cli/hyocr tests/data f16 2>&1 | tee "$OUT/tiny-f16.txt" | tail -15
fi

if want kernels; then
step "kernel by kernel, one replayed batch-1 step at context 4191 (ncu; graph nodes)"
HYOCR_BENCH_CKPT=$CKPT OUT="$OUT" TAG=dec- timeout 400 bench/kernel-split.sh graph | head -40
fi

step done
