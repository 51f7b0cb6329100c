#!/bin/bash
# s12 call3: the pixels' upload as fp16 made on the host (F16C) against HEAD, alternated; GPU tests of the change
set -u
export PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s)
L=$OUT/log.txt
( [ -f /tmp/hy-full/model.safetensors ] || python3 bench/make_random_checkpoint.py /tmp/hy-full > $OUT/ckpt.txt 2>&1 ) &
mkdir -p /tmp/old && tar --exclude=./build-gpu --exclude=./.git --exclude=./.device -cf - . | tar -xf - -C /tmp/old
(cd /tmp/old && patch -R -p1 < $OLDPWD/.device/up.patch > /dev/null && meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=disabled --buildtype=release > /dev/null 2>&1 && ninja -C build-gpu src/cli/hyocr > $OUT/build-old.txt 2>&1) &
[ -f build-gpu/build.ninja ] || meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled --buildtype=release > $OUT/setup.txt 2>&1
ninja -C build-gpu > $OUT/build.txt 2>&1 || { tail -30 $OUT/build.txt; exit 1; }
wait
echo "built at $(( $(date +%s) - T0 )) s" >> $L
grep -c "f16_from_f32" /tmp/old/src/engine/backend-cuda.c >> $L
python3 bench/make_images.py /tmp/hyocr-img > /dev/null
meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 4 backend-cuda decode batch tuning > $OUT/tests.txt 2>&1
echo "tests rc=$? at $(( $(date +%s) - T0 )) s" >> $L
build-gpu/tests/test-backend-cuda -p /backend-cuda/f16/upload_large -p /backend-cuda/bf16/upload_large >> $L 2>&1
med() { python3 -c "
import json,sys,statistics as st
rows=[json.loads(l).get('timings',{}) for l in open('$1')][1:]
print('%-5s %-4s vision %.2f prefill %.2f first %.2f (n=%d; vision %s)'%('$2','$3',st.median(r['vision_ms'] for r in rows),st.median(r['prefill_ms'] for r in rows),st.median(r['first_token_ms'] for r in rows),len(rows),' '.join('%.2f'%r['vision_ms'] for r in rows)))"; }
for round in 1 2 3; do
  for v in old new; do
    HY=build-gpu/src/cli/hyocr; [ $v = old ] && HY=/tmp/old/build-gpu/src/cli/hyocr
    for size in 1024 2048; do
      $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_$size.png --task recognize --device cuda --repeat 6 --max-batch 1 --warmup \
        --max-new-tokens 16 --ignore-eos --no-tail-stop --format jsonl > /tmp/ab.jsonl 2> /tmp/ab.err || tail -3 /tmp/ab.err >> $L
      med /tmp/ab.jsonl $v $size >> $L
    done
  done
done
for v in old new; do
  HY=build-gpu/src/cli/hyocr; [ $v = old ] && HY=/tmp/old/build-gpu/src/cli/hyocr
  for r in 1 4; do
    HYOCR_PROFILE=1 $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_1024.png --task recognize --device cuda --repeat $r --max-batch 1 --warmup \
        --max-new-tokens 8 --ignore-eos --format json > /dev/null 2> $OUT/prof-$v-$r.txt
  done
  echo "$v upload_f32: $(grep upload_f32 $OUT/prof-$v-1.txt) | $(grep upload_f32 $OUT/prof-$v-4.txt)" >> $L
done
echo "all at $(( $(date +%s) - T0 )) s" >> $L
cd $OUT && tar czf prof.tgz prof-*.txt && rm prof-*.txt
