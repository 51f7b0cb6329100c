# Session 32: session 31's call3 benches plus the head-major cache layout, from the binaries in
# .device/bin (built on the development machine, README.md): decode_bench with today's grid (-),
# the heads' CTAs of a split side by side (hf), a block's heads one after the other in the cache
# (hm) and both (hm-hf), blocks scattered and in order; then gemm_rows_bench (1–4 column groups).
#   bash bench/results/2026-12-07-s32/benches.sh
DECODE_BENCHES="decode-bench decode-bench-hf decode-bench-hm decode-bench-hm-hf" bash bench/results/2026-12-07-s31/call3.sh
