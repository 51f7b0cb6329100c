#!/bin/bash
# Runs one GUI test program on its own headless X server, so `meson test` works
# on a machine without a display. Xvfb picks a free display number itself
# (-displayfd), so tests may run in parallel. TAP skip when Xvfb is missing.
set -u
if ! command -v Xvfb >/dev/null; then
    echo "1..0 # SKIP Xvfb is not installed (apt-get install xvfb)"
    exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
Xvfb -displayfd 3 -screen 0 1280x1024x24 -nolisten tcp -noreset 3>"$tmp/display" 2>"$tmp/xvfb.log" &
xvfb=$!
for _ in $(seq 200); do
    grep -q '[0-9]' "$tmp/display" 2>/dev/null && break
    kill -0 $xvfb 2>/dev/null || break
    sleep 0.05
done
if ! grep -q '[0-9]' "$tmp/display" 2>/dev/null; then
    echo "Bail out! Xvfb did not start: $(head -c 400 "$tmp/xvfb.log")"
    exit 1
fi
export DISPLAY=":$(tr -d '\n' <"$tmp/display")"
"$@"
rc=$?
kill $xvfb 2>/dev/null
wait $xvfb 2>/dev/null
exit $rc
