#!/bin/bash
# s12 call1: the L2 prefetch bench (first run) and decode_trace.cu in its committed form (first run)
set -u
export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/gpu.txt 2>&1
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Ikernels bench/l2_prefetch_bench.cu -o /tmp/l2pf > $OUT/build-l2pf.txt 2>&1 &
nvcc -O3 -std=c++17 -DHK_DECODE_TRACE -gencode=arch=compute_90a,code=sm_90a -Ikernels bench/decode_trace.cu -o /tmp/decode-trace > $OUT/build-trace.txt 2>&1 &
wait
/tmp/l2pf > $OUT/l2pf.txt 2>&1; echo "rc=$?" >> $OUT/l2pf.txt
/tmp/l2pf > $OUT/l2pf-2.txt 2>&1; echo "rc=$?" >> $OUT/l2pf-2.txt
timeout 120 /tmp/decode-trace > $OUT/decode-trace.txt 2>&1; echo "rc=$?" >> $OUT/decode-trace.txt
