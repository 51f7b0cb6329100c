#!/usr/bin/env python3
"""Synthetic document pages for the benchmarks: page_1024.png, page_2048.png, page_4096.png, and
page_a4.png (an A4 page scanned at 200 dpi: 1654×2339). Text-like strokes on paper, so the
JPEG/PNG decoders and the resize do realistic work."""
import os
import sys

from PIL import Image, ImageDraw

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
for name, (w, h) in [("page_1024", (1024, 1024)), ("page_2048", (2048, 2048)), ("page_4096", (4096, 4096)),
                     ("page_a4", (1654, 2339))]:
    img = Image.new("RGB", (w, h), (250, 248, 240))
    d = ImageDraw.Draw(img)
    line = max(min(w, h) // 48, 12)
    for y in range(line, h - line, line):
        for x in range(line, w - 4 * line, 3 * line):
            d.text((x, y), "Invoice 42 total %d EUR" % ((x * 7 + y) % 997), fill=(20, 20, 20))
    img.save(os.path.join(out, name + ".png"))
    print(os.path.join(out, name + ".png"))
