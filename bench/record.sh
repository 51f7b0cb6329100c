#!/bin/bash
# What the last commit still owes the H200, in two device calls of under 600 s each (issues
# 15 and 17), from the repository root of the GPU machine:
#   source .device/setup.sh >/dev/null && OUT=$OUT PART=1 bash bench/record.sh
#   source .device/setup.sh >/dev/null && OUT=$OUT PART=2 bash bench/record.sh
# PART=1: build; the CUDA tests (backend-cuda, decode, batch, tuning: the lazy rescale's bars
#         and the side lane's test); bench/vis-lazy.sh (its kernels and tests; the 2048² page
#         end to end was measured as a switch in session 9); bench/beside-ab.sh
#         (HYOCR_VISION_BESIDE off against on, alternated).
# PART=2: bench/gpu-bench.sh (no transformers rows) and bench/serve-bench.sh (two requests a
#         client): the benchmark of record for the commit.
# Each step's output is $OUT/NAME.txt, the benches' own files a folder each, packed (few files
# come back from a call); a line a step with its seconds and exit status is in $OUT/log.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/hyocr-record}
PART=${PART:-1}
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
T0=$(date +%s)
END=$(( T0 + ${HYOCR_RECORD_SECONDS:-570} ))   # what the call may take, the tars included
# step NAME LIMIT_S COMMAND...: runs it with its output in $OUT/NAME.txt, for LIMIT_S or what
# is left of the call, whichever is less
step() {
    local name=$1 limit=$2 t=$(date +%s)
    shift 2
    [ $(( END - t )) -lt "$limit" ] && limit=$(( END - t ))
    [ "$limit" -gt 0 ] || { echo "$name: no time left" | tee -a "$OUT/log.txt"; return; }
    timeout "$limit" bash -c '"$@"' _ "$@" >"$OUT/$name.txt" 2>&1   # bash: the functions below too
    local rc=$?
    echo "[$(( $(date +%s) - T0 )) s] $name: exit $rc after $(( $(date +%s) - t )) s" | tee -a "$OUT/log.txt"
}
build() {
    # the checkpoint while it compiles (the benches make it too where it is missing, and their images)
    [ -f /tmp/hy-full/model.safetensors ] || python3 bench/make_random_checkpoint.py /tmp/hy-full >"$OUT/ckpt.txt" 2>&1 &
    [ -f build-gpu/build.ninja ] || meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 \
        -Ddownload=enabled --buildtype=release || return 1
    ninja -C build-gpu || return 1
    wait
}
tests() {
    meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 4 backend-cuda decode batch tuning
}
export -f build tests
export OUT

case $PART in
1)
    step build 240 build
    step tests 120 tests
    step vis-lazy 150 env OUT="$OUT/vis-lazy" bash bench/vis-lazy.sh
    step beside-ab 200 env OUT="$OUT/beside-ab" bash bench/beside-ab.sh
    ;;
2)
    step build 240 build
    step gpu-bench 300 env OUT="$OUT/gpu-bench" HYOCR_BENCH_SKIP_HF=1 bash bench/gpu-bench.sh
    ln -sfn build-gpu build-serve
    step serve-bench 250 env OUT="$OUT/serve-bench" HYOCR_SERVE_BENCH_REQUESTS=2 bash bench/serve-bench.sh
    ;;
*)
    echo "PART is 1 or 2" >&2
    exit 2
    ;;
esac
# the folders as one file each (a call brings back a few files only)
cd "$OUT" && for d in */; do tar czf "${d%/}.tgz" "${d%/}" && rm -rf "$d"; done
