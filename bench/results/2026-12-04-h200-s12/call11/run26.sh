#!/bin/bash
# s12 call11: host buffers >= 32 MiB in transparent huge pages (95f8c23) against the commit before: a lone page's
# preprocessing (decode + pixels) at A4, 2048², 4096², 3 alternated rounds; serve-bench's quick9 once each
set -u
export PATH=/usr/local/cuda/bin:$PATH
L=$OUT/log.txt
cat /sys/kernel/mm/transparent_hugepage/enabled >> $L
( [ -f /tmp/hy-full/model.safetensors ] || python3 bench/make_random_checkpoint.py /tmp/hy-full > $OUT/ckpt.txt 2>&1 ) &
rm -rf /tmp/old; mkdir -p /tmp/old && tar --exclude=./build-gpu --exclude=./build-serve --exclude=./.git --exclude=./.device -cf - . | tar -xf - -C /tmp/old
(cd /tmp/old && patch -R -p1 < $OLDPWD/.device/thp.patch > /dev/null && meson setup build-serve -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled --buildtype=release > /dev/null 2>&1 && ninja -C build-serve src/cli/hyocr > $OUT/build-old.txt 2>&1) &
[ -f build-serve/build.ninja ] || meson setup build-serve -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled --buildtype=release > $OUT/setup.txt 2>&1
ninja -C build-serve src/cli/hyocr > $OUT/build.txt 2>&1 || { tail -30 $OUT/build.txt; exit 1; }
wait
echo "old has hostmem: $(ls /tmp/old/src/engine/hostmem.h 2>/dev/null | wc -l) $(grep -c advise /tmp/old/src/engine/resize.c)" >> $L
python3 bench/make_images.py /tmp/hyocr-img > /dev/null
for round in 1 2 3; do
  for v in old new; do
    HY=build-serve/src/cli/hyocr; [ $v = old ] && HY=/tmp/old/build-serve/src/cli/hyocr
    for img in page_a4 page_2048 page_4096; do
      $HY run --model /tmp/hy-full --image /tmp/hyocr-img/$img.png --task recognize --device cuda --warmup --max-batch 1 \
        --max-new-tokens 8 --ignore-eos --no-tail-stop --format jsonl > /tmp/p.jsonl 2>/dev/null
      echo "$v round $round $img: $(python3 -c "
import json; t=json.loads(open('/tmp/p.jsonl').readline())['timings']; print('preprocess %.1f ms, vision %.1f, first token %.1f' % (t['preprocess_ms'], t['vision_ms'], t['first_token_ms']))")" >> $L
    done
  done
done
for v in old new; do
  d=$PWD; [ $v = old ] && d=/tmp/old
  (cd $d && OUT=/tmp/sb-$v HYOCR_SERVE_BENCH_REQUESTS=1 bash bench/serve-bench.sh > /dev/null 2>&1)
  echo "$v: $(grep quick9 /tmp/sb-$v/serve-bench.md)" >> $L
  grep -A12 "first token" /tmp/sb-$v/serve-bench.md | tail -9 | awk -F'|' '{printf "%s ", $4}' >> $L; echo >> $L
done
