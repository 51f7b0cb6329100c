# s18: HYOCR_ROWS_SPLIT=1 (o and down of a decode step with K split over 2 CTAs a column block)
# beside s17's HYOCR_DECODE_BALANCE=1, both built and tested on the CPU only so far. Their GPU
# tests; hk_gemm_rows at 1–4 splits on every product of the step (gemm_rows_bench); 16 concurrent
# 1024² pages (256 tokens) with each pair of the two switches, two rounds in opposite orders, and
# one page at a time once (the 6× row's denominator); the decode and batch suites with both on.
# From the repository root on the GPU machine:
#   source .device/setup.sh >/dev/null && OUT=... bash bench/results/2026-12-05-h200-s18/rowsplit.sh
source bench/results/2026-12-04-h200-s14/pre.sh
T=build-gpu/tests/test-backend-cuda
$T -p /backend-cuda/gemm_rows_split_rule -p /backend-cuda/f16/gemm_rows_split -p /backend-cuda/bf16/gemm_rows_split \
  -p /backend-cuda/f16/paged_decode_staged -p /backend-cuda/bf16/paged_decode_staged > $OUT/tests.txt 2>&1
echo "split + balance GPU tests rc=$? ($(grep -c '^ok' $OUT/tests.txt) ok, $(grep -c SKIP $OUT/tests.txt) skipped)" >> $L
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Ikernels -Ibuild-gpu bench/gemm_rows_bench.cu \
  -o /tmp/gemm-rows-bench > $OUT/gemm-rows-build.txt 2>&1 && /tmp/gemm-rows-bench > $OUT/gemm-rows-bench.txt 2>&1
echo "gemm_rows_bench rc=$? at $(( $(date +%s) - T0 )) s; 16 rows:" >> $L
grep -E "^\S.* 16 " $OUT/gemm-rows-bench.txt >> $L
run16() {   # BALANCE SPLIT REPEAT BATCH
  HYOCR_DECODE_BALANCE=$1 HYOCR_ROWS_SPLIT=$2 $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_1024.png \
    --task recognize --device cuda --repeat $3 --max-batch $4 --warmup --max-new-tokens 256 --ignore-eos --no-tail-stop \
    --format jsonl > /tmp/b.jsonl 2> /tmp/b.err
  echo "balance=$1 split=$2 repeat $3 max-batch $4: $(tail -1 /tmp/b.err)" >> $L
}
run16 0 0 4 1
for order in "00 01 10 11" "11 10 01 00"; do
  for bs in $order; do run16 ${bs:0:1} ${bs:1:1} 16 16; done
done
echo "A/B at $(( $(date +%s) - T0 )) s" >> $L
HYOCR_DECODE_BALANCE=1 HYOCR_ROWS_SPLIT=1 timeout 120 meson test -C build-gpu --no-rebuild --print-errorlogs \
  --num-processes 4 decode batch > $OUT/suites-on.txt 2>&1
echo "decode + batch suites with both on rc=$? at $(( $(date +%s) - T0 )) s" >> $L
cat $L
