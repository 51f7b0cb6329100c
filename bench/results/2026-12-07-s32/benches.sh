# Session 32: session 31's call3 benches plus the head-major cache layout, from the binaries in
# .device/bin (built on the development machine, README.md): decode_bench with today's grid (-),
# the heads' CTAs of a split side by side (hf), a block's heads one after the other in the cache
# (hm) and both (hm-hf), blocks scattered and in order; then gemm_rows_bench (1–4 column groups).
#   bash bench/results/2026-12-07-s32/benches.sh
T0=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
for ord in "" 1; do for b in decode-bench decode-bench-hf decode-bench-hm decode-bench-hm-hf; do
    echo "=== $b ordered=${ord:-0}"
    HK_BENCH_ORDERED=$ord HK_BENCH_ROWS=${HK_BENCH_ROWS:-1,16} HK_BENCH_CTX=${HK_BENCH_CTX:-1215,4191} \
        HK_BENCH_SPLITS=0,448 HK_BENCH_STAGES=0,2 timeout 120 .device/bin/$b 2>&1 | head -40
done; done
echo "[$(( $(date +%s) - T0 )) s] === gemm_rows_bench"
timeout 120 .device/bin/gemm-rows-bench 2>&1
echo "[$(( $(date +%s) - T0 )) s] benches done"
