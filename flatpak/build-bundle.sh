#!/bin/bash
# Builds hyocr as a Flatpak into a local repository and a single-file bundle.
#
#   flatpak/build-bundle.sh [OUT.flatpak]   build (needs flatpak-builder, network for the
#                                           GNOME SDK/runtime and the pinned sources, ~15 GB disk)
#   flatpak/build-bundle.sh --check         TAP test, no network: the manifest parses
#                                           (flatpak-builder --show-manifest) and is pinned
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
    python3 - "$json" <<'EOF' || fail=1
import json, re, sys
m = json.loads(sys.argv[1])
results = []
def check(name, ok, why=''):
    results.append((name, ok, why))
check('the id is the app id', m.get('id') == 'io.github.hyocr.Hyocr', m.get('id'))
check('the runtime is org.gnome.Platform with its Sdk', m.get('runtime') == 'org.gnome.Platform'
      and m.get('sdk') == 'org.gnome.Sdk' and re.fullmatch(r'\d+', str(m.get('runtime-version', ''))),
      (m.get('runtime'), m.get('runtime-version')))
args = m.get('finish-args', [])
check('finish-args are exactly dri, wayland, fallback-x11, ipc, network',
      sorted(args) == sorted(['--device=dri', '--socket=wayland', '--socket=fallback-x11', '--share=ipc',
                              '--share=network']), args)
sources = [s for mod in m.get('modules', []) if isinstance(mod, dict) for s in mod.get('sources', [])]
remote = [s for s in sources if s.get('type') in ('archive', 'file')]
check('every downloaded source is https and pinned by sha256',
      remote and all(s.get('url', '').startswith('https://') and re.fullmatch(r'[0-9a-f]{64}', s.get('sha256', ''))
                     for s in remote), [s.get('url') for s in remote])
nv = [s['url'] for s in remote if 'nvidia.com' in s.get('url', '')]
check('CUDA runtime and cuBLAS come from NVIDIA redistributable archives',
      any('/redist/cuda_cudart/linux-x86_64/' in u for u in nv) and any('/redist/libcublas/linux-x86_64/' in u for u in nv), nv)
cuda = next((mod for mod in m['modules'] if mod.get('name') == 'cuda-redist'), {})
check('the CUDA toolkit tree is removed from the app (build-time only)', '/cuda' in cuda.get('cleanup', []))
hy = next((mod for mod in m['modules'] if mod.get('name') == 'hyocr'), {})
check('the app builds with the CUDA backend and the GUI', {'-Dcuda=enabled', '-Dgui=enabled'} <= set(hy.get('config-opts', [])),
      hy.get('config-opts'))
check('the command is the GTK app', m.get('command') == 'hyocr-gtk', m.get('command'))
check('translations stay in the app (a bundle has no .Locale extension)', m.get('separate-locales') is False)
for i, (name, ok, why) in enumerate(results, 2):
    print(f"{'ok' if ok else 'not ok'} {i} - {name}")
    if not ok:
        print(f'# {why}')
print(f'1..{len(results) + 1}')
sys.exit(0 if all(ok for _, ok, _ in results) else 1)
EOF
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
