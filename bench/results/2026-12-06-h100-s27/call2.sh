# Session 27, call 2: call1.sh with flash_bench's k_vis_tma rows of this commit (Q in shared
# memory, no turns, stages, four warpgroups) against the launched k_vis_wg, from the repository root:
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-06-h100-s27/call2.sh
CALL=call2 bash bench/results/2026-12-06-h100-s27/call1.sh
