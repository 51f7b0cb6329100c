# Session 28, call 1: the benchmark of record at k_vis_tma (what session 27's call4 was to run),
# flash_bench's k_vis_tma rows (the turns off at the launched two stages: tm4x64s2f6), and the
# per-op profile of a warm 2048² job (the roofline's data at this kernel).
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-06-s28/call1.sh
source bench/results/2026-12-05-h200-s21/prep.sh
W=${OUT:-/tmp/s28}/call1; mkdir -p $W; HY=build-gpu/src/cli/hyocr
nvidia-smi --query-gpu=name --format=csv,noheader | tee $W/gpu.txt
OUT=$W/record PART=2 HYOCR_RECORD_SECONDS=300 bash bench/record.sh
nvcc -O3 -std=c++17 -DFB_VIS_TMA -gencode=arch=compute_90a,code=sm_90a -Ikernels bench/flash_bench.cu \
    -o /tmp/fb-tma >$W/fb-build.log 2>&1 || tail -5 $W/fb-build.log
timeout 110 stdbuf -oL /tmp/fb-tma > $W/flash-bench.txt 2>&1; echo "flash_bench exit $?"
grep -E "^(f16|bf16) n=(4096|16384)|TFLOP|FAIL|CHOICE" $W/flash-bench.txt | grep -v "^  old\|W4 MW2" | head -40
for n in 2 3; do
  HYOCR_PROFILE=1 timeout 60 $HY run --device cuda --model /tmp/hy-full --image /tmp/hyocr-img/page_2048.png \
    --task recognize --repeat $n --max-batch 1 --max-new-tokens 8 --ignore-eos --format json \
    > $W/prof-2048-$n.json 2> $W/prof-2048-$n.txt || echo "profile $n failed"
done
python3 bench/profile_diff.py $W/prof-2048-2.txt $W/prof-2048-3.txt 1 > $W/prof-2048.md; head -24 $W/prof-2048.md
