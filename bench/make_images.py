#!/usr/bin/env python3
"""Synthetic document pages for the benchmarks: page_1024.png, page_2048.png, page_4096.png.
Text-like strokes on paper, so the JPEG/PNG decoders and the resize do realistic work."""
import os
import sys

from PIL import Image, ImageDraw

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
for size in (1024, 2048, 4096):
    img = Image.new("RGB", (size, size), (250, 248, 240))
    d = ImageDraw.Draw(img)
    line = max(size // 48, 12)
    for y in range(line, size - line, line):
        for x in range(line, size - 4 * line, 3 * line):
            d.text((x, y), "Invoice 42 total %d EUR" % ((x * 7 + y) % 997), fill=(20, 20, 20))
    img.save(os.path.join(out, "page_%d.png" % size))
    print(os.path.join(out, "page_%d.png" % size))
