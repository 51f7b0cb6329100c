#!/bin/bash
# s12 call9: what RoPE + QK-norm costs inside the decode graph: an uncommitted build whose decode-sized rope_qknorm
# returns at once under HK_SKIP_ROPE (tokens meaningless; the attention reads the same bytes), alternated, 3 rounds
set -u
export PATH=/usr/local/cuda/bin:$PATH
L=$OUT/log.txt
( [ -f /tmp/hy-full/model.safetensors ] || python3 bench/make_random_checkpoint.py /tmp/hy-full > $OUT/ckpt.txt 2>&1 ) &
[ -f build-gpu/build.ninja ] || meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled --buildtype=release > $OUT/setup.txt 2>&1
ninja -C build-gpu src/cli/hyocr > $OUT/build.txt 2>&1 || { tail -30 $OUT/build.txt; exit 1; }
wait
python3 bench/make_images.py /tmp/hyocr-img > /dev/null
HY=build-gpu/src/cli/hyocr
for round in 1 2 3; do
  for v in with without; do
    e=""; [ $v = without ] && e="HK_SKIP_ROPE=1"
    env $e $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_2048.png --task recognize --device cuda --repeat 3 --max-batch 1 --warmup \
        --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl > /tmp/a.jsonl 2> /tmp/a.err
    echo "$v round $round one row after 2048²: $(python3 -c "
import json,statistics as st; r=[json.loads(l)['timings']['decode_tokens_per_s'] for l in open('/tmp/a.jsonl')][1:]; print('%.1f'%st.median(r))") tokens/s" >> $L
    env $e $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_1024.png --task recognize --device cuda --repeat 16 --max-batch 16 --warmup \
        --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl > /tmp/b.jsonl 2> /tmp/b.err
    echo "$v round $round 16 pages: $(tail -1 /tmp/b.err); last job's decode $(python3 -c "
import json; r=[json.loads(l)['timings'] for l in open('/tmp/b.jsonl')]; print('%.1f ms'%r[-1]['decode_ms'])")" >> $L
  done
done
