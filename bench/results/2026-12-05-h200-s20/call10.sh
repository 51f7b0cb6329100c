# s20 call10: session 14's two unmeasured knobs, on the card at last — call8 (HYOCR_ORDERED_ALLOC=1:
# its test, the suites with it on, A/B at 1024² and 2048², the peak of record's job) and call7
# (HYOCR_VIT_CHUNK_ROWS 4096 / 8192 / 16384 at 2048² and 4096²), each in its own folder.
# From the repository root on the GPU machine:
#   source .device/setup.sh >/dev/null && OUT=... bash bench/results/2026-12-05-h200-s20/call10.sh
D=bench/results/2026-12-04-h200-s14
O=$OUT
mkdir -p $O/call8 $O/call7
OUT=$O/call8 timeout 300 bash $D/call8/run08.sh > $O/call8/stdout.txt 2>&1; echo "== call8 rc=$?"; cat $O/call8/log.txt
OUT=$O/call7 timeout 200 bash $D/call7/run07.sh > $O/call7/stdout.txt 2>&1; echo "== call7 rc=$?"; cat $O/call7/log.txt
tar czf $O/both.tgz -C $O call8 call7 && rm -rf $O/call8 $O/call7
