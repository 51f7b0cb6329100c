# Session 23, call 2 (call 1 never got a machine): everything owed in one call, the benchmark of
# record first (bench/record.sh PART=2: ~80 s once built), then call1.sh's profile of the card's
# idle time, the k_decode split A/B (two alternated rounds) and what --logprobs costs a batch.
source bench/results/2026-12-05-h200-s21/prep.sh
nvidia-smi --query-gpu=name --format=csv,noheader
OUT=$OUT/record PART=2 HYOCR_RECORD_SECONDS=240 bash bench/record.sh
sed -i 's/^for rep in 1 2 3; do$/for rep in 1 2; do/' bench/results/2026-12-05-h200-s23/call1.sh
bash bench/results/2026-12-05-h200-s23/call1.sh
