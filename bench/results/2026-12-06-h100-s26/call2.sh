# Session 26, call 2 (call 1 was session 24's next.sh: its logprobs-op test stopped at the test's
# own -inf comparison). From the repository root:
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-06-h100-s26/call2.sh
source bench/results/2026-12-05-h200-s21/prep.sh
W=$OUT; HY=build-gpu/src/cli/hyocr
nvidia-smi --query-gpu=name --format=csv,noheader | tee $W/gpu.txt
# the CUDA op against the host's rules, then every decode test on the card
timeout 150 build-gpu/tests/test-decode > $W/test-decode.txt 2>&1; echo "test-decode: exit $?" | tee -a $W/test-decode.txt
grep -E "^(ok|not ok)|sampled rows" $W/test-decode.txt | tail -30
# the engine's tests with the device's log-probabilities on (the CUDA engine where a test opens one)
HYOCR_PICK_LOGPROBS=1 timeout 200 meson test -C build-gpu --no-rebuild --num-processes 8 decode engine batch \
  > $W/meson-lp.txt 2>&1; grep -E "^ *[0-9]+/[0-9]+ |^Ok:|^Fail:" $W/meson-lp.txt
# a step's ops one by one (no graph), 16 pages at once and one at a time
for mb in 16 1; do
  HYOCR_NO_GRAPH=1 HYOCR_PROFILE=1 timeout 60 $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_1024.png \
    --task recognize --device cuda --repeat 16 --max-batch $mb --warmup --max-new-tokens 256 --ignore-eos \
    --no-tail-stop --format jsonl > /dev/null 2> $W/prof-nograph-$mb.txt
  head -45 $W/prof-nograph-$mb.txt
done
