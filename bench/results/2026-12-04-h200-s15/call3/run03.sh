# s15 call3 (planned): HYOCR_PREFILL_SPARE=1 — the split prefill's partials in the text layer's MLP
# buffers (22 MB for a 1024-row chunk, free while the attention runs) instead of the backend's
# 6 MiB, so a 2048² page's full chunks split too. Its GPU test, the suites with it on, the stages
# alternated at 1024², 2048², 4096², and the peak of record's job (2048² + 256 tokens) with it on:
# the engine's count must stay 2572377532 bytes (no memory added).
# From the repository root on the GPU machine:
#   source .device/setup.sh >/dev/null && OUT=... bash bench/results/2026-12-04-h200-s15/call3/run03.sh
source bench/results/2026-12-04-h200-s14/pre.sh
build-gpu/tests/test-backend-cuda -p /backend-cuda/f16/paged_spare -p /backend-cuda/bf16/paged_spare > $OUT/spare-test.txt 2>&1
echo "paged_spare rc=$? ($(grep -c '^ok' $OUT/spare-test.txt) ok, $(grep -c SKIP $OUT/spare-test.txt) skipped)" >> $L
HYOCR_PREFILL_SPARE=1 meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 4 backend-cuda decode batch > $OUT/tests-on.txt 2>&1
echo "GPU suites with the switch on rc=$? at $(( $(date +%s) - T0 )) s" >> $L
ab HYOCR_PREFILL_SPARE "1024 5" "2048 3" "4096 2"
HYOCR_PREFILL_SPARE=1 $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_2048.png --task recognize --device cuda --max-batch 1 \
  --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl > /tmp/o.jsonl 2>/dev/null
show /tmp/o.jsonl 1 2048-256 >> $L
echo "all at $(( $(date +%s) - T0 )) s" >> $L
cat $L
