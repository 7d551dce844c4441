#!/usr/bin/python3
"""Smoke test of tools/train.py: a tiny model trained for a few steps on 300
Multi30k pairs must produce a complete MarianMT directory that the C engine's
mt-translate (when built) loads and translates with.

Environment: MT_SOURCE_DIR (repository root), MT_SHARED_DIR (holds
data/multi30k), MT_BUILD_DIR (optional; cli/mt-translate is used from there).
Uses /usr/bin/python3 for training because Debian's torch lives there.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

SOURCE = os.environ.get("MT_SOURCE_DIR",
                        os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.environ.get("MT_SHARED_DIR") or os.path.join(SOURCE, "..", "shared")
BUILD = os.environ.get("MT_BUILD_DIR", "")
DATA = os.path.join(SHARED, "data", "multi30k")
PYTHON = "/usr/bin/python3"

sys.path.insert(0, os.path.join(SOURCE, "tools"))
import safetensors_io  # noqa: E402

FILES = ["config.json", "generation_config.json", "tokenizer_config.json",
         "special_tokens_map.json", "vocab.json", "source.spm", "target.spm",
         "model.safetensors"]
LAYER_PARAMS = {
    "encoder": ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.out_proj",
                "self_attn_layer_norm", "fc1", "fc2", "final_layer_norm"],
    "decoder": ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.out_proj",
                "self_attn_layer_norm", "encoder_attn.q_proj", "encoder_attn.k_proj",
                "encoder_attn.v_proj", "encoder_attn.out_proj", "encoder_attn_layer_norm",
                "fc1", "fc2", "final_layer_norm"],
}


class TrainSmoke(unittest.TestCase):
    """Trains once (setUpClass) and checks the resulting directory in several tests."""

    @classmethod
    def setUpClass(cls):
        if not os.path.exists(os.path.join(DATA, "train.en.gz")):
            raise unittest.SkipTest(f"no Multi30k data under {DATA}")
        cls.tmp = tempfile.mkdtemp(prefix="mt-train-smoke-")
        cls.model_dir = os.path.join(cls.tmp, "model")
        env = dict(os.environ, OPENBLAS_CORETYPE="SkylakeX")
        cmd = [PYTHON, os.path.join(SOURCE, "tools", "train.py"),
               "--train-src", os.path.join(DATA, "train.en.gz"),
               "--train-tgt", os.path.join(DATA, "train.de.gz"),
               "--valid-src", os.path.join(DATA, "val.en.gz"),
               "--valid-tgt", os.path.join(DATA, "val.de.gz"),
               "--out", cls.model_dir, "--run-dir", os.path.join(cls.tmp, "run"),
               "--max-train", "300", "--max-valid", "100", "--threads", "1",
               "--vocab-size", "500", "--d-model", "64", "--layers", "1", "--heads", "2",
               "--ffn", "128", "--max-tokens", "512",
               "--lr", "3e-3", "--warmup", "10", "--epochs", "6", "--average", "2",
               "--log-every", "10"]
        proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, timeout=600)
        cls.train_log = proc.stdout
        if proc.returncode != 0:
            raise RuntimeError(f"train.py failed ({proc.returncode}):\n{proc.stdout}")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(getattr(cls, "tmp", ""), ignore_errors=True)

    def test_directory_and_weights(self):
        for name in FILES:
            self.assertTrue(os.path.getsize(os.path.join(self.model_dir, name)) > 0, name)
        cfg = json.load(open(os.path.join(self.model_dir, "config.json")))
        gen = json.load(open(os.path.join(self.model_dir, "generation_config.json")))
        vocab = json.load(open(os.path.join(self.model_dir, "vocab.json"), encoding="utf-8"))
        v, pad = cfg["vocab_size"], cfg["pad_token_id"]
        self.assertEqual(pad, v - 1)
        self.assertEqual(vocab["<pad>"], pad)
        self.assertEqual((vocab["</s>"], vocab["<unk>"]), (0, 1))
        self.assertEqual(sorted(vocab.values()), list(range(v)))
        self.assertEqual((gen["decoder_start_token_id"], gen["eos_token_id"]), (pad, 0))

        header, _ = safetensors_io.read_header(os.path.join(self.model_dir, "model.safetensors"))
        self.assertEqual(header.pop("__metadata__"), {"format": "pt"})
        want = {"model.shared.weight", "final_logits_bias"}
        for stack, n in (("encoder", cfg["encoder_layers"]), ("decoder", cfg["decoder_layers"])):
            for i in range(n):
                for p in LAYER_PARAMS[stack]:
                    want |= {f"model.{stack}.layers.{i}.{p}.weight",
                             f"model.{stack}.layers.{i}.{p}.bias"}
        self.assertEqual(set(header), want)
        self.assertEqual(header["model.shared.weight"]["shape"], [v, cfg["d_model"]])
        self.assertEqual(header["final_logits_bias"]["shape"], [1, v])
        for name, info in header.items():
            if name != "final_logits_bias":
                self.assertEqual(info["dtype"], "F16", name)
        weights = safetensors_io.read(os.path.join(self.model_dir, "model.safetensors"))
        self.assertFalse(weights["model.shared.weight"][pad].any(), "pad row must stay zero")

    def test_training_logged_selection(self):
        self.assertIn("end of epoch 6", self.train_log)
        self.assertIn("selected ", self.train_log)

    def run_train(self, extra, run_dir, out):
        cmd = [PYTHON, os.path.join(SOURCE, "tools", "train.py"),
               "--train-src", os.path.join(DATA, "train.en.gz"),
               "--train-tgt", os.path.join(DATA, "train.de.gz"),
               "--valid-src", os.path.join(DATA, "val.en.gz"),
               "--valid-tgt", os.path.join(DATA, "val.de.gz"),
               "--out", out, "--run-dir", run_dir,
               "--max-train", "300", "--max-valid", "100", "--threads", "1",
               "--d-model", "64", "--layers", "1", "--heads", "2", "--ffn", "128",
               "--max-tokens", "512", "--lr", "3e-3", "--epochs", "2", "--average", "2",
               "--log-every", "10"] + extra
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=600)
        self.assertEqual(proc.returncode, 0, proc.stdout)
        return proc.stdout

    def test_continue_from_the_shipped_directory(self):
        """--init-from continues a model directory on a 'fresh machine' (no run dir): same
        vocabulary, weights loaded, schedule position carried in training.json; timed
        checkpoints inside an epoch, and --resume picks up mid-epoch."""
        first = json.load(open(os.path.join(self.model_dir, "training.json")))
        self.assertGreater(first["steps"], 0)
        out = os.path.join(self.tmp, "continued")
        log = self.run_train(["--init-from", self.model_dir, "--warmup", "5", "--max-steps", "7",
                              "--checkpoint-min", "0.0001"], os.path.join(self.tmp, "run2"), out)
        self.assertIn(f"initialised from {self.model_dir} ({first['steps']} earlier steps)", log)
        self.assertIn("(in epoch 1)", log)
        second = json.load(open(os.path.join(out, "training.json")))
        self.assertEqual(second["steps"], first["steps"] + 7)
        self.assertEqual(len(second["runs"]), 2)
        self.assertTrue(second["runs"][1]["init_from"])
        self.assertEqual(open(os.path.join(out, "source.spm"), "rb").read(),
                         open(os.path.join(self.model_dir, "source.spm"), "rb").read())
        log = self.run_train(["--init-from", self.model_dir, "--warmup", "5", "--resume",
                              "--max-steps", "9"], os.path.join(self.tmp, "run2"), out)
        self.assertIn("resumed from checkpoint", log)
        self.assertIn("batch 7 step 7", log)
        third = json.load(open(os.path.join(out, "training.json")))
        self.assertEqual(third["steps"], first["steps"] + 9)
        # Another run in the same run directory starts clean: the earlier run's snapshots
        # are not averaged into its selection.
        log = self.run_train(["--init-from", self.model_dir, "--warmup", "5", "--max-steps", "2"],
                             os.path.join(self.tmp, "run2"), out)
        self.assertIn("checkpoints and snapshots of an earlier run", log)
        left = sorted(os.listdir(os.path.join(self.tmp, "run2")))
        self.assertEqual([n for n in left if n.startswith("weights_")], ["weights_0001.pt"], left)

    def test_continue_from_a_cut_short_directory(self):
        """A directory written at a checkpoint of a run that never finished (its
        training.json has "this_run", no entry in "runs") is continued with that run
        counted: it becomes a "cut_short" entry of "runs", and the steps go on from it."""
        first = json.load(open(os.path.join(self.model_dir, "training.json")))
        cut = os.path.join(self.tmp, "cut-short")
        shutil.copytree(self.model_dir, cut)
        cut_json = dict(first, steps=first["steps"] + 4,
                        this_run={"steps": 4, "target_tokens": 100, "minutes": 0.1,
                                  "init_from": True})
        with open(os.path.join(cut, "training.json"), "w") as f:
            json.dump(cut_json, f)
        out = os.path.join(self.tmp, "after-cut")
        log = self.run_train(["--init-from", cut, "--warmup", "5", "--max-steps", "3"],
                             os.path.join(self.tmp, "run3"), out)
        self.assertIn(f"({first['steps'] + 4} earlier steps)", log)
        after = json.load(open(os.path.join(out, "training.json")))
        self.assertEqual(after["steps"], first["steps"] + 4 + 3)
        self.assertEqual(len(after["runs"]), len(first["runs"]) + 2, after["runs"])
        self.assertEqual(after["runs"][-2], dict(cut_json["this_run"], cut_short=True))
        self.assertEqual(after["runs"][-1]["steps"], 3)
        self.assertNotIn("this_run", after)

    def mt_translate(self, args, stdin):
        exe = os.path.join(BUILD, "cli", "mt-translate") if BUILD else ""
        if not (exe and os.access(exe, os.X_OK)):
            self.skipTest("mt-translate not built")
        return subprocess.run([exe, "--model", self.model_dir] + args, input=stdin,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=120)

    def test_mt_translate_runs(self):
        lines = ["A man is riding a bike.", "Two dogs play in the snow.", "A girl is smiling."]
        proc = self.mt_translate(["--max-length", "40"], "\n".join(lines) + "\n")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        out = proc.stdout.split("\n")
        self.assertEqual(out[-1], "", "output must end with a newline")
        self.assertEqual(len(out) - 1, len(lines), proc.stdout)
        for line in out[:-1]:
            self.assertTrue(line.strip(), f"empty translation in {proc.stdout!r}")

    def test_engine_greedy_matches_pytorch(self):
        """Teacher-force the engine's greedy ids through the PyTorch model built from
        the same F16 weights: every chosen id must be an argmax up to rounding, and
        stopping early must mean eos was an argmax."""
        import sentencepiece as spm
        import torch
        from transformer import MarianTransformer
        cfg = json.load(open(os.path.join(self.model_dir, "config.json")))
        sp = spm.SentencePieceProcessor(model_file=os.path.join(self.model_dir, "source.spm"))
        srcs = [sp.encode(t) for t in ("A man is riding a bike.", "Two dogs play in the snow.")]
        max_len = 20
        proc = self.mt_translate(["--beam", "1", "--max-length", str(max_len),
                                  "--input", "ids", "--output", "ids"],
                                 "".join(" ".join(map(str, s)) + "\n" for s in srcs))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        outs = [[int(x) for x in line.split()] for line in proc.stdout.splitlines()]
        self.assertEqual(len(outs), len(srcs), proc.stdout)

        pad = cfg["pad_token_id"]
        model = MarianTransformer(cfg["vocab_size"], pad, cfg["d_model"], cfg["encoder_layers"],
                                  cfg["decoder_layers"], cfg["encoder_attention_heads"],
                                  cfg["encoder_ffn_dim"], 0.0, 0.0,
                                  cfg["max_position_embeddings"]).eval()
        weights = safetensors_io.read(os.path.join(self.model_dir, "model.safetensors"))
        model.load_state_dict({k: torch.from_numpy(v.astype("float32"))
                               for k, v in weights.items()})
        for src, ids in zip(srcs, outs):
            with torch.no_grad():
                h = model(torch.tensor([src + [0]]), torch.tensor([[pad] + ids]))
                logits = model.logits(h)[0]
            logits[:, pad] = float("-inf")
            best = logits.max(dim=1).values
            for t, tok in enumerate(ids):
                self.assertGreater(logits[t, tok].item(), best[t].item() - 1e-2,
                                   f"step {t}: engine chose {tok}, PyTorch max {best[t]}")
            if len(ids) < max_len - 1:
                self.assertGreater(logits[len(ids), 0].item(), best[len(ids)].item() - 1e-2,
                                   "engine stopped but eos is not the argmax")


def write_gz(path, lines):
    import gzip
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.writelines(line + "\n" for line in lines)


def fake_shared(root, x="fr"):
    """A ../shared/data tree with a few pairs in each file prepare_corpus.py reads."""
    d = os.path.join(root, "data")
    for split in ("val", "test_2016_flickr", "train"):
        write_gz(f"{d}/multi30k/{split}.en.gz", [f"A dog runs {split}.", "Two men talk."])
        write_gz(f"{d}/multi30k/{split}.{x}.gz", [f"Un chien court {split}.", "Deux hommes parlent."])
    write_gz(f"{d}/tatoeba/dev.en-{x}.tsv.gz", ["I am tired.\tJe suis fatigué."])
    write_gz(f"{d}/debian-l10n/dev.en-{x}.tsv.gz", ["Open file\tOuvrir le fichier"])
    write_gz(f"{d}/tatoeba/train.en-{x}.tsv.gz", [
        "He is 27 years old.\tIl a 27 ans.",  # tools/data/numbers.en-fr.tsv: held out
        "I was born in 1990.\tJe suis né en 1990.",
        "Tom is here.\tTom est là.",
        "Did you say 30?\tAs-tu dit trente ?"])
    write_gz(f"{d}/debian-l10n/train.en-{x}.tsv.gz", [
        "256 Samples\t255 échantillons\tgettext:x",  # numbers disagree: dropped
        "Page 3 of 12\tPage 3 sur 12\tgettext:x",
        "%1 files\t%1 fichiers\tgettext:x",  # a placeholder, no number copies
        "Save as\tEnregistrer sous\tgettext:x"])


class PrepareCorpus(unittest.TestCase):
    """tools/prepare_corpus.py's mixture: no Multi30k unless asked, evaluation sentences
    (tools/data too) held out, pairs with disagreeing numbers dropped, number copies."""

    def test_mixture(self):
        with tempfile.TemporaryDirectory() as tmp:
            fake_shared(tmp)
            news = os.path.join(tmp, "news.en-fr.tsv")
            with open(news, "w", encoding="utf-8") as f:
                f.write("Tom is here.\tTom est ici.\n")  # the English side of a Tatoeba pair
            out = os.path.join(tmp, "mix")
            proc = subprocess.run([PYTHON, os.path.join(SOURCE, "tools", "prepare_corpus.py"),
                                   "--shared", tmp, "--out", out, "--lang", "fr", "--held-out", news,
                                   "--tatoeba-times", "1", "--symbol-pairs", "0",
                                   "--number-pairs", "50", "--skip-vocab"],
                                  capture_output=True, text=True, timeout=300)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            import gzip
            with gzip.open(os.path.join(out, "train.en.gz"), "rt", encoding="utf-8") as f:
                en = f.read().splitlines()
            with gzip.open(os.path.join(out, "train.fr.gz"), "rt", encoding="utf-8") as f:
                fr = f.read().splitlines()
            with open(os.path.join(out, "mixture.json"), encoding="utf-8") as f:
                mix = json.load(f)
        self.assertNotIn("multi30k", mix["corpora"])
        self.assertFalse([e for e in en if "dog" in e or "men" in e], "Multi30k by default")
        self.assertNotIn("He is 27 years old.", en)
        self.assertNotIn("Tom is here.", en)  # held out by the --held-out file
        self.assertNotIn("256 Samples", en)
        self.assertEqual(mix["corpora"]["debian-l10n"]["dropped_numbers_disagree"], 1)
        self.assertEqual(mix["corpora"]["number copies"]["pairs"], 50)
        self.assertIn("Did you say 30?", en)  # spelled out on one side: a translation
        self.assertEqual(len(en), 2 + 3 + 50)  # Tatoeba, debian-l10n, copies
        import re
        copies = [(e, t) for e, t in zip(en, fr) if e.startswith(("I was born in ", "Page "))
                  and (e, t) not in {("I was born in 1990.", "Je suis né en 1990."),
                                     ("Page 3 of 12", "Page 3 sur 12")}]
        self.assertEqual(len(copies), 50)
        for e, t in copies:
            self.assertEqual(sorted(re.findall(r"\d+", e)), sorted(re.findall(r"\d+", t)), (e, t))
            self.assertRegex(e, r"^(I was born in \d+\.|Page \d+ of \d+)$")
        self.assertGreater(len({e for e, _ in copies}), 25, "the numbers must vary")
        self.assertFalse([e for e in en if e.startswith("%") and e != "%1 files"])

    def test_times_12_and_24_hour_agree(self):
        """The number check takes a clock time written the English 12-hour way and the
        24-hour way as one number (BConTrasT: "6:55 pm" / "18:55 Uhr", 778 pairs dropped
        before), and still drops an hour that differs or a time of unclear half-day."""
        import gzip
        kept = [("It starts at 6:55 pm.", "Es beginnt um 18:55 Uhr."),
                ("Come at 7 pm.", "Komm um 19 Uhr."),
                ("The bus leaves at 9am.", "Der Bus fährt um 09:00 Uhr."),
                ("After 8:00 p.m. today, 4 people.", "Heute nach 20 Uhr, 4 Personen."),
                ("Breakfast at 7:00.", "Frühstück um 7 Uhr."),
                ("Shows at 10:15PM.", "Vorstellung um 22.15 Uhr."),
                ("Midnight is 12 a.m.", "Mitternacht ist 0 Uhr."),
                ("Shows at 7, 8 and 9pm.", "Vorstellungen um 19, 20 und 21 Uhr."),  # lists
                ("Open 11:30am to 9pm.", "Geöffnet von 11.30 bis 21.00 Uhr.")]
        dropped = [("Meet me at 7 pm.", "Triff mich um 18 Uhr."),  # an hour early
                   ("Yes, 6:30 would be okay.", "Ja, 18:30 Uhr wäre in Ordnung."),  # no pm
                   ("At 9:00 p.m. for 4 people.", "Um 21 Uhr für 5 Personen."),
                   ("256 Samples", "255 Proben"),
                   ("Open from 7 to 10 pm.", "Geöffnet von 18 bis 22 Uhr."),
                   ("The party is 12 am to 3.", "Die Feier ist 12 am Ende.")]  # German "am"
        with tempfile.TemporaryDirectory() as tmp:
            fake_shared(tmp, "de")
            extra = os.path.join(tmp, "chat.en-de.tsv.gz")
            write_gz(extra, [f"{e}\t{x}\tchat" for e, x in kept + dropped])
            out = os.path.join(tmp, "mix")
            proc = subprocess.run([PYTHON, os.path.join(SOURCE, "tools", "prepare_corpus.py"),
                                   "--shared", tmp, "--out", out, "--lang", "de",
                                   "--extra", extra, "--symbol-pairs", "0",
                                   "--number-pairs", "0", "--skip-vocab"],
                                  capture_output=True, text=True, timeout=300)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            with gzip.open(os.path.join(out, "train.en.gz"), "rt", encoding="utf-8") as f:
                en = f.read().splitlines()
            with open(os.path.join(out, "mixture.json"), encoding="utf-8") as f:
                mix = json.load(f)
        for e, _ in kept:
            self.assertIn(e, en)
        for e, _ in dropped:
            self.assertNotIn(e, en)
        self.assertEqual(mix["corpora"]["chat"]["dropped_numbers_disagree"], len(dropped))
        import prepare_corpus
        self.assertFalse(prepare_corpus.numbers_disagree("At 7:30 p.m.", "À 19h30."))
        self.assertFalse(prepare_corpus.numbers_disagree("At 7 pm.", "À 19 heures."))
        self.assertTrue(prepare_corpus.numbers_disagree("At 7:30 p.m.", "À 19h45."))


class TrainGpuScript(unittest.TestCase):
    """tools/train_gpu.sh end to end on the CPU (DEVICE=cpu), as the GPU session runs it:
    two mixtures packed into one pack, four directions trained at once by a tiny model,
    the int8 export cut into parts that come back together, each model with the record
    of its mixture (mixture.json, which eval_models.py's everyday-unseen reads)."""

    def test_four_directions_from_one_pack(self):
        import gzip
        import re
        import sentencepiece as spm
        with tempfile.TemporaryDirectory() as tmp:
            specs, spms = [], []
            for x in ("fr", "de"):
                shared = os.path.join(tmp, f"shared-{x}")
                fake_shared(shared, x)
                data = os.path.join(tmp, f"mix-{x}")
                proc = subprocess.run([PYTHON, os.path.join(SOURCE, "tools", "prepare_corpus.py"),
                                       "--shared", shared, "--out", data, "--lang", x,
                                       "--number-pairs", "200", "--symbol-pairs", "50",
                                       "--skip-vocab"], capture_output=True, text=True, timeout=300)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                text = []
                for side in ("en", x):
                    with gzip.open(os.path.join(data, f"train.{side}.gz"), "rt", encoding="utf-8") as f:
                        text += f.read().splitlines()
                spm.SentencePieceTrainer.train(
                    sentence_iterator=iter(text), model_prefix=os.path.join(data, "spm"),
                    vocab_size=700, model_type="unigram", bos_id=-1, eos_id=0, unk_id=1,
                    pad_id=-1, hard_vocab_limit=False, byte_fallback=True, split_digits=True,
                    minloglevel=2)
                specs += ["--pack", f"{x}={data}"]
                spms += ["--spm", f"{x}={os.path.join(data, 'spm.model')}"]
            pack = os.path.join(tmp, "pack")
            proc = subprocess.run([PYTHON, os.path.join(SOURCE, "tools", "pack_training_data.py"),
                                   *specs, *spms, "--omit-copies", "--to", pack],
                                  capture_output=True, text=True, timeout=300)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            meta = json.loads(proc.stdout)
            self.assertEqual(sorted(meta["langs"]), ["de", "fr"])
            # Tatoeba x2 and debian-l10n packed; number copies and the symbol copies of
            # both made again on unpacking
            self.assertEqual(meta["langs"]["fr"]["pairs"], 3 * 2 + 3)
            self.assertEqual(meta["langs"]["fr"]["copies_to_make"],
                             {"seed": 1, "symbol": 2 * 50, "number": 200})
            out, export = os.path.join(tmp, "out"), os.path.join(tmp, "export")
            env = dict(os.environ, DEVICE="cpu", THREADS="1", PYTHON=PYTHON,
                       OPENBLAS_CORETYPE="SkylakeX")
            proc = subprocess.run(["bash", os.path.join(SOURCE, "tools", "train_gpu.sh"),
                                   "--pack", pack, "--pairs", "en-fr fr-en en-de de-en",
                                   "--minutes", "0.4", "--size", "32 2 1 2 64",
                                   "--max-tokens", "256", "--warmup", "10", "--lr", "3e-3",
                                   "--out", out, "--export", export],
                                  capture_output=True, text=True, timeout=600, env=env)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            for x in ("fr", "de"):
                self.assertIn(f"made 300 copy pairs for en-{x} again", proc.stdout)
            for pair in ("en-fr", "fr-en", "en-de", "de-en"):
                with open(os.path.join(out, pair, "train.log"), encoding="utf-8") as f:
                    log = f.read()
                self.assertIn("selected", log)
                # 309 but for a pair whose side the tiny vocabulary encodes as nothing
                self.assertGreaterEqual(int(re.search(r"train pairs (\d+)", log).group(1)), 300)
            self.assertEqual(sorted(os.listdir(export)),
                             ["de-en.tar.xz", "en-de.tar.xz", "en-fr.tar.xz", "fr-en.tar.xz"])
            restored = os.path.join(tmp, "restored")
            os.makedirs(restored)
            for pair in ("en-fr", "fr-en", "en-de", "de-en"):
                proc = subprocess.run(["tar", "-xJf", os.path.join(export, f"{pair}.tar.xz"),
                                       "-C", restored], capture_output=True, text=True, timeout=120)
                self.assertEqual(proc.returncode, 0, proc.stderr)
            for pair in ("en-fr", "fr-en", "en-de", "de-en"):
                d = os.path.join(restored, pair)
                for name in FILES + ["train.log", "training.json", "mixture.json"]:
                    self.assertTrue(os.path.exists(os.path.join(d, name)), (pair, name))
                x = pair.replace("en", "").strip("-")
                with open(os.path.join(d, "mixture.json"), encoding="utf-8") as f:
                    record = json.load(f)
                with open(os.path.join(tmp, f"mix-{x}", "mixture.json"), encoding="utf-8") as f:
                    self.assertEqual(record, json.load(f), pair)
                import training_record
                corpora, how = training_record.trained_corpora(d)
                self.assertEqual(sorted(corpora), ["debian-l10n", "tatoeba"], pair)
                self.assertIn("recorded in", how)
                header, _ = safetensors_io.read_header(os.path.join(d, "model.safetensors"))
                self.assertEqual(header["model.shared.weight"]["dtype"], "I8", pair)
                with open(os.path.join(d, "tokenizer_config.json"), encoding="utf-8") as f:
                    cfg = json.load(f)
                self.assertEqual(f"{cfg['source_lang']}-{cfg['target_lang']}", pair)
                exe = os.path.join(BUILD, "cli", "mt-translate") if BUILD else ""
                if exe and os.path.exists(exe):
                    run = subprocess.run([exe, "--model", d, "--max-length", "8"],
                                         input="Page 3 of 12\n", capture_output=True,
                                         text=True, timeout=120)
                    self.assertEqual(run.returncode, 0, run.stderr)



class TrainCpuScript(unittest.TestCase):
    """tools/train_cpu.sh, the CPU route across sessions: a first call trains from scratch
    and leaves a model directory with the record of its mixture; a second call resumes
    from the first one's checkpoint (same schedule, more steps), not from scratch."""

    def test_resumes_across_calls(self):
        import gzip
        import shutil
        import sentencepiece as spm
        with tempfile.TemporaryDirectory() as tmp:
            shared = os.path.join(tmp, "shared")
            fake_shared(shared, "fr")
            data = os.path.join(tmp, "data")
            mix = os.path.join(data, "mix-fr-d20")
            proc = subprocess.run([PYTHON, os.path.join(SOURCE, "tools", "prepare_corpus.py"),
                                   "--shared", shared, "--out", mix, "--lang", "fr",
                                   "--number-pairs", "200", "--symbol-pairs", "50", "--skip-vocab"],
                                  capture_output=True, text=True, timeout=300)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            text = []
            for side in ("en", "fr"):
                with gzip.open(os.path.join(mix, f"train.{side}.gz"), "rt", encoding="utf-8") as f:
                    text += f.read().splitlines()
            pack = os.path.join(data, "pack-d20")
            os.makedirs(pack)
            spm.SentencePieceTrainer.train(
                sentence_iterator=iter(text), model_prefix=os.path.join(pack, "fr.spm"),
                vocab_size=700, model_type="unigram", bos_id=-1, eos_id=0, unk_id=1,
                pad_id=-1, hard_vocab_limit=False, byte_fallback=True, split_digits=True,
                minloglevel=2)
            shutil.copy(os.path.join(mix, "mixture.json"), os.path.join(pack, "fr.mixture.json"))
            root = os.path.join(tmp, "cpu")
            env = dict(os.environ, PYTHON=PYTHON)

            def call(epochs):
                # the epochs end each call (the time is only a bound): on an idle machine a
                # time budget alone let the first call finish every epoch of this tiny data,
                # and the second had nothing left to do
                return subprocess.run(["bash", os.path.join(SOURCE, "tools", "train_cpu.sh"),
                                       "--pairs", "en-fr", "--minutes", "3", "--epochs", str(epochs),
                                       "--data", data, "--root", root, "--size", "32 2 1 2 64"],
                                      capture_output=True, text=True, timeout=600, env=env)

            def record():
                with open(os.path.join(root, "en-fr", "training.json"), encoding="utf-8") as f:
                    return json.load(f)

            def steps():
                return record()["steps"]

            proc = call(1)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            self.assertIn("en-fr from scratch", proc.stdout)
            model = os.path.join(root, "en-fr")
            for name in FILES + ["training.json", "mixture.json"]:
                self.assertTrue(os.path.exists(os.path.join(model, name)), name)
            with open(os.path.join(model, "mixture.json"), encoding="utf-8") as f:
                with open(os.path.join(mix, "mixture.json"), encoding="utf-8") as g:
                    self.assertEqual(json.load(f), json.load(g))
            first = steps()
            self.assertGreater(first, 0)
            first_run = record()["runs"][-1]
            self.assertEqual(first_run["calls"], 1)
            proc = call(3)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            self.assertIn("en-fr --resume", proc.stdout)
            with open(os.path.join(root, "en-fr.log"), encoding="utf-8") as f:
                self.assertIn("resumed from checkpoint", f.read())
            self.assertGreater(steps(), first)
            # one run over two calls: one record counting both calls' minutes
            runs = record()["runs"]
            self.assertEqual(len(runs), 1, runs)
            self.assertEqual(runs[0]["calls"], 2)
            self.assertGreater(runs[0]["minutes"], first_run["minutes"])
            # a missing mixture is named, not a Python traceback
            proc = subprocess.run(["bash", os.path.join(SOURCE, "tools", "train_cpu.sh"),
                                   "--pairs", "de-en", "--data", data, "--root", root],
                                  capture_output=True, text=True, timeout=60, env=env)
            self.assertEqual(proc.returncode, 2)
            self.assertIn("mix-de-d20/train.de.gz is missing", proc.stderr)

def read_everyday(x):
    with open(os.path.join(SOURCE, "tools", "data", f"everyday.en-{x}.tsv"), encoding="utf-8") as f:
        return [tuple(line.rstrip("\n").split("\t")[:2]) for line in f if line.strip()]


class BuildBundledModelsScript(unittest.TestCase):
    """tools/build_bundled_models.sh's mixture: no Multi30k unless --multi30k-times asks
    (issue 28: its licence is non-commercial), and a warning naming that licence when it
    does; a vocabulary with byte fallback for every pair. Run from a copy of the script in a scratch tree (it writes runs/ beside tools/)
    with --prepare-only, on fake_shared's tiny corpora."""

    def run_script(self, tmp, *args, cont=True):
        tools = os.path.join(tmp, "repo", "tools")
        if not os.path.isdir(tools):
            os.makedirs(tools)
            shutil.copy(os.path.join(SOURCE, "tools", "build_bundled_models.sh"), tools)
            for name in ("prepare_corpus.py", "training_record.py", "data"):
                os.symlink(os.path.join(SOURCE, "tools", name), os.path.join(tools, name))
            fake_shared(os.path.join(tmp, "shared"), "de")
            # the models --continue starts from: their vocabulary, with byte fallback
            self.vocabulary(os.path.join(tmp, "repo", "models", "en-de"), True)
        env = dict(os.environ, MT_SHARED_DIR=os.path.join(tmp, "shared"))
        # --continue: the data without a vocabulary (16k pieces need more than tiny data)
        return subprocess.run(["bash", os.path.join(tools, "build_bundled_models.sh"),
                               *(["--continue"] if cont else []), "--prepare-only", *args],
                              capture_output=True, text=True, timeout=300, env=env)

    @staticmethod
    def vocabulary(model_dir, byte_fallback):
        """A tiny model directory's source.spm, with or without byte fallback."""
        import sentencepiece as spm
        os.makedirs(model_dir, exist_ok=True)
        text = ["Tom is here.", "Tom ist hier.", "Save as", "Speichern unter", "Page 3 of 12"]
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(text * 20), model_prefix=os.path.join(model_dir, "source"),
            vocab_size=320, model_type="unigram", bos_id=-1, eos_id=0, unk_id=1, pad_id=-1,
            hard_vocab_limit=False, byte_fallback=byte_fallback, minloglevel=2)
        os.replace(os.path.join(model_dir, "source.model"), os.path.join(model_dir, "source.spm"))

    def mixture(self, tmp, proc):
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        data = os.path.join(tmp, "repo", proc.stdout.strip().splitlines()[-1])
        with open(os.path.join(data, "mixture.json"), encoding="utf-8") as f:
            return os.path.basename(data), json.load(f)["corpora"]

    def test_no_multi30k_unless_asked(self):
        with tempfile.TemporaryDirectory() as tmp:
            proc = self.run_script(tmp)
            name, corpora = self.mixture(tmp, proc)
            self.assertEqual(name, "data-de")
            self.assertNotIn("multi30k", corpora)
            self.assertEqual(corpora["tatoeba"]["times"], 2)
            self.assertNotIn("non-commercial", proc.stderr)
            proc = self.run_script(tmp, "--multi30k-times", "3")
            name, corpora = self.mixture(tmp, proc)
            self.assertEqual(name, "data-de-m30k3")
            self.assertEqual(corpora["multi30k"]["times"], 3)
            self.assertRegex(proc.stderr, r"warning: --multi30k-times 3 trains on Multi30k, "
                                          r"whose licence is non-commercial")
            proc = self.run_script(tmp, "--multi30k-times", "x")
            self.assertEqual(proc.returncode, 2)
            self.assertIn("--multi30k-times: a count, not 'x'", proc.stderr)

    def test_byte_fallback_for_every_pair(self):
        """A from-scratch en-de vocabulary has byte fallback, as en-fr's (issue 28: emoji
        and symbols come back as themselves); only --continue from a model whose
        vocabulary lacks it keeps that kind, without symbol copies, in its own directory."""
        import sentencepiece as spm
        with tempfile.TemporaryDirectory() as tmp:
            # 300: the byte pieces, the tiny corpora's characters and a few more (at most 302)
            proc = self.run_script(tmp, "--vocab-size", "300", cont=False)
            name, corpora = self.mixture(tmp, proc)
            data = os.path.join(tmp, "repo", "runs", name)
            self.assertEqual(name, "data-de")
            sp = spm.SentencePieceProcessor(model_file=os.path.join(data, "spm.model"))
            self.assertEqual(sum(sp.IsByte(i) for i in range(sp.GetPieceSize())), 256)
            self.assertNotIn(1, sp.encode("Tom 🙂"), "an emoji is <unk>")  # <unk> is id 1
            with open(os.path.join(data, "mixture.json"), encoding="utf-8") as f:
                self.assertTrue(json.load(f)["byte_fallback"])
            self.assertIn("tatoeba symbol copies", corpora)
            # --continue from a vocabulary without byte pieces (the en-de shipped so far)
            old = os.path.join(tmp, "repo", "old-models", "en-de")
            self.vocabulary(old, False)
            proc = self.run_script(tmp, "--continue-from", os.path.dirname(old))
            name, corpora = self.mixture(tmp, proc)
            self.assertEqual(name, "data-de-nobf")
            with open(os.path.join(tmp, "repo", "runs", name, "mixture.json"), encoding="utf-8") as f:
                self.assertFalse(json.load(f)["byte_fallback"])
            self.assertFalse([c for c in corpora if c.endswith("symbol copies")])
            # and from one with byte pieces: the byte-fallback mixture
            proc = self.run_script(tmp)
            name, corpora = self.mixture(tmp, proc)
            self.assertEqual(name, "data-de")
            self.assertIn("tatoeba symbol copies", corpora)

    def test_help_says_the_default(self):
        proc = subprocess.run(["bash", os.path.join(SOURCE, "tools", "build_bundled_models.sh"),
                               "--help"], capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("--multi30k-times N   copies of Multi30k in the mixture (default 0",
                      proc.stderr)
        self.assertIn("--prepare-only", proc.stderr)
        self.assertNotIn("set -euo", proc.stderr)


class EvalModelsUnseen(unittest.TestCase):
    """tools/eval_models.py's everyday-unseen set leaves out the everyday pairs a line of
    the model's own training corpora holds: those its record (mixture.json, from
    prepare_corpus.py through training_record.py) names, earlier runs' included, else
    Tatoeba and debian-l10n train; Multi30k only when the record names it. mt-translate
    is a stand-in that echoes (the set's size is what is checked)."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="mt-eval-unseen-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        ev = read_everyday("de")
        self.total = len(ev)
        self.shared = os.path.join(self.tmp, "shared")
        fake_shared(self.shared, "de")
        d = os.path.join(self.shared, "data")
        # One everyday sentence in each training corpus (English or German side).
        write_gz(f"{d}/multi30k/train.en.gz", ["A dog runs.", ev[0][0]])
        write_gz(f"{d}/multi30k/train.de.gz", ["Ein Hund rennt.", "Etwas anderes."])
        write_gz(f"{d}/tatoeba/train.en-de.tsv.gz", ["Tom is here.\tTom ist da.",
                                                     f"Something else.\t{ev[1][1]}"])
        write_gz(f"{d}/debian-l10n/train.en-de.tsv.gz", [
            "Quit the program\tProgramm beenden\tgettext:x", f"{ev[2][0]}\tAnders\tgettext:x"])
        self.extra = os.path.join(self.tmp, "corpus", "testcorpus.en-de.tsv.gz")
        write_gz(self.extra, ["List files\tDateien auflisten\tman:ls",
                              f"{ev[3][0]}\tAnders\tman:x"])
        stub = os.path.join(self.tmp, "build", "cli", "mt-translate")
        os.makedirs(os.path.dirname(stub))
        with open(stub, "w") as f:
            f.write("#!/bin/sh\nexec cat\n")
        os.chmod(stub, 0o755)
        self.env = dict(os.environ, MT_SHARED_DIR=self.shared,
                        MT_BUILD_DIR=os.path.join(self.tmp, "build"))

    def model(self, name, *prepare_args, earlier=None):
        """A model directory (only what eval_models.py reads of one) with the record of
        data prepared with prepare_args, or no record without them."""
        d = os.path.join(self.tmp, name)
        os.makedirs(d)
        with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
            json.dump({"source_lang": "en", "target_lang": "de"}, f)
        if prepare_args:
            data = os.path.join(self.tmp, "data-" + name)
            proc = subprocess.run([PYTHON, os.path.join(SOURCE, "tools", "prepare_corpus.py"),
                                   "--shared", self.shared, "--out", data, "--lang", "de",
                                   "--symbol-pairs", "0", "--number-pairs", "0", "--skip-vocab",
                                   *prepare_args], capture_output=True, text=True, timeout=300)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            proc = subprocess.run([PYTHON, os.path.join(SOURCE, "tools", "training_record.py"),
                                   os.path.join(data, "mixture.json"), d,
                                   *(["--earlier", earlier] if earlier else [])],
                                  capture_output=True, text=True, timeout=60)
            self.assertEqual(proc.returncode, 0, proc.stderr)
        return d

    def unseen(self, model_dir):
        proc = subprocess.run([PYTHON, os.path.join(SOURCE, "tools", "eval_models.py"),
                               f"m={model_dir}", "--sets", "everyday,everyday-unseen",
                               "--beam", "1"],
                              capture_output=True, text=True, timeout=300, env=self.env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn(f"# m everyday: {self.total} lines", proc.stderr)
        got = re.search(r"# m everyday-unseen: (\d+) lines", proc.stderr)
        return (int(got.group(1)) if got else None), proc.stderr, proc.stdout

    def test_without_a_record_multi30k_is_not_training_data(self):
        n, err, _ = self.unseen(self.model("plain"))
        self.assertEqual(n, self.total - 2, err)  # Tatoeba's and debian-l10n's, not Multi30k's
        self.assertIn("seen = debian-l10n, tatoeba (no ", err)

    def test_the_record_names_the_corpora(self):
        n, err, _ = self.unseen(self.model("free", "--extra", f"{self.extra}:2"))
        self.assertEqual(n, self.total - 3, err)
        self.assertIn("seen = debian-l10n, tatoeba, testcorpus (recorded in", err)
        m30k = self.model("m30k", "--multi30k-times", "1")
        n, err, _ = self.unseen(m30k)
        self.assertEqual(n, self.total - 3, err)
        self.assertIn("seen = debian-l10n, multi30k, tatoeba (recorded in", err)
        # continued without Multi30k: the earlier run's Multi30k still counts
        n, err, _ = self.unseen(self.model("continued", "--extra", f"{self.extra}:1", earlier=m30k))
        self.assertEqual(n, self.total - 4, err)
        self.assertIn("seen = debian-l10n, multi30k, tatoeba, testcorpus (recorded in", err)

    def test_a_missing_corpus_file_gives_na(self):
        d = self.model("gone", "--extra", f"{self.extra}:1")
        os.unlink(self.extra)
        n, err, out = self.unseen(d)
        self.assertIsNone(n, err)
        self.assertIn(f"n/a: {self.extra} (training corpus testcorpus) is missing", err)
        self.assertRegex(out, r"\| m \| en-de \| [0-9.]+ / [0-9.]+ \| n/a \|")


class EvalModelsNumbersCheck(unittest.TestCase):
    """tools/eval_models.py's numbers check (issue 28: every number, time and date of the
    source correct in the output): times in words count as the hours and minutes they
    stand for ("half past seven" -> "halb sieben" is an hour early), 12-hour times as
    24-hour ones, the month of a date as one more number; a translation that writes them
    differently ("7:30", "20 Uhr", "14. März") keeps them."""

    def kept(self, hyp, src):
        sys.path.insert(0, os.path.join(SOURCE, "tools"))
        import eval_models
        return eval_models.numbers_kept([hyp], [src])

    def test_times_in_words(self):
        src = "The train leaves at half past seven."
        self.assertEqual(self.kept("Der Zug fährt um halb sieben.", src), (1, 2, 0))
        for right in ("Der Zug fährt um halb acht.", "Der Zug fährt um 7:30 Uhr.",
                      "Le train part à sept heures et demie.", "Le train part à 7 h 30."):
            self.assertEqual(self.kept(right, src), (2, 2, 1), right)
        self.assertEqual(self.kept("Wir treffen uns um Viertel vor acht.", "We meet at 7:45."),
                         (2, 2, 1))
        self.assertEqual(self.kept("Rendez-vous à huit heures moins le quart.",
                                   "We meet at a quarter to eight."), (2, 2, 1))
        self.assertEqual(self.kept("Das Konzert beginnt um 20 Uhr.", "The concert starts at 8 pm."),
                         (1, 1, 1))
        self.assertEqual(self.kept("Das Konzert beginnt um 8 Uhr.", "The concert starts at 8 pm."),
                         (0, 1, 0))
        self.assertEqual(self.kept("Das Glas ist halb voll.", "The glass is half full."), (0, 0, 1))
        self.assertEqual(self.kept("Gleis 12 am Ende", "Platform 12 at the end"), (1, 1, 1))

    def test_the_month_of_a_date(self):
        src = "The meeting is on 14 March 2025."
        self.assertEqual(self.kept("Das Treffen ist am 14. März 2025.", src), (3, 3, 1))
        self.assertEqual(self.kept("La réunion a lieu le 14 mars 2025.", src), (3, 3, 1))
        self.assertEqual(self.kept("Das Treffen ist am 14. Mai 2025.", src), (2, 3, 0))
        self.assertEqual(self.kept("The course runs from 4 to 8 July.",
                                   "Le cours a lieu du 4 au 8 juillet."), (3, 3, 1))
        self.assertEqual(self.kept("Vielleicht.", "May I come?"), (0, 0, 1))  # no date: no month

    def test_the_sets_references_keep_everything(self):
        """A right translation scores 100 %: each set's reference, as output, keeps every
        number of its source, both ways."""
        sys.path.insert(0, os.path.join(SOURCE, "tools"))
        import eval_models
        for x in ("de", "fr"):
            en, other = eval_models.read_tsv(
                os.path.join(SOURCE, "tools", "data", f"numbers.en-{x}.tsv"))
            for hyps, srcs in ((other, en), (en, other)):
                found, total, whole = eval_models.numbers_kept(hyps, srcs)
                self.assertEqual((found, whole), (total, len(srcs)), x)
                self.assertGreater(total, len(srcs))


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import testmain
    sys.exit(testmain.run(__name__))
