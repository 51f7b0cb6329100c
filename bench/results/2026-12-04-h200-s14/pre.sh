# Sourced by session 14's planned calls (7, 8) from the repository root on the GPU machine: the
# checkpoint and the pages (in the background), the engine and its tests built into build-gpu,
# HY, and show FILE TAG SIZE (a jsonl run's vision / prefill / first token ms and peak bytes, a job a column).
set -u
export PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s)
L=$OUT/log.txt
( [ -f /tmp/hy-full/model.safetensors ] || python3 bench/make_random_checkpoint.py /tmp/hy-full > $OUT/ckpt.txt 2>&1 ) &
( python3 bench/make_images.py /tmp/hyocr-img > /dev/null 2>&1 ) &
[ -f build-gpu/build.ninja ] || { rm -rf build-gpu; meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled --buildtype=release > $OUT/setup.txt 2>&1; }
ninja -C build-gpu > $OUT/build.txt 2>&1 || { tail -30 $OUT/build.txt; exit 1; }
wait
echo "built at $(( $(date +%s) - T0 )) s" >> $L
HY=build-gpu/src/cli/hyocr
show() { python3 -c "
import json
rows=[json.loads(l) for l in open('$1')]
print('%-6s %-9s %s' % ('$2', '$3', ' | '.join('%.2f/%.2f/%.2f peak %d' % (r['timings']['vision_ms'], r['timings']['prefill_ms'], r['timings']['first_token_ms'], r.get('memory',{}).get('peak',-1)) for r in rows)))"; }
