# s9 call 7: kept embeddings (a307afc) on 16 concurrent pages; the side lane's priority (uncommitted XP_PRIO)
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
R=$OUT/r7; mkdir -p $R
T0=$(date +%s); step() { echo "=== [$(( $(date +%s) - T0 )) s] $*" | tee -a $R/log.txt; }
( [ -f /tmp/hy-full/model.safetensors ] || python3 bench/make_random_checkpoint.py /tmp/hy-full >/dev/null 2>&1
  python3 bench/make_images.py /tmp/img >/dev/null ) &
step build
[ -f build-gpu/build.ninja ] || meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled --buildtype=release >$R/setup.log 2>&1
ninja -C build-gpu >$R/build.log 2>&1 || { grep -E "error|FAILED" $R/build.log | head | tee -a $R/log.txt; }
wait
HY=build-gpu/src/cli/hyocr
step "16 concurrent 1024² pages"
b16() { local mb=$1; shift; env "$@" $HY run --model /tmp/hy-full --image /tmp/img/page_1024.png --task recognize --device cuda --repeat 16 --max-batch $mb --warmup --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl >$R/b.txt 2>$R/e.txt; echo "mb=$mb $*: $(grep tokens/s $R/e.txt | tail -1) | beside: $(grep -o 'done after [0-9.]* ms, [0-9]* decode' $R/b.txt | sed 's/done after //; s/ ms, /:/; s/ decode//' | tr '\n' ' ')"; grep '^{' $R/b.txt | python3 -c "
import json,sys
rows=[json.loads(l) for l in sys.stdin]
print('   vision', ' '.join('%.0f'%r['timings']['vision_ms'] for r in rows)); print('   prefill', ' '.join('%.1f'%r['timings']['prefill_ms'] for r in rows))"; }
{ b16 1 HYOCR_NONE=1; b16 16 HYOCR_NONE=1; b16 16 HYOCR_NONE=1
  for x in 1 2; do for sms in 104 0; do b16 16 G_MESSAGES_DEBUG=all HYOCR_VISION_BESIDE=1 HYOCR_SIDE_SMS=$sms XP_PRIO=$x; done; done; } 2>&1 | tee -a $R/log.txt
step "GPU tests"
timeout 200 meson test -C build-gpu --no-rebuild --num-processes 3 backend-cuda decode batch tuning >$R/tests.txt 2>&1
grep -E "^ *[0-9]+/[0-9]+ " $R/tests.txt | tee -a $R/log.txt; cp build-gpu/meson-logs/testlog.txt $R/testlog.txt
step done
cd $OUT && tar czf r7.tgz r7 && rm -rf r7
