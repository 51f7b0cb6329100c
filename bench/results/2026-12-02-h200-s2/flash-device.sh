#!/bin/bash
# flash session, one device call: vision-attention microbench (old vs new variants) while the
# tree builds, then the CUDA test, full-size parity, warm profile, tiny parity.
# Run from the project root on the GPU machine with OUT set.
source .device/setup.sh
export PATH=/usr/local/cuda/bin:$PATH
S=$(date +%s)
t() { echo "$1 $(($(date +%s) - S))s" >>$OUT/flash-steps.txt; }
(python3 bench/make_random_checkpoint.py /tmp/hy-full && python3 bench/make_images.py /tmp/img) >$OUT/flash-data.log 2>&1 &
DATA=$!
(meson setup build-fl -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=disabled --buildtype=release &&
 ninja -C build-fl src/cli/hyocr tests/test-backend-cuda) >$OUT/flash-build.log 2>&1 &
BUILD=$!
nvcc -O3 -std=c++17 -arch=sm_90 -Ikernels bench/flash_bench.cu -o /tmp/fb >$OUT/flash-bench-build.log 2>&1 &&
  timeout 40 /tmp/fb >$OUT/flash-bench.txt 2>&1
t bench
wait $BUILD; echo "build rc=$?" >>$OUT/flash-steps.txt; t build
meson test -C build-fl --no-rebuild backend-cuda >$OUT/flash-meson-test.log 2>&1
cp build-fl/meson-logs/testlog.txt $OUT/flash-testlog.txt; t test
wait $DATA; t data
H=build-fl/src/cli/hyocr
(python3 bench/hf_reference.py parity --model /tmp/hy-full --image /tmp/img/page_2048.png --out /tmp/par &&
 $H run --device cuda --model /tmp/hy-full --image /tmp/img/page_2048.png --task recognize --max-new-tokens 1 \
   --dump /tmp/hyd --format json >/dev/null &&
 python3 tests/gpu/compare.py /tmp/par /tmp/hyd page_2048) >$OUT/flash-parity.txt 2>&1; t parity
HYOCR_PROFILE=1 $H run --device cuda --model /tmp/hy-full --image /tmp/img/page_2048.png --task recognize --repeat 3 \
  --max-batch 1 --max-new-tokens 8 --format json >$OUT/flash-j.json 2>$OUT/flash-prof.txt; t prof
python3 tests/gpu/tiny_parity.py $H tests/data f16 >$OUT/flash-tiny.txt 2>&1; t tiny
