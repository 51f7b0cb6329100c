# The three planned calls of session 14 in one device call (~7 of its 10 minutes): call9 (k_vis_wg2,
# flash_bench only), call8 (HYOCR_ORDERED_ALLOC=1: tests, A/B, peak), call7 (HYOCR_VIT_CHUNK_ROWS).
# From the repository root, on the GPU machine:
#   source .device/setup.sh >/dev/null && bash bench/results/2026-12-04-h200-s14/next.sh
# Every call's files go into $OUT/next.tgz (one file back), its log's last lines to stdout.
set -u
D=bench/results/2026-12-04-h200-s14
W=/tmp/s14next
rm -rf $W && mkdir -p $W
for c in 9 8 7; do
  mkdir -p $W/call$c
  OUT=$W/call$c timeout 240 bash $D/call$c/run0$c.sh > $W/call$c/stdout.txt 2>&1
  echo "== call$c rc=$?"; tail -25 $W/call$c/log.txt 2>/dev/null
done
tar czf $OUT/next.tgz -C $W .
