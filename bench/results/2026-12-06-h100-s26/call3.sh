# Session 26, call 3: prefetched pages' pixels in pinned memory (pinned.h, HYOCR_PINNED_PIXELS):
# the tests on the card, then the A/B, alternated. From the repository root:
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-06-h100-s26/call3.sh
source bench/results/2026-12-05-h200-s21/prep.sh
W=$OUT; HY=build-gpu/src/cli/hyocr
nvidia-smi --query-gpu=name --format=csv,noheader | tee $W/gpu.txt
timeout 120 build-gpu/tests/test-backend-cuda -p /backend-cuda/f16/upload_large -p /backend-cuda/bf16/upload_large \
  > $W/tests.txt 2>&1; echo "upload_large: exit $?" >> $W/tests.txt
timeout 60 build-gpu/tests/test-image > $W/test-image.txt 2>&1; echo "test-image: exit $?" >> $W/test-image.txt
grep -E "^(ok|not ok)|exit" $W/tests.txt; tail -1 $W/test-image.txt
# one page at a time: jobs 2..4 of 4 (job 1 has no prefetch), first token / vision / prefill ms
warm() {   # $1 size, $2 switch
  HYOCR_PINNED_PIXELS=$2 timeout 60 $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_$1.png --task recognize \
    --device cuda --repeat 4 --max-batch 1 --max-new-tokens 16 --ignore-eos --no-tail-stop --format json 2>/dev/null |
  python3 -c "import json,sys; r=json.load(sys.stdin)[1:]; print('$1 pinned=$2', ' '.join('%.2f/%.2f/%.2f' % (j['timings']['first_token_ms'], j['timings']['vision_ms'], j['timings']['prefill_ms']) for j in r))"
}
for rep in 1 2; do for size in 1024 2048 4096; do warm $size 0; warm $size 1; done; done | tee $W/warm.txt
for rep in 1 2; do for sw in 0 1; do
  HYOCR_PINNED_PIXELS=$sw timeout 60 $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_1024.png --task recognize \
    --device cuda --repeat 16 --max-batch 16 --warmup --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl \
    > /dev/null 2> $W/c16.err; echo "16 concurrent, pinned=$sw: $(tail -1 $W/c16.err)"
done; done | tee $W/c16.txt
HYOCR_PROFILE=1 timeout 60 $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_1024.png --task recognize \
    --device cuda --repeat 16 --max-batch 16 --warmup --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl \
    > /dev/null 2> $W/prof16.txt; grep -E "idle before (upload|embed|graph)|upload_f32 " $W/prof16.txt
