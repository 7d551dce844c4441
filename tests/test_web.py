#!/usr/bin/python3
"""The web page (web/index.html, app.js, style.css) in a real browser.

Debian's chromium, headless, driven by python3-selenium through chromium-driver: the page
loads the languages, a sentence is typed, source and target are picked, the debounced
translation and its alternatives appear, the character counter follows the limit from
/frontend/settings, the swap button swaps, a file is uploaded and its translation offered
for download (also when dropped on the page, and under names such as "50% off.txt" or
non-ASCII ones); with keys required the API key field appears and the key is sent.
Errors show next to what caused them (the text pane, the file box) and every visible text
reads at WCAG AA: the test computes the contrast of the rendered colours (4.5:1), in the
light and the dark (prefers-color-scheme) scheme. Alternatives are buttons reached with
Tab and start collapsed for a long text; "suggest a better translation" appears only when
/frontend/settings says suggestions and POSTs /suggest; the detected language is shown,
with a warning when it is the target; the API link opens /spec; the favicon is served
(no 404 in the server's access log). Screenshots at desktop (1280x900) and phone
(390x844) widths, light and dark, are written to $MT_WEB_TEST_OUT (default:
$MT_BUILD_DIR/tests/web-screenshots).

Server: $MT_WEB_TEST_SERVER (a running mt-server with the page and every endpoint); else
the real mt-server of this build, started on the bundled en-de and de-en models: text,
auto-detection (a German sentence is detected and goes to de-en) and file upload, each
checked against what the server's own API answers, with the screenshots; a second one
serves only de-en and a random en-fr, so German -> French is offered and goes through
English (the pivot). The stand-in
server below (serves web/, fakes the endpoints in LibreTranslate's shapes with fixed
settings) tests what needs fixed answers: the char limit, the API key field, the exact
requests the page sends.

Exits 77 (meson SKIP) with the reason when chromium, chromium-driver or python3-selenium
is missing (scripts/install-deps.sh installs them).
"""
import email.parser
import email.policy
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.abspath(os.environ.get("MT_SOURCE_DIR", os.path.join(HERE, "..")))
BUILD = os.path.abspath(os.environ.get("MT_BUILD_DIR", os.path.join(SOURCE, "build")))
WEB = os.path.join(SOURCE, "web")
OUT = os.environ.get("MT_WEB_TEST_OUT") or os.path.join(BUILD, "tests", "web-screenshots")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


def skip(reason):
    print("SKIP: " + reason)
    sys.exit(77)


try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait
except ImportError:
    skip("python3-selenium is not installed (scripts/install-deps.sh)")
for exe, pkg in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
    if not os.access(exe, os.X_OK):
        skip("%s is not installed (scripts/install-deps.sh installs %s)" % (exe, pkg))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------ stand-in server

LANGUAGES = [{"code": "en", "name": "English", "targets": ["de", "fr"]},
             {"code": "de", "name": "German", "targets": ["en"]},
             {"code": "fr", "name": "French", "targets": ["en"]}]


def fake_translate(q, target):
    return "[%s] %s" % (target, q.upper())


class StandIn:
    """Serves web/ and fakes /frontend/settings, /languages, /translate, /translate_file
    and /download_file/<id> in LibreTranslate's shapes. Records the /translate bodies."""

    def __init__(self, key_required=False, char_limit=200, disposition="raw", suggestions=False):
        self.settings = {"charLimit": char_limit, "frontendTimeout": 300, "keyRequired": key_required,
                         "suggestions": suggestions, "filesTranslation": True,
                         "supportedFilesFormat": [".txt", ".html", ".srt", ".docx", ".odt"],
                         "language": {"source": {"code": "auto", "name": "Auto Detect"},
                                      "target": {"code": "de", "name": "German"}}}
        self.disposition = disposition  # "raw": UTF-8 bytes in filename="..." as mt-server; "star": RFC 6266
        self.requests, self.files, self.suggestions, self.lock = [], {}, [], threading.Lock()
        self.dead = False  # True: every request is answered by closing the connection
        stand_in = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def send(self, status, data, ctype, extra=()):
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                for k, v in extra:
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def json(self, status, obj):
                self.send(status, json.dumps(obj).encode(), "application/json")

            def do_GET(self):
                if stand_in.dead:
                    self.close_connection = True
                    return
                path = self.path.split("?")[0]
                static = {"/": "index.html", "/index.html": "index.html", "/app.js": "app.js",
                          "/style.css": "style.css", "/favicon.svg": "favicon.svg", "/favicon.ico": "favicon.svg"}
                if path in static:
                    name = static[path]
                    ctype = {"html": "text/html; charset=utf-8", "js": "text/javascript; charset=utf-8",
                             "css": "text/css; charset=utf-8", "svg": "image/svg+xml"}[name.rsplit(".", 1)[1]]
                    with open(os.path.join(WEB, name), "rb") as f:
                        return self.send(200, f.read(), ctype)
                if path == "/frontend/settings":
                    return self.json(200, stand_in.settings)
                if path == "/languages":
                    return self.json(200, LANGUAGES)
                if path.startswith("/download_file/"):
                    with stand_in.lock:
                        entry = stand_in.files.get(path.rsplit("/", 1)[1])
                        if entry is None:
                            return self.json(404, {"error": "no such file"})
                        entry["polls"] += 1
                        if entry["polls"] == 1:  # first poll: still translating
                            return self.json(202, {"done": 0, "total": 1})
                    name = entry["name"]
                    if stand_in.disposition == "star":
                        disp = "attachment; filename=\"download.txt\"; filename*=UTF-8''" + \
                            urllib.parse.quote(name, safe="")
                    else:  # UTF-8 bytes as they are (http.server writes headers as Latin-1)
                        disp = 'attachment; filename="%s"' % name.encode().decode("latin-1")
                    return self.send(200, entry["data"], "text/plain; charset=utf-8",
                                     [("Content-Disposition", disp)])
                self.json(404, {"error": "not found"})

            def do_POST(self):
                if stand_in.dead:
                    self.close_connection = True
                    return
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                path = self.path.split("?")[0]
                if path == "/translate":
                    req = json.loads(body)
                    with stand_in.lock:
                        stand_in.requests.append(req)
                    if stand_in.settings["keyRequired"] and req.get("api_key") != "sekret":
                        return self.json(403, {"error": "Please contact the server operator to get an API key"})
                    if not req.get("q"):
                        return self.json(400, {"error": "Invalid request: missing q parameter"})
                    t = req["target"]
                    answer = {"translatedText": fake_translate(req["q"], t),
                              "alternatives": ["alt %d: %s" % (i, req["q"]) for i in (1, 2)]}
                    if req.get("source") == "auto":
                        lang = "de" if req["q"].startswith("Hallo") else "en"
                        answer["detectedLanguage"] = {"language": lang, "confidence": 90.0}
                    return self.json(200, answer)
                if path == "/suggest":
                    req = json.loads(body)
                    if not stand_in.settings["suggestions"]:
                        return self.json(403, {"error": "Suggestions are disabled on this server."})
                    with stand_in.lock:
                        stand_in.suggestions.append(req)
                    return self.json(200, {"success": True})
                if path == "/translate_file":
                    msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
                        b"Content-Type: " + self.headers["Content-Type"].encode() + b"\r\n\r\n" + body)
                    fields, upload = {}, None
                    for part in msg.iter_parts():
                        name = part.get_param("name", header="content-disposition")
                        if part.get_filename():
                            upload = (part.get_filename(), part.get_payload(decode=True))
                        else:
                            fields[name] = part.get_content().strip()
                    if not upload or not fields.get("target"):
                        return self.json(400, {"error": "Invalid request: missing file or target"})
                    fid = uuid.uuid4().hex
                    fname = upload[0]
                    if any(0xDC80 <= ord(ch) <= 0xDCFF for ch in fname):  # raw UTF-8 bytes in the part header
                        fname = fname.encode("utf-8", "surrogateescape").decode("utf-8")
                    base, _, ext = fname.rpartition(".")
                    with stand_in.lock:
                        stand_in.files[fid] = {"name": "%s.%s.%s" % (base, fields["target"], ext), "polls": 0,
                                               "data": fake_translate(upload[1].decode(), fields["target"]).encode()}
                    host = self.headers.get("Host")
                    return self.json(200, {"translatedFileUrl": "http://%s/download_file/%s" % (host, fid)})
                self.json(404, {"error": "not found"})

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    @property
    def url(self):
        return "http://127.0.0.1:%d/" % self.server.server_address[1]


# ------------------------------------------------------------------ real server

def real_server(tmp, models=None):
    """(url, process or None, log path or None) of a real mt-server to test, or (None, None, None).
    The server started here serves models (default: the bundled en-de and de-en), stores
    suggestions and logs every request to tmp/server.log."""
    url = os.environ.get("MT_WEB_TEST_SERVER")
    if url and models is None:
        return url.rstrip("/") + "/", None, None
    exe = os.path.join(BUILD, "server", "mt-server")
    if not os.access(exe, os.X_OK):
        return None, None, None
    if models is None:
        models = [os.path.join(SOURCE, "models", "en-de"), os.path.join(SOURCE, "models", "de-en")]
    port = free_port()
    os.makedirs(tmp, exist_ok=True)
    log = os.path.join(tmp, "server.log")
    with open(log, "wb") as out:
        proc = subprocess.Popen([exe] + [a for m in models for a in ("--model", m)] + [
                                 "--web-root", WEB, "--suggestions-db", os.path.join(tmp, "suggestions.db"),
                                 "--workers", "1", "--port", str(port)],
                                stdout=out, stderr=subprocess.STDOUT)
    url = "http://127.0.0.1:%d/" % port
    deadline = time.monotonic() + 120
    import urllib.request
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "health", timeout=2) as r:
                ok = r.status == 200
            if ok:
                with urllib.request.urlopen(url + "frontend/settings", timeout=10) as r:
                    settings = json.loads(r.read())
                if not settings.get("filesTranslation"):
                    proc.kill()
                    raise RuntimeError("mt-server reports no file translation: %s" % settings)
                return url, proc, log
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError("mt-server --web-root did not become ready")


# ------------------------------------------------------------------ browser

def api(url, path, body):
    """The real server's own answer (what the page must show)."""
    import urllib.request
    req = urllib.request.Request(url + path, json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read())


# Contrast (WCAG 2.x) of every visible text on the page, from the rendered colours: the
# element's colour against its background, the backgrounds of its ancestors composited.
CONTRAST_JS = r"""
function rgba(c) {
  const m = /rgba?\(([^)]*)\)/.exec(c);
  if (!m) return [0, 0, 0, 0];
  const p = m[1].split(/[\s,\/]+/).filter(Boolean).map(Number);
  return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
}
function over(top, base) {
  const a = top[3];
  return [0, 1, 2].map((i) => top[i] * a + base[i] * (1 - a)).concat([1]);
}
function background(el) {
  const layers = [];
  for (let n = el; n; n = n.parentElement) {
    const c = rgba(getComputedStyle(n).backgroundColor);
    if (c[3] > 0) layers.push(c);
    if (c[3] >= 1) break;
  }
  let base = [255, 255, 255, 1];
  for (const c of layers.reverse()) base = over(c, base);
  return base;
}
function lum(c) {
  const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
  return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
}
const out = [];
for (const el of document.querySelectorAll("body *")) {
  if (["SCRIPT", "STYLE", "OPTION"].includes(el.tagName)) continue;
  const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
  const control = ["SELECT", "TEXTAREA", "INPUT"].includes(el.tagName) && el.type !== "file";
  if (!own && !control) continue;
  if (!el.getClientRects().length || getComputedStyle(el).visibility === "hidden") continue;
  if (el.closest(":disabled")) continue; // WCAG exempts inactive controls
  const bg = background(el);
  const fg = over(rgba(getComputedStyle(el).color), bg);
  const l1 = lum(fg), l2 = lum(bg);
  out.push({id: el.id || el.tagName.toLowerCase() + "." + el.className, text: (el.innerText || el.value || "").slice(0, 40),
            ratio: (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05),
            fg: getComputedStyle(el).color, bg: "rgb(" + bg.slice(0, 3).map(Math.round).join(", ") + ")"});
}
return out;
"""


def browser(user_data_dir):
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run",
                "--disable-dev-shm-usage", "--user-data-dir=" + user_data_dir, "--window-size=1280,900"):
        opts.add_argument(arg)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)


class WebPage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        os.makedirs(OUT, exist_ok=True)
        cls.tmp = tempfile.mkdtemp(prefix="test_web.")
        cls.real_url, cls.real_proc, cls.real_log = real_server(cls.tmp)
        cls.driver = browser(os.path.join(cls.tmp, "profile"))
        cls.driver.set_script_timeout(30)

    @classmethod
    def tearDownClass(cls):
        cls.driver.quit()
        if cls.real_proc:
            cls.real_proc.terminate()
            cls.real_proc.wait(timeout=30)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def wait(self, cond, what, timeout=30):
        return WebDriverWait(self.driver, timeout).until(lambda d: cond(d), "timed out waiting for " + what)

    def el(self, id_):
        return self.driver.find_element(By.ID, id_)

    def open(self, url, dark=False):
        self.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [
            {"name": "prefers-color-scheme", "value": "dark" if dark else "light"}]})
        self.driver.set_window_size(1280, 900)
        self.driver.get(url)
        self.wait(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "1", "page setup")
        self.assertTrue(self.el("lang-error").get_property("hidden"), self.el("lang-error").text)

    def assert_contrast(self, where, must_see=()):
        """Every visible text reads at WCAG AA (4.5:1); the ids in must_see are among them."""
        found = self.driver.execute_script(CONTRAST_JS)
        low = ["%s %r: %.2f (%s on %s)" % (f["id"], f["text"], f["ratio"], f["fg"], f["bg"])
               for f in found if f["ratio"] < 4.5]
        self.assertFalse(low, "%s: text below 4.5:1 contrast:\n  %s" % (where, "\n  ".join(low)))
        ids = {f["id"] for f in found}
        for i in must_see:
            self.assertIn(i, ids, "%s: #%s is not visible" % (where, i))
        return {f["id"]: f["ratio"] for f in found}

    def screenshot(self, name):
        path = os.path.join(OUT, name)
        self.assertTrue(self.driver.save_screenshot(path), path)
        self.assertGreater(os.path.getsize(path), 1000)
        print("screenshot: " + path)

    def run_flow(self, url, fake):
        d = self.driver
        self.open(url)
        src = Select(self.el("source-lang"))
        self.assertEqual(src.first_selected_option.get_attribute("value"), "auto")
        codes = [o.get_attribute("value") for o in src.options]
        self.assertIn("en", codes)
        src.select_by_value("en")
        tgt = Select(self.el("target-lang"))
        self.assertIn("de", [o.get_attribute("value") for o in tgt.options])
        tgt.select_by_value("de")
        box = self.el("source-text")
        sentence = "A man is riding a bicycle."
        box.send_keys(sentence)
        # Debounced translation as you type.
        out = self.wait(lambda d: self.el("translation").text.strip() or False, "the translation")
        if fake:
            self.assertEqual(out, fake_translate(sentence, "de"))
            alts = [li.text for li in d.find_elements(By.CSS_SELECTOR, "#alternatives li")]
            self.assertEqual(alts, ["alt 1: " + sentence, "alt 2: " + sentence])
        else:
            want = api(url, "translate", {"q": sentence, "source": "en", "target": "de", "alternatives": 3})
            self.wait(lambda d: self.el("translation").text.strip() == want["translatedText"],
                      "the server's translation %r (page: %r)" % (want["translatedText"], out))
            self.wait(lambda d: [li.text for li in d.find_elements(By.CSS_SELECTOR, "#alternatives li")]
                      == want["alternatives"], "the alternatives")
        self.assertFalse(self.el("copy").get_property("disabled"))
        counter = self.el("char-count").text
        self.assertTrue(counter.startswith("%d" % len(sentence)), counter)
        self.assert_contrast("desktop", ["translation", "spec-link", "char-count"])
        self.screenshot(("stand-in-" if fake else "") + "desktop.png")
        d.set_window_size(390, 844)
        # Phone width: the panes stack (the translation is below the text box).
        top_src = self.el("source-text").rect["y"]
        top_out = self.el("translation").rect["y"]
        self.assertGreater(top_out, top_src + 50, "panes do not stack at phone width")
        self.assertLessEqual(d.execute_script("return document.documentElement.scrollWidth"), 390,
                             "horizontal scrolling at phone width")
        self.screenshot(("stand-in-" if fake else "") + "phone.png")
        d.set_window_size(1280, 900)

        # File upload and download of the result.
        path = os.path.join(self.tmp, "note.txt")
        with open(path, "w") as f:
            f.write("Two dogs play in the snow.\n")
        self.el("file").send_keys(path)
        self.wait(lambda d: not self.el("translate-file").get_property("disabled"), "file button")
        self.el("translate-file").click()
        link = self.wait(lambda d: (not self.el("download").get_property("hidden")) and self.el("download"),
                         "the download link", timeout=120)
        self.assertTrue(link.get_attribute("href").startswith("blob:"))
        text = d.execute_async_script(
            "const done = arguments[0]; fetch(document.getElementById('download').href)"
            ".then(r => r.text()).then(done, e => done('ERROR ' + e));")
        self.assertTrue(text.strip(), "empty translated file")
        if fake:
            self.assertEqual(link.get_attribute("download"), "note.de.txt")
            self.assertEqual(text, fake_translate("Two dogs play in the snow.\n", "de"))
        else:
            want = api(url, "translate", {"q": "Two dogs play in the snow.", "source": "en", "target": "de"})
            self.assertEqual(text, want["translatedText"] + "\n")
            self.assertIn("note", link.get_attribute("download"))

        # Swap: German -> English, the translation becomes the source text.
        before = self.el("translation").text
        self.el("swap").click()
        self.assertEqual(Select(self.el("source-lang")).first_selected_option.get_attribute("value"), "de")
        self.assertEqual(Select(self.el("target-lang")).first_selected_option.get_attribute("value"), "en")
        self.assertEqual(self.el("source-text").get_property("value"), before)

    def upload_file(self, name, text):
        """Uploads a file named name through the file box; returns the download link."""
        path = os.path.join(self.tmp, "upload", name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        self.el("file").send_keys(path)
        self.wait(lambda d: not self.el("translate-file").get_property("disabled"), "file button")
        self.el("translate-file").click()
        self.wait(lambda d: not self.el("download").get_property("hidden")
                  or "error" in (self.el("file-status").get_attribute("class") or ""),
                  "the download link or an error", timeout=120)
        link = self.el("download")
        self.assertFalse(link.get_property("hidden"), "%s: no download link; the page says %r"
                         % (name, self.el("file-status").text))
        return link

    # "50% off" is not a percent-encoding; non-ASCII names arrive as UTF-8 bytes.
    FILE_NAMES = ["50% off.txt", "Grüße – 日本語 100%.txt"]

    def test_file_names(self):
        for disposition in ("raw", "star"):
            with StandIn(disposition=disposition) as s:
                self.open(s.url)
                Select(self.el("source-lang")).select_by_value("en")
                Select(self.el("target-lang")).select_by_value("de")
                for name in self.FILE_NAMES:
                    link = self.upload_file(name, "Hello.\n")
                    base, ext = name.rsplit(".", 1)
                    want = "%s.de.%s" % (base, ext)
                    self.assertEqual(link.get_attribute("download"), want, disposition)
                    self.assertEqual(link.text, "Download " + want)
        if self.real_url:  # mt-server keeps the uploaded name
            self.open(self.real_url)
            Select(self.el("source-lang")).select_by_value("en")
            Select(self.el("target-lang")).select_by_value("de")
            for name in self.FILE_NAMES:
                link = self.upload_file(name, "Hello.\n")
                self.assertEqual(link.get_attribute("download"), name)

    def test_page_real_server(self):
        if not self.real_url:
            self.skipTest("no real server: set MT_WEB_TEST_SERVER, or mt-server lacks --web-root")
        self.run_flow(self.real_url, fake=False)

    def test_auto_detect_real_server(self):
        if not self.real_url:
            self.skipTest("no real server")
        self.open(self.real_url)
        self.assertEqual(Select(self.el("source-lang")).first_selected_option.get_attribute("value"), "auto")
        Select(self.el("target-lang")).select_by_value("en")
        sentence = "Zwei Hunde spielen im Schnee."
        self.el("source-text").send_keys(sentence)
        want = api(self.real_url, "translate", {"q": sentence, "source": "auto", "target": "en"})
        self.assertEqual(want["detectedLanguage"]["language"], "de")
        self.wait(lambda d: self.el("translation").text.strip() == want["translatedText"], "the translation")
        self.wait(lambda d: "German" in self.el("detected").text, "the detected language")
        self.screenshot("desktop-auto.png")

    def test_pivot_pair_real_server(self):
        """German -> French with only de-en and en-fr loaded: /languages offers fr for de (a
        pivot through English), the page offers it and shows what the API answers."""
        if not os.access(os.path.join(BUILD, "server", "mt-server"), os.X_OK):
            self.skipTest("no mt-server in this build")
        sys.path.insert(0, HERE)
        import mtfixtures as mtf
        # a tiny random model labelled en -> fr: the route, not the French, is under test
        en_fr = mtf.relabel(mtf.make_model("web-en-fr", 7), "en", "fr")
        url, proc, _ = real_server(os.path.join(self.tmp, "pivot"),
                                   [os.path.join(SOURCE, "models", "de-en"), en_fr])
        try:
            self.open(url)
            src = Select(self.el("source-lang"))
            src.select_by_value("de")
            targets = [o.get_attribute("value") for o in Select(self.el("target-lang")).options]
            self.assertIn("fr", targets)
            self.assertIn("en", targets)
            Select(self.el("target-lang")).select_by_value("fr")
            sentence = "Zwei Hunde spielen im Schnee."
            self.el("source-text").send_keys(sentence)
            want = api(url, "translate", {"q": sentence, "source": "de", "target": "fr"})
            via = api(url, "translate", {"q": sentence, "source": "de", "target": "en"})["translatedText"]
            by_hand = api(url, "translate", {"q": via, "source": "en", "target": "fr"})["translatedText"]
            self.assertEqual(want["translatedText"], by_hand)
            self.assertTrue(want["translatedText"].strip(), want)
            self.wait(lambda d: self.el("translation").text.strip() == want["translatedText"].strip(),
                      "the pivot translation %r" % want["translatedText"])
        finally:
            proc.terminate()
            proc.wait(timeout=30)

    def test_page_stand_in(self):
        with StandIn() as s:
            self.run_flow(s.url, fake=True)
            # Requests in LibreTranslate's form, with alternatives.
            sent = [r for r in s.requests if r["q"] == "A man is riding a bicycle."]
            self.assertTrue(sent, s.requests)
            self.assertEqual((sent[-1]["source"], sent[-1]["target"], sent[-1]["alternatives"]),
                             ("en", "de", 3))
            # After the swap the translation is sent back, German to English (debounced).
            self.wait(lambda d: (s.requests[-1]["source"], s.requests[-1]["target"]) == ("de", "en"),
                      "the swapped request")

    def test_auto_detect_and_limit(self):
        with StandIn(char_limit=20) as s:
            self.open(s.url)
            self.el("source-text").send_keys("Hello there")
            self.wait(lambda d: self.el("translation").text.strip() or False, "the translation")
            self.assertEqual(s.requests[-1]["source"], "auto")
            self.assertIn("English", self.el("detected").text)
            self.assertEqual(self.el("char-count").text, "11 / 20")
            n = len(s.requests)
            self.el("source-text").send_keys(" and a lot more text")
            self.wait(lambda d: "over" in self.el("char-count").get_attribute("class"), "the over-limit mark")
            self.wait(lambda d: self.el("text-error").is_displayed(), "the limit message")
            self.assertIn("at most 20", self.el("text-error").text)
            self.assertEqual(len(s.requests), n, "text over the limit was sent")

    def in_pane(self, id_):
        """The section or pane an element is shown in (errors go next to their cause)."""
        return self.driver.execute_script(
            "const p = document.getElementById(arguments[0]).closest('.pane, .files, .bar, header, main');"
            "return p.id || p.className || p.tagName;", id_)

    def test_errors_next_to_cause_and_readable(self):
        for dark in (False, True):
            with StandIn(char_limit=20) as s:
                self.open(s.url, dark=dark)
                self.el("source-text").send_keys("Far too long for this server's limit")
                self.wait(lambda d: self.el("text-error").is_displayed(), "the limit message")
                self.assertEqual(self.in_pane("text-error"), "pane")
                self.assertEqual(self.el("status").text, "", "an error went to the header")
                ratios = self.assert_contrast("limit error, dark=%s" % dark, ["text-error", "char-count"])
                print("contrast (dark=%s): text-error %.2f, char-count %.2f" %
                      (dark, ratios["text-error"], ratios["char-count"]))
                Select(self.el("source-lang")).select_by_value("en")
                self.el("source-text").clear()
                # The server is gone: both the text and the file say so where they are.
                s.dead = True
                self.el("source-text").send_keys("Hello")
                self.wait(lambda d: "Cannot reach the server" in self.el("text-error").text, "the network error")
                path = os.path.join(self.tmp, "gone.txt")
                with open(path, "w") as f:
                    f.write("Hello.\n")
                self.el("file").send_keys(path)
                self.el("translate-file").click()
                self.wait(lambda d: "error" in self.el("file-status").get_attribute("class"), "the file error")
                self.assertIn("Cannot reach the server", self.el("file-status").text)
                self.assertEqual(self.in_pane("file-status"), "files")
                self.assert_contrast("network errors, dark=%s" % dark, ["text-error", "file-status"])
                self.screenshot("stand-in-errors%s.png" % ("-dark" if dark else ""))

    def test_long_text_alternatives_collapsed_and_keyboard(self):
        text = ("Two young people sit on a bench in the park and read a newspaper together. " * 50)[:3720]
        with StandIn(char_limit=5000) as s:
            self.open(s.url)
            Select(self.el("source-lang")).select_by_value("en")
            self.driver.execute_script("const t = document.getElementById('source-text'); t.value = arguments[0];"
                                       "t.dispatchEvent(new Event('input'));", text)
            self.wait(lambda d: self.el("translation").text.startswith("[de]"), "the translation")
            self.assertFalse(self.el("alt-box").get_property("open"), "alternatives of a long text are open")
            self.assertEqual(self.el("alt-summary").text, "2 alternatives")
            height = self.driver.execute_script("return document.documentElement.scrollHeight")
            print("page height with a 3,720-character text: %d px" % height)
            self.assertLess(height, 1500)
            self.screenshot("stand-in-long.png")
            # Keyboard only: from the translation, Tab reaches the alternatives, Enter opens
            # them, Tab reaches the first, Enter takes it.
            from selenium.webdriver.common.keys import Keys
            self.el("translation").click()
            active = lambda: self.driver.switch_to.active_element.get_attribute("id") or \
                self.driver.switch_to.active_element.text[:20]
            self.driver.switch_to.active_element.send_keys(Keys.TAB)
            self.assertEqual(active(), "alt-summary")
            self.driver.switch_to.active_element.send_keys(Keys.ENTER)
            self.wait(lambda d: self.el("alt-box").get_property("open"), "the alternatives opened")
            self.driver.switch_to.active_element.send_keys(Keys.TAB)
            self.assertEqual(self.driver.switch_to.active_element.get_attribute("class"), "alt")
            before = self.el("translation").text
            self.driver.switch_to.active_element.send_keys(Keys.ENTER)
            self.wait(lambda d: self.el("translation").text.startswith("alt 1:"), "the picked alternative")
            buttons = self.driver.find_elements(By.CSS_SELECTOR, "#alternatives button")
            self.assertEqual(buttons[0].get_attribute("title"), "Use this alternative")
            self.assertEqual(self.driver.execute_script(
                "return document.querySelector('#alternatives button').textContent"), before)
            self.assertEqual(self.driver.switch_to.active_element.get_attribute("class"), "alt")
        with StandIn() as s:  # a short text shows them open
            self.open(s.url)
            self.el("source-text").send_keys("Hi")
            self.wait(lambda d: self.el("alt-box").is_displayed(), "the alternatives")
            self.assertTrue(self.el("alt-box").get_property("open"))

    DROP_JS = """
        const dt = new DataTransfer();
        dt.items.add(new File([arguments[1]], arguments[0], {type: "text/plain"}));
        const zone = document.getElementById(arguments[2]);
        const ev = (t) => zone.dispatchEvent(new DragEvent(t, {bubbles: true, cancelable: true, dataTransfer: dt}));
        ev("dragenter"); ev("dragover");
        const shown = document.getElementById("files").classList.contains("dragging");
        const accepted = !ev("drop");  // the page took the drop (preventDefault)
        return [shown, accepted];
    """

    def test_drop_file(self):
        with StandIn() as s:
            self.open(s.url)
            Select(self.el("source-lang")).select_by_value("en")
            shown, accepted = self.driver.execute_script(self.DROP_JS, "dropped.txt", "Hello drop.\n", "source-text")
            self.assertTrue(shown, "no drop highlight on the file box")
            self.assertTrue(accepted, "the drop was left to the browser (it would open the file)")
            link = self.wait(lambda d: (not self.el("download").get_property("hidden")) and self.el("download"),
                             "the download link")
            self.assertEqual(link.get_attribute("download"), "dropped.de.txt")
            self.assertNotIn("dragging", self.el("files").get_attribute("class"))
            text = self.driver.execute_async_script(
                "const done = arguments[0]; fetch(document.getElementById('download').href)"
                ".then(r => r.text()).then(done, e => done('ERROR ' + e));")
            self.assertEqual(text, fake_translate("Hello drop.\n", "de"))
        with StandIn() as s:  # a file over the server's maxFileBytes is refused in the page
            s.settings["maxFileBytes"] = 8
            self.open(s.url)
            self.driver.execute_script(self.DROP_JS, "big.txt", "Hello, a bit too long.\n", "files")
            self.wait(lambda d: "error" in self.el("file-status").get_attribute("class"), "the size error")
            self.assertIn("at most 8 bytes", self.el("file-status").text)
            self.assertEqual(s.files, {}, "an over-limit file was uploaded")

    def test_detected_language_warning(self):
        with StandIn() as s:
            self.open(s.url)
            Select(self.el("target-lang")).select_by_value("de")
            self.el("source-text").send_keys("Hallo Welt")
            self.wait(lambda d: "German" in self.el("detected").text, "the detected language")
            self.wait(lambda d: self.el("detected-warning").is_displayed(), "the same-language warning")
            self.assertIn("already in German", self.el("detected-warning").text)
            self.assert_contrast("warning", ["detected-warning", "detected"])
            self.screenshot("stand-in-warning.png")
            Select(self.el("target-lang")).select_by_value("en")
            self.wait(lambda d: not self.el("detected-warning").is_displayed(), "the warning gone")

    def suggest_flow(self, better):
        self.wait(lambda d: self.el("suggest").is_displayed(), "the suggest button")
        self.el("suggest").click()
        box = self.el("suggest-text")
        self.assertTrue(box.is_displayed())
        self.assertEqual(box.get_property("value"), self.el("translation").text)
        self.assertEqual(self.driver.switch_to.active_element.get_attribute("id"), "suggest-text")
        box.clear()
        box.send_keys(better)
        self.el("suggest-send").click()
        self.wait(lambda d: self.el("suggest-status").is_displayed(), "the suggestion's answer")
        return self.el("suggest-status").text

    def test_suggest(self):
        with StandIn() as s:  # the server takes none: no button
            self.open(s.url)
            self.el("source-text").send_keys("Hi")
            self.wait(lambda d: self.el("translation").text.strip() or False, "the translation")
            self.assertFalse(self.el("suggest").is_displayed())
        with StandIn(suggestions=True) as s:
            self.open(s.url)
            self.el("source-text").send_keys("Hello")
            self.wait(lambda d: self.el("translation").text.strip() or False, "the translation")
            self.assertIn("Thank you", self.suggest_flow("Hallo!"))
            self.assertEqual(s.suggestions[-1], {"q": "Hello", "s": "Hallo!", "source": "en", "target": "de"})
            self.assertTrue(self.el("suggest").is_displayed(), "no second suggestion possible")
            self.assert_contrast("suggestion sent", ["suggest-status"])
        if self.real_url and self.real_log:
            self.open(self.real_url)
            Select(self.el("source-lang")).select_by_value("en")
            Select(self.el("target-lang")).select_by_value("de")
            self.el("source-text").send_keys("Two dogs play in the snow.")
            self.wait(lambda d: self.el("translation").text.strip() or False, "the translation")
            self.assertIn("Thank you", self.suggest_flow("Zwei Hunde spielen im Schnee."))
            self.wait(lambda d: "path=/suggest status=200" in open(self.real_log).read(), "/suggest in the log")

    def test_spec_link_favicon_dark(self):
        if not self.real_url:
            self.skipTest("no real server")
        self.open(self.real_url)
        link = self.el("spec-link")
        self.assertEqual(link.get_attribute("href"), self.real_url + "spec")
        spec = self.driver.execute_async_script(
            "const done = arguments[0]; fetch(document.getElementById('spec-link').href)"
            ".then(r => r.json()).then(j => done(j.openapi || 'none'), e => done('ERROR ' + e));")
        self.assertTrue(spec.startswith("3."), spec)
        icon = self.driver.execute_async_script(
            "const done = arguments[0]; const href = document.querySelector('link[rel=icon]').href;"
            "Promise.all([fetch(href), fetch('/favicon.ico')]).then(rs => done(rs.map(r => r.status + ' ' +"
            " r.headers.get('Content-Type'))), e => done(['ERROR ' + e]));")
        self.assertEqual(icon, ["200 image/svg+xml"] * 2)
        # Dark: the page follows prefers-color-scheme.
        self.open(self.real_url, dark=True)
        Select(self.el("source-lang")).select_by_value("en")
        Select(self.el("target-lang")).select_by_value("de")
        self.el("source-text").send_keys("A man is riding a bicycle.")
        self.wait(lambda d: self.el("translation").text.strip() or False, "the translation")
        self.wait(lambda d: self.el("alt-box").is_displayed(), "the alternatives")
        bg = self.driver.execute_script("return getComputedStyle(document.body).backgroundColor")
        self.assertEqual(bg, "rgb(18, 20, 23)", "no dark background")
        self.assert_contrast("dark", ["translation", "spec-link", "alt-summary"])
        self.screenshot("dark.png")
        self.driver.set_window_size(390, 844)
        self.assert_contrast("dark phone")
        self.screenshot("dark-phone.png")
        self.open(self.real_url)
        if self.real_log:  # every request the browser made was served: no 404 (favicon included)
            with open(self.real_log) as f:
                missing = [line for line in f if "event=access" in line and "status=404" in line]
            self.assertFalse(missing, "".join(missing))

    def test_api_key_field(self):
        with StandIn() as s:
            self.open(s.url)
            self.assertFalse(self.el("key-box").is_displayed())
        with StandIn(key_required=True) as s:
            self.open(s.url)
            self.assertTrue(self.el("key-box").is_displayed())
            self.el("api-key").send_keys("sekret")
            self.el("source-text").send_keys("Hi")
            self.wait(lambda d: self.el("translation").text.strip() or False, "the translation")
            self.assertEqual(s.requests[-1]["api_key"], "sekret")


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    from test_scripts import run_tests
    sys.exit(run_tests(__name__))
