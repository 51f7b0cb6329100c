# Session 26, call 8 (call 4 finer): call4.sh as it is, run with trace-admit2.patch applied instead
# of trace-admit.patch (the preparation's and the first token's parts marked too; not in the tree).
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-06-h100-s26/call8.sh
bash bench/results/2026-12-06-h100-s26/call4.sh
