# s20 call4: the final commit on the card — build (with the server), the CUDA suites (the split
# and the three removed switches gone, HYOCR_PREFILL_SPARE on by default), the benchmark of
# record (bench/record.sh PART=2), then where the 16-concurrent row's time goes: HYOCR_PROFILE's
# per-op table of 16 concurrent 1024² pages (a decode step is one "graph launch" line) and
# gemm_rows_bench (the 16-row step's products, 1 and 2 column groups a CTA).
# From the repository root on the GPU machine:
#   source .device/setup.sh >/dev/null && OUT=... bash bench/results/2026-12-05-h200-s20/call4.sh
export PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s)
L=$OUT/log.txt
OUT=$OUT/record PART=2 HYOCR_RECORD_SECONDS=330 bash bench/record.sh > /dev/null 2>&1
cat $OUT/record/log.txt >> $L
meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 4 backend-cuda decode batch tuning > $OUT/tests.txt 2>&1
echo "suites rc=$? at $(( $(date +%s) - T0 )) s" >> $L
grep -E '^ *[0-9]+/[0-9]+ ' $OUT/tests.txt >> $L
grep -E '^# .*(vs|expected)|ERROR:' $OUT/tests.txt | head -10 >> $L
HY=build-gpu/src/cli/hyocr
[ -f /tmp/hyocr-img/page_1024.png ] || python3 bench/make_images.py /tmp/hyocr-img > /dev/null
for b in 1 16; do
  HYOCR_PROFILE=1 $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_1024.png --task recognize --device cuda --repeat 16 \
    --max-batch $b --warmup --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl > /dev/null 2> $OUT/prof16-mb$b.txt
  echo "profile max-batch $b: $(grep 'tokens/s' $OUT/prof16-mb$b.txt | tail -1)" >> $L
  head -14 $OUT/prof16-mb$b.txt | tail -12 >> $L
done
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Ikernels bench/gemm_rows_bench.cu -o /tmp/gemm-rows-bench \
  > $OUT/gemm-rows-build.txt 2>&1 && timeout 60 /tmp/gemm-rows-bench > $OUT/gemm-rows-bench.txt 2>&1
echo "gemm_rows_bench rc=$? at $(( $(date +%s) - T0 )) s" >> $L
cat $OUT/gemm-rows-bench.txt >> $L
cat $L
