# Session 33, call 10: the decode kernels' shared start (dec_cta) — decode_bench's bit check
# (k_decode_staged the same bits as k_decode, mma2 within 2 output ulps) and the CUDA suites
# that run the decode attention.
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-07-s33/call10.sh
export OUT=${OUT:-/tmp/s33} PATH=/usr/local/cuda/bin:$PATH
W=$OUT/call10; mkdir -p $W
{ [ -f build-gpu/build.ninja ] || meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled \
  --buildtype=release > $W/setup.txt 2>&1; ninja -C build-gpu > $W/build.txt 2>&1; echo "build exit $?" >> $W/build.txt; } &
HK_BENCH_ROWS=1,16 HK_BENCH_CTX=1215,4191 HK_BENCH_SPLITS=0 HK_BENCH_STAGES=0,2,3 timeout 60 .device/bin/decode-bench > $W/bench.txt 2>&1
echo "decode_bench exit $?"; grep -E "rows" $W/bench.txt | grep -v k_decode
wait; tail -1 $W/build.txt
timeout 130 meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 4 backend-cuda decode batch > $W/tests.txt 2>&1
echo "tests exit $?"; grep -E "^ *[0-9]+/[0-9]+ |Ok:|Fail:" $W/tests.txt | tail -5
