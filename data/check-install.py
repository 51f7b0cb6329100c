#!/usr/bin/env python3
"""TAP test: `meson install --destdir` lays out what the Flatpak manifest expects — the
command it runs, the desktop entry, metainfo, schema and icons named after its id, the
catalogs of every language in po/LINGUAS — and the installed hyocr command speaks Chinese
under LANG=zh_CN.UTF-8 with the installed catalog.

usage: check-install.py BUILD_ROOT SOURCE_ROOT
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

results = []


def check(name, ok, *why):
    results.append((name, bool(ok), [str(w) for w in why]))


def meson_install(build, destdir):
    meson = shutil.which('meson') or 'meson'
    run = subprocess.run([meson, 'install', '-C', build, '--destdir', destdir, '--no-rebuild', '--quiet'],
                         capture_output=True, text=True)
    check('meson install --destdir succeeds', run.returncode == 0, run.stdout[-2000:], run.stderr[-2000:])
    opts = subprocess.run([meson, 'introspect', build, '--buildoptions'], capture_output=True, text=True)
    options = {o['name']: o['value'] for o in json.loads(opts.stdout)}
    prefix = options['prefix']
    rel = lambda d: os.path.relpath(d, prefix) if os.path.isabs(d) else d
    return prefix, rel(options['datadir']), rel(options['bindir'])


def expected_files(manifest, datadir, bindir, langs):
    app_id, command = manifest['id'], manifest['command']
    files = {
        'the command the manifest runs': f'{bindir}/{command}',
        'the hyocr command': f'{bindir}/hyocr',
        'the desktop entry': f'{datadir}/applications/{app_id}.desktop',
        'the metainfo': f'{datadir}/metainfo/{app_id}.metainfo.xml',
        'the GSettings schema': f'{datadir}/glib-2.0/schemas/{app_id}.gschema.xml',
        'the scalable icon': f'{datadir}/icons/hicolor/scalable/apps/{app_id}.svg',
        'the symbolic icon': f'{datadir}/icons/hicolor/symbolic/apps/{app_id}-symbolic.svg',
        'the systemd user unit of hyocr serve': 'lib/systemd/user/hyocr-serve.service',
        'the D-Bus service (the desktop entry is DBusActivatable)': f'{datadir}/dbus-1/services/{app_id}.service',
    }
    for lang in langs:
        files[f'the {lang} catalog'] = f'{datadir}/locale/{lang}/LC_MESSAGES/hyocr.mo'
    return files


def check_manifest(manifest, tree, datadir):
    args = manifest.get('finish-args', [])
    for need in ('--device=dri', '--socket=wayland', '--socket=fallback-x11', '--share=ipc'):
        check(f'manifest asks for {need}', need in args, args)
    forbidden = [a for a in args if a.startswith('--filesystem') or a in ('--device=all', '--socket=x11')
                 or 'org.freedesktop.Flatpak' in a or a.startswith('--talk-name=org.freedesktop.Notifications')]
    check('manifest asks for nothing portals or dri already give', not forbidden, forbidden)
    desktop = open(os.path.join(tree, datadir, 'applications', manifest['id'] + '.desktop'),
                   encoding='utf-8').read()
    exec_line = next((l for l in desktop.splitlines() if l.startswith('Exec=')), '')
    check('the desktop entry runs the manifest command', exec_line.split('=', 1)[-1].split()[:1] ==
          [manifest['command']], exec_line)
    schema = open(os.path.join(tree, datadir, 'glib-2.0', 'schemas', manifest['id'] + '.gschema.xml'),
                  encoding='utf-8').read()
    check('the schema id is the app id', f'id="{manifest["id"]}"' in schema)


def check_schema_compiles(schema_dir):
    tool = shutil.which('glib-compile-schemas')
    if not tool:
        check('glib-compile-schemas --strict accepts the installed schema # SKIP no glib-compile-schemas', True)
        return
    run = subprocess.run([tool, '--strict', '--dry-run', schema_dir], capture_output=True, text=True)
    check('glib-compile-schemas --strict accepts the installed schema', run.returncode == 0, run.stderr)


def zh_locale_available():
    out = subprocess.run(['locale', '-a'], capture_output=True, text=True).stdout.lower()
    return 'zh_cn.utf8' in out.split() or 'zh_cn.utf-8' in out.split()


def check_cli_speaks_chinese(tree, bindir, localedir):
    name = 'the installed hyocr command follows LANG=zh_CN.UTF-8'
    if not zh_locale_available():
        check(name + ' # SKIP locale zh_CN.UTF-8 is not generated', True)
        return
    env = {k: v for k, v in os.environ.items() if not k.startswith('LC_') and k != 'LANGUAGE'}
    # The compiled-in catalog path is the real prefix; point it at the staged one.
    env.update(LANG='zh_CN.UTF-8', HYOCR_LOCALEDIR=localedir)
    run = subprocess.run([os.path.join(tree, bindir, 'hyocr'), '--help'], capture_output=True, text=True, env=env)
    env['LANG'] = 'C'
    english = subprocess.run([os.path.join(tree, bindir, 'hyocr'), '--help'], capture_output=True, text=True,
                             env=env)
    check(name, run.stdout != english.stdout and any('\u4e00' <= c <= '\u9fff' for c in run.stdout),
          run.stdout[:400], run.stderr[:400])


def load_manifest(path):
    """PyYAML (python3-yaml) when present, else flatpak-builder's own parser."""
    try:
        import yaml
        with open(path, encoding='utf-8') as f:
            return yaml.safe_load(f)
    except ImportError:
        with tempfile.TemporaryDirectory() as scratch:   # it leaves .flatpak-builder/ in its cwd
            out = subprocess.run(['flatpak-builder', '--show-manifest', path], capture_output=True, text=True,
                                 check=True, cwd=scratch).stdout
        return json.loads(out)


def main():
    build, source = sys.argv[1:3]
    manifest_path = os.path.join(source, 'flatpak', 'io.github.hyocr.Hyocr.yml')
    manifest = load_manifest(manifest_path)
    langs = [l for line in open(os.path.join(source, 'po', 'LINGUAS'), encoding='utf-8')
             if not line.startswith('#') for l in line.split()]
    with tempfile.TemporaryDirectory(prefix='hyocr-install-') as destdir:
        prefix, datadir, bindir = meson_install(build, destdir)
        tree = destdir + prefix
        files = expected_files(manifest, datadir, bindir, langs)
        for what, rel in files.items():
            check(f'installs {what} ({rel})', os.path.isfile(os.path.join(tree, rel)), os.path.join(tree, rel))
        if all(ok for _, ok, _ in results):
            check_manifest(manifest, tree, datadir)
            check_schema_compiles(os.path.join(tree, datadir, 'glib-2.0', 'schemas'))
            check_cli_speaks_chinese(tree, bindir, os.path.join(tree, datadir, 'locale'))
            unit = open(os.path.join(tree, 'lib/systemd/user/hyocr-serve.service'), encoding='utf-8').read()
            check('the user unit runs the installed hyocr serve',
                  f'ExecStart={os.path.join(prefix, bindir)}/hyocr serve ' in unit, unit)
            service = open(os.path.join(tree, datadir, 'dbus-1', 'services', manifest['id'] + '.service'),
                           encoding='utf-8').read()
            check('the D-Bus service starts the installed app as a GApplication service',
                  f'Name={manifest["id"]}\n' in service and
                  f'Exec={os.path.join(prefix, bindir)}/{manifest["command"]} --gapplication-service\n' in service,
                  service)
        first = prefix.strip(os.sep).split(os.sep)[0]
        outside = [p for p in os.listdir(destdir) if p != first]
        check('nothing is installed outside the prefix', not outside, outside)
    for i, (name, ok, why) in enumerate(results, 1):
        print(f"{'ok' if ok else 'not ok'} {i} - {name}")
        if not ok:
            for w in why:
                print(f'# {w}')
    print(f'1..{len(results)}')
    return 0 if all(ok for _, ok, _ in results) else 1


if __name__ == '__main__':
    sys.exit(main())
