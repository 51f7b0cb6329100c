#!/bin/bash
# bench/cpu_matmul_bench.c (the CPU products on kept bf16 against fp32 weights):
#   bench/cpu-matmul-bench.sh [threads [repeats]]
exec "$(dirname "$0")/engine-bench.sh" cpu_matmul_bench "$@"
