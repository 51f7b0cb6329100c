#!/bin/bash
# s12 call2: build at HEAD; (a) per-job timings of 1024² jobs with and without --warmup (is gpu-bench's
# second job warm?); (b) the per-op profile of a warm 1024² job; (c) bench/record.sh PART=2 (the
# benchmark of record, with the one-pass merge)
set -u
export PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s)
mkdir -p $OUT/x
( [ -f /tmp/hy-full/model.safetensors ] || python3 bench/make_random_checkpoint.py /tmp/hy-full > $OUT/x/ckpt.txt 2>&1 ) &
meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled --buildtype=release > $OUT/x/setup.txt 2>&1
ninja -C build-gpu > $OUT/x/build.txt 2>&1 || { tail -30 $OUT/x/build.txt; exit 1; }
wait
python3 bench/make_images.py /tmp/hyocr-img > /dev/null
echo "built at $(( $(date +%s) - T0 )) s" > $OUT/x/log.txt
HY=build-gpu/src/cli/hyocr
for w in "" --warmup; do
  for r in 1 2; do
    $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_1024.png --task recognize --device cuda --repeat 5 --max-batch 1 $w \
      --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl > $OUT/x/warm$w-$r.jsonl 2> $OUT/x/warm$w-$r.err
    echo "== warm '$w' run $r" >> $OUT/x/log.txt
    python3 -c "
import json,sys
for l in open('$OUT/x/warm$w-$r.jsonl'):
    d=json.loads(l).get('timings',{})
    print(' '.join('%s=%s'%(k,d.get(k)) for k in ('preprocess_ms','vision_ms','prefill_ms','first_token_ms','decode_tokens_per_s')))
" >> $OUT/x/log.txt 2>&1
  done
done
for n in 2 3; do
  HYOCR_PROFILE=1 $HY run --device cuda --model /tmp/hy-full --image /tmp/hyocr-img/page_1024.png --task recognize --warmup \
     --repeat $n --max-batch 1 --max-new-tokens 8 --ignore-eos --format json > $OUT/x/prof-1024-$n.json 2> $OUT/x/prof-1024-$n.txt
done
python3 bench/profile_diff.py $OUT/x/prof-1024-2.txt $OUT/x/prof-1024-3.txt 1 > $OUT/x/prof-1024.md 2>&1
echo "profiled at $(( $(date +%s) - T0 )) s" >> $OUT/x/log.txt
(cd $OUT && tar czf x.tgz x)
OUT=$OUT/rec PART=2 HYOCR_RECORD_SECONDS=400 bash bench/record.sh > $OUT/record-log.txt 2>&1
echo "all at $(( $(date +%s) - T0 )) s" >> $OUT/x/log.txt
cp $OUT/x/log.txt $OUT/log.txt; rm -rf $OUT/x
