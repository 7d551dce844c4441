#!/usr/bin/env python3
"""Shared state on PostgreSQL (server.shared_state): three mt-server replicas on one real
PostgreSQL 15 (Debian's postgresql-15: initdb into a temporary directory, a private Unix
socket, no TCP listener, never a system service). SKIP (77) when it is not installed.

- keys: a key added with `mt-server keys add` works on every replica at once; a removed
  one is refused at once; names and keys with SQL-special text round-trip through list.
- migration: eight clients opening a new database at once make its schema once.
- open server: no key in the config or the database: none needed, one sent is ignored;
  the first key added closes it.
- limits: a per-key limit of L characters per minute holds across the three replicas
  (what they let through, together, stays within L plus what drained meanwhile plus one
  request's size), where three in-process limiters would let 3 L through.
- suggestions: posted on every replica, all in the one database, SQL-special text
  (quotes, backslashes, $1, %s, unicode) stored unchanged.
- the database password (in the replicas' URL) never reaches their logs; `mt-server keys`
  and psql find it in a libpq password file (PGPASSFILE).
- outage: PostgreSQL stopped during the run: the replicas stay up, /health/ready names
  the dependency that is down, text translation (config key, limits on) keeps answering
  under a steady load without one failure, /suggest
  and store keys answer 503 with the reason; PostgreSQL started again: the features
  come back by themselves.
Run one class: tests/test_shared_state.py TestOutage"""
import json
import os
import pwd
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mtfixtures as ts  # noqa: E402  (Server: mt-server on a free port; make_model)
import testmain  # noqa: E402

PG_BIN = "/usr/lib/postgresql/15/bin"
PG = None      # the database (Postgres instance)
MODEL = None
CFG_KEY = "config-key-0123"
SPECIAL = "It's \"quoted\"; DROP TABLE mt_api_keys; -- \\ \\x00 $1 %s %n ' '' \\' Straße 日本語 😀"


class Postgres:
    """A private PostgreSQL 15: a temporary directory, a Unix socket in it, no TCP."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="mt_pg_")
        self.data = os.path.join(self.dir, "data")
        self.port = random.randint(20000, 60000)  # names the socket file only
        self.as_user = []
        if os.geteuid() == 0:  # postgres refuses to run as root
            pw = pwd.getpwnam("postgres")
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
            self.as_user = ["runuser", "-u", "postgres", "--"]
        os.chmod(self.dir, 0o700 if not self.as_user else 0o711)
        # a password (scram-sha-256), so that the test can see it is never logged, and a
        # libpq password file for the clients that do not put it in their URL
        self.password = "pw-%d-s3cret" % random.randint(10 ** 8, 10 ** 9)
        pwfile = os.path.join(self.dir, "pw")
        with open(pwfile, "w") as f:
            f.write(self.password + "\n")
        if self.as_user:
            os.chown(pwfile, pw.pw_uid, pw.pw_gid)
        self.run([os.path.join(PG_BIN, "initdb"), "-D", self.data, "-A", "scram-sha-256", "--pwfile", pwfile,
                  "-U", "mt", "-E", "UTF8", "--locale=C", "--no-sync"])
        os.unlink(pwfile)
        self.passfile = os.path.join(tempfile.mkdtemp(prefix="mt_pgpass_"), "pgpass")
        with open(self.passfile, "w") as f:
            f.write("*:*:*:mt:%s\n" % self.password)
        os.chmod(self.passfile, 0o600)  # libpq ignores a password file others can read
        self.url = "postgresql://mt@/postgres?host=%s&port=%d" % (self.dir, self.port)
        self.url_with_password = "postgresql://mt:%s@/postgres?host=%s&port=%d" % (self.password, self.dir,
                                                                                   self.port)
        self.start()

    def run(self, cmd, check=True):
        r = subprocess.run(self.as_user + cmd, capture_output=True, text=True, timeout=120)
        if check and r.returncode != 0:
            raise RuntimeError("%s failed: %s%s" % (cmd[0], r.stdout, r.stderr))
        return r

    def start(self):
        opts = "-k %s -p %d -c listen_addresses='' -c fsync=off" % (self.dir, self.port)
        self.run([os.path.join(PG_BIN, "pg_ctl"), "-D", self.data, "-l", os.path.join(self.dir, "log"),
                  "-o", opts, "-w", "-t", "60", "start"])

    def stop(self, mode="fast"):
        self.run([os.path.join(PG_BIN, "pg_ctl"), "-D", self.data, "-m", mode, "-w", "-t", "60", "stop"],
                 check=False)

    def sql(self, query):
        """One query's rows, each a tuple of text, through psql."""
        r = subprocess.run(["psql", self.url, "-X", "-At", "-F", "\x1f", "-R", "\x1e", "-c", query],
                           capture_output=True, timeout=60, env=dict(os.environ, PGPASSFILE=self.passfile))
        if r.returncode != 0:
            raise RuntimeError("psql: " + r.stderr.decode())
        out = r.stdout.decode("utf-8")
        out = out[:-1] if out.endswith("\n") else out
        return [tuple(row.split("\x1f")) for row in out.split("\x1e") if row]

    def close(self):
        self.stop("immediate")
        shutil.rmtree(self.dir, ignore_errors=True)
        shutil.rmtree(os.path.dirname(self.passfile), ignore_errors=True)


def keys(*args):
    """mt-server keys ARGS against the database: (exit code, stdout, stderr)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MT_")}
    env["MT_SHARED_STATE"] = PG.url  # no password: libpq reads PGPASSFILE
    env["PGPASSFILE"] = PG.passfile
    r = subprocess.run([ts.SERVER, "keys"] + list(args), capture_output=True, text=True, env=env, timeout=60)
    return r.returncode, r.stdout, r.stderr


def replicas(n=3, extra=()):
    """n mt-server replicas on the database (the password in their URL)."""
    return [ts.Server(["--model", MODEL, "--workers", "1", "--shared-state", PG.url_with_password,
                       "--api-key", CFG_KEY] + list(extra), name="shared-%d" % i) for i in range(n)]


def stop_all(servers):
    for s in servers:
        assert s.stop() == 0, s.log()
        log = s.log()
        assert "event=shared_state" in log, log
        assert PG.password not in log, "the database password is in the log:\n" + log


def translate(srv, key, q="Hello world."):
    return srv.post_json({"q": q, "source": "en", "target": "de", "api_key": key}, timeout=60)


def setUpModule():
    global PG, MODEL
    if not os.path.exists(os.path.join(PG_BIN, "postgres")):
        raise unittest.SkipTest("postgresql-15 is not installed (scripts/install-deps.sh --test installs it)")
    if not shutil.which("psql"):
        raise unittest.SkipTest("psql (postgresql-client-15) is not installed")
    ts.require_server()
    PG = Postgres()
    MODEL = ts.make_model("tiny-en-de", 1)


def tearDownModule():
    if PG:
        PG.close()


class TestKeys(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = replicas()

    @classmethod
    def tearDownClass(cls):
        stop_all(cls.srv)

    def test_add_remove_every_replica_at_once(self):
        rc, out, err = keys("add", "--name", "alice")
        self.assertEqual(rc, 0, err)
        key = out.strip()
        # the page learns that keys are needed now (no key in the config of this one)
        st, _, raw = self.srv[0].request("GET", "/frontend/settings")
        self.assertTrue(json.loads(raw)["keyRequired"])
        self.assertRegex(key, r"^[0-9a-f]{64}$")
        for s in self.srv:
            st, _, b = translate(s, key)
            self.assertEqual(st, 200, b)
            st, _, b = translate(s, key + "x")
            self.assertEqual(st, 403, b)
            st, _, b = translate(s, CFG_KEY)  # the config's key keeps working
            self.assertEqual(st, 200, b)
            st, _, b = s.post_json({"q": "Hello", "source": "en", "target": "de"})
            self.assertEqual(st, 403, b)
        # only the hash is stored
        rows = PG.sql("SELECT encode(key_hash, 'hex') FROM mt_api_keys WHERE name = 'alice'")
        self.assertEqual(len(rows), 1)
        self.assertNotIn(key, rows[0][0])
        rc, _, err = keys("remove", "alice")
        self.assertEqual(rc, 0, err)
        for s in self.srv:
            st, _, b = translate(s, key)
            self.assertEqual(st, 403, b)
        rc, _, err = keys("remove", "alice")
        self.assertNotEqual(rc, 0)
        rc, _, err = keys("add", "--name", "bad", "--char-limit", "12x")
        self.assertEqual(rc, 2, err)
        self.assertIn("--char-limit", err)
        rc, _, err = keys("add", "--name", "twice")
        self.assertEqual(rc, 0, err)
        rc, _, err = keys("add", "--name", "twice")
        self.assertEqual(rc, 1)
        self.assertIn("already exists", err)
        self.assertEqual(keys("remove", "twice")[0], 0)

    def test_special_names_round_trip(self):
        name = "n" + SPECIAL
        rc, out, err = keys("add", "--name", name, "--key", SPECIAL, "--char-limit", "77")
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.strip(), SPECIAL.strip())
        rc, out, err = keys("list")
        self.assertEqual(rc, 0, err)
        rows = [line.split("\t") for line in out.splitlines()]
        self.assertIn([name, "77"], [r[:2] for r in rows])
        st, _, b = translate(self.srv[1], SPECIAL)
        self.assertEqual(st, 200, b)
        rc, _, err = keys("remove", SPECIAL)  # by its value
        self.assertEqual(rc, 0, err)
        st, _, b = translate(self.srv[2], SPECIAL)
        self.assertEqual(st, 403, b)


class TestMigration(unittest.TestCase):
    def test_replicas_starting_together_migrate_once(self):
        """Eight clients open a new database at once: the schema is made once, under the
        advisory lock (without it, concurrent CREATE TABLEs fail on pg_type's unique index)."""
        PG.sql("CREATE DATABASE fresh")
        env = {k: v for k, v in os.environ.items() if not k.startswith("MT_")}
        env.update(MT_SHARED_STATE=PG.url.replace("/postgres?", "/fresh?"), PGPASSFILE=PG.passfile)
        procs = [subprocess.Popen([ts.SERVER, "keys", "list"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  env=env) for _ in range(8)]
        for p in procs:
            out, err = p.communicate(timeout=60)
            self.assertEqual(p.returncode, 0, err.decode())
        rows = subprocess.run(["psql", env["MT_SHARED_STATE"], "-X", "-At", "-c", "SELECT version FROM mt_schema"],
                              capture_output=True, text=True, env=dict(os.environ, PGPASSFILE=PG.passfile),
                              timeout=60).stdout.split()
        self.assertEqual(rows, ["2"])  # 2: glossaries (store_pg.c)


class TestOpenServer(unittest.TestCase):
    def test_no_key_anywhere_means_open(self):
        """With no key in the config or the database, requests need none and a key sent
        anyway is ignored, as without the store; the first key added closes the server."""
        PG.sql("CREATE DATABASE open_db")
        url = PG.url_with_password.replace("/postgres?", "/open_db?")
        srv = ts.Server(["--model", MODEL, "--workers", "1", "--shared-state", url], name="shared-open")
        try:
            self.assertEqual(srv.post_json({"q": "Hello", "source": "en", "target": "de"})[0], 200)
            st, _, b = translate(srv, "any-string")
            self.assertEqual(st, 200, b)
            PG.stop()  # open when last asked: open while the database is down
            try:
                st, _, b = translate(srv, "any-string")
                self.assertEqual(st, 200, b)
                self.assertEqual(srv.post_json({"q": "Hello", "source": "en", "target": "de"})[0], 200)
            finally:
                PG.start()
            # the replica finds the database again by itself (a new connection at most once a second)
            self.assertTrue(ts.wait_until(
                lambda: json.loads(srv.request("GET", "/health/ready")[2])["status"] == "ok", timeout=30, step=0.2))
            env = {k: v for k, v in os.environ.items() if not k.startswith("MT_")}
            r = subprocess.run([ts.SERVER, "keys", "add", "--shared-state", url], capture_output=True, text=True,
                               env=env, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(srv.post_json({"q": "Hello", "source": "en", "target": "de"})[0], 403)
            self.assertEqual(translate(srv, "any-string")[0], 403)
            self.assertEqual(translate(srv, r.stdout.strip())[0], 200)
        finally:
            self.assertEqual(srv.stop(), 0)
            self.assertNotIn(PG.password, srv.log())


class TestLimits(unittest.TestCase):
    def test_char_limit_across_replicas(self):
        srv = replicas()
        try:
            limit, q = 300, "Hello world, how are you now?"  # 29 characters
            rc, out, err = keys("add", "--name", "limited", "--char-limit", str(limit))
            self.assertEqual(rc, 0, err)
            key = out.strip()
            admitted, refused, t0 = 0, 0, time.time()
            for i in range(45):
                st, hd, b = translate(srv[i % 3], key, q)
                if st == 200:
                    admitted += len(q)
                else:
                    self.assertEqual(st, 429, b)
                    self.assertGreaterEqual(int(hd["retry-after"]), 1)
                    refused += 1
            elapsed = time.time() - t0
            drained = limit * elapsed / 60
            print("limit %d chars/min over 3 replicas: %d chars admitted, %d requests refused in %.1f s"
                  % (limit, admitted, refused, elapsed))
            self.assertLessEqual(admitted, limit + drained + len(q))
            self.assertGreaterEqual(admitted, limit - len(q))
            self.assertGreater(refused, 0)
        finally:
            stop_all(srv)


class TestOverhead(unittest.TestCase):
    def test_cost_of_a_store_key(self):
        """Prints what a key kept in the database costs a request (a key lookup and a
        rate-bucket charge: two queries) against a config key on the same replica; the
        README quotes it. Checks only that both answer."""
        srv = replicas(1)
        try:
            rc, out, err = keys("add", "--name", "overhead", "--char-limit", "100000000")
            self.assertEqual(rc, 0, err)
            key, n, q = out.strip(), 300, "Hello."
            times = {}
            for name, k in (("config key", CFG_KEY), ("store key", key)) * 2:  # warm, then measured
                t0 = time.perf_counter()
                for _ in range(n):
                    st, _, b = translate(srv[0], k, q)
                    self.assertEqual(st, 200, b)
                times[name] = (time.perf_counter() - t0) / n * 1000
            print("per request, %d sequential /translate of %r on one replica: config key %.2f ms, "
                  "key and limit in PostgreSQL %.2f ms (+%.2f ms)"
                  % (n, q, times["config key"], times["store key"], times["store key"] - times["config key"]))
        finally:
            stop_all(srv)


class TestSuggestions(unittest.TestCase):
    def test_from_every_replica_in_the_database(self):
        srv = replicas()
        try:
            sent = []
            for i, s in enumerate(srv):
                row = (SPECIAL + " #%d" % i, "s: " + SPECIAL, "en", "de")
                st, _, b = s.post_json({"q": row[0], "s": row[1], "source": "en", "target": "de",
                                        "api_key": CFG_KEY}, path="/suggest")
                self.assertEqual(st, 200, b)
                sent.append(row)
            rows = PG.sql("SELECT q, s, source, target FROM mt_suggestions WHERE q LIKE 'It''s%' ORDER BY id")
            self.assertEqual(rows[-3:], sent)
        finally:
            stop_all(srv)


class TestOutage(unittest.TestCase):
    def test_database_stopped_and_started(self):
        # limits on, so that every request charges a bucket in the database (or, while it is
        # down, the replica's own); high enough never to refuse this test's load
        srv = replicas(extra=["--req-limit", "100000", "--char-limit-per-minute", "10000000"])
        load = {"ok": 0, "failed": [], "stop": False}

        def text_load():  # translations with the config's key, round robin, all along
            i = 0
            while not load["stop"]:
                st, _, b = translate(srv[i % 3], CFG_KEY, "Hello number %d." % i)
                if st == 200:
                    load["ok"] += 1
                else:
                    load["failed"].append((st, b))
                i += 1

        loader = threading.Thread(target=text_load)
        loader.start()
        try:
            rc, out, err = keys("add", "--name", "outage")
            self.assertEqual(rc, 0, err)
            key = out.strip()
            sugg = {"q": "Hello", "s": "Hallo", "source": "en", "target": "de", "api_key": CFG_KEY}
            for s in srv:
                self.assertEqual(s.post_json(sugg, path="/suggest")[0], 200)
            t_stop = time.time()
            PG.stop()
            for s in srv:
                st, _, raw = s.request("GET", "/health/ready")
                self.assertEqual(st, 200, raw)  # text translation still works: stay in the balancer
                b = json.loads(raw)
                self.assertEqual(b["status"], "degraded", b)
                self.assertIn("shared_state", b["down"])
                st, _, b = translate(s, CFG_KEY)
                self.assertEqual(st, 200, b)
                st, _, b = s.post_json(sugg, path="/suggest")
                self.assertEqual(st, 503, b)
                self.assertIn("database is down", b["error"])
                st, _, b = translate(s, key)
                self.assertEqual(st, 503, b)
                self.assertIsNone(s.proc.poll())
            print("database down: every replica answered text, 503 for suggestions and store keys "
                  "(%.1f s after the stop)" % (time.time() - t_stop))
            PG.start()
            t_start = time.time()
            for s in srv:
                self.assertTrue(ts.wait_until(lambda: s.post_json(sugg, path="/suggest")[0] == 200,
                                              timeout=30, step=0.2), s.log())
                self.assertEqual(translate(s, key)[0], 200)
                st, _, raw = s.request("GET", "/health/ready")
                self.assertEqual(json.loads(raw)["status"], "ok")
            print("database back: every replica served suggestions again within %.1f s"
                  % (time.time() - t_start))
            load["stop"] = True
            loader.join(timeout=60)
            print("text load through the stop and start: %d translations, %d failed"
                  % (load["ok"], len(load["failed"])))
            self.assertEqual(load["failed"], [])
            self.assertGreater(load["ok"], 0)
        finally:
            load["stop"] = True
            loader.join(timeout=60)
            stop_all(srv)


if __name__ == "__main__":
    sys.exit(testmain.run(__name__))
