# Written in session 22, which had no device machine: what its next session should run first, in
# one call (~9 min on a fresh machine). Run as s21's calls were: carry .device, then
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-05-cpu-s22/next.sh
# 0. HYOCR_PROFILE's new table of the card idle before each op (cuda-profile.c, written this
#    session and never run): 16 concurrent 1024² pages, as session 21's call5/prof16.txt. Its
#    "idle before graph launch" row is the host's time between decode steps, which async
#    scheduling (launch step t+1 before reading step t's tokens) could hide; PERFORMANCE.md's
#    session 22 paragraph bounds it at ~4 % of the run from call5's numbers.
# 1. The benchmark of record (bench/record.sh PART=2), owed on an H200 since session 13: name no
#    kind (or needs_h200 only if H100s are all that come and the H200 row is the point).
# 2. k_decode's split at 2-7 rows (session 21's call7 kernel data: at 4 rows 192-key splits
#    14.9-16.2 µs a layer against the rule's 256 at 16.1-17.3). The engine A/B needs no build:
#    HYOCR_DECODE_SPLIT=192 fixes the split of every bound step, and at --max-batch 4 over 16
#    pages nearly every step has 4 rows. If 192 wins by more than the runs' spread, size
#    bound_split_len's k_decode steps (rows < DECODE_STAGED_ROWS) at the typical context
#    (cap - HYOCR_DECODE_CTX_STEP / 2) as the staged kernel's are, and check 2 and 6 rows too.
source bench/results/2026-12-05-h200-s21/prep.sh
nvidia-smi --query-gpu=name --format=csv,noheader
W=/tmp/s22n; rm -rf $W; mkdir -p $W
HY=build-gpu/src/cli/hyocr
runN() { $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_1024.png --task recognize --device cuda \
  --repeat 16 --max-batch $1 --warmup --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl > $W/r.jsonl 2> $W/r.err; \
  echo "$(tail -1 $W/r.err) ids $(python3 -c "import json,hashlib;print(hashlib.md5(str([json.loads(l)['token_ids'] for l in open('$W/r.jsonl')]).encode()).hexdigest()[:8])")"; }
HYOCR_PROFILE=1 $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_1024.png --task recognize --device cuda \
  --repeat 16 --max-batch 16 --warmup --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl \
  > /dev/null 2> $W/prof16.txt; grep -A12 "idle before each op" $W/prof16.txt
for rep in 1 2 3; do
  for b in 2 4 6; do
    echo "max-batch $b rule: $(runN $b)"
    echo "max-batch $b split 192: $(HYOCR_DECODE_SPLIT=192 runN $b)"
  done
done | tee $W/split.txt
tar czf $OUT/split.tgz -C $W split.txt prof16.txt
OUT=$OUT PART=2 HYOCR_RECORD_SECONDS=400 bash bench/record.sh
