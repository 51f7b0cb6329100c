# Session 35, call 4: the deep rule down to 12 rows (DECODE_DEEP_FILL 0.7, after call3's bench:
# 12–15 rows in one CTA each beat the two-round splits by 8–10 %) in the engine — 12 and 14
# concurrent 1024² pages at max batch 12 / 14 (every step that many rows) with the rule against
# HYOCR_DECODE_STAGES=2, alternated (two rounds: the session's device time was nearly spent).
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-07-s35/call4.sh
export OUT=${OUT:-/tmp/s35} PATH=/usr/local/cuda/bin:$PATH
W=$OUT/call4; mkdir -p $W; HY=build-gpu/src/cli/hyocr
nvidia-smi --query-gpu=name --format=csv,noheader | tee $W/gpu.txt
source bench/results/2026-12-05-h200-s21/prep.sh > $W/prep.txt 2>&1; echo "prep exit $?"
pages() {   # N pages at max batch N, tokens/s and the ids' digest
    timeout 60 $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_1024.png --task recognize --device cuda \
        --repeat $1 --max-batch $1 --warmup --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl > $W/r.jsonl 2> $W/r.err
    echo "$(grep -o "[0-9.]* tokens/s" $W/r.err | tail -1) ids $(python3 -c "import json,hashlib;print(hashlib.md5(str([json.loads(l)['token_ids'] for l in open('$W/r.jsonl')]).encode()).hexdigest()[:8])")"
}
for rep in 1 2; do
    for n in 12 14; do echo "$n rule: $(pages $n)"; echo "$n stages2: $(HYOCR_DECODE_STAGES=2 pages $n)"; done
done | tee $W/pages.txt
rm -f $W/r.jsonl $W/r.err
