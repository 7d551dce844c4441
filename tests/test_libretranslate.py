#!/usr/bin/env python3
"""LibreTranslate parity (issue 14) against the real mt-server with the bundled en-de
model: 400 for a missing q, an empty q, a missing or unknown target; the per-client rate
limit (requests and characters per minute, off by default) answering 429 + Retry-After."""
import os
import shutil
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_server as ts  # noqa: E402  (the Server fixture: mt-server on a free port)

MODEL = None


def setUpModule():
    global MODEL
    if not os.path.exists(ts.SERVER):
        raise RuntimeError("missing %s: build first" % ts.SERVER)
    # A snapshot: the training run may rewrite models/en-de while the test runs.
    MODEL = os.path.join(ts.TMP, "lt-en-de")
    shutil.copytree(ts.BUNDLED, MODEL)


class TestErrors(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = ts.Server(["--model", MODEL, "--workers", "1"], name="lt-errors")

    @classmethod
    def tearDownClass(cls):
        assert cls.srv.stop() == 0

    def check_400(self, body, form=False):
        if form:
            import urllib.parse
            st, _, raw = self.srv.request("POST", "/translate", urllib.parse.urlencode(body),
                                          {"Content-Type": "application/x-www-form-urlencoded"})
            self.assertEqual(st, 400, raw)
            return raw.decode()
        st, _, b = self.srv.post_json(body)
        self.assertEqual(st, 400, b)
        self.assertIn("error", b)
        return b["error"]

    def test_missing_q(self):
        self.check_400({"source": "en", "target": "de"})
        self.check_400({"source": "en", "target": "de"}, form=True)

    def test_empty_q(self):
        self.assertIn("q", self.check_400({"q": "", "source": "en", "target": "de"}))
        self.check_400({"q": [], "source": "en", "target": "de"})
        self.check_400({"q": "", "source": "en", "target": "de"}, form=True)

    def test_missing_target(self):
        self.assertIn("target", self.check_400({"q": "Hello", "source": "en"}))
        self.check_400({"q": "Hello", "source": "en"}, form=True)
        self.check_400({"q": "Hello", "source": "en", "target": ""}, form=True)

    def test_unknown_target(self):
        self.check_400({"q": "Hello", "source": "en", "target": "xx"})
        self.check_400({"q": "Hello", "source": "en", "target": "fr"})

    def test_valid_request_still_200(self):
        st, hd, b = self.srv.post_json({"q": "Hello", "source": "en", "target": "de"})
        self.assertEqual(st, 200, b)
        self.assertIsInstance(b["translatedText"], str)
        # Off by default: many requests in a row are never limited.
        for _ in range(20):
            st, _, b = self.srv.post_json({"q": "Hi", "source": "en", "target": "de"})
            self.assertEqual(st, 200, b)


class TestFrontendSettings(unittest.TestCase):
    def test_char_limit_reported_is_enforced(self):
        srv = ts.Server(["--model", MODEL, "--workers", "1", "--max-text-chars", "40"],
                        name="lt-settings")
        try:
            st, hd, raw = srv.request("GET", "/frontend/settings")
            self.assertEqual(st, 200, raw)
            self.assertTrue(hd["content-type"].startswith("application/json"))
            b = ts.json.loads(raw)
            for k in ("charLimit", "keyRequired", "apiKeys", "suggestions", "filesTranslation",
                      "supportedFilesFormat", "language", "frontendTimeout"):
                self.assertIn(k, b)
            self.assertEqual(b["charLimit"], 40)
            self.assertFalse(b["keyRequired"])
            self.assertEqual(b["language"]["source"]["code"], "en")
            self.assertEqual(b["language"]["target"]["code"], "de")
            limit = b["charLimit"]
            st, _, body = srv.post_json({"q": "a" * limit, "source": "en", "target": "de"})
            self.assertEqual(st, 200, body)
            st, _, body = srv.post_json({"q": "a" * (limit + 1), "source": "en", "target": "de"})
            self.assertGreaterEqual(st, 400, body)
            self.assertIn("limit %d" % limit, body["error"])
            st, _, _ = srv.request("POST", "/frontend/settings", "{}")
            self.assertEqual(st, 405)
            # Suggestions are off (settings say so): /suggest answers 403, as LibreTranslate.
            self.assertFalse(b["suggestions"])
            st, _, body = srv.post_json({"q": "Hello", "s": "Hallo", "source": "en", "target": "de"},
                                        path="/suggest")
            self.assertEqual(st, 403, body)
            self.assertIn("disabled", body["error"])
        finally:
            self.assertEqual(srv.stop(), 0)

    def test_key_required_reported(self):
        srv = ts.Server(["--model", MODEL, "--workers", "1", "--api-key", "sekrit"], name="lt-keys")
        try:
            st, _, raw = srv.request("GET", "/frontend/settings")
            self.assertEqual(st, 200, raw)
            b = ts.json.loads(raw)
            self.assertTrue(b["keyRequired"])
            self.assertTrue(b["apiKeys"])
        finally:
            self.assertEqual(srv.stop(), 0)


class TestWebAndSpec(unittest.TestCase):
    def test_page_spec_and_no_traversal(self):
        srv = ts.Server(["--model", MODEL, "--workers", "1"], name="lt-web")
        web = os.path.join(ts.SRC, "web")
        try:
            for path, name, ctype in (("/", "index.html", "text/html"),
                                      ("/index.html", "index.html", "text/html"),
                                      ("/app.js", "app.js", "text/javascript"),
                                      ("/style.css", "style.css", "text/css"),
                                      ("/spec", "openapi.json", "application/json")):
                st, hd, raw = srv.request("GET", path)
                self.assertEqual(st, 200, (path, raw[:200]))
                self.assertTrue(hd["content-type"].startswith(ctype), (path, hd))
                with open(os.path.join(web, name), "rb") as f:
                    self.assertEqual(raw, f.read(), path)
            spec = ts.json.loads(srv.request("GET", "/spec")[2])
            self.assertTrue(spec["openapi"].startswith("3"))
            self.assertIn("/translate", spec["paths"])
            for path in ("/../README.md", "/%2e%2e/README.md", "/web/index.html", "/openapi.json",
                         "/..%2fREADME.md", "//etc/passwd", "/index.html/"):
                st, _, raw = srv.request("GET", path)
                self.assertEqual(st, 404, (path, raw[:200]))
        finally:
            self.assertEqual(srv.stop(), 0)

    def test_web_root_option(self):
        root = os.path.join(ts.TMP, "lt-webroot")
        os.makedirs(root, exist_ok=True)
        with open(os.path.join(root, "index.html"), "w") as f:
            f.write("<!doctype html><title>custom</title>")
        srv = ts.Server(["--model", MODEL, "--workers", "1", "--web-root", root], name="lt-webroot")
        try:
            st, hd, raw = srv.request("GET", "/")
            self.assertEqual((st, raw), (200, b"<!doctype html><title>custom</title>"))
            st, _, raw = srv.request("GET", "/spec")  # not in this root
            self.assertEqual(st, 404, raw)
        finally:
            self.assertEqual(srv.stop(), 0)


class TestCommandLine(unittest.TestCase):
    def test_cli_version(self):
        r = ts.subprocess.run([ts.CLI, "--version"], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        srv = ts.subprocess.run([ts.SERVER, "--version"], capture_output=True, text=True, timeout=60)
        version = ts.re.search(r"\d+\.\d+[\w.]*", srv.stdout + srv.stderr).group(0)
        self.assertEqual(r.stdout.strip(), "mt-translate " + version)
        self.assertIn("--version", ts.subprocess.run([ts.CLI, "--help"], capture_output=True,
                                                     text=True, timeout=60).stdout)

    def test_missing_model_directory(self):
        missing = os.path.join(ts.TMP, "no-such-model")
        r = ts.subprocess.run([ts.CLI, "--model", missing], input="Hello\n", capture_output=True,
                              text=True, timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("model directory %s does not exist" % missing, r.stderr)
        self.assertNotIn("line -1", r.stderr)
        r = ts.subprocess.run([ts.SERVER, "--model", missing, "--port", "0"], capture_output=True,
                              text=True, timeout=120)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("does not exist", r.stdout + r.stderr)

    def test_server_listening_only_after_bind(self):
        sock = ts.socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        port = sock.getsockname()[1]
        try:
            r = ts.subprocess.run([ts.SERVER, "--model", MODEL, "--host", "127.0.0.1", "--port", str(port)],
                                  capture_output=True, text=True, timeout=120)
            out = r.stdout + r.stderr
            self.assertNotEqual(r.returncode, 0, out)
            self.assertNotIn("event=listening", out)
            self.assertIn("cannot listen", out)
        finally:
            sock.close()


class TestRateLimit(unittest.TestCase):
    def test_requests_per_minute(self):
        srv = ts.Server(["--model", MODEL, "--workers", "1", "--req-limit", "3"], name="lt-rate")
        try:
            req = {"q": "Hello", "source": "en", "target": "de"}
            for i in range(3):
                st, _, b = srv.post_json(req)
                self.assertEqual(st, 200, (i, b))
            st, hd, b = srv.post_json(req)
            self.assertEqual(st, 429, b)
            self.assertIn("error", b)
            self.assertGreaterEqual(int(hd["retry-after"]), 1)
            # Another client (an API key is a client of its own) is not limited.
            st, _, b = srv.post_json(dict(req, api_key="someone-else"))
            self.assertEqual(st, 200, b)
        finally:
            self.assertEqual(srv.stop(), 0)

    def test_chars_per_minute(self):
        env = {"MT_CHAR_LIMIT_PER_MINUTE": "20"}  # the environment form of the config key
        srv = ts.Server(["--model", MODEL, "--workers", "1"], env=env, name="lt-chars")
        try:
            st, _, b = srv.post_json({"q": "Hello there", "source": "en", "target": "de"})  # 11
            self.assertEqual(st, 200, b)
            st, hd, b = srv.post_json({"q": "Good morning", "source": "en", "target": "de"})  # 12
            self.assertEqual(st, 429, b)
            self.assertIn("retry-after", hd)
            # More than a whole minute's allowance at once: refused too.
            st, _, b = srv.post_json({"q": "x" * 21, "source": "en", "target": "de", "api_key": "k2"})
            self.assertEqual(st, 429, b)
        finally:
            self.assertEqual(srv.stop(), 0)

    def test_config_file_keys(self):
        cfg = os.path.join(ts.TMP, "lt-limits.toml")
        with open(cfg, "w") as f:
            f.write("[limits]\nrequests_per_minute = 1\nchars_per_minute = 1000\n")
        srv = ts.Server(["--config", cfg, "--model", MODEL, "--workers", "1"], name="lt-cfg")
        try:
            req = {"q": "Hello", "source": "en", "target": "de"}
            self.assertEqual(srv.post_json(req)[0], 200)
            st, hd, _ = srv.post_json(req)
            self.assertEqual(st, 429)
            self.assertIn("retry-after", hd)
        finally:
            self.assertEqual(srv.stop(), 0)


def main():
    suite = unittest.TestLoader().loadTestsFromModule(sys.modules[__name__])
    result = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(suite)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
