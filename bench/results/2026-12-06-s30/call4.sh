# Session 30, call 4: bench/gpu-bench.sh in full — transformers 5.17 fp16 (sdpa and eager) rows
# from the same run as hyocr's (issue 17's proof; the last such run was session 5's), at 1024²
# and 2048² (4096²: hyocr only, as the script does). Table printed, raw outputs packed.
#   source .device/setup.sh >/dev/null 2>&1; bash bench/results/2026-12-06-s30/call4.sh
T0=$(date +%s)
source bench/results/2026-12-05-h200-s21/prep.sh
W=${OUT:-/tmp/s30}/call4; mkdir -p $W
nvidia-smi --query-gpu=name --format=csv,noheader | tee $W/gpu.txt
python3 -c "import transformers, torch; print('transformers', transformers.__version__, 'torch', torch.__version__)" 2>&1 | tail -1
OUT=$W/gpu-bench timeout 500 bash bench/gpu-bench.sh > $W/gpu-bench.txt 2>&1; echo "gpu-bench exit $?"
tail -5 $W/gpu-bench/hf.log 2>/dev/null
cat $W/gpu-bench/bench.md
rm -rf $W/gpu-bench/img; tar czf $W/gpu-bench.tgz -C $W gpu-bench && rm -rf $W/gpu-bench
echo "[$(( $(date +%s) - T0 )) s] done"
