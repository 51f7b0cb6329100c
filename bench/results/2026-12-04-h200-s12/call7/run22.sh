#!/bin/bash
# s12 call7: the 16-page burst's peak and rate, 4 runs each, with the arrivals taken between admissions (7234111) and without (cad1117)
set -u
export PATH=/usr/local/cuda/bin:$PATH
L=$OUT/log.txt
( [ -f /tmp/hy-full/model.safetensors ] || python3 bench/make_random_checkpoint.py /tmp/hy-full > $OUT/ckpt.txt 2>&1 ) &
rm -rf /tmp/old; mkdir -p /tmp/old && tar --exclude=./build-gpu --exclude=./.git --exclude=./.device -cf - . | tar -xf - -C /tmp/old
(cd /tmp/old && patch -R -p1 < $OLDPWD/.device/arr.patch > /dev/null && meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled --buildtype=release > /dev/null 2>&1 && ninja -C build-gpu src/cli/hyocr > $OUT/build-old.txt 2>&1) &
[ -f build-gpu/build.ninja ] || meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled --buildtype=release > $OUT/setup.txt 2>&1
ninja -C build-gpu src/cli/hyocr > $OUT/build.txt 2>&1 || { tail -30 $OUT/build.txt; exit 1; }
wait
echo "old has take_arrived: $(grep -c take_arrived /tmp/old/src/engine/batch.c)" >> $L
python3 bench/make_images.py /tmp/hyocr-img > /dev/null
for round in 1 2 3 4; do
  for v in old new; do
    HY=build-gpu/src/cli/hyocr; [ $v = old ] && HY=/tmp/old/build-gpu/src/cli/hyocr
    $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_1024.png --task recognize --device cuda --repeat 16 --max-batch 16 --warmup \
        --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl > /tmp/b.jsonl 2> /tmp/b.err
    echo "$v round $round: $(tail -1 /tmp/b.err) peak $(python3 -c "
import json; print(max(json.loads(l)['memory']['peak'] for l in open('/tmp/b.jsonl')))")" >> $L
  done
done
