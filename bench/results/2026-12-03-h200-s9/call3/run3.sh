# s9 call 3: k_vis_wg's softmax variants (helper, bench/vis-exp.sh + end to end), the beside pass's debug lines
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
R=$OUT/r3; mkdir -p $R
T0=$(date +%s); step() { echo "=== [$(( $(date +%s) - T0 )) s] $*" | tee -a $R/log.txt; }
( [ -f /tmp/hy-full/model.safetensors ] || python3 bench/make_random_checkpoint.py /tmp/hy-full >/dev/null 2>&1
  python3 bench/make_images.py /tmp/img >/dev/null ) &
step build
[ -f build-gpu/build.ninja ] || meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled --buildtype=release >$R/setup.log 2>&1
ninja -C build-gpu >$R/build.log 2>&1 || { grep -E "error|FAILED" $R/build.log | head | tee -a $R/log.txt; }
wait
HY=build-gpu/src/cli/hyocr
step "beside debug (16 pages)"
G_MESSAGES_DEBUG=all HYOCR_VISION_BESIDE=1 $HY run --model /tmp/hy-full --image /tmp/img/page_1024.png --task recognize --device cuda --repeat 16 --max-batch 16 --warmup --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl >$R/dbg.txt 2>&1
grep -E "vision pass|tokens/s" $R/dbg.txt | cut -c1-160 | tee -a $R/log.txt
step "vis-exp.sh"
OUT=$R/visexp timeout 280 bash bench/vis-exp.sh 2>&1 | tee -a $R/log.txt
step "end to end 2048²"
one() { env "$@" $HY run --model /tmp/hy-full --image /tmp/img/page_2048.png --task recognize --device cuda --repeat 3 --max-batch 1 --max-new-tokens 64 --ignore-eos --no-tail-stop --format json 2>/dev/null | python3 -c "import json,sys; j=json.load(sys.stdin); print(' | '.join('ttft %.1f vis %.1f pre %.1f' % (x['timings']['first_token_ms'], x['timings']['vision_ms'], x['timings']['prefill_ms']) for x in j[1:]))"; }
for v in "HYOCR_NONE=1" "HYOCR_VIS_LAZY_RESCALE=1" "HYOCR_VIS_EXP_FMA=1 HYOCR_VIS_LAZY_RESCALE=1" "HYOCR_VIS_EXP_FMA=2 HYOCR_VIS_LAZY_RESCALE=1" "HYOCR_VIS_EXP_FMA=2" "HYOCR_NONE=1"; do
  echo "$v: $(one $v)"; done 2>&1 | tee -a $R/log.txt
step done
cd $OUT && tar czf r3.tgz r3 && rm -rf r3
