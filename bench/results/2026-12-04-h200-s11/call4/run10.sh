# s11 call 4: the 16-row step kernel by kernel (graph), and the split length end to end
# (HYOCR_DECODE_SPLIT against the rule: 512 for 16 rows, 128 for one row after a 2048² page)
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
T0=$(date +%s); step() { echo "=== [$(( $(date +%s) - T0 )) s] $*" | tee -a $OUT/log.txt; }
( [ -f /tmp/hy-full/model.safetensors ] || python3 bench/make_random_checkpoint.py /tmp/hy-full >/dev/null 2>&1 ) &
( [ -f /tmp/img/page_2048.png ] || python3 bench/make_images.py /tmp/img >/dev/null 2>&1 ) &
step build
[ -f build-gpu/build.ninja ] || meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled --buildtype=release >/dev/null 2>&1
ninja -C build-gpu >/tmp/build.log 2>&1 || { grep -E "error|FAILED" /tmp/build.log | head | tee -a $OUT/log.txt; }
wait
step "split batch 16"
mkdir -p /tmp/split
BATCH=16 TAG=b16- OUT=/tmp/split timeout 240 bash bench/kernel-split.sh graph > /tmp/split/split16.log 2>&1; echo "rc=$?" >> /tmp/split/split16.log
cat /tmp/split/b16-split.txt 2>/dev/null | tee -a $OUT/log.txt; tail -15 /tmp/split/split16.log | tee -a $OUT/log.txt
HY=build-gpu/src/cli/hyocr
b16() { HYOCR_DECODE_SPLIT=$1 $HY run --model /tmp/hy-full --image /tmp/img/page_1024.png --task recognize --device cuda --repeat 16 --max-batch 16 --warmup --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl 2>&1 >/dev/null | grep -o "[0-9.]* tokens/s" | tail -1; }
b1() { HYOCR_DECODE_SPLIT=$1 $HY run --model /tmp/hy-full --image /tmp/img/page_2048.png --task recognize --device cuda --warmup --max-new-tokens 256 --ignore-eos --no-tail-stop --format json 2>/dev/null | python3 -c "import json,sys; d=json.load(sys.stdin); d=d[0] if isinstance(d,list) else d; print('%.1f decode tok/s' % d['timings']['decode_tokens_per_s'])"; }
step "16 jobs, split unset/512, alternated"
for r in 1 2 3; do for v in "" 512; do echo "16 jobs split=${v:-rule}: $(b16 "$v")" | tee -a $OUT/log.txt; done; done
step "2048² batch 1, split unset/128, alternated"
for r in 1 2 3; do for v in "" 128; do echo "2048 b1 split=${v:-rule}: $(b1 "$v")" | tee -a $OUT/log.txt; done; done
step done
