#!/usr/bin/env python3
"""Glossaries per API key on PostgreSQL: runs tests/test_glossaries.c's program (argv[1])
against a private PostgreSQL 15 (test_shared_state.Postgres: initdb in a temporary
directory, a Unix socket only) through MT_TEST_PG_URL, on a fresh cluster, so the store's
schema migration (version 2: mt_glossaries) runs first; then two mt-server replicas with
the bundled en-de model on that database (server.shared_state): a glossary created on one
is listed, read and enforced on the other, deleted there and gone on the first, another
key sees none, and the database holds the key's SHA-256, never the key. SKIP (77) without
postgresql-15."""
import json
import os
import subprocess
import sys
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_shared_state as tss  # noqa: E402
try:  # the Server fixture (mt-server on a free port), wherever the tree keeps it
    import mtfixtures as ts  # noqa: E402
except ImportError:
    import test_server as ts  # noqa: E402

KEY, OTHER = "pg-glossary-key", "pg-other-key"


def call(srv, method, path, key=KEY, fields=None):
    h = {"Authorization": "DeepL-Auth-Key " + key}
    body = None
    if fields is not None:
        body = urllib.parse.urlencode(fields, doseq=True)
        h["Content-Type"] = "application/x-www-form-urlencoded"
    st, _, raw = srv.request(method, path, body, h)
    return st, raw


def replicas(pg):
    """The same glossary seen through two replicas on one database; None, or what failed."""
    model = ts.BUNDLED
    if not os.path.exists(os.path.join(model, "model.safetensors")):
        return None  # no bundled model: the store's own checks above still ran
    a, b = [ts.Server(["--model", model, "--workers", "1", "--shared-state", pg.url_with_password, "--api-key", KEY,
                       "--api-key", OTHER], name="glossary-pg-%d" % i) for i in range(2)]
    try:
        st, raw = call(a, "POST", "/v2/glossaries", fields={"name": "shared", "source_lang": "en", "target_lang": "de",
                                                            "entries": "button\tSchaltfläche\nfile\tDatei\n"})
        if st != 201:
            return "create on replica A: %d %s" % (st, raw)
        gid = json.loads(raw)["glossary_id"]
        st, raw = call(b, "GET", "/v2/glossaries")
        if st != 200 or gid not in raw.decode():
            return "list on replica B: %d %s" % (st, raw)
        st, raw = call(b, "GET", "/v2/glossaries/%s/entries" % gid)
        if (st, raw) != (200, "button\tSchaltfläche\nfile\tDatei\n".encode()):
            return "entries on replica B: %d %r" % (st, raw)
        st, raw = call(b, "POST", "/v2/translate", fields={"text": "Click the button to open the file.",
                                                           "source_lang": "EN", "target_lang": "DE", "glossary_id": gid})
        text = json.loads(raw)["translations"][0]["text"] if st == 200 else ""
        if "Schaltfläche" not in text or "Datei" not in text:
            return "translate on replica B: %d %s" % (st, raw)
        st, raw = call(b, "GET", "/v2/glossaries/" + gid, key=OTHER)
        if st != 404:
            return "another key on replica B: %d %s" % (st, raw)
        rows = pg.sql("SELECT owner_hash FROM mt_glossaries")
        if not rows or any(KEY in r[0] for r in rows):
            return "owner column: %r" % rows
        st, raw = call(b, "DELETE", "/v2/glossaries/" + gid)
        if st != 204:
            return "delete on replica B: %d %s" % (st, raw)
        st, raw = call(a, "GET", "/v2/glossaries/" + gid)
        if st != 404:
            return "deleted glossary on replica A: %d %s" % (st, raw)
        return None
    finally:
        for s in (a, b):
            s.stop()


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: test_glossaries_pg.py TEST_GLOSSARIES_PROGRAM")
    if not os.path.exists(os.path.join(tss.PG_BIN, "postgres")):
        print("SKIP: postgresql-15 is not installed (scripts/install-deps.sh --test installs it)")
        return 77
    pg = tss.Postgres()
    try:
        url = pg.url_with_password
        r = subprocess.run([sys.argv[1]], env=dict(os.environ, MT_TEST_PG_URL=url, CK_FORK="yes"), timeout=240)
        if r.returncode != 0:
            return r.returncode
        rows = pg.sql("SELECT version FROM mt_schema")
        if rows != [("2",)]:
            print("FAIL: schema version %r, not 2" % rows)
            return 1
        print("ok: glossaries on PostgreSQL, schema version 2")
        why = replicas(pg)
        if why:
            print("FAIL: " + why)
            return 1
        print("ok: one glossary through two replicas (create, list, entries, translate, delete)")
        return 0
    finally:
        pg.close()


if __name__ == "__main__":
    sys.exit(main())
