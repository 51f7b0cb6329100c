# Session 32, call 2c: the benches alone, for the last minutes of device time — decode_bench before
# the block's shift, after it, and with 8 lanes a token, then Nsight Compute on the kernel before.
#   bash bench/results/2026-12-07-s32/call2c.sh
export OUT=${OUT:-/tmp/s32} PATH=/usr/local/cuda/bin:$PATH
W=$OUT/call2; mkdir -p $W
for b in decode-bench-old decode-bench decode-bench-l8; do
    echo "=== $b"; HK_BENCH_ROWS=1,16 HK_BENCH_CTX=1215,4191 HK_BENCH_SPLITS=0 HK_BENCH_STAGES=0,2 timeout 40 .device/bin/$b 2>&1 | grep -E "rows"
done > $W/shift.txt; grep -E "===|staged2|k_decode" $W/shift.txt | cut -c1-70
HK_BENCH_ROWS=16 HK_BENCH_CTX=1215 HK_BENCH_SPLITS=448 HK_BENCH_STAGES=2 timeout 60 ncu --kernel-name regex:k_decode_staged \
    --launch-count 1 --section SpeedOfLight --section SchedulerStats --section WarpStateStats --section InstructionStats \
    --metrics smsp__inst_executed.sum .device/bin/decode-bench-old > $W/ncu-decode-bench-old.txt 2>&1; echo "ncu exit $?"
grep -vE "^    -|^\s*$|^ +(OPT|WRN|INF) |^          " $W/ncu-decode-bench-old.txt | grep -E "Duration|DRAM Throughput|Issued Warp|Eligible Warps|Cycles Per Issued|inst_executed|Registers" | head -12
