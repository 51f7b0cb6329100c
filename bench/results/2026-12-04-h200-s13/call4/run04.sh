# s13 call: k_vis_wg with its copies' slots, descriptors and row max worked out once (new) against HEAD's (old)
set -u
export PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s)
L=$OUT/log.txt
( [ -f /tmp/hy-full/model.safetensors ] || python3 bench/make_random_checkpoint.py /tmp/hy-full > $OUT/ckpt.txt 2>&1 ) &
( python3 bench/make_images.py /tmp/hyocr-img > /dev/null 2>&1 ) &
rm -rf /tmp/old && mkdir -p /tmp/old && tar --exclude=./build-gpu --exclude=./.git --exclude=./.device -cf - . | tar -xf - -C /tmp/old
cp .device/old-av.cu /tmp/old/kernels/attention-vision.cu
(cd /tmp/old && meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=disabled --buildtype=release > /dev/null 2>&1 && ninja -C build-gpu src/cli/hyocr > $OUT/build-old.txt 2>&1) &
(nvcc -O3 -std=c++17 -DFB_VIS_LAZY -gencode=arch=compute_90a,code=sm_90a -Ikernels bench/flash_bench.cu -o /tmp/fb-new > $OUT/fb-new-build.txt 2>&1) &
(cd /tmp/old && nvcc -O3 -std=c++17 -DFB_VIS_LAZY -gencode=arch=compute_90a,code=sm_90a -Ikernels bench/flash_bench.cu -o /tmp/fb-old > $OUT/fb-old-build.txt 2>&1) &
[ -f build-gpu/build.ninja ] || { rm -rf build-gpu; meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled --buildtype=release > $OUT/setup.txt 2>&1; }
ninja -C build-gpu > $OUT/build.txt 2>&1 || { tail -30 $OUT/build.txt; exit 1; }
wait
echo "built at $(( $(date +%s) - T0 )) s" >> $L
mkdir -p /tmp/dnew /tmp/dold
FB_DUMP=/tmp/dold /tmp/fb-old > $OUT/fb-old-1.txt 2>&1; echo "fb old rc=$?" >> $L
FB_DUMP=/tmp/dnew /tmp/fb-new > $OUT/fb-new-1.txt 2>&1; echo "fb new rc=$?" >> $L
(cd /tmp/dold && for f in *.bin; do cmp -s $f /tmp/dnew/$f && echo "same $f" || echo "DIFF $f"; done) > $OUT/cmp.txt
echo "cmp: $(grep -c same $OUT/cmp.txt) same, $(grep -c DIFF $OUT/cmp.txt) differ" >> $L
/tmp/fb-old > $OUT/fb-old-2.txt 2>&1; /tmp/fb-new > $OUT/fb-new-2.txt 2>&1
for f in fb-old-1 fb-new-1 fb-old-2 fb-new-2; do echo "$f: $(grep -A0 'wg4x64s2/1s ' $OUT/$f.txt | grep ' us ' | tr -s ' ' | tr '\n' '|')" >> $L; done
echo "fb at $(( $(date +%s) - T0 )) s" >> $L
meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 4 backend-cuda batch > $OUT/tests.txt 2>&1
echo "tests rc=$? at $(( $(date +%s) - T0 )) s" >> $L
med() { python3 -c "
import json,sys,statistics as st
rows=[json.loads(l).get('timings',{}) for l in open('$1')][1:]
print('%-5s %-4s vision %.2f prefill %.2f first %.2f (n=%d; vision %s)'%('$2','$3',st.median(r['vision_ms'] for r in rows),st.median(r['prefill_ms'] for r in rows),st.median(r['first_token_ms'] for r in rows),len(rows),' '.join('%.2f'%r['vision_ms'] for r in rows)))"; }
for round in 1 2; do
  for v in old new; do
    HY=build-gpu/src/cli/hyocr; [ $v = old ] && HY=/tmp/old/build-gpu/src/cli/hyocr
    for size in 1024 2048; do
      $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_$size.png --task recognize --device cuda --repeat 5 --max-batch 1 --warmup \
        --max-new-tokens 8 --ignore-eos --no-tail-stop --format jsonl > /tmp/ab.jsonl 2> /tmp/ab.err || tail -3 /tmp/ab.err >> $L
      med /tmp/ab.jsonl $v $size >> $L
    done
  done
done
echo "all at $(( $(date +%s) - T0 )) s" >> $L
cat $L
