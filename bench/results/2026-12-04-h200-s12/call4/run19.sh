#!/bin/bash
# s12 call4: where the pixels' upload spends its 1.2-2.5 ms (instrumented build, not committed)
set -u
export PATH=/usr/local/cuda/bin:$PATH
L=$OUT/log.txt
( [ -f /tmp/hy-full/model.safetensors ] || python3 bench/make_random_checkpoint.py /tmp/hy-full > $OUT/ckpt.txt 2>&1 ) &
[ -f build-gpu/build.ninja ] || meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled --buildtype=release > $OUT/setup.txt 2>&1
ninja -C build-gpu src/cli/hyocr > $OUT/build.txt 2>&1 || { tail -30 $OUT/build.txt; exit 1; }
wait
python3 bench/make_images.py /tmp/hyocr-img > /dev/null
nproc >> $L; lscpu | grep -E "Model name|NUMA|Socket" >> $L
for f in 0 1; do for size in 1024 2048; do
  echo "== f16=$f size=$size" >> $L
  HYOCR_UP_F16=$f HYOCR_UP_TRACE=1 build-gpu/src/cli/hyocr run --model /tmp/hy-full --image /tmp/hyocr-img/page_$size.png --task recognize --device cuda --repeat 4 --max-batch 1 --warmup \
     --max-new-tokens 4 --ignore-eos --format jsonl 2>&1 >/tmp/o.jsonl | grep UPTRACE >> $L
  python3 -c "
import json
for l in open('/tmp/o.jsonl'): t=json.loads(l)['timings']; print('vision %.2f prefill %.2f'%(t['vision_ms'],t['prefill_ms']))" >> $L
done; done
