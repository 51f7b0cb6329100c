# Session 21, call 6: the decode splits' cap for steps of several rows (HK_SPLIT_ROWS_MAX, 256 since
# session 7's k_decode), read from HK_ROWS_MAX by an uncommitted build of hk_decode_split_len (call6.patch, the
# change in outline, with #include <stdlib.h> at the top):
# N concurrent 1024² pages (256 tokens) at max batch 4, 8, 16, two alternated rounds, then
# 16 concurrent 2048² pages once per cap.
W=/tmp/s21c6; rm -rf $W; mkdir -p $W
HY=build-gpu/src/cli/hyocr
runN() { $HY run --model /tmp/hy-full --image /tmp/hyocr-img/$1 --task recognize --device cuda \
  --repeat 16 --max-batch $2 --warmup --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl > /dev/null 2> $W/r.err; tail -1 $W/r.err; }
for rep in 1 2; do
  for b in 4 8 16; do for c in 256 384 512 768 1024; do
    echo "1024² max-batch $b cap $c: $(HK_ROWS_MAX=$c runN page_1024.png $b)"
  done; done
done | tee $W/sweep.txt
for c in 256 512 768 1024; do echo "2048² max-batch 16 cap $c: $(HK_ROWS_MAX=$c runN page_2048.png 16)"; done | tee -a $W/sweep.txt
tar czf $OUT/call6.tgz -C $W sweep.txt
