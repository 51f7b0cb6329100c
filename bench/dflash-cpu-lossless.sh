#!/bin/bash
# Speculative decoding's losslessness on the CPU backend with the full-size random checkpoint and
# draft (issue 20): for penalty 1.0 and 1.08, 1024 greedy tokens of plain decoding against the
# random draft (which accepts ~nothing: the rounds, then the fallback) and against the stand-in
# proposing the plain continuation right for all 15 drafts (every token from a 16-row verify step).
# A small page keeps the CPU's vision and prefill short; decode is what is checked.
#   bench/dflash-cpu-lossless.sh [build dir] [checkpoint]   (make_random_checkpoint.py DIR --draft)
set -uo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}
CKPT=${2:-/tmp/hy-full-dflash}
IMG=${IMG:-tests/data/images/big_420x300.png}
NEW=${NEW:-1024}
T=$(mktemp -d)
run() {   # $1 out, $2 penalty, then extra args / env
    local out=$1 pen=$2
    shift 2
    env "$@" $B/src/cli/hyocr run --device cpu --model "$CKPT" --image "$IMG" --task recognize \
        --max-new-tokens "$NEW" --ignore-eos --no-tail-stop --repetition-penalty "$pen" --format json \
        ${ARGS:-} >"$out" 2>"$out.err" || { echo "failed: $out: $(tail -1 "$out.err")"; return 1; }
}
ids() { python3 -c "
import json, sys
d = json.load(open(sys.argv[1])); d = d[-1] if isinstance(d, list) else d
print(' '.join(map(str, d['token_ids'])), file=open(sys.argv[2], 'w'))
s = d.get('speculative') or {}
print('rounds %s, round tokens %s, fallbacks %s' % (s.get('rounds'), s.get('tokens'), s.get('fallbacks')))" "$1" "$2"; }
verdict() { python3 -c "
import sys
a = open(sys.argv[1]).read().split(); b = open(sys.argv[2]).read().split()
d = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)
print('identical (%d tokens)' % len(a) if d is None and len(a) == len(b) else 'DIFFER from token %s' % d)" "$1" "$2"; }
for pen in 1.0 1.08; do
    ARGS="--speculative-tokens 0" run "$T/plain.json" $pen && ids "$T/plain.json" "$T/plain.txt" >/dev/null
    run "$T/draft.json" $pen && echo "penalty $pen, random draft: $(ids "$T/draft.json" "$T/draft.txt"); $(verdict "$T/plain.txt" "$T/draft.txt")"
    ARGS="--speculative-tokens 15" run "$T/k15.json" $pen HYOCR_DRAFT_STANDIN="$T/plain.txt" HYOCR_DRAFT_STANDIN_K=15 &&
        echo "penalty $pen, stand-in k = 15: $(ids "$T/k15.json" "$T/k15.txt"); $(verdict "$T/plain.txt" "$T/k15.txt")"
done
rm -rf "$T"
