# Session 27, call 4: the benchmark of record at this commit (k_vis_tma launched: four warpgroups,
# two stages; three where the waves say so).
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-06-s27/call4.sh
source bench/results/2026-12-05-h200-s21/prep.sh
W=${OUT:-/tmp/s27}; mkdir -p $W
nvidia-smi --query-gpu=name --format=csv,noheader | tee $W/gpu.txt
OUT=$W/record PART=2 HYOCR_RECORD_SECONDS=330 bash bench/record.sh
