# Session 31, call 2 — never ran (no machine; its steps also closed call1.sh). It forces 3 and 4
# groups, which need dc61618's kernels. (After call1 on a warm machine: build-gpu, /tmp/hy-full, /tmp/hyocr-img made):
# 16 concurrent 1024² pages (256 tokens each, ignore_eos, a warm engine) with the card's rule for
# hk_gemm_rows's column groups against 3 and 4 forced (HYOCR_ROWS_WIDE), alternated; then session
# 30's call5 (the prompt's chunk against the prefill and the peak, ROUNDS=1).
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-07-s31/call2.sh
T0=$(date +%s)
source bench/results/2026-12-05-h200-s21/prep.sh
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
for round in 1 2; do for wide in 0 3 4; do
    HYOCR_ROWS_WIDE=$wide timeout 60 build-gpu/src/cli/hyocr run --model /tmp/hy-full --image /tmp/hyocr-img/page_1024.png \
        --task recognize --device cuda --repeat 16 --max-batch 16 --warmup --max-new-tokens 256 --ignore-eos \
        --no-tail-stop --format jsonl 2>&1 >/dev/null | grep -o "[0-9.]* tokens/s" | tail -1 | sed "s/^/wide $wide: /"
done; done
echo "[$(( $(date +%s) - T0 )) s] === call5"
ROUNDS=1 bash bench/results/2026-12-06-s30/call5.sh
echo "[$(( $(date +%s) - T0 )) s] call2 done"
