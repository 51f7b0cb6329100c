# Session 26, call 1: bench/results/2026-12-06-cpu-s24/next.sh as committed at 07e7025 (session
# 24's call, unchanged), run from the repository root:
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-06-cpu-s24/next.sh
bash bench/results/2026-12-06-cpu-s24/next.sh
