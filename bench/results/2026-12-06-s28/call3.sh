# Session 28, call 3: k_prefill_tma's splits within the engine's spare (prefill_bench's 22M rows), and
# in the engine: warm pages with HYOCR_PREFILL_TMA=0 / 1 / 1 with HYOCR_PREFILL_SPARE=0 (alternated),
# and per-op profiles of a warm 2048² job with each kernel.
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-06-s28/call3.sh
source bench/results/2026-12-05-h200-s21/prep.sh
W=${OUT:-/tmp/s28}/call3; mkdir -p $W; HY=build-gpu/src/cli/hyocr
nvidia-smi --query-gpu=name --format=csv,noheader | tee $W/gpu.txt
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Ikernels bench/prefill_bench.cu -o /tmp/pb > $W/pb-build.log 2>&1 || tail -5 $W/pb-build.log
timeout 90 /tmp/pb f16 > $W/prefill-bench-f16.txt 2>&1; echo "prefill_bench exit $?"
grep -E "^total|^PASS|^FAIL|^CHOICE|^the engine" $W/prefill-bench-f16.txt | grep -E "MW1 s4|TMA|PASS|FAIL|CHOICE|engine"
grep -E "^[0-9]+ .*(MW1 s4 22M|TMA s. 22M)" $W/prefill-bench-f16.txt | head -24
echo "=== warm pages (first token/vision/prefill ms)"
for rep in 1 2; do for v in "0 1" "1 1" "1 0"; do set -- $v; for size in 2048 4096; do
  n=$([ $size = 4096 ] && echo 3 || echo 4)
  HYOCR_PREFILL_TMA=$1 HYOCR_PREFILL_SPARE=$2 timeout 120 $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_$size.png \
    --task recognize --device cuda --repeat $n --max-batch 1 --max-new-tokens 1 --ignore-eos --no-tail-stop --format json 2>/dev/null |
  python3 -c "import json,sys; r=json.load(sys.stdin)[1:]; print('ptma=$1 spare=$2 $size:', ' '.join('%.2f/%.2f/%.2f' % (j['timings']['first_token_ms'], j['timings']['vision_ms'], j['timings']['prefill_ms']) for j in r))"
done; done; done | tee $W/warm.txt
echo "=== profiles"
for sw in 0 1; do for n in 2 3; do
  HYOCR_PREFILL_TMA=$sw HYOCR_PROFILE=1 timeout 60 $HY run --device cuda --model /tmp/hy-full --image /tmp/hyocr-img/page_2048.png \
    --task recognize --repeat $n --max-batch 1 --max-new-tokens 8 --ignore-eos --format json > /dev/null 2> $W/prof-$sw-$n.txt
done
python3 bench/profile_diff.py $W/prof-$sw-2.txt $W/prof-$sw-3.txt 1 > $W/prof-2048-ptma$sw.md; head -16 $W/prof-2048-ptma$sw.md
done
