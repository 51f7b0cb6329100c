# Session 38's calls source this (from the repository root, T0 set): start NAME — the call's
# folder $W under $OUT, the card's name, the build and the benchmark's inputs (prep.sh); suites —
# every engine suite on the card, the failures and the count of passes printed; dec SIZE [ENV...]
# — batch-1 decode after a SIZE² page (the full-size checkpoint, 256 new tokens, three jobs): the
# warm jobs' tokens/s and a digest of every job's token ids.
export OUT=${OUT:-/tmp/s38} PATH=/usr/local/cuda/bin:$PATH
HY=build-gpu/src/cli/hyocr
start() {
    W=$OUT/$1; mkdir -p $W
    nvidia-smi --query-gpu=name --format=csv,noheader | tee $W/gpu.txt
    source bench/results/2026-12-05-h200-s21/prep.sh > $W/prep.txt 2>&1; echo "[$(( $(date +%s) - T0 )) s] prep exit $?"
}
suites() {
    timeout 240 meson test -C build-gpu --no-rebuild --print-errorlogs --suite engine --num-processes 6 > $W/tests.txt 2>&1
    echo "[$(( $(date +%s) - T0 )) s] tests exit $?"
    grep -E "^ *[0-9]+/[0-9]+ " $W/tests.txt | grep -v " OK " | head; grep -cE "^ *[0-9]+/[0-9]+ .* OK " $W/tests.txt
    grep -E "^not ok|Bail" build-gpu/meson-logs/testlog.txt | head -5; gzip -f $W/tests.txt
}
dec() {
    local size=$1; shift
    env "$@" timeout 60 $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_$size.png --task recognize \
        --device cuda --repeat 3 --max-batch 1 --max-new-tokens 256 --ignore-eos --no-tail-stop --format json 2>/dev/null |
    python3 -c "import json,sys,hashlib; j=json.load(sys.stdin); print(' '.join('%.1f' % x['timings']['decode_tokens_per_s'] for x in j[1:]), hashlib.md5(str([x['token_ids'] for x in j]).encode()).hexdigest()[:8])"
}
