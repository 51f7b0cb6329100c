#!/bin/bash
# Fetches the Debian 12 packages hyocr serve needs beyond what the GPU machine's .device/debs
# already hold (libsoup 3 and what it links), into .device/debs. Run on a Debian 12 machine with
# apt (the development machine); source .device/setup.sh on the GPU machine unpacks them.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .device/debs
cd .device/debs
# libunistring2 and libidn2-0 (libpsl5 needs them): the GPU machine has other sonames of both
apt-get download libsoup-3.0-0 libsoup-3.0-dev libsoup-3.0-common libnghttp2-14 libnghttp2-dev libpsl5 \
    libpsl-dev libsqlite3-0 libsqlite3-dev libbrotli1 libbrotli-dev libsysprof-4-dev zlib1g-dev \
    libgssapi-krb5-2 libkrb5-3 libk5crypto3 libkrb5support0 libkeyutils1 \
    libunistring2 libidn2-0
ls -1 *.deb | wc -l
