#!/usr/bin/python3
"""The bundled models (models/en-de, models/de-en) are what models/README.md says they are.

For each model directory:
  * layout: the files of a MarianMT / OPUS-MT directory, model_type "marian", the language
    pair in tokenizer_config.json, en-de's weights stored int8 (every matrix I8 with one F32
    scale per row, at most 0.3x the bytes of float32 weights), de-en's F16 (its int8 lost 1.0
    chrF on the everyday set: models/README.md), under 25 MB in all; a model card
    (README.md) naming the data, its licences and attributions, with the Multi30k BLEU
    that models/README.md reports;
  * it loads in the engine without a warning: mt-translate --verbose prints only its
    "model:" / "blas:" lines on stderr;
  * the tokenizer round-trips the training vocabulary: every SentencePiece piece has an id
    in vocab.json (so no training text maps to <unk>), every id one piece; on every line
    of both sides of the training data (2 x 29,000) the C tokenizer (tests/tokenize-tool)
    gives the ids of python3-sentencepiece + vocab.json, none of them <unk>, and decoding
    those ids gives back the line (runs of whitespace collapsed, as SentencePiece does);
  * quality: the C engine's beam-4 translation of test_2016_flickr (1,000 lines) scores at
    least the issue's BLEU floor (en-de 37.0, de-en 38.5) with tools/bleu.py, by default
    (int8 where the CPU has an int8 path) and with --compute-type float32, each within 0.1 of
    the figure models/README.md reports, so the documented figures stay reproducible (the
    default's only where it ran int8: a CPU without an int8 path runs float32);
  * the everyday set (tools/eval_models.py --sets everyday,everyday-unseen): chrF at least
    the issue's 50 on all of it and on the pairs no training corpus contains, each within
    0.1 of models/README.md's tables; "I love you.", "How much does this cost?", "Where is
    the train station?" (de-en: their German) come out as one of their accepted
    translations; tools/eval_models.py refuses an unknown set by name;
  * the PyTorch reference (tools/reference.py, which reads the stored int8 weights as
    q * scale) translates the first 100 test lines with the same token ids as the engine
    under --compute-type float32 (a near-tie, a decision margin under 1e-3, excused);
  * compute types (issue 16): the same BLEU with --compute-type bfloat16 is within 0.2 of
    float32's and with int8 within 0.5; a type this CPU does not offer must be refused
    with "not available on this CPU" (and is then reported as skipped);
  * stored int8 (en-de): the directory runs int8 by default (float32, saying "int8 weights
    widened", on a CPU without an int8 path: then reported as skipped) and scores within
    0.5 BLEU of float32 on the same weights; tools/quantize_model.py refuses to quantize it
    again and its --dequantize copy (float32 q * scale) translates as --compute-type float32;
    de-en (F16): tools/quantize_model.py's copy is at most 0.3x the float32 bytes, runs int8
    by default and scores within 0.5 BLEU of float32.

Training is a tool, not a test: nothing here retrains. Env: MT_BUILD_DIR, MT_SOURCE_DIR,
MT_SHARED_DIR. Prints "N passed, M failed".
"""
import gzip
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

SOURCE_DIR = os.environ.get("MT_SOURCE_DIR") or os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))
BUILD_DIR = os.environ.get("MT_BUILD_DIR") or os.path.join(SOURCE_DIR, "build")
SHARED_DIR = os.environ.get("MT_SHARED_DIR") or os.path.join(SOURCE_DIR, "..", "shared")
TOOLS_DIR = os.path.join(SOURCE_DIR, "tools")
MULTI30K = os.path.join(SHARED_DIR, "data", "multi30k")
MODELS_README = os.path.join(SOURCE_DIR, "models", "README.md")
sys.path.insert(0, TOOLS_DIR)

import sentencepiece  # noqa: E402

import bleu  # noqa: E402
import reference  # noqa: E402
import safetensors_io  # noqa: E402

# The floors for beam-4 BLEU on test_2016_flickr.
BLEU_FLOOR = {"en-de": 37.0, "de-en": 38.5}
# What each model card (models/<pair>/README.md) must name: the corpora and the
# attributions and licences their terms require.
CARD_MUST_NAME = ["Multi30k", "Elliott et al. 2016", "Flickr30K", "Tatoeba", "CC-BY 2.0",
                  "tatoeba.org", "www.manythings.org/anki", "debian-l10n", "Frank Richter",
                  "GPL-2+", "MPL-2.0", "Osamu Aoki", "non-commercial", "stored int8",
                  "--compute-type"]
README_TOLERANCE = 0.1      # documented figure vs. the one measured here
EVERYDAY_CHRF_FLOOR = 50.0  # the target on the everyday set
# The sentences a newcomer types first (tools/eval_models.py's MUST_BE_RIGHT, and their
# German for de-en), with the translations that are right.
ACCEPTED = {
    "en-de": {"I love you.": {"Ich liebe dich.", "Ich liebe Sie.", "Ich liebe euch."},
              "How much does this cost?": {"Wie viel kostet das?", "Was kostet das?",
                                           "Wieviel kostet das?", "Wie viel kostet dies?"},
              "Where is the train station?": {"Wo ist der Bahnhof?"}},
    "de-en": {"Ich liebe dich.": {"I love you."},
              "Wie viel kostet das?": {"How much does that cost?", "How much does this cost?",
                                       "How much does it cost?", "How much is that?",
                                       "How much is this?", "How much is it?"},
              "Wo ist der Bahnhof?": {"Where is the train station?", "Where is the station?",
                                      "Where's the train station?", "Where's the station?"}},
}
TOKENIZER_LINES = None      # training lines per side for the tokenizer checks (None: all)
REFERENCE_LINES = 100       # test lines translated by both engine and reference
COMPUTE_BOUNDS = {"bfloat16": 0.2, "int8": 0.5}  # BLEU below float32's, at most
TIE_TOL = 1e-3              # a decision this close may flip under float rounding
MAX_BYTES = 25 * 1000 * 1000
RUN_TIMEOUT = 900


def read_gz(name, count=None):
    """Lines of a Multi30k file; the test that asks skips, saying so, without ../shared."""
    path = os.path.join(MULTI30K, name)
    if not os.path.exists(path):
        raise unittest.SkipTest(f"needs the Multi30k corpus at {MULTI30K} (../shared; set MT_SHARED_DIR)")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f]
    return lines if count is None else lines[:count]


def program(relative):
    path = os.path.join(BUILD_DIR, relative)
    if not os.access(path, os.X_OK):
        raise unittest.SkipTest(f"{path} is not built")
    return path


def readme_beam4_bleu(pair, compute="int8"):
    """The C engine's beam-4 BLEU that models/README.md's section '## PAIR' reports for a
    compute type: its row '| C engine ..., COMPUTE ... | beam 4 | BLEU |'."""
    with open(MODELS_README, encoding="utf-8") as f:
        text = f.read()
    section = re.search(r"^## %s\n(.*?)(?=^## |\Z)" % re.escape(pair), text, re.S | re.M)
    if section is None:
        return None
    row = re.search(r"^\s*\| C engine[^|]*%s[^|]*\| beam 4 \| \**([0-9.]+)\**" % re.escape(compute),
                    section.group(1), re.M)
    return float(row.group(1)) if row else None


def readme_pair_rows(pair):
    """The cells of every '| **PAIR** | ... |' row of models/README.md, in order."""
    with open(MODELS_README, encoding="utf-8") as f:
        return [[c.strip() for c in line.strip().strip("|").split("|")][1:]
                for line in f if line.startswith(f"| **{pair}** |")]


def bleu_chrf(cell):
    """'76.20 / 85.26' -> (76.2, 85.26)."""
    b, c = cell.split("/")
    return float(b), float(c)


class BundledModel:
    """Checks for one bundled model; subclasses set PAIR and STORED_INT8 (the weights are
    stored int8, so the default compute type is int8 where the CPU has an int8 path)."""
    PAIR = ""
    STORED_INT8 = False

    @classmethod
    def setUpClass(cls):
        cls.dir = os.path.join(SOURCE_DIR, "models", cls.PAIR)
        cls.src_lang, cls.tgt_lang = cls.PAIR.split("-")
        if not os.path.exists(os.path.join(cls.dir, "config.json")):
            raise AssertionError(f"{cls.dir}/config.json is missing: the model is not bundled")

    def load_json(self, name):
        with open(os.path.join(self.dir, name), encoding="utf-8") as f:
            return json.load(f)

    def translate(self, lines, *args, check=True):
        proc = subprocess.run([program("cli/mt-translate"), "--model", self.dir, "--threads", "2",
                               *args], input="".join(line + "\n" for line in lines),
                              capture_output=True, text=True, timeout=RUN_TIMEOUT)
        if check:
            self.assertEqual(proc.returncode, 0, proc.stderr)
        return proc.stdout.splitlines(), proc.stderr

    def float32_bleu(self):
        """(sources, references, beam-4 float32 BLEU) on test_2016_flickr, computed once."""
        cls = type(self)
        if getattr(cls, "_float32", None) is None:
            sources = read_gz(f"test_2016_flickr.{self.src_lang}.gz")
            refs = read_gz(f"test_2016_flickr.{self.tgt_lang}.gz")
            hyps, _ = self.translate(sources, "--beam", "4", "--compute-type", "float32")
            cls._float32 = (sources, refs, bleu.corpus_bleu(hyps, refs).score)
            print(f"\n  [{self.PAIR}] test_2016_flickr beam 4 float32: BLEU {cls._float32[2]:.2f}",
                  file=sys.stderr)
        return cls._float32

    @property
    def documented_compute(self):
        """The compute type models/README.md's default figures are for."""
        return "int8" if self.STORED_INT8 else "float32"

    def default_compute(self):
        """The compute type the directory runs with no setting: "float32" for float weights;
        stored int8 "int8", or "float32" on a CPU without an int8 path (the engine then
        says "int8 weights widened")."""
        cls = type(self)
        if getattr(cls, "_default", None) is None:
            _, err = self.translate(["A test."] if self.src_lang == "en" else ["Ein Test."], "--verbose")
            widened = "int8 weights widened" in err
            int8 = self.STORED_INT8 and not widened
            self.assertRegex(err, r"compute type int8: oneDNN" if int8 else r"compute type float32")
            cls._default = "int8" if int8 else "float32"
        return cls._default

    def test_stored_int8(self):
        """Stored int8 (a float model: check_quantized_copy instead): every matrix I8 with
        an F32 scale per row, at most 0.3x the bytes of float32 weights; int8 by default,
        BLEU within the int8 bound of float32's on the same weights (q * scale);
        quantize_model.py refuses to quantize it twice and its --dequantize copy
        translates as --compute-type float32 does."""
        if not self.STORED_INT8:
            return self.check_quantized_copy()
        path = os.path.join(self.dir, "model.safetensors")
        header = safetensors_io.read_header(path)[0]
        names = {k: v for k, v in header.items() if k != "__metadata__"}
        matrices = [k for k, v in names.items() if len(v["shape"]) == 2 and k.endswith(".weight")]
        self.assertTrue(matrices)
        for k in matrices:
            self.assertEqual(names[k]["dtype"], "I8", k)
            self.assertEqual((names[k + "_scale"]["dtype"], names[k + "_scale"]["shape"]),
                             ("F32", names[k]["shape"][:1]), k)
        float32_bytes = sum(4 * math.prod(v["shape"]) for k, v in names.items() if not k.endswith("_scale"))
        size = os.path.getsize(path)
        print(f"\n  [{self.PAIR}] model.safetensors {size:,} bytes = {size / float32_bytes:.3f} x float32",
              file=sys.stderr)
        self.assertLessEqual(size, 0.3 * float32_bytes)

        sources, refs, base = self.float32_bleu()
        hyps, err = self.translate(sources, "--beam", "4", "--verbose")
        score = bleu.corpus_bleu(hyps, refs).score
        print(f"  [{self.PAIR}] stored int8, default compute type {self.default_compute()}: "
              f"BLEU {score:.2f} ({score - base:+.2f} vs float32)", file=sys.stderr)
        self.assertGreaterEqual(score, base - COMPUTE_BOUNDS["int8"])

        tmp = tempfile.mkdtemp(prefix="mt-int8-")
        self.addCleanup(shutil.rmtree, tmp, True)
        tool = os.path.join(TOOLS_DIR, "quantize_model.py")
        p = subprocess.run(["/usr/bin/python3", tool, self.dir, os.path.join(tmp, "again")],
                           capture_output=True, text=True, timeout=RUN_TIMEOUT)
        self.assertEqual(p.returncode, 1)
        self.assertIn("already quantized", p.stderr)
        wide = os.path.join(tmp, "float32")
        p = subprocess.run(["/usr/bin/python3", tool, "--dequantize", self.dir, wide],
                           capture_output=True, text=True, timeout=RUN_TIMEOUT)
        self.assertEqual(p.returncode, 0, p.stderr)
        want, _ = self.translate(sources[:50], "--beam", "4", "--compute-type", "float32", "--output", "ids")
        got = subprocess.run([program("cli/mt-translate"), "--model", wide, "--beam", "4", "--output", "ids"],
                             input="".join(line + "\n" for line in sources[:50]), capture_output=True,
                             text=True, timeout=RUN_TIMEOUT)
        self.assertEqual(got.returncode, 0, got.stderr)
        self.assertEqual(got.stdout.splitlines(), want)
        if self.default_compute() != "int8":
            raise unittest.SkipTest("this CPU has no int8 path: the stored int8 model ran float32")

    def check_quantized_copy(self):
        """A float model (de-en): tools/quantize_model.py's copy: at most 0.3x the bytes of float32 weights, runs
        int8 by default, BLEU within the int8 bound of float32's; float32 still runs it."""
        out = os.path.join(tempfile.mkdtemp(prefix="mt-int8-"), self.PAIR)
        self.addCleanup(shutil.rmtree, os.path.dirname(out), True)
        p = subprocess.run(["/usr/bin/python3", os.path.join(TOOLS_DIR, "quantize_model.py"), self.dir, out],
                           capture_output=True, text=True, timeout=RUN_TIMEOUT)
        self.assertEqual(p.returncode, 0, p.stderr)
        header = safetensors_io.read_header(os.path.join(self.dir, "model.safetensors"))[0]
        float32_bytes = sum(4 * math.prod(v["shape"]) for k, v in header.items() if k != "__metadata__")
        size = os.path.getsize(os.path.join(out, "model.safetensors"))
        print(f"\n  [{self.PAIR}] int8 model.safetensors {size:,} bytes = {size / float32_bytes:.3f} x float32",
              file=sys.stderr)
        self.assertLessEqual(size, 0.3 * float32_bytes)
        sources, refs, base = self.float32_bleu()
        proc = subprocess.run([program("cli/mt-translate"), "--model", out, "--threads", "2", "--beam", "4",
                               "--verbose"], input="".join(line + "\n" for line in sources),
                              capture_output=True, text=True, timeout=RUN_TIMEOUT)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        widened = "int8 weights widened" in proc.stderr
        self.assertRegex(proc.stderr, r"compute type float32" if widened else r"compute type int8: oneDNN")
        score = bleu.corpus_bleu(proc.stdout.splitlines(), refs).score
        print(f"  [{self.PAIR}] stored int8, default compute type: BLEU {score:.2f} ({score - base:+.2f})",
              file=sys.stderr)
        self.assertGreaterEqual(score, base - COMPUTE_BOUNDS["int8"])
        hyps, _ = self.translate(sources[:50], "--beam", "4", "--compute-type", "float32")
        self.assertEqual(len(hyps), 50)
        if widened:
            raise unittest.SkipTest("this CPU has no int8 path: the stored int8 model ran float32")

    def test_bleu_per_compute_type(self):
        sources, refs, base = self.float32_bleu()
        refused = []
        for ctype, bound in COMPUTE_BOUNDS.items():
            with self.subTest(compute_type=ctype):
                hyps, err = self.translate(sources, "--beam", "4", "--compute-type", ctype, "--verbose",
                                           check=False)
                if not hyps and "not available on this CPU" in err:
                    refused.append(f"{ctype}: {err.strip()}")
                    continue
                self.assertEqual(len(hyps), len(sources), err)
                self.assertRegex(err, r"compute type %s: oneDNN [0-9.]+ brg" % ctype)
                score = bleu.corpus_bleu(hyps, refs).score
                print(f"  [{self.PAIR}] test_2016_flickr beam 4 {ctype}: BLEU {score:.2f} "
                      f"({score - base:+.2f})", file=sys.stderr)
                self.assertGreaterEqual(score, base - bound,
                                        f"{ctype} BLEU {score:.2f} vs float32 {base:.2f}")
        if refused:
            raise unittest.SkipTest("not offered on this CPU: " + "; ".join(refused))

    def test_layout(self):
        names = ("config.json", "generation_config.json", "model.safetensors", "source.spm",
                 "target.spm", "vocab.json", "tokenizer_config.json")
        for name in names:
            self.assertTrue(os.path.isfile(os.path.join(self.dir, name)), f"{self.PAIR}: no {name}")
        config = self.load_json("config.json")
        self.assertEqual(config["model_type"], "marian")
        self.assertEqual(config["activation_function"], "relu")
        self.assertFalse(config.get("normalize_before", False), "post-norm expected")
        self.assertTrue(config.get("scale_embedding"), "embeddings are scaled by sqrt(d)")
        tok = self.load_json("tokenizer_config.json")
        self.assertEqual((tok.get("source_lang"), tok.get("target_lang")), (self.src_lang, self.tgt_lang))
        with open(os.path.join(self.dir, "model.safetensors"), "rb") as f:
            header = json.loads(f.read(int.from_bytes(f.read(8), "little")))
        dtypes = {v["dtype"] for k, v in header.items() if k != "__metadata__"}
        self.assertIn("I8" if self.STORED_INT8 else "F16", dtypes)
        total = sum(os.path.getsize(os.path.join(self.dir, n)) for n in os.listdir(self.dir))
        self.assertLess(total, MAX_BYTES, f"{self.PAIR} is {total} bytes")

    def test_model_card(self):
        with open(os.path.join(self.dir, "README.md"), encoding="utf-8") as f:
            card = f.read()
        for name in CARD_MUST_NAME:
            self.assertIn(name, card, f"{self.PAIR}/README.md does not name {name!r}")
        for compute in ("int8", "float32"):
            documented = readme_beam4_bleu(self.PAIR, compute)
            self.assertIsNotNone(documented, compute)
            self.assertIn(f"{documented:.2f}", card,
                          f"{self.PAIR}/README.md lacks the {compute} BLEU of models/README.md")
        self.assertIn(f"**{readme_beam4_bleu(self.PAIR, self.documented_compute):.2f}**", card)
        history = self.load_json("training.json")
        self.assertEqual(history["steps"], sum(run["steps"] for run in history["runs"]))
        for run in history["runs"]:
            self.assertIn(f"{run['steps']:,}", card, f"{self.PAIR}/README.md lacks run {run}")

    def test_loads_without_warnings(self):
        out, err = self.translate(["Ein Test.", ""] if self.src_lang == "de" else ["A test.", ""],
                                  "--verbose")
        self.assertEqual(len(out), 2)
        self.assertTrue(out[0].strip())
        self.assertEqual(out[1], "")
        for line in err.splitlines():
            self.assertRegex(line, r"^mt-translate: (model|blas)", f"unexpected stderr: {err}")

    def test_tokenizer_round_trips_training_vocabulary(self):
        vocab = self.load_json("vocab.json")
        config = self.load_json("config.json")
        self.assertEqual(len(set(vocab.values())), len(vocab), "two pieces share an id")
        self.assertEqual(sorted(vocab.values()), list(range(config["vocab_size"])))
        spm = sentencepiece.SentencePieceProcessor(model_file=os.path.join(self.dir, "source.spm"))
        with open(os.path.join(self.dir, "source.spm"), "rb") as a, \
                open(os.path.join(self.dir, "target.spm"), "rb") as b:
            self.assertEqual(a.read(), b.read(), "shared vocabulary: one SentencePiece model")
        pieces = [spm.id_to_piece(i) for i in range(spm.get_piece_size())]
        missing = [p for p in pieces if p not in vocab]
        self.assertEqual(missing, [], "SentencePiece pieces without an id in vocab.json")
        unk, eos = vocab["<unk>"], config["eos_token_id"]

        lines = []
        for lang in (self.src_lang, self.tgt_lang):
            lines += [l for l in read_gz(f"train.{lang}.gz", TOKENIZER_LINES) if l.strip()]
        tool = program("tests/tokenize-tool")
        proc = subprocess.run([tool, self.dir, "encode"], input="".join(l + "\n" for l in lines),
                              capture_output=True, text=True, timeout=RUN_TIMEOUT)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        got = [json.loads(l) for l in proc.stdout.splitlines()]
        self.assertEqual(len(got), len(lines))
        for line, ids in zip(lines, got):
            want = [vocab[p] for p in spm.encode(line, out_type=str)] + [eos]
            self.assertEqual(ids, want, f"C and python3-sentencepiece disagree on {line!r}")
            self.assertNotIn(unk, ids, f"training text maps to <unk>: {line!r}")

        proc = subprocess.run([tool, self.dir, "decode"],
                              input="".join(" ".join(map(str, ids)) + "\n" for ids in got),
                              capture_output=True, text=True, timeout=RUN_TIMEOUT)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        decoded = [json.loads(l) for l in proc.stdout.splitlines()]
        for line, text in zip(lines, decoded):
            self.assertEqual(text, " ".join(line.split()), f"round trip of {line!r}")

    def test_everyday_set(self):
        if not os.path.isdir(MULTI30K):  # everyday-unseen leaves out the training corpora's lines
            raise unittest.SkipTest(f"needs the Multi30k corpus at {MULTI30K} (../shared; set MT_SHARED_DIR)")
        proc = subprocess.run(
            [sys.executable, os.path.join(TOOLS_DIR, "eval_models.py"), f"{self.PAIR}={self.dir}",
             "--sets", "everyday,everyday-unseen", "--show-examples", "--threads", "2"],
            capture_output=True, text=True, timeout=RUN_TIMEOUT,
            env=dict(os.environ, MT_BUILD_DIR=BUILD_DIR, MT_SHARED_DIR=SHARED_DIR))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        row = [l for l in proc.stdout.splitlines() if l.startswith(f"| {self.PAIR} |")]
        self.assertEqual(len(row), 1, proc.stdout)
        everyday, unseen = (bleu_chrf(c) for c in row[0].strip("| ").split(" | ")[2:])
        print(f"\n  [{self.PAIR}] everyday BLEU / chrF {everyday}, unseen {unseen}", file=sys.stderr)
        self.assertRegex(proc.stderr, r"everyday-unseen: (2[0-9]|[3-9][0-9]) lines")
        for measured in (everyday, unseen):
            self.assertGreaterEqual(measured[1], EVERYDAY_CHRF_FLOOR)
        documented = {len(cells): cells for cells in readme_pair_rows(self.PAIR)}
        self.assertIn(4, documented, "models/README.md's quality table lacks the model")
        self.assertIn(2, documented, "models/README.md's everyday-unseen table lacks the model")
        if self.default_compute() != self.documented_compute:  # the documented figures are int8's
            print(f"  [{self.PAIR}] ran float32 (no int8 path): models/README.md's int8 figures not compared",
                  file=sys.stderr)
            documented = {}
        for measured, cell in ((everyday, documented[4][3]), (everyday, documented[2][0]),
                               (unseen, documented[2][1])) if documented else ():
            for got, want in zip(measured, bleu_chrf(cell)):
                self.assertLessEqual(abs(got - want), README_TOLERANCE,
                                     f"models/README.md says {cell}, measured {measured}")
        said = dict(re.findall(r"^#   (.*) -> (.*)$", proc.stderr, re.M))
        for source, right in ACCEPTED[self.PAIR].items():
            self.assertIn(source, said, proc.stderr)
            self.assertIn(said[source], right, f"{self.PAIR} translates {source!r} wrong")

    def test_quality_and_reference(self):
        sources, refs, f32 = self.float32_bleu()
        hyps, _ = self.translate(sources, "--beam", "4")
        self.assertEqual(len(hyps), len(sources))
        score = bleu.corpus_bleu(hyps, refs).score
        chrf = bleu.corpus_chrf(hyps, refs)
        print(f"\n  [{self.PAIR}] test_2016_flickr beam 4, {self.default_compute()} (default): BLEU {score:.2f}, "
              f"chrF {chrf:.2f}; float32 BLEU {f32:.2f}", file=sys.stderr)
        self.assertGreaterEqual(score, BLEU_FLOOR[self.PAIR])
        for compute, measured in ((self.documented_compute, score), ("float32", f32)):
            documented = readme_beam4_bleu(self.PAIR, compute)
            self.assertIsNotNone(documented, f"models/README.md reports no beam-4 {compute} BLEU for {self.PAIR}")
            if compute != "float32" and self.default_compute() != compute:
                continue  # a CPU without an int8 path ran float32: its figure is compared next
            self.assertLessEqual(abs(measured - documented), README_TOLERANCE,
                                 f"models/README.md says {compute} {documented}, measured {measured:.2f}")

        # The reference reads the stored int8 weights as q * scale: the engine's float32.
        lines = sources[:REFERENCE_LINES]
        ref = reference.Reference(self.dir)
        args = reference.parse_args(["--model", self.dir, "--beam", "4", "--output", "ids"])
        want, margins = ref.translate(lines, args)
        got, _ = self.translate(lines, "--beam", "4", "--output", "ids", "--compute-type", "float32")
        self.assertEqual(len(got), len(lines))
        differ = [(i, w[0], g) for i, (w, g) in enumerate(zip(want, got)) if w[0] != g]
        real = [d for d in differ if margins[d[0]] is None or margins[d[0]] >= TIE_TOL]
        self.assertEqual(real, [], "engine and reference differ")
        self.assertLessEqual(len(differ), 2)


class EvalModelsTool(unittest.TestCase):
    def test_unknown_set_is_refused_by_name(self):
        proc = subprocess.run(
            [sys.executable, os.path.join(TOOLS_DIR, "eval_models.py"), "en-de=models/en-de",
             "--sets", "everyday,everday"], capture_output=True, text=True, timeout=RUN_TIMEOUT)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("unknown set everday; sets: multi30k-test,", proc.stderr)
        self.assertEqual(proc.stdout, "", "nothing is translated before the sets are known")


class ByteFallbackVocabulary(unittest.TestCase):
    """The vocabulary tools/prepare_corpus.py trains for new models (byte fallback, NFC
    normaliser, split digits): emoji and symbols it has no piece for are spelt as UTF-8
    byte pieces, which the C tokenizer must map to ids exactly as python3-sentencepiece
    does and decode back to the characters; tools/mtref agrees."""
    LINES = ["I love it 🙂", "I ❤️ Berlin", "It costs €5.", "Das Ticket kostet 12,50 €.",
             "™ ½ x² … ⚠ 👍🏽 👨\u200d👩\u200d👧 🇫🇷", "Prix\u202f: 12 €", "e\u0301te\u0301 2024"]

    @classmethod
    def setUpClass(cls):
        import prepare_corpus
        import train
        cls.tmp = tempfile.mkdtemp()
        text = os.path.join(cls.tmp, "spm.txt")
        with open(text, "w", encoding="utf-8") as f:
            for i in range(300):
                f.write(f"the cat number {i} sat on the mat. le chat numéro {i} dort.\n")
        prefix = os.path.join(cls.tmp, "spm")
        prepare_corpus.train_vocabulary(text, prefix, 400, True, hard_limit=False)
        cls.sp = sentencepiece.SentencePieceProcessor(model_file=prefix + ".model")
        pad = cls.sp.get_piece_size()
        args = train.argparse.Namespace(d_model=8, layers=1, heads=2, ffn=16, dropout=0.1,
                                        max_positions=64, src_lang="en", tgt_lang="fr")
        cls.model = os.path.join(cls.tmp, "model")
        train.write_model_dir(cls.model, train.build_model(args, pad + 1, pad), args,
                              prefix + ".model", cls.sp)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def tool(self, mode, lines):
        proc = subprocess.run([program("tests/tokenize-tool"), self.model, mode],
                              input="\n".join(lines) + "\n", capture_output=True, text=True,
                              timeout=RUN_TIMEOUT)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return [json.loads(l) for l in proc.stdout.splitlines()]

    def test_c_tokenizer_round_trips_byte_pieces(self):
        want_text = [self.sp.decode(self.sp.encode(l)) for l in self.LINES]
        self.assertEqual(want_text[0], "I love it 🙂")
        self.assertEqual(want_text[5], "Prix : 12 €", "narrow no-break space -> space")
        self.assertEqual(want_text[6], "été 2024", "NFC")
        self.assertIn("™ ½ x² …", want_text[4], "no NFKC folding of symbols")
        encoded = self.tool("encode", self.LINES)
        for line, ids in zip(self.LINES, encoded):
            self.assertEqual(ids, self.sp.encode(line) + [0], line)
            self.assertNotIn(1, ids, f"<unk> in {line!r}")
        self.assertIn(self.sp.piece_to_id("<0xF0>"), encoded[0], "the emoji is spelt in bytes")
        decoded = self.tool("decode", [" ".join(map(str, ids[:-1])) for ids in encoded])
        self.assertEqual(decoded, want_text)

    def test_mtref_round_trips_byte_pieces(self):
        from mtref.config import load_config
        from mtref.tokenizer import MarianTokenizer
        tok = MarianTokenizer(self.model, load_config(self.model))
        for line in self.LINES:
            ids = tok.encode(line)
            self.assertEqual(ids, self.sp.encode(line) + [0], line)
            self.assertEqual(tok.decode(ids), self.sp.decode(self.sp.encode(line)))


class CorpusAndChecks(unittest.TestCase):
    """prepare_corpus.py's cleaning and symbol-copy pairs; eval_models.py's numbers and
    emoji checks."""

    def test_clean(self):
        import prepare_corpus
        self.assertEqual(prepare_corpus.clean(" Bonjour\u202f!\u00a0\tça va\u00ad ? "),
                         "Bonjour ! ça va ?")
        self.assertEqual(prepare_corpus.clean("e\u0301te\u0301"), "été")

    def test_symbol_pairs_copy_the_same_symbol_into_both_sides(self):
        import random
        import prepare_corpus
        import eval_models
        pairs = [("Tom is in Paris.", "Tom est à Paris."), ("Save the file", "Enregistrer le fichier")]
        got = prepare_corpus.symbol_pairs(pairs, 200, random.Random(1))
        self.assertEqual(len(got), 200)
        modes = set()
        for en, fr in got:
            orig_en, orig_fr = pairs[0] if "Save" not in en and "file" not in en else pairs[1]
            added = [w for w in en.split() if w not in orig_en.split()]
            self.assertEqual(len(added), 1, en)
            self.assertEqual(added, [w for w in fr.split() if w not in orig_fr.split()], (en, fr))
            words = en.split()
            at = words.index(added[0])
            modes.add("replace" if len(words) == len(orig_en.split()) else
                      "end" if at == len(words) - 1 else "start" if at == 0 else "middle")
        self.assertEqual(modes, {"end", "start", "middle", "replace"})

    def test_numbers_check(self):
        import eval_models
        refs = ["Le train part à 7 h 45.", "Cela coûte 12,50 euros."]
        self.assertEqual(eval_models.numbers_kept(["Le train part à 7 h 45.", "Cela coûte 12.50 €."], refs),
                         (4, 4, 2))
        self.assertEqual(eval_models.numbers_kept(["Le train part à sept heures 45.", "12,5 euros"], refs),
                         (2, 4, 0))

    def test_emoji_check(self):
        import eval_models
        self.assertEqual(eval_models.symbols("J'❤️ 👍🏽 👨\u200d👩\u200d👧 🇫🇷 12 € ok"),
                         ["❤", "👍🏽", "👨\u200d👩\u200d👧", "🇫🇷", "€"])
        self.assertEqual(eval_models.symbols_kept(["I ❤ it 🙂", "5 €"], ["J'❤️ ça", "5 €"]),
                         (2, 3, 1))


class EnDe(BundledModel, unittest.TestCase):
    PAIR = "en-de"
    STORED_INT8 = True


class DeEn(BundledModel, unittest.TestCase):
    PAIR = "de-en"


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import testmain
    sys.exit(testmain.run(__name__))
