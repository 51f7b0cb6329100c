# Session 33, call 1: session 32's call2 (never ran) with the engine built three ways in one call.
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-07-s33/call1.sh
# The tree holds fd93998's kernels/attention-decode.cu (a token's block by a shift where the block
# size is a power of two); .device/attention-decode-old.cu is 89ca45a's (the division).
# Builds: build-gpu (shift, 16 lanes a token), build-l8 (shift, -DHK_DEC_LANES=8), /tmp/src-old's
# build-old (89ca45a's kernel). 1. decode_bench old/shift/8 lanes, Nsight Compute on old and 8 lanes
# (session 32's call2c.sh); 2. the CUDA suites on build-gpu and build-l8; 3. 16 concurrent 1024²
# pages with each build alternated (and one at a time with old and 8 lanes), then the verify block
# kernel in the decode attention's place (HYOCR_INVARIANT=1).
T0=$(date +%s)
export OUT=${OUT:-/tmp/s33} PATH=/usr/local/cuda/bin:$PATH
W=$OUT/call1; mkdir -p $W
SETUP="-Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled --buildtype=release"
mkdir -p /tmp/src-old && tar --exclude='./build*' --exclude=./.git --exclude=./.device -cf - . | tar -C /tmp/src-old -xf -
cp .device/attention-decode-old.cu /tmp/src-old/kernels/attention-decode.cu
(source bench/results/2026-12-05-h200-s21/prep.sh > $W/prep.txt 2>&1; echo "prep exit $?" >> $W/prep.txt) &
( { [ -f build-l8/build.ninja ] || meson setup build-l8 $SETUP -Dcuda_args=-DHK_DEC_LANES=8; } > $W/build-l8.txt 2>&1
  ninja -C build-l8 src/cli/hyocr >> $W/build-l8.txt 2>&1; echo "build-l8 exit $?" >> $W/build-l8.txt
  cd /tmp/src-old && { [ -f build-old/build.ninja ] || meson setup build-old $SETUP; } > $W/build-old.txt 2>&1
  ninja -C build-old src/cli/hyocr >> $W/build-old.txt 2>&1; echo "build-old exit $?" >> $W/build-old.txt ) &
W=$W ROUNDS=2 NCU_BINS="decode-bench-old decode-bench-l8" bash bench/results/2026-12-07-s32/call2c.sh
wait; tail -1 $W/prep.txt $W/build-l8.txt $W/build-old.txt
echo "[$(( $(date +%s) - T0 )) s] === tests"
timeout 150 meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 4 backend-cuda decode batch tuning \
    > $W/tests.txt 2>&1; echo "tests (shift) exit $?"; grep -E "Ok:|Fail:" $W/tests.txt
ninja -C build-l8 > $W/build-l8-tests.txt 2>&1 && timeout 150 meson test -C build-l8 --no-rebuild --print-errorlogs \
    --num-processes 4 backend-cuda decode batch > $W/tests-l8.txt 2>&1; echo "tests (8 lanes) exit $?"; grep -E "Ok:|Fail:" $W/tests-l8.txt
source bench/results/2026-12-07-s33/sixteen.sh
OLD=/tmp/src-old/build-old/src/cli/hyocr SHIFT=build-gpu/src/cli/hyocr L8=build-l8/src/cli/hyocr
echo "[$(( $(date +%s) - T0 )) s] === 16 pages"
for rep in 1 2 3; do
    [ $(( $(date +%s) - T0 )) -lt 520 ] || break
    echo "old: $(sixteen $OLD)"; echo "shift: $(sixteen $SHIFT)"; echo "l8: $(sixteen $L8)"
    [ $rep = 1 ] && { echo "old one at a time: $(MB=1 sixteen $OLD)"; echo "l8 one at a time: $(MB=1 sixteen $L8)"; }
    [ $rep = 2 ] && echo "invariant (shift): $(HYOCR_INVARIANT=1 sixteen $SHIFT)"
done | tee $W/sixteen.txt
rm -f $W/r.jsonl $W/r.err
echo "[$(( $(date +%s) - T0 )) s] call1 done"
