#!/bin/bash
# s12 call10: an uncommitted scheduler change (pf.patch: the head of the queue's image decoded on a thread while
# the running jobs step, instead of on the engine's thread) against HEAD, serve-bench alternated twice
set -u
export PATH=/usr/local/cuda/bin:$PATH
L=$OUT/log.txt
( [ -f /tmp/hy-full/model.safetensors ] || python3 bench/make_random_checkpoint.py /tmp/hy-full > $OUT/ckpt.txt 2>&1 ) &
rm -rf /tmp/old; mkdir -p /tmp/old && tar --exclude=./build-gpu --exclude=./.git --exclude=./.device -cf - . | tar -xf - -C /tmp/old
(cd /tmp/old && patch -R -p1 < $OLDPWD/.device/pf.patch > /dev/null && meson setup build-serve -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled --buildtype=release > /dev/null 2>&1 && ninja -C build-serve src/cli/hyocr > $OUT/build-old.txt 2>&1) &
[ -f build-serve/build.ninja ] || meson setup build-serve -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled --buildtype=release > $OUT/setup.txt 2>&1
ninja -C build-serve src/cli/hyocr > $OUT/build.txt 2>&1 || { tail -30 $OUT/build.txt; exit 1; }
wait
echo "old has prefetch_ahead: $(grep -c prefetch_ahead /tmp/old/src/engine/batch.c)" >> $L
for round in 1 2; do
  for v in old new; do
    d=$PWD; [ $v = old ] && d=/tmp/old
    (cd $d && OUT=/tmp/sb-$v-$round HYOCR_SERVE_BENCH_REQUESTS=2 bash bench/serve-bench.sh > /dev/null 2>&1)
    echo "== $v round $round" >> $L
    sed -n 5,8p /tmp/sb-$v-$round/serve-bench.md >> $L
    grep quick9 /tmp/sb-$v-$round/serve-bench.md >> $L
  done
done
