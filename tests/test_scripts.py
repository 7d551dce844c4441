#!/usr/bin/python3
"""scripts/translate-file.sh and scripts/translate-dir.sh.

Against a stand-in server (Python, loopback): every line (empty, long, quotes,
backslashes, tabs, CR, non-ASCII, a last line without newline) goes to the server as one
JSON string and comes back in order, one output line per input line; 503 answers and
timeouts are retried through; a refused connection (nothing listening), a 502 or a 400
stops the script at once with a non-zero exit and the server's message; exhausted retries
and the retry time bound (-W) stop it too.

Every format (BatchFormats, against the stand-in, which also answers /languages,
/frontend/settings, /translate_file and /download_file): a directory of mixed files (text
with and without extension, HTML, SRT, DOCX, ODT in subdirectories, a PNG and a .md that
are reported as skipped by name, hidden files left out) comes out under the same names,
text through /translate with -b lines per request, the rest through /translate_file, the
API key on every request; translate-file.sh writes NAME.TGT.EXT, -o FILE/DIR/-, -n; a
wrong pair and a dead server create nothing; a server that dies mid-directory leaves no
partial file or empty directory; Ctrl-C typed on a pty (Python's pty module; the
terminal sends SIGINT to the foreground group) exits 130 and leaves no partial output,
no temporary directory (TMPDIR is checked empty) and no process behind, three times in a
row.

Against the real mt-server (a random model from tools/make_test_model.py): a few hundred
lines translate identically to mt-translate; a mixed directory keeps the HTML link, the
SRT timings and the DOCX paragraphs, and a pair the model does not serve is refused.

Also holds the helpers test_docker.py and test_quickstart.py use (free ports, servers,
HTTP). Env: MT_BUILD_DIR, MT_SOURCE_DIR, MT_SHARED_DIR. Prints "N passed, M failed";
exits non-zero on any failure.
"""
import email.parser
import email.policy
import gzip
import http.server
import json
import os
import pty
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.abspath(os.environ.get("MT_SOURCE_DIR", os.path.join(HERE, "..")))
BUILD = os.path.abspath(os.environ.get("MT_BUILD_DIR", os.path.join(SOURCE, "build")))
SHARED = os.path.abspath(os.environ.get("MT_SHARED_DIR", os.path.join(SOURCE, "..", "shared")))
SERVER = os.path.join(BUILD, "server", "mt-server")
CLI = os.path.join(BUILD, "cli", "mt-translate")
TRANSLATE_FILE = os.path.join(SOURCE, "scripts", "translate-file.sh")
TRANSLATE_DIR = os.path.join(SOURCE, "scripts", "translate-dir.sh")
PYTHON = "/usr/bin/python3"
MAX_LENGTH = "32"  # decoding steps, the same for server and CLI: keeps random models fast


# ----------------------------------------------------------------------------- helpers

def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_request(method, url, body=None, timeout=30, headers=None):
    """(status, headers, body bytes); HTTP errors are answers, not exceptions."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def wait_health(url, proc=None, timeout=120, log=None):
    """Waits for GET url/health to answer 200; fails if proc exits or time runs out."""
    deadline = time.monotonic() + timeout
    last = "no answer"
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise AssertionError("process exited with status %s before /health was ready%s"
                                 % (proc.returncode, log_tail(log)))
        try:
            status, _, body = http_request("GET", url + "/health", timeout=5)
            if status == 200:
                return
            last = "HTTP %d %s" % (status, body[:200])
        except OSError as e:
            last = str(e)
        time.sleep(0.3)
    raise AssertionError("%s/health not ready after %ds (%s)%s" % (url, timeout, last, log_tail(log)))


def log_tail(path, n=3000):
    if not path or not os.path.exists(path):
        return ""
    with open(path, "rb") as f:
        data = f.read()[-n:]
    return "\n--- %s (end) ---\n%s" % (path, data.decode("utf-8", "replace"))


def stop(proc, timeout=20):
    """SIGTERM the process (its whole group when it leads one), then SIGKILL."""
    if proc is None or proc.poll() is not None:
        return
    try:
        if os.getpgid(proc.pid) == proc.pid:
            os.killpg(proc.pid, signal.SIGTERM)
        else:
            proc.terminate()
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        try:
            if os.getpgid(proc.pid) == proc.pid:
                os.killpg(proc.pid, signal.SIGKILL)
            else:
                proc.kill()
        except ProcessLookupError:
            pass
        proc.wait(10)


def require_server():
    if not os.access(SERVER, os.X_OK):
        raise AssertionError("mt-server is not built: %s is missing (build with "
                             "scripts/build.sh, or ninja -C %s)" % (SERVER, BUILD))
    if not os.access(CLI, os.X_OK):
        raise AssertionError("mt-translate is not built: %s is missing" % CLI)


def start_server(model, port, log, extra=()):
    """Starts mt-server on 127.0.0.1:port in its own process group; returns the Popen."""
    require_server()
    args = [SERVER, "--model", model, "--host", "127.0.0.1", "--port", str(port),
            "--workers", "2", "--max-length", MAX_LENGTH] + list(extra)
    out = open(log, "ab")
    proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True)
    out.close()
    try:
        wait_health("http://127.0.0.1:%d" % port, proc, timeout=180, log=log)
    except BaseException:
        stop(proc)
        raise
    return proc


_model_cache = {}


def test_model(tmp_root, seed=7):
    """A small random model from tools/make_test_model.py (made once per process)."""
    if seed in _model_cache and os.path.exists(_model_cache[seed]):
        return _model_cache[seed]
    out = os.path.join(tmp_root, "model-%d" % seed)
    r = subprocess.run([PYTHON, os.path.join(SOURCE, "tools", "make_test_model.py"), out,
                        "--seed", str(seed), "--eos-bias", "3", "--shared-dir", SHARED],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise AssertionError("make_test_model.py failed:\n" + r.stdout[-2000:] + r.stderr[-2000:])
    _model_cache[seed] = out
    return out


def cli_translate(model, text_bytes):
    require_server()
    r = subprocess.run([CLI, "--model", model, "--max-length", MAX_LENGTH], input=text_bytes,
                       capture_output=True, timeout=600)
    if r.returncode != 0:
        raise AssertionError("mt-translate failed: " + r.stderr.decode("utf-8", "replace")[-2000:])
    return r.stdout


def sample_lines(n, seed=1):
    """n varied lines: Multi30k sentences, empty lines, quotes, backslashes, tabs, CR, long
    lines, several sentences, non-ASCII."""
    import random
    rnd = random.Random(seed)
    path = os.path.join(SHARED, "data", "multi30k", "val.en.gz")
    if os.path.exists(path):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            base = [line.rstrip("\n") for line in f][:400]
    else:
        base = ["A man in a blue shirt is riding a bike.", "Two dogs play in the park."]
    specials = [
        "", "", "   ", "\t", 'He said "hello" and left.', "A back\\slash and a \\n that is not a newline.",
        "tab\tseparated\tcolumns", "  leading and trailing spaces  ", "Carriage return at the end\r",
        "Über den Wolken: café, naïve, Ærø, Straße.", "日本語のテキストです。", "Emoji 🙂 and ünïcödé — dashes…",
        "{\"json\": [1, 2, 3]} and 'single quotes'", "$HOME `backticks` $(not a command) %s %d",
        "Dr. Smith arrived at 3 p.m. He was late. Was he tired? Yes!",
    ]
    lines = []
    for i in range(n):
        r = rnd.random()
        if r < 0.15:
            lines.append(rnd.choice(specials))
        elif r < 0.2:
            lines.append(" ".join(rnd.choice(base) for _ in range(rnd.randint(6, 15))))  # long
        else:
            lines.append(rnd.choice(base))
    return lines


# ------------------------------------------------------------------ stand-in server

STUB_LANGUAGES = [{"code": "en", "name": "English", "targets": ["de", "fr"]},
                  {"code": "de", "name": "German", "targets": ["en"]}]
STUB_FORMATS = [".txt", ".html", ".htm", ".srt", ".docx", ".odt"]


def stub_file_translation(data, target):
    """What the stand-in's /translate_file makes of a file."""
    return ("[%s]" % target).encode() + data


class Stub:
    """A loopback HTTP server standing in for mt-server. Answers POST /translate with
    "[" + text + "]" for every text; `fail_first` requests get 503 + Retry-After: 1;
    `reject(req)` may return a message to answer 400 with; the first `slow_first`
    requests are answered after `slow_seconds`. GET /languages and /frontend/settings
    answer in LibreTranslate's shapes; POST /translate_file takes a multipart upload
    (recorded in `uploads`) and GET /download_file/ID answers 202 once, then
    stub_file_translation(). `hold` (a threading.Event): /translate and /download_file
    wait for it to be set, answering nothing meanwhile (202 for downloads)."""

    def __init__(self, port=None, fail_first=0, always_503=False, reject=None, status=400,
                 slow_first=0, slow_seconds=0, hold=None, hold_text=b"BLOCK"):
        self.port = port or free_port()
        self.hold, self.hold_text = hold, hold_text
        self.uploads, self.files, self.gets = [], {}, []
        self.slow_first, self.slow_seconds = slow_first, slow_seconds
        self.fail_first, self.always_503, self.reject, self.status = fail_first, always_503, reject, status
        self.requests = []  # (headers, body) of every POST
        self.lock = threading.Lock()
        stub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def answer(self, status, obj, extra=()):
                data = json.dumps(obj, ensure_ascii=False).encode()
                self.send_response(status)
                for k, v in extra:
                    self.send_header(k, v)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (its -T timeout): expected in test_retries_timeouts

            def do_GET(self):
                path = self.path.split("?")[0]
                with stub.lock:
                    stub.gets.append((dict(self.headers), path))
                if path == "/languages":
                    return self.answer(200, STUB_LANGUAGES)
                if path == "/frontend/settings":
                    return self.answer(200, {"charLimit": 5000, "filesTranslation": True,
                                             "supportedFilesFormat": STUB_FORMATS})
                if path.startswith("/download_file/"):
                    with stub.lock:
                        entry = stub.files.get(path.rsplit("/", 1)[1])
                        if entry is not None:
                            entry["polls"] += 1
                    if entry is None:
                        return self.answer(404, {"error": "no such file"})
                    if entry["polls"] == 1 or (stub.hold is not None and not stub.hold.is_set()):
                        return self.answer(202, {"status": "running", "done": 0, "total": 2},
                                           [("Retry-After", "1")])
                    data = stub_file_translation(entry["data"], entry["target"])
                    self.send_response(200)
                    self.send_header("Content-Type", "application/octet-stream")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                self.answer(200, {"status": "ok"})

            def translate_file(self, body):
                msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
                    b"Content-Type: " + self.headers["Content-Type"].encode() + b"\r\n\r\n" + body)
                fields, upload = {}, None
                for part in msg.iter_parts():
                    if part.get_filename():
                        upload = (part.get_filename(), part.get_payload(decode=True))
                    else:
                        fields[part.get_param("name", header="content-disposition")] = part.get_content()
                with stub.lock:
                    stub.uploads.append({"headers": dict(self.headers), "fields": fields,
                                         "filename": upload and upload[0], "data": upload and upload[1]})
                if not upload:
                    return self.answer(400, {"error": "Invalid request: missing file parameter"})
                fid = uuid.uuid4().hex
                with stub.lock:
                    stub.files[fid] = {"data": upload[1], "target": fields.get("target"), "polls": 0}
                # the Host the client used: the script must not depend on it
                self.answer(200, {"translatedFileUrl": "http://elsewhere.invalid/download_file/" + fid})

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.path.split("?")[0] == "/translate_file":
                    return self.translate_file(body)
                with stub.lock:
                    stub.requests.append((dict(self.headers), body))
                    count = len(stub.requests)
                if stub.hold is not None and stub.hold_text in body:
                    stub.hold.wait()
                if count <= stub.slow_first:
                    time.sleep(stub.slow_seconds)  # longer than the client's -T
                if stub.always_503 or count <= stub.fail_first:
                    return self.answer(503, {"error": "server busy: queue full"}, [("Retry-After", "1")])
                try:
                    req = json.loads(body)
                except ValueError as e:
                    return self.answer(400, {"error": "invalid JSON: %s" % e})
                if stub.reject:
                    message = stub.reject(req)
                    if message:
                        return self.answer(stub.status, {"error": message})
                texts = req["text"]
                self.answer(200, {"translations": ["[" + t + "]" for t in texts],
                                  "source": req.get("source"), "target": req.get("target")})

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
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
        return "http://127.0.0.1:%d" % self.port


def write_lines(path, lines, final_newline=True):
    data = "\n".join(lines) + ("\n" if final_newline and lines else "")
    with open(path, "wb") as f:
        f.write(data.encode("utf-8"))


def run_script(args, timeout=300, **kw):
    return subprocess.run(["bash"] + args, capture_output=True, timeout=timeout, **kw)


# ----------------------------------------------------------------------------- tests

class ScriptLint(unittest.TestCase):
    @staticmethod
    def shell_scripts():
        """Every shell script of the source tree (*.sh and .ci/run), build and run outputs aside."""
        found = [os.path.join(SOURCE, ".ci", "run")]
        for top, dirs, files in os.walk(SOURCE):
            dirs[:] = [d for d in dirs if not d.startswith((".", "build", "runs", "node_modules", "__pycache__"))]
            found += [os.path.join(top, f) for f in files if f.endswith(".sh")]
        return sorted(found)

    def test_shellcheck(self):
        if not shutil.which("shellcheck"):
            self.skipTest("shellcheck is not installed")
        scripts = self.shell_scripts()
        names = {os.path.relpath(s, SOURCE) for s in scripts}
        for must in ("scripts/run-tests.sh", "scripts/fuzz-long.sh", "scripts/install-deps.sh",
                     "tools/train_cpu.sh", "tools/train_gpu.sh", "docker/entrypoint.sh", ".ci/run"):
            self.assertIn(must, names)
        r = subprocess.run(["shellcheck"] + scripts, capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_usage_errors(self):
        for args in ([], ["-s", "en", "x"], ["-t", "de", "x"], ["-s", "en", "-t", "de"],
                     ["-s", "en", "-t", "de", "-j", "0", "/dev/null"],
                     ["-s", "en", "-t", "de", "/nonexistent/file"]):
            r = run_script([TRANSLATE_FILE] + args, timeout=30)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertIn(b"translate-file", r.stderr)
        r = run_script([TRANSLATE_FILE, "-h"], timeout=30)
        self.assertEqual(r.returncode, 0)
        self.assertIn(b"usage", r.stdout)


class TranslateFileStub(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="test_scripts.")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.tmp, name)

    def expected(self, lines):
        return "".join("[" + line + "]\n" for line in lines).encode("utf-8")

    def test_round_trip_in_order(self):
        lines = sample_lines(300, seed=2)
        lines += ["x" * 5000, "", "the last line has no newline \\ \"q\""]
        src = self.path("roundtrip.txt")
        write_lines(src, lines, final_newline=False)
        with Stub() as stub:
            r = run_script([TRANSLATE_FILE, "-s", "en", "-t", "de", "-u", stub.url, "-j", "4", "-b", "7", src])
        self.assertEqual(r.returncode, 0, r.stderr.decode("utf-8", "replace")[-2000:])
        self.assertEqual(r.stdout, self.expected(lines))
        self.assertEqual(len(stub.requests), (len(lines) + 6) // 7)
        for headers, body in stub.requests:
            req = json.loads(body)
            self.assertEqual((req["source"], req["target"]), ("en", "de"))
            self.assertIsInstance(req["text"], list)
            self.assertEqual(headers.get("Content-Type"), "application/json")
        # progress on stderr: lines done / total and a rate
        self.assertRegex(r.stderr.decode(), r"%d/%d lines \(100%%\), [0-9.]+ lines/s" % (len(lines), len(lines)))

    def test_stdin_url_with_path_and_quiet(self):
        lines = ["one", "", "three"]
        with Stub() as stub:
            r = run_script([TRANSLATE_FILE, "-q", "-s", "en", "-t", "de", "-u", stub.url + "/translate/", "-"],
                           input="one\n\nthree\n".encode())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, self.expected(lines))
        self.assertEqual(r.stderr, b"")

    def test_empty_file(self):
        src = self.path("empty.txt")
        write_lines(src, [])
        with Stub() as stub:
            r = run_script([TRANSLATE_FILE, "-s", "en", "-t", "de", "-u", stub.url, src])
        self.assertEqual((r.returncode, r.stdout, len(stub.requests)), (0, b"", 0), r.stderr)

    def test_retries_503(self):
        lines = ["line %d" % i for i in range(40)]
        src = self.path("busy.txt")
        write_lines(src, lines)
        with Stub(fail_first=6) as stub:
            t0 = time.monotonic()
            r = run_script([TRANSLATE_FILE, "-s", "en", "-t", "de", "-u", stub.url, "-j", "3", "-b", "5", src])
            took = time.monotonic() - t0
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, self.expected(lines))
        self.assertEqual(len(stub.requests), 8 + 6)
        self.assertIn(b"HTTP 503", r.stderr)
        self.assertGreaterEqual(took, 1.0, "Retry-After: 1 was not honoured")

    def test_nothing_listening_fails_at_once(self):
        """A server that is down: one refused connection ends the run (no retries, no
        backoff), with a message that says so."""
        src = self.path("refused.txt")
        write_lines(src, ["early %d" % i for i in range(10)])
        port = free_port()
        r = run_script([TRANSLATE_FILE, "-s", "en", "-t", "de", "-u", "http://127.0.0.1:%d" % port,
                        "-b", "4", src], timeout=60)
        err = r.stderr.decode()
        self.assertEqual(r.returncode, 1, err)
        self.assertIn("nothing listens at http://127.0.0.1:%d" % port, err)
        self.assertNotIn("retry", err)
        self.assertEqual(r.stdout, b"")

    def test_retries_timeouts(self):
        """A request that times out (-T) is retried, and the run completes."""
        lines = ["slow %d" % i for i in range(6)]
        src = self.path("slow.txt")
        write_lines(src, lines)
        with Stub(slow_first=1, slow_seconds=4) as stub:
            r = run_script([TRANSLATE_FILE, "-s", "en", "-t", "de", "-u", stub.url, "-j", "1",
                            "-b", "6", "-T", "1", src], timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, self.expected(lines))
        self.assertIn(b"timeout", r.stderr)
        self.assertEqual(len(stub.requests), 2)

    def test_502_not_retried(self):
        src = self.path("bad_gateway.txt")
        write_lines(src, ["a", "b"])
        with Stub(reject=lambda req: "bad gateway", status=502) as stub:
            r = run_script([TRANSLATE_FILE, "-s", "en", "-t", "de", "-u", stub.url, src], timeout=60)
        self.assertEqual(r.returncode, 1)
        self.assertIn(b"HTTP 502", r.stderr)
        self.assertEqual(len(stub.requests), 1)

    def test_retry_time_is_bounded(self):
        """-W bounds how long a request is retried whatever -r allows: with Retry-After: 1
        and -W 2, a server that stays busy is given up on after a few tries, not 100."""
        src = self.path("busy_forever.txt")
        write_lines(src, ["a", "b"])
        with Stub(always_503=True) as stub:
            r = run_script([TRANSLATE_FILE, "-s", "en", "-t", "de", "-u", stub.url, "-r", "100",
                            "-W", "2", src], timeout=120)
        self.assertEqual(r.returncode, 1)
        self.assertIn(b"of retries (-W)", r.stderr)
        self.assertLessEqual(len(stub.requests), 4)
        self.assertIn(b"HTTP 503, retry 1/100", r.stderr)  # progress of the retries is shown

    def test_400_stops_with_message(self):
        lines = ["fine %d" % i for i in range(60)] + ["BAD LINE"] + ["fine"] * 60
        src = self.path("bad.txt")
        write_lines(src, lines)
        message = "text 3 is not acceptable: unsupported language pair en->xx"
        with Stub(reject=lambda req: message if "BAD LINE" in req["text"] else None) as stub:
            t0 = time.monotonic()
            r = run_script([TRANSLATE_FILE, "-s", "en", "-t", "de", "-u", stub.url, "-j", "2", "-b", "10", src])
            took = time.monotonic() - t0
            bad_requests = [b for _, b in stub.requests if b"BAD LINE" in b]
        self.assertNotEqual(r.returncode, 0)
        err = r.stderr.decode()
        self.assertIn(message, err)
        self.assertIn("HTTP 400", err)
        self.assertIn("lines 61-70", err)
        self.assertEqual(len(bad_requests), 1, "a 400 must not be retried")
        self.assertLess(took, 60)
        # what was printed is a prefix of the correct output, in order
        self.assertTrue(self.expected(lines).startswith(r.stdout))
        self.assertLess(len(stub.requests), 12, "kept sending after the 400")

    def test_4xx_on_every_chunk_stops_fast(self):
        src = self.path("lang.txt")
        write_lines(src, ["a", "b", "c"] * 30)
        # /languages lists en->fr, /translate refuses it: the first refusal stops the run
        with Stub(reject=lambda req: "no model translates en -> fr" if req["target"] == "fr" else None) as stub:
            r = run_script([TRANSLATE_FILE, "-s", "en", "-t", "fr", "-u", stub.url, "-j", "3", "-b", "3", src],
                           timeout=60)
        self.assertEqual(r.returncode, 1)
        self.assertIn(b"no model translates en -> fr", r.stderr)
        self.assertLessEqual(len(stub.requests), 3)

    def test_413_hint(self):
        src = self.path("big.txt")
        write_lines(src, ["a"] * 10)
        with Stub(reject=lambda req: "too many texts: 10 (limit 4)", status=413) as stub:
            r = run_script([TRANSLATE_FILE, "-s", "en", "-t", "de", "-u", stub.url, "-b", "10", src])
        self.assertEqual(r.returncode, 1)
        self.assertIn(b"too many texts", r.stderr)
        self.assertIn(b"lower -b", r.stderr)

    def test_gives_up_after_retries(self):
        src = self.path("down.txt")
        write_lines(src, ["a", "b"])
        with Stub(always_503=True) as stub:
            r = run_script([TRANSLATE_FILE, "-s", "en", "-t", "de", "-u", stub.url, "-r", "2", src], timeout=60)
        self.assertEqual(r.returncode, 1)
        self.assertIn(b"giving up after 2 retries", r.stderr)
        self.assertEqual(len(stub.requests), 3)

    def test_api_key(self):
        src = self.path("key.txt")
        write_lines(src, ["a"])
        with Stub() as stub:
            r = run_script([TRANSLATE_FILE, "-s", "en", "-t", "de", "-u", stub.url, "-k", "s3cret", src])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(stub.requests[0][0].get("Authorization"), "Bearer s3cret")

    def test_translate_dir(self):
        d = self.path("docs")
        os.makedirs(d)
        write_lines(os.path.join(d, "a.txt"), ["one", "", "two"])
        write_lines(os.path.join(d, "b c.txt"), ['say "hi"\tnow'])
        write_lines(os.path.join(d, "notes.md"), ["not translated"])
        with Stub() as stub:
            r = run_script([TRANSLATE_DIR, "-s", "en", "-t", "de", "-u", stub.url, d])
            self.assertEqual(r.returncode, 0, r.stderr)
            out = d + ".de"
            self.assertEqual(sorted(os.listdir(out)), ["a.txt", "b c.txt"])
            with open(os.path.join(out, "a.txt"), "rb") as f:
                self.assertEqual(f.read(), self.expected(["one", "", "two"]))
            with open(os.path.join(out, "b c.txt"), "rb") as f:
                self.assertEqual(f.read(), self.expected(['say "hi"\tnow']))
            n = len(stub.requests)
            r = run_script([TRANSLATE_DIR, "-s", "en", "-t", "de", "-u", stub.url, d])
            self.assertEqual((r.returncode, len(stub.requests)), (0, n), "up-to-date files were redone")
            self.assertIn(b"up to date", r.stderr)
            r = run_script([TRANSLATE_DIR, "-f", "-q", "-s", "en", "-t", "de", "-u", stub.url, "-o",
                            self.path("elsewhere"), d])
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(sorted(os.listdir(self.path("elsewhere"))), ["a.txt", "b c.txt"])

    def test_translate_dir_stops_on_failure(self):
        d = self.path("docs2")
        os.makedirs(d)
        write_lines(os.path.join(d, "1.txt"), ["ok"])
        write_lines(os.path.join(d, "2.txt"), ["BAD LINE"])
        write_lines(os.path.join(d, "3.txt"), ["ok"])
        with Stub(reject=lambda req: "rejected" if "BAD LINE" in req["text"] else None) as stub:
            r = run_script([TRANSLATE_DIR, "-s", "en", "-t", "de", "-u", stub.url, d])
        self.assertEqual(r.returncode, 1)
        self.assertIn(b"2.txt failed", r.stderr)
        self.assertEqual(os.listdir(d + ".de"), ["1.txt"], "partial or later outputs left behind")


def leftover_processes(needle):
    """Processes whose command line contains needle (e.g. a stand-in's port)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().replace(b"\0", b" ")
        except OSError:
            continue
        if needle.encode() in cmd:
            found.append("%s: %s" % (pid, cmd.decode("utf-8", "replace")))
    return found


def wait_for(cond, what, timeout=60):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.05)


def run_interrupted(args, env, ready, timeout=60):
    """Runs `bash args` on a new pty (its own session, the pty its controlling terminal, as
    in a terminal window); once ready() holds, types Ctrl-C, which the terminal sends to
    the foreground process group as SIGINT. Returns (exit code, output)."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: nothing but exec
        try:
            os.execve("/bin/bash", ["bash"] + args, env)
        finally:
            os._exit(127)
    out = bytearray()

    def drain():
        while True:
            try:
                data = os.read(fd, 4096)
            except OSError:
                return
            if not data:
                return
            out.extend(data)
    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    status = None
    try:
        deadline = time.monotonic() + timeout
        while not ready():
            done, st = os.waitpid(pid, os.WNOHANG)
            if done:
                status = st
                raise AssertionError("exited (%s) before it could be interrupted:\n%s"
                                     % (os.waitstatus_to_exitcode(st), out.decode("utf-8", "replace")))
            if time.monotonic() > deadline:
                raise AssertionError("not ready to interrupt after %ds:\n%s" % (timeout, out.decode("utf-8", "replace")))
            time.sleep(0.05)
        os.write(fd, b"\x03")
        deadline = time.monotonic() + 30
        while status is None:
            done, st = os.waitpid(pid, os.WNOHANG)
            if done:
                status = st
            elif time.monotonic() > deadline:
                raise AssertionError("still running 30 s after Ctrl-C:\n" + out.decode("utf-8", "replace"))
            else:
                time.sleep(0.05)
    finally:
        if status is None:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(pid, 0)
        reader.join(10)
        os.close(fd)
    return os.waitstatus_to_exitcode(status), bytes(out).decode("utf-8", "replace")


class BatchFormats(unittest.TestCase):
    """translate-file.sh and translate-dir.sh on every format, against the stand-in."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="test_batch.")
        self.scratch = os.path.join(self.tmp, "scratch")  # the scripts' TMPDIR: must end empty
        os.mkdir(self.scratch)
        self.env = dict(os.environ, TMPDIR=self.scratch, MT_URL="http://127.0.0.1:1")
        self.env.pop("MT_API_KEY", None)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def path(self, *parts):
        return os.path.join(self.tmp, *parts)

    def run_ok(self, args, code=0):
        r = run_script(args, env=self.env, timeout=120)
        self.assertEqual(r.returncode, code, r.stderr.decode("utf-8", "replace")[-3000:])
        return r

    def assert_clean(self, stub_url=None):
        self.assertEqual(os.listdir(self.scratch), [], "temporary files left behind")
        if stub_url:
            self.assertEqual(leftover_processes(stub_url), [], "processes left behind")

    def mixed_dir(self):
        d = self.path("docs")
        files = {
            "a.txt": b"one\n\ntwo\nthree\nfour\n",
            "50% off \u2013 Gr\u00fc\u00dfe.txt": b"Hello.\n",
            "noext": b"plain\n",
            "sub/page.html": b"<p>Our <a href=\"https://example.org\">website</a></p>\n",
            "sub/deeper/film.srt": b"1\n00:00:01,000 --> 00:00:02,000\nHello.\n\n",
            "report.DOCX": b"PK\x03\x04 not really a docx, the stand-in does not care \x00\xff",
            "book.odt": b"PK\x03\x04 odt \x00\x01",
            "picture.png": b"\x89PNG",
            "notes.md": b"# not a format the server takes\n",
            ".hidden.txt": b"secret\n",
            ".git/config.txt": b"not this either\n",
        }
        for rel, data in files.items():
            os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
            with open(os.path.join(d, rel), "wb") as f:
                f.write(data)
        return d, files

    def test_mixed_directory(self):
        d, files = self.mixed_dir()
        with Stub() as stub:
            r = self.run_ok([TRANSLATE_DIR, "-s", "en", "-t", "de", "-u", stub.url, "-j", "3", "-b", "2",
                             "-W", "30", "-T", "60", "-k", "s3cret", d])
            err = r.stderr.decode("utf-8", "replace")
            out = d + ".de"
            got = sorted(os.path.relpath(os.path.join(root, f), out) for root, _, fs in os.walk(out) for f in fs)
            want = sorted(k for k in files if not k.startswith(".") and not k.endswith((".png", ".md")))
            self.assertEqual(got, want, err)
            for rel in want:
                with open(os.path.join(out, rel), "rb") as f:
                    data = f.read()
                if rel.endswith(".txt") or rel == "noext":  # through /translate, line by line
                    lines = files[rel].decode().split("\n")[:-1]
                    self.assertEqual(data, "".join("[%s]\n" % x for x in lines).encode(), rel)
                else:  # whole, through /translate_file
                    self.assertEqual(data, stub_file_translation(files[rel], "de"), rel)
            for rel in ("picture.png", "notes.md"):
                self.assertIn("skipped %s" % rel, err)
            self.assertNotIn("hidden", err)
            self.assertNotIn("config", err)
            # /translate: -b 2 lines per request, the key as a header; /translate_file: one
            # upload per file with source, target and the key, never the local name.
            texts = [json.loads(b)["text"] for _, b in stub.requests]
            self.assertTrue(all(len(t) <= 2 for t in texts), texts)
            self.assertIn(["one", ""], texts)
            self.assertTrue(all(h.get("Authorization") == "Bearer s3cret" for h, _ in stub.requests))
            self.assertEqual(sorted(u["filename"] for u in stub.uploads),
                             ["upload.docx", "upload.html", "upload.odt", "upload.srt"])
            for u in stub.uploads:
                self.assertEqual((u["fields"].get("source"), u["fields"].get("target")), ("en", "de"))
                self.assertEqual(u["headers"].get("Authorization"), "Bearer s3cret")
            self.assertTrue(all(h.get("Authorization") == "Bearer s3cret" for h, _ in stub.gets))
            # again: everything is up to date
            n, m = len(stub.requests), len(stub.uploads)
            r = self.run_ok([TRANSLATE_DIR, "-s", "en", "-t", "de", "-u", stub.url, d])
            self.assertEqual((len(stub.requests), len(stub.uploads)), (n, m))
            self.assertIn(b"0 translated, 7 up to date, 2 skipped", r.stderr)
            self.assert_clean(stub.url)

    def test_translate_file_names(self):
        d, files = self.mixed_dir()
        with Stub() as stub:
            u = ["-s", "en", "-t", "de", "-u", stub.url, "-q"]
            # other formats: NAME.TGT.EXT beside the input
            self.run_ok([TRANSLATE_FILE] + u + [os.path.join(d, "sub", "page.html")])
            with open(os.path.join(d, "sub", "page.de.html"), "rb") as f:
                self.assertEqual(f.read(), stub_file_translation(files["sub/page.html"], "de"))
            # -o -: stdout; -o DIR: the same name inside it; -o FILE
            r = self.run_ok([TRANSLATE_FILE] + u + ["-o", "-", os.path.join(d, "book.odt")])
            self.assertEqual(r.stdout, stub_file_translation(files["book.odt"], "de"))
            os.mkdir(self.path("out"))
            self.run_ok([TRANSLATE_FILE] + u + ["-o", self.path("out"), os.path.join(d, "report.DOCX")])
            self.run_ok([TRANSLATE_FILE] + u + ["-o", self.path("out", "x.srt"), os.path.join(d, "sub/deeper/film.srt")])
            self.assertEqual(sorted(os.listdir(self.path("out"))), ["report.DOCX", "x.srt"])
            # plain text: stdout by default (INPUT > OUTPUT), -n beside the input
            r = self.run_ok([TRANSLATE_FILE] + u + [os.path.join(d, "a.txt")])
            self.assertEqual(r.stdout, b"[one]\n[]\n[two]\n[three]\n[four]\n")
            self.run_ok([TRANSLATE_FILE] + u + ["-n", os.path.join(d, "a.txt")])
            with open(os.path.join(d, "a.de.txt"), "rb") as f:
                self.assertEqual(f.read(), r.stdout)
            # a format the server does not take: refused, nothing written
            before = sorted(os.listdir(d))
            r = self.run_ok([TRANSLATE_FILE] + u + [os.path.join(d, "picture.png")], code=2)
            self.assertIn(b".png is not a format", r.stderr)
            self.assertEqual(sorted(os.listdir(d)), before)
            self.assert_clean(stub.url)

    def test_wrong_pair_creates_nothing(self):
        d, _ = self.mixed_dir()
        with Stub() as stub:
            for src, tgt, words in (("en", "xx", b"from 'en' into 'xx'"), ("xx", "de", b"no model from 'xx'"),
                                    ("auto", "xx", b"no model into 'xx'")):
                r = self.run_ok([TRANSLATE_DIR, "-s", src, "-t", tgt, "-u", stub.url, d], code=2)
                self.assertIn(words, r.stderr)
                self.assertIn(b"en->de en->fr de->en", r.stderr)
                self.assertFalse(os.path.exists(d + "." + tgt), "an empty output directory was created")
                r = self.run_ok([TRANSLATE_FILE, "-s", src, "-t", tgt, "-u", stub.url, "-o", self.path("x.docx"),
                                 os.path.join(d, "report.DOCX")], code=2)
                self.assertFalse(os.path.exists(self.path("x.docx")))
            self.assertEqual((stub.requests, stub.uploads), ([], []), "something was sent to translate")
            self.assert_clean(stub.url)

    def test_dead_server(self):
        d, _ = self.mixed_dir()
        dead = "http://127.0.0.1:%d" % free_port()
        r = self.run_ok([TRANSLATE_DIR, "-s", "en", "-t", "de", "-u", dead, d], code=1)
        self.assertIn(b"nothing listens at " + dead.encode(), r.stderr)
        self.assertFalse(os.path.exists(d + ".de"))
        r = self.run_ok([TRANSLATE_FILE, "-s", "en", "-t", "de", "-u", dead, os.path.join(d, "book.odt")], code=1)
        self.assertIn(b"nothing listens", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(d, "book.de.odt")))
        self.assert_clean()

    def test_server_dies_mid_directory(self):
        """The server goes away after the first file: stop, keep the finished file, leave
        no partial one and no directory this run made empty."""
        d, _ = self.mixed_dir()
        with Stub() as stub:
            port = stub.port
            stop_after = threading.Event()
            orig = stub.server.RequestHandlerClass.do_POST

            def do_post(handler):
                if stop_after.is_set():
                    handler.close_connection = True
                    handler.connection.shutdown(socket.SHUT_RDWR)
                    return
                orig(handler)
                if handler.path == "/translate_file":
                    stop_after.set()  # the first file upload is the last answered request
            stub.server.RequestHandlerClass.do_POST = do_post
            r = self.run_ok([TRANSLATE_DIR, "-s", "en", "-t", "de", "-u", stub.url, d], code=1)
        err = r.stderr.decode("utf-8", "replace")
        self.assertIn("failed; stopping", err)
        out = d + ".de"
        left = sorted(os.path.relpath(os.path.join(root, f), out) for root, _, fs in os.walk(out) for f in fs)
        self.assertFalse([x for x in left if os.path.basename(x).startswith(".")], left)
        dirs = sorted(os.path.relpath(os.path.join(root, x), out) for root, ds, _ in os.walk(out) for x in ds)
        for x in dirs:
            self.assertTrue(os.listdir(os.path.join(out, x)), "empty directory %s left behind" % x)
        self.assert_clean("127.0.0.1:%d" % port)

    def interrupt(self, args, stub, ready):
        code, out = run_interrupted(args, self.env, ready)
        self.assertEqual(code, 130, out)
        self.assert_clean(stub.url)
        return out

    def test_interrupt_text(self):
        d = self.path("t")
        os.makedirs(d)
        write_lines(os.path.join(d, "1.txt"), ["first"])
        write_lines(os.path.join(d, "2.txt"), ["x%d" % i for i in range(20)] + ["BLOCK"])
        for attempt in range(3):  # it once exited 1 and left its directory in one of three tries
            hold = threading.Event()
            with Stub(hold=hold) as stub:
                try:
                    self.interrupt([TRANSLATE_DIR, "-s", "en", "-t", "de", "-u", stub.url, "-j", "4", "-b", "3", d],
                                   stub, lambda: any(b"BLOCK" in b for _, b in stub.requests))
                finally:
                    hold.set()
            self.assertEqual(sorted(os.listdir(d + ".de")), ["1.txt"], "a partial file was left")
            shutil.rmtree(d + ".de")
        hold = threading.Event()
        with Stub(hold=hold) as stub:
            try:
                self.interrupt([TRANSLATE_FILE, "-s", "en", "-t", "de", "-u", stub.url, "-b", "2", "-o",
                                self.path("out.txt"), os.path.join(d, "2.txt")],
                               stub, lambda: any(b"BLOCK" in b for _, b in stub.requests))
            finally:
                hold.set()
        self.assertEqual(sorted(os.listdir(self.tmp)), ["scratch", "t"], "a partial output was left")

    def test_interrupt_waits_for_its_curls(self):
        """Ctrl-C: the script exits only once every curl it started is gone, not just sent
        a TERM. A curl that takes a second to die (a stand-in in PATH that, on TERM, or on
        the HUP the terminal sends when the script, its session leader, exits, waits, then
        stops the real curl) must not outlive it; the old script exited at once and left it
        running (on a loaded machine the real curl did the same, now and then: a signal is
        only sent, and the suite looked before curl had died of it)."""
        shim_dir = self.path("shim")
        os.makedirs(shim_dir)
        real = shutil.which("curl")
        with open(os.path.join(shim_dir, "curl"), "w") as f:
            f.write("#!/bin/bash\n"
                    "trap 'sleep 1; kill $c 2>/dev/null; wait $c; exit 143' TERM HUP\n"
                    "%s \"$@\" &\nc=$!\nwait $c\n" % real)
        os.chmod(os.path.join(shim_dir, "curl"), 0o755)
        d = self.path("t")
        os.makedirs(d)
        write_lines(os.path.join(d, "2.txt"), ["x%d" % i for i in range(20)] + ["BLOCK"])
        hold = threading.Event()
        env = dict(self.env, PATH=shim_dir + os.pathsep + self.env["PATH"])
        with Stub(hold=hold) as stub:
            try:
                code, out = run_interrupted([TRANSLATE_FILE, "-s", "en", "-t", "de", "-u", stub.url, "-b", "2",
                                             "-o", self.path("out.txt"), os.path.join(d, "2.txt")],
                                            env, lambda: any(b"BLOCK" in b for _, b in stub.requests))
                self.assertEqual(code, 130, out)
                self.assert_clean(stub.url)
            finally:
                hold.set()

    def test_interrupt_file(self):
        d = self.path("f")
        os.makedirs(os.path.join(d, "sub"))
        write_lines(os.path.join(d, "1.txt"), ["first"])
        with open(os.path.join(d, "sub", "2.docx"), "wb") as f:
            f.write(b"PK not really")
        hold = threading.Event()
        with Stub(hold=hold) as stub:
            def polling():
                with stub.lock:
                    return any(e["polls"] >= 2 for e in stub.files.values())
            try:
                self.interrupt([TRANSLATE_DIR, "-s", "en", "-t", "de", "-u", stub.url, d], stub, polling)
            finally:
                hold.set()
        self.assertEqual(os.listdir(d + ".de"), ["1.txt"], "a partial file or an empty directory was left")

    def test_options_and_help(self):
        for script in (TRANSLATE_FILE, TRANSLATE_DIR):
            r = run_script([script, "-h"], timeout=30)
            self.assertEqual(r.returncode, 0)
            for opt in (b"-W SEC", b"-k KEY", b"-j JOBS", b"-T SEC"):
                self.assertIn(opt.split()[0], r.stdout, (script, opt))
        r = run_script([TRANSLATE_DIR, "-s", "en", "-t", "de", "-W"], timeout=30)
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"-W needs a value", r.stderr)


def small_docx(paragraphs):
    """A minimal .docx with one paragraph per string."""
    import io
    import zipfile
    body = "".join("<w:p><w:r><w:t>%s</w:t></w:r></w:p>" % p for p in paragraphs)
    doc = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<w:document xmlns:w="http://schemas.'
           'openxmlformats.org/wordprocessingml/2006/main"><w:body>%s</w:body></w:document>' % body)
    ct = ('<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/'
          '2006/content-types"><Override PartName="/word/document.xml" ContentType="application/'
          'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>')
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", ct)
        z.writestr("word/document.xml", doc)
    return buf.getvalue()


class TranslateFileRealServer(unittest.TestCase):
    """translate-file.sh through mt-server gives exactly mt-translate's output; a directory
    of mixed formats goes through mt-server's /translate_file with its markup kept."""

    def test_mixed_dir(self):
        require_server()
        import zipfile
        tmp = tempfile.mkdtemp(prefix="test_scripts_dir.")
        proc = None
        try:
            model = test_model(tmp)
            port = free_port()
            log = os.path.join(tmp, "server.log")
            proc = start_server(model, port, log)
            d = os.path.join(tmp, "docs")
            os.makedirs(os.path.join(d, "sub"))
            with open(os.path.join(d, "a.txt"), "w") as f:
                f.write("A man is riding a bike.\nTwo dogs play.\n")
            with open(os.path.join(d, "sub", "page.html"), "w") as f:
                f.write('<html><body><p>Our <a href="https://example.org">website</a> is new.</p></body></html>\n')
            with open(os.path.join(d, "film.srt"), "w") as f:
                f.write("1\n00:00:01,000 --> 00:00:02,000\nHello there.\n\n2\n00:00:03,000 --> 00:00:04,000\nBye.\n")
            with open(os.path.join(d, "report.docx"), "wb") as f:
                f.write(small_docx(["A girl eats an apple.", "The band plays."]))
            url = "http://127.0.0.1:%d" % port
            r = run_script([TRANSLATE_DIR, "-s", "en", "-t", "de", "-u", url, d], timeout=600)
            self.assertEqual(r.returncode, 0, r.stderr.decode("utf-8", "replace")[-3000:] + log_tail(log))
            out = d + ".de"
            with open(os.path.join(out, "a.txt"), "rb") as f:
                self.assertEqual(f.read(), cli_translate(model, b"A man is riding a bike.\nTwo dogs play.\n"))
            with open(os.path.join(out, "sub", "page.html")) as f:
                html = f.read()
            self.assertIn('<a href="https://example.org">', html)
            self.assertIn("</a>", html)
            with open(os.path.join(out, "film.srt")) as f:
                srt = f.read()
            self.assertIn("00:00:01,000 --> 00:00:02,000", srt)
            self.assertIn("00:00:03,000 --> 00:00:04,000", srt)
            with zipfile.ZipFile(os.path.join(out, "report.docx")) as z:
                self.assertIn("word/document.xml", z.namelist())
                self.assertEqual(z.read("word/document.xml").count(b"<w:p>"), 2)
            # a pair the server does not serve: refused before anything is created
            r = run_script([TRANSLATE_DIR, "-s", "en", "-t", "fr", "-u", url, d], timeout=60)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn(b"it translates: en->de", r.stderr)
            self.assertFalse(os.path.exists(d + ".fr"))
        finally:
            stop(proc)
            shutil.rmtree(tmp, ignore_errors=True)

    def test_identical_to_cli(self):
        require_server()
        tmp = tempfile.mkdtemp(prefix="test_scripts_real.")
        proc = None
        try:
            model = test_model(tmp)
            lines = sample_lines(320, seed=3)
            src = os.path.join(tmp, "input.txt")
            write_lines(src, lines)
            with open(src, "rb") as f:
                expected = cli_translate(model, f.read())
            self.assertEqual(expected.count(b"\n"), len(lines))
            port = free_port()
            log = os.path.join(tmp, "server.log")
            proc = start_server(model, port, log)
            r = run_script([TRANSLATE_FILE, "-s", "en", "-t", "de", "-u", "http://127.0.0.1:%d" % port,
                            "-j", "3", "-b", "16", src], timeout=900)
            self.assertEqual(r.returncode, 0, r.stderr.decode("utf-8", "replace")[-3000:] + log_tail(log))
            if r.stdout != expected:
                got, want = r.stdout.split(b"\n"), expected.split(b"\n")
                bad = [i for i in range(min(len(got), len(want))) if got[i] != want[i]]
                self.fail("output differs from mt-translate: %d vs %d lines, first difference at line %s:"
                          "\n input %r\n  file %r\n   cli %r" % (
                              len(got), len(want), bad[0] + 1 if bad else "end",
                              lines[bad[0]] if bad else None, got[bad[0]] if bad else None,
                              want[bad[0]] if bad else None))
        finally:
            stop(proc)
            shutil.rmtree(tmp, ignore_errors=True)


def run_tests(module_name):
    """The shared runner (tests/testmain.py): skips are SKIP (77), never passes."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import testmain
    return testmain.run(module_name)

if __name__ == "__main__":
    sys.exit(run_tests(__name__))
