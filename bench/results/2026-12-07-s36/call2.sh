# Session 36, call 2 (the tree at 3a76fa1: one-row graph steps three rounds deep on the tensor
# cores, at most one CTA an SM): the CUDA suites; decode_bench's one-row rows through the bound's
# stretch (k_decode at the old split against mma3/mma4 at the new ones); batch-1 decode after
# 1024² and 2048² pages alternated with the old rule (1024²: HYOCR_DECODE_STAGES=0, k_decode at
# the old split; 2048²: =2 with HYOCR_DECODE_SPLIT=192, mma2 at the old split) and with four
# rounds (=4); 16 concurrent pages against one at a time, new and old; the benchmark of record.
#   source .device/setup.sh >/dev/null 2>&1; LIMIT=500 bash bench/results/2026-12-07-s36/call2.sh
T0=$(date +%s); LIMIT=${LIMIT:-500}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
export OUT=${OUT:-/tmp/s36} PATH=/usr/local/cuda/bin:$PATH
W=$OUT/call2; mkdir -p $W; HY=build-gpu/src/cli/hyocr
nvidia-smi --query-gpu=name --format=csv,noheader | tee $W/gpu.txt
source bench/results/2026-12-05-h200-s21/prep.sh > $W/prep.txt 2>&1; echo "prep exit $?"
timeout 100 meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 4 decode batch engine tuning \
    > $W/tests.txt 2>&1; echo "tests exit $?"
grep -E "^ *[0-9]+/[0-9]+ " $W/tests.txt | head; grep -E "^not ok|Bail|ERROR" build-gpu/meson-logs/testlog.txt | head -5; gzip -f $W/tests.txt
HK_BENCH_PDL=1 HK_BENCH_ROWS=1 HK_BENCH_CTX=1087,1343,1535,2047,4191,4608,5119 HK_BENCH_SPLITS=0,128,192,256,320,384 \
    HK_BENCH_STAGES=0,3,4 timeout 60 .device/bin/decode-bench-deep > $W/one-row.txt 2>&1; echo "one-row exit $?"
grep -E "k_decode|mma" $W/one-row.txt | awk '{printf "%s/%s/%s/%s ", $3, $4, $5, $6} END {print ""}' | fold -w 200
dec() {   # size, then env: the warm jobs' decode tokens/s (256 new tokens) and a digest of the ids
    local size=$1; shift
    env "$@" timeout 60 $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_$size.png --task recognize \
        --device cuda --repeat 3 --max-batch 1 --max-new-tokens 256 --ignore-eos --no-tail-stop --format json 2>/dev/null |
    python3 -c "import json,sys,hashlib; j=json.load(sys.stdin); print(' '.join('%.1f' % x['timings']['decode_tokens_per_s'] for x in j[1:]), hashlib.md5(str([x['token_ids'] for x in j]).encode()).hexdigest()[:8])"
}
for rep in 1 2; do
    [ $(left) -gt 200 ] || break
    echo "1024 new: $(dec 1024)"; echo "1024 old: $(dec 1024 HYOCR_DECODE_STAGES=0)"; echo "1024 four: $(dec 1024 HYOCR_DECODE_STAGES=4)"
    echo "2048 new: $(dec 2048)"; echo "2048 old: $(dec 2048 HYOCR_DECODE_STAGES=2 HYOCR_DECODE_SPLIT=192)"; echo "2048 four: $(dec 2048 HYOCR_DECODE_STAGES=4)"
done | tee $W/dec.txt
source bench/results/2026-12-07-s33/sixteen.sh
for rep in 1 2; do
    [ $(left) -gt 120 ] || break
    echo "16: $(sixteen)"; echo "1 new: $(MB=1 sixteen)"; echo "1 old: $(HYOCR_DECODE_STAGES=0 MB=1 sixteen)"
done | tee $W/sixteen.txt
rm -f $W/r.jsonl $W/r.err
[ $(left) -gt 80 ] && OUT=$W/record PART=2 HYOCR_RECORD_SECONDS=$(( $(left) - 10 )) bash bench/record.sh > $W/record.log 2>&1
grep -hE "^\|" $W/record/gpu-bench.txt 2>/dev/null | head -16; tail -22 $W/record/serve-bench.txt 2>/dev/null
echo "[$(( $(date +%s) - T0 )) s] call2 done"
