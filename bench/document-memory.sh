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

make_pdf() {   # make_pdf OUT N: A4 pages of text
    python3 tests/make-pdf.py --text "$1" "$2"
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
