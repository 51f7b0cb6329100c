# s14 call2: where a warm 1024²/2048² job's GPU time goes (nsys timeline: kernels, gaps)
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
NSYS=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems*/bin/nsys 2>/dev/null | head -1)
echo "nsys: $NSYS" >> $L
HY=build-gpu/src/cli/hyocr
for size in 1024 2048; do
  $NSYS profile -t cuda --cuda-graph-trace=node -o /tmp/p$size --force-overwrite true $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_$size.png --task recognize --device cuda --repeat 5 --max-batch 1 --warmup \
        --max-new-tokens 8 --ignore-eos --no-tail-stop --format jsonl > $OUT/run-$size.jsonl 2> $OUT/run-$size.err || tail -5 $OUT/run-$size.err >> $L
  $NSYS stats -r cuda_gpu_trace -f csv -o /tmp/tr$size /tmp/p$size.nsys-rep > /dev/null 2>&1
  ls /tmp/tr$size* >> $L
  python3 .device/tl.py /tmp/tr${size}_cuda_gpu_trace.csv > $OUT/tl-$size.txt 2>&1
  python3 -c "
import json
for l in open('$OUT/run-$size.jsonl'):
    t=json.loads(l).get('timings',{}); print('$size', 'vision %.2f prefill %.2f first %.2f' % (t.get('vision_ms',0), t.get('prefill_ms',0), t.get('first_token_ms',0)))" >> $L
done
tar czf $OUT/traces.tgz /tmp/tr*.csv 2>/dev/null
echo "all at $(( $(date +%s) - T0 )) s" >> $L
cat $L; head -70 $OUT/tl-1024.txt; head -70 $OUT/tl-2048.txt
