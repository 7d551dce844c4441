#!/usr/bin/python3
"""Decoding features of the C engine against the PyTorch reference (tools/mtref).

Positions: a small random model (tools/make_test_model.py) is probed by
tests/model-probe and `reference.py --probe` with config.json's
"positions_formula" set to "huggingface" (the default), to "marian" (Marian's
tensor2tensor timescales), and with a stored random embed_positions table that
must win over the formula. Encoder outputs and logits must agree within
PROBE_TOL, and the Marian run must differ from the Hugging Face run (the switch
has an effect).

Run by meson (suite 'reference') with MT_BUILD_DIR, MT_SOURCE_DIR and
MT_SHARED_DIR set; standalone, they default to ./build, this checkout and
../shared.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

SOURCE_DIR = os.environ.get("MT_SOURCE_DIR") or os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))
BUILD_DIR = os.environ.get("MT_BUILD_DIR") or os.path.join(SOURCE_DIR, "build")
SHARED_DIR = os.environ.get("MT_SHARED_DIR") or os.path.join(SOURCE_DIR, "..", "shared")
TOOLS_DIR = os.path.join(SOURCE_DIR, "tools")
sys.path.insert(0, TOOLS_DIR)

from mtref import safetensors_file  # noqa: E402

PROBE_TOL = 1e-4
RUN_TIMEOUT = 600


def probe_lines(cfg, rng):
    """Eight "SRC<TAB>PREFIX" lines of random ids, long enough for positions to matter."""
    usable = [i for i in range(cfg["vocab_size"]) if i not in (cfg["eos_token_id"], cfg["pad_token_id"])]
    lines = []
    for _ in range(8):
        src = [int(x) for x in rng.choice(usable, int(rng.integers(3, 40)))] + [cfg["eos_token_id"]]
        prefix = [cfg["decoder_start_token_id"]] + [int(x) for x in rng.choice(
            usable, int(rng.integers(1, 30)))]
        lines.append(" ".join(map(str, src)) + "\t" + " ".join(map(str, prefix)))
    return lines


class Positions(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="mt-positions-")
        cls.base = os.path.join(cls.tmp.name, "base")
        subprocess.run([sys.executable, os.path.join(TOOLS_DIR, "make_test_model.py"), cls.base,
                        "--shared-dir", SHARED_DIR, "--max-positions", "64", "--seed", "3"],
                       check=True, capture_output=True, text=True)
        with open(os.path.join(cls.base, "config.json"), encoding="utf-8") as f:
            cls.cfg = json.load(f)
        cls.lines = probe_lines(cls.cfg, np.random.default_rng(5))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def variant(self, name, formula=None, stored=None):
        """A copy of the base model with config "positions_formula" and/or a stored table."""
        out = os.path.join(self.tmp.name, name)
        shutil.copytree(self.base, out)
        if formula is not None:
            cfg = dict(self.cfg, positions_formula=formula)
            with open(os.path.join(out, "config.json"), "w", encoding="utf-8") as f:
                json.dump(cfg, f)
        # make_test_model.py stores Hugging Face's table, as HF does: drop it or replace it.
        path = os.path.join(out, "model.safetensors")
        w = {k: v for k, v in safetensors_file.read(path).items() if "embed_positions" not in k}
        if stored is not None:
            for side in ("encoder", "decoder"):
                w[f"model.{side}.embed_positions.weight"] = stored
        safetensors_file.write(path, w, "F32")
        return out

    def probe(self, model_dir):
        """(reference, engine) float arrays of the probe outputs for self.lines."""
        exe = os.path.join(BUILD_DIR, "tests", "model-probe")
        if not os.access(exe, os.X_OK):
            self.fail(f"{exe} is not built")
        text = "".join(line + "\n" for line in self.lines)
        ref_bin, c_bin = model_dir + ".ref.bin", model_dir + ".c.bin"
        proc = subprocess.run([sys.executable, os.path.join(TOOLS_DIR, "reference.py"),
                               "--model", model_dir, "--probe", ref_bin],
                              input=text, capture_output=True, text=True, timeout=RUN_TIMEOUT)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        proc = subprocess.run([exe, model_dir, c_bin], input=text, capture_output=True,
                              text=True, timeout=RUN_TIMEOUT)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        ref, got = np.fromfile(ref_bin, "<f4"), np.fromfile(c_bin, "<f4")
        self.assertEqual(ref.size, got.size)
        self.assertGreater(ref.size, 0)
        return ref, got

    def check(self, model_dir):
        ref, got = self.probe(model_dir)
        diff = float(np.max(np.abs(ref - got)))
        self.assertLessEqual(diff, PROBE_TOL, f"{model_dir}: engine and reference differ by {diff:.3g}")
        return got

    def test_formulas_and_stored_table(self):
        stored_hf = self.check(self.base)  # holds Hugging Face's table, as HF checkpoints do
        hf_default = self.check(self.variant("default"))
        hf = self.check(self.variant("hf", formula="huggingface"))
        np.testing.assert_array_equal(hf, hf_default)  # the default is Hugging Face's formula
        np.testing.assert_array_equal(hf, stored_hf)
        marian = self.check(self.variant("marian", formula="marian"))
        self.assertGreater(float(np.max(np.abs(marian - hf))), 1e-2, "the formula switch had no effect")
        table = np.random.default_rng(9).uniform(  # the sinusoids' range
            -1.0, 1.0, (self.cfg["max_position_embeddings"], self.cfg["d_model"])).astype(np.float32)
        stored = self.check(self.variant("stored", formula="marian", stored=table))
        self.assertGreater(float(np.max(np.abs(stored - marian))), 1e-2, "the stored table was ignored")

    def test_marian_formula_is_tensor2tensor(self):
        """mtref's and transformer.py's Marian tables are Marian's C++ loop (float32)."""
        import transformer
        from mtref.model import sinusoidal_positions
        n, d = 64, self.cfg["d_model"]
        half = d // 2
        want = np.zeros((n, d), np.float32)
        inc = np.float32(np.log(np.float32(10000.0)) / np.float32(half - 1))
        for p in range(n):
            for i in range(half):
                v = np.float32(p) * np.exp(np.float32(i) * -inc, dtype=np.float32)
                want[p, i], want[p, half + i] = np.sin(v), np.cos(v)
        for table in (sinusoidal_positions(n, d, "marian").numpy(),
                      transformer.sinusoidal_positions(n, d, "marian").numpy()):
            np.testing.assert_allclose(table, want, atol=2e-5, rtol=0)


def main():
    suite = unittest.defaultTestLoader.loadTestsFromModule(sys.modules[__name__])
    result = unittest.TextTestRunner(verbosity=2, stream=sys.stderr).run(suite)
    failed = len(result.failures) + len(result.errors)
    passed = result.testsRun - failed - len(result.skipped)
    print(f"{passed} passed, {failed} failed")
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
