# call 6: the benchmarks of record with the switches chosen from call 5 (FLIPS), the single-page
# rows before the KV-slab change (db7d338), and the non-Hopper kernels (compute_80 PTX on the H200)
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
R=$OUT/r6; mkdir -p $R
FLIPS=${FLIPS:-HYOCR_NONE=1}
T0=$(date +%s); step() { echo "=== [$(( $(date +%s) - T0 )) s] $*" | tee -a $R/log.txt; }
( [ -f /tmp/hy-full/model.safetensors ] || python3 bench/make_random_checkpoint.py /tmp/hy-full >/dev/null 2>&1
  python3 bench/make_images.py /tmp/img >/dev/null
  rm -rf /tmp/before && mkdir -p /tmp/before && tar -xf .device/before.tar -C /tmp/before
  cd /tmp/before && meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=disabled --buildtype=release >/dev/null 2>&1 && ninja -C build-gpu src/cli/hyocr >/dev/null 2>&1 ) &
step build
[ -f build-gpu/build.ninja ] || meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled --buildtype=release >$R/setup.log 2>&1
ninja -C build-gpu >$R/build.log 2>&1 || { grep -E "error|FAILED" $R/build.log | head; }
meson setup build-80 -Dgui=disabled -Dcuda=enabled -Dgpu_archs=80 -Ddownload=disabled --buildtype=release >/dev/null 2>&1
ninja -C build-80 src/cli/hyocr >$R/build80.log 2>&1 || echo "build-80 failed" | tee -a $R/log.txt
wait
ln -sfn build-gpu build-serve
step "GPU tests at the new defaults"
timeout 150 meson test -C build-gpu --no-rebuild --num-processes 3 backend-cuda decode batch >$R/tests.txt 2>&1
grep -E "^ *[0-9]+/[0-9]+ " $R/tests.txt | tee -a $R/log.txt; cp build-gpu/meson-logs/testlog.txt $R/testlog.txt
step "gpu-bench ($FLIPS)"
env $FLIPS HYOCR_BENCH_SKIP_HF=1 OUT=$R/gpu timeout 200 bash bench/gpu-bench.sh > $R/gpu-bench.log 2>&1; tail -25 $R/gpu-bench.log | tee -a $R/log.txt
step "serve-bench"
env $FLIPS HYOCR_SERVE_BENCH_REQUESTS=2 OUT=$R/serve timeout 150 bash bench/serve-bench.sh > $R/serve-bench.log 2>&1; tail -12 $R/serve-bench.log | tee -a $R/log.txt
step "single page before (db7d338) / after / compute_80"
one() { local hy=$1 size=$2; shift 2; env "$@" $hy run --model /tmp/hy-full --image /tmp/img/page_$size.png --task recognize --device cuda --repeat 3 --max-batch 1 --max-new-tokens 256 --ignore-eos --no-tail-stop --format json 2>/dev/null | python3 -c "import json,sys; j=json.load(sys.stdin); print(' | '.join('ttft %.1f vis %.1f pre %.1f dec %.1f tok/s' % (x['timings']['first_token_ms'], x['timings']['vision_ms'], x['timings']['prefill_ms'], x['timings']['decode_tokens_per_s']) for x in j[1:]))"; }
for size in 1024 2048; do for i in 1; do
  echo "$size before: $(one /tmp/before/build-gpu/src/cli/hyocr $size)"
  echo "$size after:  $(one build-gpu/src/cli/hyocr $size $FLIPS)"
done; done 2>&1 | tee -a $R/log.txt
export -f one 2>/dev/null
for size in 1024 2048; do echo "$size compute_80: $(timeout 100 bash -c "$(declare -f one); one build-80/src/cli/hyocr $size $FLIPS")"; done 2>&1 | tee -a $R/log.txt
step done
cd $OUT && tar czf r6.tgz r6 && rm -rf r6
