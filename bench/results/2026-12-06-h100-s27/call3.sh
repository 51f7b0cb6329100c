# Session 27, call 3: k_vis_tma launched (HK_VIS_TMA, the default; HYOCR_VIS_TMA=0 gives k_vis_wg):
# its GPU tests, warm pages' vision with each kernel (alternated), full-size parity at three sizes;
# first flash_bench's k_vis_tma rows again (the overlapped schedule no longer serialised, turns off).
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-06-h100-s27/call3.sh
source bench/results/2026-12-05-h200-s21/prep.sh
W=${OUT:-/tmp/s27}/call3; mkdir -p $W; HY=build-gpu/src/cli/hyocr
nvidia-smi --query-gpu=name --format=csv,noheader
echo "=== flash_bench"
nvcc -O3 -std=c++17 -DFB_VIS_TMA -gencode=arch=compute_90a,code=sm_90a -Ikernels bench/flash_bench.cu \
    -o /tmp/fb-tma -Xptxas -v >$W/fb-build.log 2>&1 || tail -5 $W/fb-build.log
timeout 200 stdbuf -oL /tmp/fb-tma > $W/flash-bench.txt 2>&1; echo "flash_bench exit $?"
grep -E "^(f16|bf16) n=(4096|16384)|TFLOP|FAIL|CHOICE" $W/flash-bench.txt | grep -v "^  old\|W4 MW2" | head -48
echo "=== GPU tests"
t=build-gpu/tests/test-backend-cuda
timeout 300 $t --verbose -p /backend-cuda/f16/attention_full_wgmma -p /backend-cuda/bf16/attention_full_wgmma \
  -p /backend-cuda/f16/attention_full_softmax -p /backend-cuda/bf16/attention_full_softmax \
  -p /backend-cuda/f16/attention_full -p /backend-cuda/bf16/attention_full > $W/tests.txt 2>&1
echo "tests exit $?"; grep -E "^(ok|not ok)|vs mma|Bail|ERROR|FAIL" $W/tests.txt | grep -E "not ok|ERROR|FAIL|Bail|16384" | head; grep -c "^ok" $W/tests.txt
HYOCR_BENCH=1 timeout 120 $t -p /backend-cuda/f16/bench 2>&1 | grep attention_full | tee $W/bench-full.txt
echo "=== warm pages (ms first token/vision/prefill), HYOCR_VIS_TMA=0 then default, twice"
for rep in 1 2; do for sw in 0 1; do for size in 1024 2048 4096; do
  n=$([ $size = 4096 ] && echo 3 || echo 4)
  HYOCR_VIS_TMA=$sw timeout 120 $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_$size.png --task recognize \
    --device cuda --repeat $n --max-batch 1 --max-new-tokens 1 --ignore-eos --no-tail-stop --format json 2>/dev/null |
  python3 -c "import json,sys; r=json.load(sys.stdin)[1:]; print('tma=$sw $size:', ' '.join('%.2f/%.2f/%.2f' % (j['timings']['first_token_ms'], j['timings']['vision_ms'], j['timings']['prefill_ms']) for j in r))"
done; done; done | tee $W/warm.txt
echo "=== parity"
HYOCR_VISION_STEPS=parity HYOCR_PARITY_SIZES="1024 2048 4096" OUT=$W/parity timeout 400 bash tests/gpu/vision.sh 2>&1 | tail -12
