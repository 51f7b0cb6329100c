# Session 33, call 3: the decode attention on the tensor cores (k_decode_mma, -DHK_DECODE_MMA) against
# k_decode_staged, both with the block's shift.
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-07-s33/call3.sh
# Binaries: .device/bin/decode-bench (the tree's kernel), decode-bench-mma (-DHK_DECODE_MMA).
# 1. decode_bench at 1, 8 and 16 rows × 1215 and 4191 keys, alternated, 2 rounds (the mma kernel's
#    output against k_decode's: max|d|); 2. builds build-gpu and build-mma (-Dcuda_args=-DHK_DECODE_MMA);
# 3. the CUDA decode, backend-cuda and batch suites on build-mma; 4. 16 concurrent 1024² pages with
#    each, alternated, and one at a time.
T0=$(date +%s)
export OUT=${OUT:-/tmp/s33} PATH=/usr/local/cuda/bin:$PATH
W=$OUT/call3; mkdir -p $W
SETUP="-Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled --buildtype=release"
(source bench/results/2026-12-05-h200-s21/prep.sh > $W/prep.txt 2>&1; echo "prep exit $?" >> $W/prep.txt
 { [ -f build-mma/build.ninja ] || meson setup build-mma $SETUP -Dcuda_args=-DHK_DECODE_MMA; } > $W/build-mma.txt 2>&1
 ninja -C build-mma >> $W/build-mma.txt 2>&1; echo "build-mma exit $?" >> $W/build-mma.txt) &
for rep in 1 2; do for b in decode-bench decode-bench-mma; do
    echo "=== $b"; HK_BENCH_ROWS=1,8,16 HK_BENCH_CTX=1215,4191 HK_BENCH_SPLITS=0 HK_BENCH_STAGES=0,2 timeout 60 .device/bin/$b 2>&1 | grep -E "rows"
done; done > $W/bench.txt 2>&1; grep -E "===|staged2|k_decode" $W/bench.txt | head -60
wait; tail -1 $W/prep.txt $W/build-mma.txt
echo "[$(( $(date +%s) - T0 )) s] === tests (mma)"
timeout 200 meson test -C build-mma --no-rebuild --print-errorlogs --num-processes 4 decode backend-cuda batch > $W/tests-mma.txt 2>&1
echo "tests exit $?"; grep -E "^ *[0-9]+/[0-9]+ |Ok:|Fail:" $W/tests-mma.txt | tail -5; grep -E "FAIL|not ok|Bail|assert" $W/tests-mma.txt | head -12
source bench/results/2026-12-07-s33/sixteen.sh
echo "[$(( $(date +%s) - T0 )) s] === 16 pages"
for rep in 1 2 3; do
    [ $(( $(date +%s) - T0 )) -lt 500 ] || break
    echo "staged: $(sixteen build-gpu/src/cli/hyocr)"; echo "mma: $(sixteen build-mma/src/cli/hyocr)"
    [ $rep = 1 ] && { echo "staged one at a time: $(MB=1 sixteen build-gpu/src/cli/hyocr)"; echo "mma one at a time: $(MB=1 sixteen build-mma/src/cli/hyocr)"; }
done | tee $W/sixteen.txt
rm -f $W/r.jsonl $W/r.err
echo "[$(( $(date +%s) - T0 )) s] call3 done"
