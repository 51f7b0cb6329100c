#!/bin/bash
# hyocr serve end to end, over HTTP with curl, on the fixture checkpoint (CPU,
# loopback only): the answer equals hyocr run's, the SSE stream's format, every
# error of the API (400 401 404 405 413 503) with its message and param, a
# client that goes away cancels its job, /metrics, the request log, SIGTERM
# drains what is in flight, a second server on a busy port fails clearly, stop
# sequences, and the fields hyocr refuses rather than ignores.
# TAP output.
set -u
HYOCR=$1
DATA=$(cd "${HYOCR_TEST_DATA:?}" && pwd)
tmp=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT
n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; shift; for l in "$@"; do echo "# $l"; done; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else not_ok "$name" "command: $*"; fi; }

if ! command -v curl >/dev/null; then
    echo "1..0 # SKIP curl is not installed (.ci/setup installs it)"
    exit 0
fi

flat=$DATA/ckpt-flat
img=$DATA/images/odd_137x91.png

# await FILE PATTERN: until a line of FILE (written by a background job) matches; the
# file is made first, so tail never looks before the job's redirection creates it
await() {
    touch "$1"
    timeout 120 grep -m1 -qE "$2" <(tail -n +1 -f --pid=$$ "$1")
}

# start NAME ARGS…: a server on a free port; sets port_NAME and pid_NAME once it is ready
start() {
    local name=$1; shift
    : >"$tmp/$name.log"
    "$HYOCR" serve --model "$flat" --device cpu --threads 2 --port 0 "$@" 2>>"$tmp/$name.log" &
    local pid=$!
    pids+=("$pid")
    eval "pid_$name=$pid"
    # wait for the line, not for time: the first "ready" (or a failure)
    await "$tmp/$name.log" "ready|error|hyocr serve: [^lw]"
    local p
    p=$(grep -oE "listening on http://[0-9.]+:[0-9]+" "$tmp/$name.log" | grep -oE "[0-9]+$")
    eval "port_$name=${p:-0}"
}

# post NAME BODYFILE [CURL ARGS…]: status in $status, body in $tmp/out, headers in $tmp/hdr
post() {
    local port=$1 body=$2; shift 2
    status=$(curl -s -o "$tmp/out" -D "$tmp/hdr" -w '%{http_code}' -H 'Content-Type: application/json' \
             --data-binary @"$body" "$@" "http://127.0.0.1:$port/v1/chat/completions")
}

get() {
    local port=$1 path=$2; shift 2
    status=$(curl -s -o "$tmp/out" -D "$tmp/hdr" -w '%{http_code}' "$@" "http://127.0.0.1:$port$path")
}

# py EXPR: EXPR over d (the JSON in $tmp/out), h (headers, lower-case keys), s (status)
py() {
    python3 - "$tmp/out" "$tmp/hdr" "$status" "$1" <<'PY'
import json, sys
raw = open(sys.argv[1], "rb").read().decode("utf-8")
try:
    d = json.loads(raw)
except ValueError:
    d = raw
h = {}
for line in open(sys.argv[2], encoding="latin-1"):
    if ":" in line:
        k, v = line.split(":", 1)
        h[k.strip().lower()] = v.strip()
s = int(sys.argv[3])
ok = eval(sys.argv[4])
if not ok:
    print("# status", s, "body", raw[:600])
sys.exit(0 if ok else 1)
PY
}

# error STATUS PARAM PATTERN: an OpenAI-shaped error with that status, param and message
error_is() {
    py "s == $1 and set(d) == {'error'} and set(d['error']) == {'message', 'type', 'param', 'code'} and d['error']['param'] == $2 and __import__('re').search(r'''$3''', d['error']['message']) is not None"
}

# mkreq OUT [key=json …]: a request for the image with Tencent's conversation; IMAGE= (a URL),
# FILE= (a file sent as a data: URI) and TEXT= change it
mkreq() {
    local out=$1; shift
    python3 - "$img" "$out" "$@" <<'PY'
import base64, json, mimetypes, sys
img, out, *kv = sys.argv[1:]
url = "data:image/png;base64," + base64.b64encode(open(img, "rb").read()).decode()
opts = dict(a.split("=", 1) for a in kv)
text = opts.pop("TEXT", "提取图中的文字。")
if "IMAGE" in opts:
    url = opts.pop("IMAGE")
if "FILE" in opts:   # a file as a data: URI (a long one would not pass as an argument)
    path = opts.pop("FILE")
    url = "data:%s;base64," % (mimetypes.guess_type(path)[0] or "application/octet-stream") \
        + base64.b64encode(open(path, "rb").read()).decode()
msgs = [{"role": "system", "content": ""},
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}, {"type": "text", "text": text}]}]
req = {"model": "hyocr-test", "messages": msgs, "max_tokens": 24, "temperature": 0, "return_token_ids": True}
for k, v in opts.items():
    if v == "DELETE":
        req.pop(k, None)
    else:
        req[k] = json.loads(v)
open(out, "w").write(json.dumps(req, ensure_ascii=False))
PY
}

start main --served-model-name hyocr-test --served-model-name other-name --max-queue 1 --max-batch 1 \
    --allowed-local-media-path "$DATA/images"
check "the server starts and says where it listens" test "$port_main" -gt 0

# ---- plain routes
get "$port_main" /health
check "/health: 200 once warmed up" py 's == 200 and d == ""'
get "$port_main" /v1/models
check "/v1/models lists the served names" \
    py 's == 200 and d["object"] == "list" and [m["id"] for m in d["data"]] == ["hyocr-test", "other-name"]'

# ---- the answer equals hyocr run's, tokens and text
"$HYOCR" run --model "$flat" --device cpu --image "$img" -n 24 --format json >"$tmp/run.json" 2>/dev/null
mkreq "$tmp/r.json"
post "$port_main" "$tmp/r.json"
cp "$tmp/out" "$tmp/answer.json"
check "chat completion: 200, the schema, and hyocr run's tokens and text" python3 - "$tmp/answer.json" "$tmp/run.json" <<'PY'
import json, sys
a = json.load(open(sys.argv[1], encoding="utf-8")); r = json.load(open(sys.argv[2], encoding="utf-8"))
r = r[0] if isinstance(r, list) else r   # hyocr run writes one result per image
c = a["choices"][0]
assert a["object"] == "chat.completion" and a["id"].startswith("chatcmpl-") and a["model"] == "hyocr-test"
assert isinstance(a["created"], int) and c["index"] == 0 and c["message"]["role"] == "assistant"
assert c["token_ids"] == r["token_ids"], (c["token_ids"], r["token_ids"])
assert c["message"]["content"] == r["text"]
assert c["finish_reason"] == ("length" if r["stop_reason"] == "max_new_tokens" else "stop")
u = a["usage"]
assert u["prompt_tokens"] == r["prompt_tokens"] == len(a["prompt_token_ids"])
assert u["completion_tokens"] == len(r["token_ids"]) and u["total_tokens"] == u["prompt_tokens"] + u["completion_tokens"]
PY

# ---- streaming: role first, the pieces, the finish, usage, [DONE]
mkreq "$tmp/s.json" stream=true 'stream_options={"include_usage": true}'
curl -s -N -D "$tmp/hdr" -H 'Content-Type: application/json' --data-binary @"$tmp/s.json" \
    "http://127.0.0.1:$port_main/v1/chat/completions" >"$tmp/stream.txt"
check "streaming: chunks in OpenAI's schema add up to the answer, usage last, then [DONE]" \
    python3 - "$tmp/stream.txt" "$tmp/answer.json" "$tmp/hdr" <<'PY'
import json, sys
raw = open(sys.argv[1], encoding="utf-8").read()
want = json.load(open(sys.argv[2], encoding="utf-8"))
assert "text/event-stream" in open(sys.argv[3]).read()
events = [e for e in raw.split("\n\n") if e]
assert all(e.startswith("data: ") for e in events), events[:3]
assert events[-1] == "data: [DONE]"
chunks = [json.loads(e[6:]) for e in events[:-1]]
usage = chunks.pop()
assert usage["choices"] == [] and usage["usage"]["completion_tokens"] == want["usage"]["completion_tokens"]
assert usage["usage"]["prompt_tokens"] == want["usage"]["prompt_tokens"]
assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
assert all(c["object"] == "chat.completion.chunk" and c["id"] == chunks[0]["id"] for c in chunks)
assert all("usage" in c and c["usage"] is None for c in chunks)
assert chunks[-1]["choices"][0]["finish_reason"] == want["choices"][0]["finish_reason"]
assert all(c["choices"][0]["finish_reason"] is None for c in chunks[:-1])
text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
ids = [i for c in chunks for i in c["choices"][0]["token_ids"]]
assert ids == want["choices"][0]["token_ids"], (ids, want["choices"][0]["token_ids"])
assert text == want["choices"][0]["message"]["content"], (text, want["choices"][0]["message"]["content"])
PY

# ---- stop sequences, as vLLM takes them: the answer ends before the first stop string its
# text holds (streamed: no byte of it goes out), or after a stop token; "stop_reason" says which
read -r stop cut_json stop_id n_ids < <(python3 - "$tmp/answer.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1], encoding="utf-8"))["choices"][0]
text, ids = c["message"]["content"], c["token_ids"]
stop = text[len(text) // 2:len(text) // 2 + 2]
k = ids.index(ids[len(ids) // 2])
print(json.dumps(stop), json.dumps(text[:text.index(stop)]), ids[k], k + 1)
PY
)
mkreq "$tmp/stop.json" "stop=$stop"
post "$port_main" "$tmp/stop.json"
check "stop: the text up to the first stop string, finish stop, stop_reason the string" \
    py "s == 200 and d['choices'][0]['message']['content'] == $cut_json and d['choices'][0]['finish_reason'] == 'stop' and d['choices'][0]['stop_reason'] == $stop"
mkreq "$tmp/stop.json" "stop=[$stop]" include_stop_str_in_output=true
post "$port_main" "$tmp/stop.json"
check "include_stop_str_in_output: the text up to the end of it" \
    py "s == 200 and d['choices'][0]['message']['content'] == $cut_json + $stop"
mkreq "$tmp/stop.json" "stop=[\"never-there\", $stop]" stream=true
curl -s -N -H 'Content-Type: application/json' --data-binary @"$tmp/stop.json" \
    "http://127.0.0.1:$port_main/v1/chat/completions" >"$tmp/out"
check "stop, streamed: the chunks add up to the same text, the last says why" python3 - "$tmp/out" "$cut_json" "$stop" <<'PY'
import json, sys
chunks = [json.loads(e[6:]) for e in open(sys.argv[1], encoding="utf-8").read().split("\n\n") if e and e != "data: [DONE]"]
text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
assert text == json.loads(sys.argv[2]), (text, sys.argv[2])
last = chunks[-1]["choices"][0]
assert last["finish_reason"] == "stop" and last["stop_reason"] == json.loads(sys.argv[3]), last
assert all(c["choices"][0]["stop_reason"] is None for c in chunks[:-1])
PY
mkreq "$tmp/stop.json" "stop_token_ids=[$stop_id]"
post "$port_main" "$tmp/stop.json"
check "stop_token_ids: the answer ends after the token's first appearance, stop_reason the id" \
    py "s == 200 and len(d['choices'][0]['token_ids']) == $n_ids and d['choices'][0]['token_ids'][-1] == $stop_id and d['choices'][0]['stop_reason'] == $stop_id"
check "without a stop, stop_reason is null" py "json.load(open('$tmp/answer.json'))['choices'][0]['stop_reason'] is None"

# ---- log-probabilities (OpenAI's chat shape), as in the answer and as streamed
mkreq "$tmp/lp.json" logprobs=true top_logprobs=3
post "$port_main" "$tmp/lp.json"
cp "$tmp/out" "$tmp/lp-answer.json"
check "logprobs: one entry a token, OpenAI's fields, tokens unchanged, top 3 most likely first" \
    python3 - "$tmp/lp-answer.json" "$tmp/answer.json" <<'PY'
import json, math, sys
a = json.load(open(sys.argv[1], encoding="utf-8")); plain = json.load(open(sys.argv[2], encoding="utf-8"))
c = a["choices"][0]
assert c["token_ids"] == plain["choices"][0]["token_ids"], "asking for logprobs changed the tokens"
content = c["logprobs"]["content"]
assert len(content) == len(c["token_ids"]) == a["usage"]["completion_tokens"], (len(content), a["usage"])
for e in content:
    assert set(e) == {"token", "logprob", "bytes", "top_logprobs"}, e
    assert math.isfinite(e["logprob"]) and e["logprob"] <= 0, e
    assert bytes(e["bytes"]).decode("utf-8", "replace") == e["token"], e
    top = e["top_logprobs"]
    assert len(top) == 3 and all(set(t) == {"token", "logprob", "bytes"} for t in top), top
    assert top[0]["logprob"] >= top[1]["logprob"] >= top[2]["logprob"] >= -9999, top
    assert all(t["logprob"] == e["logprob"] for t in top if t["bytes"] == e["bytes"]), (e, top)
    assert e["logprob"] <= top[0]["logprob"], e
# the tokens' bytes joined hold the answer's text, once the special tokens' names are left out
import re
raw = b"".join(bytes(e["bytes"]) for e in content if not re.fullmatch("<｜.*｜>", e["token"])).decode("utf-8", "replace")
assert c["message"]["content"] in raw, (c["message"]["content"], raw)
PY
mkreq "$tmp/lp.json" logprobs=true top_logprobs=3 stream=true
curl -s -N -H 'Content-Type: application/json' --data-binary @"$tmp/lp.json" \
    "http://127.0.0.1:$port_main/v1/chat/completions" >"$tmp/out"
check "logprobs, streamed: each token's entry in its own chunk, the same as the answer's" \
    python3 - "$tmp/out" "$tmp/lp-answer.json" <<'PY'
import json, sys
chunks = [json.loads(e[6:]) for e in open(sys.argv[1], encoding="utf-8").read().split("\n\n") if e and e != "data: [DONE]"]
want = json.load(open(sys.argv[2], encoding="utf-8"))["choices"][0]["logprobs"]["content"]
got = []
for ch in chunks:
    c = ch["choices"][0]
    lp = c["logprobs"]["content"] if c["logprobs"] else []
    assert len(lp) == len(c["token_ids"]), c   # a chunk's logprobs are its tokens'
    got += lp
assert got == want, (len(got), len(want))
PY
mkreq "$tmp/lp.json" logprobs=true
post "$port_main" "$tmp/lp.json"
check "logprobs without top_logprobs: no alternatives" \
    py "s == 200 and all(e['top_logprobs'] == [] for e in d['choices'][0]['logprobs']['content'])"
mkreq "$tmp/lp.json" logprobs=true top_logprobs=1 return_tokens_as_token_ids=true
post "$port_main" "$tmp/lp.json"
check "return_tokens_as_token_ids: the tokens named token_id:N, as vLLM names them" \
    py "s == 200 and [e['token'] for e in d['choices'][0]['logprobs']['content']] == ['token_id:%d' % i for i in d['choices'][0]['token_ids']] and all(t['token'].startswith('token_id:') for e in d['choices'][0]['logprobs']['content'] for t in e['top_logprobs'])"
check "without logprobs, the choice's logprobs is null" py "json.load(open('$tmp/answer.json'))['choices'][0]['logprobs'] is None"
mkreq "$tmp/lp.json" logprobs=true top_logprobs=21
post "$port_main" "$tmp/lp.json"
check "400 top_logprobs over 20" error_is 400 "'top_logprobs'" "must be between 0 and 20 \\(got 21\\)"
mkreq "$tmp/lp.json" top_logprobs=2
post "$port_main" "$tmp/lp.json"
check "400 top_logprobs without logprobs" error_is 400 "'top_logprobs'" "needs \"logprobs\": true"

# ---- 400: what the client sent
printf '{"model": "hyocr-test", "messages": [' >"$tmp/bad.json"
post "$port_main" "$tmp/bad.json"
check "400 malformed JSON" error_is 400 None "not valid JSON"
python3 -c "print('[' * 5000 + ']' * 5000)" >"$tmp/deep.json"
post "$port_main" "$tmp/deep.json"
check "400 JSON nested too deep (refused before json-glib recurses)" error_is 400 None "not valid JSON.*(deep|nest)"
echo '[1, 2]' >"$tmp/arr.json"
post "$port_main" "$tmp/arr.json"
check "400 a body that is not an object" error_is 400 None "must be a JSON object"
mkreq "$tmp/b64.json" IMAGE='data:image/png;base64,iVBORw0KGgo*AAAA'
post "$port_main" "$tmp/b64.json"
check "400 bad base64, named with its offset" error_is 400 "'messages'" "not valid base64: byte 11"
mkreq "$tmp/junk.json" IMAGE="data:image/png;base64,$(printf 'certainly not an image' | base64 -w0)"
post "$port_main" "$tmp/junk.json"
check "400 an image that does not decode" py "s == 400 and d['error']['code'] == 'invalid_image' and 'could not be read' in d['error']['message']"
python3 - "$tmp/huge.png" <<'PY'
import struct, sys, zlib
def chunk(t, b): return struct.pack(">I", len(b)) + t + b + struct.pack(">I", zlib.crc32(t + b) & 0xffffffff)
png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 60000, 60000, 8, 2, 0, 0, 0)) \
      + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")
open(sys.argv[1], "wb").write(png)
PY
mkreq "$tmp/huge.json" IMAGE="data:image/png;base64,$(base64 -w0 "$tmp/huge.png")"
post "$port_main" "$tmp/huge.json"
check "400 an oversized image (refused from its header)" py "s == 400 and d['error']['code'] == 'invalid_image' and '60000' in d['error']['message']"
python3 - "$img" "$tmp/none.json" "$tmp/two.json" <<'PY'
import base64, json, sys
url = "data:image/png;base64," + base64.b64encode(open(sys.argv[1], "rb").read()).decode()
part = {"type": "image_url", "image_url": {"url": url}}
none = {"messages": [{"role": "user", "content": "提取图中的文字。"}]}
two = {"messages": [{"role": "user", "content": [part, part, {"type": "text", "text": "x"}]}]}
json.dump(none, open(sys.argv[2], "w")); json.dump(two, open(sys.argv[3], "w"))
PY
post "$port_main" "$tmp/none.json"
check "400 a request without an image" error_is 400 "'messages'" "no image"
post "$port_main" "$tmp/two.json"
check "400 two images in one request" error_is 400 "'messages'" "2 images.*one image per request"
mkreq "$tmp/http.json" IMAGE="https://example.com/page.png"
post "$port_main" "$tmp/http.json"
check "400 a remote image URL, with what to send instead" error_is 400 "'messages'" "remote image URLs are not fetched.*data: URI"
mkreq "$tmp/file.json" IMAGE="file://$img"
post "$port_main" "$tmp/file.json"
check "file:// under --allowed-local-media-path: the same answer" \
    py "s == 200 and d['choices'][0]['token_ids'] == json.load(open('$tmp/answer.json'))['choices'][0]['token_ids']"
mkreq "$tmp/file2.json" IMAGE="file://$DATA/images/../ckpt-flat/config.json"
post "$port_main" "$tmp/file2.json"
check "400 file:// outside that folder (.. resolved)" error_is 400 "'messages'" "not under the folder"
# a document as the image: its one page rendered as hyocr run renders the file (a PDF page to fit
# the model's max_pixels); several pages are refused as several images are, not answered in part
if [ "${HYOCR_TEST_HAVE_PDF:-1}" = 1 ]; then
    python3 "$(dirname "$0")/make-pdf.py" "$tmp/one.pdf" 1
    python3 "$(dirname "$0")/make-pdf.py" "$tmp/three.pdf" 3
    "$HYOCR" run --model "$flat" --device cpu --image "$tmp/one.pdf" -n 24 --format json >"$tmp/run-pdf.json" 2>/dev/null
    mkreq "$tmp/pdf1.json" FILE="$tmp/one.pdf"
    post "$port_main" "$tmp/pdf1.json"
    check "a one-page PDF as the image: hyocr run's tokens for the file" \
        py "s == 200 and d['choices'][0]['token_ids'] == json.load(open('$tmp/run-pdf.json'))[0]['token_ids']"
    mkreq "$tmp/pdf3.json" FILE="$tmp/three.pdf"
    post "$port_main" "$tmp/pdf3.json"
    check "400 a PDF of 3 pages, not its first page alone" \
        error_is 400 "'messages'" "a document of 3 pages: hyocr reads one image per request; send each page"
    if command -v qpdf >/dev/null; then
        qpdf --encrypt user-pw owner-pw 256 -- "$tmp/one.pdf" "$tmp/secret.pdf"
        mkreq "$tmp/secret.json" FILE="$tmp/secret.pdf"
        post "$port_main" "$tmp/secret.json"
        check "400 an encrypted PDF: a request cannot carry its password" \
            py "s == 400 and d['error']['code'] == 'invalid_image' and d['error']['param'] == 'messages' and 'encrypted and needs a password' in d['error']['message'] and 'cannot carry a password' in d['error']['message']"
    else
        n=$((n + 1)); echo "ok $n # SKIP qpdf is not installed (.ci/setup installs it): no encrypted PDF to send"
    fi
else
    n=$((n + 1)); echo "ok $n # SKIP documents: this hyocr was built without PDF (poppler-glib, cairo)"
fi
mkreq "$tmp/n.json" n=2
post "$port_main" "$tmp/n.json"
check "400 n other than 1, param n" error_is 400 "'n'" "must be 1"
mkreq "$tmp/t.json" 'temperature="hot"'
post "$port_main" "$tmp/t.json"
check "400 a parameter of the wrong type, param named" error_is 400 "'temperature'" "must be a number"
mkreq "$tmp/mt.json" max_tokens=0
post "$port_main" "$tmp/mt.json"
check "400 max_tokens 0" error_is 400 "'max_tokens'" "at least 1"
mkreq "$tmp/mt-huge.json" max_tokens=4e96
post "$port_main" "$tmp/mt-huge.json"
check "400 max_tokens 4e96 (no integer overflow)" error_is 400 "'max_tokens'" "must be at least 1"
mkreq "$tmp/unknown.json" 'frequency_penalty=0' 'logit_bias={}' 'logprobs=false' \
    'response_format={"type": "text"}' 'some_extension=[1,2]' 'skip_special_tokens=true' 'best_of=1' \
    'add_generation_prompt=true' 'length_penalty=1.0' 'mm_processor_kwargs={}' 'prompt_logprobs=null' 'echo=false'
post "$port_main" "$tmp/unknown.json"
check "unknown fields, and known ones that ask for nothing, are ignored, as vLLM does" py "s == 200"
for kv in 'frequency_penalty=0.5' 'presence_penalty=-1' 'logit_bias={"5": 10}' \
          'min_tokens=4' 'response_format={"type": "json_object"}' 'tools=[{"type": "function"}]' 'min_p=0.1' \
          'best_of=3' 'use_beam_search=true' 'prompt_logprobs=1' 'bad_words=["x"]' 'guided_json={"type": "object"}' \
          'structured_outputs={"regex": "a+"}' 'skip_special_tokens=false' 'echo=true' 'add_generation_prompt=false' \
          'chat_template="{{ messages }}"' 'truncate_prompt_tokens=10' 'mm_processor_kwargs={"max_pixels": 1000000}'; do
    key=${kv%%=*}
    mkreq "$tmp/unsup.json" "$kv"
    post "$port_main" "$tmp/unsup.json"
    check "400 $key that asks for something hyocr cannot do, not quietly ignored" \
        error_is 400 "'$key'" "\"$key\" is not supported: "
done
mkreq "$tmp/stop-bad.json" 'stop=5'
post "$port_main" "$tmp/stop-bad.json"
check "400 stop that is not a string or strings" error_is 400 "'stop'" "must be a string or a list of strings"
mkreq "$tmp/stop-bad.json" 'stop=["a", ""]'
post "$port_main" "$tmp/stop-bad.json"
check "400 an empty stop string, named by its place" error_is 400 "'stop'" "stop string 2 must be UTF-8 text of 1 to 256 bytes"
mkreq "$tmp/stop-bad.json" "stop=$(python3 -c 'print(["s%d" % i for i in range(17)])' | tr "'" '"')"
post "$port_main" "$tmp/stop-bad.json"
check "400 more stop strings than the server takes" error_is 400 "'stop'" "has 17 strings: at most 16"
mkreq "$tmp/stop-bad.json" 'stop_token_ids=[3, -1]'
post "$port_main" "$tmp/stop-bad.json"
check "400 stop_token_ids that are not token ids" error_is 400 "'stop_token_ids'" "must be a list of token ids"
mkreq "$tmp/stop-bad.json" 'stop_token_ids=[1000000000]'
post "$port_main" "$tmp/stop-bad.json"
check "400 a stop token outside the vocabulary (the engine's check)" \
    py "s == 400 and 'not in the vocabulary' in d['error']['message']"

# ---- 404, 405
mkreq "$tmp/m.json" 'model="gpt-4o"'
post "$port_main" "$tmp/m.json"
check "404 an unknown model" py "s == 404 and d['error']['code'] == 'model_not_found' and d['error']['param'] == 'model' and 'gpt-4o' in d['error']['message']"
mkreq "$tmp/m2.json" 'model="other-name"'
post "$port_main" "$tmp/m2.json"
check "the second served name answers too" py "s == 200"
mkreq "$tmp/m3.json" model=DELETE
post "$port_main" "$tmp/m3.json"
check "a request without a model goes to the served one" py "s == 200 and d['model'] == 'hyocr-test'"
get "$port_main" /v1/completions
check "404 an unknown path, in OpenAI's shape" error_is 404 None "nothing at /v1/completions"
get "$port_main" /v1/chat/completions
check "405 GET on chat completions, Allow: POST" py "s == 405 and h.get('allow') == 'POST' and 'error' in d"

# ---- 413
head -c 300000 /dev/zero | tr '\0' 'a' >"$tmp/big.txt"
start small --max-request-size 100K
post "$port_small" "$tmp/big.txt"
check "413 a body over --max-request-size (Content-Length)" error_is 413 None "larger than the server's limit of 102400 bytes"
post "$port_small" "$tmp/big.txt" -H 'Transfer-Encoding: chunked'
check "413 a chunked body over the limit" error_is 413 None "larger than the server's limit"
get "$port_small" /health
check "the server takes requests after refusing a large one" py "s == 200"
kill -TERM "$pid_small"; wait "$pid_small"
check "SIGTERM: exit 0 (under ASan: no leak)" test $? -eq 0

# ---- 400 a job the memory plan refuses: the plan's numbers, and what would fit (the tiny
# model's weights take 832 KiB: 1000K leaves no room for big_420x300's vision pass, nor for
# the cache of 4000 new tokens)
start tight --served-model-name hyocr-test --gpu-memory-limit 1000K
mkreq "$tmp/tight.json" FILE="$DATA/images/big_420x300.png" max_tokens=12
post "$port_tight" "$tmp/tight.json"
check "400 an image the memory plan refuses: its size, what it needs, the limit, the long side that fits" \
    py "s == 400 and d['error']['code'] == 'insufficient_memory' and d['error']['param'] == 'messages' and __import__('re').search(r'this 420×300 image \\(.*\\) needs [0-9.]+ [KM]iB \\(weights .*vision tower .*\\) but the server has 1000\\.0 KiB for a request; an image whose long side is at most [0-9]+ pixels fits', d['error']['message'])"
side=$(python3 -c "import json, re, sys; print(re.search(r'at most ([0-9]+) pixels', json.load(open(sys.argv[1]))['error']['message']).group(1))" "$tmp/out" 2>/dev/null)
mkreq "$tmp/tight-long.json" FILE="$DATA/images/tiny_40x30.png" max_tokens=4000 ignore_eos=true
mkreq "$tmp/tight-long-s.json" FILE="$DATA/images/tiny_40x30.png" max_tokens=4000 ignore_eos=true stream=true
post "$port_tight" "$tmp/tight-long.json"
check "400 max_tokens the memory plan refuses: the KV cache in the numbers, the max_tokens that fits" \
    py "s == 400 and d['error']['code'] == 'insufficient_memory' and __import__('re').search(r'up to 4000 new\\) needs .*KV cache .*; max_tokens [0-9]+ fits', d['error']['message'])"
fits=$(python3 -c "import json, re, sys; print(re.search(r'max_tokens ([0-9]+) fits', json.load(open(sys.argv[1]))['error']['message']).group(1))" "$tmp/out" 2>/dev/null)
post "$port_tight" "$tmp/tight-long-s.json"
check "a streamed request the plan refuses is a 400 too, not a stream" \
    py "s == 400 and d['error']['code'] == 'insufficient_memory' and not h.get('content-type', '').startswith('text/event-stream')"
mkreq "$tmp/tight-fits.json" FILE="$DATA/images/tiny_40x30.png" max_tokens="${fits:-0}" ignore_eos=true
post "$port_tight" "$tmp/tight-fits.json"
check "the max_tokens the refusal names ($fits) is answered in full" \
    py "s == 200 and d['usage']['completion_tokens'] == ${fits:-0}"
check "the long side the refusal names ($side) is at most the image's" test "${side:-0}" -gt 0 -a "${side:-0}" -lt 420
kill -TERM "$pid_tight"; wait "$pid_tight"
check "SIGTERM after the refusals: exit 0" test $? -eq 0

# ---- the web page (src/server/web.c): its files, their policy, the JSON it reads
get "$port_main" /
check "GET / is the page, with a strict Content-Security-Policy (this origin only, no inline script)" \
    py "s == 200 and '<script type=\"module\" src=\"/web/app.js\">' in d and h['content-type'].startswith('text/html') and h['content-security-policy'].startswith(\"default-src 'self'\") and \"script-src 'self';\" in h['content-security-policy'] and 'unsafe' not in h['content-security-policy'] and h['x-content-type-options'] == 'nosniff'"
get "$port_main" /web/app.js
check "the page's script is served as JavaScript, under the same policy" \
    py "s == 200 and h['content-type'].startswith('text/javascript') and 'content-security-policy' in h and 'strings.js' in d"
get "$port_main" /web/..%2Fserver.c
check "a page file that climbs out is refused (libsoup: 400)" py "s in (400, 404) and 'include' not in str(d)"
get "$port_main" /web/a..b.js
check "a name that is not one of the page's files: 404" error_is 404 None "the page has no file a..b.js"
status=$(curl -s -o "$tmp/out" -D "$tmp/hdr" -w '%{http_code}' -X POST "http://127.0.0.1:$port_main/web/app.js")
check "POST to a page file: 405" error_is 405 None "takes GET"
get "$port_main" /web/api/tasks
check "/web/api/tasks: the engine's tasks in its order, with the official prompts" \
    py "s == 200 and [t['name'] for t in d['tasks']] == ['recognize', 'spotting', 'parse_document', 'parse_table', 'parse_formula', 'parse_chart', 'translate_zh', 'translate_en', 'extract_fields', 'subtitles', 'custom'] and d['tasks'][0]['prompt'] == '提取图中的文字。' and d['tasks'][8]['input'] == 'fields' and d['tasks'][8]['prompt'] is None and d['tasks'][10]['input'] == 'prompt' and d['tasks'][2]['markdown'] and not d['tasks'][1]['markdown']"
webpost() {   # webpost PATH BODY: a POST to the page's API
    status=$(curl -s -o "$tmp/out" -D "$tmp/hdr" -w '%{http_code}' --data-binary "$2" "http://127.0.0.1:$port_main$1")
}
webpost /web/api/prompt '{"task": "extract_fields", "fields": ["姓名", "it'"'"'s"]}'
check "/web/api/prompt: the extract-fields prompt as the engine words it" \
    py "s == 200 and d == {'prompt': '提取图片中的: [\'姓名\', \"it\'s\"] 的字段内容，并按照 JSON 格式返回。'}"
webpost /web/api/prompt '{"task": "extract_fields", "fields": []}'
check "/web/api/prompt: no field is a 400 with the engine's message" error_is 400 "'fields'" "at least one field name"
webpost /web/api/prompt '{"task": "custom", "prompt": ""}'
check "/web/api/prompt: an empty custom prompt is a 400" error_is 400 "'prompt'" "needs a prompt text"
webpost /web/api/prompt '{"task": "nonsense"}'
check "/web/api/prompt: an unknown task is a 400 naming it" error_is 400 "'task'" "unknown task “nonsense”"
webpost /web/api/prompt '[1'
check "/web/api/prompt: malformed JSON is a 400" error_is 400 None "not valid JSON"
webpost /web/api/spotting $'Total (USD)(10,20),(300,40)\n王(900,5),(100,60)\nhalf(1,2),(3'
check "/web/api/spotting: the engine's parser's lines (boxes ordered, the unfinished last item left out)" \
    py "s == 200 and d == {'lines': [{'text': 'Total (USD)', 'box': [10, 20, 300, 40]}, {'text': '王', 'box': [100, 5, 900, 60]}]}"
webpost /web/api/spotting $'\xff\xfe(1,2),(3,4)'
check "/web/api/spotting: bytes that are not UTF-8 are repaired, not a crash" py "s == 200 and len(d['lines']) == 1"
webpost /web/api/render $'| a | b |\n|---|---|\n| 1 | \\(x^2\\) |\n\n<script>alert(1)</script>'
if grep -q "HYOCR_HAVE_HTML 1" "$(dirname "$HYOCR")/../../hyocr-build-config.h" 2>/dev/null; then
    check "/web/api/render: Markdown as the .html export writes it (a table, formulas between \\( \\))" \
        py "s == 200 and '<table>' in d and '<td>\\\\(x^2\\\\)</td>' in d and h['content-type'].startswith('text/html') and \"script-src 'self'\" in h['content-security-policy']"
else
    check "/web/api/render: 501 in a build without md4c" error_is 501 None "without md4c"
fi
get "$port_main" /web/api/status
check "/web/api/status: state, model, backend, queue and memory" \
    py "s == 200 and d['state'] == 'ready' and d['model'] == 'hyocr-test' and d['backend'] == 'cpu' and d['waiting'] == 0 and d['max_queue'] == 1 and d['max_request_size'] == 64 * 1024 * 1024 and d['memory_used'] > 0"
get "$port_main" /web/api/status -X POST
check "/web/api/status takes GET" error_is 405 None "takes GET"
start noweb --no-web-ui
for path in / /web/app.js /web/api/tasks; do
    get "$port_noweb" "$path"
    check "--no-web-ui: $path is 404" error_is 404 None "there is nothing at"
done
kill -TERM "$pid_noweb"; wait "$pid_noweb"
check "SIGTERM: exit 0 (under ASan: no leak)" test $? -eq 0

# ---- 401
echo "s3cret-key" >"$tmp/key.txt"
start keyed --api-key-file "$tmp/key.txt"
mkreq "$tmp/k.json" model=DELETE
post "$port_keyed" "$tmp/k.json"
check "401 without a key, with WWW-Authenticate" py "s == 401 and d['error']['code'] == 'invalid_api_key' and h.get('www-authenticate') == 'Bearer'"
post "$port_keyed" "$tmp/k.json" -H 'Authorization: Bearer wrong-key'
check "401 a wrong key" error_is 401 None "API key"
post "$port_keyed" "$tmp/k.json" -H 'Authorization: Bearer s3cret-key'
check "200 with the key from --api-key-file" py "s == 200"
get "$port_keyed" /v1/models
check "401 /v1/models without the key" py "s == 401"
get "$port_keyed" /health
check "/health needs no key (as vLLM's)" py "s == 200"
get "$port_keyed" /web/api/tasks
check "401 the page's API without the key" py "s == 401 and d['error']['code'] == 'invalid_api_key'"
get "$port_keyed" /web/api/status -H 'Authorization: Bearer s3cret-key'
check "200 the page's API with the key" py "s == 200 and d['state'] == 'ready'"
get "$port_keyed" /
check "the page itself needs no key (it asks for it)" py "s == 200 and 'app.js' in d"
kill -TERM "$pid_keyed"; wait "$pid_keyed"
check "SIGTERM: exit 0 (under ASan: no leak)" test $? -eq 0
HYOCR_API_KEY=from-env start envkey
post "$port_envkey" "$tmp/k.json" -H 'Authorization: Bearer from-env'
check "the key from HYOCR_API_KEY" py "s == 200"
kill -TERM "$pid_envkey"; wait "$pid_envkey"
check "SIGTERM: exit 0 (under ASan: no leak)" test $? -eq 0
HYOCR_API_KEY=from-env start argkey --api-key from-arg --api-key-file "$tmp/key.txt" --gpu-memory-utilization 0.9
post "$port_argkey" "$tmp/k.json" -H 'Authorization: Bearer from-env'
check "--api-key before --api-key-file and HYOCR_API_KEY: their keys are 401" py "s == 401"
post "$port_argkey" "$tmp/k.json" -H 'Authorization: Bearer from-arg'
check "… and its own is 200 (--gpu-memory-utilization taken as vLLM's spelling)" py "s == 200"
# ---- other origins (CORS, as vLLM answers them): every origin by default; a preflight is
# answered before the key is asked for; the web page answers no other origin
preflight() {   # preflight PORT ORIGIN METHOD HEADERS: status in $status, headers in $tmp/hdr
    status=$(curl -s -o "$tmp/out" -D "$tmp/hdr" -w '%{http_code}' -X OPTIONS -H "Origin: $2" \
             -H "Access-Control-Request-Method: $3" ${4:+-H "Access-Control-Request-Headers: $4"} \
             "http://127.0.0.1:$1/v1/chat/completions")
}
preflight "$port_argkey" http://page.test POST "authorization, content-type"
check "CORS preflight, keyed server, no key: 200, any origin, the methods, the headers asked for" \
    py "s == 200 and h['access-control-allow-origin'] == '*' and 'POST' in h['access-control-allow-methods'] and h['access-control-allow-headers'] == 'authorization, content-type' and h['access-control-max-age'] == '600'"
get "$port_argkey" /v1/models -H 'Origin: http://page.test'
check "CORS: a 401 from another origin carries Access-Control-Allow-Origin (the page can read why)" \
    py "s == 401 and h['access-control-allow-origin'] == '*'"
get "$port_argkey" /v1/models -H 'Origin: http://page.test' -H 'Authorization: Bearer from-arg'
check "CORS: the answer to another origin carries Access-Control-Allow-Origin: *" \
    py "s == 200 and h['access-control-allow-origin'] == '*'"
get "$port_argkey" / -H 'Origin: http://page.test'
check "CORS: the web page answers no other origin" py "s == 200 and 'access-control-allow-origin' not in h"
preflight "$port_main" http://page.test POST
check "CORS: with --allowed-local-media-path no other origin by default (a site would read those files' text)" \
    py "s == 400 and d == 'Disallowed CORS origin'"
check "… and the server said so when it started" grep -q "other origins may not call the API while --allowed-local-media-path" "$tmp/main.log"
kill -TERM "$pid_argkey"; wait "$pid_argkey"
check "SIGTERM: exit 0 (under ASan: no leak)" test $? -eq 0

start cors --allowed-origins '["http://good.test"]' --allowed-methods '["POST"]' \
    --allowed-headers '["Authorization"]' --allow-credentials
preflight "$port_cors" http://good.test POST "authorization, content-type"
check "CORS with --allowed-origins and --allow-credentials: the origin echoed, Vary: Origin, credentials" \
    py "s == 200 and h['access-control-allow-origin'] == 'http://good.test' and 'Origin' in h['vary'] and h['access-control-allow-credentials'] == 'true' and h['access-control-allow-methods'] == 'POST'"
preflight "$port_cors" http://evil.test POST
check "CORS: a preflight from an origin not allowed is a 400 naming it, without Allow-Origin" \
    py "s == 400 and d == 'Disallowed CORS origin' and 'access-control-allow-origin' not in h"
preflight "$port_cors" http://good.test DELETE "x-custom"
check "CORS: a method and a header not allowed, both named" py "s == 400 and d == 'Disallowed CORS method, Disallowed CORS headers'"
get "$port_cors" /health -H 'Origin: http://evil.test'
check "CORS: a request from an origin not allowed is served, without Allow-Origin" \
    py "s == 200 and 'access-control-allow-origin' not in h"
kill -TERM "$pid_cors"; wait "$pid_cors"
check "SIGTERM: exit 0 (under ASan: no leak)" test $? -eq 0

# ---- the Host header, against DNS rebinding: listening on loopback, the server answers only
# localhost, names under .localhost, IP addresses and what --allowed-hosts lists; a web site's own
# name pointed at 127.0.0.1 gets a 403 on every path, before the key and the CORS preflight
hosts_ok=true
for h in "localhost:$port_main" "127.0.0.1:$port_main" "[::1]:$port_main" "app.localhost" "LOCALHOST."; do
    get "$port_main" /health -H "Host: $h"
    [ "$status" = 200 ] || { hosts_ok=false; echo "# Host $h: $status"; }
done
check "Host: localhost, 127.0.0.1, [::1], a name under .localhost, any case and a last dot: answered" $hosts_ok
get "$port_main" /health -H "Host: rebound.test:$port_main"
check "Host: a name of another site: 403 naming it and --allowed-hosts, permission_error, host_not_allowed" \
    py "s == 403 and d['error']['message'].startswith('the server does not answer to the host name “rebound.test”: listening on this machine only') and '--allowed-hosts' in d['error']['message'] and d['error']['type'] == 'permission_error' and d['error']['code'] == 'host_not_allowed'"
for path in / /v1/models /web/api/tasks; do
    get "$port_main" "$path" -H "Host: rebound.test"
    check "Host: a name of another site: 403 for $path too" py "s == 403"
done
status=$(curl -s -o "$tmp/out" -D "$tmp/hdr" -w '%{http_code}' -X OPTIONS -H "Host: rebound.test" \
         -H 'Origin: http://rebound.test' -H 'Access-Control-Request-Method: POST' \
         "http://127.0.0.1:$port_main/v1/chat/completions")
check "Host: a rebound name's CORS preflight: 403, no Allow-Origin" \
    py "s == 403 and 'access-control-allow-origin' not in h"
check "Host: the refusals are logged" grep -q '"GET /v1/models" 403' "$tmp/main.log"

echo "hostkey" > "$tmp/hostkey.txt"
start hosts --allowed-hosts '["OCR.test", "proxy.test"]' --api-key-file "$tmp/hostkey.txt"
get "$port_hosts" /v1/models -H "Host: ocr.test:8443" -H "Authorization: Bearer hostkey"
check "--allowed-hosts: a listed name (any case, a port) is answered" py "s == 200"
get "$port_hosts" /v1/models -H "Host: evil.test"
check "--allowed-hosts: another name: 403 before the key (not 401)" py "s == 403 and d['error']['code'] == 'host_not_allowed'"
get "$port_hosts" /v1/models -H "Host: 127.0.0.1:$port_hosts"
check "--allowed-hosts: IP addresses still answered (then the key: 401)" py "s == 401"
kill -TERM "$pid_hosts"; wait "$pid_hosts"
check "SIGTERM: exit 0 (under ASan: no leak)" test $? -eq 0
start anyhost --allowed-hosts '["*"]'
get "$port_anyhost" /health -H "Host: anything.test"
check "--allowed-hosts '[\"*\"]': any name" py "s == 200"
kill -TERM "$pid_anyhost"; wait "$pid_anyhost"
check "SIGTERM: exit 0 (under ASan: no leak)" test $? -eq 0

# ---- options refused before anything binds (exit 2), a model that cannot load and an address
# that is not one (exit 1): each says which option or file, and what it got
refused() {   # refused STATUS PATTERN ARGS…
    local want=$1 pattern=$2; shift 2
    "$HYOCR" serve --device cpu --port 0 "$@" >/dev/null 2>"$tmp/refused.log"
    local got=$?
    if [ "$got" -eq "$want" ] && grep -qE "$pattern" "$tmp/refused.log"; then ok "exit $want: $pattern"
    else not_ok "exit $want: $pattern" "args: $*" "exit $got: $(head -3 "$tmp/refused.log")"; fi
}
refused 2 "^hyocr serve: --port must be 0…65535 \(got 70000\)$" --model "$flat" --port 70000
refused 2 "^hyocr serve: --max-queue cannot be negative \(got -1\)$" --model "$flat" --max-queue -1
refused 2 "^hyocr serve: --max-model-len cannot be negative \(got -5\)$" --model "$flat" --max-model-len -5
refused 2 "^hyocr serve: --swap-space cannot be negative \(got -0.5\)$" --model "$flat" --swap-space -0.5
refused 2 "^hyocr serve: give --gpu-memory-limit or --gpu-memory-utilization, not both$" \
    --model "$flat" --gpu-memory-limit 1G --gpu-memory-utilization 0.5
refused 2 "^hyocr serve: --gpu-memory-utilization: expected a fraction in \(0, 1\], got “1.5”$" \
    --model "$flat" --gpu-memory-utilization 1.5
refused 2 "^hyocr serve: --gpu-memory-utilization: expected a fraction in \(0, 1\], got “0.5x”$" \
    --model "$flat" --gpu-memory-utilization 0.5x
refused 2 "^hyocr serve: the API key is empty$" --model "$flat" --api-key ""
refused 2 "^hyocr serve: --allowed-origins: expected a JSON list of strings, as vLLM takes it .*got “https://a.test”$" \
    --model "$flat" --allowed-origins https://a.test
refused 2 "^hyocr serve: --allowed-hosts: expected a JSON list of host names \('\[\"ocr.example.com\"\]'\), got “ocr.test”$" \
    --model "$flat" --allowed-hosts ocr.test
refused 1 "^hyocr serve: --host: “999.1.1.1” is not an IP address$" --model "$flat" --host 999.1.1.1
refused 1 "model folder $tmp/no-model does not exist or is not a folder; get the model with \`hyocr download\`" \
    --model "$tmp/no-model"
mkdir -p "$tmp/broken-model" && echo '{' >"$tmp/broken-model/config.json"
refused 1 "^hyocr serve: $tmp/broken-model/config.json:.*\(the file is not valid JSON; fix it or download the model again\)$" \
    --model "$tmp/broken-model"

# ---- 503 when the queue is full; a client that goes away cancels its job
# (main runs one job at a time and queues one more)
mkreq "$tmp/long.json" stream=true ignore_eos=true max_tokens=30000
curl -s -N -H 'Content-Type: application/json' --data-binary @"$tmp/long.json" \
    "http://127.0.0.1:$port_main/v1/chat/completions" >"$tmp/long.txt" &
long=$!
await "$tmp/long.txt" "data:"
mkreq "$tmp/queued.json" max_tokens=4
curl -s -o "$tmp/queued.out" -H 'Content-Type: application/json' --data-binary @"$tmp/queued.json" \
    "http://127.0.0.1:$port_main/v1/chat/completions" &
queued=$!
metric() {   # metric NAME [LABEL=VALUE]: its value on /metrics now
    curl -s "http://127.0.0.1:$port_main/metrics" | python3 -c '
import re, sys
name, want = sys.argv[1], sys.argv[2:]
for line in sys.stdin:
    m = re.fullmatch(r"([^{ ]+)\{([^}]*)\} (\S+)\n?", line)
    if m and m.group(1) == name and all(w.replace("=", "=\"", 1) + "\"" in m.group(2) for w in want):
        print(int(float(m.group(3)))); break' "$@"
}
wait_until() {   # wait_until CMD…: until it holds (a condition, polled; two minutes at most)
    local end=$((SECONDS + 120))
    until "$@"; do [ $SECONDS -lt $end ] || return 1; sleep 0.05; done
}
metric_is() { [ "$(metric "$1" "${@:3}")" = "$2" ]; }
wait_until metric_is hyocr:num_requests_waiting 1
post "$port_main" "$tmp/queued.json"
check "503 with Retry-After when the queue is full" py "s == 503 and h.get('retry-after') == '1' and d['error']['code'] == 'queue_full'"
kill -TERM "$long"; wait "$long" 2>/dev/null   # (background jobs ignore SIGINT)
wait "$queued"
check "the queued request runs once the one before went away" python3 -c "
import json; d = json.load(open('$tmp/queued.out')); assert len(d['choices'][0]['token_ids']) == 4"
wait_until metric_is hyocr:num_requests_running 0
check "the disconnected stream's job was cancelled (finish reason abort), not run to 30000 tokens" \
    metric_is hyocr:request_success_total 1 finished_reason=abort
# (whichever libsoup or the engine learns of it first: the connection closed early, or the job was aborted)
check "the log says the request ended early" \
    grep -qE '"POST /v1/chat/completions" [0-9]+ [0-9.]+ s; [0-9]+ prompt \+ [0-9]+ completion tokens, abort|"POST /v1/chat/completions" (200|499) [0-9.]+ s.*the connection closed before the response' "$tmp/main.log"

# ---- /metrics
get "$port_main" /metrics
check "/metrics: Prometheus text, hyocr: names, histograms" python3 - "$tmp/out" "$tmp/hdr" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
assert "text/plain; version=0.0.4" in open(sys.argv[2]).read()
samples = {}
for line in text.splitlines():
    if line.startswith("# TYPE"):
        assert line.split()[3] in ("gauge", "counter", "histogram"), line
        continue
    if line.startswith("#"):
        continue
    m = re.fullmatch(r'(hyocr:[a-z0-9_]+)\{([^}]*)\} (\S+)', line)
    assert m, line
    float(m.group(3))
    samples.setdefault(m.group(1), []).append((m.group(2), float(m.group(3))))
for name in ["hyocr:num_requests_running", "hyocr:num_requests_waiting", "hyocr:prompt_tokens_total",
             "hyocr:generation_tokens_total", "hyocr:kv_cache_usage_perc", "hyocr:gpu_memory_used_bytes",
             "hyocr:time_to_first_token_seconds_bucket", "hyocr:time_per_output_token_seconds_count",
             "hyocr:e2e_request_latency_seconds_sum", "hyocr:request_success_total"]:
    assert name in samples, name
assert samples["hyocr:generation_tokens_total"][0][1] > 0
assert samples["hyocr:gpu_memory_used_bytes"][0][1] > 0
b = samples["hyocr:time_to_first_token_seconds_bucket"]
assert [v for _, v in b] == sorted(v for _, v in b) and b[-1][0].endswith('le="+Inf"')
assert b[-1][1] == samples["hyocr:time_to_first_token_seconds_count"][0][1] > 0
PY
check "one log line per request" test "$(grep -c '"POST /v1/chat/completions"' "$tmp/main.log")" -ge 20
check "the log line has status, time and tokens" grep -qE '"POST /v1/chat/completions" 200 [0-9.]+ s; [0-9]+ prompt \+ 24 completion tokens, length' "$tmp/main.log"

# ---- a second server on a busy port
"$HYOCR" serve --model "$flat" --device cpu --port "$port_main" >/dev/null 2>"$tmp/busy.log"
check "a second server on a busy port exits 1" test $? -eq 1
check "… saying the port is in use and what to do" grep -q "port $port_main is already in use.*--port" "$tmp/busy.log"

# ---- binding beyond loopback without a key warns (an address this machine does not have: nothing binds)
"$HYOCR" serve --model "$flat" --device cpu --host 192.0.2.1 --port 0 >/dev/null 2>"$tmp/wide.log"
check "a non-loopback --host without --api-key warns" grep -q "without --api-key" "$tmp/wide.log"

# ---- SIGTERM drains: what is in flight completes, new requests get 503, exit 0. main runs one
# job at a time: A streams (held running until the checks are done: its client leaves then), B
# waits in the queue when the signal comes, and must still get its whole answer.
mkreq "$tmp/a.json" stream=true ignore_eos=true max_tokens=30000
curl -s -N -H 'Content-Type: application/json' --data-binary @"$tmp/a.json" \
    "http://127.0.0.1:$port_main/v1/chat/completions" >"$tmp/a.txt" &
a=$!
await "$tmp/a.txt" "data:"
mkreq "$tmp/drain.json" stream=true ignore_eos=true max_tokens=50
curl -s -N -H 'Content-Type: application/json' --data-binary @"$tmp/drain.json" \
    "http://127.0.0.1:$port_main/v1/chat/completions" >"$tmp/drain.txt" &
drain=$!
wait_until metric_is hyocr:num_requests_waiting 1
kill -TERM "$pid_main"
await "$tmp/main.log" "stopping: 2 request"
check "SIGTERM with two requests in flight: the server says it lets them finish" grep -q "stopping: 2 request" "$tmp/main.log"
get "$port_main" /health
check "draining: /health says 503" py "s == 503"
post "$port_main" "$tmp/r.json"
check "draining: a new request gets 503" py "s == 503 and 'shutting down' in d['error']['message']"
kill -TERM "$a"; wait "$a" 2>/dev/null
wait "$drain"
wait "$pid_main"
status_main=$?
check "the queued stream was served in full while draining: 50 tokens, then [DONE]" python3 - "$tmp/drain.txt" <<'PY'
import json, sys
ev = [e for e in open(sys.argv[1], encoding="utf-8").read().split("\n\n") if e]
assert ev[-1] == "data: [DONE]", ev[-1:]
chunks = [json.loads(e[6:]) for e in ev[:-1]]
assert sum(len(c["choices"][0]["token_ids"]) for c in chunks) == 50
assert chunks[-1]["choices"][0]["finish_reason"] == "length"
PY
check "the server exited 0 after draining (under ASan: no leak)" test "$status_main" -eq 0
check "… and said so" grep -q "hyocr serve: stopped" "$tmp/main.log"

echo "1..$n"
[ "$failed" -eq 0 ]
