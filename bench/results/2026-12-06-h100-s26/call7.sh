# Session 26, call 7: the benchmark of record at the session's last engine change (pinned pixels on).
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-06-h100-s26/call7.sh
source bench/results/2026-12-05-h200-s21/prep.sh
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
OUT=$OUT/record PART=2 HYOCR_RECORD_SECONDS=110 bash bench/record.sh
