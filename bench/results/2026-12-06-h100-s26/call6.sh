# Session 26, call 6: what rope_qknorm's own launch costs a graph-replayed decode step — an upper
# bound for fusing it into the decode attention. Runs with skip-rope.patch applied (the op does
# nothing for steps of ≤ 16 rows: wrong text, right timing; not in the tree), alternated.
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-06-h100-s26/call6.sh
source bench/results/2026-12-05-h200-s21/prep.sh
W=$OUT; HY=build-gpu/src/cli/hyocr
for rep in 1 2 3; do for skip in "" 1; do
  for mb in 1 16; do
    HYOCR_SKIP_ROPE=$skip timeout 60 $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_1024.png --task recognize \
      --device cuda --repeat 16 --max-batch $mb --warmup --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl \
      > /dev/null 2> $W/r.err; echo "skip=${skip:-0} max-batch $mb: $(tail -1 $W/r.err)"
  done
done; done | tee $W/skip-rope.txt
