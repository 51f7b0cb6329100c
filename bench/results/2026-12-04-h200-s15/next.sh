# Session 15's two planned calls in one device call (~7 of its 10 minutes, one build): call1
# (HYOCR_UPLOAD_U8) and call2 (HYOCR_VIS_WG2). Run after session 14's next.sh (its call9 says
# whether call2 is worth it; call2 costs ~4 minutes: NEXT_CALLS="1" skips it).
# From the repository root, on the GPU machine:
#   source .device/setup.sh >/dev/null && bash bench/results/2026-12-04-h200-s15/next.sh
# Every call's files go into $OUT/next.tgz (one file back), its log's last lines to stdout.
set -u
D=bench/results/2026-12-04-h200-s15
W=/tmp/s15next
rm -rf $W && mkdir -p $W
for c in ${NEXT_CALLS:-1 2}; do
  mkdir -p $W/call$c
  OUT=$W/call$c timeout 290 bash $D/call$c/run0$c.sh > $W/call$c/stdout.txt 2>&1
  echo "== call$c rc=$?"; tail -30 $W/call$c/log.txt 2>/dev/null
done
tar czf $OUT/next.tgz -C $W .
