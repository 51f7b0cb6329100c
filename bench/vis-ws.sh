#!/bin/bash
# The warp-specialised Hopper vision attention (k_vis_ws, HYOCR_VIS_WS=1; issue 17) on the GPU
# machine, from the repository root:
#   source .device/setup.sh && OUT=/some/dir bench/vis-ws.sh
# 1. bench/flash_bench.cu: every head_dim-72 variant, old and new side by side (µs, TFLOP/s at
#    4096, 4200 and 16384 patches, H = 16); the ws… rows are also held to test-backend-cuda's bars
#    against the mma.sync kernel ("vs mma" lines); exit 1 and FAIL lines when a variant is over;
# 2. test-backend-cuda's attention_full_ws (the launched ws variant against mma.sync at 1 to
#    16384 patches, fp16 and bf16) and attention_full_wgmma, verbose (max |Δ| and rel-L2 a size);
# 3. HYOCR_VIS_WS_E2E=1: one 2048² page through the engine, the wgmma kernel then the ws one
#    (HYOCR_PROFILE tables; the vision attention row is "attention_full").
# A kernel that hangs is cut by the timeouts (flash 300 s, tests 600 s).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/hyocr-vis-ws}
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
echo "=== flash_bench"
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Ikernels bench/flash_bench.cu -o /tmp/flash-bench \
    -Xptxas -v >"$OUT/flash-build.log" 2>&1 || { tail -20 "$OUT/flash-build.log"; exit 1; }
grep -A3 "entry function '_Z8k_vis_ws" "$OUT/flash-build.log" | grep -E "spill|Used" | sort | uniq -c
timeout 300 /tmp/flash-bench >"$OUT/flash-bench.txt" 2>&1
echo "flash_bench exit $?"
grep -E "^(f16|bf16) n=(4096|4200|16384)|us |FAIL|CHOICE" "$OUT/flash-bench.txt"
echo "=== test-backend-cuda attention_full_ws / attention_full_wgmma"
if [ ! -f build-gpu/build.ninja ]; then
    meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=disabled \
        --buildtype=release >"$OUT/setup.log" 2>&1 || { tail -30 "$OUT/setup.log"; exit 1; }
fi
ninja -C build-gpu tests/test-backend-cuda src/cli/hyocr >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
timeout 600 build-gpu/tests/test-backend-cuda -p /backend-cuda/f16/attention_full_ws -p /backend-cuda/bf16/attention_full_ws \
    -p /backend-cuda/f16/attention_full_wgmma -p /backend-cuda/bf16/attention_full_wgmma \
    --verbose >"$OUT/ws-test.txt" 2>&1
echo "test-backend-cuda exit $?"
grep -E "vs mma.sync|^ok|^not ok|SKIP|ERROR|Bail" "$OUT/ws-test.txt"
if [ -n "${HYOCR_VIS_WS_E2E:-}" ]; then
    echo "=== engine, 2048² page: wgmma then ws"
    CKPT=${HYOCR_BENCH_CKPT:-/tmp/hy-full}
    [ -f "$CKPT/model.safetensors" ] || python3 bench/make_random_checkpoint.py "$CKPT" >"$OUT/ckpt.log" 2>&1
    [ -f /tmp/hyocr-img/page_2048.png ] || python3 bench/make_images.py /tmp/hyocr-img >/dev/null
    for ws in 0 1; do
        HYOCR_VIS_WS=$ws HYOCR_PROFILE=1 build-gpu/src/cli/hyocr run --device cuda --model "$CKPT" \
            --image /tmp/hyocr-img/page_2048.png --task recognize --repeat 2 --max-new-tokens 8 --ignore-eos \
            --format json >"$OUT/e2e-ws$ws.json" 2>"$OUT/e2e-ws$ws.txt" || echo "engine run HYOCR_VIS_WS=$ws failed"
        echo "HYOCR_VIS_WS=$ws:"; grep -E "attention_full|vision" "$OUT/e2e-ws$ws.txt" | head -4
    done
fi
