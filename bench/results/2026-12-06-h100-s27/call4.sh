# Session 27, call 4: the benchmark of record at this commit (k_vis_tma launched: four warpgroups,
# two stages; three where the waves say so), then flash_bench's k_vis_tma rows.
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-06-h100-s27/call4.sh
source bench/results/2026-12-05-h200-s21/prep.sh
W=${OUT:-/tmp/s27}; mkdir -p $W
nvidia-smi --query-gpu=name --format=csv,noheader | tee $W/gpu.txt
OUT=$W/record PART=2 HYOCR_RECORD_SECONDS=330 bash bench/record.sh
# then flash_bench's rows around the launched shape (turns off; stages for four and three warpgroups)
nvcc -O3 -std=c++17 -DFB_VIS_TMA -gencode=arch=compute_90a,code=sm_90a -Ikernels bench/flash_bench.cu \
    -o /tmp/fb-tma >$W/fb-build.log 2>&1 || tail -5 $W/fb-build.log
timeout 120 stdbuf -oL /tmp/fb-tma > $W/flash-bench.txt 2>&1; echo "flash_bench exit $?"
grep -E "^(f16|bf16) n=(4096|16384)|TFLOP|FAIL|CHOICE" $W/flash-bench.txt | grep -v "^  old\|W4 MW2" | head -40
