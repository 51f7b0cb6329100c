#!/bin/bash
# k_vis_wg's lazy rescale (launched; HYOCR_VIS_LAZY_RESCALE=0: O, l and the row max rescaled at
# every key tile, the mma.sync kernel's arithmetic) on the GPU machine, from the repository root:
#   OUT=/some/dir bench/vis-lazy.sh           (about 2 minutes; HYOCR_VIS_E2E=1: 2 more)
# Builds build-gpu (meson setup …-Dgpu_archs=90 --buildtype=release) when it is missing.
# 1. bench/flash_bench.cu built with -DFB_VIS_LAZY: the launched shape (wg4x64s2/1s) and the
#    overlapped one (wg3x64s3/1o), each lazy and every tile (…E), against the 64-row template
#    (PASS/FAIL lines in $OUT/flash-bench.txt); the table: µs at 4096 and 16384 patches, H = 16,
#    and the 16384 µs as a ratio to the launched kernel (below 1: faster);
# 2. test-backend-cuda's attention_full_softmax (both against a double reference: the lazy one's
#    rel-L2 within 1.25× the every-tile one's, max |Δ| within 2× or one output step more),
#    attention_full_wgmma (every tile against the mma.sync kernel), and attention_full /
#    attention_full_long (the backend as launched, lazy, against the CPU backend), verbose;
# 3. HYOCR_VIS_E2E=1: a 2048² page through the engine (warm second job of two), launched and
#    HYOCR_VIS_LAZY_RESCALE=0, twice each: vision ms (the JSON's timings.vision_ms).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/hyocr-vis-lazy}
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
echo "=== flash_bench -DFB_VIS_LAZY"
nvcc -O3 -std=c++17 -DFB_VIS_LAZY -gencode=arch=compute_90a,code=sm_90a -Ikernels bench/flash_bench.cu \
    -o "$OUT/flash-bench" -Xptxas -v >"$OUT/flash-build.log" 2>&1 || { tail -20 "$OUT/flash-build.log"; exit 1; }
grep -A3 "entry function '_Z8k_vis_wg" "$OUT/flash-build.log" | grep -E "spill" | sort | uniq -c
timeout 300 "$OUT/flash-bench" >"$OUT/flash-bench.txt" 2>&1
echo "flash_bench exit $?"
grep -E "FAIL|CHOICE" "$OUT/flash-bench.txt"
awk '/^(f16|bf16) n=/ { split($2, a, "="); t = $1; n = a[2]; next }
     / us / && (n == 4096 || n == 16384) {
       for (i = 1; $i != "us"; i++) ; v = $1; for (j = 2; j < i - 1; j++) v = v "_" $j
       us[v, t, n] = $(i - 1); if (!(v in seen)) { seen[v] = 1; order[k++] = v } }
     END {
       base = "wg4x64s2/1s"
       printf "%-22s %9s %9s %9s %9s %7s %7s\n", "variant (us)", "f16 4096", "f16 16k", "bf16 4096", "bf16 16k", "f16 x", "bf16 x"
       for (i = 0; i < k; i++) { v = order[i]
         printf "%-22s %9s %9s %9s %9s %7.3f %7.3f\n", v, us[v, "f16", 4096], us[v, "f16", 16384], us[v, "bf16", 4096],
                us[v, "bf16", 16384], us[v, "f16", 16384] / us[base, "f16", 16384], us[v, "bf16", 16384] / us[base, "bf16", 16384] }
     }' "$OUT/flash-bench.txt"
echo "=== test-backend-cuda attention_full_softmax, attention_full_wgmma, attention_full(_long)"
if [ ! -f build-gpu/build.ninja ]; then
    meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=disabled \
        --buildtype=release >"$OUT/setup.log" 2>&1 || { tail -30 "$OUT/setup.log"; exit 1; }
fi
ninja -C build-gpu tests/test-backend-cuda src/cli/hyocr >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
timeout 600 build-gpu/tests/test-backend-cuda -p /backend-cuda/f16/attention_full_softmax \
    -p /backend-cuda/bf16/attention_full_softmax -p /backend-cuda/f16/attention_full_wgmma \
    -p /backend-cuda/bf16/attention_full_wgmma -p /backend-cuda/f16/attention_full -p /backend-cuda/bf16/attention_full \
    -p /backend-cuda/f16/attention_full_long -p /backend-cuda/bf16/attention_full_long \
    --verbose >"$OUT/softmax-test.txt" 2>&1
echo "test-backend-cuda exit $?"
grep -E "n (16384|4200) |^ok|^not ok|SKIP|ERROR|Bail" "$OUT/softmax-test.txt"
if [ -n "${HYOCR_VIS_E2E:-}" ]; then
    echo "=== engine, 2048² page: vision ms, launched (lazy) and HYOCR_VIS_LAZY_RESCALE=0"
    CKPT=${HYOCR_BENCH_CKPT:-/tmp/hy-full}
    [ -f "$CKPT/model.safetensors" ] || python3 bench/make_random_checkpoint.py "$CKPT" >"$OUT/ckpt.log" 2>&1
    [ -f /tmp/hyocr-img/page_2048.png ] || python3 bench/make_images.py /tmp/hyocr-img >/dev/null
    for run in 1 2; do
        for lazy in "" 0; do
            f="$OUT/e2e-lazy${lazy:-default}-$run.json"
            HYOCR_VIS_LAZY_RESCALE=$lazy build-gpu/src/cli/hyocr run --device cuda --model "$CKPT" \
                --image /tmp/hyocr-img/page_2048.png --task recognize --repeat 2 --max-batch 1 \
                --max-new-tokens 8 --ignore-eos --format json >"$f" 2>>"$OUT/e2e.log" \
                || echo "engine run HYOCR_VIS_LAZY_RESCALE='$lazy' failed (e2e.log)"
            python3 -c "import json,sys; j=json.load(open(sys.argv[1]))[1]; print('HYOCR_VIS_LAZY_RESCALE=%-2s vision %.1f ms, text %r' % (sys.argv[2], j['timings']['vision_ms'], j.get('text', '')[:40]))" \
                "$f" "$lazy" 2>/dev/null || echo "no timings in $f"
        done
    done
fi
