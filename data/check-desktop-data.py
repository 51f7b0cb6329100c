#!/usr/bin/env python3
"""TAP test: the merged desktop entry and metainfo parse and agree with each other, with the
project (meson.build), the icons, the screenshots and the translations.

usage: check-desktop-data.py BUILT.desktop BUILT.metainfo.xml SOURCE_ROOT
"""
import configparser
import os
import re
import sys
import xml.etree.ElementTree as ET

XML_LANG = '{http://www.w3.org/XML/1998/namespace}lang'
results = []


def check(name, ok, *why):
    results.append((name, bool(ok), [str(w) for w in why]))


def read_project(root):
    text = open(os.path.join(root, 'meson.build'), encoding='utf-8').read()
    get = lambda key: re.search(key + r"\s*[:=]\s*'([^']+)'", text).group(1)
    return {'version': get('version'), 'license': get('license'), 'app_id': get('app_id')}


def read_desktop(path):
    parser = configparser.RawConfigParser(strict=True, interpolation=None, delimiters=('=',))
    parser.optionxform = str    # keys are case-sensitive
    with open(path, encoding='utf-8') as f:
        parser.read_file(f)
    return parser['Desktop Entry']


def check_desktop(entry, project, root, desktop_path):
    app_id = project['app_id']
    check('desktop file is named after the app id',
          os.path.basename(desktop_path) == app_id + '.desktop', desktop_path)
    check('desktop entry is an application', entry.get('Type') == 'Application', entry.get('Type'))
    exec_words = entry.get('Exec', '').split()
    check('Exec runs hyocr-gtk with the files', exec_words[:1] == ['hyocr-gtk'] and
          any(w in ('%U', '%F', '%u', '%f') for w in exec_words), entry.get('Exec'))
    check('Icon is the app id', entry.get('Icon') == app_id, entry.get('Icon'))
    icons = os.path.join(root, 'data', 'icons')
    check('the scalable icon exists', os.path.isfile(os.path.join(icons, app_id + '.svg')))
    check('the symbolic icon exists', os.path.isfile(os.path.join(icons, app_id + '-symbolic.svg')))
    mimes = [m for m in entry.get('MimeType', '').split(';') if m]
    check('Open With covers PNG and JPEG', {'image/png', 'image/jpeg'} <= set(mimes), mimes)
    check('every MIME type is an image or a PDF, none of gdk-pixbuf\'s others (GIF, BMP)',
          mimes and all(m.startswith('image/') or m == 'application/pdf' for m in mimes)
          and not {'image/gif', 'image/bmp'} & set(mimes), mimes)
    check('Name has a zh_CN entry (the name itself stays hyocr)', entry.get('Name[zh_CN]'))
    for key in ('Comment', 'GenericName', 'Keywords'):
        zh = entry.get(key + '[zh_CN]')
        check(f'{key} is translated to zh_CN', zh and zh != entry.get(key), zh)


def texts(parent, tag):
    """{lang or '': text} of the direct children named tag."""
    return {el.get(XML_LANG, ''): (el.text or '').strip() for el in parent.findall(tag)}


def check_screenshots(comp, root):
    shots = comp.findall('screenshots/screenshot')
    check('there are screenshots', shots)
    check('exactly one screenshot is the default',
          sum(1 for s in shots if s.get('type') == 'default') == 1)
    shot_dir = os.path.join(root, 'data', 'screenshots')
    for s in shots:
        check('each screenshot has an English caption', texts(s, 'caption').get(''), ET.tostring(s))
        for img in s.findall('image'):
            url = (img.text or '').strip()
            name = url.rsplit('/', 1)[-1]
            check(f'screenshot {name} is an https URL', url.startswith('https://'), url)
            check(f'screenshot {name} is in data/screenshots', os.path.isfile(os.path.join(shot_dir, name)),
                  f'missing {os.path.join(shot_dir, name)}')
    # Every screenshot of the app (`ninja -C build screenshots`) is shown; web-*.png are the
    # web page of hyocr serve, which the app's store page does not show.
    listed = {(img.text or '').strip().rsplit('/', 1)[-1] for s in shots for img in s.findall('image')}
    for name in sorted(os.listdir(shot_dir)):
        if name.endswith('.png') and not name.startswith('web-'):
            check(f'screenshot {name} is in the metainfo', name in listed, sorted(listed))


def check_releases(comp, project):
    releases = comp.findall('releases/release')
    check('there are releases', releases)
    if not releases:
        return
    check('the newest release is the project version', releases[0].get('version') == project['version'],
          releases[0].get('version'), project['version'])
    dates = [r.get('date', '') for r in releases]
    check('releases are newest first', dates == sorted(dates, reverse=True), dates)


def check_metainfo(path, project, root, desktop_path):
    comp = ET.parse(path).getroot()
    app_id = project['app_id']
    check('metainfo describes a desktop application', comp.tag == 'component' and
          comp.get('type') == 'desktop-application', comp.tag, comp.get('type'))
    check('metainfo id is the app id', comp.findtext('id') == app_id, comp.findtext('id'))
    check('metainfo file is named after the app id',
          os.path.basename(path) == app_id + '.metainfo.xml', path)
    check('launchable is the desktop file', comp.findtext('launchable') == os.path.basename(desktop_path),
          comp.findtext('launchable'))
    check('project licence is the one in meson.build',
          comp.findtext('project_license') == project['license'], comp.findtext('project_license'))
    check('metadata licence is CC0-1.0', comp.findtext('metadata_license') == 'CC0-1.0')
    rating = comp.find('content_rating')
    check('content rating is OARS 1.1', rating is not None and rating.get('type') == 'oars-1.1')
    check('translations come from the gettext domain hyocr', comp.findtext('translation') == 'hyocr')
    binaries = [b.text for b in comp.findall('provides/binary')]
    check('provides both commands', {'hyocr', 'hyocr-gtk'} <= set(binaries), binaries)
    desc = ' '.join(''.join(p.itertext()) for p in comp.find('description').iter()
                    if p.get(XML_LANG) is None and p.tag in ('p', 'li'))
    check('description says the weights are a separate download under Tencent’s licence',
          'separate download' in desc and 'Tencent Hunyuan Community License' in desc, desc[:200])
    check('summary is translated to zh_CN', texts(comp, 'summary').get('zh-CN') or
          texts(comp, 'summary').get('zh_CN'), texts(comp, 'summary'))
    zh_paras = [p for p in comp.iter('p') if p.get(XML_LANG) in ('zh-CN', 'zh_CN')]
    check('description is translated to zh_CN', zh_paras)
    check_screenshots(comp, root)
    check_releases(comp, project)


def main():
    desktop_path, metainfo_path, root = sys.argv[1:4]
    project = read_project(root)
    try:
        check_desktop(read_desktop(desktop_path), project, root, desktop_path)
    except (configparser.Error, OSError, KeyError) as e:
        check('desktop file parses', False, e)
    try:
        check_metainfo(metainfo_path, project, root, desktop_path)
    except (ET.ParseError, OSError, AttributeError) as e:
        check('metainfo parses', False, e)
    for i, (name, ok, why) in enumerate(results, 1):
        print(f"{'ok' if ok else 'not ok'} {i} - {name}")
        if not ok:
            for w in why:
                print(f'# {w}')
    print(f'1..{len(results)}')
    return 0 if all(ok for _, ok, _ in results) else 1


if __name__ == '__main__':
    sys.exit(main())
