set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
mkdir -p $OUT/p
HY=build-gpu/src/cli/hyocr
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
timeout 200 $NCU --clock-control none --kernel-name regex:k_vis_wg --launch-skip 5 --launch-count 1 \
  --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats \
  --section ComputeWorkloadAnalysis --section InstructionStats --section MemoryWorkloadAnalysis --section SourceCounters --print-details all \
  $HY run --device cuda --model /tmp/hy-full --image /tmp/hyocr-img/page_2048.png --task recognize \
  --max-new-tokens 2 --ignore-eos --format json > $OUT/p/ncu-vis.txt 2>&1
echo "rc=$?" >> $OUT/p/ncu-vis.txt
timeout 200 $NCU --clock-control none --kernel-name regex:k_vis_wg --launch-skip 5 --launch-count 1 \
  --metrics sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,sm__inst_executed.avg.per_cycle_active,smsp__inst_executed.avg.per_cycle_active,sm__cycles_elapsed.avg.per_second \
  $HY run --device cuda --model /tmp/hy-full --image /tmp/hyocr-img/page_2048.png --task recognize \
  --max-new-tokens 2 --ignore-eos --format json > $OUT/p/ncu-vis-m.txt 2>&1
echo "rc=$?" >> $OUT/p/ncu-vis-m.txt
cd $OUT && tar czf p.tgz p && rm -rf p
