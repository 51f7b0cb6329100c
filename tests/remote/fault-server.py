#!/usr/bin/env python3
"""An OpenAI-compatible server that misbehaves on purpose, for tests/test-remote.sh and
tests/app/test-app-remote.c.

    fault-server.py MODE LOG [--cert PEM --key PEM] [--target N --total N] [--port N]
                     [--stdin-lifeline 1]

Listens on a free loopback port (or --port: the same address again, with another
certificate) and writes "port N" as the first line of LOG, then one
line per event the test waits for ("request AUTH", "at SECONDS" (when it came, on a
monotonic clock), "streaming", "client gone", "max N").
/v1/models lists the model "m" (401 in mode 401). POST /v1/chat/completions, by MODE:
  ok         a streamed answer "hello world" as vLLM sends it (reasoning_content,
             stop_reason 120020 as for 1.5's generation_config EOS, other extra fields,
             a usage chunk, [DONE])
  401        401 with OpenAI's error
  404model   404 with vLLM's "The model `m` does not exist."
  503once    the first request 503 with Retry-After: 1, then ok
  drop       two chunks, then the connection closes
  stall      one chunk, then nothing until the client goes ("client gone")
  malformed  an event that is not JSON
  html       200 text/html
  count      ok, but each request waits until --target requests are in flight at once
             (or --total have come): the most seen is logged as "max N"
"""
import json
import socket
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

mode, log_path = sys.argv[1], sys.argv[2]
opts = dict(zip(sys.argv[3::2], sys.argv[4::2]))
log_lock = threading.Lock()
state = threading.Condition()
inflight = seen = max_seen = 0
requests_seen = 0


def log(line):
    with log_lock, open(log_path, "a") as f:
        f.write(line + "\n")


def chunk(delta, finish=None, stop_reason=None, **extra):
    c = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
         "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish,
                      "stop_reason": stop_reason}]}
    c.update(extra)
    return "data: " + json.dumps(c) + "\n\n"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send_json(self, status, obj, headers=()):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if mode == "401":
            return self.send_json(401, {"error": {"message": "Invalid API key", "type": "authentication_error",
                                                  "param": None, "code": "invalid_api_key"}})
        if self.path == "/v1/models":
            return self.send_json(200, {"object": "list", "data": [{"id": "m", "object": "model"}]})
        self.send_json(404, {"detail": "Not Found"})

    def begin_stream(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def write(self, text):
        data = text.encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def answer(self, before_done=None):
        self.begin_stream()
        self.write(chunk({"role": "assistant", "content": "", "reasoning_content": None}))
        self.write(": keep-alive comment\r\n\r\n")
        self.write(chunk({"content": "hello"}, token_ids=None))
        # an event split over two writes, CRLF line ends
        self.write('data: {"choices": [{"index": 0, "delta": {"content": " wor')
        self.write('ld"}, "finish_reason": null}]}\r\n\r\n')
        # vLLM names the generation_config EOS it stopped on (1.5's 120020) as a stop token
        self.write(chunk({}, "stop", 120020, kv_transfer_params=None))
        self.write('data: {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}}\n\n')
        if before_done:
            before_done()
        self.write("data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def do_POST(self):
        global requests_seen, inflight, seen, max_seen
        n = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(n))
        log("request " + self.headers.get("Authorization", "(none)"))
        log("at %.3f" % time.monotonic())
        log("body " + json.dumps({k: v for k, v in body.items() if k != "messages"}, sort_keys=True))
        with state:
            requests_seen += 1
            first = requests_seen == 1
        if mode == "401":
            return self.send_json(401, {"error": {"message": "Invalid API key", "type": "authentication_error",
                                                  "param": None, "code": "invalid_api_key"}})
        if mode == "404model":
            return self.send_json(404, {"object": "error", "message": "The model `m` does not exist.",
                                        "type": "NotFoundError", "param": None, "code": 404})
        if mode == "503once" and first:
            return self.send_json(503, {"error": {"message": "the queue is full", "type": "server_error",
                                                  "param": None, "code": None}}, [("Retry-After", "1")])
        if mode == "html":
            body = b"<html>hello</html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            return self.wfile.write(body)
        if mode == "drop":
            self.begin_stream()
            self.write(chunk({"role": "assistant", "content": "hel"}))
            self.write(chunk({"content": "lo"}))
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        if mode == "malformed":
            self.begin_stream()
            self.write(chunk({"role": "assistant", "content": "hel"}))
            self.write("data: {\"choices\": [{\"delta\": {\"content\": 42}}]}\n\n")
            self.write("data: [DONE]\n\n")
            self.wfile.write(b"0\r\n\r\n")
            return
        if mode == "stall":
            self.begin_stream()
            self.write(chunk({"role": "assistant", "content": "hel"}))
            log("streaming")
            self.connection.settimeout(None)
            # the client closes the connection when it gives up or cancels: recv returns b""
            while self.connection.recv(1):
                pass
            log("client gone")
            self.close_connection = True
            return
        if mode == "count":
            target, total = int(opts["--target"]), int(opts["--total"])
            with state:
                inflight += 1
                seen += 1
                max_seen = max(max_seen, inflight)
                state.notify_all()
                if not state.wait_for(lambda: inflight >= target or seen >= total, timeout=300):
                    log("barrier timed out")
            def leave():
                # before [DONE]: the client sends its next request only after it
                global inflight
                with state:
                    inflight -= 1
                    log("max %d" % max_seen)
            return self.answer(leave)
        self.answer()


class Server(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass   # clients that go away are what this server is for


server = Server(("127.0.0.1", int(opts.get("--port", 0))), Handler)
server.daemon_threads = True
if "--cert" in opts:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(opts["--cert"], opts["--key"])
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
if opts.get("--stdin-lifeline"):
    # a test program that dies leaves no server behind: its end closes our stdin
    def lifeline():
        while sys.stdin.buffer.read(4096):
            pass
        server.shutdown()
    threading.Thread(target=lifeline, daemon=True).start()
log("port %d" % server.server_address[1])
server.serve_forever()
