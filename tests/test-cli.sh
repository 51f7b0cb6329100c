#!/bin/bash
# The hyocr command end to end on the fixture checkpoints: what it prints and
# writes, its exit statuses and its error messages. TAP output.
set -u
HYOCR=$1
DATA=${HYOCR_TEST_DATA:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0

ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; shift; for l in "$@"; do echo "# $l"; done; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else not_ok "$name" "command: $*"; fi; }
quiet() { "$@" >/dev/null 2>&1; }

# expect STATUS PATTERN -- CMD…: exit status and a stderr line matching PATTERN
expect() {
    local want=$1 pattern=$2; shift 3
    "$@" >"$tmp/out" 2>"$tmp/err"
    local got=$?
    if [ "$got" -eq "$want" ] && grep -qE -- "$pattern" "$tmp/err"; then
        ok "exit $want with /$pattern/: ${*:2:3}"
    else
        not_ok "exit $want with /$pattern/: ${*:2:3}" "status $got" "stderr: $(head -c 400 "$tmp/err")"
    fi
}

max_abs_diff() {
    python3 - "$1" "$2" <<'PY'
import struct, sys
a = open(sys.argv[1], "rb").read(); b = open(sys.argv[2], "rb").read()
if len(a) != len(b):
    print("size", len(a), len(b)); sys.exit(1)
fa = struct.unpack("<%df" % (len(a) // 4), a); fb = struct.unpack("<%df" % (len(b) // 4), b)
d = max((abs(x - y) for x, y in zip(fa, fb)), default=0.0)
print(d); sys.exit(0 if d <= 1e-6 else 1)
PY
}

flat=$DATA/ckpt-flat
nested=$DATA/ckpt-nested

# prepare: every dump file equals what the transformers processor produced
for ck in ckpt-flat ckpt-nested; do
    for img_dir in "$DATA"/prompts/$ck/*; do
        img=$(basename "$img_dir")
        for task in recognize extract_fields custom; do
            ref=$img_dir/$task
            out=$tmp/$ck-$img-$task
            args=(--task "$task")
            [ "$task" = extract_fields ] && args+=(--fields "姓名,date,total")
            [ "$task" = custom ] && args=(--prompt "$(cat "$ref/text.txt")")
            if ! "$HYOCR" prepare --model "$DATA/$ck" --image "$DATA/images/$img" "${args[@]}" --dump "$out" >"$tmp/log" 2>&1; then
                not_ok "prepare $ck $img $task" "$(cat "$tmp/log")"
                continue
            fi
            check "input_ids $ck $img $task" cmp -s "$out/input_ids.txt" "$ref/input_ids.txt"
            check "position_ids $ck $img $task" cmp -s "$out/position_ids.txt" "$ref/position_ids.txt"
            check "grid $ck $img $task" cmp -s "$out/grid_thw.txt" "$DATA/processor/$ck/$img/grid_thw.txt"
            d=$(max_abs_diff "$out/pixel_values.f32" "$DATA/processor/$ck/$img/pixel_values.f32")
            check "pixel_values $ck $img $task (max |Δ| $d)" test $? -eq 0
        done
    done
done

# run: JSON parses (control bytes escaped), tokens equal transformers' greedy run with the
# 1.08 penalty, and the streamed text equals the JSON text
for case_dir in "$DATA"/model/ckpt-*/*; do
    ck=$(basename "$(dirname "$case_dir")"); case=$(basename "$case_dir")
    img=${case%%__*}; task=${case##*__}
    args=(--model "$DATA/$ck" --image "$DATA/images/$img" --task "$task" --max-new-tokens 48 --repetition-penalty 1.08 --device cpu)
    [ "$task" = extract_fields ] && args+=(--fields "姓名,date,total")
    "$HYOCR" run "${args[@]}" --format json >"$tmp/run.json" 2>"$tmp/run.err"
    check "run json exits 0 ($ck $case)" test $? -eq 0
    "$HYOCR" run "${args[@]}" >"$tmp/run.txt" 2>/dev/null
    python3 - "$tmp/run.json" "$case_dir/greedy_rp.txt" "$tmp/run.txt" <<'PY' >"$tmp/py.log" 2>&1
import json, sys
[r] = json.load(open(sys.argv[1], encoding="utf-8"))
want = [int(x) for x in open(sys.argv[2]).read().split()]
assert r["token_ids"] == want, (r["token_ids"], want)
streamed = open(sys.argv[3], encoding="utf-8", errors="surrogateescape").read()
assert streamed.rstrip("\n") == r["text"].rstrip("\n"), (streamed[:80], r["text"][:80])
assert r["stop_reason"] in ("eos", "max_new_tokens")
PY
    check "run json tokens = transformers, text = stream ($ck $case)" test $? -eq 0 || cat "$tmp/py.log"
done

# inspect: the numbers of the checkpoint
"$HYOCR" inspect --model "$flat" >"$tmp/inspect" 2>&1
check "inspect flat runs" test $? -eq 0
check "inspect flat says tied" grep -q "tied to embed_tokens" "$tmp/inspect"
check "inspect flat says 2 files" grep -qE "in 2 files" "$tmp/inspect"
check "inspect flat says no draft" grep -q "^draft          none (no dflash/ folder)" "$tmp/inspect"
"$HYOCR" inspect --model "$DATA/ckpt-dflash" >"$tmp/inspect-dflash" 2>&1
check "inspect reports the DFlash draft" grep -q "^draft          DFlash, 5 layers, hidden 64, 4 heads / 2 kv heads × 32, mlp 224, rope theta 10000" "$tmp/inspect-dflash"
check "inspect reports the draft's taps" grep -q "block        16 (bonus + 15 drafts), mask token 2022, reads target layers \[1, 3, 5, 6\]" "$tmp/inspect-dflash"
check "inspect reports the draft's size" grep -q "tensors      58 used, 0 ignored, 355392 parameters" "$tmp/inspect-dflash"
# a broken draft: the model still opens, inspect says why the draft is not used
mkdir -p "$tmp/draft-broken/dflash"
for f in "$DATA"/ckpt-dflash/*; do [ -f "$f" ] && ln -s "$f" "$tmp/draft-broken/"; done
sed 's/"num_target_layers": 8/"num_target_layers": 24/' "$DATA/ckpt-dflash/dflash/config.json" >"$tmp/draft-broken/dflash/config.json"
ln -s "$DATA/ckpt-dflash/dflash/model.safetensors" "$tmp/draft-broken/dflash/"
"$HYOCR" inspect --model "$tmp/draft-broken" >"$tmp/inspect-broken" 2>&1
check "inspect with a broken draft runs" test $? -eq 0
check "inspect says why the draft is unusable" grep -q "'num_target_layers' is 24 but the model's is 8" "$tmp/inspect-broken"
"$HYOCR" inspect --model "$nested" >"$tmp/inspect2" 2>&1
check "inspect nested says explicit lm_head" grep -q "explicit lm_head.weight" "$tmp/inspect2"
check "inspect nested says transformers names" grep -q "transformers-5 names" "$tmp/inspect2"
# the CUDA plan needs no GPU: per page, the tight total (vision weights off the device while decoding)
# is never above the full total nor below the vision phase's peak (when the weights are all there)
"$HYOCR" inspect --model "$flat" --device cuda --max-new-tokens 64 >"$tmp/inspect3" 2>&1
check "inspect --device cuda plans pages" test "$(grep -cE '^  [0-9]+×[0-9]+ ' "$tmp/inspect3")" -ge 1
check "inspect tight total <= total, >= vision peak" awk '/^  [0-9]+×[0-9]+ / { if ($9 > $8 + 1e-9 || $9 < $7 - 1e-9) bad = 1; n++ } END { exit bad || !n }' "$tmp/inspect3"

# tokenize → detokenize round trip, with special tokens inline
text='提取图中的文字。 Total 42.00 <｜hy_User｜>'
ids=$("$HYOCR" tokenize --model "$flat" "$text")
check "tokenize prints ids" test -n "$ids"
back=$("$HYOCR" detokenize --model "$flat" $ids)
check "detokenize round trip" test "$back" = "$text"
back=$("$HYOCR" detokenize --model "$flat" --skip-special $ids)
check "detokenize --skip-special drops <｜hy_User｜>" test "$back" = "提取图中的文字。 Total 42.00 "
# ids 64 188 65 are "a", byte 0 and "b": the NUL byte is written, not where the text stops
"$HYOCR" detokenize --model "$flat" 64 188 65 >"$tmp/nul"
check "detokenize writes a NUL byte" cmp -s "$tmp/nul" <(printf 'a\0b\n')

# errors: clear message, non-zero status, never a crash
expect 1 "no-such-folder" -- "$HYOCR" inspect --model "$tmp/no-such-folder"
# a run whose job list would not fit in memory is refused, not aborted by the allocator
expect 1 "split the run" -- "$HYOCR" run --model "$flat" --image "$DATA/images/tiny_40x30.png" --repeat 100000000
expect 2 "unknown task" -- "$HYOCR" prepare --model "$flat" --image "$DATA/images/tiny_40x30.png" --task nope --dump "$tmp/x"
head -c 300 "$DATA/images/square_200.png" >"$tmp/truncated.png"
expect 1 "truncated.png" -- "$HYOCR" prepare --model "$flat" --image "$tmp/truncated.png" --task recognize --dump "$tmp/x"
echo "not an image" >"$tmp/notes.txt"
expect 1 "notes.txt" -- "$HYOCR" prepare --model "$flat" --image "$tmp/notes.txt" --task recognize --dump "$tmp/x"
expect 1 "fields" -- "$HYOCR" prepare --model "$flat" --image "$DATA/images/tiny_40x30.png" --task extract_fields --dump "$tmp/x"
expect 2 "token id" -- "$HYOCR" detokenize --model "$flat" 99999999
expect 2 "usage" -- "$HYOCR" no-such-command
mkdir -p "$tmp/broken" && cp "$flat"/*.json "$tmp/broken/" && echo '{"hidden_size": ' >"$tmp/broken/config.json"
expect 1 "config.json" -- "$HYOCR" inspect --model "$tmp/broken"

# run with several images: one batched run, per-image JSON whose tokens equal each image
# run alone, and a summary line with the aggregate tokens/s on stderr
one=$DATA/images/odd_137x91.png; two=$DATA/images/big_420x300.png
many=(--model "$flat" --device cpu --max-new-tokens 24 --repetition-penalty 1.08)
"$HYOCR" run "${many[@]}" --format json --image "$one" --image "$two" --max-batch 2 --swap-space 0.1 \
    >"$tmp/many.json" 2>"$tmp/many.err"
check "run two images exits 0" test $? -eq 0
check "run two images: summary on stderr" grep -qE "2 jobs \(0 failed\), [0-9]+ tokens in [0-9.]+ s: [0-9.]+ tokens/s" "$tmp/many.err"
"$HYOCR" run "${many[@]}" --format json --image "$one" >"$tmp/one.json" 2>/dev/null
"$HYOCR" run "${many[@]}" --format json --image "$two" >"$tmp/two.json" 2>/dev/null
python3 - "$tmp/many.json" "$tmp/one.json" "$tmp/two.json" "$one" "$two" <<'PY' >"$tmp/py.log" 2>&1
import json, sys
many = json.load(open(sys.argv[1], encoding="utf-8"))
alone = [json.load(open(p, encoding="utf-8"))[0] for p in sys.argv[2:4]]
assert [m["image"] for m in many] == sys.argv[4:6], many
for m, a in zip(many, alone):
    assert "error" not in m, m
    assert m["token_ids"] == a["token_ids"] and len(a["token_ids"]) > 0, (m["token_ids"], a["token_ids"])
    assert m["text"] == a["text"]
PY
check "run two images: tokens equal each image alone" test $? -eq 0 || cat "$tmp/py.log"

# one shape for every count: json is an array, jsonl a line per image, each object naming its
# image, for one image (given or the only one in a folder) as for several
mkdir -p "$tmp/solo" && cp "$one" "$tmp/solo/"
"$HYOCR" run "${many[@]}" --format jsonl --image "$one" >"$tmp/one.jsonl" 2>/dev/null
"$HYOCR" run "${many[@]}" --format jsonl "$tmp/solo" >"$tmp/solo.jsonl" 2>/dev/null
"$HYOCR" run "${many[@]}" --format json "$tmp/solo" >"$tmp/solo.json" 2>/dev/null
python3 - "$tmp/one.json" "$tmp/one.jsonl" "$tmp/solo.jsonl" "$tmp/solo.json" "$one" "$tmp/solo/$(basename "$one")" <<'PY' >"$tmp/py.log" 2>&1
import json, sys
one, solo = sys.argv[5], sys.argv[6]
arrays = [json.load(open(sys.argv[1])), json.load(open(sys.argv[4]))]
lines = [[json.loads(l) for l in open(p)] for p in sys.argv[2:4]]
for rows, image in zip(arrays + lines, [one, solo, one, solo]):
    assert isinstance(rows, list) and len(rows) == 1, rows
    assert rows[0]["image"] == image, rows[0]
    assert rows[0]["token_ids"] == arrays[0][0]["token_ids"] and rows[0]["token_ids"], rows[0]
PY
check "run json/jsonl, one image: an array of one object / one line, with its image" test $? -eq 0 || cat "$tmp/py.log"

# JSON is written as the pages end: the first page's line is there while the run goes on; SIGTERM
# then cancels it, the cancelled pages still get theirs, and json closes its array (exit 130)
slow=(--model "$flat" --device cpu --max-new-tokens 1500 --ignore-eos --max-batch 1 --image "$one" --repeat 4)
for fmt in jsonl json; do
    "$HYOCR" run "${slow[@]}" --format $fmt >"$tmp/slow.$fmt" 2>"$tmp/slow.err" &
    pid=$!
    want='"stop_reason"'   # in the first object, whichever way it is printed
    for _ in $(seq 1200); do grep -q "$want" "$tmp/slow.$fmt" && break; kill -0 $pid 2>/dev/null || break; sleep 0.1; done
    kill -0 $pid 2>/dev/null
    check "run --format $fmt: the first page is written while the others run" test $? -eq 0
    kill -TERM $pid
    wait $pid
    check "run --format $fmt: SIGTERM ends the run as cancelled (130)" test $? -eq 130
    python3 - "$tmp/slow.$fmt" "$fmt" <<'PY' >"$tmp/py.log" 2>&1
import json, sys
text = open(sys.argv[1]).read()
rows = [json.loads(l) for l in text.splitlines()] if sys.argv[2] == "jsonl" else json.loads(text)
assert len(rows) == 4, rows
assert rows[0]["stop_reason"] == "max_new_tokens" and len(rows[0]["token_ids"]) == 1500, rows[0]
assert rows[-1]["stop_reason"] == "cancelled" or "error" in rows[-1], rows[-1]
PY
    check "run --format $fmt: every page written, the first whole, the last cancelled" test $? -eq 0 || cat "$tmp/py.log"
done

# --warmup (a no-op on the CPU backend) leaves the answer as it is
"$HYOCR" run --model "$flat" --device cpu --image "$one" --max-new-tokens 8 >"$tmp/w0.txt" 2>/dev/null
"$HYOCR" run --model "$flat" --device cpu --image "$one" --max-new-tokens 8 --warmup >"$tmp/w1.txt" 2>"$tmp/w1.err"
check "run --warmup: the same answer as without" cmp -s "$tmp/w0.txt" "$tmp/w1.txt"
check "run --warmup: no warning on the CPU" test ! -s "$tmp/w1.err"

# a folder (PNG/JPEG files by name) with a broken file, repeated, as JSON lines: the broken
# one fails with its name, the others finish; exit status 1
mkdir -p "$tmp/pages" && cp "$one" "$DATA/images/tiny_40x30.png" "$tmp/pages/" && echo junk >"$tmp/pages/broken.png"
echo "not an image either" >"$tmp/pages/notes.txt"
"$HYOCR" run "${many[@]}" --format jsonl --repeat 2 "$tmp/pages" >"$tmp/pages.jsonl" 2>"$tmp/pages.err"
check "run folder with a broken file exits 1" test $? -eq 1
check "run folder: the broken file is named on stderr" grep -q "broken.png" "$tmp/pages.err"
check "run folder: summary counts 6 jobs, 2 failed" grep -q "6 jobs (2 failed)" "$tmp/pages.err"
check "run folder: the file it does not read is named as skipped, with the formats it reads" \
    grep -q "skipped $tmp/pages/notes.txt: not an image or document hyocr reads (PNG, JPEG" "$tmp/pages.err"
check "run folder: nothing else is skipped" test "$(grep -c skipped "$tmp/pages.err")" -eq 1
python3 - "$tmp/pages.jsonl" <<'PY' >"$tmp/py.log" 2>&1
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
names = [r["image"].rsplit("/", 1)[1] for r in rows]
assert names == ["broken.png"] * 2 + ["odd_137x91.png"] * 2 + ["tiny_40x30.png"] * 2, names
for r in rows:
    if r["image"].endswith("broken.png"):
        assert "broken.png" in r["error"] and r["token_ids"] == [], r
    else:
        assert "error" not in r and len(r["token_ids"]) > 0, r
assert rows[2]["token_ids"] == rows[3]["token_ids"]
PY
check "run folder: JSON lines per image, repeats equal" test $? -eq 0 || cat "$tmp/py.log"
"$HYOCR" run "${many[@]}" "$one" "$two" >"$tmp/many.txt" 2>/dev/null
check "run two images as text: a header per image" test "$(grep -c '^==> .* <==$' "$tmp/many.txt")" -eq 2
# a page refused for memory: the engine's plan comes back as data and the command words it in its
# own options, with values that work when passed (the tiny model's weights take 832 KiB, its
# matrices kept in bf16; the big page 1.1 MiB)
tight=(--model "$flat" --device cpu --max-new-tokens 12 --image "$two")
expect 1 "needs .* but the memory limit is" -- "$HYOCR" run "${tight[@]}" --gpu-memory-limit 1000K
side=$(grep -oE -- '--max-side [0-9]+' "$tmp/err" | cut -d' ' -f2)
limit=$(grep -oE -- '--gpu-memory-limit [0-9]+M' "$tmp/err" | cut -d' ' -f2)
check "memory refusal names --max-side N and --gpu-memory-limit NM" test -n "$side" -a -n "$limit"
check "memory refusal: --max-side $side then fits" quiet "$HYOCR" run "${tight[@]}" --gpu-memory-limit 1000K --max-side "${side:-0}"
check "memory refusal: --gpu-memory-limit $limit then fits" quiet "$HYOCR" run "${tight[@]}" --gpu-memory-limit "${limit:-0}"
# a long answer: the cache sets the total, and the advice is a --max-new-tokens that fits
expect 1 "lower --max-new-tokens to [0-9]+" -- "$HYOCR" run --model "$flat" --device cpu --image "$DATA/images/tiny_40x30.png" --max-new-tokens 4000 --gpu-memory-limit 1000K
max_new=$(grep -oE -- '--max-new-tokens to [0-9]+' "$tmp/err" | cut -d' ' -f3)
check "memory refusal: --max-new-tokens $max_new then fits" quiet "$HYOCR" run --model "$flat" --device cpu --image "$DATA/images/tiny_40x30.png" --max-new-tokens "${max_new:-0}" --gpu-memory-limit 1000K --ignore-eos
# weights over the limit: refused at load, with a limit that would do
expect 1 "weights .* pass --gpu-memory-limit [0-9]+M or more" -- "$HYOCR" run "${tight[@]}" --gpu-memory-limit 800K
expect 1 "extract_fields needs .*--fields" -- "$HYOCR" run "${many[@]}" --image "$one" --task extract_fields
expect 1 "^hyocr run: --stop: stop string 2 must be UTF-8 text of 1 to 256 bytes \(it has 0\)$" -- \
    "$HYOCR" run "${many[@]}" --image "$one" --stop x --stop ""

# --logprobs: in the JSON, one entry a token, the top ones most likely first; the same tokens
expect 1 "^hyocr run: --logprobs: the log-probabilities are written in JSON: add --format json or jsonl$" -- \
    "$HYOCR" run "${many[@]}" --image "$one" --logprobs 2
expect 1 "^hyocr run: --logprobs: at most 20 alternatives a token \(got 21\)$" -- \
    "$HYOCR" run "${many[@]}" --image "$one" --logprobs 21 --format json
"$HYOCR" run "${many[@]}" --image "$one" --format json >"$tmp/plain.json" 2>/dev/null
"$HYOCR" run "${many[@]}" --image "$one" --format json --logprobs 3 >"$tmp/lp.json" 2>/dev/null
check "--logprobs 3: an entry a token, 3 alternatives most likely first, the tokens unchanged" \
    python3 - "$tmp/lp.json" "$tmp/plain.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))[0]; plain = json.load(open(sys.argv[2]))[0]
assert r["token_ids"] == plain["token_ids"] and "logprobs" not in plain
assert len(r["logprobs"]) == len(r["token_ids"]) > 0
for id_, e in zip(r["token_ids"], r["logprobs"]):
    top = e["top_logprobs"]
    assert len(top) == 3 and top[0]["logprob"] >= top[1]["logprob"] >= top[2]["logprob"], top
    assert e["logprob"] <= top[0]["logprob"] <= 0
    assert all(t["logprob"] == e["logprob"] for t in top if t["id"] == id_), (id_, e)
PY

# documents: a PDF's pages are jobs, --pages selects, a folder mixes formats (names that lie are
# read by their content), an encrypted PDF takes --password-file
make_pdf() {   # make_pdf OUT N: N pages of 300×200 pt, page k with a bar at a different place
    python3 "$(dirname "$0")/make-pdf.py" "$1" "$2"
}
# a build without poppler-glib, cairo and pango (the GPU machine) reads no PDF and writes none
# (the block is not indented: its here-documents end at column 0)
if [ "${HYOCR_TEST_HAVE_PDF:-1}" = 1 ] && [ "${HYOCR_TEST_HAVE_PDF_EXPORT:-1}" = 1 ]; then
make_pdf "$tmp/scan.pdf" 3
"$HYOCR" run "${many[@]}" --format jsonl "$tmp/scan.pdf" >"$tmp/scan.jsonl" 2>"$tmp/scan.err"
check "run a 3-page PDF exits 0" test $? -eq 0
check "run a 3-page PDF: 3 jobs" grep -q "3 jobs (0 failed)" "$tmp/scan.err"
check "run a 3-page PDF: no progress lines when stderr is not a terminal" test "$(grep -c '\[1/3\]' "$tmp/scan.err")" -eq 0
"$HYOCR" run "${many[@]}" --format jsonl --pages 3,2 "$tmp/scan.pdf" >"$tmp/sel.jsonl" 2>/dev/null
python3 - "$tmp/scan.jsonl" "$tmp/sel.jsonl" "$tmp/scan.pdf" <<'PY' >"$tmp/py.log" 2>&1
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
sel = [json.loads(l) for l in open(sys.argv[2], encoding="utf-8")]
assert [r["page"] for r in rows] == [1, 2, 3], rows
assert all(r["image"] == sys.argv[3] and "error" not in r and r["token_ids"] for r in rows), rows
assert [r["page"] for r in sel] == [3, 2], sel
assert sel[0]["token_ids"] == rows[2]["token_ids"] and sel[1]["token_ids"] == rows[1]["token_ids"]
PY
check "run a PDF: a JSON line per page; --pages 3,2 gives those pages, same tokens" test $? -eq 0 || cat "$tmp/py.log"
expect 1 "scan.pdf: pages “5”: page 5 is past the end of the document \(3 pages\)" -- "$HYOCR" run "${many[@]}" --pages 5 "$tmp/scan.pdf"
expect 1 "pages “2-1”: the range 2-1 runs backwards" -- "$HYOCR" run "${many[@]}" --pages 2-1 "$tmp/scan.pdf"
script -qec "'$HYOCR' run --model '$flat' --device cpu --max-new-tokens 4 '$tmp/scan.pdf' >/dev/null" /dev/null >"$tmp/tty.txt" 2>&1
check "run a PDF with stderr on a terminal: a progress line per page" test "$(grep -cE '\[[123]/3\] .*scan.pdf, page [123]: done, [0-9]+ tokens' "$tmp/tty.txt")" -eq 3
mkdir -p "$tmp/mixed"
cp "$one" "$tmp/mixed/a.png"
cp "$tmp/scan.pdf" "$tmp/mixed/b.pdf"
make_pdf "$tmp/mixed/c.jpg" 2          # a PDF named .jpg: read as the PDF it is
"$HYOCR" run "${many[@]}" --format jsonl "$tmp/mixed" >"$tmp/mixed.jsonl" 2>"$tmp/mixed.err"
check "run a folder of mixed formats: 1 + 3 + 2 pages" grep -q "6 jobs (0 failed)" "$tmp/mixed.err"
"$HYOCR" run "${many[@]}" --task parse_document --output "$tmp/scan.md" --output "$tmp/scan-ocr.pdf" \
    --output "$tmp/scan.json" --output "$tmp/scan.html" "$tmp/scan.pdf" >/dev/null 2>"$tmp/out.err"
check "run --output .md .pdf .json .html exits 0" test $? -eq 0
check "--output .md: a comment per page, in order" test "$(grep -c '^<!-- .*scan.pdf, page [123] -->$' "$tmp/scan.md")" -eq 3
python3 - "$tmp/scan.json" "$tmp/scan.jsonl" <<'PY' >"$tmp/py.log" 2>&1
import json, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
assert d["engine"].startswith("hyocr ") and d["model"] == "ckpt-flat" and d["backend"] == "cpu", d
assert [p["page"] for p in d["pages"]] == [1, 2, 3] and all(p["task"] == "parse_document" for p in d["pages"])
assert all(p["page_size_pt"] == [300, 200] and p["page_width_px"] == 834 for p in d["pages"]), d["pages"][0]
PY
check "--output .json: the pages, their task, model and engine" test $? -eq 0 || cat "$tmp/py.log"
check "--output .html: a section per page" test "$(grep -c '<section class="page"' "$tmp/scan.html")" -eq 3
if command -v pdfinfo >/dev/null; then
    check "--output .pdf: 3 pages of 300 × 200 pt" test "$(pdfinfo "$tmp/scan-ocr.pdf" | grep -cE '^Pages: +3$|^Page size: +300 x 200 pts')" -eq 2
fi
expect 1 "--output .*scan.docx: the extension names no format hyocr writes \(.txt, .md" -- "$HYOCR" run "${many[@]}" --output "$tmp/scan.docx" "$tmp/scan.pdf"
expect 1 "no-such-dir" -- "$HYOCR" run "${many[@]}" --output "$tmp/no-such-dir/x.md" "$tmp/scan.pdf"
if command -v qpdf >/dev/null; then
    qpdf --encrypt open-sesame owner 256 -- "$tmp/scan.pdf" "$tmp/secret.pdf"
    expect 1 "secret.pdf: the PDF is encrypted and needs a password to open \(give the password in a file with --password-file FILE\)" -- "$HYOCR" run "${many[@]}" "$tmp/secret.pdf"
    printf 'wrong\n' >"$tmp/wrong.txt"; printf 'open-sesame\n' >"$tmp/right.txt"
    expect 1 "the password given does not open this encrypted PDF" -- "$HYOCR" run "${many[@]}" --password-file "$tmp/wrong.txt" "$tmp/secret.pdf"
    expect 1 "--password-file .*nope.txt" -- "$HYOCR" run "${many[@]}" --password-file "$tmp/nope.txt" "$tmp/secret.pdf"
    "$HYOCR" run "${many[@]}" --format jsonl --password-file "$tmp/right.txt" --pages 2 "$tmp/secret.pdf" "$tmp/scan.pdf" >"$tmp/secret.jsonl" 2>/dev/null
    check "run an encrypted PDF with --password-file: same tokens as the plain one" python3 -c "
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert len(r) == 2 and r[0]['token_ids'] == r[1]['token_ids'] and r[0]['page'] == 2, r" "$tmp/secret.jsonl"
else
    echo "# SKIP encrypted PDF: qpdf not installed (Debian package qpdf)"
fi
else
    n=$((n + 1)); echo "ok $n # SKIP documents: this hyocr was built without PDF (poppler-glib, cairo, pangocairo)"
fi
expect 1 "single image" -- "$HYOCR" run "${many[@]}" --image "$one" --image "$two" --dump "$tmp/d"

# without --model, run uses the installed model (the app's rule: HunyuanOCR-1.5 under
# $XDG_DATA_HOME/hyocr/models when complete), and says how to get one when there is none
mkdir -p "$tmp/xdg/hyocr/models"
ln -s "$flat" "$tmp/xdg/hyocr/models/HunyuanOCR-1.5"
nomodel=(--device cpu --max-new-tokens 24 --repetition-penalty 1.08 --format json --image "$one")
XDG_DATA_HOME=$tmp/xdg "$HYOCR" run "${nomodel[@]}" >"$tmp/default.json" 2>"$tmp/default.err"
check "run without --model uses the installed model" python3 -c "
import json, sys
a, b = json.load(open(sys.argv[1]))[0], json.load(open(sys.argv[2]))[0]
assert a['token_ids'] == b['token_ids'] and a['token_ids'], (a, b)" "$tmp/default.json" "$tmp/one.json"
expect 1 "no model is installed \(.*/empty-xdg/hyocr/models/HunyuanOCR-1.5 lacks config.json\): get one with .hyocr download." -- env XDG_DATA_HOME="$tmp/empty-xdg" "$HYOCR" run "${nomodel[@]}"
# a model folder that is not there: the engine's reason, the CLI's remedy
expect 1 "model folder $tmp/no-such-model does not exist or is not a folder; get the model with .hyocr download., or give its folder with --model DIR" -- "$HYOCR" run --model "$tmp/no-such-model" --image "$one"
# -n 0 is refused, not taken for the default
expect 1 "--max-new-tokens: expected 1 or more, got 0" -- "$HYOCR" run --model "$flat" --image "$one" -n 0
expect 1 "^hyocr run: --speculative-tokens must be at least -1 \(got -2\)$" -- "$HYOCR" run --model "$flat" --image "$one" --speculative-tokens -2
expect 1 "^hyocr run: --swap-space cannot be negative \(got -1\)$" -- "$HYOCR" run --model "$flat" --image "$one" --swap-space -1
expect 1 "^hyocr run: --timeout cannot be negative \(got -4\)$" -- "$HYOCR" run --model "$flat" --image "$one" --timeout -4
for bad in 8X 8GiBx "" -1 G; do
    expect 1 "--gpu-memory-limit: expected bytes \\(8G, 2500M\\) or a fraction of the card \\(0.5\\), got “$bad”" -- \
        "$HYOCR" run --model "$flat" --image "$one" --gpu-memory-limit "$bad"
done
for bad in 0.5K 1T 12Q; do
    expect 2 "--max-request-size: expected bytes \\(64M, 1G\\), got “$bad”" -- "$HYOCR" serve --model "$flat" --max-request-size "$bad"
done
# run --help names every task and the default of --max-new-tokens
"$HYOCR" run --help >"$tmp/help.txt"
missing=""
for t in recognize spotting parse_document parse_table parse_formula parse_chart translate_zh translate_en extract_fields subtitles; do
    grep -qE -- "--task=NAME .*\b$t\b" "$tmp/help.txt" || missing="$missing $t"
done
check "run --help lists every task (missing:${missing:- none})" test -z "$missing"
check "run --help gives the default of --max-new-tokens" grep -qE -- "--max-new-tokens=N .*default 8192" "$tmp/help.txt"
expect 1 "no image or document hyocr reads" -- "$HYOCR" run "${many[@]}" "$tmp/broken"

echo "1..$n"
[ "$failed" -eq 0 ]
