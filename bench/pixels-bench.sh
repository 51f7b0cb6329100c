#!/bin/bash
# bench/pixels_bench.c (preprocessing and the upload's host work): bench/pixels-bench.sh [threads]
exec "$(dirname "$0")/engine-bench.sh" pixels_bench "$@"
