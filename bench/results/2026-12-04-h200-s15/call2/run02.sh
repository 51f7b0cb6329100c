# s15 call2 (planned): HYOCR_VIS_WG2=1 — the vision attention by k_vis_wg2 (two 64-row blocks a
# warpgroup) in the engine. Worth its device time only where s14's call9 (flash_bench) had it
# faster than k_vis_wg with the same bits. Its GPU test (k_vis_wg's bits, both softmax schedules,
# ragged sizes), the CUDA suites with it on, then the stages against the default, alternated.
# From the repository root on the GPU machine:
#   source .device/setup.sh >/dev/null && OUT=... bash bench/results/2026-12-04-h200-s15/call2/run02.sh
source bench/results/2026-12-04-h200-s14/pre.sh
build-gpu/tests/test-backend-cuda -p /backend-cuda/f16/attention_full_wg2 -p /backend-cuda/bf16/attention_full_wg2 \
  > $OUT/wg2-test.txt 2>&1
echo "attention_full_wg2 rc=$? ($(grep -c '^ok' $OUT/wg2-test.txt) ok, $(grep -c SKIP $OUT/wg2-test.txt) skipped)" >> $L
HYOCR_VIS_WG2=1 meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 4 backend-cuda batch > $OUT/tests-on.txt 2>&1
echo "GPU suites with the switch on rc=$? at $(( $(date +%s) - T0 )) s" >> $L
HYOCR_BENCH=1 build-gpu/tests/test-backend-cuda -p /backend-cuda/f16/bench 2>&1 | grep "attention_full" >> $L
ab HYOCR_VIS_WG2 "1024 5" "2048 3" "4096 2"
echo "all at $(( $(date +%s) - T0 )) s" >> $L
cat $L
