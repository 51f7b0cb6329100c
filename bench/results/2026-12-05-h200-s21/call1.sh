# Session 21, call 1: session 20's next.sh with HYOCR_ORDERED_ALLOC on by default (the tree's): every
# suite of the card with the default, tests/gpu/memory.sh with it off ("0") and on (unset), and the
# 16-concurrent row against one at a time, alternated. ROWS_WIDE's single encoding rides along.
#   source .device/setup.sh >/dev/null && OUT=... bash bench/results/2026-12-05-h200-s21/call1.sh
W=/tmp/s21c1; rm -rf $W; mkdir -p $W
L=$W/log.txt
T0=$(date +%s)
source bench/results/2026-12-05-h200-s21/prep.sh   # as run: these lines inline, the same steps
echo "built at $(( $(date +%s) - T0 )) s" >> $L
meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 4 backend-cuda decode batch speculate \
  > $W/tests-on.txt 2>&1
echo "suites with the default (ordered) rc=$? at $(( $(date +%s) - T0 )) s" >> $L
grep -E '^ *[0-9]+/[0-9]+ |ERROR:' $W/tests-on.txt | head -8 >> $L
for v in 0 ""; do
  HYOCR_ORDERED_ALLOC=$v OUT=$W/mem$v timeout 150 bash tests/gpu/memory.sh > $W/memory-$v.txt 2>&1
  echo "memory.sh ORDERED_ALLOC=$v rc=$?: $(grep -c '^PASS' $W/memory-$v.txt) PASS, $(grep -c '^FAIL' $W/memory-$v.txt) FAIL" >> $L
  grep -E '^(PASS|FAIL)' $W/memory-$v.txt >> $L
done
HY=build-gpu/src/cli/hyocr
for v in 0 "" 0 ""; do
  for b in 16 1; do
    HYOCR_ORDERED_ALLOC=$v $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_1024.png --task recognize --device cuda \
      --repeat 16 --max-batch $b --warmup --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl > /dev/null 2> $W/b.err
    echo "ordered=$v max-batch $b: $(tail -1 $W/b.err)" >> $L
  done
done
echo "all at $(( $(date +%s) - T0 )) s" >> $L
tar czf $OUT/call1.tgz -C $W --exclude='*.safetensors' .
cat $L
