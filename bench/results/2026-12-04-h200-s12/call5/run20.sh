#!/bin/bash
# s12 call5: (1) GPU tests of both changes; (2) the pixels' upload (fp16 from the host, streaming stores)
# against HEAD, HYOCR_PROFILE's upload_f32; (3) hyocr serve, one client: TTFT with the embeddings'
# host copy after the first token against HEAD, alternated
set -u
export PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s)
L=$OUT/log.txt
( [ -f /tmp/hy-full/model.safetensors ] || python3 bench/make_random_checkpoint.py /tmp/hy-full > $OUT/ckpt.txt 2>&1 ) &
rm -rf /tmp/old; mkdir -p /tmp/old && tar --exclude=./build-gpu --exclude=./.git --exclude=./.device -cf - . | tar -xf - -C /tmp/old
(cd /tmp/old && patch -R -p1 < $OLDPWD/.device/up.patch > /dev/null && meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled --buildtype=release > /dev/null 2>&1 && ninja -C build-gpu src/cli/hyocr > $OUT/build-old.txt 2>&1) &
[ -f build-gpu/build.ninja ] || meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled --buildtype=release > $OUT/setup.txt 2>&1
ninja -C build-gpu > $OUT/build.txt 2>&1 || { tail -30 $OUT/build.txt; exit 1; }
wait
echo "built at $(( $(date +%s) - T0 )) s; old has f16_from_f32: $(grep -c f16_from_f32 /tmp/old/src/engine/backend-cuda.c)" >> $L
python3 bench/make_images.py /tmp/hyocr-img > /dev/null
meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 4 backend-cuda decode batch tuning > $OUT/tests.txt 2>&1
echo "tests rc=$? at $(( $(date +%s) - T0 )) s" >> $L
grep -E "upload_large|alone-embeds" build-gpu/meson-logs/testlog.txt | head -4 >> $L
for v in old new; do
  HY=build-gpu/src/cli/hyocr; [ $v = old ] && HY=/tmp/old/build-gpu/src/cli/hyocr
  for size in 1024 2048; do
    HYOCR_PROFILE=1 $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_$size.png --task recognize --device cuda --repeat 4 --max-batch 1 --warmup \
        --max-new-tokens 8 --ignore-eos --format json > /dev/null 2> /tmp/p.txt
    echo "$v $size $(grep upload_f32 /tmp/p.txt)" >> $L
  done
done
for round in 1 2 3; do
  for v in old new; do
    HY=build-gpu/src/cli/hyocr; [ $v = old ] && HY=/tmp/old/build-gpu/src/cli/hyocr
    : > /tmp/srv.log
    $HY serve --model /tmp/hy-full --device cuda --port 0 --served-model-name hyocr --max-batch 64 2>>/tmp/srv.log &
    pid=$!
    timeout 300 grep -m1 -qE "ready|hyocr serve: [^l]" <(tail -n +1 -f --pid=$$ /tmp/srv.log)
    port=$(grep -oE "listening on http://[0-9.]+:[0-9]+" /tmp/srv.log | grep -oE "[0-9]+$")
    python3 bench/serve_client.py --port "$port" --json /tmp/c.json concurrency --image /tmp/hyocr-img/page_1024.png \
        --clients 1 --requests 12 --max-tokens 32 > /tmp/c.txt 2>&1
    python3 -c "
import json; r=json.load(open('/tmp/c.json'))['rows'][0]
print('$v round $round ttft p50 %.1f ms p99 %.1f ms latency p50 %.1f ms errors %d' % (r['ttft_p50_s']*1e3, r['ttft_p99_s']*1e3, r['latency_p50_s']*1e3, r['errors']))" >> $L 2>&1 || tail -5 /tmp/c.txt >> $L
    kill -TERM $pid; wait $pid
  done
done
echo "all at $(( $(date +%s) - T0 )) s" >> $L
