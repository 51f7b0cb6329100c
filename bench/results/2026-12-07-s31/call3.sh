# Session 31, call 3 (short, for what device time was left): call1's two benches only, carried
# binaries (.device/bin, built on the development machine at dc61618: hk_gemm_rows with up to
# 4 column groups, since reverted as no card ran the CUDA suites on it), no build, no tests.
#   bash bench/results/2026-12-07-s31/call3.sh
T0=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
for ord in "" 1; do for b in decode-bench decode-bench-hf; do
    echo "=== $b ordered=${ord:-0}"
    HK_BENCH_ORDERED=$ord HK_BENCH_ROWS=1,16 HK_BENCH_CTX=1215,4191 HK_BENCH_SPLITS=0,448 HK_BENCH_STAGES=0,2 \
        timeout 60 .device/bin/$b 2>&1 | head -30
done; done
echo "[$(( $(date +%s) - T0 )) s] === gemm_rows_bench"
timeout 60 .device/bin/gemm-rows-bench 2>&1
echo "[$(( $(date +%s) - T0 )) s] call3 done"
