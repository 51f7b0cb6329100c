# Session 32, call 2: what caps the 16-row decode attention (call1: not the cache's layout, the
# grid's order or the blocks' order), and the pool kept, with more rounds.
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-07-s32/call2.sh
# 1. Nsight Compute on decode_bench's staged kernel at 16 rows × 1215 keys (the engine's split):
#    issue slots, stall reasons, instruction mix (decode-bench-old: the kernel before the block's
#    shift) and with 8 lanes a token (decode-bench-l8: -DHK_DEC_LANES=8, 16 dims a lane, three
#    shuffles a dot product instead of four), and decode_bench before the shift, after it, and
#    with 8 lanes, alternated; then the CUDA suites that run it; 2. the engine's 16 concurrent 1024² pages with
#    the decode attention by the verify block kernel (tensor cores; HYOCR_INVARIANT=1 puts every
#    row in a one-row block — at 16 rows the products are the same kernels), alternated with the
#    default and HYOCR_POOL_KEEP=1, one round.
T0=$(date +%s)
export OUT=${OUT:-/tmp/s32} PATH=/usr/local/cuda/bin:$PATH
W=$OUT/call2; mkdir -p $W; HY=build-gpu/src/cli/hyocr
(source bench/results/2026-12-05-h200-s21/prep.sh > $W/prep.txt 2>&1; echo "prep exit $?" >> $W/prep.txt) &
ROUNDS=2 NCU_BINS="decode-bench-old decode-bench-l8" bash bench/results/2026-12-07-s32/call2c.sh
wait; tail -2 $W/prep.txt
echo "[$(( $(date +%s) - T0 )) s] === tests"
timeout 200 meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 4 backend-cuda decode batch tuning \
    > $W/tests.txt 2>&1; echo "tests exit $?"; grep -E "^ *[0-9]+/[0-9]+ |Ok:|Fail:" $W/tests.txt | tail -6
sixteen() {
    timeout 60 $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_1024.png --task recognize --device cuda \
        --repeat 16 --max-batch 16 --warmup --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl > $W/r.jsonl 2> $W/r.err
    echo "$(grep -o "[0-9.]* tokens/s" $W/r.err | tail -1) ids $(python3 -c "import json,hashlib;print(hashlib.md5(str([json.loads(l)['token_ids'] for l in open('$W/r.jsonl')]).encode()).hexdigest()[:8])")"
}
echo "[$(( $(date +%s) - T0 )) s] === 16 pages"
{
    echo "default: $(sixteen)"
    echo "invariant: $(HYOCR_INVARIANT=1 sixteen)"
    echo "keep: $(HYOCR_POOL_KEEP=1 sixteen)"
} | tee $W/sixteen.txt
rm -f $W/r.jsonl $W/r.err
echo "[$(( $(date +%s) - T0 )) s] call2 done"
