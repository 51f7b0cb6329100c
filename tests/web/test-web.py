#!/usr/bin/env python3
"""The web page of hyocr serve in headless Chromium, driven over WebDriver (chromedriver),
against the server on the CPU with the fixture checkpoint (loopback only). TAP output.

It loads the page, uploads an image and runs presets (the streamed text equals `hyocr run`'s
for the same image, task and length; the spotting boxes are the engine's lines; a
parse-document answer is rendered as the render endpoint writes it), downloads the answer,
cancels a run (the server counts the job as aborted), asks for the key with --api-key (kept
in sessionStorage only), speaks Chinese to a Chinese browser, fits a 390 px screen, and words
a non-image, an image over --max-request-size and a server that went away. The page's
policy header is checked, and no request leaves the server's origin. A page of another origin
calls the API from the browser (CORS), and is kept from the answer where --allowed-origins
leaves it out. A site's name resolved to 127.0.0.1 (DNS rebinding, the browser's resolver told
so) gets a 403, and a name --allowed-hosts lists gets the page. Every wait is on a
condition (the page marks its state on <body>), never on time.

    python3 tests/web/test-web.py HYOCR DATA_DIR
Screenshots go to $HYOCR_SCREENSHOTS when it is set (data/screenshots/web-*.png come from it).
"""
import base64
import http.client
import http.server
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.request
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from webdriver import Driver, WebDriverError, find_chromium, find_driver  # noqa: E402

HYOCR, DATA = sys.argv[1], os.path.abspath(sys.argv[2])
IMAGE = os.path.join(DATA, "images", "big_420x300.png")
TOKENS = 24
MAX_BODY = 1024 * 1024
SHOTS = os.environ.get("HYOCR_SCREENSHOTS")

n = failed = 0


def check(name, cond, detail=None):
    global n, failed
    n += 1
    print(("ok" if cond else "not ok"), n, "-", name, flush=True)
    if not cond:
        failed += 1
        for line in str(detail or "").splitlines()[:40]:
            print("#", line, flush=True)


def step(name, fn):
    """check(name) on what fn returns (True, or (False, detail)); an exception fails it."""
    try:
        r = fn()
        ok, detail = (r, None) if isinstance(r, bool) else r
    except Exception as e:  # noqa: BLE001 — a failure of this check, reported, the rest go on
        ok, detail = False, f"{type(e).__name__}: {e}\n{traceback.format_exc()}"
    check(name, ok, detail)
    return ok


if not find_chromium() or not find_driver():
    print("1..0 # SKIP chromium and chromium-driver are not installed (.ci/setup installs them)")
    sys.exit(0)

tmp = tempfile.mkdtemp(prefix="hyocr-web-")
servers = []


def start_server(*extra):
    log = open(os.path.join(tmp, f"serve-{len(servers)}.log"), "w+")
    proc = subprocess.Popen([HYOCR, "serve", "--model", os.path.join(DATA, "ckpt-flat"), "--device", "cpu",
                             "--threads", "2", "--port", "0", "--served-model-name", "hyocr-test", *extra],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    servers.append(proc)
    port, lines = 0, []
    for line in proc.stderr:   # until it is ready (the engine loaded), or gone
        lines.append(line)
        log.write(line)
        m = re.search(r"listening on http://[0-9.]+:(\d+)", line)
        if m:
            port = int(m.group(1))
        if "ready" in line:
            break
    threading.Thread(target=lambda: [log.write(ln) or log.flush() for ln in proc.stderr], daemon=True).start()
    if not port or proc.poll() is not None:
        raise RuntimeError("hyocr serve did not start:\n" + "".join(lines))
    return proc, port


def http_get(port, path, headers=None):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


def metric(port, name, label):
    _, _, text = http_get(port, "/metrics")
    for line in text.splitlines():
        if line.startswith(name + "{") and label in line:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def until(cond, what, timeout=300):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.05)


def reference(task, *extra):
    """hyocr run's answer for IMAGE (and its export's spotting lines)."""
    out = os.path.join(tmp, f"ref-{task}.json")
    r = subprocess.run([HYOCR, "run", "--model", os.path.join(DATA, "ckpt-flat"), "--device", "cpu", "--threads", "2",
                        *(["-t", task] if task != "custom" else []), "-n", str(TOKENS), "-f", "json", "-o", out,
                        *extra, IMAGE],
                       capture_output=True, text=True, check=True)
    text = json.loads(r.stdout)[0]["text"]
    exported = json.load(open(out))
    return text, exported


def noise_png(path, side):
    """An image whose PNG is about side²·3 bytes (noise does not compress)."""
    raw = b"".join(b"\0" + os.urandom(side * 3) for _ in range(side))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)) + \
        chunk(b"IDAT", zlib.compress(raw, 1)) + chunk(b"IEND", b"")
    open(path, "wb").write(png)


def shot(s, name):
    if SHOTS:
        os.makedirs(SHOTS, exist_ok=True)
        s.screenshot(os.path.join(SHOTS, name))


# ---- page state, as app.js marks it on <body> -----------------------------------------------

def run_and_wait(s, item_state=None):
    """Clicks Run; waits until the run's image has finished; returns "ID:STATE"."""
    s.js("delete document.body.dataset.finished; delete document.body.dataset.lines;")
    s.click("#run")
    return s.wait("return document.body.dataset.finished", what="the run to finish")


def output(s):
    return s.js("return document.getElementById('output').textContent")


def message(s):
    return s.js("const m = document.getElementById('message'); return m.hidden ? '' : m.textContent")


def load(s, port):
    s.get(f"http://127.0.0.1:{port}/")
    s.wait("return document.body.dataset.ready", what="the page to load its tasks")


driver = Driver(os.path.join(tmp, "chromedriver.log"))
try:
    main, port = start_server("--max-batch", "1", "--max-request-size", str(MAX_BODY))
    origin = f"http://127.0.0.1:{port}"
    downloads = os.path.join(tmp, "downloads")
    os.makedirs(downloads)

    # ---- the policy, from the server
    status, headers, body = http_get(port, "/")
    csp = headers.get("Content-Security-Policy", "")
    check("GET /: 200, the page, with a strict Content-Security-Policy header",
          status == 200 and csp.startswith("default-src 'self'") and "script-src 'self';" in csp and
          "unsafe" not in csp and "connect-src 'self'" in csp, f"{status} {csp}")

    s = driver.session(lang="en-US", download_dir=downloads)
    try:
        # ---- load, the tasks from the engine
        def loads():
            load(s, port)
            _, _, tasks = http_get(port, "/web/api/tasks")
            names = [t["name"] for t in json.loads(tasks)["tasks"]]
            got = s.js("return [...document.querySelectorAll('#task option')].map(o => o.value)")
            labels = s.js("return [...document.querySelectorAll('#task option')].map(o => o.textContent)")
            empty = s.js("return getComputedStyle(document.getElementById('output'), '::before').content")
            return (got == names and labels[0] == "Recognize text" and s.js("return document.documentElement.lang") == "en"
                    and s.js("return document.getElementById('run').textContent") == "Run" and
                    empty == '"The answer appears here as it is written."', f"{got} {labels} {empty}")
        step("the page loads, in English, with the engine's task list", loads)
        def translated():
            # the page's string table (one file): every English string has its Chinese one, with
            # the same {placeholders}
            got = s.js_async("import('/web/strings.js').then(m => arguments[arguments.length - 1]("
                             "[m.strings.en, m.strings['zh-CN']]))")
            en, zh = got
            holes = lambda t: sorted(re.findall(r"\{\w+\}", t))  # noqa: E731
            bad = [k for k in en if k not in zh or not zh[k] or holes(en[k]) != holes(zh[k])]
            extra = [k for k in zh if k not in en]
            return (not bad and not extra and len(en) > 50, f"missing or unlike: {bad}; unknown: {extra}")
        step("strings.js: every English string is translated into zh-CN, with the same placeholders", translated)
        step("the page's icon is the app's, and no request asked for /favicon.ico",
             lambda: s.js("return document.querySelector('link[rel=icon]').href.endsWith('/web/icon.svg') && "
                          "!performance.getEntriesByType('resource').some(e => e.name.endsWith('/favicon.ico'))"))
        step("the page shows the server's state: model, backend, queue, memory",
             lambda: (lambda t: (re.fullmatch(r"hyocr-test on CPU · 0 running, 0 waiting · memory [\d.]+ \w+", t)
                                 is not None, t))(
                 s.wait("const t = document.getElementById('status').textContent; return t.includes('running') && t",
                        what="the status line")))

        # ---- upload, two presets, the text equals hyocr run's
        s.upload(IMAGE)
        step("an uploaded image is queued and shown",
             lambda: s.js("return document.querySelectorAll('#queue li').length === 1 && "
                          "document.querySelector('#queue li').dataset.state === 'waiting' && "
                          "document.getElementById('image').src.startsWith('blob:')"))
        s.js("document.getElementById('max-tokens').value = arguments[0]", str(TOKENS))
        want, _ = reference("recognize")
        s.select("recognize")
        step("preset recognize: the streamed text equals hyocr run's",
             lambda: (run_and_wait(s) == "1:done" and output(s) == want, f"page {output(s)!r}\nrun  {want!r}"))
        want, exported = reference("spotting")
        s.select("spotting")
        step("preset spotting (the same image again): the streamed text equals hyocr run's",
             lambda: (run_and_wait(s) == "1:done" and output(s) == want, f"page {output(s)!r}\nrun  {want!r}"))
        lines = exported["pages"][0].get("lines", []) if "pages" in exported else []
        step("the spotting boxes drawn are the engine's lines (hyocr run's export)",
             lambda: (s.wait("return document.body.dataset.lines", what="the spotting lines") and
                      s.js("return document.querySelectorAll('#boxes .box').length") == len(lines),
                      f"{s.js('return document.querySelectorAll(`#boxes .box`).length')} vs {len(lines)}"))
        shot(s, "web-en.png")

        want, _ = reference("parse_document")
        s.select("parse_document")

        def rendered():
            if not (run_and_wait(s) == "1:done" and output(s) == want):
                return False, f"page {output(s)!r}\nrun  {want!r}"
            s.click("#tab-rendered")
            s.wait("return document.body.dataset.rendered", what="the render")
            got = s.js("return document.getElementById('rendered').contentDocument.body.innerHTML")
            req = urllib.request.Request(origin + "/web/api/render", data=want.encode(), method="POST")
            html = urllib.request.urlopen(req, timeout=120).read().decode()
            same = s.js("const p = new DOMParser().parseFromString(arguments[0], 'text/html');"
                        "return p.body.innerHTML === arguments[1]", html, got)
            s.click("#tab-text")
            return same and s.js("return document.getElementById('rendered').hidden"), f"{got!r}\n{html!r}"
        step("preset parse_document: the same text, shown rendered as the engine renders it", rendered)

        # ---- copy, downloads
        def downloaded():
            for ext in ("txt", "md", "json"):
                s.click(f"#dl-{ext}")
            files = {e: os.path.join(downloads, f"big_420x300.{e}") for e in ("txt", "md", "json")}
            # a download is whole once it has its own name and is not empty (Chromium writes it as
            # .crdownload and renames it at the end, but may reserve the name with an empty file first)
            until(lambda: all(os.path.exists(f) and os.path.getsize(f) > 0 for f in files.values()) and
                  not any(f.endswith(".crdownload") for f in os.listdir(downloads)), "the downloads")
            txt, md = open(files["txt"]).read(), open(files["md"]).read()
            j = json.load(open(files["json"]))
            return (txt == want and md == want and j["text"] == want and j["task"] == "parse_document" and
                    j["image"] == "big_420x300.png", f"{txt!r} {j}")
        step("download .txt, .md and .json: the answer, and in the JSON its task and image", downloaded)
        s.click("#copy")
        step("copy says it copied", lambda: bool(s.wait("return !document.getElementById('copied').hidden",
                                                         what="the copied note")))

        # ---- the tasks that take words: extract-fields, a custom prompt
        def fields():
            s.select("extract_fields")
            shown = s.js("return !document.getElementById('fields-row').hidden && "
                         "document.getElementById('custom-row').hidden")
            s.clear("#fields")
            s.click("#run")
            refused = s.wait("const m = document.getElementById('message'); return !m.hidden && m.textContent",
                             what="the missing fields' message")
            s.type("#fields", "name, 日期")
            want, _ = reference("extract_fields", "--fields", "name,日期")
            done = run_and_wait(s)
            return (shown and refused == "Name at least one field to extract." and done == "1:done" and
                    output(s) == want, f"{shown} {refused!r} {done} page {output(s)!r}\nrun  {want!r}")
        step("extract_fields: the fields' box, a message without fields, and hyocr run's text with them", fields)

        def custom():
            s.select("custom")
            s.type("#custom", "Describe the image.")
            want, _ = reference("custom", "-p", "Describe the image.")
            done = run_and_wait(s)
            return done == "1:done" and output(s) == want, f"{done} page {output(s)!r}\nrun  {want!r}"
        step("a custom prompt: hyocr run -p's text", custom)

        # ---- bad input
        notes = os.path.join(tmp, "notes.txt")
        open(notes, "w").write("not an image\n")
        s.upload(notes)
        s.select("recognize")
        step("a file that is not an image: a clear message on the page, from the server's reason",
             lambda: (run_and_wait(s) == "2:failed" and
                      message(s).startswith("“notes.txt” is not an image hyocr can read: the image could not be read")
                      and s.js("return document.querySelectorAll('#queue li').length") == 2, message(s)))
        huge = os.path.join(tmp, "huge.png")
        noise_png(huge, 700)
        s.upload(huge)
        step("an image over --max-request-size: a clear message on the page, before it is read or sent",
             lambda: (run_and_wait(s) == "3:failed" and
                      re.fullmatch(r"“huge\.png” is 1\.4 MiB: this server takes images up to about 76\d\.\d KiB\.",
                                   message(s)) is not None, message(s)))

        # ---- cancel: the page's job waits behind one that holds the only batch slot
        def cancels():
            body = json.dumps({"max_tokens": 30000, "ignore_eos": True, "stream": True, "messages": [
                {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64," +
                 __import__("base64").b64encode(open(IMAGE, "rb").read()).decode()}}, {"type": "text", "text": "x"}]}]})
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
            conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
            resp = conn.getresponse()
            resp.fp.readline()   # its first event: it is decoding
            aborted = metric(port, "hyocr:request_success_total", 'finished_reason="abort"')
            s.click("#queue li:first-child .name")
            s.js("delete document.body.dataset.finished")
            s.click("#run")
            until(lambda: json.loads(http_get(port, "/web/api/status")[2])["waiting"] == 1, "the page's job to queue")
            running = s.js("return document.body.dataset.running === '1' && "
                           "!document.getElementById('cancel').disabled")
            s.click("#cancel")
            state = s.wait("return document.body.dataset.finished", what="the cancel")
            until(lambda: metric(port, "hyocr:request_success_total", 'finished_reason="abort"') == aborted + 1,
                  "the server to count the page's job as aborted")
            conn.close()   # the long one goes away too
            return (running and state == "1:cancelled" and message(s) == "Cancelled: “big_420x300.png” was not finished."
                    and s.js("return document.getElementById('cancel').disabled"), f"{state} {message(s)}")
        step("cancel: the page says so and the server cancels the job (its abort counter)", cancels)

        # ---- no request left the origin
        def same_origin():
            urls = s.js("return [location.href, ...performance.getEntriesByType('resource').map(e => e.name)]")
            other = [u for u in urls if not (u.startswith(origin + "/") or u.startswith("blob:" + origin + "/"))]
            return (not other and len(urls) > 5, f"{other} of {urls}")
        step("no request went to another origin (the page's resource entries)", same_origin)
    finally:
        s.quit()

    # ---- Chinese, for a browser that asks for it
    s = driver.session(lang="zh-CN")
    try:
        def chinese():
            load(s, port)
            s.upload(IMAGE)
            s.js("document.getElementById('max-tokens').value = arguments[0]", str(TOKENS))
            done = run_and_wait(s)
            got = s.js("return [document.documentElement.lang, document.getElementById('run').textContent, "
                       "document.querySelector('#task option').textContent, document.title, "
                       "document.querySelector('#queue .state').textContent]")
            return (done == "1:done" and got == ["zh-CN", "运行", "提取文字", "hyocr — 识别图片中的文字", "完成"], got)
        step("zh-CN: the page in Simplified Chinese, following the browser's language", chinese)
        shot(s, "web-zh_CN.png")
    finally:
        s.quit()

    # ---- a phone: 390 px wide
    want_spot, _ = reference("spotting")
    s = driver.session(lang="en-US", width=390, height=844)
    try:
        def phone():
            s.cdp("Emulation.setDeviceMetricsOverride", {"width": 390, "height": 844, "deviceScaleFactor": 1,
                                                         "mobile": True})
            load(s, port)
            s.upload(IMAGE)
            s.js("document.getElementById('max-tokens').value = arguments[0]", str(TOKENS))
            s.select("spotting")
            done = run_and_wait(s)
            s.wait("return document.body.dataset.lines", what="the spotting lines")
            widths = s.js("return [innerWidth, document.documentElement.scrollWidth, "
                          "...['run', 'cancel', 'task', 'output', 'image', 'dl-json', 'status']"
                          ".map(id => Math.ceil(document.getElementById(id).getBoundingClientRect().right))]")
            return (done == "1:done" and widths[0] == 390 and max(widths[1:]) <= 390, widths)
        step("390 px wide: nothing wider than the screen, every control on it", phone)
        shot(s, "web-390.png")

        def paste_and_drop():
            # a pasted image and a dropped one (the events a browser sends, with their files) queue
            # up behind the first, then run one after the other
            data = list(open(IMAGE, "rb").read())
            s.js("""const file = (name) => new File([new Uint8Array(arguments[0])], name, {type: 'image/png'});
                    const pasted = new DataTransfer(); pasted.items.add(file('pasted.png'));
                    document.dispatchEvent(new ClipboardEvent('paste', {clipboardData: pasted, bubbles: true}));
                    const dropped = new DataTransfer(); dropped.items.add(file('dropped.png'));
                    document.getElementById('drop').dispatchEvent(new DragEvent('drop', {dataTransfer: dropped,
                                                                                      bubbles: true, cancelable: true}));""",
                 data)
            queued = s.js("return [...document.querySelectorAll('#queue li')].map(l => "
                          "l.querySelector('.name').textContent + ':' + l.dataset.state)")
            s.js("delete document.body.dataset.finished")
            s.click("#run")
            s.wait("return document.body.dataset.finished === '3:done'", what="both to run")
            states = s.js("return [...document.querySelectorAll('#queue li')].map(l => l.dataset.state)")
            return (queued == ["big_420x300.png:done", "pasted.png:waiting", "dropped.png:waiting"] and
                    states == ["done", "done", "done"] and output(s) == want_spot, f"{queued} {states} {output(s)!r}")
        step("paste and drop queue images, which then run one after another", paste_and_drop)
    finally:
        s.quit()

    # ---- what a tiny random model never writes: boxes, and hostile HTML. The answer is scripted
    # in the browser (fetch of /v1/chat/completions answered with those SSE events); the rest
    # is real: the engine parses the lines and renders the Markdown, the page draws and shows.
    s = driver.session(lang="en-US")
    try:
        script_answer = """
            const pieces = arguments[0];
            const real = window.fetch;
            window.fetch = (url, opts) => {
                if (!String(url).endsWith('/v1/chat/completions')) return real(url, opts);
                const enc = new TextEncoder();
                const event = (o) => enc.encode('data: ' + JSON.stringify(o) + '\\n\\n');
                const body = new ReadableStream({ start(c) {
                    for (const p of pieces) c.enqueue(event({ choices: [{ index: 0, delta: { content: p },
                                                                          finish_reason: null }] }));
                    c.enqueue(event({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }));
                    c.enqueue(enc.encode('data: [DONE]\\n\\n'));
                    c.close();
                } });
                return Promise.resolve(new Response(body, { status: 200,
                                                            headers: { 'Content-Type': 'text/event-stream' } }));
            };"""

        def boxes():
            load(s, port)
            s.upload(IMAGE)
            s.js(script_answer, ["Total (USD)(100,200)", ",(500,300)\n王(0,0),(1000,", "1000)\nhalf(1,2),(3"])
            s.select("spotting")
            done = run_and_wait(s)
            s.wait("return document.body.dataset.lines", what="the spotting lines")
            # the boxes are placed against the image's box: measured once the image is decoded
            s.wait("const i = document.getElementById('image'); return i.complete && i.naturalWidth > 0",
                   what="the image", timeout=60)
            got = s.js("""const img = document.getElementById('image').getBoundingClientRect();
                          return [...document.querySelectorAll('#boxes .box')].map(b => {
                              const r = b.getBoundingClientRect();
                              return [b.title, (r.left - img.left) / img.width, (r.top - img.top) / img.height,
                                      r.width / img.width, r.height / img.height]; });""")
            want = [["Total (USD)", 0.1, 0.2, 0.4, 0.1], ["王", 0, 0, 1, 1]]
            close = len(got) == 2 and all(g[0] == w[0] and all(abs(a - b) < 0.01 for a, b in zip(g[1:], w[1:]))
                                          for g, w in zip(got, want))
            return done == "1:done" and close, got
        step("spotting: the engine's lines drawn over the image where their 0…1000 boxes say", boxes)

        def hostile():
            # another origin (a port of its own), which counts what reaches it
            hits = []

            class Other(http.server.BaseHTTPRequestHandler):
                def do_GET(self):
                    hits.append(self.path)
                    self.send_response(404)
                    self.end_headers()

                def log_message(self, *args):
                    pass
            other = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Other)
            threading.Thread(target=other.serve_forever, daemon=True).start()
            elsewhere = f"http://127.0.0.1:{other.server_address[1]}"
            s.js(script_answer, [f"# Title\n\n<img id=\"x\" src=\"{elsewhere}/x.png\">\n\n",
                                 "<script>parent.document.title = 'pwned';</script>\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"])
            s.select("parse_document")
            done = run_and_wait(s)
            s.click("#tab-rendered")
            s.wait("return document.body.dataset.rendered", what="the rendered answer")   # its load event
            got = s.js("""const d = document.getElementById('rendered').contentDocument;
                          const names = [...performance.getEntriesByType('resource'),
                                         ...d.defaultView.performance.getEntriesByType('resource')].map(e => e.name);
                          return [d.querySelector('h1').textContent, d.querySelectorAll('td').length,
                                  document.title, d.getElementById('x').naturalWidth,
                                  d.getElementById('x').complete];""")
            other.shutdown()
            return (done == "1:done" and got == ["Title", 2, "hyocr — read the text in images", 0, True] and
                    not hits, f"{got} requests that reached the other origin: {hits}")
        step("a parse-document answer is rendered, its scripts do not run and its remote image is not loaded",
             hostile)
    finally:
        s.quit()

    # ---- the key
    key = os.path.join(tmp, "key.txt")
    open(key, "w").write("s3cret\n")
    keyed, kport = start_server("--api-key-file", key)
    s = driver.session(lang="en-US")
    try:
        def asks_key():
            s.get(f"http://127.0.0.1:{kport}/")
            s.wait("return document.getElementById('key-dialog').open", what="the key dialog")
            s.type("#key", "wrong")
            s.click("#key-ok")
            s.wait("return !document.getElementById('key-error').hidden && document.getElementById('key-dialog').open",
                   what="the refusal")
            s.clear("#key")
            s.type("#key", "s3cret")
            s.click("#key-ok")
            s.wait("return document.body.dataset.ready", what="the page with the key")
            kept = s.js("return [sessionStorage.getItem('hyocr-api-key'), localStorage.length, document.cookie]")
            s.get(f"http://127.0.0.1:{kport}/")   # the same tab: asked once
            s.wait("return document.body.dataset.ready", what="the page again")
            again = s.js("return document.getElementById('key-dialog').open")
            return kept == ["s3cret", 0, ""] and not again, f"{kept} {again}"
        step("--api-key: the page asks once, says when a key is refused, keeps it in sessionStorage only",
             asks_key)
    finally:
        s.quit()

    # ---- a page of another origin calls the API from the browser (CORS, as vLLM answers it): the
    # key's header makes the browser ask first (a preflight); a server that allows other origins
    # only keeps the answer from the page
    tiny = open(os.path.join(DATA, "images", "tiny_40x30.png"), "rb").read()
    tiny_url = "data:image/png;base64," + base64.b64encode(tiny).decode()
    narrow, nport = start_server("--allowed-origins", '["http://elsewhere.invalid"]')

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if not self.path.strip("/").isdigit():   # the browser's own /favicon.ico
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            target = int(self.path.strip("/"))
            script = f"""<!DOCTYPE html><body><script>
fetch('http://127.0.0.1:{target}/v1/chat/completions', {{method: 'POST',
      headers: {{'Content-Type': 'application/json', 'Authorization': 'Bearer s3cret'}},
      body: JSON.stringify({{messages: [{{role: 'user', content: [{{type: 'image_url', image_url: {{url: '{tiny_url}'}}}},
                                                                 {{type: 'text', text: 'x'}}]}}], max_tokens: 3}})}})
  .then(r => r.json().then(d => {{ document.body.dataset.cors = r.status + ' ' + d.choices[0].finish_reason +
                                   ' ' + d.usage.completion_tokens; }}))
  .catch(e => {{ document.body.dataset.cors = 'blocked: ' + e.name; }});
</script></body>""".encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(script)))
            self.end_headers()
            self.wfile.write(script)

        def log_message(self, *args):
            pass
    other = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    s = driver.session(lang="en-US")
    try:
        def cross_origin(target, want):
            s.get(f"http://127.0.0.1:{other.server_address[1]}/{target}")
            got = s.wait("return document.body.dataset.cors", what="the cross-origin fetch")
            return got == want, got
        step("a page of another origin calls the keyed API from the browser: preflight, then the answer",
             lambda: cross_origin(kport, "200 length 3"))
        step("--allowed-origins without that origin: the browser keeps the answer from the page",
             lambda: cross_origin(nport, "blocked: TypeError"))
    finally:
        s.quit()
        other.shutdown()
    narrow.terminate()
    narrow.wait()
    keyed.terminate()
    check("the keyed server exits 0 on SIGTERM after the page's requests (under ASan: no leak)", keyed.wait() == 0)

    # ---- DNS rebinding: a web site's name resolved to 127.0.0.1 (the browser's resolver told so,
    # as a rebinding DNS server would) reaches the loopback server as the site's own origin; the
    # Host header gives it away, and the page gets a 403 instead of the server's page and API
    named, hport = start_server("--allowed-hosts", '["ocr.test"]')
    s = driver.session(lang="en-US", extra_args=["--host-resolver-rules=MAP rebound.test 127.0.0.1, "
                                                 "MAP ocr.test 127.0.0.1"])
    try:
        def rebound():
            s.get(f"http://rebound.test:{port}/")
            text = s.js("return document.body.innerText")
            api = s.js_async("const done = arguments[arguments.length - 1]; "
                             "fetch('/v1/models').then(r => done(r.status)).catch(e => done(e.name))")
            return ("does not answer to the host name “rebound.test”" in text and api == 403, f"{api} {text[:200]}")
        step("DNS rebinding: a site's name pointed at 127.0.0.1 gets a 403, page and API", rebound)

        def listed():
            s.get(f"http://ocr.test:{hport}/")
            title = s.wait("return document.title", what="the page's title")
            return "hyocr" in title.lower(), title
        step("--allowed-hosts: a name it lists gets the page", listed)
    finally:
        s.quit()
    named.terminate()
    check("the --allowed-hosts server exits 0 on SIGTERM (under ASan: no leak)", named.wait() == 0)

    # ---- a server that went away
    s = driver.session(lang="en-US")
    try:
        def gone():
            load(s, port)
            s.upload(IMAGE)
            main.kill()
            main.wait()
            state = run_and_wait(s)
            status = s.wait("const e = document.getElementById('status'); "
                            "return e.dataset.state === 'gone' && e.textContent", what="the status line")
            return (state == "1:failed" and message(s).startswith("The server cannot be reached") and
                    status == "The server cannot be reached." and
                    s.js("return document.querySelectorAll('#queue li').length") == 1, f"{state} {message(s)}")
        step("a server that went away: a clear message, the image kept, the status line says so", gone)
    finally:
        s.quit()
finally:
    driver.close()
    for p in servers:
        if p.poll() is None:
            p.terminate()
            p.wait()
    if failed:
        for f in sorted(os.listdir(tmp)):
            if f.endswith(".log"):
                print(f"# --- {f}")
                for line in open(os.path.join(tmp, f), errors="replace").read().splitlines()[-30:]:
                    print("#", line)
    shutil.rmtree(tmp, ignore_errors=True)

print(f"1..{n}")
sys.exit(1 if failed else 0)
