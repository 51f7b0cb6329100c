# Session 21, call 7: the decode attention alone (bench/decode_bench.cu, one layer a call, the
# graph's time / 24) over rows 2..16, contexts across a 1024² page's decode (1087, 1215, 1343)
# and a 2048² page's first (4191), split lengths 192..1024 (0: the engine's pick), k_decode and
# two stages — to find which split length a step of N rows wants at a context bound of 2048.
export PATH=/usr/local/cuda/bin:$PATH
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Ikernels bench/decode_bench.cu -o /tmp/decode-bench || exit 1
HK_BENCH_ROWS=2,4,6,8,10,12,14,16 HK_BENCH_CTX=1087,1215,1343,4191 HK_BENCH_SPLITS=0,192,256,320,384,448,512,640,768,1024 \
  HK_BENCH_STAGES=0,2 /tmp/decode-bench > $OUT/decode-sweep.txt 2>&1
echo "rc=$?"; nvidia-smi --query-gpu=name --format=csv,noheader >> $OUT/decode-sweep.txt
wc -l $OUT/decode-sweep.txt
