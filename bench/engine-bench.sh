#!/bin/bash
# Builds bench/NAME.c against the engine library of a configured build (BUILD, default build/,
# after `ninja -C build`) with test-image's link line, and runs it with the rest of the arguments.
# From the repository root:
#   bench/engine-bench.sh NAME [args]      (bench/cpu-matmul-bench.sh)
set -euo pipefail
name=$1
shift
B=${BUILD:-build}
rule=$(awk '/^build tests\/test-image:/{print $3; exit}' "$B/build.ninja")
args=$(awk '/^build tests\/test-image:/{getline; sub(/^ LINK_ARGS = /, ""); print; exit}' "$B/build.ninja")
cc -O2 -c -Isrc/engine -I"$B/src/engine" -I"$B" $(pkg-config --cflags glib-2.0) "bench/$name.c" -o "/tmp/$name.o"
# the paths in the link line are relative to the build folder; a CUDA build links through nvcc
linker=cc
[ "$rule" = cuda_LINKER ] && linker=nvcc
(cd "$B" && eval "$linker /tmp/$name.o -o /tmp/$name $args")
"/tmp/$name" "$@"
