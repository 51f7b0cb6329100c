#!/usr/bin/env python3
"""The benchmark client of bench/serve-bench.sh: Python's standard library only,
speaking to hyocr serve (or any OpenAI-compatible server, vLLM included) over HTTP.

  concurrency: N clients at once, each sending R requests one after another
               (streaming, ignore_eos, the same page and length) →
               requests/s, aggregate tokens/s, time to first token p50/p99
  quick9:      pages one at a time with ignore_eos at given lengths (the
               HunyuanOCR-Bench quick9-c1 speed protocol) → pages/s = pages / Σ latency

Times are taken at the client, end to end over HTTP: a request's latency runs
from before it is sent to its last byte; its time to first token, to the first
SSE event that carries text.

  serve_client.py --port P [--model NAME] concurrency --image PAGE --clients 1,4,16,64
                  --requests 4 --max-tokens 256 [--json OUT]
  serve_client.py --port P quick9 --image A4PAGE --lengths 597,1836,… [--json OUT]
"""
import argparse
import base64
import http.client
import json
import statistics
import sys
import threading
import time


def body(args, image_url, max_tokens):
    return json.dumps({
        "model": args.model, "max_tokens": max_tokens, "ignore_eos": True, "temperature": 0, "stream": True,
        "stream_options": {"include_usage": True},
        "messages": [{"role": "system", "content": ""},
                     {"role": "user", "content": [{"type": "image_url", "image_url": {"url": image_url}},
                                                  {"type": "text", "text": args.prompt}]}],
    }).encode()


def one(args, payload):
    """(latency s, ttft s, completion tokens) of one streamed request."""
    t0 = time.perf_counter()
    conn = http.client.HTTPConnection(args.host, args.port, timeout=3600)
    conn.request("POST", "/v1/chat/completions", payload, {"Content-Type": "application/json"})
    resp = conn.getresponse()
    if resp.status != 200:
        raise RuntimeError(f"HTTP {resp.status}: {resp.read()[:300]!r}")
    ttft = None
    chunks = 0
    usage = None
    while True:
        line = resp.readline()
        if not line:
            break
        line = line.strip()
        if not line.startswith(b"data: "):
            continue
        if line == b"data: [DONE]":
            break
        d = json.loads(line[6:])
        if d.get("usage"):
            usage = d["usage"]
        if d["choices"] and ttft is None:
            ttft = time.perf_counter() - t0
        chunks += 1
    latency = time.perf_counter() - t0
    conn.close()
    tokens = usage["completion_tokens"] if usage else chunks
    return latency, ttft if ttft is not None else latency, tokens


def pct(xs, p):
    xs = sorted(xs)
    k = (len(xs) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def image_url(path):
    mime = "image/jpeg" if path.lower().endswith((".jpg", ".jpeg")) else "image/png"
    return f"data:{mime};base64," + base64.b64encode(open(path, "rb").read()).decode()


def concurrency(args):
    url = image_url(args.image)
    payload = body(args, url, args.max_tokens)
    one(args, payload)   # the server's first request of this shape is not measured
    rows = []
    for n in [int(x) for x in args.clients.split(",")]:
        results, errors = [], []
        lock = threading.Lock()

        def client():
            for _ in range(args.requests):
                try:
                    r = one(args, payload)
                    with lock:
                        results.append(r)
                except Exception as e:   # noqa: BLE001 - counted and shown
                    with lock:
                        errors.append(repr(e))

        threads = [threading.Thread(target=client) for _ in range(n)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - t0
        ttfts = [r[1] for r in results]
        row = {
            "clients": n, "requests": len(results), "errors": len(errors), "wall_s": wall,
            "requests_per_s": len(results) / wall, "tokens": sum(r[2] for r in results),
            "tokens_per_s": sum(r[2] for r in results) / wall,
            "ttft_p50_s": pct(ttfts, 50) if ttfts else None, "ttft_p99_s": pct(ttfts, 99) if ttfts else None,
            "latency_p50_s": pct([r[0] for r in results], 50) if results else None,
        }
        if errors:
            row["first_error"] = errors[0]
        rows.append(row)
        print(f"{n:3d} clients: {row['requests_per_s']:.2f} req/s, {row['tokens_per_s']:.0f} tok/s, "
              f"TTFT p50 {row['ttft_p50_s'] * 1000:.0f} ms p99 {row['ttft_p99_s'] * 1000:.0f} ms"
              + (f", {len(errors)} errors ({errors[0]})" if errors else ""), flush=True)
    return {"image": args.image, "max_tokens": args.max_tokens, "requests_per_client": args.requests, "rows": rows}


def quick9(args):
    url = image_url(args.image)
    lengths = [int(x) for x in args.lengths.split(",")]
    one(args, body(args, url, 8))   # not measured: the server's first page of this size
    pages = []
    for n in lengths:
        latency, ttft, tokens = one(args, body(args, url, n))
        pages.append({"max_tokens": n, "tokens": tokens, "latency_s": latency, "ttft_s": ttft})
        print(f"page of {n} tokens: {latency:.3f} s (first token {ttft * 1000:.0f} ms)", flush=True)
    total = sum(p["latency_s"] for p in pages)
    out = {"image": args.image, "pages": pages, "total_latency_s": total, "pages_per_s": len(pages) / total}
    print(f"quick9: {len(pages)} pages in {total:.2f} s of latency: {out['pages_per_s']:.3f} pages/s", flush=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--model", default="hyocr")
    ap.add_argument("--prompt", default="提取图中的文字。")
    ap.add_argument("--json", help="write the results here")
    sub = ap.add_subparsers(dest="mode", required=True)
    c = sub.add_parser("concurrency")
    c.add_argument("--image", required=True)
    c.add_argument("--clients", default="1,4,16,64")
    c.add_argument("--requests", type=int, default=4, help="per client")
    c.add_argument("--max-tokens", type=int, default=256)
    q = sub.add_parser("quick9")
    q.add_argument("--image", required=True)
    q.add_argument("--lengths", default="597,1836,390,172,181,535,1291,250,694")
    args = ap.parse_args()
    out = concurrency(args) if args.mode == "concurrency" else quick9(args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    errors = sum(r.get("errors", 0) for r in out.get("rows", []))
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
