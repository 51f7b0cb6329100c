# Session 18's first device call (one build, ≤ ~9.5 min): rowsplit.sh (HYOCR_ROWS_SPLIT,
# HYOCR_ROWS_WIDE and s17's HYOCR_DECODE_BALANCE: tests, gemm_rows_bench, the 16-concurrent A/B,
# the suites), then
# session 14's call9 (k_vis_wg2 in flash_bench: bits and µs) if ≥ 150 s are left. It replaces
# s17's next.sh as the first call (it covers balance.sh's test, A/B and suites).
# From the repository root, on the GPU machine:
#   source .device/setup.sh >/dev/null && bash bench/results/2026-12-05-h200-s18/next.sh
# Every part's files go into $OUT/next.tgz (one file back), its log's last lines to stdout.
set -u
W=/tmp/s18next
rm -rf $W && mkdir -p $W/rowsplit $W/call9
S0=$(date +%s)
OUT=$W/rowsplit timeout 480 bash bench/results/2026-12-05-h200-s18/rowsplit.sh > $W/rowsplit/stdout.txt 2>&1
echo "== rowsplit rc=$? at $(( $(date +%s) - S0 )) s"; tail -30 $W/rowsplit/log.txt 2>/dev/null
left=$(( 565 - ($(date +%s) - S0) ))
[ $left -gt 150 ] && { OUT=$W/call9 timeout $(( left - 10 )) bash bench/results/2026-12-04-h200-s14/call9/run09.sh > $W/call9/stdout.txt 2>&1
  echo "== call9 rc=$? at $(( $(date +%s) - S0 )) s"; tail -25 $W/call9/log.txt 2>/dev/null; }
tar czf $OUT/next.tgz -C $W .
