#!/bin/bash
# TAP test: the hyocr command speaks the locale's language — its own messages, its
# option help (GOption) and the engine's errors — and English under LANG=C.
# usage: check-cli-locale.sh HYOCR LOCALEDIR   (LOCALEDIR holds zh_CN/LC_MESSAGES/hyocr.mo)
set -u
hyocr=$1
localedir=$2
zh=zh_CN.UTF-8
if ! locale -a 2>/dev/null | grep -qix 'zh_CN\.utf-\?8'; then
    echo "1..0 # SKIP locale $zh is not generated (Debian: add it to /etc/locale.gen, run locale-gen)"
    exit 0
fi
n=0 fail=0
ok()     { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); fail=1; echo "not ok $n - $1"; shift; local w; for w in "$@"; do echo "# $w"; done; }
# The catalog's translation of MSGID, the same way the program looks it up.
tr_zh() { LC_ALL=$zh LANGUAGE= TEXTDOMAINDIR=$localedir gettext -d hyocr -- "$1"; }
run_zh() { env -u LC_ALL -u LC_MESSAGES LANGUAGE= LANG=$zh HYOCR_LOCALEDIR=$localedir "$hyocr" "$@" 2>&1; }
run_c()  { env -u LC_ALL -u LC_MESSAGES LANGUAGE= LANG=C HYOCR_LOCALEDIR=$localedir "$hyocr" "$@" 2>&1; }
expect() {   # expect NAME OUTPUT TEXT
    if grep -qF -- "$3" <<<"$2"; then ok "$1"
    else not_ok "$1" "wanted: $3" "got: $(head -c 600 <<<"$2")"; fi
}

msg="describe a checkpoint folder"
want=$(tr_zh "$msg")
if [ "$want" != "$msg" ]; then ok "zh_CN catalog translates “$msg” as “$want”"
else not_ok "zh_CN catalog translates “$msg”" "catalog in $localedir has no translation"; fi
expect "command list follows LANG=$zh" "$(run_zh --help)" "$want"
expect "command list is English under LANG=C" "$(run_c --help)" "$msg"

opt="Checkpoint folder"
expect "option help (GOption) follows LANG=$zh" "$(run_zh inspect --help)" "$(tr_zh "$opt")"

# An engine (libhyocr) message: the text after the file name.
eng="%s: no such folder (the HunyuanOCR model's folder holds config.json, model.safetensors, ...)"
tail=$(tr_zh "$eng"); tail=${tail#%s}; tail=${tail:0:12}
out=$(run_zh inspect --model /nonexistent/hyocr-model)
if [ "$(tr_zh "$eng")" != "$eng" ]; then expect "engine errors follow LANG=$zh" "$out" "$tail"
else not_ok "engine error message is translated" "no translation for: $eng"; fi
expect "engine errors are English under LANG=C" "$(run_c inspect --model /nonexistent/hyocr-model)" "no such folder"

echo "1..$n"
exit $fail
