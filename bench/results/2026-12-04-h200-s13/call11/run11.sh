# s13: is a process's second job (what gpu-bench reports) warm? per-job timings of 6 jobs, 256 tokens, and per-op profiles of 1, 2 and 3 jobs at 1024²
set -u
export PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s)
( [ -f /tmp/hy-full/model.safetensors ] || python3 bench/make_random_checkpoint.py /tmp/hy-full > /dev/null 2>&1 ) &
( python3 bench/make_images.py /tmp/hyocr-img > /dev/null 2>&1 ) &
[ -f build-gpu/build.ninja ] || { rm -rf build-gpu; meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled --buildtype=release > /tmp/setup.txt 2>&1; }
ninja -C build-gpu src/cli/hyocr > /tmp/build.txt 2>&1 || { tail -30 /tmp/build.txt; exit 1; }
wait
echo "built at $(( $(date +%s) - T0 )) s" > $OUT/log.txt
HY=build-gpu/src/cli/hyocr
for size in 1024 2048; do
  for r in 1 2; do
    $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_$size.png --task recognize --device cuda --repeat 6 --max-batch 1 \
      --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl > /tmp/j.jsonl 2>/dev/null
    python3 -c "
import json
for i,l in enumerate(open('/tmp/j.jsonl')):
    t=json.loads(l)['timings']; print('$size run $r job %d: first %.2f vision %.2f prefill %.2f preprocess %.2f decode %.1f'%(i+1,t['first_token_ms'],t['vision_ms'],t['prefill_ms'],t['preprocess_ms'],t['decode_tokens_per_s']))" >> $OUT/log.txt
  done
done
for n in 1 2 3; do
  HYOCR_PROFILE=1 $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_1024.png --task recognize --device cuda --repeat $n --max-batch 1 \
    --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl > /dev/null 2> $OUT/prof-$n.txt
done
python3 bench/profile_diff.py $OUT/prof-1.txt $OUT/prof-2.txt 1 > $OUT/job2.md
python3 bench/profile_diff.py $OUT/prof-2.txt $OUT/prof-3.txt 1 > $OUT/job3.md
echo "all at $(( $(date +%s) - T0 )) s" >> $OUT/log.txt
cat $OUT/log.txt; head -3 $OUT/job2.md; head -3 $OUT/job3.md
