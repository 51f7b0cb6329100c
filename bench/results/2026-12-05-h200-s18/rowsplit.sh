# s18: HYOCR_ROWS_SPLIT=1 (o and down of a decode step with K split over 2 CTAs a column block)
# and HYOCR_ROWS_WIDE=1 (q|k|v and gate|up with 16 columns a CTA) beside s17's
# HYOCR_DECODE_BALANCE=1, all built and tested on the CPU only so far. Their GPU tests;
# hk_gemm_rows_ex in every layout on every product of the step (gemm_rows_bench); 16 concurrent
# 1024² pages (256 tokens) with none, each alone and all three, two rounds in opposite orders,
# and one page at a time once (the 6× row's denominator); the decode and batch suites, all on.
# From the repository root on the GPU machine:
#   source .device/setup.sh >/dev/null && OUT=... bash bench/results/2026-12-05-h200-s18/rowsplit.sh
source bench/results/2026-12-04-h200-s14/pre.sh
T=build-gpu/tests/test-backend-cuda
$T -p /backend-cuda/gemm_rows_layout_rule -p /backend-cuda/f16/gemm_rows_layout -p /backend-cuda/bf16/gemm_rows_layout \
  -p /backend-cuda/f16/paged_decode_staged -p /backend-cuda/bf16/paged_decode_staged > $OUT/tests.txt 2>&1
echo "layout + balance GPU tests rc=$? ($(grep -c '^ok' $OUT/tests.txt) ok, $(grep -c SKIP $OUT/tests.txt) skipped)" >> $L
if [ -z "${SKIP_BENCH:-}" ]; then   # SKIP_BENCH=1: a short call (the A/B and the suites first)
  nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Ikernels -Ibuild-gpu bench/gemm_rows_bench.cu \
    -o /tmp/gemm-rows-bench > $OUT/gemm-rows-build.txt 2>&1 && /tmp/gemm-rows-bench > $OUT/gemm-rows-bench.txt 2>&1
  echo "gemm_rows_bench rc=$? at $(( $(date +%s) - T0 )) s; 16 rows:" >> $L
  grep -E "^\S.* 16 " $OUT/gemm-rows-bench.txt >> $L
fi
run16() {   # BALANCE SPLIT WIDE REPEAT BATCH
  HYOCR_DECODE_BALANCE=$1 HYOCR_ROWS_SPLIT=$2 HYOCR_ROWS_WIDE=$3 $HY run --model /tmp/hy-full \
    --image /tmp/hyocr-img/page_1024.png --task recognize --device cuda --repeat $4 --max-batch $5 --warmup \
    --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl > /tmp/b.jsonl 2> /tmp/b.err
  echo "balance=$1 split=$2 wide=$3 repeat $4 max-batch $5: $(tail -1 /tmp/b.err)" >> $L
}
run16 0 0 0 4 1
# ORDERS: rounds of (balance, split, wide) settings, ';' between rounds
IFS=';' read -ra orders <<< "${ORDERS:-000 100 010 001 111;111 001 010 100 000}"
for order in "${orders[@]}"; do
  for c in $order; do run16 ${c:0:1} ${c:1:1} ${c:2:1} 16 16; done
done
echo "A/B at $(( $(date +%s) - T0 )) s" >> $L
HYOCR_DECODE_BALANCE=1 HYOCR_ROWS_SPLIT=1 HYOCR_ROWS_WIDE=1 timeout 110 meson test -C build-gpu --no-rebuild --print-errorlogs \
  --num-processes 4 decode batch > $OUT/suites-on.txt 2>&1
echo "decode + batch suites with all three on rc=$? at $(( $(date +%s) - T0 )) s" >> $L
cat $L
