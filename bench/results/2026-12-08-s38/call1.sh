# Session 38, call 1: the one-row three rounds as the default (DECODE_ONE_ROW_STAGES in
# backend-cuda.c) on a card — every engine suite, then batch-1 decode with the default against
# HYOCR_DECODE_STAGES=3 (what session 36's A/B measured: should be the same ids and speed) and =0
# (k_decode, the old rule at 1024²), after 1024², 2048² and 4096² pages (4096²: the default keeps
# two rounds at the old split; 3 is three rounds there, 4 four rounds at 1088-key splits); 16
# concurrent pages against one at a time; the benchmark of record.
#   source .device/setup.sh >/dev/null 2>&1; LIMIT=480 bash bench/results/2026-12-08-s38/call1.sh
T0=$(date +%s); LIMIT=${LIMIT:-480}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
source bench/results/2026-12-08-s38/lib.sh
start call1
suites
for rep in 1 2; do
    [ $(left) -gt 150 ] || break
    for s in 1024 2048; do
        echo "$s default: $(dec $s)"; echo "$s three: $(dec $s HYOCR_DECODE_STAGES=3)"; echo "$s k_decode: $(dec $s HYOCR_DECODE_STAGES=0)"
    done
    echo "4096 default: $(dec 4096)"; echo "4096 three: $(dec 4096 HYOCR_DECODE_STAGES=3)"; echo "4096 four: $(dec 4096 HYOCR_DECODE_STAGES=4)"
done | tee $W/dec.txt
source bench/results/2026-12-07-s33/sixteen.sh
for rep in 1 2; do
    [ $(left) -gt 100 ] || break
    echo "16: $(sixteen)"; echo "1: $(MB=1 sixteen)"
done | tee $W/sixteen.txt
rm -f $W/r.jsonl $W/r.err
OUT=$W/record PART=2 HYOCR_RECORD_SECONDS=$(( $(left) - 10 )) bash bench/record.sh
grep -hE "^\|" $W/record/gpu-bench.txt 2>/dev/null | head -16; tail -22 $W/record/serve-bench.txt 2>/dev/null
echo "[$(( $(date +%s) - T0 )) s] call1 done"
