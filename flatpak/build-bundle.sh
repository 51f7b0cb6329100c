#!/bin/bash
# Builds hyocr as a Flatpak into a local repository and a single-file bundle.
#
#   flatpak/build-bundle.sh [OUT.flatpak]   build (needs flatpak-builder, network for the
#                                           GNOME SDK/runtime and the pinned sources, ~15 GB disk)
#   flatpak/build-bundle.sh --check         TAP test, no network: the manifest parses
#                                           (flatpak-builder --show-manifest), is pinned, and
#                                           builds or has in its runtime every library meson
#                                           needs (flatpak/check-manifest.py)
#
# Install the bundle with: flatpak install --user hyocr-<version>-x86_64.flatpak
# (the GNOME runtime comes from Flathub; the bundle names it as its runtime repository).
# For a self-hosted repository, publish flatpak/repo instead (see README.md, "Flatpak").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
app_id=io.github.hyocr.Hyocr
manifest=$here/$app_id.yml
flathub=https://dl.flathub.org/repo/flathub.flatpakrepo

check_manifest() {
    local n=0 fail=0 json
    ok()     { n=$((n + 1)); echo "ok $n - $1"; }
    not_ok() { n=$((n + 1)); fail=1; echo "not ok $n - $1"; shift; local w; for w in "$@"; do echo "# $w"; done; }
    if ! command -v flatpak-builder >/dev/null; then
        echo "1..0 # SKIP flatpak-builder is not installed (Debian: apt install flatpak-builder)"
        return 0
    fi
    # flatpak-builder leaves a .flatpak-builder folder in the current one: not in the tree.
    local scratch; scratch=$(mktemp -d)
    json=$(cd "$scratch" && flatpak-builder --show-manifest "$manifest" 2>&1) && parsed=1 || parsed=0
    rm -rf "$scratch"
    if [ $parsed = 1 ]; then ok "flatpak-builder --show-manifest parses $app_id.yml"
    else not_ok "flatpak-builder --show-manifest parses $app_id.yml" "$json"; echo "1..$n"; return 1; fi
    # the numbering goes on after the parse check: the script's tests start at 2
    python3 "$here/check-manifest.py" "$root" <<<"$json" || fail=1
    return $fail
}

if [ "${1:-}" = "--check" ]; then
    check_manifest
    exit $?
fi

for tool in flatpak flatpak-builder; do
    command -v $tool >/dev/null || { echo "build-bundle.sh: $tool is not installed" >&2; exit 1; }
done
version=$(sed -n "s/^ *version: '\([^']*\)'.*/\1/p" "$root/meson.build" | head -1)
out=${1:-$here/hyocr-$version-x86_64.flatpak}
runtime_version=$(sed -n "s/^runtime-version: '\([^']*\)'/\1/p" "$manifest")

# The SDK and runtime come from Flathub when they are not installed yet.
deps=()
if ! flatpak info --user org.gnome.Sdk//"$runtime_version" >/dev/null 2>&1 &&
   ! flatpak info --system org.gnome.Sdk//"$runtime_version" >/dev/null 2>&1; then
    flatpak remote-add --user --if-not-exists flathub "$flathub"
    deps=(--install-deps-from=flathub)
fi

flatpak-builder --user --force-clean --ccache --repo="$here/repo" "${deps[@]}" \
    --state-dir="$here/.flatpak-builder" "$here/build" "$manifest"
flatpak build-bundle --runtime-repo="$flathub" "$here/repo" "$out" "$app_id"
echo "wrote $out"
echo "install it with: flatpak install --user $out"
