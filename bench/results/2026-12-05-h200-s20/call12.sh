# s20 call12: the final commit (HYOCR_ORDERED_ALLOC on by default) on the card: build, the CUDA
# suites, then bench/gpu-bench.sh and bench/serve-bench.sh (bench/record.sh PART=2's steps),
# everything packed into one file. From the repository root on the GPU machine:
#   source .device/setup.sh >/dev/null && OUT=... bash bench/results/2026-12-05-h200-s20/call12.sh
export PATH=/usr/local/cuda/bin:$PATH
W=/tmp/c12; rm -rf $W; mkdir -p $W
L=$W/log.txt
T0=$(date +%s)
[ -f /tmp/hy-full/model.safetensors ] || python3 bench/make_random_checkpoint.py /tmp/hy-full > $W/ckpt.txt 2>&1 &
[ -f build-gpu/build.ninja ] || meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled \
  --buildtype=release > $W/setup.txt 2>&1
ninja -C build-gpu > $W/build.txt 2>&1 || { tail -20 $W/build.txt; exit 1; }
wait
echo "built at $(( $(date +%s) - T0 )) s" >> $L
meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 4 backend-cuda decode batch tuning > $W/tests.txt 2>&1
echo "suites rc=$? at $(( $(date +%s) - T0 )) s" >> $L
grep -E '^ *[0-9]+/[0-9]+ |ERROR:' $W/tests.txt | head -12 >> $L
OUT=$W/gpu-bench HYOCR_BENCH_SKIP_HF=1 timeout 120 bash bench/gpu-bench.sh > $W/gpu-bench.txt 2>&1
echo "gpu-bench rc=$? at $(( $(date +%s) - T0 )) s" >> $L
ln -sfn build-gpu build-serve
OUT=$W/serve-bench HYOCR_SERVE_BENCH_REQUESTS=2 timeout 90 bash bench/serve-bench.sh > $W/serve-bench.txt 2>&1
echo "serve-bench rc=$? at $(( $(date +%s) - T0 )) s" >> $L
tar czf $OUT/c12.tgz -C $W .
cat $L; tail -14 $W/gpu-bench.txt; grep -A7 '^| clients' $W/serve-bench.txt
