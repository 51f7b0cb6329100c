# s13: GPU tests of the new k_vis_wg loads; cuBLASLt's answers for a page's products; every k_vis_wg shape with the new loads
set -u
export PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s)
L=$OUT/log.txt
( [ -f /tmp/hy-full/model.safetensors ] || python3 bench/make_random_checkpoint.py /tmp/hy-full > $OUT/ckpt.txt 2>&1 ) &
(nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Ikernels bench/flash_bench.cu -o /tmp/fb-all > $OUT/fb-all-build.txt 2>&1) &
(nvcc -O3 -std=c++17 -arch=sm_90 bench/lt_algos.cu -lcublasLt -o /tmp/lt-algos > $OUT/lt-build.txt 2>&1) &
[ -f build-gpu/build.ninja ] || { rm -rf build-gpu; meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled --buildtype=release > $OUT/setup.txt 2>&1; }
ninja -C build-gpu > $OUT/build.txt 2>&1 || { tail -30 $OUT/build.txt; exit 1; }
wait
echo "built at $(( $(date +%s) - T0 )) s" >> $L
meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 4 backend-cuda batch > $OUT/tests.txt 2>&1
echo "tests rc=$? at $(( $(date +%s) - T0 )) s" >> $L
grep -E "^ *[0-9]+/[0-9]+ |not ok|Bail|ERROR|assert|FAIL" $OUT/tests.txt | head -30 >> $L
/tmp/lt-algos > $OUT/lt-algos.txt 2>&1; echo "lt rc=$? at $(( $(date +%s) - T0 )) s" >> $L
/tmp/fb-all > $OUT/fb-all.txt 2>&1; echo "fb-all rc=$? at $(( $(date +%s) - T0 )) s" >> $L
grep -E "CHOICE|FAIL" $OUT/fb-all.txt >> $L
awk '/^f16 n=16384/{f=1} f && / us /' $OUT/fb-all.txt >> $L
cat $L
