# Session 35, call 1: the 16-row decode attention with a row's keys in one CTA (no partials, no
# merge) four rounds deep on the tensor cores, against the engine's 448-key splits two rounds deep
# (decode_bench, with and without programmatic launches); the CUDA suites at this tree (session
# 34's fe05c78 had never run on a card); 16 concurrent 1024² pages with HYOCR_DECODE_STAGES=4 / 3
# (k_decode_mma that deep, the wave rule's longer splits) against the default and one at a time,
# alternated; then session 34's 16-page profile (the host's named points) while LIMIT lasts.
#   source .device/setup.sh >/dev/null 2>&1; LIMIT=300 bash bench/results/2026-12-07-s35/call1.sh
T0=$(date +%s); LIMIT=${LIMIT:-300}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
export OUT=${OUT:-/tmp/s35} PATH=/usr/local/cuda/bin:$PATH
W=$OUT/call1; mkdir -p $W; HY=build-gpu/src/cli/hyocr
nvidia-smi --query-gpu=name --format=csv,noheader | tee $W/gpu.txt
(source bench/results/2026-12-05-h200-s21/prep.sh > $W/prep.txt 2>&1; echo "prep exit $?" >> $W/prep.txt) &
for pdl in 0 1; do
    echo "== PDL $pdl"
    ( [ $pdl = 1 ] && export HK_BENCH_PDL=1; HK_BENCH_ROWS=16 HK_BENCH_CTX=1215,1343 HK_BENCH_SPLITS=448,704,1344 \
      HK_BENCH_STAGES=0,2,3,4 timeout 60 .device/bin/decode-bench-s35 2>&1 )
done | tee $W/bench.txt | grep -vE "k_decode|^\(" 
for b in pre tree; do   # session 34's dec_cta A/B (its call2), the 448-key split
    bin=.device/bin/decode-bench-s35; [ $b = pre ] && bin=.device/bin/decode-bench-pre
    echo "== $b $(HK_BENCH_ROWS=16 HK_BENCH_CTX=1215 HK_BENCH_SPLITS=448 HK_BENCH_STAGES=0,2 timeout 30 $bin 2>&1 | grep -E "mma2|staged2" | tr -s ' ' | tr '\n' ';')"
done | tee $W/bench-ab.txt
wait; tail -1 $W/prep.txt
echo "[$(( $(date +%s) - T0 )) s] === tests"
timeout 120 meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 4 backend-cuda decode batch engine \
    > $W/tests.txt 2>&1; echo "tests exit $?"; grep -E "^ *[0-9]+/[0-9]+ |Ok:|Fail:" $W/tests.txt | tail -8
grep -E "FAIL|ERROR:|Bail|not ok" $W/tests.txt | head -8; gzip -f $W/tests.txt
source bench/results/2026-12-07-s33/sixteen.sh
echo "[$(( $(date +%s) - T0 )) s] === 16 pages: default, stages 4, stages 3; one at a time"
for rep in 1 2 3; do
    [ $(left) -gt 25 ] || break
    echo "16 default: $(sixteen)"; echo "16 stages4: $(HYOCR_DECODE_STAGES=4 sixteen)"
    echo "16 stages3: $(HYOCR_DECODE_STAGES=3 sixteen)"; echo "1: $(MB=1 sixteen)"
done | tee $W/sixteen.txt
if [ $(left) -gt 20 ]; then
    echo "[$(( $(date +%s) - T0 )) s] === profile"
    HYOCR_PROFILE=1 sixteen > /dev/null; gzip -c $W/r.err > $W/prof16.txt.gz
    awk '/the card idle/{p=1} p' $W/r.err | head -4
    grep -E "attention_paged \(decode\)|graph launch" $W/r.err | head -4
fi
rm -f $W/r.jsonl $W/r.err
echo "[$(( $(date +%s) - T0 )) s] call1 done"
