#!/usr/bin/env python3
"""The glossary settings (config/config.c rows server.glossary_db, limits.glossary_max_entries,
limits.glossary_max_bytes, limits.glossaries_per_key) against a live mt-server with a tiny
en-de model, set in a configuration file as the README's settings table shows them:

- with glossary_db a file, a glossary made through POST /v2/glossaries is still there,
  entries and all, after the server is stopped and started again on the same file; with
  neither glossary_db nor suggestions_db it is gone (kept in memory);
- the limits answer as documented: a glossary over glossary_max_entries or
  glossary_max_bytes 413 with the configured figures in DeepL's {"message"}; the key's
  glossary past glossaries_per_key 456, another key unaffected; the flags and environment
  variables set the same rows (--glossaries-per-key, MT_GLOSSARY_MAX_ENTRIES)."""
import json
import os
import subprocess
import sys
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mtfixtures as ts  # noqa: E402
import testmain  # noqa: E402

MODEL = None
K1, K2 = "cfg-key-1", "cfg-key-2"


def setUpModule():
    global MODEL
    ts.require_server()
    MODEL = ts.make_model("tiny-en-de", 1)


def write_config(name, text):
    path = os.path.join(ts.TMP, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def server(config=None, args=(), env=None, name="glossary-config"):
    a = ["--model", MODEL, "--workers", "1", "--api-key", K1, "--api-key", K2]
    if config:
        a += ["--config", config]
    return ts.Server(a + list(args), env=env, name=name)


def call(srv, method, path, key=K1, fields=None):
    h = {"Authorization": "DeepL-Auth-Key " + key}
    body = None
    if fields is not None:
        body = urllib.parse.urlencode(fields)
        h["Content-Type"] = "application/x-www-form-urlencoded"
    st, hd, raw = srv.request(method, path, body, h)
    if hd.get("content-type", "").startswith("application/json") and raw:
        return st, json.loads(raw)
    return st, raw


def create(srv, entries, key=K1, name="terms"):
    return call(srv, "POST", "/v2/glossaries", key,
                {"name": name, "source_lang": "en", "target_lang": "de", "entries": entries})


class TestGlossaryConfig(unittest.TestCase):
    def stop(self, srv):
        self.assertEqual(srv.stop(), 0, srv.log())

    def test_file_keeps_glossaries_across_restart(self):
        db = os.path.join(ts.TMP, "glossaries.db")
        cfg = write_config("keep.toml", '[server]\nglossary_db = "%s"\n' % db)
        srv = server(cfg, name="glossary-file-1")
        st, g = create(srv, "button\tSchaltfläche\nfile\tDatei\n")
        self.assertEqual(st, 201, g)
        self.stop(srv)
        self.assertTrue(os.path.getsize(db) > 0)
        srv = server(cfg, name="glossary-file-2")
        st, got = call(srv, "GET", "/v2/glossaries/" + g["glossary_id"])
        self.assertEqual(st, 200, got)
        self.assertEqual((got["name"], got["entry_count"]), ("terms", 2))
        st, tsv = call(srv, "GET", "/v2/glossaries/%s/entries" % g["glossary_id"])
        self.assertEqual(st, 200)
        self.assertEqual(tsv.decode("utf-8").splitlines(), ["button\tSchaltfläche", "file\tDatei"])
        st, lst = call(srv, "GET", "/v2/glossaries", K2)  # another key's list stays empty
        self.assertEqual((st, lst["glossaries"]), (200, []))
        self.stop(srv)

    def test_memory_without_a_file(self):
        srv = server(name="glossary-memory-1")
        st, g = create(srv, "button\tSchaltfläche\n")
        self.assertEqual(st, 201, g)
        self.stop(srv)
        srv = server(name="glossary-memory-2")
        st, _ = call(srv, "GET", "/v2/glossaries/" + g["glossary_id"])
        self.assertEqual(st, 404)
        self.stop(srv)

    def test_limits(self):
        cfg = write_config("limits.toml", "[limits]\nglossary_max_entries = 3\n"
                           "glossary_max_bytes = 60\nglossaries_per_key = 2\n")
        srv = server(cfg, name="glossary-limits")
        st, b = create(srv, "a\t1\nb\t2\nc\t3\nd\t4\n")
        self.assertEqual(st, 413, b)
        self.assertIn("at most 3 entries and 60 bytes", b["message"])
        st, b = create(srv, "x" * 40 + "\t" + "y" * 30 + "\n")  # one entry, 72 bytes
        self.assertEqual(st, 413, b)
        self.assertIn("72 bytes", b["message"])
        ids = []
        for i in range(2):
            st, g = create(srv, "a\t1\nb\t2\nc\t3\n", name="g%d" % i)
            self.assertEqual(st, 201, g)
            ids.append(g["glossary_id"])
        st, b = create(srv, "a\t1\n", name="third")
        self.assertEqual(st, 456, b)
        self.assertIn("2 glossaries", b["message"])
        st, g = create(srv, "a\t1\n", key=K2, name="other key")
        self.assertEqual(st, 201, g)
        st, _ = call(srv, "DELETE", "/v2/glossaries/" + ids[0])
        self.assertEqual(st, 204)
        st, g = create(srv, "a\t1\n", name="after a delete")
        self.assertEqual(st, 201, g)
        self.stop(srv)

    def test_flag_and_environment(self):
        srv = server(args=["--glossaries-per-key", "1"], env={"MT_GLOSSARY_MAX_ENTRIES": "1"},
                     name="glossary-flags")
        st, b = create(srv, "a\t1\nb\t2\n")
        self.assertEqual(st, 413, b)
        self.assertIn("at most 1 entries", b["message"])
        self.assertEqual(create(srv, "a\t1\n")[0], 201)
        st, b = create(srv, "b\t2\n", name="second")
        self.assertEqual(st, 456, b)
        self.stop(srv)

    def test_print_config(self):
        out = subprocess.run([ts.SERVER, "--print-config", "--model", MODEL, "--glossary-db", "/x/g.db",
                              "--glossary-max-bytes", "1234"], capture_output=True, text=True,
                             timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn('glossary_db = "/x/g.db"', out.stdout)
        self.assertIn("glossary_max_bytes = 1234", out.stdout)
        self.assertIn("glossaries_per_key = 1000", out.stdout)


if __name__ == "__main__":
    sys.exit(testmain.run(__name__))
