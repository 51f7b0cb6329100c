# Session 32, call 1 (the tree: session 31's 3 and 4 column groups back, dc61618, and
# HYOCR_POOL_KEEP). From the repository root on the GPU machine:
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-07-s32/call1.sh
# 1. the build beside the benches (benches.sh: session 31's heads-fast grid and ordered blocks, the head-major cache;
#    1–4 column groups on the step's products and the head), 2. the CUDA suites with the pool kept,
# 3. HYOCR_POOL_KEEP 0/1 alternated: 16 concurrent 1024² pages and warm single pages, then the
#    16-page run's idle table with each, 4. 16 pages with 3 and 4 groups forced.
T0=$(date +%s)
export OUT=${OUT:-/tmp/s32} PATH=/usr/local/cuda/bin:$PATH
W=$OUT/call1; mkdir -p $W; HY=build-gpu/src/cli/hyocr
(source bench/results/2026-12-05-h200-s21/prep.sh > $W/prep.txt 2>&1; echo "prep exit $?" >> $W/prep.txt) &
bash bench/results/2026-12-07-s32/benches.sh > $W/benches.txt 2>&1
wait; tail -3 $W/prep.txt; grep -E "^===|^16 " $W/benches.txt | cut -c1-80; sed -n "/gemm_rows_bench/,\$p" $W/benches.txt | head -60
echo "[$(( $(date +%s) - T0 )) s] === tests (HYOCR_POOL_KEEP=1)"
HYOCR_POOL_KEEP=1 timeout 220 meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 4 backend-cuda decode batch tuning \
    > $W/tests.txt 2>&1; echo "tests exit $?"; grep -E "^ *[0-9]+/[0-9]+ |Ok:|Fail:" $W/tests.txt | tail -6
grep -E "pool_keep|layout|FAIL|not ok" $W/tests.txt | head -10
sixteen() {   # tokens/s of 16 concurrent 1024² pages, and the token ids' digest
    timeout 60 $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_1024.png --task recognize --device cuda \
        --repeat 16 --max-batch ${MB:-16} --warmup --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl > $W/r.jsonl 2> $W/r.err
    echo "$(grep -o "[0-9.]* tokens/s" $W/r.err | tail -1) ids $(python3 -c "import json,hashlib;print(hashlib.md5(str([json.loads(l)['token_ids'] for l in open('$W/r.jsonl')]).encode()).hexdigest()[:8])")"
}
warm() {   # warm single pages: first token / vision / prefill ms
    timeout 60 $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_$1.png --task recognize --device cuda --repeat 4 \
        --max-batch 1 --max-new-tokens 8 --ignore-eos --no-tail-stop --format json 2>/dev/null |
    python3 -c "import json,sys; j=json.load(sys.stdin)[1:]; print(' '.join('%.2f/%.2f/%.2f' % (x['timings']['first_token_ms'], x['timings']['vision_ms'], x['timings']['prefill_ms']) for x in j))"
}
echo "[$(( $(date +%s) - T0 )) s] === pool keep A/B"
for rep in 1 2 3; do for k in 0 1; do
    echo "keep $k 16 pages: $(HYOCR_POOL_KEEP=$k sixteen)"
    echo "keep $k one at a time: $(HYOCR_POOL_KEEP=$k MB=1 sixteen)"
    echo "keep $k 1024: $(HYOCR_POOL_KEEP=$k warm 1024)"
    [ $rep = 1 ] && echo "keep $k 2048: $(HYOCR_POOL_KEEP=$k warm 2048)"
done; done | tee $W/keep.txt
for k in 0 1; do
    HYOCR_POOL_KEEP=$k HYOCR_PROFILE=1 timeout 60 $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_1024.png --task recognize \
        --device cuda --repeat 16 --max-batch 16 --warmup --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl \
        > /dev/null 2> $W/prof16-keep$k.txt; grep -A6 "idle before each op" $W/prof16-keep$k.txt
done
echo "[$(( $(date +%s) - T0 )) s] === groups forced (keep 1)"
[ $(( $(date +%s) - T0 )) -lt 480 ] && for wide in 0 3 4 0 3 4; do
    echo "wide $wide: $(HYOCR_POOL_KEEP=1 HYOCR_ROWS_WIDE=$wide sixteen)"
done | tee $W/wide.txt
echo "[$(( $(date +%s) - T0 )) s] call1 done"
