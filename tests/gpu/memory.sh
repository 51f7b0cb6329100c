#!/bin/bash
# Memory-pressure proof on the GPU machine (issue 4), after a build in build-gpu:
#   source .device/setup.sh && OUT=/some/dir tests/gpu/memory.sh
# 1. a budget smaller than the weights: a clear refusal, exit 1, no crash;
# 2. four 2048² pages under budgets that fit one job but not four: all four finish with identical
#    tokens and no job's peak passes the budget — at 2.6G one at a time, at 3.4G several decode
#    together and preempt each other (swap to pinned host memory, then recompute without swap
#    space). 3G preempted until the backend's own scratch grew (84 MiB by session 21): from then it
#    ran them one at a time, 3.2G two at once without a preemption, 3.4G with three
#    (bench/results/2026-12-05-h200-s21, call2);
# 3. a 4096² page under 3 GiB: finishes (the vision weights leave the device while it decodes),
#    with its peak under 3 GiB.
# Each check prints PASS or FAIL with its numbers.
set -uo pipefail
OUT=${OUT:-/tmp/hyocr-memory}
mkdir -p "$OUT"
CKPT=${HYOCR_BENCH_CKPT:-/tmp/hy-full}
HY=build-gpu/src/cli/hyocr
[ -f "$CKPT/model.safetensors" ] || python3 bench/make_random_checkpoint.py "$CKPT" >/dev/null 2>&1
[ -f /tmp/hyocr-img/page_4096.png ] || python3 bench/make_images.py /tmp/hyocr-img >/dev/null
IMG=/tmp/hyocr-img

echo "-- budget 1G (smaller than the weights)"
$HY run --device cuda --gpu-memory-limit 1G --model "$CKPT" --image $IMG/page_1024.png --task recognize \
    --max-new-tokens 4 --format json >/dev/null 2>"$OUT/mem1g.err"
rc=$?
cat "$OUT/mem1g.err"
if [ $rc = 1 ] && grep -q "memory limit" "$OUT/mem1g.err"; then echo "PASS refusal (exit $rc)"; else echo "FAIL refusal (exit $rc)"; fi

# $1 budget, $2 swap GiB (0 = recompute), $3 label; every job must finish with 256 tokens, under the
# budget, with the same tokens as every other (same page, greedy), and $4 = "preempt" demands preemptions.
four() {
    local budget=$1 swap=$2 label=$3 want=$4
    echo "-- four 2048² pages under $budget, swap space $swap GiB"
    $HY run --device cuda --gpu-memory-limit "$budget" --swap-space "$swap" --model "$CKPT" --image $IMG/page_2048.png \
        --repeat 4 --task recognize --max-new-tokens 256 --ignore-eos --format jsonl >"$OUT/four-$label.jsonl" \
        2>"$OUT/four-$label.err"
    local rc=$?
    grep -E "preempted|one at a time|hyocr run:" "$OUT/four-$label.err" | tail -8
    python3 - "$OUT/four-$label.jsonl" $rc "$budget" "$label" "$want" <<'EOF2'
import json, sys
jobs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
budget = float(sys.argv[3].rstrip("G")) * 2 ** 30
ok = sys.argv[2] == "0" and len(jobs) == 4
for j in jobs:
    n, peak = len(j.get("token_ids", [])), j.get("memory", {}).get("peak", 0)
    print("job: %d tokens, preempted %d, peak %.3f GiB, error %s" % (n, j.get("preempted", 0), peak / 2 ** 30,
                                                                     j.get("error")))
    ok = ok and n == 256 and not j.get("error") and peak <= budget
same = len({tuple(j.get("token_ids", [])) for j in jobs}) == 1
pre = sum(j.get("preempted", 0) for j in jobs)
ok = ok and same and (pre > 0 or sys.argv[5] != "preempt")
print("%s four under %s (%s): preemptions %d, identical tokens %s" % ("PASS" if ok else "FAIL", sys.argv[3],
                                                                     sys.argv[4], pre, same))
EOF2
}
four 2.6G 4 sequential any
four 3.4G 4 swap preempt
four 3.4G 0 recompute preempt

echo "-- 4096² page under 3G"
$HY run --device cuda --gpu-memory-limit 3G --model "$CKPT" --image $IMG/page_4096.png --task recognize \
    --max-new-tokens 256 --ignore-eos --format json >"$OUT/mem3g.json" 2>"$OUT/mem3g.err"
rc=$?
tail -c 800 "$OUT/mem3g.err"
python3 - "$OUT/mem3g.json" $rc <<'EOF'
import json, sys
try:
    r = json.load(open(sys.argv[1]))[0]
except ValueError:
    print("FAIL 4096² under 3G (no result, exit %s)" % sys.argv[2]); sys.exit()
peak = r["memory"]["peak"]
n = len(r["token_ids"])
print("prompt %d tokens, %d generated, timings %s" % (r["prompt_tokens"], n, r["timings"]))
ok = sys.argv[2] == "0" and n == 256 and peak <= 3 * 2 ** 30
print("%s 4096² under 3G: peak %.3f GiB" % ("PASS" if ok else "FAIL", peak / 2 ** 30))
EOF
