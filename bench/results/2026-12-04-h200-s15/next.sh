# Session 15's planned calls in one device call (one build): by default call1 (HYOCR_UPLOAD_U8)
# and call3 (HYOCR_PREFILL_SPARE), ~7 of the call's 10 minutes; call2 (HYOCR_VIS_WG2, ~3.5 min)
# in its own call (NEXT_CALLS=2), where session 14's call9 had k_vis_wg2 faster.
# From the repository root, on the GPU machine:
#   source .device/setup.sh >/dev/null && bash bench/results/2026-12-04-h200-s15/next.sh
# Every call's files go into $OUT/next.tgz (one file back), its log's last lines to stdout.
set -u
D=bench/results/2026-12-04-h200-s15
W=/tmp/s15next
rm -rf $W && mkdir -p $W
for c in ${NEXT_CALLS:-1 3}; do
  mkdir -p $W/call$c
  OUT=$W/call$c timeout 280 bash $D/call$c/run0$c.sh > $W/call$c/stdout.txt 2>&1
  echo "== call$c rc=$?"; tail -30 $W/call$c/log.txt 2>/dev/null
done
tar czf $OUT/next.tgz -C $W .
