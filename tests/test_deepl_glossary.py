#!/usr/bin/env python3
"""DeepL's glossaries (server/ep_deepl_glossary.c, store/glossaries.c) against a live
mt-server with the bundled en-de and de-en models and two API keys:

- GET /v2/glossary-language-pairs lists the served pairs in DeepL's lower-case codes;
- POST /v2/glossaries (form with TSV, JSON with CSV) answers 201 with DeepL's glossary
  object; GET /v2/glossaries, GET /v2/glossaries/ID, GET .../entries (TSV, 415 for another
  Accept), DELETE (204, then 404);
- errors as DeepL's {"message"}: bad TSV/CSV (400 naming the line), missing parameters,
  an unsupported language pair, an unknown entries_format (400), an unknown or non-UUID
  id, another key's glossary (404 for get, entries, delete and translate), a bad key
  (403), too many entries (413), the key's glossary limit (456, after 1,000);
- API v3 (multilingual glossaries, one dictionary each here): create (JSON and
  deepl-node's form), list, get, entries per language pair, delete; two dictionaries and
  dictionary edits refused (400);
- enforcement end to end with the real model (also glossary_id in the native and
  LibreTranslate bodies): /v2/translate with glossary_id (source_lang
  required: 400 without) puts every glossary term's target in the output, in plain text
  and with tag_handling html; a glossary of another language pair is refused (400).
Run one class: tests/test_deepl_glossary.py TestEnforcement"""
import json
import os
import shutil
import sys
import threading
import unittest
import urllib.parse
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mtfixtures as ts  # noqa: E402  (the Server fixture: mt-server on a free port)

SRV = None
K1, K2 = "gloss-key-1", "gloss-key-2"


def setUpModule():
    global SRV
    ts.require_server()
    en_de, de_en = ts.BUNDLED, os.path.join(ts.SRC, "models", "de-en")
    for m in (en_de, de_en):
        if not os.path.exists(os.path.join(m, "model.safetensors")):
            raise unittest.SkipTest("no bundled model at %s" % m)
    # snapshots: a training run may rewrite the bundled models while the test runs
    snap = []
    for m, name in ((en_de, "gloss-en-de"), (de_en, "gloss-de-en")):
        d = os.path.join(ts.TMP, name)
        shutil.copytree(m, d)
        snap.append(d)
    SRV = ts.Server(["--model", snap[0], "--model", snap[1], "--workers", "1", "--api-key", K1, "--api-key", K2,
                     "--max-body-bytes", "4000000"], name="deepl-glossary")


def tearDownModule():
    if SRV:
        assert SRV.stop() == 0, SRV.log()


def call(method, path, key=K1, fields=None, js=None, headers=None):
    h = {"Authorization": "DeepL-Auth-Key " + key} if key else {}
    h.update(headers or {})
    body = None
    if fields is not None:
        body = urllib.parse.urlencode(fields, doseq=True)
        h["Content-Type"] = "application/x-www-form-urlencoded"
    elif js is not None:
        body = json.dumps(js)
        h["Content-Type"] = "application/json"
    st, hd, raw = SRV.request(method, path, body, h)
    ct = {k.lower(): v for k, v in hd.items()}.get("content-type", "")
    return st, hd, json.loads(raw) if ct.startswith("application/json") and raw else raw


def create(key=K1, name="terms", source="en", target="de", entries="button\tSchaltfläche\n", fmt=None, status=201):
    f = {"name": name, "source_lang": source, "target_lang": target, "entries": entries}
    if fmt:
        f["entries_format"] = fmt
    st, _, b = call("POST", "/v2/glossaries", key, fields=f)
    assert st == status, (st, b)
    return b


def has_term(term, text):
    return term in text or (term[0].swapcase() + term[1:]) in text


class TestEndpoints(unittest.TestCase):
    def test_language_pairs(self):
        st, _, b = call("GET", "/v2/glossary-language-pairs")
        self.assertEqual(st, 200, b)
        pairs = {(p["source_lang"], p["target_lang"]) for p in b["supported_languages"]}
        self.assertEqual(pairs, {("en", "de"), ("de", "en")})

    def test_life_cycle(self):
        g = create(name="Software", source="EN", target="de", entries="file\tDatei\r\n\nserver \t Server\n")
        self.assertEqual(set(g), {"glossary_id", "name", "ready", "source_lang", "target_lang", "creation_time",
                                  "entry_count"})
        self.assertEqual((g["name"], g["ready"], g["source_lang"], g["target_lang"], g["entry_count"]),
                         ("Software", True, "en", "de", 2))
        self.assertEqual(str(uuid.UUID(g["glossary_id"])), g["glossary_id"])
        self.assertRegex(g["creation_time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
        gid = g["glossary_id"]
        # CSV in a JSON body
        st, _, c = call("POST", "/v2/glossaries", js={"name": "csv", "source_lang": "de", "target_lang": "en",
                                                      "entries_format": "csv",
                                                      "entries": 'Datei,file\n"Ordner, neu",new folder,de,en\n'})
        self.assertEqual(st, 201, c)
        self.assertEqual(c["entry_count"], 2)
        st, _, lst = call("GET", "/v2/glossaries")
        ids = [x["glossary_id"] for x in lst["glossaries"]]
        self.assertIn(gid, ids)
        self.assertIn(c["glossary_id"], ids)
        self.assertEqual(ids.index(gid) < ids.index(c["glossary_id"]), True)  # oldest first
        st, _, other = call("GET", "/v2/glossaries", K2)
        self.assertNotIn(gid, [x["glossary_id"] for x in other["glossaries"]])
        st, _, one = call("GET", "/v2/glossaries/" + gid)
        self.assertEqual((st, one), (200, g))
        st, _, one = call("GET", "/v2/glossaries/" + gid.upper())
        self.assertEqual(st, 200)
        for accept in (None, "text/tab-separated-values", "*/*"):
            st, hd, tsv = call("GET", "/v2/glossaries/%s/entries" % gid, headers={"Accept": accept} if accept else {})
            self.assertEqual((st, tsv), (200, "file\tDatei\nserver\tServer\n".encode()))
            self.assertTrue({k.lower(): v for k, v in hd.items()}["content-type"].startswith("text/tab-separated-values"))
        st, _, b = call("GET", "/v2/glossaries/%s/entries" % c["glossary_id"])
        self.assertEqual(b, "Datei\tfile\nOrdner, neu\tnew folder\n".encode())
        st, _, b = call("GET", "/v2/glossaries/%s/entries" % gid, headers={"Accept": "application/json"})
        self.assertEqual(st, 415, b)
        self.assertIn("message", b)
        st, _, b = call("DELETE", "/v2/glossaries/" + gid)
        self.assertEqual((st, b), (204, b""))
        for method, path in (("GET", gid), ("GET", gid + "/entries"), ("DELETE", gid)):
            st, _, b = call(method, "/v2/glossaries/" + path)
            self.assertEqual((st, b), (404, {"message": "Glossary not found."}), (method, path))
        call("DELETE", "/v2/glossaries/" + c["glossary_id"])

    def test_entry_errors(self):
        for entries, fmt, fragment in (("button Schaltfläche\n", None, "line 1: no tab"),
                                       ("a\tb\nc\td\ta\n", "tsv", "line 2: more than one tab"),
                                       ("a\tb\na\tc\n", None, "line 2: the source term \"a\" is already on line 1"),
                                       ("a\t\n", None, "line 1: the target term is empty"),
                                       ("", None, "no entries"),
                                       ("a,b,c\n", "csv", "line 1: 3 fields"),
                                       ("a,b,fr,de\n", "csv", "not the glossary's"),
                                       ('"a,b\n', "csv", "not closed")):
            b = create(entries=entries, fmt=fmt, status=400)
            self.assertIn("Invalid glossary entries provided", b["message"])
            self.assertIn(fragment, b["message"], entries)

    def test_parameter_errors(self):
        for drop, fragment in (("name", "'name'"), ("source_lang", "'source_lang'"), ("target_lang", "'target_lang'"),
                               ("entries", "'entries'")):
            f = {"name": "n", "source_lang": "en", "target_lang": "de", "entries": "a\tb"}
            del f[drop]
            st, _, b = call("POST", "/v2/glossaries", fields=f)
            self.assertEqual(st, 400, b)
            self.assertIn(fragment, b["message"])
        for name in ("n" * 256, "tab\there"):
            b = create(name=name, status=400)
            self.assertIn("'name'", b["message"])
        self.assertEqual(create(name="ü" * 127, entries="a\tb")["name"], "ü" * 127)  # 254 bytes: kept whole
        st, _, b = call("POST", "/v2/glossaries", headers={"Content-Type": "application/x-www-form-urlencoded"})
        self.assertEqual(st, 400, b)
        b = create(entries="a\tb", fmt="xml", status=400)
        self.assertIn("entries_format", b["message"])
        for s, t in (("en", "fr"), ("fr", "de"), ("en", "en"), ("xx", "de"), ("x" + "ü" * 30, "de")):
            b = create(source=s, target=t, status=400)
            self.assertIn("Unsupported glossary source and target language pair", b["message"])

    def test_ids_and_keys(self):
        gid = create()["glossary_id"]
        for bad in (str(uuid.uuid4()), "not-a-uuid", "x'%20OR%20'1'='1", gid + "0"):
            st, _, b = call("GET", "/v2/glossaries/" + bad)
            self.assertEqual(st, 404, bad)
        for method, path in (("GET", gid), ("GET", gid + "/entries"), ("DELETE", gid)):
            st, _, b = call(method, "/v2/glossaries/" + path, K2)
            self.assertEqual((st, b), (404, {"message": "Glossary not found."}))
        st, _, b = call("POST", "/v2/translate", K2, fields={"text": "Hi.", "source_lang": "EN", "target_lang": "DE",
                                                             "glossary_id": gid})
        self.assertEqual((st, b), (404, {"message": "Glossary not found."}))
        for key in ("wrong-key", None):
            st, _, b = call("GET", "/v2/glossaries", key)
            self.assertEqual(st, 403, b)
            self.assertIn("message", b)
        st, _, b = call("POST", "/v2/glossaries/" + gid, fields={"name": "x"})
        self.assertEqual(st, 405, b)
        st, _, b = call("GET", "/v2/glossaries/%s/other" % gid)
        self.assertEqual(st, 404, b)
        st, _, _ = call("GET", "/v2/glossaries/" + gid)
        self.assertEqual(st, 200)  # still there after all that
        call("DELETE", "/v2/glossaries/" + gid)

    def test_too_many_entries_413(self):
        entries = "".join("t%d\tz%d\n" % (i, i) for i in range(100001))
        b = create(entries=entries, status=413)
        self.assertIn("100000", b["message"])

    def test_glossary_limit_456(self):
        key = K2
        st, _, lst = call("GET", "/v2/glossaries", key)
        have = len(lst["glossaries"])
        made = []
        for i in range(1000 - have):
            made.append(create(key=key, name="g%d" % i, entries="a\tb")["glossary_id"])
        b = create(key=key, name="one too many", entries="a\tb", status=456)
        self.assertIn("1000 glossaries", b["message"])
        self.assertEqual(create(key=K1, name="other key", entries="a\tb")["entry_count"], 1)
        for gid in made:
            st, _, _ = call("DELETE", "/v2/glossaries/" + gid, key)
            self.assertEqual(st, 204)


class TestV3(unittest.TestCase):
    """API v3 (multilingual glossaries) over the same glossaries, one dictionary each."""

    def test_v3_life_cycle(self):
        st, _, g = call("POST", "/v3/glossaries", js={"name": "multi", "dictionaries": [
            {"source_lang": "en", "target_lang": "de", "entries": "file\tDatei\n", "entries_format": "tsv"}]})
        self.assertEqual(st, 201, g)
        self.assertEqual(g["dictionaries"], [{"source_lang": "en", "target_lang": "de", "entry_count": 1}])
        self.assertEqual(set(g), {"glossary_id", "name", "dictionaries", "creation_time"})
        gid = g["glossary_id"]
        # the form deepl-node sends
        st, _, f = call("POST", "/v3/glossaries", fields={"name": "form", "dictionaries[0].source_lang": "de",
                                                          "dictionaries[0].target_lang": "en",
                                                          "dictionaries[0].entries": "Datei,file",
                                                          "dictionaries[0].entries_format": "csv"})
        self.assertEqual(st, 201, f)
        st, _, lst = call("GET", "/v3/glossaries")
        self.assertTrue({gid, f["glossary_id"]} <= {x["glossary_id"] for x in lst["glossaries"]})
        st, _, one = call("GET", "/v3/glossaries/" + gid)
        self.assertEqual((st, one), (200, g))
        st, _, v2 = call("GET", "/v2/glossaries/" + gid)  # the same glossary in v2's shape
        self.assertEqual((st, v2["entry_count"], v2["source_lang"]), (200, 1, "en"))
        st, _, e = call("GET", "/v3/glossaries/%s/entries?source_lang=en&target_lang=de" % gid)
        self.assertEqual((st, e), (200, {"dictionaries": [{"source_lang": "en", "target_lang": "de",
                                                            "entries": "file\tDatei\n", "entries_format": "tsv"}]}))
        st, _, e = call("GET", "/v3/glossaries/%s/entries?source_lang=de&target_lang=en" % gid)
        self.assertEqual(st, 404, e)
        st, _, b = call("POST", "/v3/glossaries", js={"name": "two", "dictionaries": [
            {"source_lang": "en", "target_lang": "de", "entries": "a\tb"},
            {"source_lang": "de", "target_lang": "en", "entries": "b\ta"}]})
        self.assertEqual(st, 400, b)
        self.assertIn("one dictionary per glossary", b["message"])
        st, _, b = call("POST", "/v3/glossaries", js={"name": "none"})
        self.assertEqual(st, 400, b)
        st, _, b = call("DELETE", "/v3/glossaries/%s/dictionaries?source_lang=en&target_lang=de" % gid)
        self.assertEqual(st, 400, b)
        st, _, b = call("GET", "/v3/glossaries/" + gid, K2)
        self.assertEqual(st, 404, b)
        b = call("POST", "/v2/translate", fields={"text": "Open the file.", "source_lang": "EN", "target_lang": "DE",
                                                  "glossary_id": gid})[2]
        self.assertIn("Datei", b["translations"][0]["text"])
        for i in (gid, f["glossary_id"]):
            st, _, _ = call("DELETE", "/v3/glossaries/" + i)
            self.assertEqual(st, 204)
        st, _, b = call("GET", "/v3/glossaries/" + gid)
        self.assertEqual(st, 404, b)


class TestEnforcement(unittest.TestCase):
    TERMS = {"button": "Schaltfläche", "file": "Datei", "folder": "Verzeichnis", "click": "klicken",
             "settings": "Konfiguration"}
    SENTENCES = ["Click the button to save the file.", "Open the folder and select a file.",
                 "The settings are stored in a file.", "Press the button twice.",
                 "Click here to change the settings of the folder."]

    @classmethod
    def setUpClass(cls):
        cls.gid = create(name="enforced", entries="".join("%s\t%s\n" % kv for kv in cls.TERMS.items()))["glossary_id"]

    def translate(self, fields, status=200):
        st, _, b = call("POST", "/v2/translate", fields=fields)
        self.assertEqual(st, status, b)
        return b

    def test_terms_come_out(self):
        plain = self.translate({"text": self.SENTENCES, "source_lang": "EN", "target_lang": "DE"})
        forced = self.translate({"text": self.SENTENCES, "source_lang": "EN", "target_lang": "DE",
                                 "glossary_id": self.gid})
        missed_plain = 0
        for src, p, g in zip(self.SENTENCES, plain["translations"], forced["translations"]):
            for s, t in self.TERMS.items():
                if s in src.lower():
                    self.assertTrue(has_term(t, g["text"]), "%r: %r lacks %r" % (src, g["text"], t))
                    missed_plain += not has_term(t, p["text"])
            self.assertNotIn("{", g["text"])
        self.assertGreater(missed_plain, 0, "the model alone already says every term: the test shows nothing")

    def test_html_and_json(self):
        st, _, b = call("POST", "/v2/translate", js={"text": ["<p>Click the <b>button</b> in the folder.</p>"],
                                                     "source_lang": "EN", "target_lang": "DE", "tag_handling": "html",
                                                     "glossary_id": self.gid})
        self.assertEqual(st, 200, b)
        t = b["translations"][0]["text"]
        self.assertTrue(t.startswith("<p>") and t.endswith("</p>") and "<b>" in t, t)
        self.assertIn("Schaltfläche", t)
        self.assertIn("Verzeichnis", t)

    def test_next_to_placeholders_and_tags(self):
        """A term glued to a placeholder or inside Weblate's XML: both come back."""
        st, _, b = call("POST", "/v2/translate", js={"text": ["Open %s file.", "Save the file {name} now.",
                                                              'Delete the <x id="0"/> folder?'],
                                                     "source_lang": "EN", "target_lang": "DE", "tag_handling": "xml",
                                                     "ignore_tags": ["x"], "glossary_id": self.gid})
        self.assertEqual(st, 200, b)
        t = [x["text"] for x in b["translations"]]
        self.assertTrue("%s" in t[0] and "Datei" in t[0], t[0])
        self.assertTrue("{name}" in t[1] and "Datei" in t[1], t[1])
        self.assertTrue('<x id="0"/>' in t[2] and "Verzeichnis" in t[2], t[2])

    def test_native_and_libretranslate_forms(self):
        """glossary_id in the native and LibreTranslate bodies: the presented key's glossary."""
        st, _, b = SRV.request("POST", "/translate", json.dumps({"text": "Press the button.", "source": "en",
                                                                  "target": "de", "glossary_id": self.gid}),
                               {"Content-Type": "application/json", "X-API-Key": K1})
        self.assertEqual(st, 200, b)
        self.assertIn("Schaltfläche", json.loads(b)["translations"][0])
        st, _, b = SRV.request("POST", "/translate", json.dumps({"q": "Press the button.", "source": "en",
                                                                  "target": "de", "glossary_id": self.gid,
                                                                  "api_key": K1}),
                               {"Content-Type": "application/json"})
        self.assertEqual(st, 200, b)
        self.assertIn("Schaltfläche", json.loads(b)["translatedText"])
        for body, status in (({"q": "x", "source": "auto", "target": "de", "glossary_id": self.gid, "api_key": K1}, 400),
                             ({"q": "x", "source": "en", "target": "de", "glossary_id": self.gid, "api_key": K2}, 404)):
            st, _, b = SRV.request("POST", "/translate", json.dumps(body), {"Content-Type": "application/json"})
            self.assertEqual(st, status, b)

    def test_concurrent_and_deleted(self):
        """Translations at once with one glossary (the server keeps one parsed copy), then the
        glossary deleted: the next translation with it is 404, not served from the copy."""
        gid = create(name="shared copy", entries="button\tSchaltfläche\n")["glossary_id"]
        out, errors = [], []

        def worker():
            for _ in range(4):
                st, _, b = call("POST", "/v2/translate", fields={"text": "Press the button.", "source_lang": "EN",
                                                                 "target_lang": "DE", "glossary_id": gid})
                (out if st == 200 else errors).append(b)
        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(len(out), 16)
        self.assertTrue(all("Schaltfläche" in b["translations"][0]["text"] for b in out), out)
        self.assertEqual(call("DELETE", "/v2/glossaries/" + gid)[0], 204)
        st, _, b = call("POST", "/v2/translate", fields={"text": "Press the button.", "source_lang": "EN",
                                                         "target_lang": "DE", "glossary_id": gid})
        self.assertEqual((st, b), (404, {"message": "Glossary not found."}))

    def test_requirements(self):
        b = self.translate({"text": "Click.", "target_lang": "DE", "glossary_id": self.gid}, 400)
        self.assertIn("source_lang", b["message"])
        b = self.translate({"text": "Klicken.", "source_lang": "DE", "target_lang": "EN-GB", "glossary_id": self.gid},
                           400)
        self.assertIn("does not match", b["message"])
        b = self.translate({"text": "Hi.", "source_lang": "EN", "target_lang": "DE", "glossary_id": str(uuid.uuid4())},
                           404)
        self.assertEqual(b["message"], "Glossary not found.")
        # EN-US / EN-GB variants use the glossary of the base language
        de = create(name="de-en", source="de", target="en", entries="Datei\tdocument\n")["glossary_id"]
        b = self.translate({"text": "Die Datei ist groß.", "source_lang": "DE", "target_lang": "EN-GB",
                            "glossary_id": de})
        self.assertIn("document", b["translations"][0]["text"])


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    if not result.wasSuccessful():
        sys.exit(1)
    sys.exit(77 if result.skipped and len(result.skipped) >= result.testsRun else 0)
