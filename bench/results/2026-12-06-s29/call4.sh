# Session 29, call 4: the path cards below Hopper run, as its own rows (issue 17): a build for
# compute_80 only (sm_80 code and its PTX, JIT-compiled for this card: no wgmma, no TMA kernels)
# against the sm_90a build, warm pages alternated (first token / vision / prefill ms, decode
# tokens/s, 256 new tokens), then 16 concurrent 1024² pages with each. SLIM=1 (~290 s of device
# time, session 29's last attempt, refused): one round at 1024² and 2048² only.
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-06-s29/call4.sh
T0=$(date +%s)
source bench/results/2026-12-05-h200-s21/prep.sh
W=${OUT:-/tmp/s29}/call4; mkdir -p $W
nvidia-smi --query-gpu=name --format=csv,noheader | tee $W/gpu.txt
[ -f build-80/build.ninja ] || meson setup build-80 -Dgui=disabled -Dcuda=enabled -Dgpu_archs=80 -Ddownload=disabled \
    --buildtype=release > $W/setup80.txt 2>&1
timeout 200 ninja -C build-80 src/cli/hyocr > $W/build80.txt 2>&1 || { tail -20 $W/build80.txt; exit 1; }
echo "[$(( $(date +%s) - T0 )) s] built"
one() {   # build size: the warm jobs' first token / vision / prefill ms and decode tokens/s
    timeout 120 $1/src/cli/hyocr run --model /tmp/hy-full --image /tmp/hyocr-img/page_$2.png --task recognize \
        --device cuda --repeat 3 --max-batch 1 --max-new-tokens 256 --ignore-eos --no-tail-stop --format json 2>/dev/null |
    python3 -c "import json,sys; j=json.load(sys.stdin)[1:]; print(' '.join('%.1f/%.1f/%.1f %.1f' % (x['timings']['first_token_ms'], x['timings']['vision_ms'], x['timings']['prefill_ms'], x['timings']['decode_tokens_per_s']) for x in j))"
}
REPS="1 2" SIZES="1024 2048 4096"
[ -n "${SLIM:-}" ] && REPS=1 SIZES="1024 2048"
for rep in $REPS; do for size in $SIZES; do for b in build-gpu build-80; do
    echo "$b $size: $(one $b $size)"
done; done; done | tee $W/pages.txt
[ -n "${SLIM:-}" ] && exit 0
echo "[$(( $(date +%s) - T0 )) s] === 16 concurrent 1024² pages"
for b in build-gpu build-80; do for mb in 1 16; do
    r=$(timeout 120 $b/src/cli/hyocr run --model /tmp/hy-full --image /tmp/hyocr-img/page_1024.png --task recognize \
        --device cuda --repeat 16 --max-batch $mb --warmup --max-new-tokens 256 --ignore-eos --no-tail-stop \
        --format jsonl 2>&1 >/dev/null | grep -o "[0-9.]* tokens/s" | tail -1)
    echo "$b max-batch $mb: $r"
done; done | tee $W/batch.txt
echo "[$(( $(date +%s) - T0 )) s] done"
