#!/bin/bash
# s12 call8: the benchmark of record at 7234111 (the upload, the embeddings moved after the first token, arrivals taken between admissions)
set -u
export PATH=/usr/local/cuda/bin:$PATH
OUT=$OUT/rec PART=2 HYOCR_RECORD_SECONDS=420 bash bench/record.sh > $OUT/record-log.txt 2>&1
cat $OUT/rec/log.txt
