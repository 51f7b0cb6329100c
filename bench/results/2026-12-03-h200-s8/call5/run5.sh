# call 5: GPU tests of everything landed, the decode-step switches in the engine, the prefill split,
# the prefetch's thread count in a batch
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
R=$OUT/r5; mkdir -p $R
rm -rf /tmp/src && mkdir -p /tmp/src && tar -xf .device/dev5.tar -C /tmp/src && cp -r .device /tmp/src/ && cd /tmp/src
T0=$(date +%s); step() { echo "=== [$(( $(date +%s) - T0 )) s] $*" | tee -a $R/log.txt; }
( [ -f /tmp/hy-full/model.safetensors ] || python3 bench/make_random_checkpoint.py /tmp/hy-full >/dev/null 2>&1
  python3 bench/make_images.py /tmp/img >/dev/null ) &
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Ikernels bench/prefill_bench.cu -o /tmp/prefill-bench >$R/pb-build.log 2>&1 &
step build
meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled --buildtype=release >$R/setup.log 2>&1
ninja -C build-gpu >$R/build.log 2>&1 || { grep -E "error|FAILED" $R/build.log | head; }
wait
step "tests (backend-cuda, decode, batch)"
timeout 240 meson test -C build-gpu --no-rebuild --num-processes 3 backend-cuda decode batch >$R/tests.txt 2>&1
grep -E "^ *[0-9]+/[0-9]+ " $R/tests.txt | tee -a $R/log.txt
grep -E "^not ok|SKIP" build-gpu/meson-logs/testlog.txt | head -20 >> $R/log.txt
cp build-gpu/meson-logs/testlog.txt $R/testlog.txt
step "prefill_bench"
timeout 120 /tmp/prefill-bench > $R/prefill-bench.txt 2>&1; echo "prefill-bench exit $?" | tee -a $R/log.txt
step "decode steps"
run() { echo "== $1"; shift; env "$@" HYOCR_DECODE_BENCH=/tmp/hy-full HYOCR_DECODE_BENCH_MODES=2 timeout 100 build-gpu/tests/test-decode -p /decode/cuda/bench 2>&1 | grep "^# decode"; }
{ run default; run "STAGES=2" HYOCR_DECODE_STAGES=2; run "STAGES=2 HF" HYOCR_DECODE_STAGES=2 HYOCR_DECODE_HEADS_FIRST=1;
  run "STAGES=2 ROPE_HEADS=4" HYOCR_DECODE_STAGES=2 HYOCR_ROPE_HEADS=4; run "default again"; } > $R/steps.txt 2>&1
cat $R/steps.txt | tee -a $R/log.txt
HY=build-gpu/src/cli/hyocr
step "2048² page: prefill split off/on"
for sp in 0 1; do
  HYOCR_PREFILL_SPLIT=$sp $HY run --model /tmp/hy-full --image /tmp/img/page_2048.png --task recognize --device cuda --repeat 3 --max-batch 1 --max-new-tokens 16 --ignore-eos --no-tail-stop --format json > $R/split$sp.json 2>$R/split$sp.err
  python3 -c "import json;j=json.load(open('$R/split$sp.json'));print('split $sp', [(round(x['timings']['vision_ms'],1), round(x['timings']['prefill_ms'],1), round(x['timings']['first_token_ms'],1)) for x in j])" | tee -a $R/log.txt
done
step "16 × 1024²: default / HYOCR_RESIZE_THREADS=1 / STAGES=2"
b16() { env "$@" $HY run --model /tmp/hy-full --image /tmp/img/page_1024.png --task recognize --device cuda --repeat 16 --max-batch 16 --warmup --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl 2>&1 >/tmp/b16.jsonl | tail -1;
  python3 -c "
import json,statistics as s
t=[json.loads(l)['timings'] for l in open('/tmp/b16.jsonl')]
print('   prefill_ms median %.1f (jobs 2-4 %s, 5-16 median %.1f), vision median %.1f'%(s.median(x['prefill_ms'] for x in t),[round(x['prefill_ms'],1) for x in t[1:4]],s.median(x['prefill_ms'] for x in t[4:]),s.median(x['vision_ms'] for x in t)))"; }
for i in 1 2; do
  echo -n "default: "; b16; echo -n "RESIZE_THREADS=1: "; b16 HYOCR_RESIZE_THREADS=1; echo -n "STAGES=2: "; b16 HYOCR_DECODE_STAGES=2
done 2>&1 | tee -a $R/log.txt
step done
cd $OUT && tar czf r5.tgz r5 && rm -rf r5
