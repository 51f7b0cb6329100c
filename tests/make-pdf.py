#!/usr/bin/env python3
"""make-pdf.py [--text] OUT N: a PDF of N pages, written by hand (no PDF library needed), for
the tests that send or read documents (test-cli.sh, test-serve.sh) and bench/document-memory.sh.

Pages are 300×200 points, page k with a black bar at a different place; with --text, A4 pages
of 40 lines of Helvetica text naming their page and line."""
import sys

text = sys.argv[1] == "--text"
out, n = sys.argv[1 + text], int(sys.argv[2 + text])
objs = [b"<< /Type /Catalog /Pages 2 0 R >>", None]
if text:
    objs.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
kids = []
for k in range(n):
    if text:
        lines = b"".join(b"1 0 0 1 60 %d Tm (Page %d, line %d: the quick brown fox jumps over the lazy dog) Tj\n"
                         % (780 - 18 * i, k + 1, i + 1) for i in range(40))
        content = b"BT /F1 11 Tf\n" + lines + b"ET"
        page = b"/MediaBox [0 0 595 842] /Resources << /Font << /F1 3 0 R >> >>"
    else:
        content = b"0 0 0 rg %d 80 120 30 re f" % (20 + 40 * k)
        page = b"/MediaBox [0 0 300 200]"
    objs.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content))
    objs.append(b"<< /Type /Page /Parent 2 0 R " + page + b" /Contents %d 0 R >>" % len(objs))
    kids.append(b"%d 0 R" % len(objs))
objs[1] = b"<< /Type /Pages /Kids [" + b" ".join(kids) + b"] /Count %d >>" % n
pdf, offs = bytearray(b"%PDF-1.4\n"), []
for i, o in enumerate(objs):
    offs.append(len(pdf))
    pdf += b"%d 0 obj\n" % (i + 1) + o + b"\nendobj\n"
x = len(pdf)
pdf += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
pdf += b"".join(b"%010d 00000 n \n" % o for o in offs)
pdf += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, x)
open(out, "wb").write(pdf)
