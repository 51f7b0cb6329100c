# What session 35 leaves for the next card (written at 622590b, not run): the CUDA suites with the
# paged decode test's new whole-row splits (backend-cuda alone: it needs ~75 s), then on whatever
# card comes — the H200 is the targets' card, none came in session 35 — 16 concurrent 1024² pages
# with bound_stages' four rounds against HYOCR_DECODE_STAGES=2 and one at a time, alternated, and
# the benchmark of record (bench/record.sh PART=2, ~60 s once built). ~300 s in all.
#   source .device/setup.sh >/dev/null 2>&1; LIMIT=360 bash bench/results/2026-12-07-s35/next.sh
T0=$(date +%s); LIMIT=${LIMIT:-360}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
export OUT=${OUT:-/tmp/s35} PATH=/usr/local/cuda/bin:$PATH
W=$OUT/next; mkdir -p $W; HY=build-gpu/src/cli/hyocr
nvidia-smi --query-gpu=name --format=csv,noheader | tee $W/gpu.txt
source bench/results/2026-12-05-h200-s21/prep.sh > $W/prep.txt 2>&1; echo "prep exit $?"
timeout 200 meson test -C build-gpu --no-rebuild --print-errorlogs backend-cuda > $W/tests-bc.txt 2>&1; echo "backend-cuda exit $?"
timeout 100 meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 3 decode batch engine tuning \
    > $W/tests.txt 2>&1; echo "tests exit $?"
cat $W/tests-bc.txt $W/tests.txt | grep -E "^ *[0-9]+/[0-9]+ |FAIL|not ok" | sort -u | head -12; gzip -f $W/tests*.txt
source bench/results/2026-12-07-s33/sixteen.sh
for rep in 1 2 3; do
    [ $(left) -gt 110 ] || break
    echo "16 rule: $(sixteen)"; echo "16 stages2: $(HYOCR_DECODE_STAGES=2 sixteen)"; echo "1: $(MB=1 sixteen)"
done | tee $W/sixteen.txt
rm -f $W/r.jsonl $W/r.err
OUT=$W/record PART=2 HYOCR_RECORD_SECONDS=$(( $(left) - 10 )) bash bench/record.sh
grep -hE "^\|" $W/record/gpu-bench.txt 2>/dev/null | head -16; tail -22 $W/record/serve-bench.txt 2>/dev/null
