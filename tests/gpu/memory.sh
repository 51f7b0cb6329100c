#!/bin/bash
# Memory-pressure proof on the GPU machine (issue 4), after a build in build-gpu:
#   source .device/setup.sh && OUT=/some/dir tests/gpu/memory.sh
# 1. a budget smaller than the weights: a clear refusal, exit 1, no crash;
# 2. four 2048² pages under a budget that fits one job but not four: all four finish, through
#    preemption (swap to pinned host memory), and no job's peak passes the budget;
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

echo "-- four 2048² pages under 2.6G with 4 GiB of swap space"
$HY run --device cuda --gpu-memory-limit 2.6G --swap-space 4 --model "$CKPT" --image $IMG/page_2048.png --repeat 4 \
    --task recognize --max-new-tokens 256 --ignore-eos --format jsonl >"$OUT/four.jsonl" 2>"$OUT/four.err"
rc=$?
grep -E "preempted|hyocr run:" "$OUT/four.err" | tail -12
python3 - "$OUT/four.jsonl" $rc <<'EOF'
import json, sys
jobs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
budget = 2.6 * 2 ** 30
ok = int(sys.argv[2]) == 0 and len(jobs) == 4
for j in jobs:
    n = len(j.get("token_ids", []))
    peak = j.get("memory", {}).get("peak", 0)
    print("job: %d tokens, preempted %d, peak %.3f GiB, error %s" % (n, j.get("preempted", 0), peak / 2 ** 30,
                                                                     j.get("error")))
    ok = ok and n == 256 and not j.get("error") and peak <= budget
print("PASS four under 2.6G" if ok else "FAIL four under 2.6G",
      "(preemptions: %d)" % sum(j.get("preempted", 0) for j in jobs))
EOF

echo "-- 4096² page under 3G"
$HY run --device cuda --gpu-memory-limit 3G --model "$CKPT" --image $IMG/page_4096.png --task recognize \
    --max-new-tokens 256 --ignore-eos --format json >"$OUT/mem3g.json" 2>"$OUT/mem3g.err"
rc=$?
tail -c 800 "$OUT/mem3g.err"
python3 - "$OUT/mem3g.json" $rc <<'EOF'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except ValueError:
    print("FAIL 4096² under 3G (no result, exit %s)" % sys.argv[2]); sys.exit()
peak = r["memory"]["peak"]
n = len(r["token_ids"])
print("prompt %d tokens, %d generated, timings %s" % (r["prompt_tokens"], n, r["timings"]))
ok = sys.argv[2] == "0" and n == 256 and peak <= 3 * 2 ** 30
print("%s 4096² under 3G: peak %.3f GiB" % ("PASS" if ok else "FAIL", peak / 2 ** 30))
EOF
