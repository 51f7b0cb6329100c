# s13: k_vis_wg's staggered schedule (half the warpgroups a tile behind in softmax and P·V): flash_bench, bits against the in-turn schedule, engine A/B and GPU tests with it launched
set -u
export PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s)
L=$OUT/log.txt
( [ -f /tmp/hy-full/model.safetensors ] || python3 bench/make_random_checkpoint.py /tmp/hy-full > $OUT/ckpt.txt 2>&1 ) &
( python3 bench/make_images.py /tmp/hyocr-img > /dev/null 2>&1 ) &
rm -rf /tmp/stg && mkdir -p /tmp/stg && tar --exclude=./build-gpu --exclude=./.git --exclude=./.device -cf - . | tar -xf - -C /tmp/stg
sed -i 's/^#define WG_NS 2$/#define WG_NS 3/; s/^#define WG_SCH WG_INTURN$/#define WG_SCH WG_STAGGER/' /tmp/stg/kernels/attention-vision.cu
grep -E "^#define WG_(NS|SCH)" /tmp/stg/kernels/attention-vision.cu >> $L
(cd /tmp/stg && meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=disabled --buildtype=release > /dev/null 2>&1 && ninja -C build-gpu > $OUT/build-stg.txt 2>&1 || echo "stg build failed" >> $L) &
(nvcc -O3 -std=c++17 -DFB_VIS_LAZY -gencode=arch=compute_90a,code=sm_90a -Ikernels bench/flash_bench.cu -o /tmp/fb > $OUT/fb-build.txt 2>&1) &
[ -f build-gpu/build.ninja ] || { rm -rf build-gpu; meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled --buildtype=release > $OUT/setup.txt 2>&1; }
ninja -C build-gpu > $OUT/build.txt 2>&1 || { tail -30 $OUT/build.txt; exit 1; }
wait
echo "built at $(( $(date +%s) - T0 )) s" >> $L
mkdir -p /tmp/d
FB_DUMP=/tmp/d /tmp/fb > $OUT/fb.txt 2>&1; echo "fb rc=$? at $(( $(date +%s) - T0 )) s" >> $L
grep -E "FAIL|CHOICE" $OUT/fb.txt >> $L
awk '/^(f16|bf16) n=(4096|16384)/{print} / us /' $OUT/fb.txt | grep -E "n=|wg" >> $L
(cd /tmp/d && for f in *wg4x64s2_1s-*.bin; do for v in wg4x64s3_1p wg4x64s4_1p; do g=${f/wg4x64s2_1s/$v}; [ -f "$g" ] && { cmp -s "$f" "$g" && echo "same $g" || echo "DIFF $g"; }; done; done
 for f in *wg4x64s2_1sE-*.bin; do g=${f/wg4x64s2_1sE/wg4x64s3_1pE}; [ -f "$g" ] && { cmp -s "$f" "$g" && echo "same $g" || echo "DIFF $g"; }; done) > $OUT/cmp.txt
echo "bits against the in-turn schedule: $(grep -c same $OUT/cmp.txt) same, $(grep -c DIFF $OUT/cmp.txt) differ" >> $L
grep DIFF $OUT/cmp.txt | head -5 >> $L
(cd /tmp/stg && timeout 150 meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 4 backend-cuda batch > $OUT/tests-stg.txt 2>&1; echo "stg tests rc=$?" >> $L)
grep -E "^ *[0-9]+/[0-9]+ |not ok|FAIL" $OUT/tests-stg.txt | head -10 >> $L
med() { python3 -c "
import json,sys,statistics as st
rows=[json.loads(l).get('timings',{}) for l in open('$1')][1:]
print('%-5s %-4s vision %.2f prefill %.2f first %.2f (n=%d; vision %s)'%('$2','$3',st.median(r['vision_ms'] for r in rows),st.median(r['prefill_ms'] for r in rows),st.median(r['first_token_ms'] for r in rows),len(rows),' '.join('%.2f'%r['vision_ms'] for r in rows)))"; }
for round in 1 2; do
  for v in inturn stagger; do
    HY=build-gpu/src/cli/hyocr; [ $v = stagger ] && HY=/tmp/stg/build-gpu/src/cli/hyocr
    for size in 1024 2048; do
      $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_$size.png --task recognize --device cuda --repeat 4 --max-batch 1 --warmup \
        --max-new-tokens 8 --ignore-eos --no-tail-stop --format jsonl > /tmp/ab.jsonl 2> /tmp/ab.err || tail -3 /tmp/ab.err >> $L
      med /tmp/ab.jsonl $v $size >> $L
      [ $round = 1 ] && python3 -c "
import json; r=[json.loads(l) for l in open('/tmp/ab.jsonl')]; print('tokens $v $size', r[-1]['token_ids'])" >> $L
    done
  done
done
echo "all at $(( $(date +%s) - T0 )) s" >> $L
cat $L
