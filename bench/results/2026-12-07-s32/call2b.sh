# Session 32, call 2b: call2 cut to what fits a short budget — decode_bench before the block's
# shift, after it, and with 8 lanes a token (one round), while only the CUDA suites' binaries build;
# then those suites (backend-cuda, decode: the kernels' bits against the CPU's).
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-07-s32/call2b.sh
T0=$(date +%s)
export OUT=${OUT:-/tmp/s32} PATH=/usr/local/cuda/bin:$PATH
W=$OUT/call2; mkdir -p $W
( [ -f build-gpu/build.ninja ] || meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=disabled \
      --buildtype=release > $W/setup.txt 2>&1
  ninja -C build-gpu tests/test-backend-cuda tests/test-decode > $W/build.txt 2>&1; echo "build exit $?" >> $W/build.txt ) &
NCU_BINS= bash bench/results/2026-12-07-s32/call2c.sh
wait; tail -1 $W/build.txt
echo "[$(( $(date +%s) - T0 )) s] === tests"
timeout 200 meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 2 backend-cuda decode > $W/tests.txt 2>&1
echo "tests exit $?"; grep -E "^ *[0-9]+/[0-9]+ |Ok:|Fail:|FAIL" $W/tests.txt | tail -8
echo "[$(( $(date +%s) - T0 )) s] call2b done"
