# Session 27, call 1: k_vis_tma (TMA copies, a copier warp, ping-pong warpgroups) against the
# launched k_vis_wg in flash_bench (-DFB_VIS_TMA), from the repository root:
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-06-h100-s27/call1.sh
set -uo pipefail
OUT=${OUT:-/tmp/s27}/${CALL:-call1}
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
nvcc -O3 -std=c++17 -DFB_VIS_TMA -gencode=arch=compute_90a,code=sm_90a -Ikernels bench/flash_bench.cu \
    -o /tmp/fb-tma -Xptxas -v >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
grep -E -A4 "Compiling entry function '_Z9k_vis_tma" "$OUT/build.log" | grep -E "Used|spill" | paste - - | head -20
timeout 300 stdbuf -oL /tmp/fb-tma >"$OUT/flash-bench.txt" 2>&1
echo "flash_bench exit $?"
grep -E "FAIL|CHOICE|TFLOP|n=16384|n=4096 " "$OUT/flash-bench.txt" | head -60
grep -c PASS "$OUT/flash-bench.txt"
grep -B1 FAIL "$OUT/flash-bench.txt" | head -20
tail -5 "$OUT/flash-bench.txt"
