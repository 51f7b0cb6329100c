#!/usr/bin/env python3
"""make-pdf.py OUT N: a PDF of N pages of 300×200 points, page k with a black bar at a
different place, written by hand (no PDF library needed) for the tests that send or read
documents (test-cli.sh, test-serve.sh)."""
import sys
out, n = sys.argv[1], int(sys.argv[2])
objs = [b"<< /Type /Catalog /Pages 2 0 R >>", None]
kids = []
for k in range(n):
    content = b"0 0 0 rg %d 80 120 30 re f" % (20 + 40 * k)
    objs.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content))
    objs.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 200] /Contents %d 0 R >>" % len(objs))
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
