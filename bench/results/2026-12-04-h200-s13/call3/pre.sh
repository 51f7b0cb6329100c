# s13 call 1: fresh per-op profile of a warm 1024² and 2048² job at HEAD; Nsight Compute on k_vis_wg
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
T0=$(date +%s)
( [ -f /tmp/hy-full/model.safetensors ] || python3 bench/make_random_checkpoint.py /tmp/hy-full >/dev/null 2>&1 ) &
( python3 bench/make_images.py /tmp/hyocr-img >/dev/null 2>&1 ) &
[ -f build-gpu/build.ninja ] || { rm -rf build-gpu; meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled --buildtype=release > /tmp/setup.log 2>&1 || tail -20 /tmp/setup.log; }
ninja -C build-gpu >/tmp/build.log 2>&1 || grep -E "error|FAILED" /tmp/build.log | head
wait
echo "built $(( $(date +%s) - T0 )) s"
mkdir -p $OUT/p
HY=build-gpu/src/cli/hyocr
