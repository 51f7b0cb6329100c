# Session 34, call 1: the decode kernels' common start in one helper (dec_cta, a86e3c7's
# kernels/attention-decode.cu) — decode_bench's bit check and rows, the CUDA suites —, the patch
# embedding's product alone (bench/patch_gemm.cu, .device/bin/patch-gemm), one 16-page run with
# HYOCR_PROFILE=1 and the scheduler's named points (where the host's time between op calls goes),
# then 16 concurrent 1024² pages against one at a time, alternated, while LIMIT seconds last, and a
# 2048² page one at a time.
#   source .device/setup.sh >/dev/null 2>&1; LIMIT=450 bash bench/results/2026-12-07-s34/call1.sh
T0=$(date +%s); LIMIT=${LIMIT:-450}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
export OUT=${OUT:-/tmp/s34} PATH=/usr/local/cuda/bin:$PATH
W=$OUT/call1; mkdir -p $W; HY=build-gpu/src/cli/hyocr
nvidia-smi --query-gpu=name --format=csv,noheader | tee $W/gpu.txt
(source bench/results/2026-12-05-h200-s21/prep.sh > $W/prep.txt 2>&1; echo "prep exit $?" >> $W/prep.txt) &
HK_BENCH_ROWS=1,16 HK_BENCH_CTX=1215,4191 HK_BENCH_SPLITS=0 HK_BENCH_STAGES=0,2 timeout 60 .device/bin/decode-bench > $W/bench.txt 2>&1
echo "decode_bench exit $?"; grep -E "staged2|mma2" $W/bench.txt
timeout 30 .device/bin/patch-gemm > $W/patch-gemm.txt 2>&1; echo "patch-gemm exit $?"; cat $W/patch-gemm.txt
wait; tail -1 $W/prep.txt
echo "[$(( $(date +%s) - T0 )) s] === tests"
timeout 150 meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 4 backend-cuda decode batch \
    > $W/tests.txt 2>&1; echo "tests exit $?"; grep -E "^ *[0-9]+/[0-9]+ |Ok:|Fail:" $W/tests.txt | tail -6
grep -E "FAIL|ERROR:|Bail" $W/tests.txt | head -8
source bench/results/2026-12-07-s33/sixteen.sh
echo "[$(( $(date +%s) - T0 )) s] === profile"
HYOCR_PROFILE=1 sixteen; gzip -c $W/r.err > $W/prof16.txt.gz
awk '/host between/{h=1} h && /@/' $W/r.err | head -40
echo "per job (preprocess / vision / prefill / first token ms):"
python3 -c "import json; print(' '.join('%.1f/%.1f/%.1f/%.1f' % tuple(json.loads(l)['timings'][k] for k in ('preprocess_ms','vision_ms','prefill_ms','first_token_ms')) for l in open('$W/r.jsonl')))" | tee $W/jobs.txt
echo "[$(( $(date +%s) - T0 )) s] === 16 pages and one at a time"
for rep in 1 2 3; do
    [ $(left) -gt 70 ] || break
    echo "16: $(sixteen)"; echo "1: $(MB=1 sixteen)"
done | tee $W/sixteen.txt
if [ $(left) -gt 25 ]; then
    timeout 25 $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_2048.png --task recognize --device cuda --repeat 3 \
        --max-batch 1 --max-new-tokens 256 --ignore-eos --no-tail-stop --format json 2>/dev/null > $W/one.json
    python3 -c "import json; j=json.load(open('$W/one.json')); print('2048² one at a time (first token ms / decode tokens/s):', ' '.join('%.1f/%.1f' % (x['timings']['first_token_ms'], x['timings']['decode_tokens_per_s']) for x in j[1:]))" | tee $W/one2048.txt
fi
rm -f $W/r.jsonl $W/r.err $W/one.json
echo "[$(( $(date +%s) - T0 )) s] call1 done"
