#!/usr/bin/env python3
"""Checks of the Flatpak manifest, as flatpak-builder --show-manifest resolved it (JSON
on stdin), for flatpak/build-bundle.sh --check (TAP, numbered from 2: the parse is 1).

Beyond its shape (id, runtime, permissions, pinned sources, CUDA, GUI), the manifest
builds what meson needs: every dependency() of the build's meson.build files is built by
a module or shipped by the runtime the manifest names, and no module builds a library
the runtime already has (it would shadow the runtime's copy for nothing). What a runtime
ships is written down below, per runtime and version, from the runtime's own build
recipes; a manifest naming a runtime version not listed fails, so moving to a new
runtime means checking it again.

    flatpak-builder --show-manifest MANIFEST | flatpak/check-manifest.py SOURCE_ROOT
"""
import json
import pathlib
import re
import sys

# pkg-config names (and meson's special dependencies) each runtime provides, as far as
# hyocr's build asks. GNOME 51: gnome-build-meta branch gnome-51, elements/sdk-platform.bst
# (gtk, libadwaita, libportal 0.10.0 with its GTK 3 and GTK 4 backends (sdk/libportal.bst:
# only the Qt ones are disabled), libsecret, libsoup, json-glib, cairo, pango) on
# freedesktop-sdk 26.08 (elements/freedesktop-sdk.bst; its elements/platform.bst: sqlite,
# libxml2, libpng, jpeg, libtiff, libwebp, libheif, xorg-lib-x11, glib). libportal came
# to the runtime in GNOME 51 ("Move libportal to the flatpak runtimes", gnome-build-meta
# cbb7e25a); GNOME 50 does not have it.
RUNTIMES = {
    ("org.gnome.Platform", "51"): {
        "glib-2.0", "gio-2.0", "json-glib-1.0", "libsoup-3.0", "libpng", "libjpeg", "cairo",
        "pangocairo", "libtiff-4", "libwebp", "libheif", "gtk4", "libadwaita-1", "sqlite3",
        "libsecret-1", "libportal-gtk4", "libxml-2.0", "x11", "threads",
    },
}

# What each module of the manifest installs, by the names meson looks for.
MODULES = {
    "openblas": {"openblas"},
    "cuda-redist": {"cuda"},          # meson's CUDA dependency (CUDA_PATH), not pkg-config
    "md4c": {"md4c", "md4c-html"},
    "poppler": {"poppler-glib"},
    "hyocr": set(),
}

# Looked for only when the first is missing (meson.build: openblas, else any cblas).
FALLBACKS = {"cblas": "openblas"}

# Build files the Flatpak's build reads (the fuzzing harnesses need -Dfuzzing=true).
SKIP_DIRS = {"build", "build-asan", "build-fuzz", "tests/fuzz", "flatpak", ".flatpak-builder"}


def meson_dependencies(root):
    deps = {}
    for f in sorted(root.rglob("meson.build")):
        rel = f.relative_to(root)
        if any(str(rel).startswith(d + "/") for d in SKIP_DIRS) or "node_modules" in rel.parts:
            continue
        for name in re.findall(r"\bdependency\(\s*'([^']*)'", f.read_text()):
            if name:
                deps.setdefault(name, str(rel))
    return deps


def pinned(source):
    kind = source.get("type")
    if kind == "dir":
        return True
    if kind in ("archive", "file"):
        return bool(source.get("sha256")) or bool(source.get("sha512"))
    if kind == "git":
        return bool(source.get("commit"))
    return False



def main():
    root = pathlib.Path(sys.argv[1]).resolve()
    m = json.load(sys.stdin)
    results = []

    def check(name, ok, why=''):
        results.append((name, bool(ok), why))

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

    runtime = (m.get('runtime'), str(m.get('runtime-version')))
    shipped = RUNTIMES.get(runtime)
    check(f'the runtime {runtime[0]} {runtime[1]} is one whose libraries this test knows', shipped is not None,
          'check its build recipes and add it to RUNTIMES in flatpak/check-manifest.py')
    shipped = shipped or set()
    modules = {mod['name']: mod for mod in m.get('modules', []) if isinstance(mod, dict)}
    unknown = sorted(set(modules) - set(MODULES))
    check('every module is known to this test', not unknown, f'say what {unknown} installs in MODULES')
    built = set().union(*(MODULES.get(n, set()) for n in modules))
    for name, where in sorted(meson_dependencies(root).items()):
        if name in FALLBACKS and FALLBACKS[name] in built | shipped:
            continue
        check(f'{name} ({where}) is built by a module or in the runtime', name in built or name in shipped,
              'add a pinned module for it to the manifest')
    for name in sorted(modules):
        twice = sorted(MODULES.get(name, set()) & shipped)
        check(f'module {name} builds nothing the runtime has', not twice,
              f'the runtime already ships {twice}: drop the module')
        unpinned = [s.get('url') or s.get('path') for s in modules[name].get('sources', []) if not pinned(s)]
        check(f"module {name}'s sources are pinned (a sha256, or a git commit)", not unpinned, unpinned)

    for i, (name, ok, why) in enumerate(results, 2):
        print(f"{'ok' if ok else 'not ok'} {i} - {name}")
        if not ok:
            print(f'# {why}')
    print(f'1..{len(results) + 1}')
    return 0 if all(ok for _, ok, _ in results) else 1


if __name__ == '__main__':
    sys.exit(main())
