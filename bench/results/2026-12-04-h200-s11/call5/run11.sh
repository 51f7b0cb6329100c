# s11 call 5: the 16-row step kernel by kernel (graph), with session 7's window (SKIP=20000 COUNT=900)
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
( [ -f /tmp/hy-full/model.safetensors ] || python3 bench/make_random_checkpoint.py /tmp/hy-full >/dev/null 2>&1 ) &
[ -f build-gpu/build.ninja ] || meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled --buildtype=release >/dev/null 2>&1
ninja -C build-gpu >/tmp/build.log 2>&1 || grep -E "error|FAILED" /tmp/build.log | head
wait
BATCH=16 SKIP=20000 COUNT=900 TAG=b16- OUT=/tmp/split timeout 400 bash bench/kernel-split.sh graph > $OUT/split16.log 2>&1; echo "rc=$?" >> $OUT/split16.log
cp /tmp/split/b16-split.txt /tmp/split/b16-split-order.txt $OUT/ 2>/dev/null; tail -5 /tmp/split/b16-split-ncu.log > $OUT/ncu-tail.txt 2>/dev/null
