#!/usr/bin/python3
"""argos-translate packages (hub/argos.c, `mt-models install PACKAGE`).

A package is built here, without network, from models/en-de (stored int8, so its float32
copy q * scale from tools/quantize_model.py --dequantize) converted by the CTranslate2
peer's hf_to_ct2.py (../shared/peers/ctranslate2; skipped without it): a .argosmodel zip
holding ROOT/metadata.json (from_code en, to_code de), ROOT/sentencepiece.model (the model's
SentencePiece model: the package's only one), ROOT/model/{model.bin, config.json,
shared_vocabulary.json} and a stanza/ folder that is not read. Checked:
- `mt-models install pkg.argosmodel` installs argos-en-de in MT_MODELS_DIR, and mt-translate
  on it gives, with beam 4, the same ids and the same text as models/en-de (float32);
- `mt-models list` shows it with its pair and the stored type ct2;
- a package with separate source and target vocabularies (.json and .txt);
- the same package from a URL (a local HTTP server, which never sees HF_TOKEN), from a
  package index entry (argos:en-de; its sha256 checked, a wrong one refused) and as an
  unpacked package directory;
- mt-server --models-dir serves every model installed in a directory;
- docker/entrypoint.sh installs MT_INSTALL's packages and appends them to MT_MODELS;
- broken packages (no metadata.json, no to_code, no model.bin, not a zip) fail naming the
  problem and leave nothing in the models directory; a zip entry that climbs out of the
  package (model/../../x) is never written.
The same package unpacked (as argos-translate leaves it in
~/.local/share/argos-translate/packages/) and loaded in place, without installing:
- with beam 4 the same ids and text as the package installed, greedy the same ids as
  CTranslate2 itself on the package's model/ with its sentencepiece.model;
- mt-server --models-dir over a directory holding an installed model (models/de-en) and the
  unpacked package lists both in /languages and translates as the installed package does.
TestInPlace (no peer: the tiny CTranslate2 model of tests/fuzz/ct2): a read-only package
loads and nothing in it changes; a missing or corrupt sentencepiece.model, vocabulary or
metadata.json is refused with a message naming the file; mt-server --models-dir serves an
unpacked package beside an installed model.
"""
import http.server
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import unittest
import zipfile

SOURCE_DIR = os.environ.get("MT_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD_DIR = os.environ.get("MT_BUILD_DIR") or os.path.join(SOURCE_DIR, "build")
SHARED_DIR = os.environ.get("MT_SHARED_DIR") or os.path.join(SOURCE_DIR, "..", "shared")
PEER = os.path.join(SHARED_DIR, "peers", "ctranslate2")
EN_DE = os.path.join(SOURCE_DIR, "models", "en-de")
MT_TRANSLATE = os.path.join(BUILD_DIR, "cli", "mt-translate")
MT_MODELS = os.path.join(BUILD_DIR, "cli", "mt-models")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import testmain  # noqa: E402
import mtfixtures  # noqa: E402

LINES = ["A man is riding a bicycle down the street.", "Two dogs play in the snow.",
         "The children are reading books in the library.", "A woman in a red dress is singing on a stage.",
         "Where is the train station?", "I would like a cup of coffee, please.",
         "The weather is nice today.", "A group of people stand in front of a building."]
ROOT = "translate-en_de-1_0/"
META = {"package_version": "1.0", "argos_version": "1.9", "from_code": "en", "from_name": "English",
        "to_code": "de", "to_name": "German", "type": "translate"}


def make_package(path, ct2_dir, meta=META, model_files=("model.bin", "config.json", "shared_vocabulary.json"),
                 extra=()):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        if meta is not None:
            z.writestr(ROOT + "metadata.json", json.dumps(meta))
        z.write(os.path.join(EN_DE, "source.spm"), ROOT + "sentencepiece.model")
        z.writestr(ROOT + "README.md", "test package\n")
        z.writestr(ROOT + "stanza/en/tokenize/gum.pt", b"not read")
        for f in model_files:
            z.write(os.path.join(ct2_dir, f), ROOT + "model/" + f)
        for name, data in extra:
            z.writestr(name, data)


class TestArgos(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.isdir(os.path.join(PEER, "python", "ctranslate2")):
            raise unittest.SkipTest("needs the CTranslate2 peer's converter in " + PEER)
        if not os.path.exists(os.path.join(EN_DE, "model.safetensors")):
            raise unittest.SkipTest("needs models/en-de")
        for p in (MT_TRANSLATE, MT_MODELS):
            if not os.path.exists(p):
                raise unittest.SkipTest(p + " is not built")
        cls.tmp = tempfile.mkdtemp(prefix="test-argos-")
        cls.ct2 = os.path.join(cls.tmp, "ct2")
        # models/en-de is stored int8: the converter reads its float32 copy q * scale.
        floats = mtfixtures.float_weights(EN_DE, os.path.join(cls.tmp, "en-de-float32"))
        subprocess.run(["/usr/bin/python3", os.path.join(PEER, "hf_to_ct2.py"), floats, cls.ct2], check=True,
                       capture_output=True, timeout=300)
        cls.pkg = os.path.join(cls.tmp, "translate-en_de-1_0.argosmodel")
        make_package(cls.pkg, cls.ct2)
        cls.ref_ids = cls.translate(EN_DE, "ids")
        cls.ref_text = cls.translate(EN_DE, "text")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @staticmethod
    def translate(model, output, beam="4"):
        r = subprocess.run([MT_TRANSLATE, "--model", model, "--beam", beam, "--compute-type", "float32", "--output",
                            output], input="\n".join(LINES) + "\n", capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        return r.stdout.splitlines()

    def unpacked(self, name):
        """The package unpacked under tmp/NAME/ as argos-translate installs it: NAME/ROOT."""
        with zipfile.ZipFile(self.pkg) as z:
            z.extractall(os.path.join(self.tmp, name))
        return os.path.join(self.tmp, name, ROOT.rstrip("/"))

    def test_in_place_equals_installed_and_ctranslate2(self):
        """The unpacked package loaded in place: beam 4 ids and text as the same package
        installed with mt-models install (and as models/en-de); greedy ids as CTranslate2's own
        on the package's model/ with the package's sentencepiece.model."""
        pkg = self.unpacked("in-place")
        models_dir = os.path.join(self.tmp, "m-in-place")
        self.models("m-in-place", "install", pkg, models_dir=models_dir)
        installed = os.path.join(models_dir, "argos-en-de")
        ids, text = self.translate(pkg, "ids"), self.translate(pkg, "text")
        self.assertEqual(len(ids), len(LINES))
        self.assertEqual(ids, self.translate(installed, "ids"))
        self.assertEqual(text, self.translate(installed, "text"))
        self.assertEqual((ids, text), (self.ref_ids, self.ref_text))
        greedy = self.translate(pkg, "ids", beam="1")
        ref = ct2_translate(os.path.join(pkg, "model"), os.path.join(pkg, "sentencepiece.model"), LINES, 1)
        same = sum(a == b for a, b in zip(greedy, ref))
        print("greedy, package in place vs CTranslate2 on it: %d/%d identical" % (same, len(LINES)))
        self.assertEqual(greedy, ref)

    def test_server_models_dir_installed_and_in_place(self):
        """mt-server --models-dir over an installed model (a copy of models/de-en) and an
        unpacked argos package: /languages lists both pairs, the log names the package's format,
        en -> de translates as the installed package does."""
        models_dir = os.path.join(self.tmp, "m-mixed")
        os.makedirs(models_dir)
        shutil.copytree(os.path.join(SOURCE_DIR, "models", "de-en"), os.path.join(models_dir, "de-en"))
        with zipfile.ZipFile(self.pkg) as z:
            z.extractall(models_dir)
        server = mtfixtures.Server(["--models-dir", models_dir, "--workers", "1", "--beam-size", "4",
                                    "--compute-type", "float32"], name="argos-mixed")
        try:
            status, _, body = server.request("GET", "/languages")
            self.assertEqual(status, 200, body)
            targets = {x["code"]: x["targets"] for x in json.loads(body)}
            self.assertEqual((targets["en"], targets["de"]), (["de"], ["en"]))
            status, _, body = server.request("POST", "/translate", json.dumps(
                {"q": LINES, "source": "en", "target": "de"}), {"Content-Type": "application/json"})
            self.assertEqual(status, 200, body)
            self.assertEqual(json.loads(body)["translatedText"], self.ref_text)
            log = server.log()
        finally:
            server.stop()
        self.assertRegex(log, r"event=model_loaded model=\S*translate-en_de-1_0\S* dir=\S+ format=argos-package ")
        self.assertRegex(log, r"event=model_loaded model=\S*de-en\S* dir=\S+ format=marian ")

    def models(self, name, *args, models_dir=None, ok=True):
        env = dict(os.environ, MT_MODELS_DIR=models_dir or os.path.join(self.tmp, name))
        env.pop("HF_HUB_OFFLINE", None)
        r = subprocess.run([MT_MODELS, *args], capture_output=True, text=True, timeout=300, env=env)
        if ok:
            self.assertEqual(r.returncode, 0, r.stderr)
        else:
            self.assertEqual(r.returncode, 1, "exit %d: %s" % (r.returncode, r.stderr))
        self.assertNotIn("Sanitizer", r.stderr)
        return r

    def check_installed(self, d):
        with open(os.path.join(d, "tokenizer_config.json")) as f:
            tc = json.load(f)
        self.assertEqual((tc["source_lang"], tc["target_lang"]), ("en", "de"))
        self.assertEqual(self.translate(d, "ids"), self.ref_ids)
        self.assertEqual(self.translate(d, "text"), self.ref_text)

    def test_install_file(self):
        models_dir = os.path.join(self.tmp, "m-file")
        r = self.models("m-file", "install", self.pkg, models_dir=models_dir)
        self.assertIn("installed the argos-translate package en -> de", r.stderr)
        d = os.path.join(models_dir, "argos-en-de")
        self.assertTrue(os.path.exists(os.path.join(d, "model.bin")))
        self.assertFalse(os.path.exists(os.path.join(d, "stanza")))
        self.check_installed(d)
        out = self.models("m-file", "list", models_dir=models_dir).stdout
        line = [x for x in out.splitlines() if x.startswith("argos-en-de")]
        self.assertEqual(len(line), 1, out)
        self.assertIn("en -> de", line[0])
        self.assertIn("ct2", line[0])
        again = self.models("m-file", "install", self.pkg, models_dir=models_dir)
        self.assertIn("already installed", again.stderr)
        self.models("m-file", "remove", "argos-en-de", models_dir=models_dir)
        self.assertEqual(os.listdir(models_dir), [])

    def serve(self):
        """A local HTTP server over self.tmp that records each request's Authorization header."""
        seen = self.auth_seen = []
        tmp = self.tmp

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *a, **k):
                super().__init__(*a, directory=tmp, **k)

            def log_message(self, *a):
                pass

            def do_GET(self):
                seen.append(self.headers.get("Authorization"))
                super().do_GET()
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        self.addCleanup(srv.shutdown)
        return "http://127.0.0.1:%d/" % srv.server_address[1]

    def test_install_url(self):
        url = self.serve() + os.path.basename(self.pkg)
        dest = os.path.join(self.tmp, "m-url", "de-from-url")
        os.environ["HF_TOKEN"] = "hf_secret_never_sent"  # the hub's token is not for other hosts
        try:
            self.models("m-url", "install", url, "--dir", dest)
        finally:
            del os.environ["HF_TOKEN"]
        self.assertTrue(self.auth_seen)
        self.assertEqual(set(self.auth_seen), {None})
        self.check_installed(dest)
        self.assertEqual(sorted(os.listdir(os.path.dirname(dest))), ["de-from-url"])
        self.models("m-url", "install", url.replace(".argosmodel", "-missing.argosmodel"), "--dir",
                    dest + "2", ok=False)

    def test_install_from_index(self):
        """argos:FROM-TO from a package index (argos-translate's index.json): the entry's first
        link, its sha256 checked; a wrong digest and a pair the index lacks are refused."""
        import hashlib
        base = self.serve()
        with open(self.pkg, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        index = [{"package_version": "1.0", "from_code": "en", "to_code": "de", "type": "translate",
                  "links": ["ftp://not.used/x", base + os.path.basename(self.pkg)], "sha256": digest},
                 {"from_code": "en", "to_code": "fr", "links": [base + os.path.basename(self.pkg)],
                  "sha256": "0" * 64}]
        with open(os.path.join(self.tmp, "index.json"), "w") as f:
            json.dump(index, f)
        os.environ["ARGOS_PACKAGE_INDEX"] = base + "index.json"
        try:
            models_dir = os.path.join(self.tmp, "m-index")
            r = self.models("m-index", "install", "argos:en-de", models_dir=models_dir)
            self.assertIn("package index", r.stderr)
            self.check_installed(os.path.join(models_dir, "argos-en-de"))
            r = self.models("m-index", "install", "argos:en-fr", models_dir=models_dir, ok=False)
            self.assertIn("the package index lists " + "0" * 64, r.stderr)
            r = self.models("m-index", "install", "argos:xx-yy", models_dir=models_dir, ok=False)
            self.assertIn("has no package xx -> yy; it has en-de, en-fr", r.stderr)
            self.assertEqual(os.listdir(models_dir), ["argos-en-de"])
        finally:
            del os.environ["ARGOS_PACKAGE_INDEX"]

    def test_install_unpacked_directory(self):
        unpacked = os.path.join(self.tmp, "packages")
        with zipfile.ZipFile(self.pkg) as z:
            z.extractall(unpacked)
        models_dir = os.path.join(self.tmp, "m-dir")
        self.models("m-dir", "install", os.path.join(unpacked, ROOT), models_dir=models_dir)
        self.check_installed(os.path.join(models_dir, "argos-en-de"))

    def broken(self, name, expect, **kw):
        pkg = os.path.join(self.tmp, name + ".argosmodel")
        make_package(pkg, self.ct2, **kw)
        models_dir = os.path.join(self.tmp, "m-" + name)
        r = self.models(name, "install", pkg, models_dir=models_dir, ok=False)
        self.assertIn(expect, r.stderr)
        self.assertEqual(os.listdir(models_dir) if os.path.isdir(models_dir) else [], [])

    def test_separate_vocabularies(self):
        """A package whose model has source_ and target_vocabulary (tests/fuzz/ct2/separate.bin:
        10 source, 12 target tokens): vocab.json and target_vocab.json, separate_vocabs true."""
        seeds = os.path.join(SOURCE_DIR, "tests", "fuzz", "ct2")
        src = ["</s>", "<unk>", "<s>"] + ["t%d" % i for i in range(7)]
        tgt = ["</s>", "<unk>", "<s>"] + ["u%d" % i for i in range(9)]
        pkg = os.path.join(self.tmp, "separate.argosmodel")
        with zipfile.ZipFile(pkg, "w") as z:
            z.writestr("metadata.json", json.dumps(dict(META, from_code="xx", to_code="yy")))
            z.write(os.path.join(EN_DE, "source.spm"), "sentencepiece.model")
            z.write(os.path.join(seeds, "separate.bin"), "model/model.bin")
            z.writestr("model/config.json", json.dumps({"add_source_eos": True, "decoder_start_token": "</s>",
                                                        "eos_token": "</s>", "unk_token": "<unk>"}))
            z.writestr("model/source_vocabulary.json", json.dumps(src))
            z.writestr("model/target_vocabulary.txt", "\n".join(tgt) + "\n")
        models_dir = os.path.join(self.tmp, "m-separate")
        self.models("m-separate", "install", pkg, models_dir=models_dir)
        d = os.path.join(models_dir, "argos-xx-yy")
        with open(os.path.join(d, "tokenizer_config.json")) as f:
            self.assertTrue(json.load(f)["separate_vocabs"])
        with open(os.path.join(d, "target_vocab.json")) as f:
            self.assertEqual(json.load(f), {t: i for i, t in enumerate(tgt)})
        r = subprocess.run([MT_TRANSLATE, "--model", d, "--input", "ids", "--output", "ids", "--max-length", "8"],
                           input="3 4 5\n", capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(all(0 <= int(t) < len(tgt) for t in r.stdout.split()), r.stdout)

    def test_package_without_config(self):
        """A package from CTranslate2 before 3.0: no config.json (its defaults are written: no
        source eos, start token <s>), shared_vocabulary.txt, a pre-norm model
        (tests/fuzz/ct2/pre_norm.bin): installed, and greedy ids equal CTranslate2's."""
        seeds = os.path.join(SOURCE_DIR, "tests", "fuzz", "ct2")
        tokens = ["</s>", "<unk>", "<s>"] + ["t%d" % i for i in range(7)]
        pkg = os.path.join(self.tmp, "old.argosmodel")
        with zipfile.ZipFile(pkg, "w") as z:
            z.writestr("translate-xx_yy-1_0/metadata.json", json.dumps(dict(META, from_code="xx", to_code="yy")))
            z.write(os.path.join(EN_DE, "source.spm"), "translate-xx_yy-1_0/sentencepiece.model")
            z.write(os.path.join(seeds, "pre_norm.bin"), "translate-xx_yy-1_0/model/model.bin")
            z.writestr("translate-xx_yy-1_0/model/shared_vocabulary.txt", "\n".join(tokens) + "\n")
        models_dir = os.path.join(self.tmp, "m-old")
        self.models("m-old", "install", pkg, models_dir=models_dir)
        d = os.path.join(models_dir, "argos-xx-yy")
        with open(os.path.join(d, "config.json")) as f:
            cfg = json.load(f)
        self.assertEqual((cfg["add_source_eos"], cfg["decoder_start_token"]), (False, "<s>"))
        sources = ["3 4 5", "9 8 7 6 5", "4", "5 5 6 7 8 9 3"]
        r = subprocess.run([MT_TRANSLATE, "--model", d, "--input", "ids", "--output", "ids", "--max-length", "12",
                            "--beam", "1"], input="\n".join(sources) + "\n", capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        import test_ct2
        with open(os.path.join(d, "shared_vocabulary.json"), "w") as f:  # ct2_ids reads the .json form
            json.dump(tokens, f)
        ref = test_ct2.ct2_ids("/usr/bin/python3", d, [[int(t) for t in s.split()] for s in sources], 1, 11)
        self.assertEqual(r.stdout.splitlines(), ref)

    def test_broken_packages(self):
        self.broken("no-meta", "no metadata.json", meta=None)
        self.broken("no-to", "from_code and to_code", meta={"from_code": "en"})
        self.broken("no-model", "no model/model.bin", model_files=("config.json", "shared_vocabulary.json"))
        self.broken("no-vocab", "no shared_vocabulary", model_files=("model.bin", "config.json"))
        not_zip = os.path.join(self.tmp, "plain.argosmodel")
        with open(not_zip, "w") as f:
            f.write("not a zip\n")
        r = self.models("not-zip", "install", not_zip, ok=False)
        self.assertIn("not a readable .argosmodel", r.stderr)

    def test_entries_cannot_climb_out(self):
        pkg = os.path.join(self.tmp, "climb.argosmodel")
        make_package(pkg, self.ct2, extra=[(ROOT + "model/../../../climbed.txt", "x"),
                                           (ROOT + "model/sub/inner.txt", "x")])
        models_dir = os.path.join(self.tmp, "m-climb")
        self.models("climb", "install", pkg, models_dir=models_dir)
        for root, _, files in os.walk(self.tmp):
            self.assertNotIn("climbed.txt", files, root)
            self.assertNotIn("inner.txt", files, root)

    def test_server_models_dir(self):
        """mt-server --models-dir serves every model installed there: the package and a copy
        of models/de-en; a directory without models is refused."""
        import test_scripts as ts
        models_dir = os.path.join(self.tmp, "m-serve")
        self.models("m-serve", "install", self.pkg, models_dir=models_dir)
        shutil.copytree(os.path.join(SOURCE_DIR, "models", "de-en"), os.path.join(models_dir, "de-en"))
        os.makedirs(os.path.join(models_dir, "not-a-model"))
        port = ts.free_port()
        log = os.path.join(self.tmp, "serve.log")
        server = os.path.join(BUILD_DIR, "server", "mt-server")
        with open(log, "wb") as out:
            proc = subprocess.Popen([server, "--models-dir", models_dir, "--host", "127.0.0.1", "--port", str(port),
                                     "--workers", "1", "--beam-size", "4", "--compute-type", "float32"],
                                    stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            url = "http://127.0.0.1:%d" % port
            ts.wait_health(url, proc, timeout=180, log=log)
            status, _, body = ts.http_request("GET", url + "/languages")
            targets = {x["code"]: x["targets"] for x in json.loads(body)}
            self.assertEqual((targets["en"], targets["de"]), (["de"], ["en"]))
            status, _, body = ts.http_request("POST", url + "/translate", {"q": LINES, "source": "en", "target": "de"})
            self.assertEqual(status, 200, body)
            self.assertEqual(json.loads(body)["translatedText"], self.ref_text)
        finally:
            ts.stop(proc)
        with open(log, encoding="utf-8", errors="replace") as f:
            text = f.read()
        self.assertIn("argos-en-de", text)
        self.assertIn(os.path.join(models_dir, "de-en"), text)
        empty = os.path.join(self.tmp, "m-empty")
        os.makedirs(empty)
        r = subprocess.run([server, "--models-dir", empty, "--port", "0"], capture_output=True, text=True, timeout=60)
        self.assertIn(r.returncode, (1, 2), r.stderr)
        self.assertIn("no model there", r.stderr)

    def test_docker_entrypoint_installs_and_serves(self):
        """docker/entrypoint.sh: MT_INSTALL's packages installed into MT_MODELS_DIR, then the
        command runs with them appended to MT_MODELS (the image's mt-server reads it)."""
        models_dir = os.path.join(self.tmp, "m-docker")
        env = dict(os.environ, MT_INSTALL=" %s ," % self.pkg, MT_MODELS_DIR=models_dir,
                   PATH=os.path.dirname(MT_MODELS) + os.pathsep + os.environ["PATH"])
        env.pop("MT_MODELS", None)
        r = subprocess.run(["sh", os.path.join(SOURCE_DIR, "docker", "entrypoint.sh"), "sh", "-c",
                            'printf "%s" "$MT_MODELS"'], env=env, capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "/models/en-de,/models/de-en," + os.path.join(models_dir, "argos-en-de"))
        self.check_installed(os.path.join(models_dir, "argos-en-de"))
        env["MT_INSTALL"] = os.path.join(self.tmp, "missing.argosmodel")
        r = subprocess.run(["sh", os.path.join(SOURCE_DIR, "docker", "entrypoint.sh"), "true"], env=env,
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 1)
        self.assertIn("failed; not starting", r.stderr)


def ct2_translate(model_dir, spm, lines, beam):
    """CTranslate2's output ids for lines, as argos-translate runs it: the pieces of spm in,
    the output tokens mapped to their first id in the model's shared vocabulary."""
    prog = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import ctranslate2, sentencepiece as spm
a = json.load(sys.stdin)
sp = spm.SentencePieceProcessor(model_file=a["spm"])
index = {}
for i, t in enumerate(json.load(open(a["model"] + "/shared_vocabulary.json"))):
    index.setdefault(t, i)
tr = ctranslate2.Translator(a["model"], device="cpu", compute_type="float32", intra_threads=1)
res = tr.translate_batch([sp.encode(l, out_type=str) for l in a["lines"]], beam_size=a["beam"],
                         max_decoding_length=255)
for r in res:
    print(" ".join(str(index[t]) for t in r.hypotheses[0]))
"""
    r = subprocess.run(["/usr/bin/python3", "-c", prog, os.path.join(PEER, "python")], capture_output=True,
                       text=True, timeout=600, input=json.dumps({"model": model_dir, "spm": spm, "lines": lines,
                                                                 "beam": beam}))
    if r.returncode:
        raise AssertionError("CTranslate2: " + r.stderr)
    return r.stdout.splitlines()


def snapshot(root):
    """Every path under root with its type, size and modification time."""
    out = {}
    for d, dirs, files in os.walk(root):
        for name in dirs + files:
            st = os.lstat(os.path.join(d, name))
            out[os.path.relpath(os.path.join(d, name), root)] = (stat.S_IFMT(st.st_mode), st.st_size, st.st_mtime_ns)
    return out


class TestInPlace(unittest.TestCase):
    """Packages loaded in place without the peer: the tiny CTranslate2 model of
    tests/fuzz/ct2 with a SentencePiece model of tests/fixtures."""
    SPM = os.path.join(SOURCE_DIR, "tests", "fixtures", "opus-mt-tc-big-en-pt", "source.spm")
    IDS = "3 4 5\n9 8 7 6 5\n4\n"

    @classmethod
    def setUpClass(cls):
        if not os.path.exists(MT_TRANSLATE):
            raise unittest.SkipTest(MT_TRANSLATE + " is not built")
        cls.tmp = tempfile.mkdtemp(prefix="test-argos-in-place-")
        cls.ct2 = mtfixtures.tiny_ct2_dir(os.path.join(cls.tmp, "ct2"))

    @classmethod
    def tearDownClass(cls):
        for d, dirs, _ in os.walk(cls.tmp):  # the read-only copy, writable again to be removed
            for name in dirs:
                os.chmod(os.path.join(d, name), 0o755)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def package(self, name, **kw):
        return mtfixtures.argos_package_dir(os.path.join(self.tmp, name), self.ct2, self.SPM, **kw)

    def run_ids(self, model):
        return subprocess.run([MT_TRANSLATE, "--model", model, "--input", "ids", "--output", "ids", "--max-length",
                               "12"], input=self.IDS, capture_output=True, text=True, timeout=120)

    def test_read_only_package_loads_and_nothing_is_written(self):
        writable = self.package("rw")
        ro = self.package("ro")
        for d, dirs, files in os.walk(ro):
            for name in files:
                os.chmod(os.path.join(d, name), 0o444)
        for d, dirs, files in list(os.walk(ro, topdown=False)):
            os.chmod(d, 0o555)
        before = snapshot(ro)
        r = self.run_ids(ro)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(r.stdout.splitlines()), 3)
        self.assertEqual(r.stdout, self.run_ids(writable).stdout)
        text = subprocess.run([MT_TRANSLATE, "--model", ro, "--max-length", "12"], input="A dog runs.\n",
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(text.returncode, 0, text.stderr)
        self.assertEqual(snapshot(ro), before)

    def test_server_models_dir_installed_and_in_place(self):
        """mt-server --models-dir over a copy of models/de-en and an unpacked package (xx -> yy):
        /languages lists both, and the package translates as mt-translate does with it."""
        models_dir = os.path.join(self.tmp, "served")
        os.makedirs(models_dir)
        shutil.copytree(os.path.join(SOURCE_DIR, "models", "de-en"), os.path.join(models_dir, "de-en"))
        pkg = mtfixtures.argos_package_dir(os.path.join(models_dir, "translate-xx_yy-1_0"), self.ct2, self.SPM)
        server = mtfixtures.Server(["--models-dir", models_dir, "--workers", "1", "--max-length", "12"],
                                   name="argos-in-place")
        try:
            status, _, body = server.request("GET", "/languages")
            self.assertEqual(status, 200, body)
            targets = {x["code"]: x["targets"] for x in json.loads(body)}
            self.assertEqual((targets["de"], targets["xx"]), (["en"], ["yy"]))
            status, _, body = server.post_json({"q": "A dog runs.", "source": "xx", "target": "yy"})
            self.assertEqual(status, 200, body)
            want = subprocess.run([MT_TRANSLATE, "--model", pkg, "--max-length", "12"], input="A dog runs.\n",
                                  capture_output=True, text=True, timeout=120).stdout.rstrip("\n")
            self.assertEqual(body["translatedText"], want)
            log = server.log()
        finally:
            server.stop()
        self.assertRegex(log, r"event=model_loaded model=\S*translate-xx_yy-1_0\S* dir=\S+ format=argos-package ")

    def test_install_names_the_package_not_its_temporary_copy(self):
        """mt-models install reads the package's files as the engine does (ct2_layout.c) from its
        temporary copy; a message names the package the user gave."""
        pkg = self.package("install-no-spm")
        os.remove(os.path.join(pkg, "sentencepiece.model"))
        env = dict(os.environ, MT_MODELS_DIR=os.path.join(self.tmp, "m-install-no-spm"))
        r = subprocess.run([MT_MODELS, "install", pkg], capture_output=True, text=True, timeout=120, env=env)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn(pkg + ": sentencepiece.model: missing: the package has no SentencePiece model", r.stderr)
        self.assertNotIn(".install-argos", r.stderr)

    def broken(self, name, mutate, needle):
        pkg = self.package(name)
        mutate(pkg)
        r = self.run_ids(pkg)
        self.assertEqual(r.returncode, 1, "exit %d (a signal is negative): %s" % (r.returncode, r.stderr))
        self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
        self.assertIn(needle.replace("PKG", pkg), r.stderr)
        self.assertNotIn("Sanitizer", r.stderr)

    def test_broken_packages_name_the_file(self):
        def write(rel, data):
            def mutate(pkg):
                with open(os.path.join(pkg, rel), "wb") as f:
                    f.write(data)
            return mutate

        def remove(rel):
            return lambda pkg: os.remove(os.path.join(pkg, rel))
        for name, mutate, needle in [
            ("no-spm", remove("sentencepiece.model"), "PKG/sentencepiece.model: missing: the package has no "
                                                      "SentencePiece model"),
            ("bad-spm", write("sentencepiece.model", b"\x0a\x05junk!" * 40), "PKG/sentencepiece.model: not a valid "
                                                                             "SentencePiece model"),
            ("empty-spm", write("sentencepiece.model", b""), "PKG/sentencepiece.model: not a valid SentencePiece"),
            ("no-vocab", remove("model/shared_vocabulary.json"), "PKG/model has no shared_vocabulary.json (or .txt)"),
            ("bad-vocab", write("model/shared_vocabulary.json", b'["</s>", "<unk>"'),
             "PKG/model/shared_vocabulary.json: invalid JSON"),
            ("short-vocab", write("model/shared_vocabulary.json", b'["</s>", "<unk>", "<s>"]'),
             "the vocabularies 3 (shared_vocabulary.json)"),
            ("bad-meta", write("metadata.json", b'{"from_code": "en", "to_code": "../x"}'),
             "PKG/metadata.json: from_code and to_code must be language codes"),
            ("no-model", remove("model/model.bin"), "PKG: the package has no model/model.bin"),
        ]:
            with self.subTest(name=name):
                self.broken(name, mutate, needle)


if __name__ == "__main__":
    sys.exit(testmain.run(__name__))
