#!/bin/bash
# The batched decode step's switches (issues 15 and 17), measured on the GPU machine:
#   micro  bench/decode_bench.cu (k_decode against k_decode_staged: 2–4 stages,
#          1/4/16 rows at contexts 1087 and 4191, the engine's split and a sweep; f16 and bf16) and
#          bench/elementwise_bench.cu (its "N heads a block" rows: rope_qknorm spread),
#          bench/gemm_rows_bench.cu (the fused norm products), then the GPU tests of all three
#          (test-backend-cuda: paged_decode_staged, rope_qknorm_spread, paged, paged_verify_bound,
#          rope_qknorm, fused).                                                     (~4 min)
#   steps1 the engine's decode steps (tests/test-decode's benchmark, graphs: batch 1 at 4191
#          tokens, batches 1/4/16 at 1087): the default, then HYOCR_DECODE_STAGES=2/3/4 (~4 min)
#   steps2 the same: HYOCR_ROPE_HEADS=4 and 1, both switches on, the default again  (~4 min)
# (HYOCR_DECODE_HEADS_FIRST and HYOCR_GEMM_NORM_HELD, which session 8 ran here, were measured no
# faster and removed: docs/PERFORMANCE.md.)
#   source .device/setup.sh 2>/dev/null; OUT=/tmp/o bench/decstep.sh micro|steps1|steps2
# Env: HYOCR_BENCH_CKPT (full-size checkpoint, default /tmp/hy-full; made by
# bench/make_random_checkpoint.py when missing). Writes $OUT/decode-bench-{f16,bf16}.txt,
# $OUT/elementwise.txt, $OUT/gemm-rows.txt, $OUT/tests.tap, $OUT/steps1.txt, $OUT/steps2.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/hyocr-decstep}
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
CKPT=${HYOCR_BENCH_CKPT:-/tmp/hy-full}
B=build-gpu
build() {
    [ -d $B ] || meson setup $B -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=disabled \
        --buildtype=release >/dev/null 2>&1
    ninja -C $B "$@" >/dev/null 2>&1 || { echo "build of $* failed"; ninja -C $B "$@" 2>&1 | tail -20; exit 1; }
}
case "${1:-micro}" in
micro)
    nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Ikernels bench/decode_bench.cu -o /tmp/decode-bench &
    nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Ikernels bench/elementwise_bench.cu \
        -o /tmp/elementwise-bench &
    nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Ikernels bench/gemm_rows_bench.cu \
        -o /tmp/gemm-rows-bench &
    build tests/test-backend-cuda
    wait
    /tmp/decode-bench | tee "$OUT/decode-bench-f16.txt"; echo "exit ${PIPESTATUS[0]}" >>"$OUT/decode-bench-f16.txt"
    /tmp/decode-bench bf16 >"$OUT/decode-bench-bf16.txt"; echo "exit $?" >>"$OUT/decode-bench-bf16.txt"
    tail -1 "$OUT/decode-bench-bf16.txt"
    /tmp/elementwise-bench >"$OUT/elementwise.txt"; echo "exit $?" >>"$OUT/elementwise.txt"
    grep -E "heads a block|^exit|MISMATCH" "$OUT/elementwise.txt"
    /tmp/gemm-rows-bench | tee "$OUT/gemm-rows.txt"; echo "exit ${PIPESTATUS[0]}" >>"$OUT/gemm-rows.txt"
    for t in paged_decode_staged rope_qknorm_spread paged paged_verify_bound rope_qknorm fused; do
        for d in f16 bf16; do echo "-p /backend-cuda/$d/$t"; done
    done | xargs $B/tests/test-backend-cuda --tap >"$OUT/tests.tap" 2>&1
    echo "tests exit $?"; grep -E "^(not )?ok|rel-L2 .* exceeds|differ" "$OUT/tests.tap" | head -30
    ;;
steps1 | steps2)
    build tests/test-decode
    [ -d "$CKPT" ] || python3 bench/make_random_checkpoint.py "$CKPT" >/dev/null
    run() {   # run LABEL [VAR=VALUE...]: graphs only
        echo "== $1"
        shift
        env "$@" HYOCR_DECODE_BENCH="$CKPT" HYOCR_DECODE_BENCH_MODES=2 timeout 120 \
            $B/tests/test-decode -p /decode/cuda/bench 2>&1 | grep "^# decode"
    }
    if [ "$1" = steps1 ]; then
        run "default (k_decode, rope a row a block)"
        run "HYOCR_DECODE_STAGES=2" HYOCR_DECODE_STAGES=2
        run "HYOCR_DECODE_STAGES=3" HYOCR_DECODE_STAGES=3
        run "HYOCR_DECODE_STAGES=4" HYOCR_DECODE_STAGES=4
    else
        run "HYOCR_ROPE_HEADS=4" HYOCR_ROPE_HEADS=4
        run "HYOCR_ROPE_HEADS=1" HYOCR_ROPE_HEADS=1
        run "both (STAGES=3, ROPE_HEADS=4)" HYOCR_DECODE_STAGES=3 HYOCR_ROPE_HEADS=4
        run "default again"
    fi | tee "$OUT/$1.txt"
    ;;
*) echo "usage: bench/decstep.sh micro|steps1|steps2"; exit 2 ;;
esac
