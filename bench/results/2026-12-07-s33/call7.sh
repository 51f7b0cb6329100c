# Session 33, call 7: the host's time between op calls (HYOCR_PROFILE's new third table) in 16
# concurrent 1024² pages — which code the card's idle time before each page's pixels and prompt is.
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-07-s33/call7.sh
export OUT=${OUT:-/tmp/s33} PATH=/usr/local/cuda/bin:$PATH
W=$OUT/call7; mkdir -p $W; HY=build-gpu/src/cli/hyocr
source bench/results/2026-12-05-h200-s21/prep.sh > $W/prep.txt 2>&1; echo "prep exit $?"
RUN="$HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_1024.png --task recognize --device cuda --warmup --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl"
HYOCR_PROFILE=1 timeout 60 $RUN --repeat 16 --max-batch 16 > /dev/null 2> $W/prof16.txt; head -1 $W/prof16.txt
grep -A12 "idle before each op" $W/prof16.txt; grep -A45 "the host between" $W/prof16.txt
HYOCR_PROFILE=1 timeout 60 $RUN --repeat 4 --max-batch 1 > /dev/null 2> $W/prof1.txt; head -1 $W/prof1.txt
grep -A25 "the host between" $W/prof1.txt
