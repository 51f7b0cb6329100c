source .device/pre.sh
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
mkdir -p $OUT/p
HY=build-gpu/src/cli/hyocr
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
$NCU --version > $OUT/p/ver.txt 2>&1
timeout 200 $NCU --clock-control none --kernel-name regex:k_vis_wg --launch-skip 5 --launch-count 1 \
  --section SourceCounters --section InstructionStats --page source --print-source sass --csv \
  $HY run --device cuda --model /tmp/hy-full --image /tmp/hyocr-img/page_2048.png --task recognize \
  --max-new-tokens 2 --ignore-eos --format json > $OUT/p/ncu-src.csv 2>$OUT/p/ncu-src.err
echo "rc=$?" >> $OUT/p/ncu-src.err
timeout 100 $NCU --clock-control none --kernel-name regex:k_vis_wg --launch-skip 5 --launch-count 1 \
  --metrics sass__inst_executed_per_opcode --print-metric-instances details \
  $HY run --device cuda --model /tmp/hy-full --image /tmp/hyocr-img/page_2048.png --task recognize \
  --max-new-tokens 2 --ignore-eos --format json > $OUT/p/ncu-op.txt 2>&1
ls build-gpu/kernels/ > $OUT/p/ls.txt
cd $OUT && tar czf p.tgz p && rm -rf p
