# Session 35, call 3: the one-CTA-a-row decode attention deeper still (decode_bench built with
# -DHK_DECODE_BENCH_DEEP: mma5, mma6 — 160 and 192 KB of stages) at 16 rows, and 14 / 15 rows
# (where the engine's rule takes a row in one CTA from 15 rows on) against the two-round splits.
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-07-s35/call3.sh
export OUT=${OUT:-/tmp/s35}; W=$OUT/call3; mkdir -p $W
nvidia-smi --query-gpu=name --format=csv,noheader | tee $W/gpu.txt
for r in 1 2; do
    HK_BENCH_PDL=1 HK_BENCH_ROWS=16 HK_BENCH_CTX=1215,1343 HK_BENCH_SPLITS=1344 HK_BENCH_STAGES=2,4,5,6 \
        timeout 60 .device/bin/decode-bench-deep 2>&1 | grep mma
done | tee $W/deep.txt
HK_BENCH_PDL=1 HK_BENCH_ROWS=14,15 HK_BENCH_CTX=1215 HK_BENCH_SPLITS=448,512,1344 HK_BENCH_STAGES=2,4 \
    timeout 60 .device/bin/decode-bench-deep 2>&1 | grep mma | tee $W/rows.txt
