set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
R=$OUT/r7; mkdir -p $R
( [ -f /tmp/hy-full/model.safetensors ] || python3 bench/make_random_checkpoint.py /tmp/hy-full >/dev/null 2>&1 ) &
meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=disabled --buildtype=release >/dev/null 2>&1
ninja -C build-gpu tests/test-decode >$R/build.log 2>&1 || tail -20 $R/build.log
wait
run() { echo "== $1"; shift; env "$@" HYOCR_DECODE_BENCH_BATCHES=2,4,6,8,10,12,14,16 HYOCR_DECODE_BENCH=/tmp/hy-full HYOCR_DECODE_BENCH_MODES=2 timeout 100 build-gpu/tests/test-decode -p /decode/cuda/bench 2>&1 | grep "^# decode"; }
for i in 1 2; do run "k_decode (STAGES=0)" HYOCR_DECODE_STAGES=0; run "staged 2 for every step of several rows" HYOCR_DECODE_STAGES=2; done > $R/steps.txt 2>&1
cat $R/steps.txt
