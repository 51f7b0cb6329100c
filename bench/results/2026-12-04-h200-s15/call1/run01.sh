# s15 call1 (planned; no machine was lent in session 15): HYOCR_UPLOAD_U8=1 — a page's pixels sent
# as the resized 8-bit image and cut into patches on the card (hk_patches_u8) — its GPU tests, the
# suites with it on, then its time against the default: the upload op (HYOCR_PROFILE) and the stages.
# From the repository root on the GPU machine:
#   source .device/setup.sh >/dev/null && OUT=... bash bench/results/2026-12-04-h200-s15/call1/run01.sh
source bench/results/2026-12-04-h200-s14/pre.sh
build-gpu/tests/test-backend-cuda -p /backend-cuda/f16/upload_patches -p /backend-cuda/bf16/upload_patches \
  -p /backend-cuda/f16/upload_large > $OUT/u8-test.txt 2>&1
echo "upload_patches tests rc=$? ($(grep -c '^ok' $OUT/u8-test.txt) ok, $(grep -c SKIP $OUT/u8-test.txt) skipped)" >> $L
build-gpu/tests/test-batch -p /batch/cuda/upload-u8 > $OUT/u8-batch.txt 2>&1
echo "batch upload-u8 rc=$? ($(grep -c '^ok' $OUT/u8-batch.txt) ok, $(grep -c SKIP $OUT/u8-batch.txt) skipped)" >> $L
HYOCR_UPLOAD_U8=1 meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 4 backend-cuda decode batch > $OUT/tests-on.txt 2>&1
echo "GPU suites with the switch on rc=$? at $(( $(date +%s) - T0 )) s" >> $L
ab HYOCR_UPLOAD_U8 "1024 5" "2048 3"
# the upload op itself: per-op table of 4 warm jobs a size, both ways
for v in 0 1; do
  for size in 1024 2048 4096; do
    HYOCR_PROFILE=1 HYOCR_UPLOAD_U8=$v $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_$size.png --task recognize --device cuda --repeat 4 \
      --max-batch 1 --warmup --max-new-tokens 8 --ignore-eos --no-tail-stop --format jsonl > /dev/null 2> $OUT/prof-$v-$size.txt
    echo "u8=$v $size: $(grep -E '^ *upload_(f32|patches)' $OUT/prof-$v-$size.txt | head -2 | tr -s ' ' | tr '\n' ';')" >> $L
  done
done
# 16 concurrent 1024² pages, both ways (the pixels of each page cross the bus while others decode)
for v in 0 1 0 1; do
  HYOCR_UPLOAD_U8=$v $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_1024.png --task recognize --device cuda --repeat 16 --max-batch 16 --warmup \
    --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl > /dev/null 2> /tmp/b.err
  echo "u8=$v 16 concurrent: $(tail -1 /tmp/b.err)" >> $L
done
echo "all at $(( $(date +%s) - T0 )) s" >> $L
cat $L
