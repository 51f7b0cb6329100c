# Session 17's first device call (one build, ≤ ~7 min): s17 balance.sh (HYOCR_DECODE_BALANCE),
# then session 14's call9 (k_vis_wg2 in flash_bench: bits and µs); call8 (HYOCR_ORDERED_ALLOC)
# only with NEXT_CALL8=1 (the session's device minutes, eaten by failed starts, no longer fit it).
# From the repository root, on the GPU machine:
#   source .device/setup.sh >/dev/null && bash bench/results/2026-12-05-h200-s17/next.sh
# Every part's files go into $OUT/next.tgz (one file back), its log's last lines to stdout.
set -u
W=/tmp/s17next
rm -rf $W && mkdir -p $W/balance $W/call9 $W/call8
S0=$(date +%s)
OUT=$W/balance timeout 270 bash bench/results/2026-12-05-h200-s17/balance.sh > $W/balance/stdout.txt 2>&1
echo "== balance rc=$? at $(( $(date +%s) - S0 )) s"; tail -25 $W/balance/log.txt 2>/dev/null
OUT=$W/call9 timeout 140 bash bench/results/2026-12-04-h200-s14/call9/run09.sh > $W/call9/stdout.txt 2>&1
echo "== call9 rc=$? at $(( $(date +%s) - S0 )) s"; tail -25 $W/call9/log.txt 2>/dev/null
left=$(( ${NEXT_CALL8:-0} ? 545 - ($(date +%s) - S0) : 0 ))
[ $left -gt 60 ] && { OUT=$W/call8 timeout $left bash bench/results/2026-12-04-h200-s14/call8/run08.sh > $W/call8/stdout.txt 2>&1
  echo "== call8 rc=$? at $(( $(date +%s) - S0 )) s"; tail -25 $W/call8/log.txt 2>/dev/null; }
tar czf $OUT/next.tgz -C $W .
