# s11 call 8 (experiment, not committed): k_decode_staged's CTAs on a time line (trace.patch, trace_decode.cu)
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
patch -p1 < .device/trace.patch > $OUT/patch.txt 2>&1 || { cat $OUT/patch.txt; exit 1; }
nvcc -O3 -std=c++17 -DHK_DECODE_TRACE -gencode=arch=compute_90a,code=sm_90a -Ikernels .device/trace_decode.cu -o /tmp/trace-decode > $OUT/nvcc.txt 2>&1 || { tail -20 $OUT/nvcc.txt; patch -R -p1 < .device/trace.patch; exit 1; }
timeout 120 /tmp/trace-decode > $OUT/trace.txt 2>&1; echo "rc=$?" >> $OUT/trace.txt
patch -R -p1 < .device/trace.patch >/dev/null
cat $OUT/trace.txt
