#!/usr/bin/env python3
"""DeepL's API v2 (server/ep_deepl.c, ep_deepl_doc.c) against a live mt-server with the
bundled en-de and de-en models: raw HTTP checks of POST /v2/translate (form and JSON
bodies, text lists, detection, DeepL's language codes and variants, split_sentences,
tag_handling xml/html with ignore_tags, formality, glossary_id, show_billed_characters),
/v2/languages, /v2/usage, the document endpoints, DeepL's auth header and deprecated
auth_key, its status codes and {"message"} bodies (400, 403, 404, 405, 413, 429, 456);
then the official deepl-node client from npm, unchanged (tests/deepl/check.js), which
is skipped (and says why) where node or npm is absent or the package cannot be installed.
Run one class: tests/test_deepl.py TestRaw"""
import json
import os
import re
import shutil
import subprocess
import sys
import time
import unittest
import urllib.parse
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mtfixtures as ts  # noqa: E402  (the Server fixture: mt-server on a free port)
import document_samples as ds  # noqa: E402

EN_DE = DE_EN = None
HERE = os.path.dirname(os.path.abspath(__file__))


def setUpModule():
    global EN_DE, DE_EN
    ts.require_server()
    # Snapshots: the training run may rewrite the bundled models while the test runs.
    EN_DE = os.path.join(ts.TMP, "deepl-en-de")
    DE_EN = os.path.join(ts.TMP, "deepl-de-en")
    shutil.copytree(ts.BUNDLED, EN_DE)
    shutil.copytree(os.path.join(ts.SRC, "models", "de-en"), DE_EN)


def form(srv, path, fields, headers=None, method="POST"):
    h = {"Content-Type": "application/x-www-form-urlencoded"}
    h.update(headers or {})
    st, hd, raw = srv.request(method, path, urllib.parse.urlencode(fields, doseq=True), h)
    return st, hd, json.loads(raw) if raw.startswith(b"{") or raw.startswith(b"[") else raw


def multipart(fields, files):
    """fields: {name: value}; files: {name: (filename, bytes)} -> (body, content type)."""
    b = "----mtdeepl%s" % uuid.uuid4().hex
    out = b""
    for k, v in fields.items():
        out += ("--%s\r\nContent-Disposition: form-data; name=\"%s\"\r\n\r\n%s\r\n" % (b, k, v)).encode()
    for k, (name, data) in files.items():
        out += ("--%s\r\nContent-Disposition: form-data; name=\"%s\"; filename=\"%s\"\r\n"
                "Content-Type: application/octet-stream\r\n\r\n" % (b, k, name)).encode() + data + b"\r\n"
    out += ("--%s--\r\n" % b).encode()
    return out, "multipart/form-data; boundary=" + b


class TestRaw(unittest.TestCase):
    """An open server (no keys): every endpoint, raw HTTP."""

    @classmethod
    def setUpClass(cls):
        cls.srv = ts.Server(["--model", EN_DE, "--model", DE_EN, "--workers", "1", "--max-texts", "8",
                             "--max-text-chars", "300"], name="deepl-raw")

    @classmethod
    def tearDownClass(cls):
        assert cls.srv.stop() == 0

    def translate(self, fields, status=200):
        st, _, b = form(self.srv, "/v2/translate", fields)
        self.assertEqual(st, status, b)
        return b

    def error(self, fields, status, fragment):
        b = self.translate(fields, status)
        self.assertIsInstance(b, dict)
        self.assertEqual(list(b), ["message"], b)
        self.assertIn(fragment, b["message"])

    def test_form_list_and_billed(self):
        b = self.translate([("text", "Hello world."), ("text", "How are you?"), ("target_lang", "DE"),
                            ("source_lang", "EN"), ("show_billed_characters", "1")])
        tr = b["translations"]
        self.assertEqual(len(tr), 2)
        for t, src in zip(tr, ["Hello world.", "How are you?"]):
            self.assertEqual(set(t), {"detected_source_language", "text", "billed_characters"})
            self.assertEqual(t["detected_source_language"], "EN")
            self.assertEqual(t["billed_characters"], len(src))
            self.assertTrue(t["text"])
        self.assertNotIn("billed_characters", self.translate({"text": "Hi.", "target_lang": "de"})["translations"][0])

    def test_json_body_and_detection(self):
        st, _, b = self.srv.post_json({"text": ["Guten Morgen, wie geht es dir?", "Good morning, my friend."],
                                       "target_lang": "en-gb"}, path="/v2/translate")
        self.assertEqual(st, 200, b)
        # the first is detected as German (routed de-en); the second, English, has no route
        # into English and goes where detection can send it
        self.assertEqual(b["translations"][0]["detected_source_language"], "DE")
        st, _, b = self.srv.post_json({"text": ["Good morning, my friend."], "target_lang": "DE"},
                                      path="/v2/translate")
        self.assertEqual(st, 200, b)
        self.assertEqual(b["translations"][0]["detected_source_language"], "EN")

    def test_target_codes(self):
        for code in ("DE", "de", "De"):
            self.translate({"text": "Hello.", "target_lang": code})
        for code in ("EN-GB", "EN-US", "en-us", "EN"):
            b = self.translate({"text": "Hallo Welt.", "source_lang": "DE", "target_lang": code})
            self.assertEqual(b["translations"][0]["detected_source_language"], "DE")
        self.error({"text": "Hello.", "target_lang": "FR"}, 400, "Value for 'target_lang' not supported.")
        self.error({"text": "Hello.", "target_lang": "DE", "source_lang": "JA"}, 400,
                   "Value for 'source_lang' not supported.")
        self.error({"text": "Hello."}, 400, "Parameter 'target_lang' not specified.")
        self.error({"target_lang": "DE"}, 400, "Parameter 'text' not specified.")

    def test_split_sentences(self):
        a = self.translate({"text": "Hello world.\nThe house is small.", "target_lang": "DE",
                            "split_sentences": "1"})["translations"][0]["text"]
        self.assertIn("\n", a)
        b = self.translate({"text": "Hello world.\nThe house is small.", "target_lang": "DE",
                            "split_sentences": "nonewlines"})["translations"][0]["text"]
        self.assertNotIn("\n", b)
        self.translate({"text": "Hello world.", "target_lang": "DE", "split_sentences": "0",
                        "preserve_formatting": "1", "outline_detection": "0", "context": "A greeting.",
                        "non_splitting_tags": "b", "splitting_tags": "p"})
        self.error({"text": "Hello.", "target_lang": "DE", "split_sentences": "2"}, 400, "split_sentences")
        self.error({"text": "Hello.", "target_lang": "DE", "preserve_formatting": "maybe"}, 400,
                   "preserve_formatting")

    def sentences_of(self, send):
        """Sentences the server translated for send() (mt_sentences_translated_total)."""
        before = self.srv.metric("mt_sentences_translated_total")
        out = send()
        # the counter moves when the work is done, before the answer; the wait is a guard
        ts.wait_until(lambda: self.srv.metric("mt_sentences_translated_total") > before, timeout=30)
        return self.srv.metric("mt_sentences_translated_total") - before, out

    def test_split_sentences_zero_is_one_sentence(self):
        # distinct texts per call, so that no sentence comes from the cache
        def send(text, split, **extra):
            f = {"text": text, "target_lang": "DE", "source_lang": "EN"}
            if split is not None:
                f["split_sentences"] = split
            f.update(extra)
            return self.translate(f)["translations"][0]["text"]

        n, _ = self.sentences_of(lambda: send("Hello world. The house is small.", "1"))
        self.assertEqual(n, 2)
        n, _ = self.sentences_of(lambda: send("Hello friend. The tree is small.", None))
        self.assertEqual(n, 2)
        n, out = self.sentences_of(lambda: send("Hello there.\nThe car is small.", "nonewlines"))
        self.assertEqual(n, 2)
        self.assertNotIn("\n", out)
        n, _ = self.sentences_of(lambda: send("Hello you. The cat is small.", "0"))
        self.assertEqual(n, 1)
        n, out = self.sentences_of(lambda: send("Hello all.\nThe dog is small.", "0"))
        self.assertEqual(n, 1)
        self.assertNotIn("\n", out)
        # markup: each block one sentence
        n, out = self.sentences_of(lambda: send("<p>Hello me. The road is long.</p><p>Good day.</p>", "0",
                                                tag_handling="html"))
        self.assertEqual(n, 2)
        self.assertTrue(out.startswith("<p>") and out.count("<p>") == 2, out)
        n, _ = self.sentences_of(lambda: send("<p>Hello us. The road is wide.</p>", "1", tag_handling="xml"))
        self.assertEqual(n, 2)
        # JSON bodies: "0" and 0
        for i, split in enumerate(("0", 0)):
            body = {"text": ["Hello %s. The book is %s." % (w, w) for w in (("red", "blue")[i],)],
                    "target_lang": "DE", "source_lang": "EN", "split_sentences": split}

            def post():
                st, _, b = self.srv.post_json(body, path="/v2/translate")
                self.assertEqual(st, 200, b)
                return b
            n, _ = self.sentences_of(post)
            self.assertEqual(n, 1, split)
        self.error({"text": "Hello.", "target_lang": "DE", "split_sentences": "none"}, 400, "split_sentences")
        self.error({"text": "Hello.", "target_lang": "DE", "split_sentences": ""}, 400, "split_sentences")

    def test_tag_handling_ignore_tags(self):
        t = self.translate({"text": "Hello <b>world</b> and <code>keep_this(x) text</code> done.",
                            "target_lang": "DE", "tag_handling": "xml", "ignore_tags": "code,var",
                            "show_billed_characters": "1"})["translations"][0]
        self.assertIn("<code>keep_this(x) text</code>", t["text"])
        self.assertIn("<b>", t["text"])
        self.assertNotIn("data-mt", t["text"])
        self.assertEqual(t["billed_characters"], len("Hello <b>world</b> and <code>keep_this(x) text</code> done."))
        # Weblate's placeholders: self-closed, ignored
        t = self.translate({"text": 'Delete <x id="0"/> files?', "target_lang": "DE",
                            "tag_handling": "xml", "ignore_tags": "x"})["translations"][0]["text"]
        self.assertIn('<x id="0"/>', t)
        # without ignore_tags the element's text is translated
        t = self.translate({"text": "<p>The <i>small house</i> is old.</p>", "target_lang": "DE",
                            "tag_handling": "html"})["translations"][0]["text"]
        self.assertTrue(t.startswith("<p>") and t.endswith("</p>") and "<i>" in t, t)
        self.assertNotIn("small house", t)
        st, _, b = self.srv.post_json({"text": ["A <keep>the sky</keep> b."], "target_lang": "DE",
                                       "tag_handling": "xml", "ignore_tags": ["keep"]}, path="/v2/translate")
        self.assertEqual(st, 200, b)
        self.assertIn("<keep>the sky</keep>", b["translations"][0]["text"])
        self.error({"text": "Hello.", "target_lang": "DE", "tag_handling": "markdown"}, 400, "tag_handling")

    def test_formality_and_glossary(self):
        for f in ("prefer_more", "prefer_less", "default"):
            self.translate({"text": "How are you?", "target_lang": "DE", "formality": f})
        for f in ("more", "less"):
            self.error({"text": "How are you?", "target_lang": "DE", "formality": f}, 400,
                       "'formality' is not supported for given 'target_lang'.")
        self.error({"text": "Hi.", "target_lang": "DE", "formality": "rude"}, 400, "formality")
        gid = str(uuid.uuid4())
        self.error({"text": "Hi.", "target_lang": "DE", "source_lang": "EN", "glossary_id": gid}, 404,
                   "Glossary not found")
        self.error({"text": "Hi.", "target_lang": "DE", "glossary_id": gid}, 400, "source_lang")

    def test_limits_and_http(self):
        self.error([("text", "x")] * 9 + [("target_lang", "DE")], 413, "Too many texts")
        self.error({"text": "a" * 301, "target_lang": "DE"}, 413, "characters")
        st, hd, b = self.srv.request("GET", "/v2/translate")
        self.assertEqual(st, 405)
        self.assertIn("message", json.loads(b))
        st, _, b = self.srv.request("POST", "/v2/translate", "{not json", {"Content-Type": "application/json"})
        self.assertEqual(st, 400)
        self.assertIn("message", json.loads(b))

    def test_weblate_request_shape(self):
        """weblate/machinery/deepl.py: a JSON body, <x id="N"></x> placeholders kept with
        ignore_tags ["x"], formality default, context; the glossary pairs it asks first."""
        st, _, b = self.srv.request("GET", "/v2/glossary-language-pairs")
        self.assertEqual(st, 200, b)
        self.assertEqual({(p["source_lang"], p["target_lang"]) for p in json.loads(b)["supported_languages"]},
                         {("en", "de"), ("de", "en")})
        st, _, b = self.srv.post_json({"text": ['Delete <x id="7"></x> files from <x id="30"></x>?', "Open the file."],
                                       "source_lang": "EN", "target_lang": "DE", "formality": "default",
                                       "tag_handling": "xml", "ignore_tags": ["x"], "context": "A menu"},
                                      path="/v2/translate")
        self.assertEqual(st, 200, b)
        t = b["translations"][0]["text"]
        self.assertIn('<x id="7"></x>', t)
        self.assertIn('<x id="30"></x>', t)
        self.assertEqual(len(b["translations"]), 2)
        # languages as Weblate reads them: type as a query parameter
        st, _, b = self.srv.request("GET", "/v2/languages?type=source")
        self.assertEqual({x["language"] for x in json.loads(b)}, {"DE", "EN"})

    def test_weblate_glossary_sync(self):
        """Weblate's glossary sync: list, create one per language pair from TSV (JSON body),
        translate with its id, delete the stale one (the endpoints themselves:
        test_deepl_glossary.py)."""
        st, _, b = self.srv.post_json({"name": "weblate:1:EN:DE:0123abcd", "source_lang": "en", "target_lang": "de",
                                       "entries": "file\tDatei\nbutton\tSchaltfläche", "entries_format": "tsv"},
                                      path="/v2/glossaries")
        self.assertEqual(st, 201, b)
        gid = b["glossary_id"]
        st, _, lst = self.srv.request("GET", "/v2/glossaries")
        self.assertIn(gid, [g["glossary_id"] for g in json.loads(lst)["glossaries"]])
        st, _, t = self.srv.post_json({"text": ['Delete the <x id="0"></x> button?'], "source_lang": "EN",
                                       "target_lang": "DE", "tag_handling": "xml", "ignore_tags": ["x"],
                                       "glossary_id": gid}, path="/v2/translate")
        self.assertEqual(st, 200, t)
        self.assertIn("Schaltfläche", t["translations"][0]["text"])
        self.assertIn('<x id="0"></x>', t["translations"][0]["text"])
        st, _, _ = self.srv.request("DELETE", "/v2/glossaries/" + gid)
        self.assertEqual(st, 204)
        st, _, b = self.srv.request("GET", "/v2/glossaries/" + str(uuid.uuid4()))
        self.assertEqual((st, json.loads(b)), (404, {"message": "Glossary not found."}))

    def test_languages(self):
        for method in ("GET", "POST"):
            st, _, b = self.srv.request(method, "/v2/languages")
            self.assertEqual(st, 200, b)
            self.assertEqual(json.loads(b), [{"language": "DE", "name": "German"},
                                             {"language": "EN", "name": "English"}])
        st, _, b = self.srv.request("GET", "/v2/languages?type=target")
        self.assertEqual(st, 200, b)
        self.assertEqual(json.loads(b), [
            {"language": "DE", "name": "German", "supports_formality": False},
            {"language": "EN-GB", "name": "English (British)", "supports_formality": False},
            {"language": "EN-US", "name": "English (American)", "supports_formality": False}])
        st, _, b = form(self.srv, "/v2/languages", {"type": "target"})
        self.assertEqual(st, 200, b)
        self.assertEqual(len(b), 3)
        st, _, b = self.srv.request("GET", "/v2/languages?type=both")
        self.assertEqual(st, 400)

    def test_usage_open_server(self):
        st, _, b = self.srv.request("GET", "/v2/usage")
        self.assertEqual(st, 200, b)
        b = json.loads(b)
        self.assertEqual(b["character_count"], 0)
        self.assertGreater(b["character_limit"], 10 ** 9)

    def test_documents(self):
        body, ct = multipart({"target_lang": "DE", "source_lang": "EN"},
                             {"file": ("a.txt", b"Hello world.\nThe house is small.\n")})
        st, _, raw = self.srv.request("POST", "/v2/document", body, {"Content-Type": ct})
        self.assertEqual(st, 200, raw)
        h = json.loads(raw)
        self.assertRegex(h["document_id"], r"^[0-9A-F]{32}$")
        self.assertRegex(h["document_key"], r"^[0-9A-F]{64}$")
        path = "/v2/document/" + h["document_id"]
        status = {}

        def done():
            st, _, b = form(self.srv, path, {"document_key": h["document_key"]})
            self.assertEqual(st, 200, b)
            self.assertIn(b["status"], ("queued", "translating", "done"))
            status.update(b)
            return b["status"] == "done"
        self.assertTrue(ts.wait_until(done, 120, 0.1), status)
        self.assertEqual(status["document_id"], h["document_id"])
        # the characters of the text extracted (the units' text, without line breaks)
        self.assertEqual(status.get("billed_characters"), len("Hello world.The house is small."), status)
        st, hd, out = self.srv.request("POST", path + "/result",
                                       urllib.parse.urlencode({"document_key": h["document_key"]}),
                                       {"Content-Type": "application/x-www-form-urlencoded"})
        self.assertEqual(st, 200, out)
        self.assertEqual(out.count(b"\n"), 2, out)
        self.assertNotIn(b"house", out)
        # a wrong key, an unknown id, no key
        wrong = h["document_key"][:-1] + ("1" if h["document_key"].endswith("0") else "0")
        for p, key in ((path, "0" * 64), (path + "/result", wrong),
                       ("/v2/document/" + "0" * 32, h["document_key"])):
            st, _, b = form(self.srv, p, {"document_key": key})
            self.assertEqual(st, 404, b)
            self.assertEqual(b, {"message": "Document not found."})
        st, _, b = form(self.srv, path, {})
        self.assertEqual(st, 400, b)
        # .docx, source detected
        body, ct = multipart({"target_lang": "de"}, {"file": ("b.docx", ds.docx(ds.HELLO))})
        st, _, raw = self.srv.request("POST", "/v2/document", body, {"Content-Type": ct})
        self.assertEqual(st, 200, raw)
        # refusals
        body, ct = multipart({"target_lang": "DE"}, {"file": ("c.exe", b"MZ\x00\x01binary")})
        st, _, raw = self.srv.request("POST", "/v2/document", body, {"Content-Type": ct})
        self.assertEqual(st, 400, raw)
        body, ct = multipart({}, {"file": ("a.txt", b"Hello.")})
        st, _, raw = self.srv.request("POST", "/v2/document", body, {"Content-Type": ct})
        self.assertEqual((st, json.loads(raw)), (400, {"message": "Parameter 'target_lang' not specified."}))
        body, ct = multipart({"target_lang": "DE", "formality": "less"}, {"file": ("a.txt", b"Hello.")})
        st, _, raw = self.srv.request("POST", "/v2/document", body, {"Content-Type": ct})
        self.assertEqual(st, 400, raw)


class TestKeysAndQuota(unittest.TestCase):
    """API keys (DeepL-Auth-Key, auth_key) and the per-minute limits as 429 / 456."""

    @classmethod
    def setUpClass(cls):
        cls.srv = ts.Server(["--model", EN_DE, "--workers", "1", "--api-key", "k1:fx", "--api-key", "k2",
                             "--char-limit-per-minute", "60", "--req-limit", "30"], name="deepl-keys")

    @classmethod
    def tearDownClass(cls):
        assert cls.srv.stop() == 0

    def test_auth(self):
        good = {"Authorization": "DeepL-Auth-Key k2"}
        for hd, fields, status in (({}, {}, 403), ({"Authorization": "DeepL-Auth-Key nope"}, {}, 403),
                                   ({"Authorization": "DeepL-Auth-Key "}, {}, 403),
                                   ({}, {"auth_key": "nope"}, 403), (good, {}, 200), ({}, {"auth_key": "k2"}, 200)):
            st, _, b = form(self.srv, "/v2/translate", dict(fields, text="Hi.", target_lang="DE"), hd)
            self.assertEqual(st, status, (hd, fields, b))
            if status == 403:
                self.assertEqual(list(b), ["message"])
        st, _, b = self.srv.request("GET", "/v2/languages")
        self.assertEqual(st, 403, b)
        st, _, b = self.srv.request("GET", "/v2/languages?auth_key=k2")
        self.assertEqual(st, 200, b)
        body, ct = multipart({"target_lang": "DE"}, {"file": ("a.txt", b"Hello.")})
        st, _, b = self.srv.request("POST", "/v2/document", body, {"Content-Type": ct})
        self.assertEqual(st, 403, b)
        body, ct = multipart({"target_lang": "DE", "auth_key": "k2"}, {"file": ("a.txt", b"Hello.")})
        st, _, b = self.srv.request("POST", "/v2/document", body, {"Content-Type": ct})
        self.assertEqual(st, 200, b)

    def test_usage_and_quota(self):
        key = {"Authorization": "DeepL-Auth-Key k1:fx"}
        st, _, b = self.srv.request("GET", "/v2/usage", None, key)
        self.assertEqual((st, json.loads(b)), (200, {"character_count": 0, "character_limit": 60}))
        st, _, b = form(self.srv, "/v2/translate", {"text": "Hello world, this is a test.", "target_lang": "DE"}, key)
        self.assertEqual(st, 200, b)
        st, _, b = self.srv.request("GET", "/v2/usage", None, key)
        used = json.loads(b)["character_count"]
        self.assertTrue(27 <= used <= 28, b)  # 28 charged, refilled at 1 per second since
        # more than is left of the minute's quota: 456 with when to retry
        st, hd, b = form(self.srv, "/v2/translate", {"text": "x" * 50, "target_lang": "DE"}, key)
        self.assertEqual(st, 456, b)
        self.assertIn("Quota exceeded", b["message"])
        self.assertIn("retry-after", hd)
        # more than a whole minute's quota: 456 without
        st, hd, b = form(self.srv, "/v2/translate", {"text": "x" * 61, "target_lang": "DE"}, key)
        self.assertEqual(st, 456, b)
        self.assertNotIn("retry-after", hd)

    def test_request_limit_429(self):
        key = {"Authorization": "DeepL-Auth-Key k2"}
        seen = []
        for _ in range(40):
            st, hd, b = self.srv.request("GET", "/v2/usage", None, key)  # not charged
            self.assertEqual(st, 200)
            st, hd, b = form(self.srv, "/v2/translate", {"text": "", "target_lang": "DE"}, key)
            seen.append(st)
            if st == 429:
                self.assertIn("retry-after", hd)
                self.assertIn("Too many requests", b["message"])
                break
        self.assertEqual(seen[-1], 429, seen)


def npm_install():
    """deepl-node from npm into the build directory; its node_modules, or a reason to skip."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        return None, "node or npm is not installed (Debian: nodejs npm)"
    dest = os.path.join(ts.BUILD, "deepl-node")
    os.makedirs(dest, exist_ok=True)
    pkg = os.path.join(HERE, "deepl", "package.json")
    with open(pkg, "rb") as f:
        want = f.read()
    mods = os.path.join(dest, "node_modules")
    have = os.path.join(dest, "package.json")
    same = False
    if os.path.exists(have):
        with open(have, "rb") as f:
            same = f.read() == want
    if os.path.isdir(os.path.join(mods, "deepl-node")) and same:
        return mods, None
    shutil.copyfile(pkg, have)
    try:
        r = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--no-package-lock"], cwd=dest,
                           capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return None, "npm install deepl-node timed out (no registry reachable?)"
    if r.returncode != 0 or not os.path.isdir(os.path.join(mods, "deepl-node")):
        return None, "npm install deepl-node failed: " + (r.stderr or r.stdout).strip()[-300:]
    return mods, None


class TestDeeplNode(unittest.TestCase):
    """The official deepl-node client, unchanged, with our URL as serverUrl."""

    @classmethod
    def setUpClass(cls):
        cls.mods, why = npm_install()
        if not cls.mods:
            raise unittest.SkipTest(why)
        cls.srv = ts.Server(["--model", EN_DE, "--model", DE_EN, "--workers", "1", "--api-key", "node-key:fx",
                             "--char-limit-per-minute", "600"],
                            name="deepl-node")

    @classmethod
    def tearDownClass(cls):
        assert cls.srv.stop() == 0

    def test_client(self):
        work = os.path.join(ts.TMP, "deepl-node-work")
        os.makedirs(work, exist_ok=True)
        docx = os.path.join(work, "in.docx")
        with open(docx, "wb") as f:
            f.write(ds.docx(ds.body("<w:p><w:r><w:t>The house is small.</w:t></w:r></w:p>")))
        env = dict(os.environ, NODE_PATH=self.mods)
        r = subprocess.run(["node", os.path.join(HERE, "deepl", "check.js"), "http://127.0.0.1:%d" % self.srv.port,
                            "node-key:fx", work, docx], capture_output=True, text=True, env=env, timeout=300)
        sys.stderr.write(r.stdout + r.stderr)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("all passed", r.stdout)
        for name in ("translateText with source", "html ignoreTags", "xml placeholder", "getUsage",
                     "getTargetLanguages", "translateDocument txt", "translateDocument docx",
                     "bad key AuthorizationError", "createGlossary", "getGlossaryEntries",
                     "translateText with glossary", "deleteGlossary", "createMultilingualGlossary",
                     "translateText with multilingual glossary"):
            self.assertIn("ok " + name + "\n", r.stdout)


if __name__ == "__main__":
    # every class skipped (no node for the client, and nothing else ran) is a skip: 77
    result = unittest.main(exit=False, verbosity=2).result
    if not result.wasSuccessful():
        sys.exit(1)
    sys.exit(77 if result.skipped and len(result.skipped) >= result.testsRun else 0)
