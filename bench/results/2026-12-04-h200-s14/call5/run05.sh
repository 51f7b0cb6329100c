# s14 call5: the started job's pixels and image freed on a thread (new) against HEAD's inline frees (old)
set -u
export PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s)
L=$OUT/log.txt
( [ -f /tmp/hy-full/model.safetensors ] || python3 bench/make_random_checkpoint.py /tmp/hy-full > $OUT/ckpt.txt 2>&1 ) &
( python3 bench/make_images.py /tmp/hyocr-img > /dev/null 2>&1 ) &
rm -rf /tmp/old && mkdir -p /tmp/old && tar --exclude=./build-gpu --exclude=./.git --exclude=./.device -cf - . | tar -xf - -C /tmp/old
cp .device/old-batch.c /tmp/old/src/engine/batch.c
(cd /tmp/old && meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=disabled --buildtype=release > /dev/null 2>&1 && ninja -C build-gpu src/cli/hyocr > $OUT/build-old.txt 2>&1) &
[ -f build-gpu/build.ninja ] || { rm -rf build-gpu; meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled --buildtype=release > $OUT/setup.txt 2>&1; }
ninja -C build-gpu > $OUT/build.txt 2>&1 || { tail -30 $OUT/build.txt; exit 1; }
wait
echo "built at $(( $(date +%s) - T0 )) s" >> $L
meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 4 batch > $OUT/tests.txt 2>&1
echo "batch tests rc=$? at $(( $(date +%s) - T0 )) s" >> $L
show() { python3 -c "
import json
rows=[json.loads(l).get('timings',{}) for l in open('$1')]
print('%-4s %-5s %s' % ('$2', '$3', ' | '.join('%.2f/%.2f/%.2f' % (r['vision_ms'], r['prefill_ms'], r['first_token_ms']) for r in rows)))"; }
for round in 1 2 3; do
  for v in old new; do
    HY=build-gpu/src/cli/hyocr; [ $v = old ] && HY=/tmp/old/build-gpu/src/cli/hyocr
    for spec in "1024 4" "2048 3" "1024 1"; do
      set -- $spec
      $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_$1.png --task recognize --device cuda --repeat $2 --max-batch 1 --warmup \
        --max-new-tokens 8 --ignore-eos --no-tail-stop --format jsonl > /tmp/ab.jsonl 2> /tmp/ab.err || tail -3 /tmp/ab.err >> $L
      show /tmp/ab.jsonl $v "$1x$2" >> $L
    done
  done
done
echo "all at $(( $(date +%s) - T0 )) s" >> $L
cat $L
