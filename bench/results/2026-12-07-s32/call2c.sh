# Session 32, call 2c: the benches alone, for the last minutes of device time — decode_bench before
# the block's shift, after it, and with 8 lanes a token (ROUNDS rounds, alternated), then Nsight
# Compute on the 16-row staged kernel of each of NCU_BINS (default: the kernel before). call2.sh and
# call2b.sh run it beside their builds.
#   bash bench/results/2026-12-07-s32/call2c.sh
export OUT=${OUT:-/tmp/s32} PATH=/usr/local/cuda/bin:$PATH
W=${W:-$OUT/call2}; mkdir -p $W
for rep in $(seq ${ROUNDS:-1}); do for b in decode-bench-old decode-bench decode-bench-l8; do
    echo "=== $b"; HK_BENCH_ROWS=1,16 HK_BENCH_CTX=1215,4191 HK_BENCH_SPLITS=0 HK_BENCH_STAGES=0,2 timeout 60 .device/bin/$b 2>&1 | grep -E "rows"
done; done > $W/shift.txt; grep -E "===|staged2|k_decode" $W/shift.txt | cut -c1-70 | head -60
for b in ${NCU_BINS-decode-bench-old}; do
    HK_BENCH_ROWS=16 HK_BENCH_CTX=1215 HK_BENCH_SPLITS=448 HK_BENCH_STAGES=2 timeout 100 ncu --kernel-name regex:k_decode_staged \
        --launch-count 1 --section SpeedOfLight --section SchedulerStats --section WarpStateStats --section InstructionStats \
        --section MemoryWorkloadAnalysis --section SourceCounters --metrics smsp__inst_executed.sum \
        .device/bin/$b > $W/ncu-$b.txt 2>&1; echo "ncu $b exit $?"
    grep -vE "^    -|^\s*$|^ +(OPT|WRN|INF) |^          " $W/ncu-$b.txt | grep -E "Duration|DRAM Throughput|Issued Warp|Eligible Warps|Cycles Per Issued|inst_executed|Registers" | head -12
done
