set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
R=$OUT/r2; mkdir -p $R
mkdir -p /tmp/before && tar -xf .device/before.tar -C /tmp/before
(cd /tmp/before && meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=disabled --buildtype=release >/dev/null 2>&1; ninja -C build-gpu src/cli/hyocr >/dev/null 2>&1) || echo "before build failed"
[ -d build-gpu ] || { meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=disabled --buildtype=release >/dev/null 2>&1; }
ninja -C build-gpu src/cli/hyocr >/dev/null 2>&1
[ -f /tmp/hy-full/model.safetensors ] || python3 bench/make_random_checkpoint.py /tmp/hy-full >/dev/null 2>&1
[ -f /tmp/img/page_1024.png ] || python3 bench/make_images.py /tmp/img >/dev/null
for i in 1 2 3; do for v in before after; do
  HY=build-gpu/src/cli/hyocr; [ $v = before ] && HY=/tmp/before/build-gpu/src/cli/hyocr
  echo -n "$v mb16: "; $HY run --model /tmp/hy-full --image /tmp/img/page_1024.png --task recognize --device cuda --repeat 16 --max-batch 16 --warmup --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl 2>&1 >$R/$v-$i.jsonl | tail -1
done; done | tee $R/log.txt
python3 - $R <<'PY'
import json,sys,glob,statistics as st
for v in ("before","after"):
    vis=[];ttft=[]
    for f in glob.glob(f"{sys.argv[1]}/{v}-*.jsonl"):
        for l in open(f):
            try: j=json.loads(l)
            except Exception: continue
            t=j.get("timings",{}); vis.append(t.get("vision_ms",0)); 
    vis.sort(); print(v, "vision_ms per job: median %.1f, min %.1f, max %.1f, n %d"%(st.median(vis),vis[0],vis[-1],len(vis)))
PY
cd $OUT && tar czf r2.tgz r2 && rm -rf r2
