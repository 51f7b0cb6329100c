# Session 26, call 5: the 16-row decode attention (44.5 µs a layer, 1.8 TB/s: call2) by split length
# and stage count, to find a layout nearer the card's bandwidth. From the repository root:
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-06-h100-s26/call5.sh
export PATH=/usr/local/cuda/bin:$PATH
W=$OUT
nvidia-smi --query-gpu=name --format=csv,noheader | tee $W/gpu.txt
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Ikernels bench/decode_bench.cu -o /tmp/decode-bench \
  > $W/nvcc.txt 2>&1 || { tail $W/nvcc.txt; exit 1; }
HK_BENCH_ROWS=16,8 HK_BENCH_CTX=1087,1215,1343 HK_BENCH_SPLITS=0,192,256,320,384,448,512,576,640,704,1024 \
  HK_BENCH_STAGES=0,2,3,4 timeout 300 /tmp/decode-bench > $W/sweep.txt 2>&1; echo "exit $?" >> $W/sweep.txt
python3 - $W/sweep.txt <<'PY'
import sys, collections
rows = collections.defaultdict(list)
for l in open(sys.argv[1]):
    f = l.split()
    if len(f) < 7 or f[1] != "rows": continue
    rows[(int(f[0]), int(f[2]))].append((float(f[5]), f[3], f[4], f[6]))
for k in sorted(rows):
    r = sorted(rows[k])
    eng = [x for x in r if not x[1].endswith("*")]
    print(k, "best:", r[:4], "engine's pick:", eng[:4])
PY
