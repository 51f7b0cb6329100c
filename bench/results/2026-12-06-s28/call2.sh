# Session 28, call 2: k_prefill_tma (the prefill's paged attention on TMA + wgmma, HYOCR_PREFILL_TMA=1)
# against k_prefill: prefill_bench (f16, bf16; the NaN-poisoned tail slot), the CUDA paged-prefill
# tests (every kernel direct, split and unsplit, NaN in every unwritten cache slot; a backend with
# the switch on), then warm pages alternated with and without it; flash_bench's k_vis_tma rows last.
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-06-s28/call2.sh
source bench/results/2026-12-05-h200-s21/prep.sh
W=${OUT:-/tmp/s28}/call2; mkdir -p $W; HY=build-gpu/src/cli/hyocr
nvidia-smi --query-gpu=name --format=csv,noheader | tee $W/gpu.txt
echo "=== prefill_bench"
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Ikernels bench/prefill_bench.cu -o /tmp/pb \
    -Xptxas -v > $W/pb-build.log 2>&1 || tail -5 $W/pb-build.log
grep -c C7520 $W/pb-build.log
for t in f16 bf16; do timeout 90 /tmp/pb $t > $W/prefill-bench-$t.txt 2>&1; echo "prefill_bench $t exit $?"; done
grep -E "^total|^PASS|^FAIL|^CHOICE|^the engine|!|k_prefill_tma" $W/prefill-bench-f16.txt | head -40
grep -E "^PASS|^FAIL|^CHOICE|^total (TMA|W4|MW1 s4)" $W/prefill-bench-bf16.txt
echo "=== tests"
timeout 200 build-gpu/tests/test-backend-cuda --verbose -p /backend-cuda/f16/paged_prefill -p /backend-cuda/bf16/paged_prefill \
    > $W/tests.txt 2>&1; echo "tests exit $?"
grep -E "^(ok|not ok)|ERROR|FAIL|Bail" $W/tests.txt | head; grep -c "split - unsplit" $W/tests.txt
echo "=== warm pages (first token/vision/prefill ms), HYOCR_PREFILL_TMA=0 then 1, twice"
for rep in 1 2; do for sw in 0 1; do for size in 1024 2048 4096; do
  n=$([ $size = 4096 ] && echo 3 || echo 4)
  HYOCR_PREFILL_TMA=$sw timeout 120 $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_$size.png --task recognize \
    --device cuda --repeat $n --max-batch 1 --max-new-tokens 1 --ignore-eos --no-tail-stop --format json 2>/dev/null |
  python3 -c "import json,sys; r=json.load(sys.stdin)[1:]; print('ptma=$sw $size:', ' '.join('%.2f/%.2f/%.2f' % (j['timings']['first_token_ms'], j['timings']['vision_ms'], j['timings']['prefill_ms']) for j in r))"
done; done; done | tee $W/warm.txt
echo "=== flash_bench (k_vis_tma rows)"
nvcc -O3 -std=c++17 -DFB_VIS_TMA -gencode=arch=compute_90a,code=sm_90a -Ikernels bench/flash_bench.cu \
    -o /tmp/fb-tma >$W/fb-build.log 2>&1 || tail -5 $W/fb-build.log
timeout 100 stdbuf -oL /tmp/fb-tma > $W/flash-bench.txt 2>&1; echo "flash_bench exit $?"
grep -E "^(f16|bf16) n=(4096|16384)|TFLOP|FAIL|CHOICE" $W/flash-bench.txt | grep -v "^  old\|W4 MW2" | head -40
