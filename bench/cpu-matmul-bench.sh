#!/bin/bash
# Builds bench/cpu_matmul_bench.c against the engine library of a configured build (BUILD, default
# build/, after `ninja -C build`) with test-image's link line, and runs it. From the repository root:
#   bench/cpu-matmul-bench.sh [threads [repeats]]
set -euo pipefail
B=${BUILD:-build}
rule=$(awk '/^build tests\/test-image:/{print $3; exit}' "$B/build.ninja")
args=$(awk '/^build tests\/test-image:/{getline; sub(/^ LINK_ARGS = /, ""); print; exit}' "$B/build.ninja")
cc -O2 -c -Isrc/engine -I"$B/src/engine" -I"$B" $(pkg-config --cflags glib-2.0) bench/cpu_matmul_bench.c -o /tmp/cpu_matmul_bench.o
# the paths in the link line are relative to the build folder; a CUDA build links through nvcc
linker=cc
[ "$rule" = cuda_LINKER ] && linker=nvcc
(cd "$B" && eval "$linker /tmp/cpu_matmul_bench.o -o /tmp/cpu-matmul-bench $args")
/tmp/cpu-matmul-bench "$@"
