#!/bin/bash
# Regenerates po/hyocr.pot from the files in po/POTFILES.in and merges it into the
# .po file of every language in po/LINGUAS (msgmerge keeps existing translations and
# marks changed ones fuzzy). Translate what is new or fuzzy, then run it again.
#
#   po/update.sh           refresh hyocr.pot and the .po files in place
#   po/update.sh --check   change nothing; TAP test that every .po is valid and has no
#                          untranslated or fuzzy message against the *current* sources
set -euo pipefail
podir=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$podir")
domain=hyocr
check=0
[ "${1:-}" = "--check" ] && check=1

mapfile -t args < "$podir/xgettext-args"
langs=$(grep -v '^#' "$podir/LINGUAS")

extract() {   # extract OUT.pot
    (cd "$root" && xgettext --package-name="$domain" -f po/POTFILES.in -D "$root" -o "$1" "${args[@]}")
}

if [ $check = 0 ]; then
    extract "$podir/$domain.pot"
    for l in $langs; do
        if [ -f "$podir/$l.po" ]; then
            msgmerge --quiet --update --backup=none --previous "$podir/$l.po" "$podir/$domain.pot"
        else
            msginit --no-translator --locale="$l" -i "$podir/$domain.pot" -o "$podir/$l.po"
        fi
        printf '%s: ' "$l"; msgfmt --check --statistics -o /dev/null "$podir/$l.po"
    done
    exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0 fail=0
ok()     { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); fail=1; echo "not ok $n - $1"; shift; local w; for w in "$@"; do echo "# $w"; done; }
stats_clean() { ! grep -qE 'untranslated|fuzzy' <<<"$1" && grep -qE '^[1-9][0-9]* translated' <<<"$1"; }

if extract "$tmp/$domain.pot" 2>"$tmp/xgettext.err"; then ok "xgettext extracts $(grep -c '^msgid ' "$tmp/$domain.pot") messages"
else not_ok "xgettext extracts the messages" "$(cat "$tmp/xgettext.err")"; fi
for l in $langs; do
    po="$podir/$l.po"
    if ! stats=$(msgfmt --check --statistics -o /dev/null "$po" 2>&1); then
        not_ok "$l.po passes msgfmt --check" "$stats"
        continue
    fi
    if stats_clean "$stats"; then ok "$l.po: $stats"
    else not_ok "$l.po has no untranslated or fuzzy messages" "$stats"; fi
    # Strings added to the sources since the last update.sh show up here.
    msgmerge --quiet --no-fuzzy-matching -o "$tmp/$l.po" "$po" "$tmp/$domain.pot"
    stats=$(msgfmt --check --statistics -o /dev/null "$tmp/$l.po" 2>&1) || true
    if stats_clean "$stats"; then ok "$l.po covers the current sources"
    else
        new=$(msgattrib --no-obsolete --only-fuzzy "$tmp/$l.po"; msgattrib --no-obsolete --untranslated "$tmp/$l.po")
        new=$(grep '^msgid "..*' <<<"$new" | sort -u | sed -n 1,8p || true)
        not_ok "$l.po covers the current sources (run po/update.sh and translate)" "$stats" "$new"
    fi
done
echo "1..$n"
exit $fail
