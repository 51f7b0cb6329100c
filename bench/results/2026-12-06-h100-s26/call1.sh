# What session 24 could not run (its device machine never started; ~220 s of device time): the pick's
# log-probabilities on the card — the CUDA op test against the host's rules, the tokens with and
# without them, and what asking for them costs 16 concurrent pages on the device path
# (HYOCR_PICK_LOGPROBS=1) against the host path (the default on CUDA until this passes) — then the
# benchmark of record. Each step is bounded; ~200 s once the machine is up. From the repository root:
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-06-cpu-s24/next.sh
source bench/results/2026-12-05-h200-s21/prep.sh
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
W=/tmp/s24; rm -rf $W; mkdir -p $W
HY=build-gpu/src/cli/hyocr
timeout 90 build-gpu/tests/test-decode -p /decode/cuda/logprobs-op -p /decode/cuda/pick-op -p /decode/cuda/greedy \
  > $W/tests.txt 2>&1; echo "decode tests: exit $?" >> $W/tests.txt; tail -8 $W/tests.txt
ids() { python3 -c "import json,hashlib;print(hashlib.md5(str([json.loads(l)['token_ids'] for l in open('$1')]).encode()).hexdigest()[:8])"; }
# none, on the device path, on the host path; the same tokens all three ways
for rep in 1 2; do
  for mode in none pick host; do
    lp="--logprobs 5"; sw=1
    [ $mode = none ] && lp=""
    [ $mode = host ] && sw=0
    HYOCR_PICK_LOGPROBS=$sw timeout 40 $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_1024.png \
      --task recognize --device cuda --repeat 16 --max-batch 16 --warmup --max-new-tokens 256 --ignore-eos \
      --no-tail-stop --format jsonl $lp > $W/lp${rep}_$mode.jsonl 2> $W/lp.err
    echo "16 concurrent, logprobs $mode: $(tail -1 $W/lp.err) ids $(ids $W/lp${rep}_$mode.jsonl)"
  done
done | tee $W/logprobs.txt
# the values' shape on the real-size model: at most 0, the top list in order, the chosen token in it when
# it was the raw argmax, and exp over the top at most 1
python3 - $W/lp1_pick.jsonl $W/lp1_host.jsonl <<'PY' | tee -a $W/logprobs.txt
import json, math, sys
bad = n = argmax = 0
pick = [json.loads(l) for l in open(sys.argv[1])]
host = [json.loads(l) for l in open(sys.argv[2])]
diff = max(abs(a["logprob"] - b["logprob"]) for p, h in zip(pick, host) for a, b in zip(p["logprobs"], h["logprobs"]))
same_top = all([t["id"] for t in a["top_logprobs"]] == [t["id"] for t in b["top_logprobs"]]
               for p, h in zip(pick, host) for a, b in zip(p["logprobs"], h["logprobs"]))
print(f"device path against host path: largest |logprob difference| {diff:.3g}, same top ids: {same_top}")
for r in pick:
    for tid, lp in zip(r["token_ids"], r["logprobs"]):
        n += 1
        top = lp["top_logprobs"]
        vals = [t["logprob"] for t in top]
        ok = lp["logprob"] <= 0 and len(top) == 5 and vals == sorted(vals, reverse=True) and sum(map(math.exp, vals)) <= 1 + 1e-5
        if top and top[0]["id"] == tid:
            argmax += 1
            ok &= abs(top[0]["logprob"] - lp["logprob"]) < 1e-6
        bad += not ok
print(f"logprobs checked: {n} tokens, {argmax} the raw argmax, {bad} malformed")
PY
OUT=$OUT/record PART=2 HYOCR_RECORD_SECONDS=110 bash bench/record.sh
tar czf $OUT/s24.tgz -C $W tests.txt logprobs.txt
