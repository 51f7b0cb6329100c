#!/bin/bash
# Runs fuzzing campaigns: each harness of a -Dfuzzing=true build for SECONDS, one after
# the other, on a copy of its seeds and regressions, with its dictionary and options.
# Fails when any harness finds anything (crash, sanitizer report, leak, timeout, memory).
#
#   tests/fuzz/run.sh [-t SECONDS] [-o OUTDIR] [-j JOBS] BUILD_DIR [HARNESS...]
#
# OUTDIR (default BUILD_DIR/campaign) gets corpus/<h>/ (the grown corpus, kept between
# runs), findings/<h>/ (inputs that failed: copy them to tests/fuzz/regressions/<h>/),
# logs/<h>.log, summary.md (execs and coverage per harness) and results.json (one line a
# harness, for CI). -j runs that many libFuzzer workers per harness (-fork).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
seconds=60 out="" jobs=1
while getopts "t:o:j:" opt; do
    case $opt in
        t) seconds=$OPTARG ;;
        o) out=$OPTARG ;;
        j) jobs=$OPTARG ;;
        *) sed -n '2,12p' "$0"; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { sed -n '2,12p' "$0"; exit 2; }
build=$1
shift
bin=$build/tests/fuzz
out=${out:-$build/campaign}
harnesses=("$@")
if [ ${#harnesses[@]} -eq 0 ]; then
    for f in "$bin"/fuzz-*; do [ -x "$f" ] && [ -f "$f" ] && harnesses+=("${f##*/fuzz-}"); done
fi
[ ${#harnesses[@]} -gt 0 ] || { echo "no harnesses in $bin (meson setup -Dfuzzing=true?)" >&2; exit 2; }

mkdir -p "$out/logs"
: >"$out/results.json"
{
    echo "| harness | seconds | execs | execs/s | coverage (edges) | features | corpus | peak RSS MB | findings |"
    echo "|---|---|---|---|---|---|---|---|---|"
} >"$out/summary.md"

# Leaks are findings; UBSan stops at the first report (the build also says so).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$here/../lsan.supp}
export HYOCR_TEST_DATA=${HYOCR_TEST_DATA:-$here/../data}

status=0
for h in "${harnesses[@]}"; do
    exe=$bin/fuzz-$h
    [ -x "$exe" ] || { echo "$h: no $exe" >&2; status=1; continue; }
    corpus=$out/corpus/$h findings=$out/findings/$h log=$out/logs/$h.log
    mkdir -p "$corpus" "$findings"
    for d in "$here/corpus/$h" "$here/regressions/$h"; do
        [ -d "$d" ] && find "$d" -maxdepth 1 -type f ! -name '.*' -exec cp -n {} "$corpus"/ \;
    done
    # A unit slower than 120 s is a hang, not a machine shared with others running slow (the
    # loaded CI machine runs ASan builds ten times slower than a quiet one).
    args=(-max_total_time="$seconds" -rss_limit_mb=2048 -timeout=120 -report_slow_units=120
          -print_final_stats=1 -artifact_prefix="$findings/")
    [ -f "$here/$h.dict" ] && args+=(-dict="$here/$h.dict")
    [ -f "$here/$h.options" ] && read -r -a extra <"$here/$h.options" && args+=("${extra[@]}")
    [ "$jobs" -gt 1 ] && args+=(-fork="$jobs" -ignore_crashes=0)
    echo "== $h: ${seconds}s" >&2
    "$exe" "${args[@]}" "$corpus" >"$log" 2>&1
    rc=$?
    n_found=$(find "$findings" -maxdepth 1 -type f | wc -l)
    # libFuzzer's closing lines: "#N DONE cov: C ft: F corp: K/…" and the stat:: block
    done_line=$(grep -E '^#[0-9]+[[:space:]]+(DONE|INITED)' "$log" | tail -1)
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -1)
    # -fork (-j) prints neither: its last "#N: cov: C ft: F corp: K exec/s E …" line instead
    if [ -z "$done_line" ]; then
        done_line=$(grep -E '^#[0-9]+: cov: ' "$log" | tail -1)
        execs=${execs:-$(sed -n 's/^#\([0-9]*\):.*/\1/p' <<<"$done_line")}
        speed=${speed:-$(sed -n 's/.* exec\/s \([0-9]*\).*/\1/p' <<<"$done_line")}
    fi
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$done_line")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$done_line")
    corp=$(find "$corpus" -maxdepth 1 -type f | wc -l)
    result=OK
    if [ "$rc" -ne 0 ] || [ "$n_found" -gt 0 ]; then
        result=FAIL
        status=1
        echo "$h: FOUND something (exit $rc); inputs in $findings, log $log" >&2
        grep -E 'ERROR|SUMMARY|==[0-9]+==' "$log" | head -5 >&2
    fi
    echo "| $h | $seconds | ${execs:-?} | ${speed:-?} | ${cov:-?} | ${ft:-?} | $corp | ${rss:-?} | $n_found |" >>"$out/summary.md"
    printf '{"harness": "%s", "result": "%s", "execs": %s, "cov": %s}\n' "$h" "$result" "${execs:-0}" "${cov:-0}" \
        >>"$out/results.json"
done
cat "$out/summary.md"
exit $status
