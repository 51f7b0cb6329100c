# Session 35, call 2, at the commit that makes four rounds on the tensor cores the default where
# their one-wave split fills the card (backend-cuda.c's bound_stages): decode_bench at 8, 12 and
# 16 rows (the rule takes 8 and 16 rows deep, 12 not); the CUDA suites, backend-cuda alone (it
# ran past call1's 120 s beside the others); 16 and 8 concurrent 1024² pages with the rule
# against HYOCR_DECODE_STAGES=2 (the default before) and one at a time, alternated; then the
# benchmark of record (bench/record.sh PART=2: gpu-bench without transformers, serve-bench).
#   source .device/setup.sh >/dev/null 2>&1; LIMIT=420 bash bench/results/2026-12-07-s35/call2.sh
T0=$(date +%s); LIMIT=${LIMIT:-420}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
export OUT=${OUT:-/tmp/s35} PATH=/usr/local/cuda/bin:$PATH
W=$OUT/call2; mkdir -p $W; HY=build-gpu/src/cli/hyocr
nvidia-smi --query-gpu=name --format=csv,noheader | tee $W/gpu.txt
(source bench/results/2026-12-05-h200-s21/prep.sh > $W/prep.txt 2>&1; echo "prep exit $?" >> $W/prep.txt) &
HK_BENCH_PDL=1 HK_BENCH_ROWS=8,12,16 HK_BENCH_CTX=1215 HK_BENCH_SPLITS=256,448,768,1344 HK_BENCH_STAGES=2,4 \
    timeout 60 .device/bin/decode-bench-s35 2>&1 | tee $W/bench.txt | grep -E "mma"
wait; tail -1 $W/prep.txt
echo "[$(( $(date +%s) - T0 )) s] === tests"
timeout 100 meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 3 decode batch engine tuning \
    > $W/tests.txt 2>&1; echo "tests exit $?"
timeout 200 meson test -C build-gpu --no-rebuild --print-errorlogs backend-cuda > $W/tests-bc.txt 2>&1; echo "backend-cuda exit $?"
cat $W/tests.txt $W/tests-bc.txt | grep -E "^ *[0-9]+/[0-9]+ " | sort -u
cat $W/tests.txt $W/tests-bc.txt | grep -E "FAIL|ERROR:|Bail|not ok" | head -8; gzip -f $W/tests.txt $W/tests-bc.txt
source bench/results/2026-12-07-s33/sixteen.sh
echo "[$(( $(date +%s) - T0 )) s] === 16 and 8 pages: the rule, stages 2; one at a time"
for rep in 1 2 3; do
    [ $(left) -gt 120 ] || break
    echo "16 rule: $(sixteen)"; echo "16 stages2: $(HYOCR_DECODE_STAGES=2 sixteen)"
    echo "8 rule: $(MB=8 sixteen)"; echo "8 stages2: $(MB=8 HYOCR_DECODE_STAGES=2 sixteen)"
    [ $rep = 3 ] || echo "1: $(MB=1 sixteen)"
done | tee $W/sixteen.txt
rm -f $W/r.jsonl $W/r.err
echo "[$(( $(date +%s) - T0 )) s] === record"
OUT=$W/record PART=2 HYOCR_RECORD_SECONDS=$(( $(left) - 10 )) bash bench/record.sh
grep -hE "^\|" $W/record/gpu-bench.txt 2>/dev/null | head -30
tail -25 $W/record/serve-bench.txt 2>/dev/null
echo "[$(( $(date +%s) - T0 )) s] call2 done"
