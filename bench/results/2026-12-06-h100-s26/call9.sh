# Session 26, call 9: the prompt on the prefetch thread and the vectorised finiteness check —
# the same tokens as before (call1's md5 of 16 concurrent pages' ids: 5380bb70), a warm page's
# first token, 16 concurrent pages. PINNED="1 0" runs each round with HYOCR_PINNED_PIXELS on,
# then off (call10); unset, with the default.
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-06-h100-s26/call9.sh
source bench/results/2026-12-05-h200-s21/prep.sh
W=$OUT; HY=build-gpu/src/cli/hyocr
ids() { python3 -c "import json,hashlib;print(hashlib.md5(str([json.loads(l)['token_ids'] for l in open('$1')]).encode()).hexdigest()[:8])"; }
for rep in 1 2 3; do for sw in ${PINNED:-default}; do
  [ "$sw" = default ] || { export HYOCR_PINNED_PIXELS=$sw; echo "HYOCR_PINNED_PIXELS=$sw"; }
  timeout 60 $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_1024.png --task recognize --device cuda \
    --repeat 16 --max-batch 16 --warmup --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl > $W/c16.jsonl 2> $W/c16.err
  echo "16 concurrent: $(tail -1 $W/c16.err) ids $(ids $W/c16.jsonl)"
  timeout 60 $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_1024.png --task recognize --device cuda \
    --repeat 4 --max-batch 1 --max-new-tokens 16 --ignore-eos --no-tail-stop --format json 2>/dev/null |
  python3 -c "import json,sys; r=json.load(sys.stdin)[1:]; print('1024 warm (ms first token/vision/prefill):', ' '.join('%.2f/%.2f/%.2f' % (j['timings']['first_token_ms'], j['timings']['vision_ms'], j['timings']['prefill_ms']) for j in r))"
done; done | tee $W/result.txt
