# Session 21, call 2: why memory.sh's "four 2048² pages under 3G" no longer preempts (it last ran in
# session 3): the CUDA plan (hyocr inspect) and the four pages under 3G, 3.2G and 3.4G with swap.
export PATH=/usr/local/cuda/bin:$PATH
W=/tmp/s21c2; rm -rf $W; mkdir -p $W
HY=build-gpu/src/cli/hyocr
source bench/results/2026-12-05-h200-s21/prep.sh
$HY inspect --device cuda --model /tmp/hy-full > $W/inspect.txt 2>&1; cat $W/inspect.txt
for b in 3G 3.2G 3.4G; do
  $HY run --device cuda --gpu-memory-limit $b --swap-space 4 --model /tmp/hy-full --image /tmp/hyocr-img/page_2048.png \
    --repeat 4 --task recognize --max-new-tokens 256 --ignore-eos --format jsonl > $W/four-$b.jsonl 2> $W/four-$b.err
  echo "$b rc=$?: $(tail -1 $W/four-$b.err)"
  python3 -c "
import json,sys
for l in open('$W/four-$b.jsonl'):
    j=json.loads(l); print(' job', len(j['token_ids']), 'preempted', j.get('preempted',0), 'peak %.3f' % (j['memory']['peak']/2**30), j.get('timings',{}).get('first_token_ms'))"
done
tar czf $OUT/call2.tgz -C $W .
