# s9 call 2: where the beside vision pass's time goes (debug lines), and serve with it on
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
R=$OUT/r2; mkdir -p $R
T0=$(date +%s); step() { echo "=== [$(( $(date +%s) - T0 )) s] $*" | tee -a $R/log.txt; }
( [ -f /tmp/hy-full/model.safetensors ] || python3 bench/make_random_checkpoint.py /tmp/hy-full >/dev/null 2>&1
  python3 bench/make_images.py /tmp/img >/dev/null ) &
step build
[ -f build-gpu/build.ninja ] || meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled --buildtype=release >$R/setup.log 2>&1
ninja -C build-gpu >$R/build.log 2>&1 || { grep -E "error|FAILED" $R/build.log | head | tee -a $R/log.txt; }
wait
HY=build-gpu/src/cli/hyocr
step "16 concurrent 1024² pages, beside on, debug"
G_MESSAGES_DEBUG=all HYOCR_VISION_BESIDE=1 $HY run --model /tmp/hy-full --image /tmp/img/page_1024.png --task recognize --device cuda --repeat 16 --max-batch 16 --warmup --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl 2>$R/dbg.txt >/dev/null
grep -E "vision pass|tokens/s" $R/dbg.txt | tee -a $R/log.txt
step "4 concurrent, beside on, debug"
G_MESSAGES_DEBUG=all HYOCR_VISION_BESIDE=1 $HY run --model /tmp/hy-full --image /tmp/img/page_1024.png --task recognize --device cuda --repeat 4 --max-batch 16 --warmup --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl 2>$R/dbg4.txt >/dev/null
grep -E "vision pass|tokens/s" $R/dbg4.txt | tee -a $R/log.txt
for b in 0 1; do HYOCR_VISION_BESIDE=$b $HY run --model /tmp/hy-full --image /tmp/img/page_1024.png --task recognize --device cuda --repeat 4 --max-batch 16 --warmup --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl 2>&1 >/dev/null | tail -1 | sed "s/^/4 pages beside=$b: /" | tee -a $R/log.txt; done
step "serve-bench, beside on"
ln -sfn build-gpu build-serve
HYOCR_VISION_BESIDE=1 HYOCR_SERVE_BENCH_REQUESTS=2 OUT=$R/serve timeout 200 bash bench/serve-bench.sh > $R/serve-bench.log 2>&1; tail -12 $R/serve-bench.log | tee -a $R/log.txt
step done
cd $OUT && tar czf r2.tgz r2 && rm -rf r2
