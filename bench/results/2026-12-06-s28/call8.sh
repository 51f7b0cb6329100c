# Session 28, call 8 (for the next session, after call7.sh): k_prefill_tma with FlashAttention-3's
# intra-warpgroup overlap (pt_loop_ovl, prefill_bench's "TMA o" rows) against the launched schedule.
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-06-s28/call8.sh
export PATH=/usr/local/cuda/bin:$PATH
W=${OUT:-/tmp/s28}/call8; mkdir -p $W
nvidia-smi --query-gpu=name --format=csv,noheader | tee $W/gpu.txt
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Ikernels bench/prefill_bench.cu -o /tmp/pb \
    -Xptxas -v > $W/pb-build.log 2>&1 || tail -5 $W/pb-build.log
grep -c C7520 $W/pb-build.log
for t in f16 bf16; do timeout 120 /tmp/pb $t > $W/prefill-bench-$t.txt 2>&1; echo "prefill_bench $t exit $?"; done
grep -E "^total (TMA|MW1 s4 )|^PASS|^FAIL|^CHOICE" $W/prefill-bench-f16.txt
grep -E "^PASS|^FAIL|^CHOICE|^total TMA( o)? " $W/prefill-bench-bf16.txt
