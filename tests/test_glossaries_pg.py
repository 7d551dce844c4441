#!/usr/bin/env python3
"""Glossaries per API key on PostgreSQL: runs tests/test_glossaries.c's program (argv[1])
against a private PostgreSQL 15 (test_shared_state.Postgres: initdb in a temporary
directory, a Unix socket only) through MT_TEST_PG_URL, on a fresh cluster, so the store's
schema migration (version 2: mt_glossaries) runs first. SKIP (77) without postgresql-15."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_shared_state as tss  # noqa: E402


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
        return 0
    finally:
        pg.close()


if __name__ == "__main__":
    sys.exit(main())
