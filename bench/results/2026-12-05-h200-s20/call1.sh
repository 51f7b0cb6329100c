# s20 call1: the benchmark of record at HEAD (HYOCR_ROWS_WIDE on by default since bd3d6b5):
# bench/record.sh PART=2 (build with the server: .device now carries libsoup-3.0; gpu-bench,
# serve-bench), then the CUDA suites (backend-cuda, decode, batch, tuning) on the same build.
# From the repository root on the GPU machine:
#   source .device/setup.sh >/dev/null && OUT=... bash bench/results/2026-12-05-h200-s20/call1.sh
export PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s)
OUT=$OUT/record PART=2 HYOCR_RECORD_SECONDS=420 bash bench/record.sh
meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 4 backend-cuda decode batch tuning > $OUT/tests.txt 2>&1
echo "suites rc=$? at $(( $(date +%s) - T0 )) s" >> $OUT/record/log.txt
grep -E '^ *[0-9]+/[0-9]+ ' $OUT/tests.txt >> $OUT/record/log.txt
grep -E '^not ok|FAIL|ERROR' $OUT/tests.txt | head -20 >> $OUT/record/log.txt
cat $OUT/record/log.txt
