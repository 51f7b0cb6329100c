# Session 29, call 3 (asked of an H200: the targets' card): the benchmark of record at this commit
# (bench/record.sh PART=2), then the CUDA tests; the tables printed, as few files come back.
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-06-s29/call3.sh
T0=$(date +%s)
source bench/results/2026-12-05-h200-s21/prep.sh
W=${OUT:-/tmp/s29}/call3; mkdir -p $W
nvidia-smi --query-gpu=name --format=csv,noheader | tee $W/gpu.txt
echo "[$(( $(date +%s) - T0 )) s] === record"
OUT=$W/record PART=2 HYOCR_RECORD_SECONDS=300 bash bench/record.sh
mkdir -p /tmp/rec && tar xzf $W/record/gpu-bench.tgz -C /tmp/rec
grep -h -A12 "^| image | engine" /tmp/rec/gpu-bench/*.md | head -14; grep -h -A4 "^| 1024² jobs" /tmp/rec/gpu-bench/*.md | head -5
grep -h "peak\|bytes" /tmp/rec/gpu-bench/*.md | head -5
tail -25 $W/record/serve-bench.txt; cat $W/record/log.txt
echo "[$(( $(date +%s) - T0 )) s] === tests"
timeout 150 meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 4 backend-cuda decode batch tuning \
    > $W/tests.txt 2>&1; echo "tests exit $?"; grep -E "^ *[0-9]+/[0-9]+ |Ok:|Fail:" $W/tests.txt | tail -6
echo "[$(( $(date +%s) - T0 )) s] done"
