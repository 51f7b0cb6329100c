#!/bin/bash
# s12 call6: the benchmark of record at cad1117 (the upload and the embeddings' move included)
set -u
export PATH=/usr/local/cuda/bin:$PATH
OUT=$OUT/rec PART=2 HYOCR_RECORD_SECONDS=420 bash bench/record.sh > $OUT/record-log.txt 2>&1
cat $OUT/rec/log.txt
