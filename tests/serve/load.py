#!/usr/bin/env python3
"""Load and faults against hyocr serve (loopback only, bounded in count and time).

64 concurrent clients send several requests each (streaming or not), and a third
of them close their connection mid-stream at a random point. Every request that
was not cancelled gets its complete answer with the same tokens it gets alone;
the server stays up; when the load is over, the engine's memory and KV cache are
back at their idle level (its /metrics); it exits 0 on SIGTERM, which under
AddressSanitizer also means LeakSanitizer found no leak. TAP output.

    python3 tests/serve/load.py HYOCR DATA_DIR
"""
import base64
import http.client
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time

HYOCR, DATA = sys.argv[1], os.path.abspath(sys.argv[2])
CLIENTS, PER_CLIENT, MAX_TOKENS = 64, 3, 12
LONG_TOKENS = 20000   # what a client that goes away asked for: its job is surely still running then
DEADLINE = time.monotonic() + 1500          # the whole run, whatever happens
SOCKET_TIMEOUT = 600

n = failed = 0


def check(name, cond, detail=None):
    global n, failed
    n += 1
    print(("ok" if cond else "not ok"), n, "-", name, flush=True)
    if not cond:
        failed += 1
        for line in str(detail or "").splitlines():
            print("#", line, flush=True)


def start_server():
    proc = subprocess.Popen([HYOCR, "serve", "--model", os.path.join(DATA, "ckpt-flat"), "--device", "cpu",
                             "--threads", "2", "--port", "0", "--max-batch", "16", "--max-queue", "1000",
                             "--served-model-name", "load"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    port, log = 0, []
    for line in proc.stderr:   # until it is ready (the engine loaded)
        log.append(line)
        m = re.search(r"listening on http://[0-9.]+:(\d+)", line)
        if m:
            port = int(m.group(1))
        if "ready" in line:
            break
    # keep draining its log so the server never blocks on a full pipe
    threading.Thread(target=lambda: log.extend(proc.stderr), daemon=True).start()
    return proc, port, log


def request_body(image, prompt, stream, long=False):
    url = "data:image/png;base64," + base64.b64encode(open(os.path.join(DATA, "images", image), "rb").read()).decode()
    return json.dumps({
        "model": "load", "max_tokens": LONG_TOKENS if long else MAX_TOKENS, "ignore_eos": long,
        "temperature": 0, "return_token_ids": True, "stream": stream,
        "messages": [{"role": "system", "content": ""},
                     {"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}},
                                                  {"type": "text", "text": prompt}]}],
    }).encode()


def post(port, body, stream, cut_after=None):
    """(status, token ids, finish reason), or None when the client cut the stream off."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=SOCKET_TIMEOUT)
    conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
    resp = conn.getresponse()
    if not stream or resp.status != 200:
        d = json.loads(resp.read())
        conn.close()
        if resp.status != 200:
            return resp.status, d, None
        return 200, d["choices"][0]["token_ids"], d["choices"][0]["finish_reason"]
    ids, finish, events = [], None, 0
    while True:
        line = resp.readline()
        if not line:
            break
        line = line.decode().strip()
        if not line.startswith("data: "):
            continue
        if cut_after is not None and events == cut_after:
            conn.sock.shutdown(2)   # the client goes away, mid-stream
            conn.close()
            return None
        events += 1
        if line == "data: [DONE]":
            conn.close()
            return 200, ids, finish
        c = json.loads(line[6:])["choices"][0]
        ids += c["token_ids"]
        finish = c["finish_reason"] or finish
    conn.close()
    return 200, ids, "(stream ended without [DONE])"


def metrics(port):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    conn.close()
    out = {}
    for line in text.splitlines():
        m = re.fullmatch(r'([^{ ]+)\{([^}]*)\} (\S+)', line)
        if m:
            key = m.group(1) + ("{" + m.group(2).split(",", 1)[1] + "}" if "," in m.group(2) else "")
            out[key] = float(m.group(3))
    return out


def wait_idle(port, requests):
    """The metrics once the engine has nothing running or waiting, its pool is gone and the
    server has counted every request; two minutes at most (then what there is)."""
    end = min(DEADLINE, time.monotonic() + 120)
    while True:
        m = metrics(port)
        done = sum(v for k, v in m.items() if k.startswith("hyocr:request_success_total"))
        if (m["hyocr:num_requests_running"] == 0 and m["hyocr:num_requests_waiting"] == 0 and
                m["hyocr:kv_cache_blocks"] == 0 and done == requests) or time.monotonic() > end:
            return m
        time.sleep(0.05)


def main():
    proc, port, log = start_server()
    check("the server starts", port > 0 and proc.poll() is None, "".join(log))
    kinds = [(img, prompt) for img in ("odd_137x91.png", "big_420x300.png", "tiny_40x30.png")
             for prompt in ("提取图中的文字。", "检测并识别图片中的文字，将文本坐标格式化输出。")]
    bodies = {(k, s): request_body(k[0], k[1], s) for k in kinds for s in (False, True)}
    long_bodies = {k: request_body(k[0], k[1], True, long=True) for k in kinds}
    alone = {}
    for k in kinds:   # each request alone, one at a time
        status, ids, finish = post(port, bodies[(k, False)], False)
        alone[k] = (ids, finish)
    check("each kind of request answered alone", all(len(v[0]) > 0 for v in alone.values()), alone)
    idle = wait_idle(port, len(kinds))
    check("idle: no KV cache held", idle["hyocr:kv_cache_blocks"] == 0, idle)

    rng = random.Random(15)
    plans = []   # per client: [(kind, stream, cut_after or None)]
    for c in range(CLIENTS):
        cutter = c % 3 == 0
        plans.append([(rng.choice(kinds), cutter or rng.random() < 0.5,
                       rng.randrange(0, 20) if cutter else None) for _ in range(PER_CLIENT)])
    results = [[None] * PER_CLIENT for _ in range(CLIENTS)]

    def client(c):
        for i, (kind, stream, cut) in enumerate(plans[c]):
            try:
                body = long_bodies[kind] if cut is not None else bodies[(kind, stream)]
                results[c][i] = post(port, body, stream, cut)
            except Exception as e:   # noqa: BLE001 - reported below
                results[c][i] = ("exception", repr(e), None)

    threads = [threading.Thread(target=client, args=(c,)) for c in range(CLIENTS)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(DEADLINE - time.monotonic(), 1))
    check(f"{CLIENTS} clients × {PER_CLIENT} requests finished within the time bound", not any(t.is_alive() for t in threads))
    print(f"# load: {time.monotonic() - t0:.1f} s", flush=True)

    cut = sum(1 for c in range(CLIENTS) for r in results[c] if r is None)
    bad = []
    for c in range(CLIENTS):
        for i, r in enumerate(results[c]):
            if r is None:
                continue
            kind = plans[c][i][0]
            if r[0] != 200 or r[1] != alone[kind][0] or r[2] != alone[kind][1]:
                bad.append((c, i, kind, r, alone[kind]))
    served = CLIENTS * PER_CLIENT - cut
    check(f"all {served} requests not cut off got their whole answer, the tokens they get alone ({cut} cut off)",
          not bad and cut > 0, "\n".join(map(str, bad[:5])))

    after = wait_idle(port, len(kinds) + CLIENTS * PER_CLIENT)
    check("the server is still up", proc.poll() is None)
    check("after the load: nothing running or waiting", after["hyocr:num_requests_running"] == 0 and
          after["hyocr:num_requests_waiting"] == 0, after)
    check("after the load: the engine's memory is back at its idle level (weights, no KV cache)",
          after["hyocr:gpu_memory_used_bytes"] == idle["hyocr:gpu_memory_used_bytes"] and
          after["hyocr:kv_cache_blocks"] == 0 and after["hyocr:gpu_memory_kv_used_bytes"] == 0,
          f"idle {idle}\nafter {after}")
    aborted = after.get('hyocr:request_success_total{finished_reason="abort"}', -1)
    check(f"every cut-off request ({cut}) was cancelled in the engine, long before its {LONG_TOKENS} tokens",
          aborted == cut, after)
    check("the batch really was shared", after["hyocr:batch_size_max"] > 1, after)
    # requests arrive one by one, so the pool grows with the load, by half or more a time:
    # fewer copies than the requests that ran next to others (one each before)
    check("the KV pool grew fewer times than requests were admitted next to others",
          0 < after["hyocr:kv_cache_grows_total"] < CLIENTS * PER_CLIENT, after)
    ok_total = sum(v for k, v in after.items() if k.startswith("hyocr:request_success_total"))
    check("every request is counted once", ok_total == len(kinds) + CLIENTS * PER_CLIENT, after)

    proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(timeout=max(DEADLINE - time.monotonic(), 1))
    except subprocess.TimeoutExpired:
        proc.kill()
        code = "killed"
    check("SIGTERM: the server exits 0 (under ASan: LeakSanitizer found nothing)", code == 0,
          f"exit {code}\n" + "".join(log[-40:]))
    print(f"1..{n}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
