#!/bin/bash
# Speculative decoding with the DFlash draft on the GPU machine (issue 20), after a CUDA build
# (tests/gpu/dflash.sh makes one):
#
#   source .device/setup.sh && OUT=/some/dir bench/dflash-bench.sh
#
# On the full-size random checkpoint with a random full-size draft (bench/make_random_checkpoint.py
# --draft). Random weights accept almost nothing, so the machinery is measured at a chosen
# acceptance: the draft stand-in (HYOCR_DRAFT_STANDIN) verifies the job's own plain continuation,
# right for its first k drafts a round (k = 6.4, Tencent's mean, alternates 6 and 7) and wrong
# after; the draft still runs. Every hyocr row is a warm engine's second job (--repeat 2
# --max-batch 1), a 2048² page, NEW tokens (1024) with --ignore-eos. Writes dflash_*.json,
# dflash-bench.md (the table), and the losslessness check (dflash-lossless.txt).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/hyocr-dflash}
CKPT=${HYOCR_BENCH_CKPT:-/tmp/hy-full-dflash}
NEW=${HYOCR_BENCH_NEW_TOKENS:-1024}
IMGDIR=${HYOCR_BENCH_IMAGES:-/tmp/hyocr-img}
HY=${HY:-build-gpu/src/cli/hyocr}
mkdir -p "$OUT"
[ -f "$CKPT/dflash/model.safetensors" ] || python3 bench/make_random_checkpoint.py "$CKPT" --draft >"$OUT/ckpt.log" 2>&1
[ -f "$IMGDIR/page_2048.png" ] || python3 bench/make_images.py "$IMGDIR" >/dev/null

# $1 = output json (the warm job), $2 = image, $3 = jobs (--repeat, all concurrent), then env assignments
run_json() {
    local out=$1 img=$2 n=$3
    shift 3
    env "$@" $HY run --model "$CKPT" --image "$img" --task recognize --device cuda --repeat "$n" --max-batch "$n" \
        --max-new-tokens "$NEW" --ignore-eos --no-tail-stop --repetition-penalty "${PEN:-1.08}" ${HY_EXTRA:-} --format json >"$out.all" \
        2>"$out.err" || echo "hyocr $(basename "$out") failed (see $out.err)"
}
warm() {   # the second of two jobs one after the other
    local out=$1 img=$2
    shift 2
    env "$@" $HY run --model "$CKPT" --image "$img" --task recognize --device cuda --repeat 2 --max-batch 1 \
        --max-new-tokens "$NEW" --ignore-eos --no-tail-stop --repetition-penalty "${PEN:-1.08}" ${HY_EXTRA:-} --format json >"$out.all" \
        2>>"$OUT/dflash-hyocr.log" || echo "hyocr $(basename "$out") failed (see dflash-hyocr.log)"
    python3 -c "import json; json.dump(json.load(open('$out.all'))[1], open('$out', 'w'), indent=1)" 2>/dev/null
}
ids_of() { python3 -c "import json; print(' '.join(map(str, json.load(open('$1'))['token_ids'])))"; }

P=$IMGDIR/page_2048.png
# --- losslessness: 1024 tokens, penalty 1.0 and 1.08, plain vs the real draft vs the stand-in ---
for pen in 1.0 1.08; do
    PEN=$pen HY_EXTRA="--speculative-tokens 0" warm "$OUT/dflash_plain_rp$pen.json" "$P"
    ids_of "$OUT/dflash_plain_rp$pen.json" >"$OUT/cont_rp$pen.txt"
    PEN=$pen warm "$OUT/dflash_draft_rp$pen.json" "$P"
    PEN=$pen warm "$OUT/dflash_standin15_rp$pen.json" "$P" HYOCR_DRAFT_STANDIN="$OUT/cont_rp$pen.txt" \
        HYOCR_DRAFT_STANDIN_K=15
done
python3 bench/dflash_table.py lossless "$OUT" | tee "$OUT/dflash-lossless.txt"

# --- speed at batch 1 (penalty 1.08, the release's): plain, then the stand-in at k = 0 (the
# fallback), 3, 6.4, 15; the draft's cost (k = 6.4 without the draft running) and the random draft ---
C=$OUT/cont_rp1.08.txt
HY_EXTRA="--speculative-tokens 0" warm "$OUT/dflash_b1_plain.json" "$P"
for k in 0 3 6.4 15; do
    warm "$OUT/dflash_b1_k$k.json" "$P" HYOCR_DRAFT_STANDIN="$C" HYOCR_DRAFT_STANDIN_K=$k
done
warm "$OUT/dflash_b1_k6.4-nodraft.json" "$P" HYOCR_DRAFT_STANDIN="$C" HYOCR_DRAFT_STANDIN_K=6.4 \
    HYOCR_DRAFT_STANDIN_NO_DRAFT=1
warm "$OUT/dflash_b1_k6.4-rowbyrow.json" "$P" HYOCR_DRAFT_STANDIN="$C" HYOCR_DRAFT_STANDIN_K=6.4 \
    HYOCR_VERIFY_KERNEL=0
warm "$OUT/dflash_b1_draft.json" "$P"

# --- batches of 1024² pages (256 tokens each): plain against k = 6.4 ---
Q=$IMGDIR/page_1024.png
NEW=256 HY_EXTRA="--speculative-tokens 0" warm "$OUT/dflash_q1024_plain.json" "$Q"
ids_of "$OUT/dflash_q1024_plain.json" >"$OUT/cont_1024.txt"
for n in 4 16; do
    NEW=256 HY_EXTRA="--speculative-tokens 0" run_json "$OUT/dflash_batch${n}_plain.json" "$Q" $n
    NEW=256 run_json "$OUT/dflash_batch${n}_k6.4.json" "$Q" $n HYOCR_DRAFT_STANDIN="$OUT/cont_1024.txt" \
        HYOCR_DRAFT_STANDIN_K=6.4
done
python3 bench/dflash_table.py speed "$OUT" | tee "$OUT/dflash-bench.md"
python3 bench/dflash_table.py check "$OUT" | tee -a "$OUT/dflash-lossless.txt"
