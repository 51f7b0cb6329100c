#!/bin/bash
# hyocr serve, measured at the client over HTTP (bench/serve_client.py):
#   - N concurrent clients (1, 4, 16, 64), each sending 1024² pages for 256 tokens
#     (ignore_eos): requests/s, aggregate tokens/s, time to first token p50/p99
#   - the HunyuanOCR-Bench quick9-c1 speed protocol: 9 pages one at a time (A4 at
#     200 dpi, 1654×2339), ignore_eos at 597, 1836, 390, 172, 181, 535, 1291, 250
#     and 694 tokens: pages/s = 9 / Σ latency
# and a table in $OUT/serve-bench.md.
#
#   source .device/setup.sh && bench/serve-bench.sh       the GPU machine (CUDA, sm_90, the
#                                                           full-size random checkpoint)
#   HYOCR_SERVE_BENCH_SMALL=1 bench/serve-bench.sh        any machine: the CPU, the tiny test
#                                                           checkpoint, small sizes (checks the script)
#
# hyocr serve needs libsoup 3; a machine without it is told what to install (bench/serve-debs.sh
# fetches the Debian 12 packages into .device/debs on a machine that has apt).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/hyocr-serve-bench}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1

if [ -n "${HYOCR_SERVE_BENCH_SMALL:-}" ]; then
    BUILD=${HYOCR_SERVE_BENCH_BUILD:-build}
    CKPT=tests/data/ckpt-flat
    DEVICE=cpu
    PAGE=tests/data/images/big_420x300.png
    A4=tests/data/images/big_420x300.png
    CLIENTS=1,4
    REQUESTS=2
    TOKENS=16
    LENGTHS=12,37,8,3,4,11,26,5,14   # the protocol's lengths / 50
    MAX_BATCH=16
else
    BUILD=build-serve
    CKPT=${HYOCR_BENCH_CKPT:-/tmp/hy-full}
    DEVICE=cuda
    CLIENTS=1,4,16,64
    REQUESTS=${HYOCR_SERVE_BENCH_REQUESTS:-4}
    TOKENS=256
    LENGTHS=597,1836,390,172,181,535,1291,250,694
    MAX_BATCH=64
    export PATH=/usr/local/cuda/bin:$PATH
fi
HY=$BUILD/src/cli/hyocr

need_libsoup() {
    cat >&2 <<'EOF'
serve-bench: hyocr was built without its server: `hyocr serve` needs libsoup 3 (libsoup-3.0-dev),
which this machine does not have. On a Debian 12 machine with apt, bench/serve-debs.sh puts the
packages in .device/debs; then, here: rm -f /opt/hyroot/.done && source .device/setup.sh, and run
this script again (it reconfigures build-serve).
EOF
    exit 2
}

if [ -z "${HYOCR_SERVE_BENCH_SMALL:-}" ]; then
    pkg-config --exists 'libsoup-3.0 >= 3.0' || need_libsoup
    if [ ! -f $BUILD/build.ninja ]; then
        meson setup $BUILD -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled --buildtype=release \
            >"$OUT/setup.log" 2>&1 || { tail -30 "$OUT/setup.log"; exit 1; }
    fi
    ninja -C $BUILD src/cli/hyocr >"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
    [ -f "$CKPT/model.safetensors" ] || python3 bench/make_random_checkpoint.py "$CKPT" >"$OUT/ckpt.log" 2>&1
    python3 bench/make_images.py "$OUT/img" >/dev/null || exit 1
    PAGE=$OUT/img/page_1024.png
    A4=$OUT/img/page_a4.png
fi
"$HY" serve --help >/dev/null 2>&1 || need_libsoup

# the server: any free port, ready once warmed up
: >"$OUT/server.log"
"$HY" serve --model "$CKPT" --device $DEVICE --port 0 --served-model-name hyocr --max-batch $MAX_BATCH \
    --max-queue 4096 2>>"$OUT/server.log" &
server=$!
trap 'kill -TERM $server 2>/dev/null' EXIT
timeout 600 grep -m1 -qE "ready|hyocr serve: [^l]" <(tail -n +1 -f --pid=$$ "$OUT/server.log")
port=$(grep -oE "listening on http://[0-9.]+:[0-9]+" "$OUT/server.log" | grep -oE "[0-9]+$")
grep -q "ready" "$OUT/server.log" || { cat "$OUT/server.log"; exit 1; }
echo "server: $(grep -m1 ready "$OUT/server.log")"

status=0
python3 bench/serve_client.py --port "$port" --json "$OUT/concurrency.json" concurrency --image "$PAGE" \
    --clients $CLIENTS --requests $REQUESTS --max-tokens $TOKENS || status=1
python3 bench/serve_client.py --port "$port" --json "$OUT/quick9.json" quick9 --image "$A4" --lengths $LENGTHS \
    || status=1
curl -s "http://127.0.0.1:$port/metrics" >"$OUT/metrics.txt" 2>/dev/null

kill -TERM $server
wait $server || status=1
trap - EXIT

python3 - "$OUT" "$DEVICE" "$(hostname)" <<'PY' | tee "$OUT/serve-bench.md"
import json, os, sys
out, device, host = sys.argv[1:4]
c = json.load(open(os.path.join(out, "concurrency.json")))
q = json.load(open(os.path.join(out, "quick9.json")))
print(f"hyocr serve on {device} ({host}): {os.path.basename(c['image'])}, {c['max_tokens']} tokens per request "
      f"(ignore_eos), {c['requests_per_client']} requests per client, streamed, measured at the client\n")
print("| clients | requests/s | tokens/s | × 1 client | TTFT p50 | TTFT p99 | latency p50 |")
print("|---:|---:|---:|---:|---:|---:|---:|")
base = c["rows"][0]["tokens_per_s"]
for r in c["rows"]:
    print(f"| {r['clients']} | {r['requests_per_s']:.2f} | {r['tokens_per_s']:.0f} | {r['tokens_per_s'] / base:.1f} | "
          f"{r['ttft_p50_s'] * 1000:.0f} ms | {r['ttft_p99_s'] * 1000:.0f} ms | {r['latency_p50_s']:.2f} s |")
print(f"\nquick9-c1 shape: {len(q['pages'])} pages ({os.path.basename(q['image'])}) one at a time, "
      f"{sum(p['tokens'] for p in q['pages'])} tokens: Σ latency {q['total_latency_s']:.2f} s → "
      f"**{q['pages_per_s']:.3f} pages/s**")
print("\n| tokens | latency | first token |")
print("|---:|---:|---:|")
for p in q["pages"]:
    print(f"| {p['tokens']} | {p['latency_s']:.3f} s | {p['ttft_s'] * 1000:.0f} ms |")
PY
exit $status
