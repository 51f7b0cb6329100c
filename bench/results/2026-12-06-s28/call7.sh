# Session 28, call 7 (before the record, call5.sh, as the device time left could not hold both): at
# k_prefill_tma launched — the CUDA tests (record.sh PART=1's set), then full-size parity at three
# sizes and the tiny fixtures.
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-06-s28/call7.sh
T0=$(date +%s)
source bench/results/2026-12-05-h200-s21/prep.sh
W=${OUT:-/tmp/s28}/call7; mkdir -p $W
nvidia-smi --query-gpu=name --format=csv,noheader | tee $W/gpu.txt
echo "[$(( $(date +%s) - T0 )) s] === tests"
timeout 120 meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 4 backend-cuda decode batch tuning \
    > $W/tests.txt 2>&1; echo "tests exit $?"; grep -E "^ *[0-9]+/[0-9]+ |Ok:|Fail:|Skipped:|Timeout:" $W/tests.txt | tail -8
gzip -c build-gpu/meson-logs/testlog.txt > $W/testlog.txt.gz 2>/dev/null
echo "[$(( $(date +%s) - T0 )) s] === parity"
HYOCR_VISION_STEPS=parity HYOCR_PARITY_SIZES="1024 2048 4096" OUT=$W/parity timeout 170 bash tests/gpu/vision.sh 2>&1 | tail -14
echo "[$(( $(date +%s) - T0 )) s] done"
