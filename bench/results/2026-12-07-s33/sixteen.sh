# Session 33's calls source this: sixteen [CLI] — tokens/s of 16 concurrent 1024² pages (MB: the
# max batch, 16 unless set; 1 = one at a time) with the full-size checkpoint, and a digest of
# every page's token ids; CLI defaults to $HY. Writes its scratch under $W.
sixteen() {
    timeout 60 ${1:-$HY} run --model /tmp/hy-full --image /tmp/hyocr-img/page_1024.png --task recognize --device cuda \
        --repeat 16 --max-batch ${MB:-16} --warmup --max-new-tokens 256 --ignore-eos --no-tail-stop --format jsonl > $W/r.jsonl 2> $W/r.err
    echo "$(grep -o "[0-9.]* tokens/s" $W/r.err | tail -1) ids $(python3 -c "import json,hashlib;print(hashlib.md5(str([json.loads(l)['token_ids'] for l in open('$W/r.jsonl')]).encode()).hexdigest()[:8])")"
}
