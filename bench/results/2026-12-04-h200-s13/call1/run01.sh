# s13 call 1: fresh per-op profile of a warm 1024² and 2048² job at HEAD; Nsight Compute on k_vis_wg
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
T0=$(date +%s)
( [ -f /tmp/hy-full/model.safetensors ] || python3 bench/make_random_checkpoint.py /tmp/hy-full >/dev/null 2>&1 ) &
( python3 bench/make_images.py /tmp/hyocr-img >/dev/null 2>&1 ) &
[ -f build-gpu/build.ninja ] || { rm -rf build-gpu; meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled --buildtype=release > /tmp/setup.log 2>&1 || tail -20 /tmp/setup.log; }
ninja -C build-gpu >/tmp/build.log 2>&1 || grep -E "error|FAILED" /tmp/build.log | head
wait
echo "built $(( $(date +%s) - T0 )) s"
mkdir -p $OUT/p
HY=build-gpu/src/cli/hyocr
for size in 1024 2048; do
  for n in 2 3; do
    HYOCR_PROFILE=1 $HY run --device cuda --model /tmp/hy-full --image /tmp/hyocr-img/page_$size.png \
      --task recognize --repeat $n --max-batch 1 --max-new-tokens 8 --ignore-eos --format json \
      >/dev/null 2>$OUT/p/prof-$size-$n.txt || echo "prof $size $n failed"
  done
  python3 bench/profile_diff.py $OUT/p/prof-$size-2.txt $OUT/p/prof-$size-3.txt 1 > $OUT/p/prof-$size.md
done
echo "profiled $(( $(date +%s) - T0 )) s"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
timeout 150 $NCU --clock-control none --kernel-name regex:k_vis_wg --launch-skip 40 --launch-count 1 \
  --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats \
  --section ComputeWorkloadAnalysis --section InstructionStats --section MemoryWorkloadAnalysis --print-details all \
  $HY run --device cuda --model /tmp/hy-full --image /tmp/hyocr-img/page_2048.png --task recognize \
  --max-new-tokens 2 --ignore-eos --format json > $OUT/p/ncu-vis.txt 2>&1
echo "rc=$?" >> $OUT/p/ncu-vis.txt
echo "ncu $(( $(date +%s) - T0 )) s"
timeout 120 $NCU --clock-control none --kernel-name regex:prefill --launch-skip 20 --launch-count 1 \
  --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats \
  $HY run --device cuda --model /tmp/hy-full --image /tmp/hyocr-img/page_2048.png --task recognize \
  --max-new-tokens 2 --ignore-eos --format json > $OUT/p/ncu-prefill.txt 2>&1
echo "rc=$?" >> $OUT/p/ncu-prefill.txt
echo "done $(( $(date +%s) - T0 )) s"
cd $OUT && tar czf p.tgz p && rm -rf p
