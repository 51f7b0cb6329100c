# Session 33, call 8: the tree with k_decode_mma for several rows and for one row at context bounds
# of 4096 keys and more — the CUDA suites (and the draft's), decode after a 2048² page one at a time
# with HYOCR_DECODE_MMA on and off, and 16 concurrent 1024² pages against one at a time.
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-07-s33/call8.sh
T0=$(date +%s)
export OUT=${OUT:-/tmp/s33} PATH=/usr/local/cuda/bin:$PATH
W=$OUT/call8; mkdir -p $W; HY=build-gpu/src/cli/hyocr
source bench/results/2026-12-05-h200-s21/prep.sh > $W/prep.txt 2>&1; echo "prep exit $?"
echo "[$(( $(date +%s) - T0 )) s] === tests"
timeout 300 meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 4 backend-cuda decode batch tuning dflash speculate engine \
    > $W/tests.txt 2>&1; echo "tests exit $?"; grep -E "^ *[0-9]+/[0-9]+ |Ok:|Fail:" $W/tests.txt | tail -9
grep -E "FAIL|ERROR:|Bail" $W/tests.txt | head -8
one() {   # warm pages one at a time: first token ms / decode tokens/s, and the ids' digest
    timeout 90 $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_$1.png --task recognize --device cuda --repeat 3 \
        --max-batch 1 --max-new-tokens 256 --ignore-eos --no-tail-stop --format json 2>/dev/null > $W/one.json
    python3 -c "import json,hashlib; j=json.load(open('$W/one.json')); print(' '.join('%.1f/%.1f' % (x['timings']['first_token_ms'], x['timings']['decode_tokens_per_s']) for x in j[1:]), hashlib.md5(str([x['token_ids'] for x in j]).encode()).hexdigest()[:8])"
}
echo "[$(( $(date +%s) - T0 )) s] === 2048² one at a time (first token ms / decode tokens/s)"
for rep in 1 2; do
    echo "mma: $(one 2048)"; echo "k_decode: $(HYOCR_DECODE_MMA=0 one 2048)"
done | tee $W/one2048.txt
source bench/results/2026-12-07-s33/sixteen.sh
echo "[$(( $(date +%s) - T0 )) s] === 16 pages and one at a time"
for rep in 1 2 3; do
    [ $(( $(date +%s) - T0 )) -lt 520 ] || break
    echo "16: $(sixteen)"; echo "1: $(MB=1 sixteen)"
done | tee $W/sixteen.txt
rm -f $W/r.jsonl $W/r.err $W/one.json
echo "[$(( $(date +%s) - T0 )) s] call8 done"
