#!/bin/bash
# Speculative decoding (issue 20) on the GPU machine, from the repository root:
#   source .device/setup.sh && OUT=/some/dir tests/gpu/dflash.sh
# 1. build with CUDA (sm_90);
# 2. the CUDA tests live: the new ops against the CPU (test-backend-cuda: the draft's kernels,
#    argmax, embed_ids, copy_rows, pick with verify rows, verify blocks in paged attention), the
#    draft's block logits against the reference (test-dflash: FP16 and BF16 within 1e-2 / 3e-2,
#    the same argmax or a near-tie), losslessness on the tiny fixtures through hyocr_spec_step and
#    the scheduler, in captured graphs (test-speculate), and the decode and batch suites;
# 3. bench/dflash-bench.sh: the full-size random checkpoint and draft, losslessness for 1024
#    tokens at penalty 1.0 and 1.08, the speed table, the draft's cost and memory;
# 4. the per-op profile of uncaptured rounds (HYOCR_PROFILE=1 HYOCR_NO_GRAPH=1, k = 6.4).
# Everything it writes goes to $OUT; dflash-raw.tar.gz holds the raw files.
set -uo pipefail
OUT=${OUT:-/tmp/hyocr-dflash}
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
T0=$(date +%s)
step() { echo; echo "=== [$(( $(date +%s) - T0 )) s] $*"; }
CKPT=${HYOCR_BENCH_CKPT:-/tmp/hy-full-dflash}
IMG=${HYOCR_BENCH_IMAGES:-/tmp/hyocr-img}
RAW=$OUT/raw
mkdir -p "$RAW"

step build
( python3 bench/make_random_checkpoint.py "$CKPT" --draft >"$RAW/ckpt.log" 2>&1
  python3 bench/make_images.py "$IMG" >/dev/null ) &
if [ ! -f build-gpu/build.ninja ]; then
    meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=disabled -Ddocuments=disabled \
        --buildtype=release >"$RAW/setup.log" 2>&1 || { tail -30 "$RAW/setup.log"; exit 1; }
fi
ninja -C build-gpu src/cli/hyocr tests/test-backend-cuda tests/test-dflash tests/test-speculate tests/test-decode \
    tests/test-batch >"$RAW/build.log" 2>&1 || { grep -E "error|FAILED" "$RAW/build.log" | head -30; exit 1; }
wait
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader

step "CUDA tests"
for t in backend-cuda dflash speculate decode batch; do
    timeout 120 build-gpu/tests/test-$t --tap >"$RAW/test-$t.txt" 2>&1
    rc=$?
    echo "test-$t: exit $rc, $(grep -c '^ok' "$RAW/test-$t.txt") ok ($(grep -c '# SKIP' "$RAW/test-$t.txt") skipped)," \
         "$(grep -c '^not ok' "$RAW/test-$t.txt") not ok"
    grep -E "^not ok|^Bail out|ERROR" "$RAW/test-$t.txt" | head -5
done
grep -hE "^# (cuda|CUDA).*(draft|rel|rounds|near)|verify kernel|attention_append 16 rows over 4178" \
    "$RAW"/test-dflash.txt "$RAW"/test-speculate.txt "$RAW"/test-backend-cuda.txt | grep -v "^ok" | head -30

step "full size: losslessness and speed (bench/dflash-bench.sh)"
OUT="$RAW" HYOCR_BENCH_CKPT="$CKPT" HYOCR_BENCH_IMAGES="$IMG" timeout 300 bench/dflash-bench.sh
grep -E "FP16 overflowed|failed|GLib" "$RAW/dflash-hyocr.log" | sort | uniq -c | head

if [ -z "${HYOCR_DFLASH_NO_PROFILE:-}" ]; then
step "per-op profile of uncaptured rounds (k = 6.4, 256 tokens)"
HYOCR_PROFILE=1 HYOCR_NO_GRAPH=1 HYOCR_DRAFT_STANDIN="$RAW/cont_rp1.08.txt" HYOCR_DRAFT_STANDIN_K=6.4 timeout 60 \
    build-gpu/src/cli/hyocr run --model "$CKPT" --image "$IMG/page_2048.png" --task recognize --device cuda \
    --max-new-tokens 256 --ignore-eos --no-tail-stop --repetition-penalty 1.08 --format json \
    >"$RAW/profile-rounds.json" 2>"$RAW/profile-rounds.txt"
head -45 "$RAW/profile-rounds.txt"
fi

step done
cp "$RAW/dflash-bench.md" "$RAW/dflash-lossless.txt" "$OUT/" 2>/dev/null
tar -czf "$OUT/dflash-raw.tar.gz" -C "$OUT" raw && rm -rf "$RAW"
