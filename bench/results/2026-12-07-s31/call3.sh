# Session 31, call 3 — never ran (no machine). The two benches alone, from the binaries carried in
# .device/bin (built on the development machine as README.md says; gemm-rows-bench at dc61618, for
# its 3 and 4 column groups): decode_bench with today's grid and the heads-fast one, blocks scattered
# and in order, then gemm_rows_bench. call1.sh runs it first with a wider sweep (HK_BENCH_ROWS, _CTX);
# session 32's benches.sh with more binaries (DECODE_BENCHES).
#   bash bench/results/2026-12-07-s31/call3.sh
T0=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
for ord in "" 1; do for b in ${DECODE_BENCHES:-decode-bench decode-bench-hf}; do
    echo "=== $b ordered=${ord:-0}"
    HK_BENCH_ORDERED=$ord HK_BENCH_ROWS=${HK_BENCH_ROWS:-1,16} HK_BENCH_CTX=${HK_BENCH_CTX:-1215,4191} \
        HK_BENCH_SPLITS=0,448 HK_BENCH_STAGES=0,2 timeout 120 .device/bin/$b 2>&1 | head -40
done; done
echo "[$(( $(date +%s) - T0 )) s] === gemm_rows_bench"
timeout 120 .device/bin/gemm-rows-bench 2>&1
echo "[$(( $(date +%s) - T0 )) s] benches done"
