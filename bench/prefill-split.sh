#!/bin/bash
# Split-KV prefill attention (HYOCR_PREFILL_SPLIT, issue 17) on the GPU machine, from the
# repository root:
#   source .device/setup.sh && OUT=/some/dir bench/prefill-split.sh
# 1. bench/prefill_bench.cu, f16 and bf16: every k_prefill variant unsplit and split ("MW2 s4":
#    W4 MW2 split to about 4 CTAs an SM) on the 2048² page's chunks (1024 rows at n_past 0 …
#    3072, then 95 at 4096), the 4096² page's and the 4191-row single call; µs a call, the sums,
#    max |split − unsplit|; nonzero exit when a variant is off by more than 4 output ulps;
# 2. build-gpu's test-backend-cuda, paged_prefill (f16, bf16) live: split against unsplit and the
#    CPU at chunk shapes with short last chunks, and a backend with the switch on;
# 3. with HYOCR_BENCH_CKPT's checkpoint and a 2048² page (as bench/vision-profile.sh): the warm
#    job's per-op table (3 jobs − 2) with HYOCR_PREFILL_SPLIT unset and =1 (and =N for
#    HYOCR_SPLIT_PER_SM="2 8"...): "attention_paged (prefill)" is the row to read.
# HYOCR_SPLIT_STEPS picks steps (default "bench test profile").
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/hyocr-pfsplit}
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
STEPS=${HYOCR_SPLIT_STEPS:-bench test profile}
has() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
rc=0
if has bench; then
    echo "=== prefill_bench"
    nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Ikernels bench/prefill_bench.cu -o /tmp/prefill-bench \
        >"$OUT/prefill-bench-build.log" 2>&1 || { tail -20 "$OUT/prefill-bench-build.log"; exit 1; }
    for t in f16 bf16; do
        timeout 300 /tmp/prefill-bench $t >"$OUT/prefill-bench-$t.txt" 2>&1 || { echo "prefill_bench $t: FAIL"; rc=1; }
        grep -E "^total|^PASS|^FAIL|^CHOICE|page|one call|engine without" "$OUT/prefill-bench-$t.txt"
    done
fi
if has test; then
    echo "=== test-backend-cuda paged_prefill"
    if [ ! -f build-gpu/build.ninja ]; then
        meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=disabled \
            --buildtype=release >"$OUT/setup.log" 2>&1 || { tail -30 "$OUT/setup.log"; exit 1; }
    fi
    ninja -C build-gpu tests/test-backend-cuda src/cli/hyocr >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
    build-gpu/tests/test-backend-cuda -p /backend-cuda/f16/paged_prefill -p /backend-cuda/bf16/paged_prefill --verbose \
        >"$OUT/test-paged-prefill.txt" 2>&1 || { echo "paged_prefill: FAIL"; rc=1; }
    grep -E "split - unsplit|^ok|^not ok|SKIP|FAIL" "$OUT/test-paged-prefill.txt" | sort | uniq -c | sort -rn | head -5
    grep -E "split - unsplit" "$OUT/test-paged-prefill.txt" | sed 's/.*max|split - unsplit| \([^ ]*\) (bound \([^)]*\)).*/\1 \2/' |
        sort -g | tail -1 | sed 's/^/largest max|split - unsplit| and its bound: /'
fi
if has profile; then
    CKPT=${HYOCR_BENCH_CKPT:-/tmp/hy-full}
    IMG=${HYOCR_BENCH_IMG:-/tmp/hyocr-img}
    HY=build-gpu/src/cli/hyocr
    [ -f "$CKPT/model.safetensors" ] || python3 bench/make_random_checkpoint.py "$CKPT" >"$OUT/ckpt.log" 2>&1
    [ -f "$IMG/page_2048.png" ] || python3 bench/make_images.py "$IMG" >/dev/null
    for sw in 0 1 ${HYOCR_SPLIT_PER_SM:-}; do
        echo "=== 2048² per-op profile, HYOCR_PREFILL_SPLIT=$sw"
        for n in 2 3; do
            HYOCR_PREFILL_SPLIT=$sw HYOCR_PROFILE=1 $HY run --device cuda --model "$CKPT" --image "$IMG/page_2048.png" \
                --task recognize --repeat $n --max-batch 1 --max-new-tokens 8 --ignore-eos --format json \
                >"$OUT/prof-split$sw-$n.json" 2>"$OUT/prof-split$sw-$n.txt" || echo "profile $sw $n failed"
        done
        python3 bench/profile_diff.py "$OUT/prof-split$sw-2.txt" "$OUT/prof-split$sw-3.txt" 1 >"$OUT/prof-split$sw.md"
        grep -E "^GPU time|attention_paged \(prefill\)" "$OUT/prof-split$sw.md"
    done
fi
exit $rc
