#!/bin/bash
# Host memory of a document run: peak RSS of `hyocr run` over a PDF and a multi-page TIFF of N
# A4 pages (N = 1, 5, 50, 500), each run writing a searchable PDF and JSON of every page.
# The model is the tiny test checkpoint (tests/data/ckpt-flat): what is measured is the
# document path — opening, rendering each page for the model, the batch's per-page state, and
# the exports redrawing every page — not the model's own memory (docs/PERFORMANCE.md has that).
#
#   bench/document-memory.sh            (needs build/, poppler-utils, libtiff-tools, GNU time)
#
# Pages: a column of 40 lines of text (Helvetica, substituted by fontconfig); the TIFF holds
# the same pages rendered at 200 dpi (1654 × 2339, LZW), so its export redraws a full-size
# image per page. The input is memory-mapped: peak RSS counts the pages of the file read so
# far (page cache the kernel can drop), the anonymous peak is what the run itself holds.
set -euo pipefail
cd "$(dirname "$0")/.."
HY=${HY:-build/src/cli/hyocr}
CKPT=tests/data/ckpt-flat
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"

make_pdf() {   # make_pdf OUT N
    python3 - "$1" "$2" <<'PY'
import sys
out, n = sys.argv[1], int(sys.argv[2])
objs = [b"<< /Type /Catalog /Pages 2 0 R >>", None,
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
kids = []
for k in range(n):
    lines = b"".join(b"1 0 0 1 60 %d Tm (Page %d, line %d: the quick brown fox jumps over the lazy dog) Tj\n"
                     % (780 - 18 * i, k + 1, i + 1) for i in range(40))
    content = b"BT /F1 11 Tf\n" + lines + b"ET"
    objs.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content))
    objs.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 3 0 R >> >> "
                b"/Contents %d 0 R >>" % len(objs))
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
PY
}

peak() {   # peak FILE: "peak-RSS-KiB peak-anonymous-KiB seconds"
    python3 - "$OUT" "$HY" "$CKPT" "$1" <<'PY'
import subprocess, sys, time
out, hy, ckpt, doc = sys.argv[1:5]
t0 = time.monotonic()
p = subprocess.Popen([hy, "run", "--model", ckpt, "--device", "cpu", "--threads", "2", "--max-new-tokens", "16",
                      "--output", out + "/out.pdf", "--output", out + "/out.json", doc],
                     stdout=subprocess.DEVNULL, stderr=open(out + "/run.err", "w"))
anon = hwm = 0
while p.poll() is None:   # sampled every 5 ms: the anonymous peak is a lower bound
    try:
        for line in open("/proc/%d/status" % p.pid):
            if line.startswith("RssAnon:"): anon = max(anon, int(line.split()[1]))
            if line.startswith("VmHWM:"): hwm = max(hwm, int(line.split()[1]))
    except OSError:
        pass
    time.sleep(0.005)
if p.returncode: sys.exit(open(out + "/run.err").read())
print(hwm, anon, "%.2f" % (time.monotonic() - t0))
PY
}

make_pdf "$OUT/500.pdf" 500
echo "| input | pages | file (MiB) | peak RSS (MiB) | peak anonymous (MiB) | wall (s) |"
echo "|---|---:|---:|---:|---:|---:|"
mib() { printf "%.1f" "$(echo "$1 / 1024" | bc -l)"; }
for n in 1 5 50 500; do
    make_pdf "$OUT/$n.pdf" "$n"
    read -r kib anon s < <(peak "$OUT/$n.pdf")
    echo "| PDF, A4 text | $n | $(mib $(( $(stat -c %s "$OUT/$n.pdf") / 1024 ))) | $(mib "$kib") | $(mib "$anon") | $s |"
done
rm -f "$OUT"/pg-*.tif
pdftoppm -r 200 -tiff -tiffcompression lzw -l 50 "$OUT/500.pdf" "$OUT/pg"
for n in 1 5 50; do
    tiffcp $(ls "$OUT"/pg-*.tif | sort | head -n "$n") "$OUT/$n.tif"
    read -r kib anon s < <(peak "$OUT/$n.tif")
    echo "| TIFF, A4 at 200 dpi, LZW | $n | $(mib $(( $(stat -c %s "$OUT/$n.tif") / 1024 ))) | $(mib "$kib") | $(mib "$anon") | $s |"
done
