# Session 29, call 5 (call4 slimmed to the device time left, ~290 s): the compute_80 build (the
# path cards below Hopper run, JIT-compiled for this card) against the sm_90a build, one warm
# page each at 1024² and 2048² (first token / vision / prefill ms, decode tokens/s).
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-06-s29/call5.sh
T0=$(date +%s)
source bench/results/2026-12-05-h200-s21/prep.sh
W=${OUT:-/tmp/s29}/call5; mkdir -p $W
nvidia-smi --query-gpu=name --format=csv,noheader | tee $W/gpu.txt
[ -f build-80/build.ninja ] || meson setup build-80 -Dgui=disabled -Dcuda=enabled -Dgpu_archs=80 -Ddownload=disabled \
    --buildtype=release > $W/setup80.txt 2>&1
timeout 110 ninja -C build-80 src/cli/hyocr > $W/build80.txt 2>&1 || { tail -5 $W/build80.txt; exit 1; }
echo "[$(( $(date +%s) - T0 )) s] built"
for size in 1024 2048; do for b in build-gpu build-80; do
    r=$(timeout 40 $b/src/cli/hyocr run --model /tmp/hy-full --image /tmp/hyocr-img/page_$size.png --task recognize \
        --device cuda --repeat 3 --max-batch 1 --max-new-tokens 256 --ignore-eos --no-tail-stop --format json 2>/dev/null |
        python3 -c "import json,sys; j=json.load(sys.stdin)[1:]; print(' '.join('%.1f/%.1f/%.1f %.1f' % (x['timings']['first_token_ms'], x['timings']['vision_ms'], x['timings']['prefill_ms'], x['timings']['decode_tokens_per_s']) for x in j))")
    echo "$b $size: $r"
done; done | tee $W/pages.txt
echo "[$(( $(date +%s) - T0 )) s] done"
