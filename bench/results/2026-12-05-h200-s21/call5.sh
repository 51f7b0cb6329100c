# Session 21, call 5 (warm, after call4): the 16-concurrent run's profile with the stream-ordered
# default, and the decode attention's keys per split and staging depth at 16 rows, alternated.
W=/tmp/s21c5; rm -rf $W; mkdir -p $W
HY=build-gpu/src/cli/hyocr
run16() { $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_1024.png --task recognize --device cuda \
  --repeat 16 --max-batch 16 --warmup --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl > /dev/null 2> $W/r.err; tail -1 $W/r.err; }
HYOCR_PROFILE=1 run16 > /dev/null; cp $W/r.err $W/prof16.txt
for rep in 1 2; do
  for s in 0 128 512; do for st in "" 3 4; do
    echo "split=$s stages=$st: $(HYOCR_DECODE_SPLIT=$s HYOCR_DECODE_STAGES=$st run16)"
  done; done
done | tee $W/sweep.txt
tar czf $OUT/call5.tgz -C $W prof16.txt sweep.txt
