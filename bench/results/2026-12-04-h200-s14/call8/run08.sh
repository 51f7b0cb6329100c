# s14 call8 (planned; no machine was lent after call6): HYOCR_ORDERED_ALLOC=1 — the main lane's
# activations from the stream-ordered allocator — its GPU tests, then its time against the default.
# From the repository root: cp this to .device/run08.sh; source .device/setup.sh >/dev/null && bash .device/run08.sh
source bench/results/2026-12-04-h200-s14/pre.sh
build-gpu/tests/test-backend-cuda -p /backend-cuda/f16/ordered_alloc -p /backend-cuda/bf16/ordered_alloc > $OUT/ordered-test.txt 2>&1
echo "ordered_alloc test rc=$?" >> $L
HYOCR_ORDERED_ALLOC=1 meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 4 backend-cuda decode batch > $OUT/tests-on.txt 2>&1
echo "GPU suites with the switch on rc=$? at $(( $(date +%s) - T0 )) s" >> $L
ab HYOCR_ORDERED_ALLOC "1024 5" "2048 3"
# the peak of record's job (2048² + 256 tokens) with the switch on: the engine's count, and the card's
HYOCR_ORDERED_ALLOC=1 $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_2048.png --task recognize --device cuda --max-batch 1 \
  --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl > /tmp/o.jsonl 2>/dev/null &
pid=$!; mx=0; while kill -0 $pid 2>/dev/null; do u=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1); [ "$u" -gt "$mx" ] && mx=$u; sleep 0.05; done
show /tmp/o.jsonl 1 2048-256 >> $L; echo "nvidia-smi max used ${mx} MiB" >> $L
echo "all at $(( $(date +%s) - T0 )) s" >> $L
cat $L
