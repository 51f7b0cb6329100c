# s11 call 9: the one-pass decode merge (this tree) against the two-pass one (attention-decode-old.cu):
# CUDA suites, the attention micro-benchmark, the engine alternated
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
T0=$(date +%s); step() { echo "=== [$(( $(date +%s) - T0 )) s] $*" | tee -a $OUT/log.txt; }
( [ -f /tmp/hy-full/model.safetensors ] || python3 bench/make_random_checkpoint.py /tmp/hy-full >/dev/null 2>&1 ) &
( [ -f /tmp/img/page_2048.png ] || python3 bench/make_images.py /tmp/img >/dev/null 2>&1 ) &
cp kernels/attention-decode.cu /tmp/attention-decode-new.cu
HY=build-gpu/src/cli/hyocr
b16() { $HY run --model /tmp/hy-full --image /tmp/img/page_1024.png --task recognize --device cuda --repeat 16 --max-batch 16 --warmup --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl 2>&1 >/dev/null | grep -o "[0-9.]* tokens/s" | tail -1; }
b1() { $HY run --model /tmp/hy-full --image /tmp/img/page_$1.png --task recognize --device cuda --warmup --max-new-tokens 256 --ignore-eos --no-tail-stop --format json 2>/dev/null | python3 -c "import json,sys; d=json.load(sys.stdin); d=d[0] if isinstance(d,list) else d; print('%.1f decode tok/s' % d['timings']['decode_tokens_per_s'])"; }
build() {
  [ -f build-gpu/build.ninja ] || meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled --buildtype=release >/dev/null 2>&1
  ninja -C build-gpu >/tmp/build.log 2>&1 || { grep -E "error|FAILED" /tmp/build.log | head | tee -a $OUT/log.txt; }
}
engine() { for r in 1 2; do echo "$1 16 jobs: $(b16)" | tee -a $OUT/log.txt; echo "$1 2048 b1: $(b1 2048)" | tee -a $OUT/log.txt; echo "$1 1024 b1: $(b1 1024)" | tee -a $OUT/log.txt; done; }
step "build new"; build
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Ikernels bench/decode_bench.cu -o /tmp/db-new > /tmp/nvcc.log 2>&1 || tail -5 /tmp/nvcc.log | tee -a $OUT/log.txt
wait
step "tests new"
timeout 150 meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 4 backend-cuda decode batch tuning > $OUT/tests-new.txt 2>&1; grep -E "^ *[0-9]+/[0-9]+ |Fail:" $OUT/tests-new.txt | tee -a $OUT/log.txt
step "decode bench new"
timeout 60 /tmp/db-new > $OUT/decode-bench-new.txt 2>&1; echo "rc=$?" >> $OUT/decode-bench-new.txt; grep -E "^(1|4|16) +rows +(1087|4191) +[0-9]+  |rc=" $OUT/decode-bench-new.txt | tee -a $OUT/log.txt
step "engine new"; engine new
cp .device/attention-decode-old.cu kernels/attention-decode.cu
step "build old"; build
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Ikernels bench/decode_bench.cu -o /tmp/db-old > /tmp/nvcc.log 2>&1
step "decode bench old"
timeout 60 /tmp/db-old > $OUT/decode-bench-old.txt 2>&1; grep -E "^(1|4|16) +rows +(1087|4191) +[0-9]+  " $OUT/decode-bench-old.txt | tee -a $OUT/log.txt
step "engine old"; engine old
cp /tmp/attention-decode-new.cu kernels/attention-decode.cu
step "engine new again"; build; engine new2
step done
