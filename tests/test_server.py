#!/usr/bin/python3
"""Integration tests for mt-server: the real binary on a free loopback port, real HTTP.

Models: tiny random models written by tools/make_test_model.py (and the bundled
models/en-de when it is present). Every translation the server returns is compared
with what mt-translate prints for the same input and options, including under 32
concurrent clients. Covers every endpoint, both request forms (native and
LibreTranslate, JSON / form-encoded / multipart), every error status, n-best,
multi-sentence and multi-line texts, two models at once, API keys, overload (503),
deadlines (504), client disconnects, SIGTERM draining, and a bounded load test.

Environment: MT_BUILD_DIR (build tree), MT_SOURCE_DIR (checkout), MT_SHARED_DIR.
Only the standard library is used; the fixtures (models, servers, mt-translate) are
mtfixtures.py's, and every server started is stopped at the end.
Prints 'N passed, M failed' and exits non-zero on failure.
"""
import http.client
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import unittest
import urllib.parse

# SRC, SHARED, PYTHON: for tests that still `import test_server as ts` for its fixtures
from mtfixtures import (BUILD, BUNDLED, CLI, PYTHON, SERVER, SHARED, SRC, TMP,  # noqa: F401
                        Server, cli_html, cli_nbest, cli_text, cli_translate, corpus_lines,
                        make_model, relabel, wait_until)


MODEL = None      # tiny random en-de model
MODEL2 = None     # second tiny random model, served as de-en


def setUpModule():
    global MODEL, MODEL2
    for p in (SERVER, CLI):
        if not os.path.exists(p):
            raise RuntimeError("missing %s: build first (MT_BUILD_DIR=%s)" % (p, BUILD))
    MODEL = make_model("tiny-en-de", 1)
    MODEL2 = relabel(make_model("tiny-de-en", 7, ["--tokenizer-from", MODEL]), "de", "en")


# ----------------------------------------------------------------------------- tests

class TestEndpoints(unittest.TestCase):
    """One server with the tiny model: endpoints, both request forms, errors."""

    @classmethod
    def setUpClass(cls):
        cls.srv = Server(["--model", MODEL, "--workers", "2", "--max-texts", "16",
                          "--max-text-chars", "400", "--max-body-bytes", "8192",
                          "--max-beam-size", "8"], name="endpoints")

    @classmethod
    def tearDownClass(cls):
        rc = cls.srv.stop()
        assert rc == 0, "exit code %s\n%s" % (rc, cls.srv.log())

    def error(self, st, body, status, fragment):
        self.assertEqual(st, status, body)
        self.assertIsInstance(body, dict, body)
        self.assertIn("error", body)
        self.assertIn(fragment, body["error"])

    def test_avx512_blas_kernels_without_configuration(self):
        # The environment may pin OPENBLAS_CORETYPE to an older family; the server picks
        # the AVX-512 kernels by itself where the CPU has them, and logs its choice.
        with open("/proc/cpuinfo") as f:
            flags = f.read()
        avx512 = all(flag in flags for flag in ("avx512f", "avx512bw", "avx512dq", "avx512vl"))
        m = re.search(r"event=ready .*blas=(\S+)", self.srv.log())
        self.assertIsNotNone(m, self.srv.log())
        if avx512:
            self.assertIn(m.group(1), ("SkylakeX", "Cooperlake", "SapphireRapids"))

    def test_health(self):
        st, hd, body = self.srv.request("GET", "/health")
        self.assertEqual(st, 200)
        self.assertTrue(hd["content-type"].startswith("application/json"))
        h = json.loads(body)
        self.assertEqual(h["status"], "ok")
        self.assertEqual(h["models"][0]["source"], "en")
        self.assertEqual(h["models"][0]["target"], "de")
        st, _, body = self.srv.request("HEAD", "/health")
        self.assertEqual(st, 200)
        self.assertEqual(body, b"")

    def test_languages(self):
        st, hd, body = self.srv.request("GET", "/languages")
        self.assertEqual(st, 200)
        langs = json.loads(body)
        by_code = {l["code"]: l for l in langs}
        self.assertEqual(set(by_code), {"en", "de"})
        self.assertEqual(by_code["en"]["name"], "English")
        self.assertEqual(by_code["en"]["targets"], ["de"])
        self.assertEqual(by_code["de"]["name"], "German")
        self.assertEqual(by_code["de"]["targets"], [])
        for l in langs:
            self.assertEqual(set(l), {"code", "name", "targets"})
        # LibreTranslate accepts POST /languages too (the body is ignored).
        st, _, body2 = self.srv.request("POST", "/languages", "api_key=x",
                                        {"Content-Type": "application/x-www-form-urlencoded"})
        self.assertEqual(st, 200)
        self.assertEqual(json.loads(body2), langs)

    def test_native_single_and_array(self):
        texts = corpus_lines(5, seed=1)
        want = cli_translate(MODEL, texts)
        st, _, body = self.srv.post_json({"text": texts[0], "source": "en", "target": "de"})
        self.assertEqual(st, 200, body)
        self.assertEqual(body["translations"], [want[0]])
        self.assertEqual(body["model"], os.path.basename(MODEL))
        self.assertEqual(body["source"], "en")
        self.assertEqual(body["target"], "de")
        self.assertEqual(set(body["timing_ms"]), {"queue", "translate", "total"})
        self.assertEqual(len(body["scores"]), 1)
        st, _, body = self.srv.post_json({"text": texts, "source": "en", "target": "de"})
        self.assertEqual(st, 200, body)
        self.assertEqual(body["translations"], want)
        # Source and target may be left out when only one pair is served.
        st, _, body = self.srv.post_json({"text": texts[1]})
        self.assertEqual(st, 200, body)
        self.assertEqual(body["translations"], [want[1]])

    def test_native_options_match_cli(self):
        texts = corpus_lines(4, seed=2)
        for opts, args in [({"beam_size": 1}, ["--beam", "1"]),
                           ({"beam_size": 3, "length_penalty": 0.6}, ["--beam", "3", "--length-penalty", "0.6"]),
                           ({"max_length": 5}, ["--max-length", "5"])]:
            want = cli_translate(MODEL, texts, args)
            req = {"text": texts, "source": "en", "target": "de"}
            req.update(opts)
            st, _, body = self.srv.post_json(req)
            self.assertEqual(st, 200, body)
            self.assertEqual(body["translations"], want, opts)

    def test_nbest(self):
        texts = corpus_lines(3, seed=3)
        want = cli_nbest(MODEL, texts, 3, ["--beam", "4"])
        st, _, body = self.srv.post_json({"text": texts, "beam_size": 4, "n_best": 3})
        self.assertEqual(st, 200, body)
        self.assertEqual(len(body["n_best"]), 3)
        for i, alts in enumerate(body["n_best"]):
            self.assertEqual(len(alts), 3)
            self.assertEqual(alts[0]["text"], body["translations"][i])
            self.assertEqual([a["text"] for a in alts], [w[0] for w in want[i]])
            for a, w in zip(alts, want[i]):
                self.assertAlmostEqual(a["score"], w[1], places=4)
            scores = [a["score"] for a in alts]
            self.assertEqual(scores, sorted(scores, reverse=True))
        # n_best alone raises the default beam when needed; more than beam_size is an error.
        st, _, body = self.srv.post_json({"text": texts[0], "n_best": 6})
        self.assertEqual(st, 200, body)
        self.assertEqual(len(body["n_best"][0]), 6)
        st, _, body = self.srv.post_json({"text": texts[0], "n_best": 3, "beam_size": 2})
        self.error(st, body, 400, "n_best")

    def test_html_format(self):
        """format html: markup verbatim, each text node translated like plain text, escaped;
        the same as mt-translate --input html, in both request forms."""
        texts = corpus_lines(3, seed=21)
        html = ('<p class="a">%s %s</p>\n<ul><li>%s &amp; more</li><li>&nbsp;|&nbsp;</li></ul>'
                '<script>var s = "%s";</script> <b translate="no">Brand</b>' % (texts[0], texts[1], texts[2], texts[0]))
        want = cli_html(MODEL, html)
        st, _, body = self.srv.post_json({"text": html, "format": "html"})
        self.assertEqual(st, 200, body)
        got = body["translations"][0]
        self.assertEqual(got, want)
        plain = cli_translate(MODEL, [texts[2] + " & more"])[0]
        escaped = plain.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        self.assertIn("<ul><li>%s</li><li>&nbsp;|&nbsp;</li></ul>" % escaped, got)
        self.assertTrue(got.startswith('<p class="a">'), got)
        self.assertTrue(got.endswith('<script>var s = "%s";</script> <b translate="no">Brand</b>' % texts[0]), got)
        st, _, body = self.srv.post_json({"q": [html], "source": "en", "target": "de", "format": "html"})
        self.assertEqual(st, 200, body)
        self.assertEqual(body["translatedText"], [want])
        # the same text as "text" is translated as plain text: the markup is not kept apart
        st, _, body = self.srv.post_json({"text": "<b>A dog.</b>", "format": "text"})
        self.assertEqual(body["translations"], cli_translate(MODEL, ["<b>A dog.</b>"]))

    def test_libretranslate_json(self):
        texts = corpus_lines(3, seed=4)
        want = cli_translate(MODEL, texts)
        st, _, body = self.srv.post_json({"q": texts[0], "source": "en", "target": "de", "format": "text"})
        self.assertEqual(st, 200, body)
        self.assertEqual(body, {"translatedText": want[0]})
        st, _, body = self.srv.post_json({"q": texts, "source": "en", "target": "de"})
        self.assertEqual(st, 200, body)
        self.assertEqual(body["translatedText"], want)
        # alternatives: the n-best list after the best, as mt-translate --n-best ranks it
        nb = cli_nbest(MODEL, texts[:1], 3)
        st, _, body = self.srv.post_json({"q": texts[0], "source": "en", "target": "de", "alternatives": 2})
        self.assertEqual(st, 200, body)
        self.assertEqual(body["translatedText"], nb[0][0][0])
        self.assertEqual(body["alternatives"], [t for t, _ in nb[0][1:]])
        st, _, body = self.srv.post_json({"q": texts[:2], "source": "en", "target": "de", "alternatives": "1"})
        self.assertEqual(st, 200, body)
        self.assertEqual(len(body["alternatives"]), 2)
        self.assertEqual(len(body["alternatives"][0]), 1)
        # source "auto": exactly one model translates into de -> detectedLanguage
        st, _, body = self.srv.post_json({"q": texts[0], "source": "auto", "target": "de"})
        self.assertEqual(st, 200, body)
        self.assertEqual(body["translatedText"], want[0])
        self.assertEqual(body["detectedLanguage"]["language"], "en")
        # unknown fields are ignored
        st, _, body = self.srv.post_json({"q": texts[0], "source": "en", "target": "de", "secret": 1, "x": [1]})
        self.assertEqual(st, 200, body)

    def test_libretranslate_form(self):
        texts = corpus_lines(2, seed=5)
        want = cli_translate(MODEL, texts)
        form = urllib.parse.urlencode({"q": texts[0], "source": "en", "target": "de", "format": "text"})
        st, hd, body = self.srv.request("POST", "/translate", form,
                                        {"Content-Type": "application/x-www-form-urlencoded"})
        self.assertEqual(st, 200, body)
        self.assertEqual(json.loads(body), {"translatedText": want[0]})
        form = urllib.parse.urlencode([("q", texts[0]), ("q", texts[1]), ("source", "en"),
                                       ("target", "de"), ("alternatives", "1")])
        st, _, body = self.srv.request("POST", "/translate", form,
                                       {"Content-Type": "application/x-www-form-urlencoded; charset=UTF-8"})
        self.assertEqual(st, 200, body)
        self.assertEqual(json.loads(body)["translatedText"], want)
        # multipart/form-data, as browsers' FormData sends it
        boundary = "----mtboundary7MA4YWxk"
        parts = []
        for k, v in [("q", texts[1]), ("source", "en"), ("target", "de")]:
            parts.append("--%s\r\nContent-Disposition: form-data; name=\"%s\"\r\n\r\n%s\r\n" % (boundary, k, v))
        mp = "".join(parts) + "--%s--\r\n" % boundary
        st, _, body = self.srv.request("POST", "/translate", mp,
                                       {"Content-Type": "multipart/form-data; boundary=" + boundary})
        self.assertEqual(st, 200, body)
        self.assertEqual(json.loads(body), {"translatedText": want[1]})
        st, _, body = self.srv.request("POST", "/translate", "q=%zz",
                                       {"Content-Type": "application/x-www-form-urlencoded"})
        self.assertEqual(st, 400)
        self.assertIn("percent-encoding", json.loads(body)["error"])

    def test_curl(self):
        curl = shutil.which("curl")
        if not curl:
            self.skipTest("curl not installed")
        text = corpus_lines(1, seed=6)[0]
        want = cli_translate(MODEL, [text])[0]
        url = "http://127.0.0.1:%d/translate" % self.srv.port
        # `curl -d` labels JSON as a form: it is read as JSON all the same.
        r = subprocess.run([curl, "-s", "-d", json.dumps({"q": text, "source": "en", "target": "de"}), url],
                           capture_output=True, timeout=60)
        self.assertEqual(json.loads(r.stdout), {"translatedText": want})
        r = subprocess.run([curl, "-s", "--data-urlencode", "q=" + text, "-d", "source=en", "-d", "target=de", url],
                           capture_output=True, timeout=60)
        self.assertEqual(json.loads(r.stdout), {"translatedText": want})
        r = subprocess.run([curl, "-s", "-F", "q=" + text, "-F", "target=de", url], capture_output=True, timeout=60)
        self.assertEqual(json.loads(r.stdout), {"translatedText": want})

    def test_multi_sentence_and_lines(self):
        s = corpus_lines(6, seed=7)
        text = "%s %s  %s\n\n  %s\n%s\t%s \n" % tuple(s)
        st, _, body = self.srv.post_json({"text": text})
        self.assertEqual(st, 200, body)
        got = body["translations"][0]
        self.assertEqual(got, cli_text(MODEL, text))
        self.assertEqual(got.count("\n"), text.count("\n"))
        self.assertTrue(got.endswith(" \n"))
        # abbreviations, decimals and quotes do not split sentences
        text = 'Dr. Smith paid 3.5 dollars. "Is it late?" she asked.\r\nNo.'
        st, _, body = self.srv.post_json({"q": text, "source": "en", "target": "de"})
        self.assertEqual(st, 200, body)
        self.assertEqual(body["translatedText"], cli_text(MODEL, text))

    def test_long_sentence_is_split_not_truncated(self):
        text = " ".join("w%d" % i for i in range(90)) + "."  # ~250 tokens; the model reads 64
        self.assertLess(len(text), 400)
        st, _, body = self.srv.post_json({"text": text, "beam_size": 1, "max_length": 8})
        self.assertEqual(st, 200, body)
        # Split into several sentences: several short translations joined, as the CLI does.
        self.assertEqual(body["translations"][0], cli_text(MODEL, text, ["--beam", "1", "--max-length", "8"]))
        self.assertIn(" ", body["translations"][0])

    def test_empty_and_blank(self):
        st, _, body = self.srv.post_json({"text": ""})
        self.assertEqual(st, 200, body)
        self.assertEqual(body["translations"], [""])
        st, _, body = self.srv.post_json({"text": ["", "  \n ", corpus_lines(1)[0]]})
        self.assertEqual(st, 200, body)
        self.assertEqual(body["translations"][:2], ["", "  \n "])
        # LibreTranslate answers 400 to an empty q (issue 14; tests/test_libretranslate.py).
        st, _, body = self.srv.post_json({"q": [], "source": "en", "target": "de"})
        self.assertEqual(st, 400, body)
        st, _, body = self.srv.post_json({"q": "", "source": "en", "target": "de", "alternatives": 2})
        self.assertEqual(st, 400, body)
        st, _, body = self.srv.post_json({"q": ["", "x"], "source": "en", "target": "de"})
        self.assertEqual(st, 200, body)
        self.assertEqual(body["translatedText"][0], "")

    def test_unicode(self):
        text = "Grüße aus Köln – 東京 😀 ok."
        st, _, body = self.srv.post_json({"text": text})
        self.assertEqual(st, 200, body)
        self.assertEqual(body["translations"][0], cli_text(MODEL, text))

    def test_errors_400(self):
        st, _, body = self.srv.request("POST", "/translate", '{"text": "a",', {"Content-Type": "application/json"})
        self.error(st, json.loads(body), 400, "invalid JSON at line 1")
        st, _, body = self.srv.request("POST", "/translate", '["text"]', {"Content-Type": "application/json"})
        self.error(st, json.loads(body), 400, "JSON object")
        st, _, body = self.srv.request("POST", "/translate", b'{"text": "\xff\xfe"}', {"Content-Type": "application/json"})
        self.error(st, json.loads(body), 400, "UTF-8")
        st, _, body = self.srv.request("POST", "/translate", b"q=%FF%FE&target=de",
                                       {"Content-Type": "application/x-www-form-urlencoded"})
        self.error(st, json.loads(body), 400, "UTF-8")
        st, _, body = self.srv.request("POST", "/translate", "", {"Content-Type": "application/json"})
        self.error(st, json.loads(body), 400, "empty")
        cases = [
            ({"source": "en", "target": "de"}, "missing field 'text'"),
            ({"text": 5}, "'text' must be a string or an array of strings"),
            ({"text": ["a", 3]}, "element 1"),
            ({"q": {"a": 1}}, "'q' must be a string"),
            ({"text": "a", "beam_size": "4"}, "beam_size"),
            ({"text": "a", "beam_size": 0}, "beam_size"),
            ({"text": "a", "beam_size": 99}, "beam_size"),
            ({"text": "a", "n_best": 2.5}, "n_best"),
            ({"text": "a", "length_penalty": "x"}, "length_penalty"),
            ({"text": "a", "max_length": -1}, "max_length"),
            ({"text": "a", "max_length": 100000}, "exceeds the model's limit"),
            ({"text": "a", "source": 1}, "'source' must be a string"),
            ({"text": "a", "target": "d e"}, "language code"),
            ({"q": "a", "source": "en", "target": "de", "alternatives": "many"}, "alternatives"),
            ({"q": "a", "source": "en", "target": "de", "format": "pdf"}, "'format' must be \"text\" or \"html\""),
            ({"q": "a", "source": "en", "target": "de", "format": 1}, "'format' must be"),
        ]
        for req, fragment in cases:
            st, _, body = self.srv.post_json(req)
            self.error(st, body, 400, fragment)
        st, _, body = self.srv.post_json({"text": "a", "source": "en", "target": "fr"})
        self.error(st, body, 400, "unsupported language pair en-fr")
        self.assertIn("en-de", body["error"])
        st, _, body = self.srv.post_json({"q": "a", "source": "auto", "target": "fr"})
        self.error(st, body, 400, "no model translates into 'fr'")

    def test_errors_413(self):
        st, _, body = self.srv.post_json({"text": ["a"] * 17})
        self.error(st, body, 413, "too many texts: 17 (limit 16)")
        st, _, body = self.srv.post_json({"text": ["ok", "é" * 401]})
        self.error(st, body, 413, "text 1 has 401 characters (limit 400)")
        st, _, body = self.srv.post_json({"text": "é" * 400})  # characters, not bytes
        self.assertEqual(st, 200, body)
        st, hd, body = self.srv.request("POST", "/translate", json.dumps({"text": "a" * 9000}),
                                        {"Content-Type": "application/json"})
        self.error(st, json.loads(body), 413, "too large")
        # A chunked body (no Content-Length) past the limit: 413 once it is read.
        conn = http.client.HTTPConnection("127.0.0.1", self.srv.port, timeout=60)
        chunks = [json.dumps({"text": "b" * 5000}).encode()[:4000], b"b" * 6000]
        conn.request("POST", "/translate", body=iter(chunks), headers={"Content-Type": "application/json"},
                     encode_chunked=True)
        r = conn.getresponse()
        self.assertEqual(r.status, 413)
        self.assertIn("too large", json.loads(r.read())["error"])
        conn.close()

    def test_errors_http(self):
        st, hd, body = self.srv.request("GET", "/translate")
        self.error(st, json.loads(body), 405, "POST")
        self.assertIn("POST", hd["allow"])
        st, hd, body = self.srv.request("DELETE", "/health")
        self.assertEqual(st, 405)
        self.assertIn("GET", hd["allow"])
        st, _, body = self.srv.request("GET", "/nope")
        self.error(st, json.loads(body), 404, "not found: /nope")
        st, _, body = self.srv.request("POST", "/v3/translate", "{}", {"Content-Type": "application/json"})
        self.error(st, json.loads(body), 404, "not found")
        st, _, body = self.srv.request("POST", "/translate", "hello", {"Content-Type": "text/plain"})
        self.error(st, json.loads(body), 415, "text/plain")
        st, _, body = self.srv.request("POST", "/translate", "{}", {"Content-Type": "application/json; charset=latin-1"})
        self.error(st, json.loads(body), 415, "charset")
        st, hd, _ = self.srv.request("OPTIONS", "/translate", None,
                                     {"Origin": "http://example.test", "Access-Control-Request-Method": "POST"})
        self.assertEqual(st, 204)
        self.assertEqual(hd["access-control-allow-origin"], "*")
        self.assertIn("POST", hd["access-control-allow-methods"])

    def test_garbage_does_not_hurt(self):
        """Hostile bodies and raw bytes: answers stay sane and the server keeps working."""
        rnd = random.Random(11)
        for i in range(60):
            body = bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 300)))
            ctype = rnd.choice(["application/json", "application/x-www-form-urlencoded",
                                "multipart/form-data; boundary=xx"])
            st, _, resp = self.srv.request("POST", "/translate", body, {"Content-Type": ctype})
            self.assertIn(st, (200, 400, 413), resp)
        nested = "[" * 3000 + "]" * 3000
        st, _, _ = self.srv.request("POST", "/translate", '{"text": %s}' % nested, {"Content-Type": "application/json"})
        self.assertEqual(st, 400)
        for raw in [b"GARBAGE\r\n\r\n", b"POST /translate HTTP/1.1\r\nContent-Length: 5\r\n\r\n",
                    b"GET /health HTTP/1.1\r\nHost: x\r\n" + b"X: " + b"y" * 100000 + b"\r\n\r\n"]:
            with socket.create_connection(("127.0.0.1", self.srv.port), timeout=10) as s:
                try:
                    s.sendall(raw)
                    s.shutdown(socket.SHUT_WR)
                    s.recv(4096)
                except OSError:
                    pass
        st, _, body = self.srv.post_json({"text": "still fine"})
        self.assertEqual(st, 200, body)

    def test_keep_alive(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.srv.port, timeout=60)
        for i in range(5):
            conn.request("POST", "/translate", body=json.dumps({"text": "hello %d" % i}),
                         headers={"Content-Type": "application/json"})
            r = conn.getresponse()
            self.assertEqual(r.status, 200)
            r.read()
            conn.request("GET", "/health")
            r = conn.getresponse()
            self.assertEqual(r.status, 200)
            r.read()
        conn.close()

    def test_metrics_and_access_log(self):
        self.srv.post_json({"text": "metrics please. Two sentences."})
        self.srv.request("GET", "/nope")
        m = self.srv.metrics()
        self.assertRegex(m, r'mt_http_requests_total\{endpoint="/translate",status="200"\} \d+')
        self.assertRegex(m, r'mt_http_requests_total\{endpoint="other",status="404"\} \d+')
        self.assertRegex(m, r'mt_sentences_translated_total\{model="tiny-en-de"\} \d+')
        self.assertRegex(m, r'mt_source_tokens_total\{model="tiny-en-de"\} \d+')
        self.assertRegex(m, r'mt_target_tokens_total\{model="tiny-en-de"\} \d+')
        for name in ["mt_queue_depth", "mt_queue_requests", "mt_workers 2", "mt_ready 1",
                     'mt_batch_sentences_bucket{le="+Inf"}', "mt_batch_tokens_count",
                     'mt_http_request_duration_seconds_bucket{endpoint="/translate",le="0.1"}',
                     "mt_queue_wait_seconds_count", "mt_requests_rejected_total",
                     "# TYPE mt_http_request_duration_seconds histogram"]:
            self.assertIn(name, m)
        self.assertGreaterEqual(self.srv.metric("mt_sentences_translated_total"), 2)
        log = self.srv.log()
        self.assertRegex(log, r"event=access method=POST path=/translate status=200 bytes_in=\d+ "
                              r"bytes_out=\d+ sentences=2 latency_ms=[\d.]+ remote=127\.0\.0\.1 model=tiny-en-de")
        self.assertRegex(log, r"event=access method=GET path=/nope status=404 .* error=")


class TestApiKeys(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server(["--model", MODEL, "--workers", "1"], env={"MT_API_KEYS": "k-one, k-two"}, name="keys")

    @classmethod
    def tearDownClass(cls):
        assert cls.srv.stop() == 0

    def test_keys(self):
        req = {"q": "hello", "source": "en", "target": "de"}
        st, _, body = self.srv.post_json(req)
        self.assertEqual(st, 403)
        self.assertIn("missing API key", body["error"])
        st, _, body = self.srv.post_json(dict(req, api_key="nope"))
        self.assertEqual((st, body), (403, {"error": "invalid API key"}))
        st, _, body = self.srv.post_json(dict(req, api_key="k-two"))
        self.assertEqual(st, 200, body)
        st, _, body = self.srv.post_json(req, headers={"Authorization": "Bearer k-one"})
        self.assertEqual(st, 200, body)
        st, _, body = self.srv.post_json(req, headers={"X-API-Key": "k-one"})
        self.assertEqual(st, 200, body)
        st, _, body = self.srv.post_json(req, headers={"Authorization": "Bearer k-on"})
        self.assertEqual(st, 403)
        form = urllib.parse.urlencode(dict(req, api_key="k-one"))
        st, _, body = self.srv.request("POST", "/translate", form, {"Content-Type": "application/x-www-form-urlencoded"})
        self.assertEqual(st, 200, body)
        # The key is checked before the fields: no validation detail leaks without one.
        st, _, body = self.srv.post_json({"text": 5})
        self.assertEqual(st, 403)
        for path in ("/languages", "/health"):
            self.assertEqual(self.srv.request("GET", path)[0], 200)
        # /metrics is protected like the API once keys exist (tests/test_hardening.py)
        self.assertEqual(self.srv.request("GET", "/metrics")[0], 403)
        self.assertEqual(self.srv.request("GET", "/metrics", headers={"X-API-Key": "k-one"})[0], 200)


class TestTwoModels(unittest.TestCase):
    """A config file with two models (and one served under a second pair)."""

    @classmethod
    def setUpClass(cls):
        cfg = os.path.join(TMP, "two.toml")
        with open(cfg, "w") as f:
            f.write("# two models\n[server]\nport = 1  # overridden by --port 0\n"
                    "[workers]\ncount = 1\n[batch]\nmax_wait_ms = 2\n"
                    "[[models]]\npath = %s\nname = \"en-de\"\n"
                    "[[models]]\npath = %s\nsource = \"de\"\ntarget = \"en\"\nname = \"de-en\"\n"
                    "[[models]]\npath = %s\nsource = \"fr\"\ntarget = \"de\"\nname = \"fr-de\"\n"
                    % (json.dumps(MODEL), json.dumps(os.path.relpath(MODEL2, TMP)),
                       json.dumps(relabel(MODEL, "fr", "de", os.path.join(TMP, "tiny-fr-de")))))
        cls.srv = Server(["--config", cfg], env={"MT_WORKERS": "2"}, name="two")

    @classmethod
    def tearDownClass(cls):
        assert cls.srv.stop() == 0

    def test_languages(self):
        st, _, body = self.srv.request("GET", "/languages")
        langs = {l["code"]: l["targets"] for l in json.loads(body)}
        self.assertEqual(langs, {"de": ["en"], "en": ["de"], "fr": ["de"]})
        h = json.loads(self.srv.request("GET", "/health")[2])
        self.assertEqual(h["workers"], 2)  # MT_WORKERS beats the file's count

    def test_routing(self):
        texts = corpus_lines(3, seed=8)
        want1 = cli_translate(MODEL, texts)
        want2 = cli_translate(MODEL2, texts)
        st, _, body = self.srv.post_json({"text": texts, "source": "en", "target": "de"})
        self.assertEqual((st, body["translations"], body["model"]), (200, want1, "en-de"))
        st, _, body = self.srv.post_json({"text": texts, "source": "de", "target": "en"})
        self.assertEqual((st, body["translations"], body["model"]), (200, want2, "de-en"))
        st, _, body = self.srv.post_json({"q": texts[0], "source": "fr", "target": "de"})
        self.assertEqual((st, body["translatedText"]), (200, want1[0]))
        # auto: detection among every language the models read or write (en, de, fr): these
        # English texts into en come back unchanged, detected en (it used to pick de, the
        # only source into en, at confidence 0, and "translate"); into de: en-de
        st, _, body = self.srv.post_json({"q": texts[0], "source": "auto", "target": "en"})
        self.assertEqual(st, 200, body)
        self.assertEqual(body["translatedText"], texts[0])
        self.assertEqual(body["detectedLanguage"]["language"], "en")
        st, _, body = self.srv.post_json({"q": texts[0], "source": "auto", "target": "de"})
        self.assertEqual(st, 200, body)
        self.assertEqual(body["detectedLanguage"]["language"], "en")
        self.assertEqual(body["translatedText"], want1[0])
        st, _, body = self.srv.post_json({"text": "x", "source": "en", "target": "en"})
        self.assertEqual(st, 400)
        for pair in ("en-de", "de-en", "fr-de"):
            self.assertIn(pair, body["error"])
        # no language at all: the first model listed is the default
        st, _, body = self.srv.post_json({"text": texts})
        self.assertEqual((st, body["translations"], body["model"]), (200, want1, "en-de"))
        st, _, body = self.srv.post_json({"text": "x", "source": "auto"})
        self.assertEqual(st, 400)
        self.assertIn("missing field 'target': several language pairs are served", body["error"])

    def test_concurrent_mixed_models(self):
        texts = corpus_lines(24, seed=9)
        want = {"en": cli_translate(MODEL, texts), "de": cli_translate(MODEL2, texts)}
        errors = []

        def client(i):
            src = "en" if i % 2 else "de"
            tgt = "de" if src == "en" else "en"
            st, _, body = self.srv.post_json({"text": texts[i], "source": src, "target": tgt})
            if st != 200 or body["translations"] != [want[src][i]]:
                errors.append((i, st, body))

        threads = [threading.Thread(target=client, args=(i,)) for i in range(len(texts))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        self.assertEqual(errors, [])


class TestMultilingual(unittest.TestCase):
    """A model whose source vocabulary has >>xxx<< tokens offers those targets; the
    target code selects the token prepended to each sentence (as mt-translate
    --target-lang does)."""

    def test_language_tokens(self):
        model = os.path.join(TMP, "tiny-multi")
        shutil.copytree(MODEL, model)
        with open(os.path.join(model, "vocab.json"), encoding="utf-8") as f:
            vocab = json.load(f)
        plain = sorted((i, p) for p, i in vocab.items() if not p.startswith("<"))
        for (i, piece), token in zip(plain[-2:], [">>deu<<", ">>fra<<"]):
            del vocab[piece]
            vocab[token] = i
        with open(os.path.join(model, "vocab.json"), "w", encoding="utf-8") as f:
            json.dump(vocab, f, ensure_ascii=False)
        srv = Server(["--model", model], name="multi")
        try:
            langs = {l["code"]: l["targets"] for l in json.loads(srv.request("GET", "/languages")[2])}
            self.assertEqual(sorted(langs["en"]), ["de", "deu", "fra"])
            self.assertEqual(langs["fra"], [])
            self.assertEqual(json.loads(srv.request("GET", "/languages")[2])[-1]["name"], "French")
            texts = corpus_lines(4, seed=17)
            for target in ("fra", "deu", "de"):
                want = cli_nbest(model, texts, 2, [] if target == "de" else ["--target-lang", target])
                st, _, body = srv.post_json({"text": texts, "source": "en", "target": target, "n_best": 2})
                self.assertEqual(st, 200, body)
                self.assertEqual(body["translations"], [w[0][0] for w in want], target)
                for got, w in zip(body["n_best"], want):
                    self.assertEqual([g["text"] for g in got], [t for t, _ in w])
                    for g, (_, score) in zip(got, w):
                        self.assertAlmostEqual(g["score"], score, places=4)
            st, _, fra = srv.post_json({"text": texts, "target": "fra"})
            st, _, deu = srv.post_json({"text": texts, "target": "deu"})
            self.assertNotEqual(fra["scores"], deu["scores"])  # the token changes the input
        finally:
            self.assertEqual(srv.stop(), 0)


class TestDecodingControls(unittest.TestCase):
    """Issue 17 through the server: each decoding control in the native and LibreTranslate
    forms gives what mt-translate gives with the same flags, [decoding] defaults, 400s naming
    the field and its range, seeded sampling under 16 concurrent clients, token extras."""

    @classmethod
    def setUpClass(cls):
        cls.srv = Server(["--model", MODEL, "--workers", "2", "--batch-max-sentences", "8"], name="decoding")
        cls.texts = corpus_lines(6, seed=33)

    @classmethod
    def tearDownClass(cls):
        rc = cls.srv.stop()
        assert rc == 0, "exit code %s\n%s" % (rc, cls.srv.log())

    CASES = [  # (request fields, the same as mt-translate flags)
        ({"sampling_topk": 0, "sampling_temperature": 2, "seed": 5},
         ["--sampling-topk", "0", "--sampling-temperature", "2", "--seed", "5"]),
        ({"sampling_topk": 8, "sampling_topp": 0.7, "seed": 11},
         ["--sampling-topk", "8", "--sampling-topp", "0.7", "--seed", "11"]),
        ({"no_repeat_ngram_size": 1}, ["--no-repeat-ngram-size", "1"]),
        ({"repetition_penalty": 2.5}, ["--repetition-penalty", "2.5"]),
        ({"min_length": 9}, ["--min-length", "9"]),
        ({"target_prefix_ids": [5, 9]}, ["--target-prefix-ids", "5 9"]),
        ({"target_prefix_ids": "5 9"}, ["--target-prefix-ids", "5 9"]),
        ({"target_prefix": "ab"}, ["--target-prefix", "ab"]),
        ({"replace_unknowns": True}, ["--replace-unknowns"]),
        ({"beam_size": 2, "min_length": 3, "no_repeat_ngram_size": 2}, ["--beam", "2", "--min-length", "3",
                                                                         "--no-repeat-ngram-size", "2"]),
    ]

    def test_each_option_in_both_forms_equals_the_cli(self):
        for fields, flags in self.CASES:
            want = cli_translate(MODEL, self.texts, flags)
            st, _, body = self.srv.post_json(dict({"text": self.texts}, **fields))
            self.assertEqual(st, 200, (fields, body))
            self.assertEqual(body["translations"], want, fields)
            if "beam_size" in fields:  # not a LibreTranslate field
                continue
            st, _, body = self.srv.post_json(dict({"q": self.texts, "source": "en", "target": "de"}, **fields))
            self.assertEqual(st, 200, (fields, body))
            self.assertEqual(body["translatedText"], want, fields)
        # sampling changes the output (a random model at temperature 2), and the default is beam search
        self.assertNotEqual(cli_translate(MODEL, self.texts, self.CASES[0][1]), cli_translate(MODEL, self.texts))

    def test_per_text_target_prefix(self):
        plain = cli_translate(MODEL, self.texts[:2], ["--output", "ids"])
        st, _, body = self.srv.post_json({"text": self.texts[:2], "target_prefix_ids": [[7, 8], None]})
        self.assertEqual(st, 200, body)
        first = cli_translate(MODEL, self.texts[:1], ["--target-prefix-ids", "7 8"])
        self.assertEqual(body["translations"], first + cli_translate(MODEL, self.texts[1:2]))
        self.assertTrue(plain)

    def test_form_encoded_controls(self):
        want = cli_translate(MODEL, self.texts[:1], ["--min-length", "6", "--return-scores"])
        form = urllib.parse.urlencode({"q": self.texts[0], "source": "en", "target": "de", "min_length": "6",
                                       "return_scores": "true"})
        st, _, raw = self.srv.request("POST", "/translate", form,
                                      {"Content-Type": "application/x-www-form-urlencoded"})
        self.assertEqual(st, 200, raw)
        self.assertEqual(json.loads(raw)["translatedText"], want[0])

    def test_server_defaults_from_the_decoding_section(self):
        flags = ["--sampling-topk", "0", "--sampling-temperature", "2", "--seed", "77"]
        srv = Server(["--model", MODEL] + flags, name="decoding-defaults")
        try:
            st, _, body = srv.post_json({"text": self.texts})
            self.assertEqual(st, 200, body)
            self.assertEqual(body["translations"], cli_translate(MODEL, self.texts, flags))
            st, _, body = srv.post_json({"text": self.texts, "sampling_topk": 1})  # a request overrides
            self.assertEqual(body["translations"], cli_translate(MODEL, self.texts))
        finally:
            self.assertEqual(srv.stop(), 0)
        # the same defaults from a configuration file's [decoding] section
        path = os.path.join(TMP, "decoding.toml")
        with open(path, "w") as f:
            f.write("[decoding]\nsampling_topk = 0\nsampling_temperature = 2.0\nseed = 77\n"
                    "min_length = 2\nno_repeat_ngram_size = 3\nrepetition_penalty = 1.5\n")
        srv = Server(["--model", MODEL, "--config", path], name="decoding-file")
        try:
            st, _, body = srv.post_json({"text": self.texts})
            self.assertEqual(body["translations"], cli_translate(MODEL, self.texts, flags + [
                "--min-length", "2", "--no-repeat-ngram-size", "3", "--repetition-penalty", "1.5"]))
        finally:
            self.assertEqual(srv.stop(), 0)
        proc = subprocess.run([SERVER, "--model", MODEL, "--sampling-topp", "2"], capture_output=True, timeout=60)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("sampling-topp", proc.stderr.decode() + proc.stdout.decode())

    def test_invalid_values_are_400_naming_the_field(self):
        base = {"text": "A dog runs."}
        for fields, needle in [
            ({"sampling_topk": -1}, "'sampling_topk' must be an integer between 0 and"),
            ({"sampling_topk": "x"}, "'sampling_topk' must be an integer"),
            ({"sampling_topp": 0}, "'sampling_topp' must be a number in (0, 1]"),
            ({"sampling_topp": 1.5}, "'sampling_topp' must be a number in (0, 1]"),
            ({"sampling_temperature": 0}, "'sampling_temperature' must be a number between 1e-06 and 1000"),
            ({"sampling_temperature": 1e-38}, "'sampling_temperature' must be a number between 1e-06 and 1000"),
            ({"sampling_temperature": -1}, "'sampling_temperature' must be a number between"),
            ({"seed": -1}, "'seed' must be an integer between 0 and"),
            ({"seed": 1.5}, "'seed' must be an integer"),
            ({"no_repeat_ngram_size": -1}, "'no_repeat_ngram_size' must be an integer between 0 and 1000"),
            ({"repetition_penalty": 0.5}, "'repetition_penalty' must be a number between 1 and 1000"),
            ({"min_length": -3}, "'min_length' must be an integer between 0 and"),
            ({"return_scores": "yes"}, "'return_scores' must be true or false"),
            ({"return_alignments": 2}, "'return_alignments' must be true or false"),
            ({"replace_unknowns": []}, "'replace_unknowns' must be true or false"),
            ({"alignment_layer": 50, "return_alignments": True}, "alignment_layer must be in"),
            ({"sampling_topk": 5, "beam_size": 4}, "needs beam_size 1"),
            ({"sampling_topk": 100000000}, "'sampling_topk' must be an integer between 0 and 1000000"),
            ({"target_prefix": 5}, "'target_prefix' must be a string"),
            ({"target_prefix": ["a", "b"]}, "'target_prefix' has 2 entries for 1 texts"),
            ({"target_prefix_ids": [-1]}, "'target_prefix_ids' must hold target ids"),
            ({"target_prefix_ids": "1 x"}, "target_prefix: bad target id"),
            ({"target_prefix": "a", "target_prefix_ids": "1"}, "not both"),
            ({"format": "html", "return_alignments": True}, "not available with format html"),
        ]:
            for form in ({}, {"q": "A dog runs.", "source": "en", "target": "de"}):
                if form and "beam_size" in fields:  # LibreTranslate has no beam_size
                    continue
                body_in = dict(base if not form else form, **fields)
                st, _, body = self.srv.post_json(body_in)
                self.assertEqual(st, 400, (body_in, body))
                self.assertIn(needle, body["error"], body_in)

    def test_seeded_sampling_is_stable_across_16_concurrent_clients(self):
        texts = corpus_lines(48, seed=44)
        flags = ["--sampling-topk", "0", "--sampling-temperature", "1.5", "--seed", "2024"]
        groups = [texts[i:i + 3] for i in range(0, 48, 3)]
        want = [cli_translate(MODEL, g, flags) for g in groups]
        errors = []
        lock = threading.Lock()

        def client(c):
            for k in range(4):
                g = (c + k) % len(groups)
                st, _, body = self.srv.post_json({"text": groups[g], "sampling_topk": 0,
                                                  "sampling_temperature": 1.5, "seed": 2024})
                if st != 200 or body["translations"] != want[g]:
                    with lock:
                        errors.append((c, k, st, body))

        threads = [threading.Thread(target=client, args=(c,)) for c in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        self.assertEqual(errors, [])

    def test_token_scores_and_alignments(self):
        ids = cli_translate(MODEL, self.texts, ["--output", "ids"])
        st, _, body = self.srv.post_json({"text": self.texts, "return_scores": True, "return_alignments": True,
                                          "alignment_layer": 0})
        self.assertEqual(st, 200, body)
        self.assertEqual(body["translations"], cli_translate(MODEL, self.texts))
        for t, (src, out, row) in enumerate(zip(self.texts, body["translations"], ids)):
            n = len(row.split())
            self.assertEqual(len(body["token_scores"][t]), n)
            self.assertTrue(all(x <= 0 for x in body["token_scores"][t]))
            self.assertEqual([p[1] for p in body["token_alignments"][t]], list(range(n)))
            self.assertTrue(all(p[0] >= 0 for p in body["token_alignments"][t]))
            for s_w, t_w in body["alignments"][t]:
                self.assertTrue(0 <= s_w < len(src.split()) and 0 <= t_w < len(out.split()), (src, out))
        st, _, body = self.srv.post_json({"text": self.texts[0]})
        self.assertNotIn("alignments", body)
        self.assertNotIn("token_scores", body)


class TestDeterminismConcurrent(unittest.TestCase):
    """32 clients at once: every answer equals mt-translate's for the same input."""

    def test_32_clients(self):
        srv = Server(["--model", MODEL, "--workers", "2", "--batch-max-sentences", "16"], name="det")
        try:
            texts = corpus_lines(96, seed=10)
            want = cli_translate(MODEL, texts)
            joined = [texts[i] + " " + texts[i + 1] for i in range(0, 96, 2)]
            pairs = list(zip(joined, cli_translate(MODEL, joined)))
            errors = []
            lock = threading.Lock()

            def client(c):
                for k in range(6):
                    i = (c * 6 + k) % 96
                    if k % 3 == 2:  # a two-sentence text
                        p = pairs[i // 2]
                        st, _, body = srv.post_json({"text": p[0]})
                        ok = st == 200 and body["translations"] == [p[1]]
                    elif k % 3 == 1:
                        st, _, body = srv.post_json({"q": texts[i:i + 3], "source": "en", "target": "de"})
                        ok = st == 200 and body["translatedText"] == want[i:i + 3]
                    else:
                        st, _, body = srv.post_json({"text": texts[i]})
                        ok = st == 200 and body["translations"] == [want[i]]
                    if not ok:
                        with lock:
                            errors.append((c, k, st, body))

            threads = [threading.Thread(target=client, args=(c,)) for c in range(32)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(300)
            self.assertEqual(errors, [])
            # Batches really did mix requests: some batch held more than one sentence.
            m = srv.metrics()
            one = float(re.search(r'mt_batch_sentences_bucket\{le="1"\} (\d+)', m).group(1))
            total = float(re.search(r"mt_batch_sentences_count (\d+)", m).group(1))
            self.assertLess(one, total, m)
        finally:
            self.assertEqual(srv.stop(), 0)


class TestOverloadDeadlineDisconnect(unittest.TestCase):

    BIG = None

    @classmethod
    def setUpClass(cls):
        # Enough work to keep one worker busy for a while: many sentences, wide beam.
        cls.BIG = {"text": [" ".join(corpus_lines(6, seed=i)) for i in range(16)],
                   "beam_size": 6, "max_length": 128}

    def test_queue_full_503(self):
        srv = Server(["--model", MODEL, "--workers", "1", "--queue-capacity", "1", "--max-texts", "64",
                      "--batch-max-sentences", "4", "--request-timeout", "0"], name="overload")
        try:
            results = []
            seen_503 = None
            for attempt in range(20):
                t = threading.Thread(target=lambda: results.append(srv.post_json(self.BIG)[0]))
                t.start()
                busy = wait_until(lambda: srv.metric("mt_queue_requests") >= 1, timeout=30, step=0.005)
                if busy:
                    st, hd, body = srv.post_json({"text": "one more"})
                    if st == 503:
                        seen_503 = (hd, body)
                t.join(300)
                if seen_503:
                    break
            self.assertIsNotNone(seen_503, "never saw 503 with a full queue")
            hd, body = seen_503
            self.assertEqual(hd.get("retry-after"), "1")
            self.assertIn("overloaded", body["error"])
            self.assertTrue(all(s == 200 for s in results), results)
            self.assertGreaterEqual(srv.metric("mt_requests_rejected_total"), 1)
            st, _, body = srv.post_json({"text": "after the storm"})
            self.assertEqual(st, 200, body)
        finally:
            self.assertEqual(srv.stop(), 0)

    def test_deadline_504(self):
        srv = Server(["--model", MODEL, "--workers", "1", "--max-texts", "64", "--request-timeout", "0.001",
                      "--batch-max-sentences", "4"], name="deadline")
        try:
            st, _, body = srv.post_json(self.BIG)
            self.assertEqual(st, 504, body)
            self.assertIn("request timeout", body["error"])
            self.assertGreater(srv.metric("mt_sentences_cancelled_total"), 0)
            self.assertTrue(wait_until(lambda: srv.metric("mt_queue_depth") == 0, timeout=60))
        finally:
            self.assertEqual(srv.stop(), 0)

    def test_client_disconnect_stops_compute(self):
        srv = Server(["--model", MODEL, "--workers", "1", "--max-texts", "64", "--batch-max-sentences", "2",
                      "--request-timeout", "0"], name="disconnect")
        try:
            body = json.dumps(self.BIG).encode()
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
            s.sendall(b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self.assertTrue(wait_until(lambda: srv.metric("mt_queue_requests") >= 1, timeout=30))
            s.close()
            # Its queued sentences are dropped and the request ends as 499 in the access log.
            self.assertTrue(wait_until(lambda: srv.metric("mt_sentences_cancelled_total") > 0, timeout=60),
                            srv.metrics())
            self.assertTrue(wait_until(lambda: srv.metric("mt_queue_requests") == 0, timeout=60))
            self.assertTrue(wait_until(lambda: "status=499" in srv.log(), timeout=30), srv.log())
            self.assertLess(srv.metric("mt_batch_sentences_sum"), 16 * 6)  # not all were computed
            st, _, resp = srv.post_json({"text": "next client"})
            self.assertEqual(st, 200, resp)
        finally:
            self.assertEqual(srv.stop(), 0)


class TestLifecycle(unittest.TestCase):

    def test_sigterm_drains_in_flight(self):
        srv = Server(["--model", MODEL, "--workers", "1", "--max-texts", "64", "--drain-timeout", "600",
                      "--request-timeout", "0"], name="drain")
        texts = corpus_lines(16, seed=12)
        result = {}
        t = threading.Thread(target=lambda: result.update(r=srv.post_json({"text": texts, "beam_size": 6})))
        t.start()
        self.assertTrue(wait_until(lambda: srv.metric("mt_queue_requests") >= 1, timeout=30))
        srv.proc.send_signal(signal.SIGTERM)
        t.join(300)
        st, _, body = result["r"]
        self.assertEqual(st, 200, body)
        self.assertEqual(body["translations"], cli_translate(MODEL, texts, ["--beam", "6"]))
        self.assertEqual(srv.stop(), 0)
        log = srv.log()
        self.assertIn("event=draining signal=SIGTERM", log)
        self.assertIn("event=stopped exit_code=0", log)
        with self.assertRaises(OSError):
            socket.create_connection(("127.0.0.1", srv.port), timeout=5).close()

    def test_drain_timeout_cancels(self):
        srv = Server(["--model", MODEL, "--workers", "1", "--max-texts", "64", "--drain-timeout", "0"],
                     name="drain0")
        big = {"text": [" ".join(corpus_lines(8, seed=i)) for i in range(64)], "beam_size": 8}
        result = {}

        def call():
            try:
                result["r"] = srv.post_json(big)
            except (OSError, http.client.HTTPException) as e:
                result["r"] = (None, None, str(e))

        t = threading.Thread(target=call)
        t.start()
        self.assertTrue(wait_until(lambda: srv.metric("mt_queue_requests") >= 1, timeout=30))
        srv.proc.send_signal(signal.SIGINT)
        t.join(120)
        self.assertEqual(srv.stop(), 0)
        st = result["r"][0]
        self.assertIn(st, (503, 200, None))  # cancelled (or finished first); never hangs
        if st == 503:
            self.assertIn("shutting down", result["r"][2]["error"])

    def test_health_503_while_loading(self):
        """The port opens before the models load; until then /health and /translate say 503.
        The model's tokenizer_config.json is a FIFO, so loading waits until the test feeds it."""
        model = os.path.join(TMP, "slow-model")
        os.mkdir(model)
        for name in os.listdir(MODEL):
            if name != "tokenizer_config.json":
                os.symlink(os.path.join(MODEL, name), os.path.join(model, name))
        fifo = os.path.join(model, "tokenizer_config.json")
        os.mkfifo(fifo)
        with open(os.path.join(MODEL, "tokenizer_config.json"), "rb") as f:
            content = f.read()
        srv = Server(["--model", model], wait_ready=False, name="loading")
        try:
            st, hd, body = srv.request("GET", "/health")
            self.assertEqual((st, json.loads(body)), (503, {"status": "loading"}))
            st, hd, body = srv.post_json({"text": "too early"})
            self.assertEqual(st, 503)
            self.assertIn("loading", body["error"])
            self.assertEqual(hd.get("retry-after"), "1")
            self.assertEqual(srv.request("GET", "/languages")[0], 503)
            self.assertRegex(srv.metrics(), r"mt_ready 0")

            def ready():  # feed the FIFO each time the loader opens it
                try:
                    fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
                except OSError:
                    fd = None
                if fd is not None:
                    try:
                        os.write(fd, content)
                    finally:
                        os.close(fd)
                try:
                    return srv.request("GET", "/health", timeout=5)[0] == 200
                except OSError:
                    return False

            self.assertTrue(wait_until(ready, timeout=120, step=0.05), srv.log())
            st, _, body = srv.post_json({"text": "now"})
            self.assertEqual(st, 200, body)
        finally:
            self.assertEqual(srv.stop(), 0)

    def test_startup_errors(self):
        r = subprocess.run([SERVER, "--model", os.path.join(TMP, "missing"), "--port", "0"],
                           capture_output=True, timeout=60)
        self.assertEqual(r.returncode, 1)
        self.assertIn(b"cannot load model", r.stderr + r.stdout)
        bad = os.path.join(TMP, "bad.toml")
        with open(bad, "w") as f:
            f.write("[server]\nport = 8080\nworkres = 2\n")
        r = subprocess.run([SERVER, "--config", bad], capture_output=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"bad.toml:3:1: unknown key 'workres' in [server]", r.stderr)
        r = subprocess.run([SERVER, "--port", "x", "--model", MODEL], capture_output=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"--port: 'x' is not an integer", r.stderr)
        r = subprocess.run([SERVER], capture_output=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"no model to serve", r.stderr)
        r = subprocess.run([SERVER, "--help"], capture_output=True, timeout=60)
        self.assertEqual(r.returncode, 0)
        self.assertIn(b"--queue-capacity", r.stdout)
        r = subprocess.run([SERVER, "--model", MODEL + ":en:de", "--beam", "3", "--print-config"],
                           capture_output=True, timeout=60, env=dict(os.environ, MT_PORT="9999"))
        self.assertEqual(r.returncode, 0)
        self.assertIn(b"port = 9999", r.stdout)
        self.assertIn(b"beam_size = 3", r.stdout)
        # The port is taken: a clear error, exit 1.
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            s.listen(1)
            r = subprocess.run([SERVER, "--model", MODEL, "--port", str(s.getsockname()[1])],
                               capture_output=True, timeout=60)
        self.assertEqual(r.returncode, 1)
        self.assertIn(b"cannot listen", r.stderr)

    def test_env_and_defaults(self):
        srv = Server([], env={"MT_MODELS": MODEL + ":en:de", "MT_BEAM_SIZE": "2", "MT_ACCESS_LOG": "false"},
                     name="env")
        try:
            text = corpus_lines(1, seed=13)[0]
            st, _, body = srv.post_json({"text": text})
            self.assertEqual(body["translations"], cli_translate(MODEL, [text], ["--beam", "2"]))
            self.assertNotIn("event=access", srv.log())
        finally:
            self.assertEqual(srv.stop(signal.SIGINT), 0)


class TestLoad(unittest.TestCase):
    """32 concurrent clients, 2,000+ requests of mixed sizes, all answered correctly."""

    def test_load(self):
        n_clients, per_client = 32, 64
        srv = Server(["--model", MODEL, "--workers", "2", "--max-texts", "32", "--queue-capacity", "256",
                      "--beam", "2", "--max-length", "16", "--http-threads", "4"], name="load")
        try:
            pool = corpus_lines(200, seed=14)
            want = dict(zip(pool, cli_translate(MODEL, pool, ["--beam", "2", "--max-length", "16"])))
            rnd = random.Random(15)
            plans = [[rnd.sample(range(200), rnd.choice([1, 1, 1, 2, 3, 4, 8])) for _ in range(per_client)]
                     for _ in range(n_clients)]
            failures, done = [], [0]
            lock = threading.Lock()
            deadline = time.time() + 900

            def client(c):
                conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=300)
                for k, idx in enumerate(plans[c]):
                    if time.time() > deadline:
                        break
                    texts = [pool[i] for i in idx]
                    libre = (c + k) % 2
                    req = {"q": texts, "source": "en", "target": "de"} if libre else {"text": texts}
                    try:
                        conn.request("POST", "/translate", body=json.dumps(req),
                                     headers={"Content-Type": "application/json"})
                        r = conn.getresponse()
                        st, body = r.status, json.loads(r.read())
                    except (OSError, http.client.HTTPException, ValueError) as e:
                        conn.close()
                        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=300)
                        st, body = None, str(e)
                    got = (body.get("translatedText") if libre else body.get("translations")) \
                        if isinstance(body, dict) else None
                    with lock:
                        done[0] += 1
                        if st != 200 or got != [want[t] for t in texts]:
                            failures.append((c, k, st, body))
                conn.close()

            threads = [threading.Thread(target=client, args=(c,)) for c in range(n_clients)]
            t0 = time.time()
            for t in threads:
                t.start()
            for t in threads:
                t.join(1000)
            elapsed = time.time() - t0
            self.assertEqual(failures[:5], [])
            self.assertEqual(done[0], n_clients * per_client)
            self.assertGreaterEqual(done[0], 2000)
            print("load: %d requests from %d clients in %.1f s" % (done[0], n_clients, elapsed), file=sys.stderr)
            # Every request has completed (only this /metrics request is in flight).
            self.assertTrue(wait_until(lambda: srv.metric("mt_http_in_flight") == 1, timeout=30))
        finally:
            rc = srv.stop()
            self.assertEqual(rc, 0, srv.log()[-3000:])  # under ASan a leak makes this non-zero
        self.assertNotIn("ERROR: AddressSanitizer", srv.log())
        self.assertNotIn("runtime error:", srv.log())


@unittest.skipUnless(os.path.exists(os.path.join(BUNDLED, "model.safetensors")), "no bundled model")
class TestBundledModel(unittest.TestCase):
    def test_bundled(self):
        # A snapshot: the training run may rewrite models/en-de while the test runs.
        model = os.path.join(TMP, "bundled-en-de")
        shutil.copytree(BUNDLED, model)
        srv = Server(["--model", model, "--workers", "2"], name="bundled")
        try:
            texts = corpus_lines(12, seed=16)
            want = cli_translate(model, texts)
            st, _, body = srv.post_json({"q": texts, "source": "en", "target": "de"})
            self.assertEqual(st, 200, body)
            self.assertEqual(body["translatedText"], want)
            text = texts[0] + " " + texts[1] + "\n" + texts[2]
            st, _, body = srv.post_json({"text": text})
            self.assertEqual(body["translations"][0], cli_text(model, text))
            errors = []

            def client(i):
                st, _, b = srv.post_json({"text": texts[i % 12]})
                if st != 200 or b["translations"] != [want[i % 12]]:
                    errors.append((i, st, b))

            threads = [threading.Thread(target=client, args=(i,)) for i in range(32)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(300)
            self.assertEqual(errors, [])
        finally:
            self.assertEqual(srv.stop(), 0)


class TestSharedComputePool(unittest.TestCase):
    """One compute pool per process: a server with two models runs exactly as many threads
    as with one (each (worker, model) state used to start threads of its own, so a second
    model added workers x (threads_per_worker - 1) threads), and both models translate
    as mt-translate does."""

    def thread_count(self, models):
        args = []
        for m in models:
            args += ["--model", m]
        srv = Server(args + ["--workers", "2", "--threads-per-worker", "3"], name="pool")
        try:
            for m in models:  # every state has run a product on the shared pool
                src = json.loads(open(os.path.join(m, "tokenizer_config.json")).read())
                st, _, body = srv.post_json({"text": "a b c d e f g", "source": src["source_lang"],
                                             "target": src["target_lang"]})
                self.assertEqual(st, 200, body)
                self.assertEqual(body["translations"], cli_translate(m, ["a b c d e f g"]))
            return len(os.listdir("/proc/%d/task" % srv.proc.pid))
        finally:
            self.assertEqual(srv.stop(), 0)

    def test_second_model_adds_no_threads(self):
        self.assertEqual(self.thread_count([MODEL, MODEL2]), self.thread_count([MODEL]))


class TestSentenceCache(unittest.TestCase):
    """The sentence cache (workers.sentence_cache_mb, on by default): a repeated sentence is
    answered from it with the identical translation and counted as a hit; sampling bypasses
    it; size 0 turns it off."""

    def test_hits_are_identical_and_counted(self):
        srv = Server(["--model", MODEL, "--workers", "1"], name="cache")
        try:
            req = {"text": ["a b c d e f", "g h i j"], "beam_size": 3, "n_best": 2}
            st, _, first = srv.post_json(req)
            self.assertEqual(st, 200, first)
            self.assertEqual(srv.metric("mt_sentence_cache_hits_total"), 0)
            misses = srv.metric("mt_sentence_cache_misses_total")
            self.assertGreaterEqual(misses, 2)
            st, _, again = srv.post_json(req)
            self.assertEqual(st, 200, again)
            self.assertEqual(again["translations"], first["translations"])
            self.assertEqual(again["n_best"], first["n_best"])
            self.assertEqual(again["scores"], first["scores"])
            self.assertEqual(srv.metric("mt_sentence_cache_hits_total"), 2)
            self.assertGreaterEqual(srv.metric("mt_sentence_cache_entries"), 2)
            self.assertGreater(srv.metric("mt_sentence_cache_bytes"), 0)
            # other options are another key: computed, and equal to mt-translate's
            st, _, beam1 = srv.post_json({"text": "a b c d e f", "beam_size": 1})
            self.assertEqual(beam1["translations"], cli_translate(MODEL, ["a b c d e f"], ["--beam", "1"]))
            self.assertEqual(srv.metric("mt_sentence_cache_hits_total"), 2)
            # sampling and per-token extras never use it
            for extra in ({"sampling_topk": 0, "seed": 3}, {"return_scores": True}):
                srv.post_json(dict({"text": "a b c d e f"}, **extra))
                srv.post_json(dict({"text": "a b c d e f"}, **extra))
            self.assertEqual(srv.metric("mt_sentence_cache_hits_total"), 2)
            # a prefixed result is not stored under the unprefixed key
            st, _, pre = srv.post_json({"text": "g h i j", "beam_size": 3, "target_prefix": "x"})
            self.assertEqual(st, 200, pre)
            st, _, plain = srv.post_json({"text": "g h i j", "beam_size": 3, "n_best": 2})
            self.assertEqual(plain["translations"][0], first["translations"][1])
        finally:
            self.assertEqual(srv.stop(), 0)

    def test_size_zero_turns_it_off(self):
        srv = Server(["--model", MODEL, "--workers", "1", "--sentence-cache-mb", "0"], name="nocache")
        try:
            for _ in range(2):
                self.assertEqual(srv.post_json({"text": "a b c"})[0], 200)
            self.assertNotIn("mt_sentence_cache_hits_total", srv.metrics())
        finally:
            self.assertEqual(srv.stop(), 0)


class TestWorkersFromCpus(unittest.TestCase):
    """--workers 0 counts the CPUs this process may run on (affinity, cgroup quota), not
    the host's: in a container limited to one CPU the server must not start a worker per
    host core."""

    def test_workers_zero_follows_affinity(self):
        allowed = os.sched_getaffinity(0)
        if len(allowed) < 2:
            self.skipTest("needs at least two CPUs to tell affinity from the host count")
        os.sched_setaffinity(0, {min(allowed)})  # the server inherits a one-CPU mask
        try:
            srv = Server(["--model", MODEL, "--workers", "0"], name="cpus0")
        finally:
            os.sched_setaffinity(0, allowed)
        try:
            h = json.loads(srv.request("GET", "/health")[2])
            self.assertEqual(h["workers"], 1)
        finally:
            self.assertEqual(srv.stop(), 0)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import testmain
    sys.exit(testmain.run(__name__))
