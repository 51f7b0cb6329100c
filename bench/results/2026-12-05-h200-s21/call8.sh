# Session 21, call 8: the one-wave split of bound steps of several rows (hk_decode_split_len_wave):
# the CUDA suites with it, then N concurrent 1024² pages (256 tokens) at max batch 8, 12, 16 and
# 16 concurrent 2048² pages, the rule on and off (S21_WAVE_OFF=1, an uncommitted switch of this
# call's build), alternated three times; and one at a time.
W=/tmp/s21c8; rm -rf $W; mkdir -p $W
L=$W/log.txt
HY=build-gpu/src/cli/hyocr
meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 4 backend-cuda decode batch speculate > $W/tests.txt 2>&1
echo "suites rc=$?" | tee -a $L
grep -E '^ *[0-9]+/[0-9]+ ' $W/tests.txt | tee -a $L
runN() { $HY run --model /tmp/hy-full --image /tmp/hyocr-img/$1 --task recognize --device cuda \
  --repeat $3 --max-batch $2 --warmup --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl > $W/r.jsonl 2> $W/r.err; \
  echo "$(tail -1 $W/r.err) ids $(python3 -c "import json,hashlib;print(hashlib.md5(str([json.loads(l)['token_ids'] for l in open('$W/r.jsonl')]).encode()).hexdigest()[:8])")"; }
for rep in 1 2 3; do
  for b in 8 12 16; do for off in 1 ""; do
    echo "1024² max-batch $b wave_off=$off: $(S21_WAVE_OFF=$off runN page_1024.png $b 16)"
  done; done
done | tee -a $L
for off in 1 ""; do echo "2048² max-batch 16 wave_off=$off: $(S21_WAVE_OFF=$off runN page_2048.png 16 16)"; done | tee -a $L
echo "1024² max-batch 1: $(runN page_1024.png 1 16)" | tee -a $L
tar czf $OUT/call8.tgz -C $W log.txt tests.txt
