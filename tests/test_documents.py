"""Documents that crashed or swamped the file translation, through the real front ends:
mt-translate FILE and mt-server's POST /translate_file + GET /download_file, on a small
random model (tools/make_test_model.py; no output is hard-coded).
The documents (tests/document_samples.py) are zips written byte by byte.
Run one class: tests/test_documents.py TestServer"""
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import zipfile
import io

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_server as ts  # noqa: E402  (the Server fixture: mt-server on a free port)
import testmain  # noqa: E402
from document_samples import GOOD, HOSTILE  # noqa: E402

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
        for name, data, want in HOSTILE:
            st, raw = self.job(name, data)
            self.assertEqual(st, 422, (name, raw[:300]))
            self.assertIn(want, ts.json.loads(raw)["error"], name)
            self.alive()


if __name__ == "__main__":
    sys.exit(testmain.run(__name__))
