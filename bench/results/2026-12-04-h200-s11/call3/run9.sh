# s11 call 3: the 16-row decode step kernel by kernel (graph), and the .cu micro-benchmarks (10b63da, never run)
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
T0=$(date +%s); step() { echo "=== [$(( $(date +%s) - T0 )) s] $*" | tee -a $OUT/log.txt; }
( [ -f /tmp/hy-full/model.safetensors ] || python3 bench/make_random_checkpoint.py /tmp/hy-full >/dev/null 2>&1 ) &
step build
[ -f build-gpu/build.ninja ] || meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled --buildtype=release >/dev/null 2>&1
ninja -C build-gpu >/tmp/build.log 2>&1 || { grep -E "error|FAILED" /tmp/build.log | head | tee -a $OUT/log.txt; }
for b in decode gemm_rows prefill; do
  nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Ikernels bench/${b}_bench.cu -o /tmp/$b-bench > $OUT/$b-build.txt 2>&1 &
done
wait
step "split batch 16"
BATCH=16 TAG=b16- OUT=$OUT timeout 200 bash bench/kernel-split.sh graph > $OUT/split16.log 2>&1; cat $OUT/b16-split.txt | tee -a $OUT/log.txt
rm -f $OUT/b16-split-raw.csv
for b in decode gemm_rows prefill; do
  step "$b bench"
  timeout 60 /tmp/$b-bench > $OUT/$b-bench.txt 2>&1; echo "rc=$?" >> $OUT/$b-bench.txt; tail -40 $OUT/$b-bench.txt | tee -a $OUT/log.txt
done
step done
