# Session 36, call 1: the ViT's row chunk (HYOCR_VIT_CHUNK_ROWS) below the 4096 default — never
# measured smaller (session 14 measured 8192 and 16384 at 2048²: level). At 2048 rows a chunk's
# MLP activation (2048 × 4304 fp16, 17.6 MB) stays in the L2 between fc1, GELU and fc2; at 4096
# rows (35 MB) it does not. Warm pages one at a time, alternated (first token / vision / prefill
# ms), then 16 concurrent 1024² pages; the same token ids are checked. First, decode_bench's one-row
# rows (.device/bin/decode-bench-deep, built at 236ab63's kernels with -DHK_DECODE_BENCH_DEEP), and
# gemm_rows_bench's normalising products before and after rows_norm2.
#   source .device/setup.sh >/dev/null 2>&1; LIMIT=500 bash bench/results/2026-12-07-s36/call1.sh
T0=$(date +%s); LIMIT=${LIMIT:-500}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
export OUT=${OUT:-/tmp/s36} PATH=/usr/local/cuda/bin:$PATH
W=$OUT/call1; mkdir -p $W; HY=build-gpu/src/cli/hyocr
nvidia-smi --query-gpu=name --format=csv,noheader | tee $W/gpu.txt
source bench/results/2026-12-05-h200-s21/prep.sh > $W/prep.txt 2>&1; echo "prep exit $?"
# the engine with the norm's rows one after the other, for the A/B at the end (built beside the GPU-only benches)
( [ -f build-seq/build.ninja ] || meson setup build-seq -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=disabled \
    --buildtype=release -Dcuda_args=-DHK_ROWS_NORM_ONE_BY_ONE > $W/seq-setup.txt 2>&1; ninja -j 6 -C build-seq src/cli/hyocr > $W/seq-build.txt 2>&1;
  echo "build-seq exit $?" > $W/seq-done.txt ) &
# backend-cuda alone (it needs ~75 s): test_fused now has 12 and 16 rows through rows_norm2
timeout 150 meson test -C build-gpu --no-rebuild --print-errorlogs backend-cuda > $W/tests-bc.txt 2>&1; echo "backend-cuda exit $?"
grep -E "^ *[0-9]+/[0-9]+ |^not ok" $W/tests-bc.txt build-gpu/meson-logs/testlog.txt | head -8; gzip -f $W/tests-bc.txt
# one row (batch-1 decode after a 1024² and a 2048² page): the engine's split against wider and
# narrower ones, two to four rounds deep, launched as the engine launches (programmatic)
HK_BENCH_PDL=1 HK_BENCH_ROWS=1 HK_BENCH_CTX=1215,4191 HK_BENCH_SPLITS=0,128,256,512,1024,2048 HK_BENCH_STAGES=2,3,4 \
    timeout 60 .device/bin/decode-bench-deep > $W/one-row.txt 2>&1; echo "one-row exit $?"; grep -vE "^ *$" $W/one-row.txt | head -60
# hk_gemm_rows's NORM products with a warp's two rows normalised together (rows_norm2) against one
# after the other (-DHK_ROWS_NORM_ONE_BY_ONE), both built on the development machine from 36's tree
for rep in 1 2; do for b in seq s36; do
    echo "== gemm-rows-bench-$b"; timeout 60 .device/bin/gemm-rows-bench-$b | grep -E "NORM|product"
done; done > $W/rows-norm.txt 2>&1; echo "rows-norm exit $?"; grep -E "==| (9|16) " $W/rows-norm.txt
one() {   # size: the warm jobs' first token / vision / prefill ms, and a digest of the ids
    timeout 60 $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_$1.png --task recognize \
        --device cuda --repeat 4 --max-batch 1 --max-new-tokens 16 --ignore-eos --no-tail-stop --format json 2>/dev/null |
    python3 -c "import json,sys,hashlib; j=json.load(sys.stdin); print(' '.join('%.1f/%.1f/%.1f' % (x['timings']['first_token_ms'], x['timings']['vision_ms'], x['timings']['prefill_ms']) for x in j[1:]), hashlib.md5(str([x['token_ids'] for x in j]).encode()).hexdigest()[:8])"
}
for rep in 1 2; do for size in 1024 2048; do for c in 4096 2048 1024; do
    [ $(left) -gt 150 ] || break 3
    echo "$size chunk $c: $(HYOCR_VIT_CHUNK_ROWS=$c one $size)"
done; done; done | tee $W/pages.txt
source bench/results/2026-12-07-s33/sixteen.sh
wait; cat $W/seq-done.txt; tail -3 $W/seq-build.txt
for rep in 1 2 3; do
    [ $(left) -gt 30 ] || break
    echo "16 rows_norm2: $(sixteen)"; echo "16 one by one: $(sixteen build-seq/src/cli/hyocr)"
    [ $rep = 3 ] || echo "16 chunk 2048: $(HYOCR_VIT_CHUNK_ROWS=2048 sixteen)"
done | tee $W/sixteen.txt
echo "[$(( $(date +%s) - T0 )) s] call1 done"
