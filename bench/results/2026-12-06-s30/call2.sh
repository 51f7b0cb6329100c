# Session 30, call 2: bench/lanes_bench.cu — a 16-row decode step against two lanes of 8 rows
# (and four of 4) on streams side by side (does the step's chain of kernels leave room another
# lane fills?). On an H200 first the record and the CUDA tests (session 29's call3.sh).
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-06-s30/call2.sh
T0=$(date +%s)
export OUT=${OUT:-/tmp/s30} PATH=/usr/local/cuda/bin:$PATH
W=$OUT/call2; mkdir -p $W
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "$GPU"
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Ikernels bench/lanes_bench.cu -o /tmp/lanes \
    > $W/lanes-build.txt 2>&1 || tail -5 $W/lanes-build.txt
echo "[$(( $(date +%s) - T0 )) s] === lanes_bench"
timeout 120 /tmp/lanes > $W/lanes.txt 2>&1; echo "lanes exit $?"; cat $W/lanes.txt
case "$GPU" in *H200*) bash bench/results/2026-12-06-s29/call3.sh ;; esac
echo "[$(( $(date +%s) - T0 )) s] call2 done"
