#!/usr/bin/python3
"""mt-models against a local stand-in hub (tests/fake_hub.py), loopback only.

The repositories are written by tests/make_hub_models.py from tools/make_test_model.py's
models, in both layouts (model.safetensors; pytorch_model.bin written by torch.save).
Each test installs into a fresh models directory and checks what a user would see:
  * search lists the OPUS-MT repositories with their pairs;
  * an install gives the hub's files byte for byte (model.safetensors) or a converted
    model.safetensors (pytorch_model.bin: float32, float16, and torch's legacy pre-1.6
    format) that translates
    token-identically to the PyTorch reference (tools/reference.py) on the original
    weights, greedy and beam 4; --compute-type int8 stores what tools/quantize_model.py
    stores;
  * a wrong sha256, 401 (no or a wrong HF_TOKEN), 404, 500, a T5 config, a full disk
    (RLIMIT_FSIZE), an interrupt (SIGINT mid-file) and a pickle that calls os.system each
    fail with a message naming the cause and leave the models directory as it was; the
    malicious pickle runs nothing (its marker file is never created);
  * a connection cut mid-file is resumed with Range and completes;
  * HF_HUB_OFFLINE=1 makes no request; HF_TOKEN is never printed; list and remove.

Skips (77) without python3-torch (the test data's .bin files and the reference need it).
Environment: MT_BUILD_DIR, MT_SOURCE_DIR (set by meson). Last line: "N passed, M failed".
"""
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

SOURCE_DIR = os.environ.get("MT_SOURCE_DIR",
                            os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD_DIR = os.environ.get("MT_BUILD_DIR", os.path.join(SOURCE_DIR, "build"))
TOOLS = os.path.join(SOURCE_DIR, "tools")
MT_MODELS = os.path.join(BUILD_DIR, "cli", "mt-models")
MT_TRANSLATE = os.path.join(BUILD_DIR, "cli", "mt-translate")
PY = "/usr/bin/python3"

try:
    import torch  # noqa: F401
except ImportError:
    print("SKIP: python3-torch is not installed (the stand-in hub's .bin files and the "
          "PyTorch reference need it)")
    sys.exit(77)
for program in (MT_MODELS, MT_TRANSLATE):
    if not os.access(program, os.X_OK):
        print(f"SKIP: {program} is not built")
        sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, TOOLS)
import fake_hub  # noqa: E402
from mtref import safetensors_file  # noqa: E402
import safetensors_io  # noqa: E402  (reads I8 too)

WORK = tempfile.mkdtemp(prefix="mt-models-test-")
MARKER = os.path.join(WORK, "pwned")
TOKEN = "hf_secretTOKEN1234567890"
HUB = None
REPO_ROOT = os.path.join(WORK, "data", "hub")
ORIGINALS = os.path.join(WORK, "data", "originals")


def setUpModule():
    global HUB
    subprocess.run([PY, os.path.join(SOURCE_DIR, "tests", "make_hub_models.py"),
                    os.path.join(WORK, "data"), MARKER], check=True)
    HUB = fake_hub.Hub(REPO_ROOT).start()


def tearDownModule():
    if HUB:
        HUB.release.set()
        HUB.stop()
    shutil.rmtree(WORK, ignore_errors=True)


def wait_for(condition, what, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


class HubTest(unittest.TestCase):
    def setUp(self):
        HUB.behaviour.clear()
        HUB.cut_done.clear()
        HUB.requests.clear()
        HUB.release.clear()
        self.models = tempfile.mkdtemp(dir=WORK, prefix="models-")

    def tearDown(self):
        HUB.release.set()

    def env(self, **extra):
        env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
        env.update(HF_ENDPOINT=HUB.url, MT_MODELS_DIR=self.models)
        env.update(extra)
        return env

    def mt_models(self, *args, preexec_fn=None, **extra):
        p = subprocess.run([MT_MODELS, *args], env=self.env(**extra), capture_output=True, text=True,
                           timeout=300, preexec_fn=preexec_fn)
        # In the sanitizer build a report can end a run whose exit status a test expects.
        for report in ("Sanitizer", "runtime error:"):
            self.assertNotIn(report, p.stderr)
        return p

    def install(self, repo, *args, **extra):
        return self.mt_models("install", repo, *args, **extra)

    def assert_installed(self, p, name):
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(sorted(os.listdir(self.models)), [name], "only the model, no leftovers")
        return os.path.join(self.models, name)

    def assert_failed(self, p, *needles):
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        for n in needles:
            self.assertIn(n, p.stderr)
        self.assertEqual(os.listdir(self.models), [], "a failed install leaves nothing")

    def resolved(self, name):
        return [r for r in HUB.requests if "/resolve/" in r[1] and r[1].endswith("/" + name)]


def engine_ids(model_dir, lines, *args):
    p = subprocess.run([MT_TRANSLATE, "--model", model_dir, "--input", "ids", "--output", "ids",
                        "--max-length", "40", *args], input="".join(x + "\n" for x in lines),
                       capture_output=True, text=True, timeout=300)
    if p.returncode:
        raise AssertionError(f"mt-translate failed: {p.stderr}")
    return p.stdout.splitlines()


def reference_ids(model_dir, lines, *args):
    p = subprocess.run([PY, os.path.join(TOOLS, "reference.py"), "--model", model_dir, "--input", "ids",
                        "--output", "ids", "--max-length", "40", *args],
                       input="".join(x + "\n" for x in lines), capture_output=True, text=True, timeout=600)
    if p.returncode:
        raise AssertionError(f"reference.py failed: {p.stderr}")
    return p.stdout.splitlines()


def id_lines(model_dir, count, seed):
    """Random source id lines inside the vocabulary, special ids left out."""
    import json
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    specials = {cfg.get("eos_token_id"), cfg.get("pad_token_id"), cfg.get("decoder_start_token_id"), 1}
    rng = random.Random(seed)
    ids = [i for i in range(2, cfg["vocab_size"]) if i not in specials]
    return [" ".join(str(rng.choice(ids)) for _ in range(rng.randint(3, 14))) for _ in range(count)]


class Search(HubTest):
    def test_search_lists_pairs(self):
        p = self.mt_models("search")
        self.assertEqual(p.returncode, 0, p.stderr)
        for repo, pair in (("opus-mt-en-de", "en -> de"), ("opus-mt-de-en", "de -> en"),
                           ("opus-mt-en-es", "en -> es")):
            self.assertRegex(p.stdout, rf"Helsinki-NLP/{repo}\s+{pair}")
        self.assertNotIn("google/", p.stdout)
        p = self.mt_models("search", "en-de")
        self.assertEqual(p.stdout.count("Helsinki-NLP/"), 1, p.stdout)
        query = HUB.requests[-1][1]
        self.assertIn("author=Helsinki-NLP", query)
        self.assertIn("search=opus-mt-en-de", query)


class Install(HubTest):
    def test_safetensors_byte_identical(self):
        p = self.install("Helsinki-NLP/opus-mt-en-de")
        d = self.assert_installed(p, "opus-mt-en-de")
        src = os.path.join(REPO_ROOT, "Helsinki-NLP", "opus-mt-en-de")
        for name in os.listdir(src):
            with open(os.path.join(src, name), "rb") as a, open(os.path.join(d, name), "rb") as b:
                self.assertEqual(a.read(), b.read(), name)
        self.assertNotIn("\r", p.stderr, "no progress bar when stderr is not a terminal")
        # The weights come through the CDN redirect, pinned to the listed commit.
        self.assertTrue(any("/cdn/" in r[1] for r in HUB.requests))
        self.assertTrue(self.resolved("model.safetensors")[0][1].startswith(
            f"/Helsinki-NLP/opus-mt-en-de/resolve/{HUB.commit('Helsinki-NLP/opus-mt-en-de')}/"))
        lst = self.mt_models("list")
        self.assertRegex(lst.stdout, r"opus-mt-en-de\s+en -> de\s+[\d.]+ MB\s+float32\s+Helsinki-NLP/opus-mt-en-de")
        again = self.install("Helsinki-NLP/opus-mt-en-de")
        self.assertEqual(again.returncode, 0)
        self.assertIn("already installed", again.stderr)

    def test_progress_bar_on_a_terminal(self):
        import pty
        pid, fd = pty.fork()
        if pid == 0:
            os.execve(MT_MODELS, [MT_MODELS, "install", "Helsinki-NLP/opus-mt-en-de"], self.env())
        out = b""
        while True:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        _, status = os.waitpid(pid, 0)
        os.close(fd)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0, out)
        text = out.decode("utf-8", "replace")
        self.assertIn("\r", text)
        self.assertRegex(text, r"model\.safetensors\s+\[#+\] 100\.0%")

    def check_bin(self, repo, original, name):
        p = self.install(repo)
        d = self.assert_installed(p, name)
        self.assertFalse(os.path.exists(os.path.join(d, "pytorch_model.bin")))
        want = safetensors_file.read(os.path.join(original, "model.safetensors"))
        have = safetensors_file.read(os.path.join(d, "model.safetensors"))
        for k, v in want.items():
            self.assertIn(k, have)
            self.assertEqual(v.dtype, have[k].dtype, k)
            self.assertTrue((v == have[k]).all(), k)
        lines = id_lines(original, 24, 5)
        for beam in ("1", "4"):
            self.assertEqual(engine_ids(d, lines, "--beam", beam), reference_ids(original, lines, "--beam", beam),
                             f"installed {repo} vs the PyTorch reference on its original weights, beam {beam}")
        return d

    def test_pytorch_bin_float32_matches_reference(self):
        self.check_bin("Helsinki-NLP/opus-mt-de-en", os.path.join(ORIGINALS, "de-en"), "opus-mt-de-en")

    def test_pytorch_bin_float16_separate_vocabs(self):
        d = self.check_bin("Helsinki-NLP/opus-mt-en-es", os.path.join(ORIGINALS, "en-es"), "opus-mt-en-es")
        self.assertTrue(os.path.exists(os.path.join(d, "target_vocab.json")))
        self.assertRegex(self.mt_models("list").stdout, r"opus-mt-en-es\s.*float16")

    def test_pytorch_bin_legacy_format(self):
        self.check_bin("Helsinki-NLP/opus-mt-fr-en", os.path.join(ORIGINALS, "fr-en"), "opus-mt-fr-en")

    def test_int8_as_quantize_model(self):
        twin = os.path.join(WORK, "int8-twin")
        shutil.rmtree(twin, ignore_errors=True)
        subprocess.run([PY, os.path.join(TOOLS, "quantize_model.py"), os.path.join(ORIGINALS, "de-en"), twin],
                       check=True, capture_output=True)
        p = self.install("Helsinki-NLP/opus-mt-de-en", "--compute-type", "int8")
        d = self.assert_installed(p, "opus-mt-de-en")
        want = safetensors_io.read(os.path.join(twin, "model.safetensors"))
        have = safetensors_io.read(os.path.join(d, "model.safetensors"))
        self.assertEqual(sorted(want), sorted(have))
        for k, v in want.items():
            self.assertEqual(v.dtype, have[k].dtype, k)
            self.assertTrue((v == have[k]).all(), k)
        lines = id_lines(twin, 16, 6)
        self.assertEqual(engine_ids(d, lines, "--beam", "4"), engine_ids(twin, lines, "--beam", "4"))
        self.assertRegex(self.mt_models("list").stdout, r"opus-mt-de-en\s.*int8")

    def test_custom_dir_and_revision(self):
        repo = "Helsinki-NLP/opus-mt-en-de"
        dest = os.path.join(self.models, "sub", "mine")
        p = self.install(repo, "--revision", HUB.commit(repo), "--dir", dest)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(os.path.exists(os.path.join(dest, "model.safetensors")))
        os.mkdir(os.path.join(self.models, "stray"))
        p = self.install(repo, "--dir", os.path.join(self.models, "stray"))
        self.assertEqual(p.returncode, 1)
        self.assertIn("not a model directory", p.stderr)
        p = self.install(repo, "--revision", "no-such-branch")
        self.assertEqual(p.returncode, 1)
        self.assertIn("404: revision not found", p.stderr)


class Failures(HubTest):
    def test_wrong_sha256(self):
        HUB.behaviour["Helsinki-NLP/opus-mt-en-de"] = {"wrong_sha256": ["model.safetensors"]}
        p = self.install("Helsinki-NLP/opus-mt-en-de")
        self.assert_failed(p, "model.safetensors: sha256", "corrupt")

    def test_cut_connection_is_resumed(self):
        cut = 300000
        HUB.behaviour["Helsinki-NLP/opus-mt-en-de"] = {"cut": {"model.safetensors": cut}}
        p = self.install("Helsinki-NLP/opus-mt-en-de")
        d = self.assert_installed(p, "opus-mt-en-de")
        with open(os.path.join(REPO_ROOT, "Helsinki-NLP", "opus-mt-en-de", "model.safetensors"), "rb") as a, \
                open(os.path.join(d, "model.safetensors"), "rb") as b:
            self.assertEqual(a.read(), b.read())
        ranges = [r[2].get("Range") for r in HUB.requests if "/cdn/" in r[1]]
        self.assertIn(f"bytes={cut}-", ranges, "the second transfer asks for the rest only")
        self.assertIn("resuming", p.stderr)

    def test_401_and_token(self):
        repo = "Helsinki-NLP/opus-mt-en-de"
        HUB.behaviour[repo] = {"token": TOKEN}
        self.assert_failed(self.install(repo), "401", "HF_TOKEN")
        p = self.install(repo, HF_TOKEN="hf_wrong")
        self.assert_failed(p, "401", "token given was refused")
        self.assertNotIn("hf_wrong", p.stderr + p.stdout)
        HUB.requests.clear()
        p = self.install(repo, HF_TOKEN=TOKEN)
        self.assert_installed(p, "opus-mt-en-de")
        self.assertNotIn(TOKEN, p.stderr + p.stdout, "the token is never printed")
        self.assertTrue(all(r[2].get("Authorization") == f"Bearer {TOKEN}"
                            for r in HUB.requests if "/api/" in r[1] or "/resolve/" in r[1]))
        cdn = [r for r in HUB.requests if "/cdn/" in r[1]]
        self.assertTrue(cdn)
        self.assertFalse(any("Authorization" in r[2] for r in cdn), "the token is not sent to the CDN host")

    def test_404(self):
        self.assert_failed(self.install("Helsinki-NLP/opus-mt-xx-yy", HF_TOKEN="hf_x"), "404: repository not found")
        self.assert_failed(self.install("Helsinki-NLP/opus-mt-xx-yy"), "401: repository not found")
        HUB.behaviour["Helsinki-NLP/opus-mt-en-de"] = {"file_status": {"source.spm": 404}}
        self.assert_failed(self.install("Helsinki-NLP/opus-mt-en-de"), "source.spm: 404")

    def test_500_retried_then_reported(self):
        HUB.behaviour["Helsinki-NLP/opus-mt-en-de"] = {"status": 500}
        p = self.install("Helsinki-NLP/opus-mt-en-de")
        self.assert_failed(p, "500", "server error")
        listings = [r for r in HUB.requests if "/revision/" in r[1]]
        self.assertGreater(len(listings), 1, "a 5xx is retried")
        HUB.behaviour["Helsinki-NLP/opus-mt-en-de"] = {"file_status": {"model.safetensors": 503}}
        self.assert_failed(self.install("Helsinki-NLP/opus-mt-en-de"), "model.safetensors", "503")

    def test_non_marian_refused_before_weights(self):
        p = self.install("google/t5-small-like")
        self.assert_failed(p, "'t5'", "T5ForConditionalGeneration", "not MarianMT")
        self.assertEqual(self.resolved("model.safetensors"), [], "no weights were downloaded")

    def test_disk_full(self):
        def limit():
            resource.setrlimit(resource.RLIMIT_FSIZE, (400000, 400000))
        p = self.install("Helsinki-NLP/opus-mt-en-de", preexec_fn=limit)
        self.assert_failed(p, "model.safetensors", "disk full")
        # The same during the conversion's write.
        p = self.install("Helsinki-NLP/opus-mt-de-en", preexec_fn=lambda: resource.setrlimit(
            resource.RLIMIT_FSIZE, (960000, 960000)))
        self.assert_failed(p, "disk full")

    def test_malicious_pickle_runs_nothing(self):
        p = self.install("evil/opus-mt-en-xx")
        self.assert_failed(p, "posix.system", "refused")
        self.assertFalse(os.path.exists(MARKER), "the pickle's os.system ran")
        # torch itself refuses the same file with weights_only (the file is what we think).
        bin_path = os.path.join(REPO_ROOT, "evil", "opus-mt-en-xx", "pytorch_model.bin")
        with self.assertRaises(Exception):
            torch.load(bin_path, weights_only=True)
        self.assertFalse(os.path.exists(MARKER))

    def test_interrupt_leaves_nothing(self):
        HUB.behaviour["Helsinki-NLP/opus-mt-en-de"] = {"stall": {"model.safetensors": 100000}}
        proc = subprocess.Popen([MT_MODELS, "install", "Helsinki-NLP/opus-mt-en-de"], env=self.env(),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

        def partial():
            for e in os.listdir(self.models):
                f = os.path.join(self.models, e, "model.safetensors")
                if e.startswith(".install-") and os.path.exists(f) and os.path.getsize(f) >= 100000:
                    return True
            return False
        try:
            wait_for(partial, "the partial download")
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=60)
        finally:
            HUB.release.set()
            if proc.poll() is None:
                proc.kill()
        self.assertEqual(proc.returncode, 130, err)
        self.assertIn("interrupted", err)
        self.assertEqual(os.listdir(self.models), [])

    def test_two_installs_at_once(self):
        HUB.behaviour["Helsinki-NLP/opus-mt-en-de"] = {"stall": {"model.safetensors": 1000}}
        procs = [subprocess.Popen([MT_MODELS, "install", "Helsinki-NLP/opus-mt-en-de"], env=self.env(),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
        try:
            wait_for(lambda: len(self.resolved("model.safetensors")) == 2, "both downloads to start")
        finally:
            HUB.release.set()
        results = [p.communicate(timeout=120) for p in procs]
        self.assertEqual([p.returncode for p in procs], [0, 0], results)
        self.assertEqual(sum("meanwhile by another process" in err for _, err in results), 1, results)
        self.assertEqual(os.listdir(self.models), ["opus-mt-en-de"])

    def test_killed_install_is_swept(self):
        """A SIGKILLed install cannot clean up: its temporary directory (never listed) goes at
        the next install; one of a live process stays."""
        dead = subprocess.Popen(["true"])
        dead.wait()
        stale = os.path.join(self.models, f".install-opus-mt-en-de.{dead.pid}")
        live = os.path.join(self.models, f".install-opus-mt-de-en.{os.getpid()}")
        for d in (stale, live):
            os.mkdir(d)
            with open(os.path.join(d, "model.safetensors"), "wb") as f:
                f.write(b"partial")
        self.assertIn("no models installed", self.mt_models("list").stdout)
        self.assertEqual(self.install("Helsinki-NLP/opus-mt-en-de").returncode, 0)
        self.assertEqual(sorted(os.listdir(self.models)), sorted([os.path.basename(live), "opus-mt-en-de"]))

    def test_dns_failure(self):
        p = self.install("Helsinki-NLP/opus-mt-en-de", HF_ENDPOINT="http://no-such-host.invalid")
        self.assert_failed(p, "cannot resolve", "DNS")


class Convert(HubTest):
    def test_bfloat16_and_strided_views(self):
        """bfloat16, a column-major matrix and a view at an offset into a larger storage:
        each tensor's elements come out row-major, as torch reads them."""
        import make_hub_models
        original = os.path.join(ORIGINALS, "de-en")
        d = os.path.join(self.models, "conv")
        shutil.copytree(original, d, ignore=shutil.ignore_patterns("model.safetensors"))
        state = make_hub_models.hf_state(original, torch.bfloat16)
        k = "model.encoder.layers.0.fc1.weight"
        state[k] = state[k].t().contiguous().t()
        self.assertFalse(state[k].is_contiguous())
        b = "model.encoder.layers.0.fc1.bias"
        state[b] = torch.cat([torch.ones(3, dtype=torch.bfloat16), state[b]])[3:]
        torch.save(state, os.path.join(d, "pytorch_model.bin"))
        p = self.mt_models("convert", d)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertFalse(os.path.exists(os.path.join(d, "pytorch_model.bin")))
        have = safetensors_io.read(os.path.join(d, "model.safetensors"))
        for name in ("model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight", "lm_head.weight"):
            self.assertNotIn(name, have, "tied copies are written once")
        for name, t in state.items():
            if name in have:
                self.assertTrue((t.float().numpy() == have[name]).all(), name)
        self.assertEqual(len(have), 88)


    def test_hostile_pickles_refused_by_name(self):
        """Other ways a pickle runs code: each is refused naming the global or opcode, and
        none runs (its command would create the marker)."""
        import pickle
        import zipfile
        marker = os.path.join(WORK, "pwned-convert")
        cmd = f"touch {marker}"

        class Reduce:
            def __init__(self, fn, *args):
                self.fn, self.args = fn, args

            def __reduce__(self):
                return (self.fn, self.args)
        import builtins
        import subprocess as sp
        cases = [
            # protocol 2 writes subprocess.Popen as commands.Popen (Python 2's name)
            (pickle.dumps({"w": Reduce(sp.Popen, ["sh", "-c", cmd])}, protocol=2), ".Popen'"),
            (pickle.dumps({"w": Reduce(builtins.exec, f"import os; os.system({cmd!r})")}, protocol=2),
             "__builtin__.exec"),
            (pickle.dumps({"w": Reduce(os.system, cmd)}, protocol=4), "posix.system"),  # STACK_GLOBAL
            (f"(S'{cmd}'\nios\nsystem\n.".encode(), "opcode 'S'"),  # protocol 0: INST
            (b"\x80\x02c__builtin__\neval\nq\x00.", "__builtin__.eval"),
        ]
        for number, (pkl, needle) in enumerate(cases):
            d = os.path.join(self.models, f"hostile{number}")
            os.mkdir(d)
            shutil.copy(os.path.join(ORIGINALS, "de-en", "config.json"), d)
            with zipfile.ZipFile(os.path.join(d, "pytorch_model.bin"), "w", zipfile.ZIP_STORED) as z:
                z.writestr("archive/data.pkl", pkl)
                z.writestr("archive/version", "3\n")
            p = self.mt_models("convert", d)
            self.assertEqual(p.returncode, 1, needle)
            self.assertIn(needle, p.stderr)
            self.assertFalse(os.path.exists(os.path.join(d, "model.safetensors")))
        self.assertFalse(os.path.exists(marker))


class OfflineListRemove(HubTest):
    def test_offline(self):
        p = self.install("Helsinki-NLP/opus-mt-en-de", HF_HUB_OFFLINE="1")
        self.assert_failed(p, "HF_HUB_OFFLINE", "not installed")
        self.assertEqual(HUB.requests, [], "offline: no request at all")
        self.assert_installed(self.install("Helsinki-NLP/opus-mt-en-de"), "opus-mt-en-de")
        HUB.requests.clear()
        p = self.install("Helsinki-NLP/opus-mt-en-de", HF_HUB_OFFLINE="1")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("already installed", p.stderr)
        self.assertIn("opus-mt-en-de", self.mt_models("list", HF_HUB_OFFLINE="1").stdout)
        p = self.mt_models("search", HF_HUB_OFFLINE="1")
        self.assertEqual(p.returncode, 1)
        self.assertIn("HF_HUB_OFFLINE", p.stderr)
        self.assertEqual(HUB.requests, [])

    def test_list_and_remove(self):
        self.assertIn("no models installed", self.mt_models("list").stdout)
        self.assert_installed(self.install("Helsinki-NLP/opus-mt-en-de"), "opus-mt-en-de")
        for bad in ("../x", "..", "nope", ".hidden"):
            p = self.mt_models("remove", bad)
            self.assertEqual(p.returncode, 1, bad)
        os.mkdir(os.path.join(self.models, "not-a-model"))
        p = self.mt_models("remove", "not-a-model")
        self.assertEqual(p.returncode, 1)
        self.assertIn("not a model directory", p.stderr)
        p = self.mt_models("remove", "opus-mt-en-de")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(os.listdir(self.models), ["not-a-model"])

    def test_argos_package_listed_in_place(self):
        """An unpacked argos-translate package in the models directory (tiny CTranslate2 model of
        tests/fuzz/ct2; mt-server and mt-translate --models-dir use it in place) is listed, in
        name order with the installed model: its pair from metadata.json, its size (model/
        included), marked as used in place; remove leaves it, saying why."""
        import mtfixtures
        self.assert_installed(self.install("Helsinki-NLP/opus-mt-en-de"), "opus-mt-en-de")
        spm = os.path.join(SOURCE_DIR, "models", "en-de", "source.spm")
        if not os.path.exists(spm):
            self.skipTest(f"{spm} is not there")
        ct2 = mtfixtures.tiny_ct2_dir(os.path.join(WORK, "argos-ct2-%d" % os.getpid()), spm=spm)
        pkg = mtfixtures.argos_package_dir(os.path.join(self.models, "argos-xx-yy"), ct2, spm)
        size = sum(os.path.getsize(os.path.join(root, f)) for root, _, files in os.walk(pkg) for f in files)
        p = self.mt_models("list")
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = p.stdout.splitlines()
        self.assertEqual([r.split()[0] for r in rows], ["NAME", "argos-xx-yy", "opus-mt-en-de"], p.stdout)
        self.assertEqual(rows[1].split(), ["argos-xx-yy", "xx", "->", "yy", "%.1f" % (size / 1e6), "MB", "ct2",
                                           "argos", "package,", "used", "in", "place"])
        self.assertIn("Helsinki-NLP/opus-mt-en-de", rows[2])
        p = self.mt_models("remove", "argos-xx-yy")
        self.assertEqual(p.returncode, 1)
        self.assertIn("is an argos-translate package used in place, not installed by mt-models; not removed",
                      p.stderr)
        self.assertTrue(os.path.exists(os.path.join(pkg, "model", "model.bin")))

    def test_default_models_dir(self):
        env = self.env(XDG_DATA_HOME=os.path.join(self.models, "xdg"))
        del env["MT_MODELS_DIR"]
        p = subprocess.run([MT_MODELS, "install", "Helsinki-NLP/opus-mt-en-de"], env=env, capture_output=True,
                           text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(os.path.isdir(os.path.join(self.models, "xdg", "mt", "models", "opus-mt-en-de")))


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    failed = len(result.failures) + len(result.errors)
    print(f"{result.testsRun - failed} passed, {failed} failed")
    sys.exit(1 if failed or not result.testsRun else 0)
