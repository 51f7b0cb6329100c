# Session 38, call 2: a 4096² page's one-row bound four rounds deep at one_row_len's 1088-key
# split (bound_stages, after call1's +15 % with HYOCR_DECODE_STAGES=4 there) — every engine
# suite with it, then batch-1 decode with the default against =4 after 1024² and 2048² pages (do
# four rounds beat three there too?) and against =3 after 4096², two rounds alternated.
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-08-s38/call2.sh
T0=$(date +%s)
source bench/results/2026-12-08-s38/lib.sh
start call2
suites
for rep in 1 2; do
    for s in 1024 2048; do echo "$s default: $(dec $s)"; echo "$s four: $(dec $s HYOCR_DECODE_STAGES=4)"; done
    echo "4096 default: $(dec 4096)"; echo "4096 three: $(dec 4096 HYOCR_DECODE_STAGES=3)"
done | tee $W/dec.txt
echo "[$(( $(date +%s) - T0 )) s] call2 done"
