# Session 30, call 5: the prompt's chunk (HYOCR_TEXT_CHUNK_ROWS) against the prefill and the peak
# at today's kernels (session 6 measured it last: 2048² one pass 28.4 against 39.7 ms, +124 MB):
# what the prefill ≤ 15 ms row would cost the 2.4 GiB row. Warm second job, 256 new tokens,
# 2048² and 4096², chunks of 1024 (the default), 2048, 4096 and 8192 rows, two rounds alternated
# (ROUNDS=1 for a short budget).
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-06-s30/call5.sh
T0=$(date +%s)
source bench/results/2026-12-05-h200-s21/prep.sh
nvidia-smi --query-gpu=name --format=csv,noheader
for round in $(seq ${ROUNDS:-2}); do for size in ${SIZES:-2048 4096}; do for rows in 1024 2048 4096 8192; do
    HYOCR_TEXT_CHUNK_ROWS=$rows timeout 60 build-gpu/src/cli/hyocr run --model /tmp/hy-full \
        --image /tmp/hyocr-img/page_$size.png --task recognize --device cuda --repeat 2 --max-batch 1 \
        --max-new-tokens 256 --ignore-eos --no-tail-stop --format json 2>/dev/null |
    python3 -c "import json,sys; x=json.load(sys.stdin)[1]; t=x['timings']; print('$size $rows: first %.1f vision %.1f prefill %.1f decode %.1f peak %d' % (t['first_token_ms'], t['vision_ms'], t['prefill_ms'], t['decode_tokens_per_s'], x['memory']['peak']))"
done; done; done
echo "[$(( $(date +%s) - T0 )) s] done"
