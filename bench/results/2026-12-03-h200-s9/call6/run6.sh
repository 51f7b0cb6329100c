# s9 call 6: the side lane on a green context (HYOCR_SIDE_SMS), GPU tests after the helpers' removals
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
R=$OUT/r6; mkdir -p $R
T0=$(date +%s); step() { echo "=== [$(( $(date +%s) - T0 )) s] $*" | tee -a $R/log.txt; }
( [ -f /tmp/hy-full/model.safetensors ] || python3 bench/make_random_checkpoint.py /tmp/hy-full >/dev/null 2>&1
  python3 bench/make_images.py /tmp/img >/dev/null ) &
step build
[ -f build-gpu/build.ninja ] || meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled --buildtype=release >$R/setup.log 2>&1
ninja -C build-gpu >$R/build.log 2>&1 || { grep -E "error|FAILED" $R/build.log | head | tee -a $R/log.txt; }
step "beside test"
G_MESSAGES_DEBUG=all timeout 60 build-gpu/tests/test-batch -p /batch/cuda/vision-beside --verbose > $R/beside-test.txt 2>&1; echo "rc=$?" >> $R/beside-test.txt; grep -E "side lane|^ok|^not ok|rc=|ERROR" $R/beside-test.txt | head | tee -a $R/log.txt
wait
HY=build-gpu/src/cli/hyocr
step "16 concurrent 1024² pages"
b16() { env "$@" $HY run --model /tmp/hy-full --image /tmp/img/page_1024.png --task recognize --device cuda --repeat 16 --max-batch 16 --warmup --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl >$R/b.txt 2>&1; echo "$*: $(grep tokens/s $R/b.txt | tail -1) | $(grep -o 'runs on [0-9]* of' $R/b.txt | head -1) | steps beside: $(grep -o '[0-9]* decode steps beside' $R/b.txt | cut -d' ' -f1 | tr '\n' ' ')"; }
for i in 1; do
  b16 HYOCR_VISION_BESIDE=0
  b16 G_MESSAGES_DEBUG=all HYOCR_VISION_BESIDE=1
  b16 G_MESSAGES_DEBUG=all HYOCR_VISION_BESIDE=1 HYOCR_SIDE_SMS=84
  b16 G_MESSAGES_DEBUG=all HYOCR_VISION_BESIDE=1 HYOCR_SIDE_SMS=66
done 2>&1 | tee -a $R/log.txt
b16 G_MESSAGES_DEBUG=all HYOCR_VISION_BESIDE=1 HYOCR_SIDE_SMS=116 2>&1 | tee -a $R/log.txt
b16 G_MESSAGES_DEBUG=all HYOCR_VISION_BESIDE=1 HYOCR_SIDE_SMS=0 2>&1 | tee -a $R/log.txt
step "serve-bench, beside on (default partition)"
ln -sfn build-gpu build-serve
HYOCR_VISION_BESIDE=1 HYOCR_SERVE_BENCH_REQUESTS=2 OUT=$R/serve timeout 200 bash bench/serve-bench.sh > $R/serve-bench.log 2>&1; grep -A7 "^| clients" $R/serve-bench.log | tee -a $R/log.txt
step done
cd $OUT && tar czf r6.tgz r6 && rm -rf r6
