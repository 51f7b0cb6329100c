# Session 26, call 8 (call 4 finer): where the host's time goes between two admissions of a 16-page burst
# (the card idles ~1 ms before each page's upload and ~0.7 ms before each prompt's embedding).
# Runs with trace-admit2.patch applied (host timestamps at each admission phase, stderr
# "TR <phase> <µs since the previous mark>"; not in the tree). From the repository root:
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-06-h100-s26/call8.sh
source bench/results/2026-12-05-h200-s21/prep.sh
W=$OUT; HY=build-gpu/src/cli/hyocr
for rep in 1 2; do
  HYOCR_TRACE_ADMIT=1 timeout 60 $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_1024.png --task recognize \
    --device cuda --repeat 16 --max-batch 16 --warmup --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl \
    > /dev/null 2> $W/trace16-$rep.txt; tail -1 $W/trace16-$rep.txt
done
python3 - $W/trace16-2.txt <<'PY'
import sys, statistics, collections
d = collections.defaultdict(list)
for l in open(sys.argv[1]):
    if l.startswith("TR "):
        name, v = l[3:25].strip(), float(l[25:])
        d[name].append(v)
for k, v in d.items():
    v2 = v[2:] if len(v) > 4 else v   # past the warm-up and first pages
    print(f"{k:24s} n={len(v):3d} median {statistics.median(v2):8.1f} µs  max {max(v2):8.1f}")
PY
