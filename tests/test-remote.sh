#!/bin/bash
# hyocr run --server, end to end on loopback: against hyocr serve (CPU, the fixture
# checkpoint) the tokens and text equal a local run's for every task preset, and a
# cancelled run closes its connection so the server frees the job; against
# tests/remote/fault-server.py, --concurrency 4 over 12 pages keeps exactly 4 requests
# in flight, and every fault (server down, DNS, 401, 404 model, 503 + Retry-After,
# a connection dropped mid-stream, a stalling server, a malformed stream, not an
# OpenAI server, TLS to a self-signed certificate) ends with its message; the API key
# never appears in what the command prints or on its command line. TAP output.
set -u
HYOCR=$1
DATA=$(cd "${HYOCR_TEST_DATA:?}" && pwd)
FAULT=$(cd "$(dirname "$0")/remote" && pwd)/fault-server.py
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
check() { local name=$1; shift; if "$@"; then ok "$name"; else not_ok "$name" "command: $*" "stderr: $(head -c 600 "$tmp/err" 2>/dev/null)"; fi; }

if ! command -v curl >/dev/null || ! command -v openssl >/dev/null; then
    echo "1..0 # SKIP curl or openssl is not installed (.ci/setup installs them)"
    exit 0
fi

flat=$DATA/ckpt-flat
img=$DATA/images/odd_137x91.png
KEY="sk-test-$RANDOM$RANDOM-secret"
printf '%s\n' "$KEY" >"$tmp/key"

# await FILE PATTERN: until a line of FILE (written by a background job) matches
await() {
    touch "$1"
    timeout 120 grep -m1 -qE "$2" <(tail -n +1 -f --pid=$$ "$1")
}

# fault NAME MODE [ARGS…]: a fault server; sets port_NAME
fault() {
    local name=$1 mode=$2; shift 2
    : >"$tmp/$name.log"
    python3 "$FAULT" "$mode" "$tmp/$name.log" "$@" &
    pids+=("$!")
    await "$tmp/$name.log" "^port "
    eval "port_$name=$(head -1 "$tmp/$name.log" | cut -d' ' -f2)"
}

# client ARGS…: hyocr run, stdout in $tmp/out, stderr in $tmp/err, status in $status
client() {
    "$HYOCR" run "$@" >"$tmp/out" 2>"$tmp/err"
    status=$?
    cat "$tmp/err" >>"$tmp/all-stderr"
    cat "$tmp/out" >>"$tmp/all-stdout"
}

# says STATUS PATTERN: the run's status, and its stderr matches PATTERN
says() { [ "$status" = "$1" ] && grep -qE "$2" "$tmp/err"; }

# ---- faults, each with the message the user reads
fault ok ok
client --server "http://127.0.0.1:$port_ok" --api-key-file "$tmp/key" -n 5 "$img"
check "a streamed answer with vLLM's extra fields: its text" \
    bash -c "[ $status = 0 ] && [ \"\$(cat '$tmp/out')\" = 'hello world' ]"
check "the key goes in the Authorization header" grep -qx "request Bearer $KEY" "$tmp/ok.log"
check "the request: greedy, both max_tokens spellings, streamed with usage and token ids" python3 - "$tmp/ok.log" <<'PY'
import json, sys
b = [json.loads(l[5:]) for l in open(sys.argv[1]) if l.startswith("body ")][0]
assert b["model"] == "m" and b["temperature"] == 0 and b["max_tokens"] == 5 and b["max_completion_tokens"] == 5, b
assert b["stream"] is True and b["stream_options"] == {"include_usage": True} and b["return_token_ids"] is True, b
assert b["repetition_penalty"] == 1.08, b   # 1.5's, which Tencent's clients send (its generation_config has none)
PY
client --server "http://127.0.0.1:$port_ok" --repetition-penalty 1.2 -n 5 --format json "$img"
check "--format json: the text, usage's prompt tokens, backend remote" python3 - "$tmp/out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))[0]
assert r["text"] == "hello world" and r["prompt_tokens"] == 7 and r["backend"] == "remote" and r["stop_reason"] == "eos", r
PY
check "--repetition-penalty goes as vLLM's repetition_penalty" \
    bash -c "grep '^body ' '$tmp/ok.log' | tail -1 | grep -q '\"repetition_penalty\": 1.2'"
client --server "http://127.0.0.1:$port_ok" --model-version 1.0 -n 5 "$img"
check "a 1.0 model: no penalty sent, the server applies its generation_config's" \
    bash -c "grep '^body ' '$tmp/ok.log' | tail -1 | grep -vq 'repetition_penalty'"
HYOCR_API_KEY="$KEY" client --server "http://127.0.0.1:$port_ok/v1/" -n 5 "$img" "$img"
check "HYOCR_API_KEY, a /v1/ base URL, and the summary line of several pages" \
    says 0 "hyocr run: 2 jobs \(0 failed\), 6 tokens in"
check "the key from the environment is sent" bash -c "[ \$(grep -cx 'request Bearer $KEY' '$tmp/ok.log') = 3 ]"

free_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
client --server "http://127.0.0.1:$free_port" "$img"
check "server down: refused, said once" says 1 "^hyocr run: http://127.0.0.1:$free_port/? refused the connection: is the server running, and on that port\?$"
client --server "http://no-such-host.invalid:8000" "$img"
check "a host name that does not resolve" says 1 "the host name “no-such-host.invalid” was not found"
client --server "ftp://127.0.0.1:1" "$img"
check "not an http(s) address" says 1 "“ftp://127.0.0.1:1” is not a server address: give it as http://HOST:PORT"

fault a401 401
client --server "http://127.0.0.1:$port_a401" --api-key-file "$tmp/key" "$img"
check "401: the key refused, and how to give one" \
    says 1 "refused the API key \(HTTP 401: Invalid API key\) \(give the key in a file with --api-key-file FILE, or in HYOCR_API_KEY\)"
client --server "http://127.0.0.1:$port_a401" "$img"
check "401 without a key: a key is asked" says 1 "asks for an API key \(HTTP 401: Invalid API key\)"

fault m404 404model
client --server "http://127.0.0.1:$port_m404" "$img"
check "404 from the completion: the model, in vLLM's words" \
    says 1 "does not serve the model “m” \(The model \`m\` does not exist.\); pick one the server lists \(--model-name NAME\)"
client --server "http://127.0.0.1:$port_ok" --model-name other "$img"
check "a model the server does not list" says 1 "does not serve the model “other”; it serves: m \(--model-name NAME\)"

fault busy 503once
client --server "http://127.0.0.1:$port_busy" -n 5 "$img"
check "503 with Retry-After: retried, then the answer" bash -c "[ $status = 0 ] && [ \"\$(cat '$tmp/out')\" = 'hello world' ]"
check "503: sent twice" bash -c "[ \$(grep -c '^request ' '$tmp/busy.log') = 2 ]"
# a lower bound, never flaky: without Retry-After the first retry would come after 0.5 s
check "… the second after the 1 s Retry-After asked, not the 0.5 s default backoff" python3 - "$tmp/busy.log" <<'PY'
import sys
t = [float(l.split()[1]) for l in open(sys.argv[1]) if l.startswith("at ")]
assert len(t) == 2 and t[1] - t[0] >= 1.0, t
PY

fault drop drop
client --server "http://127.0.0.1:$port_drop" "$img" "$img"
check "a connection dropped mid-stream: that page fails, the other too, each said" \
    says 1 "closed before the answer was complete \(after 2 pieces of text\)|broke before the answer was complete"
check "… and the summary counts them" says 1 "hyocr run: 2 jobs \(2 failed\)"

fault bad malformed
client --server "http://127.0.0.1:$port_bad" "$img"
check "a malformed event stream" says 1 "sent an answer that is not an OpenAI chat completion: \"content\" is not a string"

fault html html
client --server "http://127.0.0.1:$port_html" "$img"
check "not an OpenAI server" says 1 "answered with text/html, not an event stream: is it an OpenAI-compatible server"

fault stall stall
client --server "http://127.0.0.1:$port_stall" --timeout 2 "$img"
check "a stalling server: the timeout, said" says 1 "sent nothing for 2 s; it may be overloaded or stalled \(--timeout S waits longer\)"
"$HYOCR" run --server "http://127.0.0.1:$port_stall" "$img" >"$tmp/out" 2>"$tmp/err" &
cpid=$!
pids+=("$cpid")
await "$tmp/stall.log" "streaming.*" && sleep 0
# the second "streaming" is this run's (the first was the timeout's)
timeout 120 bash -c "until [ \$(grep -c '^streaming' '$tmp/stall.log') -ge 2 ]; do sleep 0.1; done"
kill -INT "$cpid"
wait "$cpid"
status=$?
check "a stalling server: SIGINT cancels (status 130)" says 130 "cancelled"
check "… and closes the connection" bash -c "timeout 120 bash -c \"until [ \\\$(grep -c '^client gone' '$tmp/stall.log') -ge 2 ]; do sleep 0.1; done\""

# a crash while a request is in flight (the key read, the connection open): what the dying
# process prints (glib's, or the sanitizers' report in the ASan build) holds no key
(ulimit -c 0; exec "$HYOCR" run --server "http://127.0.0.1:$port_stall" --api-key-file "$tmp/key" "$img") \
    >"$tmp/out" 2>"$tmp/err" &
cpid=$!
pids+=("$cpid")
timeout 120 bash -c "until [ \$(grep -c '^streaming' '$tmp/stall.log') -ge 3 ]; do sleep 0.1; done"
kill -SEGV "$cpid"
wait "$cpid"
status=$?
cat "$tmp/err" >>"$tmp/all-stderr"
check "a crash mid-request (SIGSEGV): it dies of it, and its output holds no key" \
    bash -c "[ $status -ne 0 ] && [ $status -ne 130 ] && ! grep -qF '$KEY' '$tmp/err' '$tmp/out'"

# TLS: a self-signed certificate is refused unless trusted
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/tls.key" -out "$tmp/tls.pem" -days 2 \
    -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1" 2>/dev/null
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/other.key" -out "$tmp/other.pem" -days 2 \
    -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1" 2>/dev/null
fault tls ok --cert "$tmp/tls.pem" --key "$tmp/tls.key"
# GIO's built-in "dummy" TLS backend is what a GLib without glib-networking has
GIO_USE_TLS=dummy client --server "https://127.0.0.1:$port_tls" -n 5 "$img"
check "no TLS support in GLib: said, with the package that brings it" \
    says 1 "https://127.0.0.1:$port_tls/?: this computer cannot make secure \(https\) connections: GLib has no TLS support \(the glib-networking package is missing\)"
client --server "https://127.0.0.1:$port_tls" -n 5 "$img"
if grep -q "cannot make secure" "$tmp/err"; then
    # the GPU machine's GLib (unpacked, not installed) has no TLS module: nothing to test there
    for what in "refused, saying why" "another certificate trusted" "that certificate trusted"; do
        n=$((n + 1)); echo "ok $n # SKIP TLS: $what: this GLib has no TLS support (glib-networking)"
    done
else
check "TLS to a self-signed certificate: refused, saying why" \
    says 1 "https://127.0.0.1:$port_tls/?: its certificate is not trusted: it is signed by no authority this computer trusts \(self-signed\?\)\. If it is your own server, trust its certificate explicitly \(its PEM file: --trust-certificate FILE\)"
client --server "https://127.0.0.1:$port_tls" --trust-certificate "$tmp/other.pem" -n 5 "$img"
check "… another certificate trusted: still refused" says 1 "its certificate is not trusted"
client --server "https://127.0.0.1:$port_tls" --trust-certificate "$tmp/tls.pem" -n 5 "$img"
check "… that certificate trusted: the answer" bash -c "[ $status = 0 ] && [ \"\$(cat '$tmp/out')\" = 'hello world' ]"
fi

# ---- --concurrency 4 over 12 pages: 4 requests in flight, never more
fault count count --target 4 --total 12
client --server "http://127.0.0.1:$port_count" --concurrency 4 --repeat 12 -n 5 "$img"
check "--concurrency 4 over 12 pages: all 12 answered" says 0 "hyocr run: 12 jobs \(0 failed\)"
check "… with 4 requests in flight at once, never more" bash -c "[ \"\$(grep '^max ' '$tmp/count.log' | sort -k2 -n | tail -1)\" = 'max 4' ] && ! grep -q 'barrier timed out' '$tmp/count.log'"

# ---- against hyocr serve: the same tokens and text as a local run, every preset
: >"$tmp/serve.log"
"$HYOCR" serve --model "$flat" --device cpu --threads 2 --port 0 --served-model-name tiny --api-key-file "$tmp/key" \
    2>>"$tmp/serve.log" &
spid=$!
pids+=("$spid")
await "$tmp/serve.log" "ready|error"
sport=$(grep -oE "listening on http://[0-9.]+:[0-9]+" "$tmp/serve.log" | grep -oE "[0-9]+$")
srv="http://127.0.0.1:$sport"
for task in recognize spotting parse_document parse_table parse_formula parse_chart translate_zh translate_en \
            extract_fields subtitles custom; do
    args=(--task "$task")
    [ "$task" = extract_fields ] && args+=(--fields "name,date")
    [ "$task" = custom ] && args=(--prompt "Describe the image.")
    "$HYOCR" run --model "$flat" --device cpu --threads 2 -n 16 "${args[@]}" --format json "$img" \
        "$DATA/images/photo_q90_190x140.jpg" >"$tmp/local.json" 2>/dev/null
    # no --model-version: hyocr serve says its checkpoint is a 1.0 (its prompts, its penalty)
    client --server "$srv" --api-key-file "$tmp/key" -n 16 "${args[@]}" --format json "$img" \
        "$DATA/images/photo_q90_190x140.jpg"
    check "hyocr serve, $task: the tokens and text of a local run" python3 - "$tmp/out" "$tmp/local.json" <<'PY'
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert len(a) == len(b) == 2
for r, l in zip(a, b):
    assert r["token_ids"] == l["token_ids"], (r["token_ids"], l["token_ids"])
    assert r["text"] == l["text"] and r["prompt_tokens"] == l["prompt_tokens"], (r, l)
    assert r["stop_reason"] == l["stop_reason"] or (l["stop_reason"] == "repetition" and r["stop_reason"] == "eos"), (r, l)
PY
done
client --server "$srv" --api-key-file "$tmp/key" -n 16 "$img"
"$HYOCR" run --model "$flat" --device cpu --threads 2 -n 16 "$img" >"$tmp/local.txt" 2>/dev/null
check "hyocr serve, one page as text: streamed, the local text" cmp -s "$tmp/out" "$tmp/local.txt"
# --stop goes to the server as OpenAI's stop, and its stop_reason comes back: two characters
# from the middle of that text end both runs at the same place
stop=$(python3 -c 'import sys; t = open(sys.argv[1], encoding="utf-8").read().strip(); print(t[len(t) // 2:len(t) // 2 + 2])' "$tmp/local.txt")
"$HYOCR" run --model "$flat" --device cpu --threads 2 -n 16 --stop "$stop" --stop never --format json "$img" \
    >"$tmp/local.json" 2>/dev/null
client --server "$srv" --api-key-file "$tmp/key" -n 16 --stop "$stop" --stop never --format json "$img"
check "--stop through hyocr serve: the local run's tokens and cut text, stop reason requested" \
    python3 - "$tmp/out" "$tmp/local.json" "$tmp/local.txt" "$stop" <<'PY'
import json, sys
(r,), (l,) = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
full, stop = open(sys.argv[3], encoding="utf-8").read().strip(), sys.argv[4]
assert l["text"] == full[:full.index(stop)] and l["stop_reason"] == "requested", (l, stop)
assert r["text"] == l["text"] and r["token_ids"] == l["token_ids"] and r["stop_reason"] == "requested", (r, l)
PY
# log-probabilities through a server: asked for with the tokens named by id, and the same as a
# local run's, to the bit (a float's shortest decimal in the JSON reads back as that float)
"$HYOCR" run --model "$flat" --device cpu --threads 2 -n 16 --logprobs 3 --format json "$img" \
    >"$tmp/local.json" 2>/dev/null
client --server "$srv" --api-key-file "$tmp/key" -n 16 --logprobs 3 --format json "$img"
check "--logprobs 3 through hyocr serve: the local run's tokens and log-probabilities" \
    python3 - "$tmp/out" "$tmp/local.json" <<'PY'
import json, sys
(r,), (l,) = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert r["token_ids"] == l["token_ids"] and len(l["logprobs"]) == len(l["token_ids"]) > 0, (r, l)
assert r["logprobs"] == l["logprobs"], (r["logprobs"][:2], l["logprobs"][:2])
PY

# cancel: the run ends (130), its connection closes, and the server frees the job
metric() { curl -s -H "Authorization: Bearer $KEY" "$srv/metrics" | grep -E "^$1[{ ]" | awk '{print $2}'; }
"$HYOCR" run --server "$srv" --api-key-file "$tmp/key" -n 30000 --ignore-eos "$img" >"$tmp/out" 2>"$tmp/err" &
cpid=$!
pids+=("$cpid")
timeout 120 bash -c "until [ \"\$(curl -s -H 'Authorization: Bearer $KEY' '$srv/metrics' | grep -E '^hyocr:num_requests_running' | awk '{print \$2}')\" = 1 ]; do sleep 0.1; done"
check "a long job runs on the server" test "$(metric hyocr:num_requests_running)" = 1
kill -INT "$cpid"
wait "$cpid"
status=$?
check "SIGINT: the run says it was cancelled (130)" says 130 "cancelled"
timeout 120 bash -c "until [ \"\$(curl -s -H 'Authorization: Bearer $KEY' '$srv/metrics' | grep -E '^hyocr:num_requests_running' | awk '{print \$2}')\" = 0 ]; do sleep 0.1; done"
check "… and the server frees the job (running 0, finished as abort)" bash -c \
    "[ \"\$(curl -s -H 'Authorization: Bearer $KEY' '$srv/metrics' | grep -E '^hyocr:num_requests_running' | awk '{print \$2}')\" = 0 ] && curl -s -H 'Authorization: Bearer $KEY' '$srv/metrics' | grep -qE 'finished_reason=\"abort\"} 1$'"

# ---- the key: never printed, never on the command line
check "the key appears in nothing the command printed" bash -c "! grep -qF '$KEY' '$tmp/all-stderr' '$tmp/all-stdout'"
"$HYOCR" run --server "$srv" --api-key-file "$tmp/key" -n 30000 --ignore-eos "$img" >/dev/null 2>&1 &
cpid=$!
pids+=("$cpid")
timeout 120 bash -c "until [ \"\$(curl -s -H 'Authorization: Bearer $KEY' '$srv/metrics' | grep -E '^hyocr:num_requests_running' | awk '{print \$2}')\" = 1 ]; do sleep 0.1; done"
check "… nor in the running command's command line or environment" bash -c "! grep -qaF '$KEY' /proc/$cpid/cmdline /proc/$cpid/environ"
kill -INT "$cpid"
wait "$cpid"

echo "1..$n"
exit $((failed > 0))
