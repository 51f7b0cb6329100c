#!/bin/bash
# A short GPU check after engine changes: build, full-size parity at 2048² (chunked vision and
# prefill), one hyocr benchmark run with its memory figures, then the tiny fixtures in FP16.
set -uo pipefail
OUT=${OUT:-/tmp/hyocr-quick}
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=disabled >"$OUT/setup.log" 2>&1
ninja -C build-gpu src/cli/hyocr >"$OUT/build.log" 2>&1 || { grep -E "error" "$OUT/build.log" | head; exit 1; }
python3 bench/make_random_checkpoint.py /tmp/hy-full >/dev/null 2>&1 &
python3 bench/make_images.py /tmp/img >/dev/null
wait
img=/tmp/img/page_2048.png
python3 bench/hf_reference.py parity --model /tmp/hy-full --image $img --out /tmp/par >"$OUT/parity.log" 2>&1
build-gpu/src/cli/hyocr run --device cuda --model /tmp/hy-full --image $img --task recognize --max-new-tokens 1 \
    --dump /tmp/hyd --format json >/dev/null 2>>"$OUT/parity.log"
python3 tests/gpu/compare.py /tmp/par /tmp/hyd page_2048
for rep in 1 2; do
    build-gpu/src/cli/hyocr run --device cuda --model /tmp/hy-full --image $img --task recognize \
        --max-new-tokens 256 --ignore-eos --format json >"$OUT/hyocr_2048.json" 2>"$OUT/hyocr.err"
done
python3 -c "import json; r=json.load(open('$OUT/hyocr_2048.json'))[0]; print('2048 timings', r['timings']); print('2048 memory', r['memory'])" || tail -5 "$OUT/hyocr.err"
python3 tests/gpu/tiny_parity.py build-gpu/src/cli/hyocr tests/data f16
