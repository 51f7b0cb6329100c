# Session 34, call 2: the host work moved into the vision pass's wait (the next page's prefetch thread,
# the prompt's buffers: batch.c's during_vision) — the CUDA suites the scheduler runs, one 16-page
# profile (the host table's named points), 16 concurrent 1024² pages against one at a time while
# LIMIT seconds last; and decode_bench with the decode kernels before dec_cta (557f01f's,
# .device/bin/decode-bench-pre) against the tree's, alternated, the same machine.
#   source .device/setup.sh >/dev/null 2>&1; LIMIT=140 bash bench/results/2026-12-07-s34/call2.sh
T0=$(date +%s); LIMIT=${LIMIT:-140}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
export OUT=${OUT:-/tmp/s34} PATH=/usr/local/cuda/bin:$PATH
W=$OUT/call2; mkdir -p $W; HY=build-gpu/src/cli/hyocr
nvidia-smi --query-gpu=name --format=csv,noheader | tee $W/gpu.txt
(source bench/results/2026-12-05-h200-s21/prep.sh > $W/prep.txt 2>&1; echo "prep exit $?" >> $W/prep.txt) &
for r in 1; do for b in pre tree; do
    bin=.device/bin/decode-bench; [ $b = pre ] && bin=.device/bin/decode-bench-pre
    echo "== $b"; HK_BENCH_ROWS=1,16 HK_BENCH_CTX=1215,4191 HK_BENCH_SPLITS=0 HK_BENCH_STAGES=0,2 timeout 40 $bin 2>&1 | grep -E "staged2|mma2|k_decode "
done; done | tee $W/bench-ab.txt
wait; tail -1 $W/prep.txt
echo "[$(( $(date +%s) - T0 )) s] === tests"
timeout 100 meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 4 decode batch engine \
    > $W/tests.txt 2>&1; echo "tests exit $?"; grep -E "^ *[0-9]+/[0-9]+ |Ok:|Fail:" $W/tests.txt | tail -8
grep -E "FAIL|ERROR:|Bail" $W/tests.txt | head -8; gzip -f $W/tests.txt
source bench/results/2026-12-07-s33/sixteen.sh
echo "[$(( $(date +%s) - T0 )) s] === profile"
HYOCR_PROFILE=1 sixteen; gzip -c $W/r.err > $W/prof16.txt.gz
awk '/the card idle/{p=1} p' $W/r.err | head -6
awk '/host between/{h=1} h && /@|alloc|buf_free/' $W/r.err | head -30
echo "[$(( $(date +%s) - T0 )) s] === 16 pages and one at a time"
for rep in 1 2 3 4; do
    [ $(left) -gt 20 ] || break
    echo "16: $(sixteen)"; echo "1: $(MB=1 sixteen)"
done | tee $W/sixteen.txt
rm -f $W/r.jsonl $W/r.err
echo "[$(( $(date +%s) - T0 )) s] call2 done"
