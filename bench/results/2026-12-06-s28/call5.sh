# Session 28, call 5: the benchmark of record at this commit (k_vis_tma and k_prefill_tma launched):
# bench/gpu-bench.sh (no transformers rows) and bench/serve-bench.sh.
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-06-s28/call5.sh
source bench/results/2026-12-05-h200-s21/prep.sh
W=${OUT:-/tmp/s28}/call5; mkdir -p $W
nvidia-smi --query-gpu=name --format=csv,noheader | tee $W/gpu.txt
OUT=$W/record PART=2 HYOCR_RECORD_SECONDS=400 bash bench/record.sh
tail -40 $W/record/gpu-bench.txt; tail -25 $W/record/serve-bench.txt; cat $W/record/log.txt
