# s14 call7: the ViT's row-wise chunk (HYOCR_VIT_CHUNK_ROWS 4096 default / 8192 / 16384) at 2048² and 4096²: time and peak
source bench/results/2026-12-04-h200-s14/pre.sh
for round in 1 2; do
  for c in 4096 8192 16384; do
    HYOCR_VIT_CHUNK_ROWS=$c $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_2048.png --task recognize --device cuda --repeat 3 --max-batch 1 --warmup \
        --max-new-tokens 8 --ignore-eos --no-tail-stop --format jsonl > /tmp/c.jsonl 2> /tmp/c.err || tail -3 /tmp/c.err >> $L
    show /tmp/c.jsonl $c 2048x3 >> $L
  done
done
for c in 4096 16384; do
  HYOCR_VIT_CHUNK_ROWS=$c $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_2048.png --task recognize --device cuda --max-batch 1 \
      --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl > /tmp/c.jsonl 2> /tmp/c.err || tail -3 /tmp/c.err >> $L
  show /tmp/c.jsonl $c 2048-256t >> $L
done
for c in 4096 16384 4096 16384; do
  HYOCR_VIT_CHUNK_ROWS=$c $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_4096.png --task recognize --device cuda --repeat 1 --max-batch 1 --warmup \
      --max-new-tokens 8 --ignore-eos --no-tail-stop --format jsonl > /tmp/c.jsonl 2> /tmp/c.err || tail -3 /tmp/c.err >> $L
  show /tmp/c.jsonl $c 4096 >> $L
done
echo "all at $(( $(date +%s) - T0 )) s" >> $L
cat $L
