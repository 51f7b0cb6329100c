#!/bin/bash
# The app as a new user first starts it, uninstalled (TAP, under xvfb-run-test.sh):
# the README's command (meson devenv -C build hyocr-gtk) under zh_CN speaks Chinese;
# build/src/app/hyocr-gtk started directly finds the build's schema and catalogs and
# opens its window; a copy away from the build tree without a schema says what to
# run instead of aborting.
# usage: test-app-uninstalled.sh BUILD_ROOT
set -u
build=$1
app=$build/src/app/hyocr-gtk
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; shift; for l in "$@"; do echo "# $l"; done; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else not_ok "$name" "command: $*"; fi; }

# Nothing from the caller's environment may point the app at the build tree.
unset GSETTINGS_SCHEMA_DIR HYOCR_LOCALEDIR LANGUAGE LC_ALL LC_MESSAGES
export XDG_DATA_HOME=$tmp/data XDG_CONFIG_HOME=$tmp/config GSETTINGS_BACKEND=memory
zh=zh_CN.UTF-8
locale -a 2>/dev/null | grep -qi '^zh_CN.utf8$' || zh=""

# What the build's catalog says for one of the app's own strings.
want=$(LANGUAGE= LANG=${zh:-C.UTF-8} TEXTDOMAINDIR=$build/po gettext -d hyocr "Model folder to use for this session")

if [ -n "$zh" ]; then
    LANG=$zh meson devenv -C "$build" hyocr-gtk --help >"$tmp/help.txt" 2>&1
    check "meson devenv -C build hyocr-gtk --help runs" test $? -eq 0
    check "… and speaks Chinese under LANG=zh_CN.UTF-8 (“$want”)" grep -qF -- "$want" "$tmp/help.txt"
    check "the catalog's translation is Chinese" test "$want" != "Model folder to use for this session"
    LANG=$zh "$app" --help >"$tmp/help2.txt" 2>&1
    check "build/src/app/hyocr-gtk --help speaks Chinese too" grep -qF -- "$want" "$tmp/help2.txt"
else
    echo "# SKIP zh_CN.UTF-8 is not installed (Debian: locales, then locale-gen)"
fi

# Started directly: no abort; its window is up and it keeps running until told to stop.
LANG=${zh:-C.UTF-8} "$app" >"$tmp/app.out" 2>"$tmp/app.err" &
pid=$!
for _ in $(seq 600); do
    xwininfo -root -tree 2>/dev/null | grep -q '"hyocr"' && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.1
done
check "build/src/app/hyocr-gtk started directly opens its window" bash -c "xwininfo -root -tree | grep -q '\"hyocr\"'"
kill -0 $pid 2>/dev/null
check "… and keeps running" test $? -eq 0
kill -TERM $pid 2>/dev/null
wait $pid
check "… without a word about a missing schema" bash -c "! grep -q 'schema' '$tmp/app.err'"

# A copy away from the build tree, with no schema installed: says what to run, exit 1.
cp "$app" "$tmp/hyocr-gtk"
"$tmp/hyocr-gtk" >"$tmp/copy.out" 2>"$tmp/copy.err"
check "a copy without a schema exits 1, not an abort" test $? -eq 1
check "… and names the commands that work" grep -q "meson devenv -C build hyocr-gtk" "$tmp/copy.err"

echo "1..$n"
[ "$failed" -eq 0 ]
