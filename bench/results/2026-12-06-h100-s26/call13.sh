# Session 26, call 13: hyocr serve with the pinned pool off and on, on one machine (call12's
# one-client first token, 38 ms, was above call7's 32–33 on another machine).
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-06-h100-s26/call13.sh
source bench/results/2026-12-05-h200-s21/prep.sh
for sw in 0 1; do
  HYOCR_PINNED_PIXELS=$sw OUT=$OUT/pinned$sw timeout 60 bash bench/serve-bench.sh > $OUT/serve$sw.txt 2>&1
  echo "HYOCR_PINNED_PIXELS=$sw"; grep -E "^\| (1|4|16|64) \||quick9-c1" $OUT/serve$sw.txt
done
