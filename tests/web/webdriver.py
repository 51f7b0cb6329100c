"""A small W3C WebDriver client (the standard library's urllib speaking chromedriver's JSON),
for the web page's browser tests: sessions, elements, scripts, screenshots, and Chrome's
DevTools commands through chromedriver's goog/cdp endpoint. Waits are on conditions."""
import base64
import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request

ELEMENT = "element-6066-11e4-a52e-4f735466cecf"


class WebDriverError(Exception):
    pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        for d in os.environ.get("PATH", "").split(":"):
            p = os.path.join(d, name)
            if os.access(p, os.X_OK):
                return p
    return None


def find_driver():
    for d in os.environ.get("PATH", "").split(":") + ["/usr/lib/chromium"]:
        p = os.path.join(d, "chromedriver")
        if os.access(p, os.X_OK):
            return p
    return None


class Driver:
    """chromedriver on a free loopback port; stopped by close()."""

    def __init__(self, log_path):
        self.port = free_port()
        self.log = open(log_path, "ab")
        self.proc = subprocess.Popen([find_driver(), f"--port={self.port}"], stdout=self.log,
                                     stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 120
        while True:   # until it answers /status (a condition, polled)
            try:
                if self.call("GET", "/status")["ready"]:
                    break
            except (OSError, WebDriverError):
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise WebDriverError("chromedriver did not start")
            time.sleep(0.05)

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=600) as r:
                return json.loads(r.read())["value"]
        except urllib.error.HTTPError as e:
            v = json.loads(e.read()).get("value", {})
            raise WebDriverError(f"{v.get('error')}: {v.get('message', '')[:500]}") from None

    def session(self, lang="en-US", width=1280, height=900, download_dir=None, extra_args=()):
        return Session(self, lang, width, height, download_dir, extra_args)

    def close(self):
        self.proc.terminate()
        self.proc.wait()
        self.log.close()


class Session:
    def __init__(self, driver, lang, width, height, download_dir, extra_args=()):
        self.d = driver
        args = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-features=Translate,OptimizationHints,MediaRouter",
                f"--lang={lang}", f"--accept-lang={lang}", f"--window-size={width},{height}", *extra_args]
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": find_chromium(), "args": args,
                                   "prefs": {"intl.accept_languages": lang}},
        }}}
        v = driver.call("POST", "/session", caps)
        self.id = v["sessionId"]
        self.base = f"/session/{self.id}"
        if download_dir:
            self.cdp("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": download_dir})

    def call(self, method, path, body=None):
        return self.d.call(method, self.base + path, body)

    def cdp(self, cmd, params=None):
        return self.call("POST", "/goog/cdp/execute", {"cmd": cmd, "params": params or {}})

    def get(self, url):
        self.call("POST", "/url", {"url": url})

    def js(self, script, *args):
        return self.call("POST", "/execute/sync", {"script": script, "args": list(args)})

    def js_async(self, script, *args):
        """script gets a callback as its last argument and calls it with the result."""
        return self.call("POST", "/execute/async", {"script": script, "args": list(args)})

    def find(self, css):
        return self.call("POST", "/element", {"using": "css selector", "value": css})[ELEMENT]

    def click(self, css):
        self.call("POST", f"/element/{self.find(css)}/click", {})

    def type(self, css, text):
        self.call("POST", f"/element/{self.find(css)}/value", {"text": text})

    def clear(self, css):
        self.call("POST", f"/element/{self.find(css)}/clear", {})

    def upload(self, path):
        """Gives the page's file chooser a file, as a user picking it."""
        self.call("POST", f"/element/{self.find('#file')}/value", {"text": path})

    def select(self, value):
        self.js("const s = document.getElementById('task'); s.value = arguments[0];"
                "s.dispatchEvent(new Event('change'));", value)

    def wait(self, condition, *args, what="", timeout=300):
        """Until the JavaScript expression condition (a function body returning a value) is
        truthy; returns its value. Polled: a condition, never a time."""
        deadline = time.monotonic() + timeout
        while True:
            v = self.js(condition, *args)
            if v:
                return v
            if time.monotonic() > deadline:
                raise WebDriverError(f"timed out waiting for {what or condition}")
            time.sleep(0.05)

    def screenshot(self, path):
        with open(path, "wb") as f:
            f.write(base64.b64decode(self.call("GET", "/screenshot")))

    def quit(self):
        try:
            self.d.call("DELETE", self.base)
        except (OSError, WebDriverError):
            pass
