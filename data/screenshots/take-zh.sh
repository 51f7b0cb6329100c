#!/bin/bash
# Screenshot of the *installed* app running in Simplified Chinese: proof that `meson install`
# delivers working catalogs, schema and icons. (data/screenshots/zh-CN.png, the metainfo's
# picture, comes from `ninja screenshots`, rendered like the other screenshots.)
#
#   data/screenshots/take-zh.sh [OUT.png]      default: $TMPDIR/hyocr-zh-CN.png
#
# Builds and installs hyocr into a throwaway prefix (so the real catalogs, schema and
# icons are used, as after `meson install`), starts it with LANG=zh_CN.UTF-8 on its own
# Xvfb and grabs the window with ImageMagick's import. The model is the tiny test
# checkpoint under a folder named HunyuanOCR, so the header reads as it does with the real
# model. Needs: xvfb, imagemagick, dbus, the zh_CN.UTF-8 locale and a CJK font
# (fonts-noto-cjk).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-${TMPDIR:-/tmp}/hyocr-zh-CN.png}
width=1000 height=700   # the default window size (gschema)

for tool in Xvfb import dbus-run-session meson; do
    command -v $tool >/dev/null || { echo "take-zh.sh: $tool is missing" >&2; exit 1; }
done
locale -a | grep -qix 'zh_CN\.utf-\?8' || { echo "take-zh.sh: generate the zh_CN.UTF-8 locale first" >&2; exit 1; }
fc-list :lang=zh-cn family | grep -q . || { echo "take-zh.sh: no Chinese font (apt install fonts-noto-cjk)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
meson setup "$tmp/build" "$root" --prefix="$prefix" -Dcuda=disabled -Dgui=enabled >"$tmp/setup.log" ||
    { tail -20 "$tmp/setup.log" >&2; exit 1; }
ninja -C "$tmp/build" >"$tmp/build.log" || { tail -20 "$tmp/build.log" >&2; exit 1; }
meson install -C "$tmp/build" --quiet >"$tmp/install.log"
glib-compile-schemas "$prefix/share/glib-2.0/schemas"

mkdir -p "$tmp/models"
ln -s "$root/tests/data/ckpt-flat" "$tmp/models/HunyuanOCR"

Xvfb -displayfd 3 -screen 0 ${width}x${height}x24 -nolisten tcp 3>"$tmp/display" 2>"$tmp/xvfb.log" &
for _ in $(seq 200); do grep -q '[0-9]' "$tmp/display" 2>/dev/null && break; sleep 0.05; done
export DISPLAY=":$(tr -d '\n' <"$tmp/display")"

unset LC_ALL LC_MESSAGES LANGUAGE
export LANG=zh_CN.UTF-8
export XDG_DATA_DIRS="$prefix/share:/usr/local/share:/usr/share"
export XDG_CONFIG_HOME=$tmp/config XDG_DATA_HOME=$tmp/data XDG_CACHE_HOME=$tmp/cache
export GSETTINGS_SCHEMA_DIR="$prefix/share/glib-2.0/schemas" GSETTINGS_BACKEND=memory
export GDK_BACKEND=x11 GSK_RENDERER=cairo NO_AT_BRIDGE=1
export GTK_THEME=Adwaita   # the same look on every machine
dbus-run-session -- "$prefix/bin/hyocr-gtk" --model "$tmp/models/HunyuanOCR" >"$tmp/app.log" 2>&1 &

# The window exists once import can find it by its title; give layout and the
# model load a moment to settle before the picture.
for _ in $(seq 100); do
    import -window root "$tmp/probe.png" 2>/dev/null &&
        [ "$(convert "$tmp/probe.png" -format '%[fx:mean>0.05]' info:)" = 1 ] && break
    sleep 0.2
done
sleep 4
import -window root "$out"
echo "wrote $out ($(identify -format '%wx%h' "$out"))"
