# s13 final: GPU tests of the four CUDA suites (output kept) and the benchmark of record (record.sh PART=2) at bed88c4
set -u
export PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s)
( [ -f /tmp/hy-full/model.safetensors ] || python3 bench/make_random_checkpoint.py /tmp/hy-full > /dev/null 2>&1 ) &
[ -f build-gpu/build.ninja ] || { rm -rf build-gpu; meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled --buildtype=release > /tmp/setup.txt 2>&1; }
ninja -C build-gpu > /tmp/build.txt 2>&1 || { tail -30 /tmp/build.txt; exit 1; }
wait
echo "built at $(( $(date +%s) - T0 )) s" > $OUT/log.txt
timeout 150 meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 4 backend-cuda decode batch tuning > $OUT/tests.txt 2>&1
echo "tests rc=$? at $(( $(date +%s) - T0 )) s" >> $OUT/log.txt
grep -E "^ *[0-9]+/[0-9]+ " $OUT/tests.txt >> $OUT/log.txt
mkdir -p $OUT/rec && OUT=$OUT/rec PART=2 HYOCR_RECORD_SECONDS=400 bash bench/record.sh > /dev/null 2>&1
echo "record at $(( $(date +%s) - T0 )) s" >> $OUT/log.txt
cat $OUT/rec/log.txt >> $OUT/log.txt
cat $OUT/log.txt
