# s14 call7: the ViT's row-wise chunk (HYOCR_VIT_CHUNK_ROWS 4096 default / 8192 / 16384) at 2048² and 4096²: time and peak
set -u
export PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s)
L=$OUT/log.txt
( [ -f /tmp/hy-full/model.safetensors ] || python3 bench/make_random_checkpoint.py /tmp/hy-full > $OUT/ckpt.txt 2>&1 ) &
( python3 bench/make_images.py /tmp/hyocr-img > /dev/null 2>&1 ) &
[ -f build-gpu/build.ninja ] || { rm -rf build-gpu; meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled --buildtype=release > $OUT/setup.txt 2>&1; }
ninja -C build-gpu src/cli/hyocr > $OUT/build.txt 2>&1 || { tail -30 $OUT/build.txt; exit 1; }
wait
echo "built at $(( $(date +%s) - T0 )) s" >> $L
HY=build-gpu/src/cli/hyocr
show() { python3 -c "
import json
rows=[json.loads(l) for l in open('$1')]
print('%-6s %-9s %s' % ('$2', '$3', ' | '.join('%.2f/%.2f/%.2f peak %d' % (r['timings']['vision_ms'], r['timings']['prefill_ms'], r['timings']['first_token_ms'], r.get('memory',{}).get('peak',-1)) for r in rows)))"; }
for round in 1 2; do
  for c in 4096 8192 16384; do
    HYOCR_VIT_CHUNK_ROWS=$c $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_2048.png --task recognize --device cuda --repeat 3 --max-batch 1 --warmup \
        --max-new-tokens 8 --ignore-eos --no-tail-stop --format jsonl > /tmp/c.jsonl 2> /tmp/c.err || tail -3 /tmp/c.err >> $L
    show /tmp/c.jsonl $c 2048x3 >> $L
  done
done
for c in 4096 16384; do
  HYOCR_VIT_CHUNK_ROWS=$c $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_2048.png --task recognize --device cuda --max-batch 1 \
      --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl > /tmp/c.jsonl 2> /tmp/c.err || tail -3 /tmp/c.err >> $L
  show /tmp/c.jsonl $c 2048-256t >> $L
done
for c in 4096 16384 4096 16384; do
  HYOCR_VIT_CHUNK_ROWS=$c $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_4096.png --task recognize --device cuda --repeat 1 --max-batch 1 --warmup \
      --max-new-tokens 8 --ignore-eos --no-tail-stop --format jsonl > /tmp/c.jsonl 2> /tmp/c.err || tail -3 /tmp/c.err >> $L
  show /tmp/c.jsonl $c 4096 >> $L
done
echo "all at $(( $(date +%s) - T0 )) s" >> $L
cat $L
