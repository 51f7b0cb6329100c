# Sourced by session 14's planned calls (7, 8) from the repository root on the GPU machine: the
# checkpoint and the pages (in the background), the engine and its tests built into build-gpu,
# HY, and show FILE TAG SIZE (a jsonl run's vision / prefill / first token ms and peak bytes, a job a column);
# job and ab (session 15's calls): a warm run of one page size, and an A/B of a switch alternated.
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
# job VAR=VAL SIZE REPEAT [NEW_TOKENS]: warm jobs of the page of that size (one process), a line in the log
job() {
  local env=$1 size=$2 rep=$3 new=${4:-8}
  env "$env" $HY run --model /tmp/hy-full --image /tmp/hyocr-img/page_$size.png --task recognize --device cuda --repeat $rep \
    --max-batch 1 --warmup --max-new-tokens $new --ignore-eos --no-tail-stop --format jsonl > /tmp/o.jsonl 2> /tmp/o.err \
    || tail -3 /tmp/o.err >> $L
  show /tmp/o.jsonl "${env#*=}" "${size}x$rep" >> $L
}
# ab VAR "SIZE REPEAT"...: VAR=0 against VAR=1, three rounds in alternated order
ab() {
  local var=$1 order v spec size rep
  shift
  local specs=("$@")
  for order in "0 1" "1 0" "0 1"; do
    for v in $order; do
      for spec in "${specs[@]}"; do
        read -r size rep <<< "$spec"
        job "$var=$v" "$size" "$rep"
      done
    done
  done
}
