# Session 23, call 1: bench/results/2026-12-05-cpu-s22/next.sh without its record step (that is call 2,
# its own 600 s): the idle-before-op profile at 16 concurrent pages, and the k_decode split A/B.
source bench/results/2026-12-05-h200-s21/prep.sh
nvidia-smi --query-gpu=name --format=csv,noheader
W=/tmp/s23c1; rm -rf $W; mkdir -p $W
HY=build-gpu/src/cli/hyocr
runN() { $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_1024.png --task recognize --device cuda \
  --repeat 16 --max-batch $1 --warmup --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl > $W/r.jsonl 2> $W/r.err; \
  echo "$(tail -1 $W/r.err) ids $(python3 -c "import json,hashlib;print(hashlib.md5(str([json.loads(l)['token_ids'] for l in open('$W/r.jsonl')]).encode()).hexdigest()[:8])")"; }
HYOCR_PROFILE=1 $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_1024.png --task recognize --device cuda \
  --repeat 16 --max-batch 16 --warmup --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl \
  > /dev/null 2> $W/prof16.txt; grep -A12 "idle before each op" $W/prof16.txt
for rep in 1 2 3; do
  for b in 2 4 6; do
    echo "max-batch $b rule: $(runN $b)"
    echo "max-batch $b split 192: $(HYOCR_DECODE_SPLIT=192 runN $b)"
  done
done | tee $W/split.txt
# what a job asking for logprobs costs a full batch (every row's scores to the host), alternated
for rep in 1 2; do
  for lp in "" "--logprobs 5"; do
    $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_1024.png --task recognize --device cuda \
      --repeat 16 --max-batch 16 --warmup --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl $lp \
      > /dev/null 2> $W/lp.err; echo "16 concurrent ${lp:-no logprobs}: $(tail -1 $W/lp.err)"
  done
done | tee $W/logprobs.txt
tar czf $OUT/split.tgz -C $W split.txt prof16.txt logprobs.txt
