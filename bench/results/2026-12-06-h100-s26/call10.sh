# Session 26, call 10: the pinned buffers made at load (and call 9's changes) — call9.sh with the
# pinned pool on and off in each round.
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-06-h100-s26/call10.sh
PINNED="1 0" bash bench/results/2026-12-06-h100-s26/call9.sh
