# s13: k_prefill_wg (wgmma prefill attention): prefill_bench, GPU tests, engine A/B (HYOCR_NO_WGMMA)
set -u
export PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s)
L=$OUT/log.txt
( [ -f /tmp/hy-full/model.safetensors ] || python3 bench/make_random_checkpoint.py /tmp/hy-full > $OUT/ckpt.txt 2>&1 ) &
( python3 bench/make_images.py /tmp/hyocr-img > /dev/null 2>&1 ) &
(nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Ikernels bench/prefill_bench.cu -o /tmp/pb > $OUT/pb-build.txt 2>&1) &
[ -f build-gpu/build.ninja ] || { rm -rf build-gpu; meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled --buildtype=release > $OUT/setup.txt 2>&1; }
ninja -C build-gpu > $OUT/build.txt 2>&1 || { tail -30 $OUT/build.txt; exit 1; }
wait
echo "built at $(( $(date +%s) - T0 )) s" >> $L
timeout 120 /tmp/pb > $OUT/pb.txt 2>&1; echo "pb rc=$? at $(( $(date +%s) - T0 )) s" >> $L
grep -E "^total|PASS|FAIL|CHOICE|wgmma" $OUT/pb.txt >> $L
grep -E "!" $OUT/pb.txt | head -5 >> $L
timeout 200 meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 4 backend-cuda batch decode > $OUT/tests.txt 2>&1
echo "tests rc=$? at $(( $(date +%s) - T0 )) s" >> $L
grep -E "^ *[0-9]+/[0-9]+ |not ok|Bail|ERROR|assert|FAIL" $OUT/tests.txt | head -30 >> $L
med() { python3 -c "
import json,sys,statistics as st
rows=[json.loads(l).get('timings',{}) for l in open('$1')][1:]
print('%-5s %-4s vision %.2f prefill %.2f first %.2f (n=%d; prefill %s)'%('$2','$3',st.median(r['vision_ms'] for r in rows),st.median(r['prefill_ms'] for r in rows),st.median(r['first_token_ms'] for r in rows),len(rows),' '.join('%.2f'%r['prefill_ms'] for r in rows)))"; }
for round in 1 2; do
  for v in 1 0; do
    for size in 1024 2048 4096; do
      HYOCR_NO_WGMMA=$v build-gpu/src/cli/hyocr run --model /tmp/hy-full --image /tmp/hyocr-img/page_$size.png --task recognize --device cuda --repeat 4 --max-batch 1 --warmup \
        --max-new-tokens 8 --ignore-eos --no-tail-stop --format jsonl > /tmp/ab.jsonl 2> /tmp/ab.err || tail -3 /tmp/ab.err >> $L
      med /tmp/ab.jsonl nowg=$v $size >> $L
      [ $round = 1 ] && python3 -c "
import json; r=[json.loads(l) for l in open('/tmp/ab.jsonl')]; print('tokens nowg=$v $size', r[-1]['token_ids'])" >> $L
    done
  done
done
echo "all at $(( $(date +%s) - T0 )) s" >> $L
cat $L
