# Session 38, call 2: a 4096² page's one-row bound four rounds deep at one_row_len's 1088-key
# split (bound_stages, after call1's +15 % with HYOCR_DECODE_STAGES=4 there) — every engine
# suite with it, then batch-1 decode with the default against =4 after 1024² and 2048² pages (do
# four rounds beat three there too?) and against =3 after 4096², two rounds alternated.
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-08-s38/call2.sh
T0=$(date +%s)
export OUT=${OUT:-/tmp/s38} PATH=/usr/local/cuda/bin:$PATH
W=$OUT/call2; mkdir -p $W; HY=build-gpu/src/cli/hyocr
nvidia-smi --query-gpu=name --format=csv,noheader | tee $W/gpu.txt
source bench/results/2026-12-05-h200-s21/prep.sh > $W/prep.txt 2>&1; echo "[$(( $(date +%s) - T0 )) s] prep exit $?"
timeout 240 meson test -C build-gpu --no-rebuild --print-errorlogs --suite engine --num-processes 6 > $W/tests.txt 2>&1
echo "[$(( $(date +%s) - T0 )) s] tests exit $?"
grep -E "^ *[0-9]+/[0-9]+ " $W/tests.txt | grep -v " OK " | head; grep -cE "^ *[0-9]+/[0-9]+ .* OK " $W/tests.txt
grep -E "^not ok|Bail" build-gpu/meson-logs/testlog.txt | head -5; gzip -f $W/tests.txt
dec() {   # size, then env: the warm jobs' decode tokens/s (256 new tokens) and a digest of the ids
    local size=$1; shift
    env "$@" timeout 60 $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_$size.png --task recognize \
        --device cuda --repeat 3 --max-batch 1 --max-new-tokens 256 --ignore-eos --no-tail-stop --format json 2>/dev/null |
    python3 -c "import json,sys,hashlib; j=json.load(sys.stdin); print(' '.join('%.1f' % x['timings']['decode_tokens_per_s'] for x in j[1:]), hashlib.md5(str([x['token_ids'] for x in j]).encode()).hexdigest()[:8])"
}
for rep in 1 2; do
    for s in 1024 2048; do echo "$s default: $(dec $s)"; echo "$s four: $(dec $s HYOCR_DECODE_STAGES=4)"; done
    echo "4096 default: $(dec 4096)"; echo "4096 three: $(dec 4096 HYOCR_DECODE_STAGES=3)"
done | tee $W/dec.txt
echo "[$(( $(date +%s) - T0 )) s] call2 done"
