# s11 call 7 (experiment, not committed): decode attention rounds of DEC_U = 4 keys a thread instead of 8:
# stages of 16 KB (NS = 2: 32 KB a CTA, 4 CTAs an SM by registers instead of 3 by shared memory)
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
T0=$(date +%s); step() { echo "=== [$(( $(date +%s) - T0 )) s] $*" | tee -a $OUT/log.txt; }
( [ -f /tmp/hy-full/model.safetensors ] || python3 bench/make_random_checkpoint.py /tmp/hy-full >/dev/null 2>&1 ) &
( [ -f /tmp/img/page_2048.png ] || python3 bench/make_images.py /tmp/img >/dev/null 2>&1 ) &
HY=build-gpu/src/cli/hyocr
b16() { $HY run --model /tmp/hy-full --image /tmp/img/page_1024.png --task recognize --device cuda --repeat 16 --max-batch 16 --warmup --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl 2>&1 >/dev/null | grep -o "[0-9.]* tokens/s" | tail -1; }
b1() { $HY run --model /tmp/hy-full --image /tmp/img/page_2048.png --task recognize --device cuda --warmup --max-new-tokens 256 --ignore-eos --no-tail-stop --format json 2>/dev/null | python3 -c "import json,sys; d=json.load(sys.stdin); d=d[0] if isinstance(d,list) else d; print('%.1f decode tok/s' % d['timings']['decode_tokens_per_s'])"; }
variant() {
  step "build $1"
  [ -f build-gpu/build.ninja ] || meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled --buildtype=release >/dev/null 2>&1
  ninja -C build-gpu >/tmp/build.log 2>&1 || { grep -E "error|FAILED" /tmp/build.log | head | tee -a $OUT/log.txt; }
  nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Ikernels bench/decode_bench.cu -o /tmp/decode-bench-$1 > /tmp/nvcc.log 2>&1 || tail -5 /tmp/nvcc.log | tee -a $OUT/log.txt
  wait
  step "decode bench $1"
  timeout 60 /tmp/decode-bench-$1 > $OUT/decode-bench-$1.txt 2>&1; grep -E "^(1|16) +rows +(1087|4191) +[0-9]+ " $OUT/decode-bench-$1.txt | tee -a $OUT/log.txt
  step "engine $1"
  for r in 1 2; do echo "$1 16 jobs: $(b16)" | tee -a $OUT/log.txt; echo "$1 2048 b1: $(b1)" | tee -a $OUT/log.txt; done
}
variant u8
sed -i 's/^#define DEC_U 8 /#define DEC_U 4 /' kernels/attention-decode.cu
grep -n "^#define DEC_U" kernels/attention-decode.cu | tee -a $OUT/log.txt
variant u4
step "tests u4"
timeout 150 meson test -C build-gpu --no-rebuild --num-processes 3 decode batch > $OUT/tests-u4.txt 2>&1; grep -E "^ *[0-9]+/[0-9]+ " $OUT/tests-u4.txt | tee -a $OUT/log.txt
sed -i 's/^#define DEC_U 4 /#define DEC_U 8 /' kernels/attention-decode.cu
step done
