#!/bin/bash
# k_vis_wg's softmax variants (issue 17: HYOCR_VIS_EXP_FMA=K, HYOCR_VIS_LAZY_RESCALE=1) on the
# GPU machine, from the repository root, after
#   meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 --buildtype=release
# run:  OUT=/some/dir bench/vis-exp.sh      (about 2 minutes)
# 1. bench/flash_bench.cu built with -DFB_VIS_EXP: wg_ex2_fma against exp2 in double (PASS at
#    max rel err ≤ 2^-22), then the launched k_vis_wg (wg4x64s2/1s) and its variants
#    …e<K><E|L> (K of each 8 exponentials on the FMA pipe; E: O rescaled every tile, L: the
#    lazy rescale) and the overlapped schedule (wg3x64s3/1o, …oe2L), each against the
#    64-row template (PASS/FAIL lines in
#    $OUT/flash-bench.txt); the table: µs at 4096 and 16384 patches, H = 16, and the 16384 µs
#    as a ratio to the launched kernel (below 1: faster);
# 2. test-backend-cuda's attention_full_softmax, verbose: every variant's rel-L2 and max |Δ|
#    against a double reference, as a ratio to the default kernel's (bars 1.25× and 1.5×).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/hyocr-vis-exp}
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
echo "=== flash_bench -DFB_VIS_EXP"
nvcc -O3 -std=c++17 -DFB_VIS_EXP -gencode=arch=compute_90a,code=sm_90a -Ikernels bench/flash_bench.cu \
    -o "$OUT/flash-bench" -Xptxas -v >"$OUT/flash-build.log" 2>&1 || { tail -20 "$OUT/flash-build.log"; exit 1; }
grep -A3 "entry function '_Z8k_vis_wg" "$OUT/flash-build.log" | grep -E "spill" | sort | uniq -c
timeout 300 "$OUT/flash-bench" >"$OUT/flash-bench.txt" 2>&1
echo "flash_bench exit $?"
grep -E "^ex2|FAIL|CHOICE" "$OUT/flash-bench.txt"
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
echo "=== test-backend-cuda attention_full_softmax"
ninja -C build-gpu tests/test-backend-cuda >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
timeout 600 build-gpu/tests/test-backend-cuda -p /backend-cuda/f16/attention_full_softmax \
    -p /backend-cuda/bf16/attention_full_softmax --verbose >"$OUT/softmax-test.txt" 2>&1
echo "test-backend-cuda exit $?"
grep -E "n (16384|4200) .*(default|exp_fma [124] lazy [01])|^ok|^not ok|SKIP|ERROR|Bail" "$OUT/softmax-test.txt"
