# s20 call5: test-backend-cuda on the card one test a process (an assertion aborts the binary,
# and since session 13 an early failure had hidden every test after it), then the decode and
# batch suites. From the repository root on the GPU machine:
#   source .device/setup.sh >/dev/null && OUT=... bash bench/results/2026-12-05-h200-s20/call5.sh
export PATH=/usr/local/cuda/bin:$PATH
L=$OUT/log.txt
[ -f build-gpu/build.ninja ] || meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled \
  --buildtype=release > $OUT/setup.txt 2>&1
ninja -C build-gpu > $OUT/build.txt 2>&1 || { tail -20 $OUT/build.txt; exit 1; }
export HYOCR_TEST_DATA=$PWD/tests/data
T=build-gpu/tests/test-backend-cuda
ok=0; bad=0
for p in $($T -l); do
  if timeout 120 $T -p "$p" > $OUT/one.txt 2>&1; then
    ok=$((ok + 1)); grep -q SKIP $OUT/one.txt && echo "skipped $p" >> $L
  else
    bad=$((bad + 1)); echo "FAIL $p" >> $L; grep -E '^#|ERROR' $OUT/one.txt | head -4 >> $L
  fi
done
echo "test-backend-cuda: $ok passed, $bad failed" >> $L
meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 4 decode batch tuning > $OUT/suites.txt 2>&1
echo "decode batch tuning rc=$?" >> $L
cat $L
