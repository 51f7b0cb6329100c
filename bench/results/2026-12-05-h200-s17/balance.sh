# s17: HYOCR_DECODE_BALANCE=1 — graph decode steps whose attention splits (sized for the context
# bound: 256 keys at 16 rows) would take more than one wave of the card take longer splits chosen
# on the device, so 16 rows × ~1100 keys run as one wave of ~384 CTAs instead of two of 640.
# Its GPU test (paged_decode_staged: the chosen length seen as the bits of listed splits of it),
# the suites with it on, and 16 / 8 concurrent 1024² pages alternated (three rounds each way).
# From the repository root on the GPU machine:
#   source .device/setup.sh >/dev/null && OUT=... bash bench/results/2026-12-05-h200-s17/balance.sh
source bench/results/2026-12-04-h200-s14/pre.sh
build-gpu/tests/test-backend-cuda -p /backend-cuda/f16/paged_decode_staged -p /backend-cuda/bf16/paged_decode_staged > $OUT/balance-test.txt 2>&1
echo "paged_decode_staged rc=$? ($(grep -c '^ok' $OUT/balance-test.txt) ok, $(grep -c SKIP $OUT/balance-test.txt) skipped)" >> $L
HYOCR_DECODE_BALANCE=1 timeout 150 meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 4 decode batch > $OUT/tests-on.txt 2>&1
echo "GPU suites (decode batch) with the switch on rc=$? at $(( $(date +%s) - T0 )) s" >> $L
for order in "0 1" "1 0" "0 1"; do
  for v in $order; do
    for n in 16 8; do
      HYOCR_DECODE_BALANCE=$v $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_1024.png --task recognize --device cuda --repeat $n --max-batch $n --warmup \
        --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl > /tmp/b.jsonl 2> /tmp/b.err
      echo "balance=$v $n concurrent: $(tail -1 /tmp/b.err)" >> $L
    done
  done
done
echo "all at $(( $(date +%s) - T0 )) s" >> $L
cat $L
