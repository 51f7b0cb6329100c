# Session 31, call 1 — never ran: no machine came in twelve starts. It needs dc61618's kernels
# (hk_gemm_rows with 3 and 4 column groups, reverted in cdc9d93 for want of a card).
# What it measures: the decode attention's grid with the heads of a split side by side
# (decode_bench built with -DHK_DECODE_HEADS_FAST) against today's, blocks scattered and in order;
# hk_gemm_rows with 3 and 4 column groups a CTA (gemm_rows_bench); then the build and the CUDA
# suites (the layout test now covers 1–4 groups). The benches' binaries were built on the
# development machine at this commit and carried in .device/bin (nvcc lines in the benches' heads).
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-07-s31/call1.sh
T0=$(date +%s)
export OUT=${OUT:-/tmp/s31} PATH=/usr/local/cuda/bin:$PATH
W=$OUT/call1; mkdir -p $W
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
(source bench/results/2026-12-05-h200-s21/prep.sh > $W/prep.txt 2>&1; echo "prep exit $?" >> $W/prep.txt) &
for ord in "" 1; do for b in decode-bench decode-bench-hf; do
    echo "=== $b ordered=${ord:-0}"
    HK_BENCH_ORDERED=$ord HK_BENCH_ROWS=1,8,16 HK_BENCH_CTX=1087,1215,4191 HK_BENCH_SPLITS=0,448 HK_BENCH_STAGES=0,2 \
        timeout 120 .device/bin/$b 2>&1 | tee $W/$b-$ord.txt | tail -n +1 | head -40
done; done
echo "[$(( $(date +%s) - T0 )) s] === gemm_rows_bench"
timeout 120 .device/bin/gemm-rows-bench 2>&1 | tee $W/gemm-rows.txt
wait; cat $W/prep.txt | tail -3
echo "[$(( $(date +%s) - T0 )) s] === tests"
timeout 200 meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 4 backend-cuda decode batch tuning \
    > $W/tests.txt 2>&1; echo "tests exit $?"; grep -E "^ *[0-9]+/[0-9]+ |Ok:|Fail:" $W/tests.txt | tail -6
grep -E "layout|FAIL|not ok" $W/tests.txt | head -10
echo "[$(( $(date +%s) - T0 )) s] call1 done"
# the rest while the machine is held (call2.sh's steps, as time allows)
[ $(( $(date +%s) - T0 )) -lt 420 ] && for wide in 0 3 4 0; do
    HYOCR_ROWS_WIDE=$wide timeout 40 build-gpu/src/cli/hyocr run --model /tmp/hy-full --image /tmp/hyocr-img/page_1024.png \
        --task recognize --device cuda --repeat 16 --max-batch 16 --warmup --max-new-tokens 256 --ignore-eos \
        --no-tail-stop --format jsonl 2>&1 >/dev/null | grep -o "[0-9.]* tokens/s" | tail -1 | sed "s/^/wide $wide: /"
done
echo "[$(( $(date +%s) - T0 )) s] wide done"
[ $(( $(date +%s) - T0 )) -lt 480 ] && ROUNDS=1 SIZES=2048 timeout $(( 585 - ($(date +%s) - T0) )) bash bench/results/2026-12-06-s30/call5.sh
echo "[$(( $(date +%s) - T0 )) s] all done"
