# Session 26, call 12: the benchmark of record at c440c96 (the prompt prefetched, the pool pinned at load).
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-06-h100-s26/call12.sh
source bench/results/2026-12-05-h200-s21/prep.sh
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
OUT=$OUT/record PART=2 HYOCR_RECORD_SECONDS=110 bash bench/record.sh
