# Session 33, call 9: HYOCR_POOL_KEEP again, now with the host's table (call7: ~20–27 µs in each
# allocation and free, 55 frees and 23 allocations a page) — 16 concurrent 1024² pages, keep 0/1
# alternated, four rounds, then each under HYOCR_PROFILE; the CUDA suites with it exported.
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-07-s33/call9.sh
T0=$(date +%s)
export OUT=${OUT:-/tmp/s33} PATH=/usr/local/cuda/bin:$PATH
W=$OUT/call9; mkdir -p $W; HY=build-gpu/src/cli/hyocr
source bench/results/2026-12-05-h200-s21/prep.sh > $W/prep.txt 2>&1; echo "prep exit $?"
RUN="$HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_1024.png --task recognize --device cuda --repeat 16 --max-batch 16 --warmup --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl"
source bench/results/2026-12-07-s33/sixteen.sh
for rep in 1 2 3 4; do for k in 0 1; do echo "keep $k: $(HYOCR_POOL_KEEP=$k sixteen)"; done; done | tee $W/keep.txt
for k in 0 1; do
    HYOCR_POOL_KEEP=$k HYOCR_PROFILE=1 timeout 60 $RUN > /dev/null 2> $W/prof-keep$k.txt
    echo "== keep $k"; grep -A4 "idle before each op" $W/prof-keep$k.txt | tail -3
    grep -E "host (in alloc|in buf_free|in sync|in mem_info|sync -> alloc|buf_free -> sync) " $W/prof-keep$k.txt
done
echo "[$(( $(date +%s) - T0 )) s] === tests (HYOCR_POOL_KEEP=1)"
HYOCR_POOL_KEEP=1 timeout 240 meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 4 backend-cuda decode batch tuning \
    > $W/tests.txt 2>&1; echo "tests exit $?"; grep -E "Ok:|Fail:" $W/tests.txt
gzip -f $W/prof-keep*.txt; rm -f $W/r.jsonl $W/r.err
echo "[$(( $(date +%s) - T0 )) s] call9 done"
