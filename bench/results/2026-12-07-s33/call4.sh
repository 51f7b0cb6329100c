# Session 33, call 4: k_decode_mma's depth and split (call3: 2 stages, the engine's split, 6–7 % under
# k_decode_staged at 8 and 16 rows, +2–3 % for 16 concurrent pages). decode_bench with
# -DHK_DECODE_MMA (stages 2–4 are the mma kernel) at 8 and 16 rows, 1215 and 4191 keys, splits
# 0 (the engine's pick), 128, 256, 512, stages 2–4; the tree's kernel at stages 2 beside it, twice.
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-07-s33/call4.sh
export OUT=${OUT:-/tmp/s33} PATH=/usr/local/cuda/bin:$PATH
W=$OUT/call4; mkdir -p $W
for rep in 1 2; do
    echo "=== decode-bench"; HK_BENCH_ROWS=8,16 HK_BENCH_CTX=1215,4191 HK_BENCH_SPLITS=0 HK_BENCH_STAGES=2 timeout 60 .device/bin/decode-bench 2>&1 | grep rows
    echo "=== decode-bench-mma"; HK_BENCH_ROWS=8,16 HK_BENCH_CTX=1215,4191 HK_BENCH_SPLITS=0,128,256,512 HK_BENCH_STAGES=2,3,4 timeout 100 .device/bin/decode-bench-mma 2>&1 | grep rows
done > $W/bench.txt 2>&1; cat $W/bench.txt | grep staged
