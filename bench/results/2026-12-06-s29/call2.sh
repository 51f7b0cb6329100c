# Session 29, call 2: bench/kv_prefetch_bench.cu (the next layer's cache into the L2 from the
# decode attention: does it pay?); the CUDA tests again with paged_spare following k_prefill_tma's split rule
# (call1's backend-cuda stopped at its old expectation), then the benchmark of record
# (bench/record.sh PART=2: gpu-bench without transformers, serve-bench), then HYOCR_VISION_BESIDE
# off against on (bench/beside-ab.sh) at today's faster vision.
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-06-s29/call2.sh
T0=$(date +%s)
source bench/results/2026-12-05-h200-s21/prep.sh
W=${OUT:-/tmp/s29}/call2; mkdir -p $W
nvidia-smi --query-gpu=name --format=csv,noheader | tee $W/gpu.txt
( nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Ikernels bench/kv_prefetch_bench.cu -o /tmp/kvpf \
    > $W/kvpf-build.log 2>&1 || tail -5 $W/kvpf-build.log ) &
echo "[$(( $(date +%s) - T0 )) s] === tests"
timeout 150 meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 4 backend-cuda decode batch tuning \
    > $W/tests.txt 2>&1; echo "tests exit $?"; grep -E "^ *[0-9]+/[0-9]+ |Ok:|Fail:|Skipped:|Timeout:" $W/tests.txt | tail -8
grep -E "^not ok|Bail" build-gpu/meson-logs/testlog.txt | head; grep -c "^ok" build-gpu/meson-logs/testlog.txt
gzip -c build-gpu/meson-logs/testlog.txt > $W/testlog.txt.gz 2>/dev/null
wait
echo "[$(( $(date +%s) - T0 )) s] === kv_prefetch_bench"
timeout 120 /tmp/kvpf > $W/kvpf.txt 2>&1; echo "kvpf exit $?"; cat $W/kvpf.txt
echo "[$(( $(date +%s) - T0 )) s] === record"
OUT=$W/record PART=2 HYOCR_RECORD_SECONDS=300 bash bench/record.sh
tar xzf $W/record/gpu-bench.tgz -C /tmp; cat /tmp/gpu-bench/*.md 2>/dev/null | tail -30
tail -30 $W/record/gpu-bench.txt; tail -25 $W/record/serve-bench.txt; cat $W/record/log.txt
echo "[$(( $(date +%s) - T0 )) s] === beside-ab (5 rounds)"
OUT=$W/beside-ab timeout 150 bash bench/beside-ab.sh 2>&1 | tail -5
rm -rf $W/beside-ab/img $W/beside-ab/run*.out
echo "[$(( $(date +%s) - T0 )) s] done"
