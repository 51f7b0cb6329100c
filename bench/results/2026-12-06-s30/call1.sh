# Session 30, call 1: what sessions 29's calls 3–4 owed, in the order the card makes worth most.
# On an H200 (the targets' card): the benchmark of record (bench/record.sh PART=2) and the CUDA
# tests, then the compute_80 rows cut short (SLIM=1) if time is left. On an H100 (whose record
# session 29 took): the compute_80 build against the sm_90a one in full (call4.sh), then the
# CUDA tests. Tables printed, as few files come back.
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-06-s30/call1.sh
T0=$(date +%s)
S29=bench/results/2026-12-06-s29
export OUT=${OUT:-/tmp/s30}
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "$GPU"
tests() {
    echo "[$(( $(date +%s) - T0 )) s] === tests"
    source $S29/../2026-12-05-h200-s21/prep.sh
    timeout 150 meson test -C build-gpu --no-rebuild --print-errorlogs --num-processes 4 backend-cuda decode batch tuning \
        > $OUT/tests.txt 2>&1; echo "tests exit $?"; grep -E "^ *[0-9]+/[0-9]+ |Ok:|Fail:|Timeout:" $OUT/tests.txt | tail -6
    grep -E "^not ok|Bail" build-gpu/meson-logs/testlog.txt | head
}
case "$GPU" in
*H200*)
    bash $S29/call3.sh
    [ $(( $(date +%s) - T0 )) -lt 400 ] && SLIM=1 bash $S29/call4.sh ;;
*)
    bash $S29/call4.sh
    [ $(( $(date +%s) - T0 )) -lt 420 ] && tests ;;
esac
echo "[$(( $(date +%s) - T0 )) s] call1 done"
