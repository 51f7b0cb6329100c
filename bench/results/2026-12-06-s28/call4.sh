# Session 28, call 4: at k_prefill_tma launched — the CUDA tests (record.sh PART=1's set), full-size
# parity at three sizes and the tiny fixtures (tests/gpu/vision.sh's parity step), warm pages.
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-06-s28/call4.sh
source bench/results/2026-12-05-h200-s21/prep.sh
W=${OUT:-/tmp/s28}/call4; mkdir -p $W; HY=build-gpu/src/cli/hyocr
nvidia-smi --query-gpu=name --format=csv,noheader | tee $W/gpu.txt
echo "=== tests"
timeout 200 meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 4 backend-cuda decode batch tuning \
    > $W/tests.txt 2>&1; echo "tests exit $?"; grep -E "^ *[0-9]+/[0-9]+ |Ok:|Fail:|Skipped:" $W/tests.txt | tail -8
cp build-gpu/meson-logs/testlog.txt $W/testlog.txt 2>/dev/null; gzip -f $W/testlog.txt
echo "=== parity"
HYOCR_VISION_STEPS=parity HYOCR_PARITY_SIZES="1024 2048 4096" OUT=$W/parity timeout 300 bash tests/gpu/vision.sh 2>&1 | tail -14
exit 0  # the warm pages: the record (call5) has them
echo "=== warm pages (first token/vision/prefill ms)"
for size in 1024 2048 4096; do
  n=$([ $size = 4096 ] && echo 3 || echo 4)
  timeout 120 $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_$size.png --task recognize \
    --device cuda --repeat $n --max-batch 1 --max-new-tokens 1 --ignore-eos --no-tail-stop --format json 2>/dev/null |
  python3 -c "import json,sys; r=json.load(sys.stdin)[1:]; print('$size:', ' '.join('%.2f/%.2f/%.2f' % (j['timings']['first_token_ms'], j['timings']['vision_ms'], j['timings']['prefill_ms']) for j in r))"
done | tee $W/warm.txt
