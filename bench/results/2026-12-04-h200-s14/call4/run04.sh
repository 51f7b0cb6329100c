# s14 call4: where the last job's extra prefill time goes (uncommitted PFT timestamps in batch.c's prefill)
set -u
export PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s)
L=$OUT/log.txt
( [ -f /tmp/hy-full/model.safetensors ] || python3 bench/make_random_checkpoint.py /tmp/hy-full > $OUT/ckpt.txt 2>&1 ) &
( python3 bench/make_images.py /tmp/hyocr-img > /dev/null 2>&1 ) &
meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=disabled --buildtype=release > $OUT/setup.txt 2>&1 || { tail -20 $OUT/setup.txt; exit 1; }
ninja -C build-gpu src/cli/hyocr > $OUT/build.txt 2>&1 || { tail -30 $OUT/build.txt; exit 1; }
wait
echo "built at $(( $(date +%s) - T0 )) s" >> $L
HY=build-gpu/src/cli/hyocr
for size in 1024 2048; do
  $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_$size.png --task recognize --device cuda --repeat 6 --max-batch 1 --warmup \
        --max-new-tokens 8 --ignore-eos --no-tail-stop --format jsonl > /tmp/w.jsonl 2> /tmp/w.err
  grep -E "PFT|STT" /tmp/w.err >> $L
  python3 -c "
import json
for l in open('/tmp/w.jsonl'):
    t=json.loads(l).get('timings',{}); print('$size', 'vision %.2f prefill %.2f first %.2f' % (t.get('vision_ms',0), t.get('prefill_ms',0), t.get('first_token_ms',0)))" >> $L
done
# the same 1024² run with a 512² page as a seventh (last) job
$HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_1024.png --image /tmp/hyocr-img/page_1024.png --image /tmp/hyocr-img/page_1024.png --image /tmp/hyocr-img/page_1024.png --image /tmp/hyocr-img/page_512.png --task recognize --device cuda --max-batch 1 --warmup \
        --max-new-tokens 8 --ignore-eos --no-tail-stop --format jsonl > /tmp/w.jsonl 2> /tmp/w.err || tail -3 /tmp/w.err >> $L
grep -E "PFT|STT" /tmp/w.err >> $L
python3 -c "
import json
for l in open('/tmp/w.jsonl'):
    t=json.loads(l).get('timings',{}); print('mix', 'vision %.2f prefill %.2f first %.2f' % (t.get('vision_ms',0), t.get('prefill_ms',0), t.get('first_token_ms',0)))" >> $L
ls /tmp/hyocr-img >> $L
echo "all at $(( $(date +%s) - T0 )) s" >> $L
cat $L
