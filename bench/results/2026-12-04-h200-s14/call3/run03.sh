# s14 call3: a warm job's per-op GPU time (HYOCR_PROFILE, 5 jobs − 3) against its wall-clock stages; cudaMalloc/cudaFree costs
set -u
export PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s)
L=$OUT/log.txt
( [ -f /tmp/hy-full/model.safetensors ] || python3 bench/make_random_checkpoint.py /tmp/hy-full > $OUT/ckpt.txt 2>&1 ) &
( python3 bench/make_images.py /tmp/hyocr-img > /dev/null 2>&1 ) &
(nvcc -O2 .device/malloc_bench.cu -o /tmp/mb > /dev/null 2>&1) &
meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=disabled --buildtype=release > $OUT/setup.txt 2>&1 || { tail -20 $OUT/setup.txt; exit 1; }
ninja -C build-gpu src/cli/hyocr > $OUT/build.txt 2>&1 || { tail -30 $OUT/build.txt; exit 1; }
wait
echo "built at $(( $(date +%s) - T0 )) s" >> $L
/tmp/mb >> $L 2>&1
HY=build-gpu/src/cli/hyocr
mkdir -p /tmp/pr
for size in 1024 2048; do
  for n in 3 5; do
    HYOCR_PROFILE=1 $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_$size.png --task recognize --device cuda --repeat $n --max-batch 1 \
        --max-new-tokens 8 --ignore-eos --no-tail-stop --format jsonl > /tmp/pr/p-$size-$n.jsonl 2> /tmp/pr/p-$size-$n.txt || tail -3 /tmp/pr/p-$size-$n.txt >> $L
  done
  python3 bench/profile_diff.py /tmp/pr/p-$size-3.txt /tmp/pr/p-$size-5.txt 2 > $OUT/prof-$size.md
  $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_$size.png --task recognize --device cuda --repeat 6 --max-batch 1 --warmup \
        --max-new-tokens 8 --ignore-eos --no-tail-stop --format jsonl > /tmp/pr/w-$size.jsonl 2>/dev/null
  python3 -c "
import json
for f in ['/tmp/pr/w-$size.jsonl', '/tmp/pr/p-$size-5.jsonl']:
  for l in open(f):
    t=json.loads(l).get('timings',{}); print('$size', f[-12:], 'pre %.2f vision %.2f prefill %.2f first %.2f' % (t.get('preprocess_ms',0), t.get('vision_ms',0), t.get('prefill_ms',0), t.get('first_token_ms',0)))" >> $L
done
cp /tmp/pr/p-*-5.txt $OUT/ 2>/dev/null
echo "all at $(( $(date +%s) - T0 )) s" >> $L
cat $L; head -45 $OUT/prof-1024.md; head -45 $OUT/prof-2048.md
