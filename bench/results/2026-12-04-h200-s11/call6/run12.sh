# s11 call 6: why the 16-row step's attention and products run at 1-2 TB/s: Nsight Compute's
# sections (speed of light, occupancy, warp stalls, memory) on k_decode_staged and k_gemm_rows
# (q|k|v mode) inside replayed graph steps of 16 rows at 1087-token contexts
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
( [ -f /tmp/hy-full/model.safetensors ] || python3 bench/make_random_checkpoint.py /tmp/hy-full >/dev/null 2>&1 ) &
[ -f build-gpu/build.ninja ] || meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled --buildtype=release >/dev/null 2>&1
ninja -C build-gpu >/tmp/build.log 2>&1 || grep -E "error|FAILED" /tmp/build.log | head
wait
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for k in k_decode_staged "k_gemm_rows"; do
  HYOCR_DECODE_BENCH_BATCHES=16 HYOCR_DECODE_BENCH_MODES=2 HYOCR_DECODE_BENCH=/tmp/hy-full \
  timeout 200 "$NCU" --graph-profiling node --clock-control none --kernel-name "regex:^$k" \
    --launch-skip 600 --launch-count 4 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section MemoryWorkloadAnalysis --section SchedulerStats \
    build-gpu/tests/test-decode -p /decode/cuda/bench > $OUT/ncu-$k.txt 2>&1
  echo "rc=$?" >> $OUT/ncu-$k.txt
done
