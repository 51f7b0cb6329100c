# Session 33, call 5: k_decode_mma in the engine (HYOCR_DECODE_MMA, on by default) — the CUDA suites,
# decode_bench's mma2 row, and 16 concurrent 1024² pages with it on and off, alternated.
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-07-s33/call5.sh
T0=$(date +%s)
export OUT=${OUT:-/tmp/s33} PATH=/usr/local/cuda/bin:$PATH
W=$OUT/call5; mkdir -p $W; HY=build-gpu/src/cli/hyocr
(source bench/results/2026-12-05-h200-s21/prep.sh > $W/prep.txt 2>&1; echo "prep exit $?" >> $W/prep.txt) &
HK_BENCH_ROWS=1,8,16 HK_BENCH_CTX=1215,4191 HK_BENCH_SPLITS=0,512 HK_BENCH_STAGES=0,2 timeout 100 .device/bin/decode-bench > $W/bench.txt 2>&1
echo "decode_bench exit $?"; grep -E "staged2|mma2" $W/bench.txt
wait; tail -1 $W/prep.txt
echo "[$(( $(date +%s) - T0 )) s] === tests"
timeout 240 meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 4 backend-cuda decode batch tuning \
    > $W/tests.txt 2>&1; echo "tests exit $?"; grep -E "^ *[0-9]+/[0-9]+ |Ok:|Fail:" $W/tests.txt | tail -6
grep -E "FAIL|ERROR:|Bail" $W/tests.txt | head -8
HYOCR_DECODE_MMA=0 timeout 120 meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 4 decode batch \
    > $W/tests-mma0.txt 2>&1; echo "tests (HYOCR_DECODE_MMA=0) exit $?"; grep -E "Ok:|Fail:" $W/tests-mma0.txt
source bench/results/2026-12-07-s33/sixteen.sh
echo "[$(( $(date +%s) - T0 )) s] === 16 pages"
for rep in 1 2 3; do
    [ $(( $(date +%s) - T0 )) -lt 480 ] || break
    echo "mma: $(sixteen)"; echo "staged: $(HYOCR_DECODE_MMA=0 sixteen)"
    [ $rep = 1 ] && echo "one at a time: $(MB=1 sixteen)"
done | tee $W/sixteen.txt
rm -f $W/r.jsonl $W/r.err
echo "[$(( $(date +%s) - T0 )) s] call5 done"
