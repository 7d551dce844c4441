#!/usr/bin/python3
"""File jobs have a deadline (issue 25, problem 7): server.file_timeout bounds the time a
file job (/translate_file, DeepL's /v2/document) may take from when the server starts on
it. A document within every limit used to keep the workers busy to its end, however long;
now, when the deadline passes, its queued sentences are dropped untranslated, the download
answers 504 with {"error"} (as /translate at request_timeout), a DeepL document goes to
status "error", a warning is logged, and the workers are free for the next client at once.
Also the setting's range, from the flag, the environment and the file.

Waits are for conditions (the download's status, /metrics gauges, log lines), each bounded
generously; nothing asserts a duration.

Environment: MT_BUILD_DIR, MT_SOURCE_DIR, MT_SHARED_DIR (as test_server.py).
"""
import json
import os
import re
import subprocess
import sys
import unittest
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mtfixtures as ts  # noqa: E402  (fixtures: Server, make_model, wait_until)

MODEL = None
UNITS = 1500          # lines of the file: 15 s of one worker on a loaded 2-core machine
SENTENCES_PER_UNIT = 4
FILE_SENTENCES = 3 * UNITS  # at least: the segmenter makes 5,250 of them


def setUpModule():
    global MODEL
    ts.require_server()
    MODEL = ts.make_model("deadline-en-de", 3)


def multipart(fields, files):
    boundary = uuid.uuid4().hex
    out = b""
    for k, v in fields.items():
        out += b"--%s\r\nContent-Disposition: form-data; name=\"%s\"\r\n\r\n%s\r\n" % (
            boundary.encode(), k.encode(), v.encode())
    for k, name, data in files:
        out += (b"--%s\r\nContent-Disposition: form-data; name=\"%s\"; filename=\"%s\"\r\n"
                b"Content-Type: application/octet-stream\r\n\r\n" % (boundary.encode(), k.encode(), name.encode()))
        out += data + b"\r\n"
    out += b"--%s--\r\n" % boundary.encode()
    return out, "multipart/form-data; boundary=" + boundary


def big_text():
    """UNITS lines of SENTENCES_PER_UNIT distinct sentences each (numbered, and the sentence
    cache is off: each is translated)."""
    words = ["cat", "dog", "house", "tree", "car", "river", "garden", "window"]
    lines = []
    for i in range(UNITS):
        lines.append(" ".join("The %s number %d sat near the %s in line %d." % (
            words[(i + k) % 8], i * SENTENCES_PER_UNIT + k, words[(i * 3 + k) % 8], i)
            for k in range(SENTENCES_PER_UNIT)))
    return ("\n".join(lines) + "\n").encode()


def wait_settled(srv, timeout=60):
    """The workers idle and nothing queued, per /metrics."""
    return ts.wait_until(lambda: srv.metric("mt_workers_busy") == 0 and srv.metric("mt_queue_depth") == 0
                         and srv.metric("mt_queue_requests") == 0, timeout=timeout, step=0.05)


class TestFileDeadline(unittest.TestCase):
    """One worker, a 1 s file_timeout and a file of 1,500 lines (5,250 sentences), which the
    worker needs far longer than a second for (4 s for 400 lines on a loaded 2-core machine;
    TestFullFileOutlastsTheDeadline translates it whole)."""

    @classmethod
    def setUpClass(cls):
        cls.srv = ts.Server(["--model", MODEL, "--workers", "1", "--file-timeout", "1",
                             "--max-file-bytes", "1000000", "--sentence-cache-mb", "0"], name="file-deadline")

    @classmethod
    def tearDownClass(cls):
        rc = cls.srv.stop()
        if rc != 0:
            raise AssertionError("mt-server exited %s:\n%s" % (rc, cls.srv.log()[-3000:]))

    def upload(self, path, fields, name, data):
        body, ct = multipart(fields, [("file", name, data)])
        st, _, raw = self.srv.request("POST", path, body, {"Content-Type": ct}, timeout=60)
        self.assertEqual(st, 200, raw[:300])
        return json.loads(raw)

    def test_download_answers_504_and_the_workers_are_free(self):
        srv = self.srv
        self.assertTrue(wait_settled(srv))
        translated0 = srv.metric("mt_sentences_translated_total")
        cancelled0 = srv.metric("mt_sentences_cancelled_total")
        url = self.upload("/translate_file", {"source": "en", "target": "de"}, "big.txt", big_text())
        path = "/download_file/" + url["translatedFileUrl"].rsplit("/download_file/", 1)[1]
        got = []
        self.assertTrue(ts.wait_until(lambda: got.append(srv.request("GET", path, timeout=30)) or got[-1][0] != 202,
                                      timeout=180, step=0.05), "the job ran on past its deadline")
        st, hd, raw = got[-1]
        self.assertEqual(st, 504, raw[:300])
        # the API description served at /spec lists this answer (clients generated from it)
        spec = json.load(open(os.path.join(ts.SRC, "web", "openapi.json"), encoding="utf-8"))
        self.assertIn("504", spec["paths"]["/download_file/{id}"]["get"]["responses"])
        err = json.loads(raw)["error"]
        self.assertIn("did not finish within server.file_timeout (1 s)", err)
        m = re.search(r"(\d+) of (\d+) units were translated, the rest dropped", err)
        self.assertTrue(m, err)
        self.assertEqual(int(m.group(2)), UNITS)
        self.assertLess(int(m.group(1)), UNITS / 2, "the file was translated to its end")
        # the reason is logged
        self.assertTrue(ts.wait_until(lambda: "file_timeout passed" in srv.log(), timeout=30), srv.log()[-2000:])
        line = [ln for ln in srv.log().splitlines() if "file_timeout passed" in ln][-1]
        self.assertIn("status=504", line)
        # the queue is empty and the worker idle at once, long before the file's sentences
        # could have been translated: most of them never were. The sentences of the translate call under way when the deadline passed are
        # dropped from the queue (mt_sentences_cancelled_total; none when it passed between
        # two calls, so not asserted), the later calls never made.
        self.assertTrue(wait_settled(srv, timeout=30), srv.metrics())
        translated = srv.metric("mt_sentences_translated_total") - translated0
        self.assertLess(translated, FILE_SENTENCES / 2, "the file was translated to its end")
        self.assertGreaterEqual(srv.metric("mt_sentences_cancelled_total"), cancelled0)
        # the next client is served now
        st, _, body = srv.post_json({"q": "The cat sat on the mat.", "source": "en", "target": "de"}, timeout=60)
        self.assertEqual(st, 200, body)
        self.assertTrue(body["translatedText"])
        # and the failure stays the job's answer
        st, _, raw = srv.request("GET", path, timeout=30)
        self.assertEqual(st, 504, raw[:300])

    def test_deepl_document_goes_to_error(self):
        srv = self.srv
        self.assertTrue(wait_settled(srv))
        doc = self.upload("/v2/document", {"target_lang": "DE", "source_lang": "EN"}, "big.txt", big_text())
        status = {}

        def finished():
            st, _, raw = srv.request("POST", "/v2/document/" + doc["document_id"],
                                     json.dumps({"document_key": doc["document_key"]}),
                                     {"Content-Type": "application/json"}, timeout=30)
            self.assertEqual(st, 200, raw[:300])
            status.update(json.loads(raw))
            return status["status"] not in ("queued", "translating")

        self.assertTrue(ts.wait_until(finished, timeout=180, step=0.05), status)
        self.assertEqual(status["status"], "error", status)
        self.assertIn("server.file_timeout", status.get("error_message", ""), status)
        self.assertTrue(wait_settled(srv, timeout=30), srv.metrics())


class TestFullFileOutlastsTheDeadline(unittest.TestCase):
    """The same file with the default deadline (1800 s) is translated whole: every one of its
    sentences, where the job above translated fewer than half before its 504."""

    def test_full_file_outlasts_the_deadline(self):
        srv = ts.Server(["--model", MODEL, "--workers", "1", "--max-file-bytes", "1000000",
                         "--sentence-cache-mb", "0"], name="file-no-deadline")
        try:
            body, ct = multipart({"source": "en", "target": "de"}, [("file", "big.txt", big_text())])
            st, _, raw = srv.request("POST", "/translate_file", body, {"Content-Type": ct}, timeout=60)
            self.assertEqual(st, 200, raw[:300])
            path = "/download_file/" + json.loads(raw)["translatedFileUrl"].rsplit("/download_file/", 1)[1]
            got = []
            self.assertTrue(ts.wait_until(lambda: got.append(srv.request("GET", path, timeout=30)) or
                                          got[-1][0] != 202, timeout=900, step=0.2))
            self.assertEqual(got[-1][0], 200, got[-1][2][:300])
            self.assertEqual(got[-1][2].count(b"\n"), UNITS)
            self.assertGreaterEqual(srv.metric("mt_sentences_translated_total"), FILE_SENTENCES)
        finally:
            self.assertEqual(srv.stop(), 0)


class TestSharedQueueDeadline(unittest.TestCase):
    """With shared_state the deadline runs from the claim; a job past it fails for good in
    the shared queue (504 on every replica, not handed to another one to run out again).
    SKIP without PostgreSQL 15."""

    def test_claimed_job_fails_with_504(self):
        import shutil
        import test_shared_state as sst
        if not os.path.exists(os.path.join(sst.PG_BIN, "postgres")) or not shutil.which("psql"):
            self.skipTest("postgresql-15 is not installed (scripts/install-deps.sh --test installs it)")
        pg = sst.Postgres()
        srv = None
        try:
            srv = ts.Server(["--model", MODEL, "--workers", "1", "--file-timeout", "1", "--shared-state",
                             pg.url_with_password, "--max-file-bytes", "1000000", "--sentence-cache-mb", "0"],
                            name="file-deadline-shared")
            body, ct = multipart({"source": "en", "target": "de"}, [("file", "big.txt", big_text())])
            st, _, raw = srv.request("POST", "/translate_file", body, {"Content-Type": ct}, timeout=60)
            self.assertEqual(st, 200, raw[:300])
            job = json.loads(raw)["translatedFileUrl"].rsplit("/download_file/", 1)[1]
            got = []
            self.assertTrue(ts.wait_until(lambda: got.append(srv.request("GET", "/download_file/" + job, timeout=30))
                                          or got[-1][0] != 202, timeout=180, step=0.05))
            self.assertEqual(got[-1][0], 504, got[-1][2][:300])
            self.assertIn("server.file_timeout (1 s)", json.loads(got[-1][2])["error"])
            rows = pg.sql("SELECT state, attempts, status FROM mt_jobs WHERE id = '%s'" % job)
            self.assertEqual([tuple(str(v) for v in r) for r in rows], [("failed", "1", "504")], rows)
            self.assertTrue(wait_settled(srv, timeout=30), srv.metrics())
            st, _, body = srv.post_json({"q": "The cat sat on the mat.", "source": "en", "target": "de"}, timeout=60)
            self.assertEqual(st, 200, body)
        finally:
            if srv:
                self.assertEqual(srv.stop(), 0)
            pg.close()


class TestFileTimeoutSetting(unittest.TestCase):
    """server.file_timeout: seconds, 0 (no limit) to 86400, from the flag, MT_FILE_TIMEOUT
    or the file; out of range stops the server with the setting named."""

    def run_server(self, args, env=None):
        full = {k: v for k, v in os.environ.items() if not k.startswith("MT_") or k in (
            "MT_BUILD_DIR", "MT_SOURCE_DIR", "MT_SHARED_DIR")}
        full.update(env or {})
        return subprocess.run([ts.SERVER] + args, capture_output=True, text=True, env=full, timeout=120)

    def test_range(self):
        r = self.run_server(["--model", MODEL, "--file-timeout", "-1"])
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("--file-timeout: -1 is out of range (0..86400)", r.stdout + r.stderr)
        r = self.run_server(["--model", MODEL], {"MT_FILE_TIMEOUT": "90000"})
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("MT_FILE_TIMEOUT: 90000 is out of range", r.stdout + r.stderr)
        cfg = os.path.join(ts.TMP, "file-timeout.toml")
        with open(cfg, "w") as f:
            f.write("[server]\nfile_timeout = 100000\n")
        r = self.run_server(["--config", cfg, "--model", MODEL])
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("server.file_timeout: 100000 is out of range", r.stdout + r.stderr)

    def test_default_and_override(self):
        r = self.run_server(["--model", MODEL, "--print-config"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"(?m)^file_timeout = 1800(\.0*)?\b")
        r = self.run_server(["--model", MODEL, "--print-config"], {"MT_FILE_TIMEOUT": "0"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"(?m)^file_timeout = 0(\.0*)?\b")


if __name__ == "__main__":
    import testmain
    sys.exit(testmain.run(__name__))
