# Session 26, call 11: the engine's suites on the card at the session's last code (CUDA live where a
# test opens it), the pinned upload's test, the tiny fixtures' greedy tokens against transformers
# (fp16) and the memory-pressure checks.
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-06-h100-s26/call11.sh
source bench/results/2026-12-05-h200-s21/prep.sh
W=$OUT; HY=build-gpu/src/cli/hyocr
timeout 200 meson test -C build-gpu --no-rebuild --num-processes 8 decode engine batch image tuning memplan \
  > $W/meson.txt 2>&1; grep -E "^ *[0-9]+/[0-9]+ |^Ok:|^Fail:" $W/meson.txt
timeout 60 build-gpu/tests/test-backend-cuda -p /backend-cuda/f16/upload_large -p /backend-cuda/bf16/upload_large \
  2>&1 | grep -E "^(ok|not ok)"
timeout 120 python3 tests/gpu/tiny_parity.py $HY tests/data f16 2>&1 | tee $W/tiny-f16.txt | tail -3
