#!/usr/bin/python3
"""CTranslate2 model directories (model/ct2.c, model/ct2_file.c).

TestFiles (no peer needed): the tiny model.bin files of tests/fuzz/ct2 (written by
CTranslate2's own spec classes: float32, float16, bfloat16, int8, int16, binary version 3)
load and translate ids, as do separate source and target vocabularies; broken ones (truncated, an unknown version, an unknown type id, a
byte count that does not match the shape, a model shape against its dimensions, a source
start token) fail with a message that names the problem, exit 1, never a signal. With the
peer build, greedy ids equal CTranslate2's own on the same file for the float models,
separate vocabularies, a pre-norm model and a model trained without eos on the source.

TestEnDe (needs ../shared/peers/ctranslate2 and ../shared/data/multi30k): models/en-de
converted by the peer's hf_to_ct2.py (float32 and int8; models/en-de is stored int8, which
the peer's reader does not take, so it converts tools/quantize_model.py --dequantize's
float32 q * scale copy) translates 100 Multi30k lines with
beam 4 token-identically to models/en-de itself (float32), greedy identically to
CTranslate2 on the same directory; beam 4 against CTranslate2 and int8 are counted and
printed (the search and the int8 products differ by design; floors only).

In place (mt_tokenizer_load_ct2: no vocab.json, no tokenizer_config.json): a bare directory
with only model.bin, config.json, its vocabularies and a SentencePiece model (source.spm +
target.spm, or sentencepiece.model) gives the ids of the same directory with the Marian
tokenizer files (TestFiles: shared and separate vocabularies, .json and .txt) and, with the
peer, greedy the ids of CTranslate2 on it and beam 4 those of models/en-de (TestEnDe).
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

SOURCE_DIR = os.environ.get("MT_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD_DIR = os.environ.get("MT_BUILD_DIR") or os.path.join(SOURCE_DIR, "build")
SHARED_DIR = os.environ.get("MT_SHARED_DIR") or os.path.join(SOURCE_DIR, "..", "shared")
PEER = os.path.join(SHARED_DIR, "peers", "ctranslate2")
SEEDS = os.path.join(SOURCE_DIR, "tests", "fuzz", "ct2")
EN_DE = os.path.join(SOURCE_DIR, "models", "en-de")
SPM_FIXTURE = os.path.join(SOURCE_DIR, "tests", "fixtures", "opus-mt-tc-big-en-pt")
MT_TRANSLATE = os.path.join(BUILD_DIR, "cli", "mt-translate")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import testmain  # noqa: E402
from mtfixtures import float_weights  # noqa: E402

TINY_TOKENS = ["</s>", "<unk>", "<s>"] + ["t%d" % i for i in range(7)]
TINY_TARGET = ["</s>", "<unk>", "<s>"] + ["u%d" % i for i in range(9)]  # separate.bin's target side


def peer_python():
    """The peer's ctranslate2 module is built for Debian's python3; None when absent."""
    if not os.path.isdir(os.path.join(PEER, "python", "ctranslate2")):
        return None
    return "/usr/bin/python3"


def write_tokenizer_files(d, tokens, src="en", tgt="de", spm_dir=EN_DE):
    """What `mt-models install` adds beside a CTranslate2 model: vocab.json (first id of
    each piece), tokenizer_config.json, and SentencePiece models when the directory has none."""
    vocab = {}
    for i, t in enumerate(tokens):
        vocab.setdefault(t, i)
    with open(os.path.join(d, "vocab.json"), "w") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
        json.dump({"source_lang": src, "target_lang": tgt, "separate_vocabs": False, "eos_token": "</s>",
                   "unk_token": "<unk>", "pad_token": "<pad>"}, f)
    for name in ("source.spm", "target.spm"):
        if not os.path.exists(os.path.join(d, name)):
            shutil.copy(os.path.join(spm_dir, name), d)


def tiny_dir(root, seed, name=None):
    d = os.path.join(root, name or os.path.splitext(seed)[0])
    os.makedirs(d)
    shutil.copy(os.path.join(SEEDS, seed), os.path.join(d, "model.bin"))
    separate = seed == "separate.bin"
    vocabs = {"source_vocabulary": TINY_TOKENS, "target_vocabulary": TINY_TARGET} if separate \
        else {"shared_vocabulary": TINY_TOKENS}
    for name, tokens in vocabs.items():
        with open(os.path.join(d, name + ".json"), "w") as f:
            json.dump(tokens, f)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump({"add_source_bos": False, "add_source_eos": True, "bos_token": "<s>", "decoder_start_token": "</s>",
                   "eos_token": "</s>", "layer_norm_epsilon": None, "unk_token": "<unk>"}, f)
    write_tokenizer_files(d, TINY_TOKENS, spm_dir=SPM_FIXTURE)  # any SentencePiece model: ids in, ids out
    if separate:
        with open(os.path.join(d, "target_vocab.json"), "w") as f:
            json.dump({t: i for i, t in enumerate(TINY_TARGET)}, f)
        with open(os.path.join(d, "tokenizer_config.json")) as f:
            tc = json.load(f)
        tc["separate_vocabs"] = True
        with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
            json.dump(tc, f)
    return d


def variables(data):
    """(name, offset of the type byte, offset of the count, offset of the data, nbytes) per
    variable of a version-6 model.bin."""
    p = 4
    n = struct.unpack_from("<H", data, p)[0]
    p += 2 + n + 4
    count = struct.unpack_from("<I", data, p)[0]
    p += 4
    out = []
    for _ in range(count):
        n = struct.unpack_from("<H", data, p)[0]
        name = data[p + 2:p + 1 + n].decode()
        p += 2 + n
        rank = data[p]
        dims_at = p + 1
        p += 1 + 4 * rank
        nbytes = struct.unpack_from("<I", data, p + 1)[0]
        out.append((name, dims_at, p, p + 5, nbytes))
        p += 5 + nbytes
    return out


def run_translate(model, lines, *args, input_kind="text"):
    return subprocess.run([MT_TRANSLATE, "--model", model, "--input", input_kind, *args],
                          input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=600)


class TestFiles(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(MT_TRANSLATE):
            raise unittest.SkipTest("mt-translate is not built in " + BUILD_DIR)
        cls.tmp = tempfile.mkdtemp(prefix="test-ct2-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    IDS = ["3 4 5", "9 8 7 6 5", "4"]

    def translate_ids(self, d, *args):
        r = run_translate(d, self.IDS, "--output", "ids", "--max-length", "12", "--compute-type", "float32", *args,
                          input_kind="ids")
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout.splitlines()
        self.assertEqual(len(out), len(self.IDS))
        return out

    def test_every_stored_type_loads(self):
        for seed in ("post_float32.bin", "post_float16.bin", "post_bfloat16.bin", "post_int8.bin",
                     "post_int16.bin", "v3.bin", "separate.bin", "pre_norm.bin"):
            with self.subTest(seed=seed):
                out = self.translate_ids(tiny_dir(self.tmp, seed))
                n = len(TINY_TARGET if seed == "separate.bin" else TINY_TOKENS)
                for line in out:
                    self.assertTrue(all(0 <= int(t) < n for t in line.split()), line)

    def test_in_place_equals_marian_files(self):
        """The tiny models without the Marian tokenizer files (vocab.json, tokenizer_config.json,
        source.spm/target.spm), a sentencepiece.model instead, the pair given: the same ids as
        with them; separate vocabularies read from .json and .txt alike; with the peer, CTranslate2's."""
        py = peer_python()
        for seed in ("post_float32.bin", "separate.bin", "pre_norm.bin"):
            with self.subTest(seed=seed):
                marian = tiny_dir(self.tmp, seed, "marian-" + seed.split(".")[0])
                bare = os.path.join(self.tmp, "bare-" + seed.split(".")[0])
                os.makedirs(bare)
                for name in ("model.bin", "config.json", "shared_vocabulary.json", "source_vocabulary.json"):
                    if os.path.exists(os.path.join(marian, name)):
                        shutil.copy(os.path.join(marian, name), bare)
                if seed == "separate.bin":  # the target side as one token a line
                    with open(os.path.join(bare, "target_vocabulary.txt"), "w") as f:
                        f.write("\n".join(TINY_TARGET) + "\n")
                shutil.copy(os.path.join(SPM_FIXTURE, "source.spm"), os.path.join(bare, "sentencepiece.model"))
                ours = self.translate_ids(bare + ":en:de", "--beam", "1")
                self.assertEqual(ours, self.translate_ids(marian, "--beam", "1"))
                self.assertEqual(self.translate_ids(bare + ":en:de"), self.translate_ids(marian))  # the default beam
                if py:
                    self.assertEqual(ours, ct2_ids(py, marian, [[int(t) for t in line.split()] for line in self.IDS],
                                                   1, 11))

    def test_version_3_equals_version_6(self):
        self.assertEqual(self.translate_ids(tiny_dir(self.tmp, "v3.bin", "v3-eq")),
                         self.translate_ids(tiny_dir(self.tmp, "post_float32.bin", "v6-eq")))

    def broken(self, name, mutate, expect):
        d = tiny_dir(self.tmp, "post_float32.bin", name)
        path = os.path.join(d, "model.bin")
        with open(path, "rb") as f:
            data = bytearray(f.read())
        data = mutate(data)
        with open(path, "wb") as f:
            f.write(data)
        r = run_translate(d, self.IDS, "--output", "ids", input_kind="ids")
        self.assertEqual(r.returncode, 1, "exit %d (a signal is negative): %s" % (r.returncode, r.stderr))
        self.assertIn(expect, r.stderr)
        self.assertNotIn("Sanitizer", r.stderr)

    def test_truncated(self):
        self.broken("trunc", lambda b: b[:len(b) // 3], "model.bin: truncated at byte")
        self.broken("trunc-header", lambda b: b[:3], "truncated at byte 0: the binary version")

    def test_unknown_version(self):
        self.broken("version", lambda b: struct.pack("<I", 99) + b[4:], "binary version 99 is not supported")

    def test_unknown_type(self):
        def mutate(b):
            name, _, type_at, _, _ = variables(bytes(b))[5]
            b[type_at] = 9
            return b
        self.broken("dtype", mutate, "has unknown type id 9")

    def test_byte_count_against_shape(self):
        def mutate(b):
            name, dims_at, _, _, _ = [v for v in variables(bytes(b)) if v[0] == "encoder/embeddings_0/weight"][0]
            struct.pack_into("<I", b, dims_at, 11)  # 11 rows, the payload holds 10
            return b
        self.broken("shape", mutate, "holds 320 bytes, but its shape [11, 8] of float32 needs 352")

    def test_shape_against_model(self):
        def mutate(b):  # a (16, 8) matrix stored as (8, 16): same bytes, wrong shape
            name, dims_at, _, _, _ = [v for v in variables(bytes(b))
                                      if v[0] == "encoder/layer_0/ffn/linear_1/weight"][0]
            struct.pack_into("<II", b, dims_at, 16, 8)
            return b
        self.broken("shape2", mutate, "'encoder/layer_0/ffn/linear_1/weight' has shape [16, 8], the model's "
                    "dimensions imply [8, 16]")

    def test_add_source_bos_refused(self):
        d = tiny_dir(self.tmp, "post_float32.bin", "bos")
        with open(os.path.join(d, "config.json")) as f:
            cfg = json.load(f)
        cfg["add_source_bos"] = True
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(cfg, f)
        r = run_translate(d, self.IDS, "--output", "ids", input_kind="ids")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("add_source_bos true is not supported", r.stderr)

    def test_against_ctranslate2(self):
        """Random models written by CTranslate2's spec classes: the same greedy ids as CTranslate2.
        (They never emit eos, so every hypothesis meets the length limit, where the two searches
        differ by design: ours forces eos at the last step, CTranslate2 stops without it; beam 4
        is compared on models/en-de below.)"""
        py = peer_python()
        if not py:
            self.skipTest("needs the CTranslate2 peer in " + PEER)
        for seed in ("post_float32.bin", "post_float16.bin", "post_bfloat16.bin", "separate.bin", "pre_norm.bin",
                     "no-eos"):
            d = tiny_dir(self.tmp, "post_float32.bin" if seed == "no-eos" else seed, "cmp-" + seed.split(".")[0])
            if seed == "no-eos":  # trained without eos on the source: CTranslate2 adds none, we drop ours
                with open(os.path.join(d, "config.json")) as f:
                    cfg = json.load(f)
                cfg["add_source_eos"] = False
                with open(os.path.join(d, "config.json"), "w") as f:
                    json.dump(cfg, f)
            for beam in ("1",):
                with self.subTest(seed=seed, beam=beam):
                    ours = self.translate_ids(d, "--beam", beam)
                    ref = ct2_ids(py, d, [[int(t) for t in line.split()] for line in self.IDS], int(beam), 11)
                    self.assertEqual(ours, ref)
        # and the source eos matters: the same model with and without it translates differently
        self.assertNotEqual(self.translate_ids(os.path.join(self.tmp, "cmp-no-eos")),
                            self.translate_ids(os.path.join(self.tmp, "cmp-post_float32")))


def ct2_ids(py, model, sources, beam, max_decoding_length, compute_type="float32"):
    """CTranslate2's ids for source ids (eos appended by the model's config), one line each."""
    prog = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import ctranslate2
a = json.load(sys.stdin)
import os
shared = os.path.exists(a["model"] + "/shared_vocabulary.json")
vocab = json.load(open(a["model"] + ("/shared_vocabulary.json" if shared else "/source_vocabulary.json")))
index = {}
for i, t in enumerate(json.load(open(a["model"] + ("/shared_vocabulary.json" if shared else "/target_vocabulary.json")))):
    index.setdefault(t, i)
tr = ctranslate2.Translator(a["model"], device="cpu", compute_type=a["compute_type"], intra_threads=1)
res = tr.translate_batch([[vocab[i] for i in s] for s in a["sources"]], beam_size=a["beam"],
                         max_decoding_length=a["max_len"])
for r in res:
    print(" ".join(str(index[t]) for t in r.hypotheses[0]))
"""
    r = subprocess.run([py, "-c", prog, os.path.join(PEER, "python")], capture_output=True, text=True, timeout=600,
                       input=json.dumps({"model": model, "sources": sources, "beam": beam,
                                         "max_len": max_decoding_length, "compute_type": compute_type}))
    if r.returncode:
        raise AssertionError("CTranslate2: " + r.stderr)
    return r.stdout.splitlines()


class TestEnDe(unittest.TestCase):
    N = 100

    @classmethod
    def setUpClass(cls):
        py = peer_python()
        corpus = os.path.join(SHARED_DIR, "data", "multi30k", "test_2016_flickr.en.gz")
        if not py:
            raise unittest.SkipTest("needs the CTranslate2 peer in " + PEER)
        if not os.path.exists(corpus):
            raise unittest.SkipTest("needs " + corpus)
        if not os.path.exists(os.path.join(EN_DE, "model.safetensors")):
            raise unittest.SkipTest("needs models/en-de")
        if not os.path.exists(MT_TRANSLATE):
            raise unittest.SkipTest("mt-translate is not built in " + BUILD_DIR)
        import gzip
        with gzip.open(corpus, "rt") as f:
            cls.lines = [next(f).rstrip("\n") for _ in range(cls.N)]
        cls.tmp = tempfile.mkdtemp(prefix="test-ct2-ende-")
        cls.dirs = {}
        floats = float_weights(EN_DE, os.path.join(cls.tmp, "en-de-float32"))
        for q in ("float32", "int8"):
            d = os.path.join(cls.tmp, q)
            subprocess.run([py, os.path.join(PEER, "hf_to_ct2.py"), floats, d, "--quantization", q], check=True,
                           capture_output=True, timeout=300)
            with open(os.path.join(d, "shared_vocabulary.json")) as f:
                cls.tokens = json.load(f)
            write_tokenizer_files(d, cls.tokens)
            cls.dirs[q] = d
        cls.py = py

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def ours(self, model, beam, compute="float32"):
        r = run_translate(model, self.lines, "--output", "ids", "--beam", str(beam), "--compute-type", compute)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout.splitlines()

    def ct2(self, model, beam, compute):
        prog = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import ctranslate2, sentencepiece as spm
a = json.load(sys.stdin)
sp = spm.SentencePieceProcessor(model_file=a["model"] + "/source.spm")
index = {}
for i, t in enumerate(json.load(open(a["model"] + "/shared_vocabulary.json"))):
    index.setdefault(t, i)
tr = ctranslate2.Translator(a["model"], device="cpu", compute_type=a["compute"], intra_threads=1)
res = tr.translate_batch([sp.encode(l, out_type=str) for l in a["lines"]], beam_size=a["beam"],
                         max_decoding_length=255, max_batch_size=32)
for r in res:
    print(" ".join(str(index[t]) for t in r.hypotheses[0]))
"""
        r = subprocess.run([self.py, "-c", prog, os.path.join(PEER, "python")], capture_output=True, text=True,
                           timeout=600, input=json.dumps({"model": model, "lines": self.lines, "beam": beam,
                                                          "compute": compute}))
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout.splitlines()

    def test_float32_equals_our_directory(self):
        ref = self.ours(EN_DE, 4)
        got = self.ours(self.dirs["float32"], 4)
        self.assertEqual(len(got), self.N)
        same = sum(a == b for a, b in zip(got, ref))
        print("beam 4, CTranslate2 float32 directory vs models/en-de: %d/%d identical" % (same, self.N))
        self.assertEqual(got, ref)

    def test_bare_directory_in_place(self):
        """The float32 directory as CTranslate2 writes it, with only models/en-de's source.spm and
        target.spm beside it (no vocab.json, no tokenizer_config.json), read in place: beam 4 the
        ids of models/en-de, greedy CTranslate2's own."""
        bare = os.path.join(self.tmp, "bare-float32")
        os.makedirs(bare)
        for name in ("model.bin", "config.json", "shared_vocabulary.json"):
            shutil.copy(os.path.join(self.dirs["float32"], name), bare)
        for name in ("source.spm", "target.spm"):
            shutil.copy(os.path.join(EN_DE, name), bare)
        self.assertEqual(self.ours(bare + ":en:de", 4), self.ours(EN_DE, 4))
        got, ref = self.ours(bare + ":en:de", 1), self.ct2(self.dirs["float32"], 1, "float32")
        same = sum(a == b for a, b in zip(got, ref))
        print("greedy, bare CTranslate2 directory in place vs CTranslate2: %d/%d identical" % (same, self.N))
        self.assertEqual(got, ref)

    def test_float32_greedy_equals_ctranslate2(self):
        got, ref = self.ours(self.dirs["float32"], 1), self.ct2(self.dirs["float32"], 1, "float32")
        same = sum(a == b for a, b in zip(got, ref))
        print("greedy, ours vs CTranslate2 on its float32 directory: %d/%d identical" % (same, self.N))
        self.assertEqual(got, ref)

    def test_beam4_against_ctranslate2(self):
        got, ref = self.ours(self.dirs["float32"], 4), self.ct2(self.dirs["float32"], 4, "float32")
        same = sum(a == b for a, b in zip(got, ref))
        print("beam 4, ours vs CTranslate2 on its float32 directory: %d/%d identical" % (same, self.N))
        self.assertGreaterEqual(same, self.N * 9 // 10)

    def test_int8(self):
        """int8 products differ (CTranslate2 quantizes activations its own way): counted, with a floor."""
        d = self.dirs["int8"]
        wide = self.ours(d, 4, "float32")  # the int8 weights dequantized, float32 products
        ours, ref = self.ours(d, 1, "int8"), self.ct2(d, 1, "int8")
        same = sum(a == b for a, b in zip(ours, ref))
        same_wide = sum(a == b for a, b in zip(wide, self.ours(EN_DE, 4)))
        print("greedy int8, ours vs CTranslate2 on its int8 directory: %d/%d identical; beam 4 float32 on the "
              "dequantized weights vs models/en-de: %d/%d" % (same, self.N, same_wide, self.N))
        self.assertGreaterEqual(same, self.N * 8 // 10)
        self.assertGreaterEqual(same_wide, self.N * 8 // 10)


if __name__ == "__main__":
    sys.exit(testmain.run(__name__))
