#!/usr/bin/env python3
"""LibreTranslate parity (issue 14) against the real mt-server with the bundled en-de
model: 400 for a missing q, an empty q, a missing or unknown target; the per-client rate
limit (requests and characters per minute, off by default) answering 429 + Retry-After;
POST /detect; source "auto" per text over two models; /translate_file + /download_file
with real txt/html/srt/docx/odt files (byte-level structure checks); suggestions in
SQLite; mt-translate FILE with its progress bar (under a pty) and the pair refusals.
Run one class: tests/test_libretranslate.py TestFiles"""
import json
import os
import re
import shutil
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mtfixtures as ts  # noqa: E402  (the Server fixture: mt-server on a free port)

MODEL = None


def setUpModule():
    global MODEL
    ts.require_server()
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
            self.assertEqual(b["language"]["source"]["code"], "auto")  # detection is available
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
        self.assertEqual(r.returncode, 1)
        self.assertIn("mt-translate: no model at %s (try: mt-models list" % missing, r.stderr)
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
            # On a server without keys an api_key proves nothing: it is the same client.
            st, _, b = srv.post_json(dict(req, api_key="someone-else"))
            self.assertEqual(st, 429, b)
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


# ----------------------------------------------------------------------------- issue 14 wiring

DE_EN = None


def two_models():
    """The bundled en-de and, for a second model into German, the bundled de-en relabelled
    fr-de: other weights, so a text routed to it reads differently from en-de's output."""
    global DE_EN
    if DE_EN is None:
        DE_EN = ts.relabel(os.path.join(ts.SRC, "models", "de-en"), "fr", "de",
                           os.path.join(ts.TMP, "lt-fr-de"))
    return DE_EN


def multipart(fields, files, boundary="mtBoundary7x"):
    """A multipart/form-data body: fields {name: value}, files [(name, filename, bytes)]."""
    out = b""
    for k, v in fields.items():
        out += ("--%s\r\nContent-Disposition: form-data; name=\"%s\"\r\n\r\n%s\r\n"
                % (boundary, k, v)).encode()
    for name, filename, data in files:
        out += ("--%s\r\nContent-Disposition: form-data; name=\"%s\"; filename=\"%s\"\r\n"
                "Content-Type: application/octet-stream\r\n\r\n" % (boundary, name, filename)).encode()
        out += data + b"\r\n"
    out += ("--%s--\r\n" % boundary).encode()
    return out, {"Content-Type": "multipart/form-data; boundary=" + boundary}


class TestDetect(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = ts.Server(["--model", MODEL, "--model", os.path.join(ts.SRC, "models", "de-en"),
                             "--workers", "1"], name="lt-detect")

    @classmethod
    def tearDownClass(cls):
        assert cls.srv.stop() == 0

    def detect(self, q, status=200):
        st, _, b = self.srv.post_json({"q": q}, path="/detect")
        self.assertEqual(st, status, b)
        return b

    def test_shape_and_languages(self):
        b = self.detect("Zwei Hunde spielen im Schnee.")
        self.assertIsInstance(b, list)
        self.assertEqual(b[0]["language"], "de")
        self.assertGreater(b[0]["confidence"], 50)
        conf = [r["confidence"] for r in b]
        self.assertEqual(conf, sorted(conf, reverse=True))  # best first
        self.assertEqual(self.detect("A man in a blue shirt is riding a bicycle.")[0]["language"], "en")
        # Restricted to the loaded models' languages: French text is answered with en or de.
        for r in self.detect("Un homme fait du vélo dans la rue."):
            self.assertIn(r["language"], ("en", "de"))
        both = self.detect(["Ein Mann schläft.", "A woman is reading a book."])
        self.assertEqual([x[0]["language"] for x in both], ["de", "en"])
        # Form bodies too (LibreTranslate's clients send them).
        st, _, raw = self.srv.request("POST", "/detect", "q=Ein+Hund+rennt+im+Park.",
                                      {"Content-Type": "application/x-www-form-urlencoded"})
        self.assertEqual(st, 200, raw)
        self.assertEqual(ts.json.loads(raw)[0]["language"], "de")

    def test_malformed(self):
        st, _, b = self.srv.post_json({}, path="/detect")
        self.assertEqual(st, 400, b)
        self.assertIn("q", b["error"])
        self.assertEqual(self.srv.post_json({"q": 5}, path="/detect")[0], 400)
        self.assertEqual(self.srv.post_json({"q": ""}, path="/detect")[0], 400)
        self.assertEqual(self.srv.post_json({"q": ["ok", 3]}, path="/detect")[0], 400)
        st, _, raw = self.srv.request("POST", "/detect", "{not json", {"Content-Type": "application/json"})
        self.assertEqual(st, 400, raw)
        self.assertEqual(self.srv.request("GET", "/detect")[0], 405)
        # no evidence: nothing, or a tie where no language stands out
        for r in self.detect("12345 !!!"):
            self.assertLessEqual(r["confidence"], 50.0)


class TestAutoPerText(unittest.TestCase):
    """source "auto" detects each text and routes it to its language's model: an English
    and a French text into German go to en-de and (relabelled) fr-de in one request."""

    @classmethod
    def setUpClass(cls):
        cls.srv = ts.Server(["--model", MODEL, "--model", two_models(), "--workers", "1"],
                            name="lt-auto")

    @classmethod
    def tearDownClass(cls):
        assert cls.srv.stop() == 0

    EN = "A man in a blue shirt is riding a bicycle."
    FR = "Un homme en chemise bleue fait du vélo dans la rue."

    def direct(self, text, source, n=1):
        st, _, b = self.srv.post_json({"q": text, "source": source, "target": "de",
                                       "alternatives": n - 1})
        self.assertEqual(st, 200, b)
        return b

    def test_libre_form(self):
        st, _, b = self.srv.post_json({"q": [self.EN, self.FR, self.EN], "source": "auto", "target": "de"})
        self.assertEqual(st, 200, b)
        self.assertEqual([d["language"] for d in b["detectedLanguage"]], ["en", "fr", "en"])
        for d in b["detectedLanguage"]:
            self.assertGreater(d["confidence"], 0)
        want = [self.direct(self.EN, "en")["translatedText"], self.direct(self.FR, "fr")["translatedText"]]
        self.assertNotEqual(want[0], want[1])
        self.assertEqual(b["translatedText"], [want[0], want[1], want[0]])
        # a single string: one detectedLanguage object
        st, _, b = self.srv.post_json({"q": self.FR, "source": "auto", "target": "de"})
        self.assertEqual((st, b["translatedText"], b["detectedLanguage"]["language"]), (200, want[1], "fr"))

    def test_native_form_and_alternatives(self):
        st, _, b = self.srv.post_json({"text": [self.FR, self.EN], "source": "auto", "target": "de",
                                       "n_best": 2})
        self.assertEqual(st, 200, b)
        self.assertEqual([d["language"] for d in b["detectedLanguage"]], ["fr", "en"])
        fr, en = self.direct(self.FR, "fr", 2), self.direct(self.EN, "en", 2)
        self.assertEqual(b["translations"], [fr["translatedText"], en["translatedText"]])
        self.assertEqual([[h["text"] for h in l][1:] for l in b["n_best"]],
                         [fr["alternatives"], en["alternatives"]])
        st, _, b = self.srv.post_json({"q": [self.EN, self.FR], "source": "auto", "target": "de",
                                       "alternatives": 1})
        self.assertEqual(st, 200, b)
        self.assertEqual(b["alternatives"], [en["alternatives"], fr["alternatives"]])

    def sentences_by_model(self):
        out = {}
        for line in self.srv.metrics().splitlines():
            m = re.match(r'mt_sentences_translated_total\{model="([^"]*)"\} (\d+)', line)
            if m:
                out[m.group(1)] = int(m.group(2))
        return out

    def test_metrics_and_timing_cover_every_part(self):
        """The answer to texts of two languages counts every part's sentences for the model
        that translated them (it used to count the last part's, for the first text's
        model), and its timing covers both parts."""
        en2 = self.EN + " " + "Two dogs are playing in the snow."
        before = self.sentences_by_model()
        st, _, b = self.srv.post_json({"text": [en2, self.FR], "source": "auto", "target": "de"})
        self.assertEqual(st, 200, b)
        self.assertEqual([d["language"] for d in b["detectedLanguage"]], ["en", "fr"])
        after = self.sentences_by_model()
        grown = {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}
        self.assertEqual(sorted(grown.values()), [1, 2], grown)  # fr-de: 1 sentence, en-de: 2
        self.assertEqual(grown[b["model"]], 2, (grown, b["model"]))
        t = b["timing_ms"]
        self.assertGreater(t["translate"], 0)
        self.assertLessEqual(t["queue"] + t["translate"], t["total"] + 0.01)

    def test_no_model_into_target(self):
        st, _, b = self.srv.post_json({"q": [self.EN, self.FR], "source": "auto", "target": "it"})
        self.assertEqual(st, 400, b)
        self.assertIn("it", b["error"])


class TestAutoDetectAmongAllLanguages(unittest.TestCase):
    """source "auto" detects among every language the models read or write (issue 31): a
    text already in the target language comes back unchanged with its language, as
    LibreTranslate answers; a text whose language has no model into the target, or that
    no model reads at all, is a 400 naming the language, in both request forms (it used
    to be forced onto a source language and "translated" at confidence 0)."""

    DE = "Guten Morgen, wie geht es dir heute?"
    EN = "A man in a blue shirt is riding a bicycle."
    FR = "Un homme en chemise bleue fait du vélo dans la rue."
    FI = "Hyvää huomenta, mitä kuuluu? Tämä on suomenkielinen lause."

    @classmethod
    def setUpClass(cls):
        # en-de, de-en, and de-en relabelled fr-de: fr is read, but nothing goes fr -> en
        cls.srv = ts.Server(["--model", MODEL, "--model", os.path.join(ts.SRC, "models", "de-en"),
                             "--model", two_models(), "--workers", "1"], name="lt-auto-all")

    @classmethod
    def tearDownClass(cls):
        assert cls.srv.stop() == 0

    def test_text_in_the_target_language_comes_back_unchanged(self):
        st, _, b = self.srv.post_json({"q": "Hallo Welt", "source": "auto", "target": "de"})
        self.assertEqual(st, 200, b)
        self.assertEqual(b["translatedText"], "Hallo Welt")
        self.assertEqual(b["detectedLanguage"]["language"], "de")
        self.assertGreater(b["detectedLanguage"]["confidence"], 0)
        st, _, want = self.srv.post_json({"q": self.EN, "source": "en", "target": "de"})
        self.assertEqual(st, 200, want)
        st, _, b = self.srv.post_json({"q": [self.DE, self.EN], "source": "auto", "target": "de"})
        self.assertEqual(st, 200, b)
        self.assertEqual(b["translatedText"], [self.DE, want["translatedText"]])
        self.assertEqual([d["language"] for d in b["detectedLanguage"]], ["de", "en"])
        # native form, with n_best asked: one hypothesis, the text itself
        st, _, b = self.srv.post_json({"text": [self.EN, self.DE], "source": "auto", "target": "en", "n_best": 2})
        self.assertEqual(st, 200, b)
        self.assertEqual(b["translations"][0], self.EN)
        self.assertEqual([d["language"] for d in b["detectedLanguage"]], ["en", "de"])
        self.assertNotEqual(b["translations"][1], self.DE)

    def test_no_model_from_the_detected_language_into_target(self):
        st, _, b = self.srv.post_json({"q": self.FR, "source": "auto", "target": "en"})
        self.assertEqual(st, 400, b)
        self.assertEqual(b["error"], "text is in fr (detected), and no model here translates fr into en; "
                                     "source languages: en, de, fr")
        st, _, b = self.srv.post_json({"text": [self.EN, self.FR], "source": "auto", "target": "en"})
        self.assertEqual(st, 400, b)
        self.assertIn("text 1 is in fr (detected), and no model here translates fr into en", b["error"])
        st, _, b = self.srv.post_json({"q": self.FR, "source": "auto", "target": "de"})
        self.assertEqual((st, b.get("detectedLanguage", {}).get("language")), (200, "fr"), b)

    def test_language_no_model_reads(self):
        for body in ({"q": self.FI, "source": "auto", "target": "de"},
                     {"text": [self.EN, self.FI], "source": "auto", "target": "de"}):
            st, _, b = self.srv.post_json(body)
            self.assertEqual(st, 400, b)
            self.assertIn("in a language no model here translates (detected: fi); source languages: en, de, fr",
                          b["error"])
        # too short for the wide detector's word ("OK" would be Ewe): routed, not refused
        st, _, b = self.srv.post_json({"q": "OK", "source": "auto", "target": "en"})
        self.assertEqual(st, 200, b)


def make_docx():
    import zipfile, io
    doc = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
           '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
           '<w:body><w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:rPr><w:b/></w:rPr>'
           '<w:t>A man is riding a bicycle.</w:t></w:r></w:p>'
           '<w:p><w:r><w:t xml:space="preserve">Two dogs play </w:t></w:r><w:r><w:rPr><w:i/></w:rPr>'
           '<w:t>in the snow.</w:t></w:r></w:p></w:body></w:document>')
    styles = ('<?xml version="1.0" encoding="UTF-8"?><w:styles xmlns:w="http://schemas.openxmlformats.org/'
              'wordprocessingml/2006/main"><w:style w:styleId="Heading1"/></w:styles>')
    ct = ('<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/'
          '2006/content-types"><Override PartName="/word/document.xml" ContentType="application/'
          'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>')
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", ct)
        z.writestr("_rels/.rels", '<?xml version="1.0"?><Relationships xmlns="http://schemas.'
                   'openxmlformats.org/package/2006/relationships"/>')
        z.writestr("word/document.xml", doc)
        z.writestr("word/styles.xml", styles)
        z.writestr("word/media/image1.png", b"\x89PNG\r\n\x1a\nnot really")
    return buf.getvalue()


def make_odt():
    import zipfile, io
    content = ('<?xml version="1.0" encoding="UTF-8"?><office:document-content '
               'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
               'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.2">'
               '<office:body><office:text><text:h text:style-name="H1" text:outline-level="1">'
               'A little girl is eating an apple.</text:h><text:p text:style-name="P1">'
               '<text:span text:style-name="T1">The band is playing on stage.</text:span></text:p>'
               '</office:text></office:body></office:document-content>')
    styles = ('<?xml version="1.0" encoding="UTF-8"?><office:document-styles xmlns:office="urn:oasis:'
              'names:tc:opendocument:xmlns:office:1.0" office:version="1.2"/>')
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(zipfile.ZipInfo("mimetype"), "application/vnd.oasis.opendocument.text",
                   compress_type=zipfile.ZIP_STORED)
        z.writestr("content.xml", content, compress_type=zipfile.ZIP_DEFLATED)
        z.writestr("styles.xml", styles, compress_type=zipfile.ZIP_DEFLATED)
        z.writestr("META-INF/manifest.xml", '<?xml version="1.0"?><manifest:manifest xmlns:manifest='
                   '"urn:oasis:names:tc:opendocument:xmlns:manifest:1.0"/>', compress_type=zipfile.ZIP_DEFLATED)
    return buf.getvalue()


SRT = (b"1\r\n00:00:01,000 --> 00:00:02,500\r\nA man is riding a bicycle.\r\n\r\n"
       b"2\r\n00:00:03,250 --> 00:00:05,000\r\nTwo dogs play\r\nin the snow.\r\n")


class TestFiles(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.spool = os.path.join(ts.TMP, "lt-spool")
        cls.srv = ts.Server(["--model", MODEL, "--workers", "1", "--max-file-bytes", "60000",
                             "--spool-dir", cls.spool, "--max-file-jobs", "32"], name="lt-files")

    @classmethod
    def tearDownClass(cls):
        assert cls.srv.stop() == 0

    def upload(self, filename, data, status=200, **fields):
        fields = dict({"source": "en", "target": "de"}, **fields)
        body, hd = multipart(fields, [("file", filename, data)])
        st, _, raw = self.srv.request("POST", "/translate_file", body, hd)
        self.assertEqual(st, status, raw[:300])
        return ts.json.loads(raw)

    def fetch(self, url, seen=None):
        path = "/download_file/" + url.rsplit("/download_file/", 1)[1]
        for _ in range(3000):
            st, hd, raw = self.srv.request("GET", path)
            if st != 202:
                self.assertEqual(st, 200, raw[:300])
                return hd, raw
            b = ts.json.loads(raw)
            self.assertEqual(b["status"], "running")
            self.assertTrue(0 <= b["done"] <= b["total"] or b["total"] == 0, b)
            self.assertIn("retry-after", hd)
            if seen is not None:
                seen.append(b)
            ts.time.sleep(0.05)
        self.fail("never finished")

    def translate(self, filename, data):
        url = self.upload(filename, data)["translatedFileUrl"]
        self.assertRegex(url, r"^/download_file/[0-9a-f]{32}$")  # relative: no public_url set
        hd, raw = self.fetch(url)
        self.assertIn('filename="%s"' % filename, hd["content-disposition"])
        return hd, raw

    def test_txt_and_progress(self):
        hd, raw = self.translate("notes.txt", b"A man is riding a bicycle.\n\nTwo dogs play in the snow.\n")
        self.assertTrue(hd["content-type"].startswith("text/plain"))
        lines = raw.decode().split("\n")
        self.assertEqual(len(lines), 4)
        self.assertEqual(lines[1], "")
        self.assertIn("Hund", lines[2])
        # A longer file: the same URL answers 202 with progress until it is done.
        text = "".join("Line %d: a man is riding a bicycle down the street.\n" % i for i in range(1000))
        url = self.upload("long.txt", text.encode())["translatedFileUrl"]
        seen = []
        hd, raw = self.fetch(url, seen)
        self.assertTrue(seen, "expected at least one 202 while 1000 lines were translated")
        self.assertEqual(len(raw.decode().splitlines()), 1000)

    def test_html(self):
        src = b'<html><body><h1 class="t">A dog runs.</h1><p>Two men talk.</p></body></html>\n'
        hd, raw = self.translate("page.html", src)
        self.assertTrue(hd["content-type"].startswith("text/html"))
        self.assertIn(b'<h1 class="t">', raw)
        self.assertNotIn(b"Two men", raw)

    def test_srt_timings_kept(self):
        hd, raw = self.translate("movie.srt", SRT)
        out = raw.split(b"\r\n")
        src = SRT.split(b"\r\n")
        for i, line in enumerate(src):
            if b"-->" in line or line.isdigit() or line == b"":
                self.assertEqual(out[i], line)
        self.assertNotIn(b"dogs", raw)

    def test_docx_structure_kept(self):
        import zipfile, io
        data = make_docx()
        hd, raw = self.translate("report.docx", data)
        self.assertIn("wordprocessingml", hd["content-type"])
        a, b = zipfile.ZipFile(io.BytesIO(data)), zipfile.ZipFile(io.BytesIO(raw))
        self.assertEqual(a.namelist(), b.namelist())
        for name in a.namelist():
            if name != "word/document.xml":
                self.assertEqual(a.read(name), b.read(name), name)
        doc = b.read("word/document.xml").decode()
        for kept in ('<w:pStyle w:val="Heading1"/>', "<w:b/>", "<w:i/>"):
            self.assertIn(kept, doc)
        self.assertNotIn("bicycle", doc)
        self.assertIn("Fahrrad", doc)

    def test_odt_mimetype_first_and_stored(self):
        import zipfile, io
        data = make_odt()
        hd, raw = self.translate("letter.odt", data)
        self.assertEqual(hd["content-type"], "application/vnd.oasis.opendocument.text")
        self.assertEqual(raw[30:38], b"mimetype")  # the first local header's name
        z, a = zipfile.ZipFile(io.BytesIO(raw)), zipfile.ZipFile(io.BytesIO(data))
        first = z.infolist()[0]
        self.assertEqual((first.filename, first.compress_type), ("mimetype", zipfile.ZIP_STORED))
        self.assertEqual(z.namelist(), a.namelist())
        self.assertEqual(z.read("styles.xml"), a.read("styles.xml"))
        content = z.read("content.xml").decode()
        for kept in ('text:style-name="H1"', 'text:style-name="T1"', 'text:outline-level="1"'):
            self.assertIn(kept, content)
        self.assertNotIn("apple", content)

    def test_limits_and_types(self):
        b = self.upload("big.txt", b"word " * 20000, status=413)
        self.assertIn("too large", b["error"])
        b = self.upload("tool.exe", b"MZ\x90\x00\x03binary", status=415)
        self.assertIn(".docx", b["error"])
        self.assertIn("target", self.upload("a.txt", b"Hello.", status=400, target="")["error"])
        self.upload("a.txt", b"Hello.", status=400, target="fr")

    def test_bad_multipart(self):
        good, hd = multipart({"source": "en", "target": "de"}, [("file", "a.txt", b"Hello.")])
        for body in (good[:-20], good.replace(b"--mtBoundary7x--", b""), b"garbage",
                     good.replace(b'name="file"', b'nom="file"')):
            st, _, raw = self.srv.request("POST", "/translate_file", body, hd)
            self.assertEqual(st, 400, (body[-40:], raw))
        body, hd = multipart({"source": "en", "target": "de"}, [])
        st, _, raw = self.srv.request("POST", "/translate_file", body, hd)
        self.assertEqual(st, 400, raw)
        self.assertIn("file", ts.json.loads(raw)["error"])
        st, _, raw = self.srv.request("POST", "/translate_file", '{"target": "de"}',
                                      {"Content-Type": "application/json"})
        self.assertEqual(st, 400, raw)

    def test_unknown_and_malformed_ids(self):
        for path in ("/download_file/0123456789abcdef0123456789abcdef",
                     "/download_file/0123456789ABCDEF0123456789ABCDEF", "/download_file/abc",
                     "/download_file/", "/download_file/../../etc/passwd",
                     "/download_file/%2e%2e%2fREADME.md", "/download_file/" + "a" * 33,
                     "/download_file/0123456789abcdef0123456789abcde/"):
            st, _, raw = self.srv.request("GET", path)
            self.assertEqual(st, 404, (path, raw))
        # the spool holds files named by id only
        for name in os.listdir(self.spool):
            self.assertRegex(name, r"^[0-9a-f]{32}")

    def test_settings_report_files(self):
        b = ts.json.loads(self.srv.request("GET", "/frontend/settings")[2])
        self.assertTrue(b["filesTranslation"])
        for ext in (".txt", ".html", ".srt", ".docx", ".odt"):
            self.assertIn(ext, b["supportedFilesFormat"])


class TestFileDecodingDefaults(unittest.TestCase):
    """/translate_file takes the same path as /translate: the server's [decoding] defaults
    apply to files too (it used to take beam_size, length_penalty and max_length only)."""

    def test_min_length_applies_to_files(self):
        text = "A dog runs."
        srv = ts.Server(["--model", MODEL, "--workers", "1", "--max-file-bytes", "60000",
                         "--min-length", "12"], name="lt-file-defaults")
        plain = ts.Server(["--model", MODEL, "--workers", "1"], name="lt-file-plain")
        try:
            st, _, b = srv.post_json({"text": text, "source": "en", "target": "de"})
            self.assertEqual(st, 200, b)
            want = b["translations"][0]
            st, _, b = plain.post_json({"text": text, "source": "en", "target": "de"})
            self.assertNotEqual(b["translations"][0], want)  # the setting changes the translation
            body, hd = multipart({"source": "en", "target": "de"}, [("file", "one.txt", text.encode())])
            st, _, raw = srv.request("POST", "/translate_file", body, hd)
            self.assertEqual(st, 200, raw[:300])
            path = "/download_file/" + ts.json.loads(raw)["translatedFileUrl"].rsplit("/download_file/", 1)[1]
            got = {}

            def done():
                st, _, raw = srv.request("GET", path)
                got["st"], got["raw"] = st, raw
                return st != 202
            self.assertTrue(ts.wait_until(done, timeout=120))
            self.assertEqual(got["st"], 200, got["raw"][:300])
            self.assertEqual(got["raw"].decode().strip(), want)
        finally:
            self.assertEqual(srv.stop(), 0)
            self.assertEqual(plain.stop(), 0)


class TestSuggestions(unittest.TestCase):
    def test_stored_in_sqlite(self):
        import sqlite3
        db = os.path.join(ts.TMP, "lt-suggest.db")
        srv = ts.Server(["--model", MODEL, "--workers", "1", "--suggestions-db", db], name="lt-suggest")
        try:
            self.assertTrue(ts.json.loads(srv.request("GET", "/frontend/settings")[2])["suggestions"])
            st, _, b = srv.post_json({"q": "Hello", "s": "Hallo", "source": "en", "target": "de"},
                                     path="/suggest")
            self.assertEqual((st, b), (200, {"success": True}))
            st, _, raw = srv.request("POST", "/suggest", "q=Dog&s=Hund&source=en&target=de",
                                     {"Content-Type": "application/x-www-form-urlencoded"})
            self.assertEqual(st, 200, raw)
            st, _, b = srv.post_json({"q": "Hello", "source": "en", "target": "de"}, path="/suggest")
            self.assertEqual(st, 400, b)
            self.assertIn("s", b["error"])
        finally:
            self.assertEqual(srv.stop(), 0)
        rows = sqlite3.connect(db).execute("SELECT q, s, source, target FROM suggestions ORDER BY id").fetchall()
        self.assertEqual(rows, [("Hello", "Hallo", "en", "de"), ("Dog", "Hund", "en", "de")])


class TestCliFilesAndRefusals(unittest.TestCase):
    def test_target_lang_refused(self):
        r = ts.subprocess.run([ts.CLI, "--model", MODEL, "--target-lang", "fr"], input="Hello\n",
                              capture_output=True, text=True, timeout=120)
        self.assertNotEqual(r.returncode, 0)
        self.assertEqual(r.stdout, "")
        self.assertIn("translates en -> de", r.stderr)
        r = ts.subprocess.run([ts.SERVER, "--model", MODEL + ":en:fr", "--port", "0"],
                              capture_output=True, text=True, timeout=120)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("translates en -> de", r.stdout + r.stderr)
        # the model's own pair stays accepted
        r = ts.subprocess.run([ts.CLI, "--model", MODEL, "--target-lang", "de"], input="Hello\n",
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_file_argument(self):
        import zipfile, io
        d = os.path.join(ts.TMP, "lt-cli-files")
        os.makedirs(d, exist_ok=True)
        for name, data in (("a.srt", SRT), ("b.docx", make_docx()), ("c.odt", make_odt())):
            path = os.path.join(d, name)
            with open(path, "wb") as f:
                f.write(data)
            r = ts.subprocess.run([ts.CLI, "--model", MODEL, path], capture_output=True, timeout=300)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout, b"")
            self.assertNotIn(b"\r", r.stderr)  # no progress bar off a terminal
            base, ext = os.path.splitext(path)
            with open(base + ".de" + ext, "rb") as f:
                out = f.read()
            if ext == ".srt":
                self.assertIn(b"00:00:03,250 --> 00:00:05,000", out)
            else:
                self.assertEqual(zipfile.ZipFile(io.BytesIO(out)).namelist(),
                                 zipfile.ZipFile(io.BytesIO(data)).namelist())
        out = os.path.join(d, "chosen.srt")
        r = ts.subprocess.run([ts.CLI, "--model", MODEL, os.path.join(d, "a.srt"), "--output-file", out],
                              capture_output=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(os.path.exists(out))
        r = ts.subprocess.run([ts.CLI, "--model", MODEL, os.path.join(d, "missing.txt")],
                              capture_output=True, text=True, timeout=120)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("missing.txt", r.stderr)

    def test_progress_bar_on_a_terminal(self):
        import pty
        path = os.path.join(ts.TMP, "lt-pty.txt")
        with open(path, "w") as f:
            f.write("".join("A dog runs in the park number %d.\n" % i for i in range(70)))
        master, slave = pty.openpty()
        p = ts.subprocess.Popen([ts.CLI, "--model", MODEL, "--batch-size", "8", path],
                                stdin=ts.subprocess.DEVNULL, stdout=ts.subprocess.DEVNULL, stderr=slave)
        os.close(slave)
        got = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            got += chunk
        self.assertEqual(p.wait(300), 0, got)
        os.close(master)
        text = got.decode(errors="replace")
        self.assertIn("\r", text)
        self.assertIn("100%", text)
        self.assertIn("(70/70)", text)
        self.assertIn("#", text)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import testmain
    sys.exit(testmain.run(__name__))
