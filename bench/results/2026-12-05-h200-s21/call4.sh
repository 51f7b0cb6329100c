# Session 21, call 4: the benchmark of record at the session's code (bench/record.sh PART=2:
# build, gpu-bench without transformers rows, serve-bench with two requests a client).
nvidia-smi --query-gpu=name --format=csv,noheader
OUT=$OUT PART=2 HYOCR_RECORD_SECONDS=560 bash bench/record.sh
