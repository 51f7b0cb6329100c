# Session 31, call 1 — never ran: no machine came in twelve starts. Run it after `git revert
# cdc9d93` (dc61618's hk_gemm_rows with 3 and 4 column groups, reverted for want of a card), with
# the benches' binaries in .device/bin (README.md). It measures: call3.sh's benches with a wider
# sweep (the heads-fast decode grid, blocks scattered and in order; 1–4 column groups on the step's
# products and the head); the build and the CUDA suites (the layout test covers every group
# count); 16 concurrent 1024² pages with the card's rule against 3 and 4 groups forced; session
# 30's call5 (the prompt's chunk against the prefill and the peak) as time allows.
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-07-s31/call1.sh
T0=$(date +%s)
export OUT=${OUT:-/tmp/s31} PATH=/usr/local/cuda/bin:$PATH
W=$OUT/call1; mkdir -p $W
(source bench/results/2026-12-05-h200-s21/prep.sh > $W/prep.txt 2>&1; echo "prep exit $?" >> $W/prep.txt) &
HK_BENCH_ROWS=1,8,16 HK_BENCH_CTX=1087,1215,4191 bash bench/results/2026-12-07-s31/call3.sh
wait; tail -3 $W/prep.txt
echo "[$(( $(date +%s) - T0 )) s] === tests"
timeout 200 meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 4 backend-cuda decode batch tuning \
    > $W/tests.txt 2>&1; echo "tests exit $?"; grep -E "^ *[0-9]+/[0-9]+ |Ok:|Fail:" $W/tests.txt | tail -6
grep -E "layout|FAIL|not ok" $W/tests.txt | head -10
[ $(( $(date +%s) - T0 )) -lt 420 ] && for wide in 0 3 4 0; do
    HYOCR_ROWS_WIDE=$wide timeout 40 build-gpu/src/cli/hyocr run --model /tmp/hy-full --image /tmp/hyocr-img/page_1024.png \
        --task recognize --device cuda --repeat 16 --max-batch 16 --warmup --max-new-tokens 256 --ignore-eos \
        --no-tail-stop --format jsonl 2>&1 >/dev/null | grep -o "[0-9.]* tokens/s" | tail -1 | sed "s/^/wide $wide: /"
done
[ $(( $(date +%s) - T0 )) -lt 480 ] && ROUNDS=1 SIZES=2048 timeout $(( 585 - ($(date +%s) - T0) )) bash bench/results/2026-12-06-s30/call5.sh
echo "[$(( $(date +%s) - T0 )) s] call1 done"
