#!/bin/bash
# The CPU backend with a BF16 checkpoint's weight matrices kept in their 16 bits (the default)
# against widened to fp32 at load (HYOCR_CPU_F32_WEIGHTS=1), alternated, one process a run, so
# each run pays its own loading: the engine's timings, its weights bytes, the process's peak RSS
# and wall time, one JSON line a run on stdout; and the token ids of both, which must be equal
# (the products are the same bits).
#
#   bench/cpu-weights.sh MODEL IMAGE...      env: ROUNDS=2 TOKENS=32 THREADS=2 HYOCR=build/src/cli/hyocr
set -eu
model=$1
shift
rounds=${ROUNDS:-2}
tokens=${TOKENS:-32}
threads=${THREADS:-2}
hy=${HYOCR:-build/src/cli/hyocr}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for img in "$@"; do
    for r in $(seq "$rounds"); do
        for mode in f32 bf16; do
            sw=0
            [ "$mode" = f32 ] && sw=1
            HYOCR_CPU_F32_WEIGHTS=$sw /usr/bin/time -v -o "$tmp/time" "$hy" run --model "$model" --image "$img" \
                --task recognize --device cpu --threads "$threads" --max-new-tokens "$tokens" --ignore-eos \
                --format json >"$tmp/out.json"
            python3 - "$tmp/out.json" "$tmp/time" "$mode" "$r" "$img" <<'EOF'
import json, re, sys
out, timef, mode, rnd, img = sys.argv[1:]
d = json.load(open(out))[0]
t = open(timef).read()
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1))
wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", t).group(1)
secs = sum(float(x) * 60 ** i for i, x in enumerate(reversed(wall.split(":"))))
print(json.dumps({"image": img.rsplit("/", 1)[-1], "mode": mode, "round": int(rnd), "prompt_tokens": d["prompt_tokens"],
                  "timings": d["timings"], "weights": d["memory"]["weights"], "peak_rss_kib": rss,
                  "wall_s": round(secs, 2), "token_ids": d["token_ids"]}))
EOF
        done
    done
done
