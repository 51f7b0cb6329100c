# s9 call 1: the vision pass beside the decode steps (HYOCR_VISION_BESIDE) — GPU tests, 16 concurrent 1024² pages on/off
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
R=$OUT/r1; mkdir -p $R
T0=$(date +%s); step() { echo "=== [$(( $(date +%s) - T0 )) s] $*" | tee -a $R/log.txt; }
( [ -f /tmp/hy-full/model.safetensors ] || python3 bench/make_random_checkpoint.py /tmp/hy-full >/dev/null 2>&1
  python3 bench/make_images.py /tmp/img >/dev/null ) &
step build
[ -f build-gpu/build.ninja ] || meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled --buildtype=release >$R/setup.log 2>&1
ninja -C build-gpu >$R/build.log 2>&1 || { grep -E "error|FAILED" $R/build.log | head | tee -a $R/log.txt; }
step "new test"
timeout 60 build-gpu/tests/test-batch -p /batch/cuda/vision-beside --verbose > $R/beside-test.txt 2>&1; echo "rc=$?" >> $R/beside-test.txt; tail -5 $R/beside-test.txt | tee -a $R/log.txt
wait
step "16 concurrent 1024² pages"
HY=build-gpu/src/cli/hyocr
b16() { local mb=$1; shift; env "$@" $HY run --model /tmp/hy-full --image /tmp/img/page_1024.png --task recognize --device cuda --repeat 16 --max-batch $mb --warmup --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl 2>$R/err.txt >$R/b.jsonl; echo "mb=$mb $*: $(tail -1 $R/err.txt)"; python3 - $R/b.jsonl <<'PY'
import json,sys
rows=[json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rows=[r for r in rows if 'timings' in r]
v=[r['timings'].get('vision_ms',0) for r in rows]; p=[r['timings'].get('prefill_ms',0) for r in rows]; f=[r['timings'].get('first_token_ms',0) for r in rows]
print("   vision ms", " ".join("%.0f"%x for x in v)); print("   prefill ms"," ".join("%.0f"%x for x in p)); print("   ttft ms"," ".join("%.0f"%x for x in f))
PY
}
{ b16 1 HYOCR_VISION_BESIDE=0
  for i in 1 2; do b16 16 HYOCR_VISION_BESIDE=0; b16 16 HYOCR_VISION_BESIDE=1; done; } 2>&1 | tee -a $R/log.txt
step "GPU tests"
timeout 170 meson test -C build-gpu --no-rebuild --num-processes 3 backend-cuda decode batch >$R/tests.txt 2>&1
grep -E "^ *[0-9]+/[0-9]+ " $R/tests.txt | tee -a $R/log.txt; cp build-gpu/meson-logs/testlog.txt $R/testlog.txt
step done
cd $OUT && tar czf r1.tgz r1 && rm -rf r1
