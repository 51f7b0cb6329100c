# Session 29, call 1: at k_prefill_tma launched — the CUDA tests (backend-cuda, decode, batch,
# tuning), full-size parity at three sizes and the tiny fixtures (s28's call7.sh), then
# prefill_bench with the overlap variant's "TMA o" rows (s28's call8.sh; built while the tests run).
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-06-s29/call1.sh
T0=$(date +%s)
source bench/results/2026-12-05-h200-s21/prep.sh
W=${OUT:-/tmp/s29}/call1; mkdir -p $W
nvidia-smi --query-gpu=name --format=csv,noheader | tee $W/gpu.txt
( nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Ikernels bench/prefill_bench.cu -o /tmp/pb \
    -Xptxas -v > $W/pb-build.log 2>&1 || tail -5 $W/pb-build.log ) &
echo "[$(( $(date +%s) - T0 )) s] === tests"
timeout 150 meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 4 backend-cuda decode batch tuning \
    > $W/tests.txt 2>&1; echo "tests exit $?"; grep -E "^ *[0-9]+/[0-9]+ |Ok:|Fail:|Skipped:|Timeout:" $W/tests.txt | tail -8
gzip -c build-gpu/meson-logs/testlog.txt > $W/testlog.txt.gz 2>/dev/null
echo "[$(( $(date +%s) - T0 )) s] === parity"
HYOCR_VISION_STEPS=parity HYOCR_PARITY_SIZES="1024 2048 4096" OUT=$W/parity timeout 170 bash tests/gpu/vision.sh 2>&1 | tail -14
wait
echo "[$(( $(date +%s) - T0 )) s] === prefill_bench (overlap variant)"
grep -c C7520 $W/pb-build.log
for t in f16 bf16; do timeout 70 /tmp/pb $t > $W/prefill-bench-$t.txt 2>&1; echo "prefill_bench $t exit $?"; done
grep -E "^total (TMA|MW1 s4 )|^PASS|^FAIL|^CHOICE" $W/prefill-bench-f16.txt
grep -E "^PASS|^FAIL|^CHOICE|^total TMA( o)? " $W/prefill-bench-bf16.txt
echo "[$(( $(date +%s) - T0 )) s] done"
