set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
R=$OUT/r4; mkdir -p $R
rm -rf /tmp/ds && mkdir -p /tmp/ds && tar -xf .device/decstep.tar -C /tmp/ds && cp -r .device /tmp/ds/
cd /tmp/ds
[ -f /tmp/hy-full/model.safetensors ] || python3 bench/make_random_checkpoint.py /tmp/hy-full >/dev/null 2>&1 &
OUT=$R timeout 330 bash bench/decstep.sh micro > $R/micro.log 2>&1; echo "micro rc $?" >> $R/micro.log
wait
B=build-gpu
ninja -C $B tests/test-decode >/dev/null 2>&1
run() { echo "== $1"; shift; env "$@" HYOCR_DECODE_BENCH=/tmp/hy-full HYOCR_DECODE_BENCH_MODES=2 timeout 100 $B/tests/test-decode -p /decode/cuda/bench 2>&1 | grep "^# decode"; }
{
run "default"
run "STAGES=3" HYOCR_DECODE_STAGES=3
run "ROPE_HEADS=4" HYOCR_ROPE_HEADS=4
run "all (STAGES=3 ROPE_HEADS=4 NORM_HELD)" HYOCR_DECODE_STAGES=3 HYOCR_ROPE_HEADS=4 HYOCR_GEMM_NORM_HELD=1
} > $R/steps.txt 2>&1
cd $OUT && tar czf r4.tgz r4 && rm -rf r4
