#!/bin/bash
# TAP test: po/POTFILES.in names only files that exist, and every file with
# translatable strings is named in it (so strings added later reach the translators).
# usage: check-potfiles.sh SOURCE_ROOT
set -u
root=${1:-$(dirname "$0")/..}
cd "$root" || exit 1
list=po/POTFILES.in
n=0
fail=0
ok()     { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); fail=1; echo "not ok $n - $1"; shift; local w; for w in "$@"; do echo "# $w"; done; }

listed=$(grep -v '^[[:space:]]*\(#\|$\)' "$list" | sed 's/[[:space:]]*$//')

missing=()
for f in $listed; do [ -f "$f" ] || missing+=("$f"); done
if [ ${#missing[@]} -eq 0 ]; then ok "every POTFILES.in entry exists"
else not_ok "every POTFILES.in entry exists" "missing: ${missing[*]}"; fi

dups=$(printf '%s\n' $listed | sort | uniq -d)
if [ -z "$dups" ]; then ok "no entry is listed twice"
else not_ok "no entry is listed twice" "twice: $dups"; fi

# Files that hold translatable strings: C sources using a gettext keyword, GtkBuilder
# files with translatable properties, and the desktop entry, metainfo and schema.
kw='(^|[^A-Za-z0-9_])(_|N_|C_|NC_|Q_|g_dngettext|g_dpgettext2|HYOCR_N_)[[:space:]]*\('
want=$( { git ls-files -co --exclude-standard -- src 2>/dev/null || find src -type f; } |
          grep -E '\.(c|h)$' | xargs -r grep -lE "$kw" | grep -v '^src/engine/i18n\.h$'
        { git ls-files -co --exclude-standard -- ui 2>/dev/null || find ui -type f; } |
          grep -E '\.ui$' | xargs -r grep -l 'translatable="yes"'
        ls data/*.desktop.in data/*.metainfo.xml.in data/*.gschema.xml 2>/dev/null )
unlisted=()
for f in $want; do
    printf '%s\n' $listed | grep -qxF "$f" || unlisted+=("$f")
done
if [ ${#unlisted[@]} -eq 0 ]; then ok "every file with translatable strings is in POTFILES.in ($(echo "$want" | wc -w) files)"
else not_ok "every file with translatable strings is in POTFILES.in" "add to po/POTFILES.in: ${unlisted[*]}"; fi

echo "1..$n"
exit $fail
