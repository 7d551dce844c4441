"""Documents that crashed or swamped the file translation, through the real front ends:
mt-translate FILE and mt-server's POST /translate_file + GET /download_file, on a small
random model (tools/make_test_model.py; no output is hard-coded).
The documents (tests/document_samples.py) are zips written byte by byte.
Run one class: tests/test_documents.py TestServer"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import zipfile
import io

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mtfixtures as ts  # noqa: E402  (the Server fixture: mt-server on a free port)
import testmain  # noqa: E402
from document_samples import GOOD, HOSTILE, W, docx  # noqa: E402

CLI = os.path.join(ts.BUILD, "cli", "mt-translate")


class ModelCase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="mt-test-documents-")
        cls.model = os.path.join(cls.tmp, "model")
        subprocess.run(["/usr/bin/python3", os.path.join(ts.SRC, "tools", "make_test_model.py"),
                        cls.model, "--seed", "11", "--eos-bias", "6", "--max-length", "24"],
                       check=True, capture_output=True, timeout=300)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def check_zip(self, data, part):
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            self.assertIsNone(z.testzip())
            self.assertTrue(z.read(part).startswith(b"<?xml"))


class TestCli(ModelCase):
    def translate(self, name, data):
        path = os.path.join(self.tmp, name)
        with open(path, "wb") as f:
            f.write(data)
        out = path + ".out"
        proc = subprocess.run([CLI, "--model", self.model, path, "--output-file", out],
                              capture_output=True, timeout=300)
        return proc, out

    def test_layouts_translate(self):
        for name, data, part in GOOD:
            proc, out = self.translate(name, data)
            self.assertEqual(proc.returncode, 0, (name, proc.stderr.decode()))
            with open(out, "rb") as f:
                self.check_zip(f.read(), part)

    def test_hostile_documents_are_refused(self):
        for name, data, want in HOSTILE:
            proc, out = self.translate(name, data)
            self.assertEqual(proc.returncode, 1, (name, proc.stderr.decode()))
            self.assertIn(want, proc.stderr.decode(), name)
            self.assertFalse(os.path.exists(out), name)


def multipart(filename, data, boundary="mtDocBoundary3q"):
    out = b""
    for k, v in (("source", "en"), ("target", "de")):
        out += ('--%s\r\nContent-Disposition: form-data; name="%s"\r\n\r\n%s\r\n'
                % (boundary, k, v)).encode()
    out += ('--%s\r\nContent-Disposition: form-data; name="file"; filename="%s"\r\n'
            'Content-Type: application/octet-stream\r\n\r\n' % (boundary, filename)).encode()
    out += data + ("\r\n--%s--\r\n" % boundary).encode()
    return out, {"Content-Type": "multipart/form-data; boundary=" + boundary}


class TestServer(ModelCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.srv = ts.Server(["--model", cls.model, "--workers", "1", "--spool-dir",
                             os.path.join(cls.tmp, "spool"), "--max-file-jobs", "32",
                             "--max-file-jobs-per-client", "32"],
                            name="documents")

    @classmethod
    def tearDownClass(cls):
        code = cls.srv.stop()
        super().tearDownClass()
        assert code == 0, "mt-server exited with %s" % code

    def job(self, name, data):
        """Uploads a file and waits (deadline, no fixed sleep) for the job's end."""
        payload, hd = multipart(name, data)
        st, _, raw = self.srv.request("POST", "/translate_file", payload, hd)
        self.assertEqual(st, 200, raw[:300])
        url = ts.json.loads(raw)["translatedFileUrl"]
        path = "/download_file/" + url.rsplit("/download_file/", 1)[1]
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            st, _, raw = self.srv.request("GET", path)
            if st != 202:
                return st, raw
            time.sleep(0.05)
        self.fail("%s: the job did not end in 120 s" % name)

    def alive(self):
        st, _, _ = self.srv.request("GET", "/health")
        self.assertEqual(st, 200)

    def test_layouts_translate(self):
        for name, data, part in GOOD:
            st, raw = self.job(name, data)
            self.assertEqual(st, 200, (name, raw[:300]))
            self.check_zip(raw, part)
        self.alive()

    def test_hostile_documents_fail_their_job_only(self):
        # over a size or ratio limit: 413; malformed or hostile: 422
        too_large = {"bomb.docx"}
        for name, data, want in HOSTILE:
            st, raw = self.job(name, data)
            self.assertEqual(st, 413 if name in too_large else 422, (name, raw[:300]))
            self.assertIn(want, ts.json.loads(raw)["error"], name)
            self.alive()

    def test_many_attributes_refused_before_parsing(self):
        # 60,000 attributes on one element (135 KB) cost libxml2 2.9 seconds of CPU
        # (quadratic): refused by the scan before libxml2 reads the part.
        attrs = " ".join("a%d=''" % i for i in range(60000))
        data = docx(('<?xml version="1.0"?><w:document %s><w:body><w:p %s><w:r><w:t>Hi</w:t>'
                     '</w:r></w:p></w:body></w:document>' % (W, attrs)).encode())
        st, raw = self.job("attrs.docx", data)
        self.assertEqual(st, 413, raw[:300])
        self.assertIn("word/document.xml: line 1: an element with more than 128 attributes",
                      ts.json.loads(raw)["error"])
        self.alive()


def slow_docx():
    """A stored word/document.xml with the most the reader takes: 985,000 empty elements
    (the node budget is 1,000,000; attributes count in it, 128 per element at most, so
    no part costs libxml2 seconds of CPU any more) and 400 paragraphs, whose
    translations keep the reader process waiting."""
    from document_samples import raw_zip, W
    paras = "<w:p><w:r><w:t>A dog runs.</w:t></w:r></w:p>" * 400
    doc = ('<?xml version="1.0"?><w:document %s><w:body>%s%s</w:body></w:document>'
           % (W, paras, "<a/>" * 985000)).encode()
    return raw_zip([("word/document.xml", doc, {"deflate": False})])


def children(pid):
    """The pids whose parent is pid (from /proc)."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            out.append(int(d))
    return out


class TestIsolation(ModelCase):
    """A document reader that runs away or is killed costs its own job: the others, a
    text /translate and the server (same pid) carry on. The readers are children of a
    helper process the server forks at start."""

    def server(self, args, name):
        srv = ts.Server(["--model", self.model, "--workers", "1", "--spool-dir",
                         os.path.join(self.tmp, "spool"), "--max-file-jobs-per-client", "32",
                         "--max-file-bytes", str(10 << 20)] + args, name=name)
        self.addCleanup(lambda: self.assertEqual(srv.stop(), 0))
        return srv

    def upload(self, srv, name, data):
        payload, hd = multipart(name, data)
        st, _, raw = srv.request("POST", "/translate_file", payload, hd)
        self.assertEqual(st, 200, raw[:300])
        return "/download_file/" + ts.json.loads(raw)["translatedFileUrl"].rsplit("/download_file/", 1)[1]

    def wait(self, srv, path):
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            st, _, raw = srv.request("GET", path)
            if st != 202:
                return st, raw
            time.sleep(0.05)
        self.fail("%s: the job did not end in 180 s" % path)

    def readers(self, srv):
        """The per-job reader processes: children of the server's helper."""
        return [k for z in children(srv.proc.pid) for k in children(z)]

    def test_runaway_reader_costs_its_job_only(self):
        srv = self.server(["--file-reader-cpu-seconds", "1"], "isolation-cpu")
        pid = srv.proc.pid
        hostile = self.upload(srv, "slow.docx", slow_docx())
        good = self.upload(srv, GOOD[0][0], GOOD[0][1])
        st, body = srv.post_json({"q": "A dog runs.", "source": "en", "target": "de"})[::2]
        self.assertEqual(st, 200, body)
        st, raw = self.wait(srv, good)
        self.assertEqual(st, 200, raw[:300])
        self.check_zip(raw, GOOD[0][2])
        st, raw = self.wait(srv, hostile)
        if st == 200:
            self.skipTest("this machine read the slow document in under 1 s: nothing ran away")
        self.assertEqual(st, 422, raw[:300])
        self.assertIn("exceeded its CPU time limit of 1 s", ts.json.loads(raw)["error"])
        self.assertIsNone(srv.proc.poll())
        self.assertEqual(srv.proc.pid, pid)
        self.assertRegex(srv.log(), r'msg="translation failed" status=422 reason=".*CPU time limit')
        st, raw = self.wait(srv, self.upload(srv, GOOD[1][0], GOOD[1][1]))
        self.assertEqual(st, 200, raw[:300])

    def test_killed_reader_and_helper(self):
        srv = self.server([], "isolation-kill")
        pid = srv.proc.pid
        slow = self.upload(srv, "slow.docx", slow_docx())
        deadline = time.monotonic() + 60
        readers = []
        while not readers and time.monotonic() < deadline:
            readers = self.readers(srv)
            st, _, raw = srv.request("GET", slow)
            self.assertEqual(st, 202, raw[:300])  # must still run when its reader is found
            if not readers:
                time.sleep(0.02)
        self.assertEqual(len(readers), 1, "no reader process found")
        os.kill(readers[0], signal.SIGKILL)
        st, raw = self.wait(srv, slow)
        self.assertEqual(st, 422, raw[:300])
        self.assertIn("the document reader was killed (SIGKILL", ts.json.loads(raw)["error"])
        self.assertRegex(srv.log(), r'status=422 reason=".*was killed')
        st, raw = self.wait(srv, self.upload(srv, GOOD[0][0], GOOD[0][1]))
        self.assertEqual(st, 200, raw[:300])
        # The helper itself killed: the next job starts another one and succeeds.
        helpers = children(pid)
        self.assertEqual(len(helpers), 1, helpers)
        os.kill(helpers[0], signal.SIGKILL)
        st, raw = self.wait(srv, self.upload(srv, GOOD[2][0], GOOD[2][1]))
        self.assertEqual(st, 200, raw[:300])
        self.assertIn("helper process had exited: started a new one", srv.log())
        self.assertIsNone(srv.proc.poll())
        self.assertEqual(srv.proc.pid, pid)
        self.assertEqual(srv.post_json({"q": "A dog runs.", "source": "en", "target": "de"})[0], 200)


if __name__ == "__main__":
    sys.exit(testmain.run(__name__))
