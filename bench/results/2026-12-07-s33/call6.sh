# Session 33, call 6: where the host keeps the card idle between pages (s32 on the H200: ~655 µs before
# each page's pixels, ~508 µs before its prompt's embedding) — 16 concurrent 1024² pages under
# HYOCR_PROFILE (the idle table) and, where the machine has it, Nsight Systems (the CUDA API calls
# on the host's time line and CPU samples).
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-07-s33/call6.sh
T0=$(date +%s)
export OUT=${OUT:-/tmp/s33} PATH=/usr/local/cuda/bin:$PATH
W=$OUT/call6; mkdir -p $W; HY=build-gpu/src/cli/hyocr
source bench/results/2026-12-05-h200-s21/prep.sh > $W/prep.txt 2>&1; echo "prep exit $?"
echo "nsys: $(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems*/bin/nsys 2>/dev/null | head -1)"
echo "perf: $(command -v perf)"
RUN="$HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_1024.png --task recognize --device cuda --repeat 16 --max-batch 16 --warmup --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl"
HYOCR_PROFILE=1 timeout 60 $RUN > /dev/null 2> $W/prof16.txt; head -1 $W/prof16.txt; grep -A8 "idle before each op" $W/prof16.txt
NSYS=$(command -v nsys || ls /opt/nvidia/nsight-systems*/bin/nsys 2>/dev/null | head -1)
if [ -n "$NSYS" ]; then
    timeout 200 $NSYS profile -o $W/p16 --force-overwrite true --trace=cuda,osrt --sample=cpu --cpuctxsw=none $RUN > /dev/null 2> $W/nsys.txt
    echo "nsys exit $?"; tail -3 $W/nsys.txt
    timeout 200 $NSYS stats -q -f csv -o $W/st -r cuda_api_trace $W/p16.nsys-rep > /dev/null 2>&1; echo "stats exit $?"
    ls $W; gzip -f $W/st*.csv; rm -f $W/p16.sqlite
fi
gzip -f $W/prof16.txt
echo "[$(( $(date +%s) - T0 )) s] call6 done"
