# What session 36 leaves for the next card (written at the end, never run: no card came after
# call1). The one-row rule of decode_bench's call1 is opt-in (HYOCR_DECODE_STAGES=3: one-row graph
# steps three rounds deep on the tensor cores, at most one CTA an SM); this measures it in the
# engine — batch-1 decode after 1024² and 2048² pages, alternated with the default (k_decode at
# 1024², mma2 at the old split at 2048²) — and decode_bench's one-row rows through the bounds'
# stretches; the suites that run one-row graph steps; 16 concurrent pages against one at a time.
# If three rounds win, the next step is to make them the default in decode_stages_for and run the
# decode, batch and engine suites with it (test_cuda_vision_beside holds a job alone, then one
# row, to the tokens it gets in a batch of k_decode rows).
#   source .device/setup.sh >/dev/null 2>&1; LIMIT=250 bash bench/results/2026-12-07-s36/next.sh
T0=$(date +%s); LIMIT=${LIMIT:-250}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
export OUT=${OUT:-/tmp/s36} PATH=/usr/local/cuda/bin:$PATH
W=$OUT/next; mkdir -p $W; HY=build-gpu/src/cli/hyocr
nvidia-smi --query-gpu=name --format=csv,noheader | tee $W/gpu.txt
source bench/results/2026-12-05-h200-s21/prep.sh > $W/prep.txt 2>&1; echo "[$(( $(date +%s) - T0 )) s] prep exit $?"
timeout 90 meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 3 decode batch engine \
    > $W/tests.txt 2>&1; echo "tests exit $?"
grep -E "^ *[0-9]+/[0-9]+ " $W/tests.txt | head; grep -E "^not ok|Bail" build-gpu/meson-logs/testlog.txt | head -5; gzip -f $W/tests.txt
dec() {   # size, then env: the warm jobs' decode tokens/s (256 new tokens) and a digest of the ids
    local size=$1; shift
    env "$@" timeout 40 $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_$size.png --task recognize \
        --device cuda --repeat 3 --max-batch 1 --max-new-tokens 256 --ignore-eos --no-tail-stop --format json 2>/dev/null |
    python3 -c "import json,sys,hashlib; j=json.load(sys.stdin); print(' '.join('%.1f' % x['timings']['decode_tokens_per_s'] for x in j[1:]), hashlib.md5(str([x['token_ids'] for x in j]).encode()).hexdigest()[:8])"
}
for rep in 1 2; do
    [ $(left) -gt 40 ] || break
    echo "1024 three: $(dec 1024 HYOCR_DECODE_STAGES=3)"; echo "1024 default: $(dec 1024)"
    echo "2048 three: $(dec 2048 HYOCR_DECODE_STAGES=3)"; echo "2048 default: $(dec 2048)"
done | tee $W/dec.txt
[ $(left) -gt 15 ] && HK_BENCH_PDL=1 HK_BENCH_ROWS=1 HK_BENCH_CTX=1087,1535,4191,4608 HK_BENCH_SPLITS=0,128,320 \
    HK_BENCH_STAGES=0,3 timeout 20 .device/bin/decode-bench-deep > $W/one-row.txt 2>&1 && grep -E "k_decode|mma" $W/one-row.txt
source bench/results/2026-12-07-s33/sixteen.sh
[ $(left) -gt 20 ] && { echo "16: $(sixteen)"; echo "1: $(MB=1 sixteen)"; } | tee $W/sixteen.txt
rm -f $W/r.jsonl $W/r.err
echo "[$(( $(date +%s) - T0 )) s] next done"
