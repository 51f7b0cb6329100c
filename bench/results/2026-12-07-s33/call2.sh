# Session 33, call 2: where k_decode_staged's warps wait (call1: 0.48 instructions an issue slot,
# 0.77 eligible warps of 2.71; the 8-lane kernel issued 28 % fewer instructions and ran 47 % longer).
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-07-s33/call2.sh
# Nsight Compute on decode_bench's 16-row × 1215-key staged kernel (HK_BENCH_SPLITS=0: the engine's pick, 256 keys):
# the stall reasons per issued instruction, occupancy and its limits, and the SASS with its
# sampled stalls (csv).
export OUT=${OUT:-/tmp/s33} PATH=/usr/local/cuda/bin:$PATH
W=$OUT/call2; mkdir -p $W
B=.device/bin/decode-bench-old
run_ncu() { HK_BENCH_ROWS=16 HK_BENCH_CTX=1215 HK_BENCH_SPLITS=0 HK_BENCH_STAGES=2 timeout 150 ncu --kernel-name regex:k_decode_staged \
    --launch-count 1 "$@" $B; }
run_ncu --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis_Tables \
    --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" --print-details all > $W/stalls.txt 2>&1
echo "stalls exit $?"
grep -E "stalled_.*ratio" $W/stalls.txt | sort -k3 -n -r | head -14
grep -E "Block Limit|Achieved Occupancy|Theoretical Occupancy|Registers Per|Shared Memory Config|Dynamic Shared|Waves Per SM" $W/stalls.txt
run_ncu --section SourceCounters --section WarpStateStats --page source --print-source sass --csv > $W/sass.csv 2>&1
echo "sass exit $? $(wc -l < $W/sass.csv) lines"; gzip -f $W/sass.csv
