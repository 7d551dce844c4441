"""mt-translate as a user runs it: line discipline, options, and errors.

Runs the real binary ($MT_BUILD_DIR/cli/mt-translate) on a small random model written by
tools/make_test_model.py, and on broken copies of it.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mtfixtures  # noqa: E402

BUILD = os.environ.get("MT_BUILD_DIR", "build")
SOURCE = os.environ.get("MT_SOURCE_DIR", ".")
CLI = os.path.join(BUILD, "cli", "mt-translate")


def run(args, text, check=True):
    proc = subprocess.run([CLI] + args, input=text.encode(), capture_output=True, timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(f"mt-translate {args} failed: {proc.stderr.decode()}")
    return proc


class RandomModelCase(unittest.TestCase):
    """A test class with its own random model in cls.model (no output is hard-coded)."""

    PREFIX = "mt-test-cli-"

    @classmethod
    def setUpClass(cls):
        if not os.path.exists(CLI):
            raise unittest.SkipTest(f"{CLI} is not built")
        cls.tmp = tempfile.mkdtemp(prefix=cls.PREFIX)
        cls.model = os.path.join(cls.tmp, "model")
        subprocess.run(["/usr/bin/python3", os.path.join(SOURCE, "tools", "make_test_model.py"), cls.model,
                        "--seed", "11", "--eos-bias", "6", "--max-length", "24"],
                       check=True, capture_output=True, timeout=300)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)


class CliTest(RandomModelCase):
    def test_one_line_out_per_line_in_with_empty_lines_kept(self):
        text = "A dog runs.\n\nTwo men talk. A woman listens.\n   \nLast line without newline"
        out = run(["--model", self.model, "--beam", "2"], text).stdout.decode()
        # --beam-size is the table's name for it (mt-server's flag and JSON field too)
        self.assertEqual(run(["--model", self.model, "--beam-size", "2"], text).stdout.decode(), out)
        lines = out.split("\n")
        self.assertEqual(lines[-1], "")  # output ends with a newline
        lines = lines[:-1]
        self.assertEqual(len(lines), 5)
        self.assertEqual(lines[1], "")
        self.assertEqual(lines[3], "   ")  # whitespace-only lines are kept verbatim
        self.assertTrue(lines[0] and lines[2] and lines[4])

    def test_order_does_not_depend_on_batching(self):
        text = "\n".join(f"Sentence number {i} is {'very ' * (i % 7)}long." for i in range(40)) + "\n"
        a = run(["--model", self.model, "--batch-size", "3"], text).stdout
        b = run(["--model", self.model, "--batch-size", "64", "--threads", "2"], text).stdout
        self.assertEqual(a, b)

    def test_workers_2_equals_workers_1(self):
        """--workers N: the service's workers run batches at once; the output is the same."""
        text = "\n".join(f"Line {i}: {'a big ' * (i % 5)}dog runs. Then {i} cats sleep." for i in range(60)) + "\n"
        for extra in ([], ["--n-best", "2", "--beam", "3"], ["--output", "ids"]):
            one = run(["--model", self.model, "--batch-size", "4", "--workers", "1"] + extra, text).stdout
            two = run(["--model", self.model, "--batch-size", "4", "--workers", "2"] + extra, text).stdout
            self.assertEqual(one, two, extra)
            self.assertEqual(len(one.decode().strip().split("\n")), 60 * (2 if "--n-best" in extra else 1))
        proc = run(["--model", self.model, "--workers", "-1"], "x\n", check=False)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("--workers must be an integer >= 0", proc.stderr.decode())

    def test_ids_output_and_input(self):
        out = run(["--model", self.model, "--output", "ids"], "A dog runs.\n").stdout.decode().strip()
        self.assertRegex(out, r"^\d+( \d+)*$")
        out2 = run(["--model", self.model, "--input", "ids", "--output", "ids"], "5 6 7\n").stdout.decode()
        self.assertRegex(out2.strip(), r"^\d+( \d+)*$")

    def test_n_best_in_moses_format(self):
        out = run(["--model", self.model, "--beam", "4", "--n-best", "3"], "A dog.\nA cat.\n").stdout.decode()
        rows = [line.split(" ||| ") for line in out.strip().split("\n")]
        self.assertEqual(len(rows), 6)
        self.assertEqual([r[0] for r in rows], ["0", "0", "0", "1", "1", "1"])
        scores = [float(r[2]) for r in rows[:3]]
        self.assertEqual(scores, sorted(scores, reverse=True))

    def test_bad_options_are_errors(self):
        for args, needle in [
            (["--beam", "0"], "--beam must be an integer between 1 and 256, got '0'"),
            (["--beam-size", "x"], "--beam-size must be an integer between 1 and 256, got 'x'"),
            (["--output", "xml"], "--output must be 'text', 'ids' or 'json'"),
            (["--input", "xml"], "--input must be 'text', 'ids' or 'html'"),
            (["--n-best", "5", "--beam", "2"], "n_best (5) must not exceed beam_size (2)"),
            (["--bogus"], "unknown option '--bogus' (try: mt-translate --help)"),
            ([], "--model DIR is required"),
        ]:
            model_args = [] if args == [] else ["--model", self.model]
            proc = run(model_args + args, "x\n", check=False)
            self.assertNotEqual(proc.returncode, 0, args)
            self.assertIn(needle, proc.stderr.decode(), args)

    def test_html_input_is_one_document(self):
        """--input html: stdin is one document; a script or a text node may span lines."""
        plain = run(["--model", self.model], "A dog runs. A cat & a dog.\n").stdout.decode().split("\n")
        doc = ("<p>A dog\nruns. A cat &amp; a dog.</p><script>\nvar a = 'A dog.';\n</script>\n"
               "<i translate=no>A dog.</i>\n")
        html = run(["--model", self.model, "--input", "html"], doc).stdout.decode()
        esc = plain[0].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        self.assertEqual(html, "<p>%s</p><script>\nvar a = 'A dog.';\n</script>\n<i translate=no>A dog.</i>\n"
                         % esc)
        for args in (["--n-best", "2", "--beam", "2"], ["--output", "ids"]):
            proc = run(["--model", self.model, "--input", "html"] + args, doc, check=False)
            self.assertEqual(proc.returncode, 2, args)
            self.assertIn("--input html translates one document", proc.stderr.decode())

    def test_invalid_utf8_input_is_an_error_naming_the_byte(self):
        proc = subprocess.run([CLI, "--model", self.model], input=b"ok \xc3\x28 bad\n", capture_output=True,
                              timeout=60)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("invalid UTF-8 at byte 3", proc.stderr.decode())

    def test_broken_model_directories_fail_cleanly(self):
        cases = {
            "missing.safetensors": ("model.safetensors", None, "model.safetensors"),
            "missing.vocab": ("vocab.json", None, "vocab.json"),
            "bad.config": ("config.json", b"{not json", "config.json: invalid JSON"),
            "truncated": ("model.safetensors", "truncate", "past the data section"),
        }
        for name, (fname, content, needle) in cases.items():
            d = os.path.join(self.tmp, name)
            shutil.copytree(self.model, d)
            path = os.path.join(d, fname)
            if content is None:
                os.remove(path)
            elif content == "truncate":
                size = os.path.getsize(path)
                with open(path, "r+b") as f:
                    f.truncate(size // 2)
            else:
                with open(path, "wb") as f:
                    f.write(content)
            proc = run(["--model", d], "x\n", check=False)
            self.assertEqual(proc.returncode, 1, name)
            self.assertIn("cannot load model", proc.stderr.decode(), name)
            self.assertIn(needle, proc.stderr.decode(), name)
        proc = run(["--model", os.path.join(self.tmp, "nonexistent")], "x\n", check=False)
        self.assertEqual(proc.returncode, 1)

    def test_avx512_kernels_are_chosen_even_when_the_environment_pins_older_ones(self):
        env = dict(os.environ, OPENBLAS_CORETYPE="Haswell")
        env.pop("MT_BLAS_CORETYPE", None)
        env.pop("MT_BLAS_REEXECUTED", None)
        proc = subprocess.run([CLI, "--model", self.model, "--verbose"], input=b"x\n", capture_output=True,
                              env=env, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr.decode())
        with open("/proc/cpuinfo") as f:
            flags = f.read()
        avx512 = all(flag in flags for flag in ("avx512f", "avx512bw", "avx512dq", "avx512vl"))
        self.assertIn("BLAS kernels SkylakeX" if avx512 else "BLAS kernels Haswell", proc.stderr.decode())
        env["MT_BLAS_CORETYPE"] = "keep"  # the opt-out leaves OpenBLAS's choice alone
        proc = subprocess.run([CLI, "--model", self.model, "--verbose"], input=b"x\n", capture_output=True,
                              env=env, timeout=120)
        self.assertIn("BLAS kernels Haswell", proc.stderr.decode())
class DecodingOptionsTest(RandomModelCase):
    """Issue 17: every decoding control of mt-translate, its invalid values, and seeded sampling
    that does not depend on batch size or workers (a random model: no output is hard-coded)."""

    TEXT = "\n".join(f"Line {i}: {'a big ' * (i % 4)}dog runs. Then {i} cats sleep." for i in range(24)) + "\n"

    PREFIX = "mt-test-cli-dec-"

    def out(self, args, text=None):
        return run(["--model", self.model] + args, self.TEXT if text is None else text).stdout.decode()

    def ids(self, args, text=None):
        return [[int(x) for x in line.split()] for line in self.out(args + ["--output", "ids"], text).splitlines()]

    def test_defaults_given_explicitly_change_nothing(self):
        plain = self.out([])
        self.assertEqual(plain, self.out(["--sampling-topk", "1", "--sampling-topp", "1", "--sampling-temperature",
                                          "1", "--seed", "0", "--no-repeat-ngram-size", "0",
                                          "--repetition-penalty", "1", "--min-length", "0"]))
        # the extras do not change the translations either
        rows = [json.loads(r) for r in self.out(["--output", "json", "--return-scores",
                                                 "--return-alignments"]).splitlines()]
        self.assertEqual([r["translation"] for r in rows], plain.splitlines())

    def test_seeded_sampling_is_stable_across_batch_size_and_workers(self):
        args = ["--sampling-topk", "0", "--sampling-temperature", "2", "--seed", "1234"]
        first = self.out(args + ["--batch-size", "32"])
        for extra in (["--batch-size", "1"], ["--batch-size", "5", "--workers", "2"], ["--threads", "2"]):
            self.assertEqual(first, self.out(args + extra), extra)
        self.assertNotEqual(first, self.out(["--sampling-topk", "0", "--sampling-temperature", "2",
                                             "--seed", "99"]))
        self.assertNotEqual(first, self.out([]))  # sampling from the whole vocabulary at T=2
        # top-k 5: every sampled token is among the 5 most likely at its step; top-k 1 is greedy
        self.assertEqual(self.out(["--sampling-topk", "1", "--beam", "1"]), self.out(["--beam", "1"]))
        self.assertEqual(len(self.out(["--sampling-topk", "5", "--sampling-topp", "0.5", "--seed", "3"])
                             .splitlines()), 24)

    def test_min_length_no_repeat_and_repetition_penalty(self):
        base = self.ids(["--beam", "2"])
        longer = self.ids(["--beam", "2", "--min-length", "12"])
        for b, l in zip(base, longer):
            self.assertGreaterEqual(len(l), min(12, 23), (b, l))
        # short lines: one sentence each (the random model cuts sentences over 12 tokens)
        one_sentence = "\n".join(f"The dog {i} runs" for i in range(24)) + "\n"
        norep = self.ids(["--no-repeat-ngram-size", "1"], one_sentence)
        self.assertTrue(any(len(r) != len(set(r)) for r in self.ids([], one_sentence)))  # it does repeat
        for row in norep:
            self.assertEqual(len(row), len(set(row)), row)
        self.assertNotEqual(self.ids(["--repetition-penalty", "3"]), self.ids([]))

    def test_target_prefix_text_and_ids(self):
        plain = self.ids([])
        prefix = [plain[0][1], plain[0][0], 7]
        got = self.ids(["--target-prefix-ids", " ".join(map(str, prefix))])
        for row in got:
            self.assertEqual(row[:3], prefix, row)
        # a text prefix is encoded with the target vocabulary and forced the same way
        self.assertEqual(len(self.out(["--target-prefix", "Ein Hund"]).splitlines()), 24)

    def test_return_scores_and_alignments_as_json(self):
        ids = self.ids([])
        rows = [json.loads(r) for r in self.out(["--output", "json", "--return-scores",
                                                 "--return-alignments"]).splitlines()]
        self.assertEqual(len(rows), 24)
        lines = self.TEXT.splitlines()
        for r, i, src in zip(rows, ids, lines):
            self.assertEqual(len(r["token_scores"]), len(i))
            self.assertTrue(all(x <= 0 for x in r["token_scores"]))
            self.assertEqual([p[1] for p in r["token_alignments"]], list(range(len(i))))
            n_src, n_out = len(src.split()), len(r["translation"].split())
            for s_w, t_w in r["alignments"]:
                self.assertTrue(0 <= s_w < n_src and 0 <= t_w < n_out, (r, src))
        layer0 = [json.loads(r) for r in self.out(["--output", "json", "--return-alignments",
                                                   "--alignment-layer", "0"]).splitlines()]
        self.assertEqual([r["translation"] for r in layer0], [r["translation"] for r in rows])
        self.assertEqual(len(self.out(["--replace-unknowns"]).splitlines()), 24)

    def test_invalid_values_are_errors(self):
        for args, needle in [
            (["--sampling-topp", "0"], "--sampling-topp must be a number in (0, 1]"),
            (["--sampling-topp", "1.5"], "--sampling-topp must be a number in (0, 1]"),
            (["--sampling-temperature", "0"], "--sampling-temperature must be a number between 1e-06 and 1000"),
            # a temperature this small overflowed the scaled logits: an empty translation
            (["--sampling-temperature", "1e-38"], "--sampling-temperature must be a number between 1e-06"),
            (["--sampling-topk", "-1"], "--sampling-topk must be an integer between 0 and 1000000"),
            (["--sampling-topk", "5", "--beam", "4"], "needs beam_size 1"),
            (["--repetition-penalty", "0.5"], "--repetition-penalty must be a number between 1 and 1000"),
            (["--no-repeat-ngram-size", "-2"], "--no-repeat-ngram-size must be an integer between 0 and 1000"),
            (["--min-length", "x"], "--min-length must be an integer"),
            (["--seed", "-1"], "--seed must be an integer between 0 and"),
            (["--alignment-layer", "99", "--return-alignments"], "alignment_layer must be in"),
            (["--target-prefix-ids", "1 x"], "target_prefix: bad target id"),
            (["--target-prefix", "a", "--target-prefix-ids", "1"], "not both"),
            (["--input", "html", "--return-alignments"], "not available with --input html"),
        ]:
            proc = run(["--model", self.model] + args, "A dog.\n", check=False)
            # option errors exit 2; a prefix is read with the input, and fails like bad input (1)
            self.assertEqual(proc.returncode, 1 if "1 x" in args else 2, args)
            self.assertIn(needle, proc.stderr.decode(), args)

    def test_html_inline_markup_and_protected_spans(self):
        out = self.out(["--input", "html"], '<p>A <b class="x">dog</b> runs to <a href="https://a.b/?q=1&amp;r=2" '
                                            'title="t">the house</a>.<br>Mail me@example.org now.</p>')
        self.assertEqual(out.count('<b class="x">'), 1)
        self.assertEqual(out.count("</b>"), 1)
        self.assertEqual(out.count('<a href="https://a.b/?q=1&amp;r=2" title="t">'), 1)
        self.assertEqual(out.count("<br>"), 1)
        self.assertEqual(out.count("me@example.org"), 1)
        self.assertTrue(out.startswith("<p>") and out.endswith("</p>"), out)
        text = self.out([], "Open %s or {count} files at https://example.org/x, ask @bob #help\n")
        for span in ("%s", "{count}", "https://example.org/x", "@bob", "#help"):
            self.assertEqual(text.count(span), 1, (span, text))



MT_MODELS = os.path.join(BUILD, "cli", "mt-models")
MT_SERVER = os.path.join(BUILD, "server", "mt-server")


class CommandLineTest(RandomModelCase):
    """Errors a newcomer meets: one line on stderr, the program's name first, what to try
    next; exit status 2 for a wrong command line and 1 for a failure while running. The
    option names mt-server uses for the same settings, and its default of using the CPUs."""

    PREFIX = "mt-test-cli-args-"

    def one_line_error(self, argv, rc, needle, stdin="x\n"):
        proc = subprocess.run(argv, input=stdin.encode(), capture_output=True, timeout=120)
        err = proc.stderr.decode()
        self.assertEqual(proc.returncode, rc, f"{argv}: {err}")
        self.assertEqual(len(err.splitlines()), 1, f"{argv}: not one line: {err!r}")
        self.assertTrue(err.startswith(os.path.basename(argv[0]) + ": "), f"{argv}: {err!r}")
        self.assertIn(needle, err, argv)

    def test_usage_errors_are_one_line_with_a_hint_and_exit_2(self):
        for args, needle in [
            (["--bogus"], "unknown option '--bogus' (try: mt-translate --help)"),
            (["-x"], "unknown option '-x' (try: mt-translate --help)"),
            (["--model"], "--model needs a value (try: mt-translate --help)"),
            (["-m"], "-m needs a value"),
            ([], "--model DIR is required (e.g. --model models/en-de; try: mt-translate --help)"),
            (["--model", self.model, "--beam", "0"], "--beam must be an integer between 1 and 256, got '0'"),
            (["--model", self.model, "--workers", "x"], "--workers must be an integer >= 0, got 'x'"),
            (["--model", self.model, "a.txt", "b.txt"], "unexpected argument 'b.txt'"),
        ]:
            with self.subTest(args=args):
                self.one_line_error([CLI] + args, 2, needle)

    def test_runtime_errors_name_what_is_wrong_and_exit_1(self):
        empty = os.path.join(self.tmp, "not-a-model")
        os.makedirs(empty, exist_ok=True)
        partial = os.path.join(self.tmp, "no-tokenizer-config")
        shutil.copytree(self.model, partial, dirs_exist_ok=True)
        os.remove(os.path.join(partial, "tokenizer_config.json"))
        missing = os.path.join(self.tmp, "xx-yy")
        # A CTranslate2 directory or an argos-translate package loads in place
        # (test_ctranslate2_and_argos_directories_translate); a part missing is named.
        ct2 = mtfixtures.tiny_ct2_dir(os.path.join(self.tmp, "ct2-no-spm"))
        argos = mtfixtures.argos_package_dir(os.path.join(self.tmp, "argos-no-vocab"), ct2,
                                             os.path.join(self.model, "source.spm"))
        os.remove(os.path.join(argos, "model", "shared_vocabulary.json"))
        for args, needle in [
            (["--model", ct2], f"{ct2}/sentencepiece.model: missing: a CTranslate2 directory needs its "
                               "SentencePiece model beside model.bin (sentencepiece.model, or source.spm and "
                               "target.spm)"),
            (["--model", argos], f"{argos}/model has no shared_vocabulary.json (or .txt) nor "
                                 "source_vocabulary.json (or .txt)"),
            (["--model", missing], f"no model at {missing} (try: mt-models list, or ls models/)"),
            (["--model", empty], f"{empty} is not a model directory: it has none of config.json, "
                                 "tokenizer_config.json, vocab.json, source.spm, target.spm"),
            (["--model", partial], f"{partial} is not a complete model directory: tokenizer_config.json missing"),
            (["--model", self.model, os.path.join(self.tmp, "absent.txt")],
             f"mt-translate: {os.path.join(self.tmp, 'absent.txt')}: No such file or directory"),
            (["--model", self.model + ":en:fr"], "translates en -> de (its tokenizer_config.json), not en -> fr"),
        ]:
            with self.subTest(args=args):
                self.one_line_error([CLI] + args, 1, needle)

    def test_ctranslate2_and_argos_directories_translate(self):
        """What b93ae05 answered with 'install it': an unpacked argos-translate package and a bare
        CTranslate2 directory with its SentencePiece model now translate in place (tiny
        CTranslate2 model of tests/fuzz/ct2), the package's pair from its metadata.json, the
        same ids as the same package installed with mt-models install; the bare directory
        names no pair and asks for one."""
        spm = os.path.join(self.model, "source.spm")
        ct2 = mtfixtures.tiny_ct2_dir(os.path.join(self.tmp, "ct2-bare"), spm=spm)
        argos = mtfixtures.argos_package_dir(os.path.join(self.tmp, "argos-package"), ct2, spm)
        ids = "3 4 5\n9 8 7 6 5\n4\n"
        args = ["--input", "ids", "--output", "ids", "--max-length", "12"]
        pkg = run(["--model", argos] + args, ids).stdout.decode().splitlines()
        self.assertEqual(len(pkg), 3)
        bare = run(["--model", ct2 + ":xx:yy"] + args, ids).stdout.decode().splitlines()
        self.assertEqual(bare, pkg)
        text = run(["--model", argos, "--max-length", "12"], "A dog runs.\n\nTwo men talk.\n").stdout.decode()
        self.assertEqual(len(text.split("\n")), 4, text)  # three lines out, the empty one kept
        self.one_line_error([CLI, "--model", ct2], 1, f"{ct2} is a CTranslate2 model without metadata.json naming "
                            f"its languages: give the pair (--model {ct2}:SRC:TGT, or --source-lang and --target-lang)")
        self.one_line_error([CLI, "--model", argos + ":en:de"], 1, "translates xx -> yy (its metadata.json), "
                            "not en -> de")
        models = os.path.join(BUILD, "cli", "mt-models")
        env = dict(os.environ, MT_MODELS_DIR=os.path.join(self.tmp, "installed-argos"))
        r = subprocess.run([models, "install", argos], capture_output=True, text=True, timeout=120, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        installed = os.path.join(self.tmp, "installed-argos", "argos-xx-yy")
        self.assertEqual(run(["--model", installed] + args, ids).stdout.decode().splitlines(), pkg)

    def test_help_lists_every_option(self):
        """Every long option of mt-translate's getopt table (and of the decoding table,
        printed from it) is in --help; the short ones too."""
        with open(os.path.join(SOURCE, "cli", "mt_translate.c"), encoding="utf-8") as f:
            source = f.read()
        table = source[source.index("static const struct option fixed[]"):]
        table = table[:table.index("};")]
        names = re.findall(r'\{"([a-z][a-z-]*)", [01], 0,', table)
        self.assertGreater(len(names), 15, "option table not found")
        out = run(["--help"], "").stdout.decode()
        for name in names:
            self.assertRegex(out, r"--%s\b" % re.escape(name), name)
        for short in ("-m", "-t", "-b N", "-n N", "-v", "-h"):
            self.assertIn(short, out)
        for flag in ("--beam-size", "--beam", "--n-best", "--threads-per-worker", "--batch-max-sentences"):
            self.assertIn(flag, out)

    def test_mt_server_names_are_accepted(self):
        """The same setting has the same name in mt-translate and mt-server."""
        text = "A dog runs.\nTwo men talk. A woman listens.\n"
        want = run(["--model", self.model, "--threads", "1", "--batch-size", "1", "--beam", "2"], text).stdout
        for args in (["--model", self.model, "--threads-per-worker", "1", "--batch-max-sentences", "1",
                      "--beam-size", "2"],
                     ["--model", self.model + ":en:de", "-t", "1", "--batch-size", "1", "-b", "2"]):
            with self.subTest(args=args):
                self.assertEqual(run(args, text).stdout, want)
        server_help = subprocess.run([MT_SERVER, "--help"], capture_output=True, timeout=60).stdout.decode()
        for flag in ("--threads-per-worker", "--batch-max-sentences", "--beam-size", "--workers",
                     "--sentence-cache-mb", "--compute-type"):
            self.assertIn(flag, server_help)

    def test_workers_default_to_the_cpus_as_mt_server(self):
        """No --workers: one worker per CPU this process may use (divided by --threads), as
        mt-server's workers.count 0."""
        def workers(args, cpus):
            proc = subprocess.run([CLI, "--model", self.model, "--verbose"] + args, input=b"A dog.\n",
                                  capture_output=True, timeout=120,
                                  preexec_fn=lambda: os.sched_setaffinity(0, cpus))
            self.assertEqual(proc.returncode, 0, proc.stderr)
            m = re.search(r"(\d+) worker\(s\) x (\d+) thread", proc.stderr.decode())
            self.assertIsNotNone(m, proc.stderr)
            return int(m.group(1)), int(m.group(2))
        mine = sorted(os.sched_getaffinity(0))
        self.assertEqual(workers([], {mine[0]}), (1, 1))
        if len(mine) >= 2:
            self.assertEqual(workers([], set(mine[:2])), (2, 1))
            self.assertEqual(workers(["--threads", "2"], set(mine[:2])), (1, 2))
            self.assertEqual(workers(["--workers", "1"], set(mine[:2])), (1, 1))

    def test_mt_models_usage_errors(self):
        if not os.path.exists(MT_MODELS):
            self.skipTest(f"{MT_MODELS} is not built")
        env = dict(os.environ, MT_MODELS_DIR=os.path.join(self.tmp, "hub-models"), HF_HUB_OFFLINE="1")
        for args, needle in [
            (["frob"], "unknown command 'frob'; the commands are search, install, list, remove and convert "
                       "(try: mt-models --help)"),
            (["install"], "install needs a repository id such as Helsinki-NLP/opus-mt-en-de"),
            (["install", "--dir"], "--dir needs a value (try: mt-models --help)"),
            (["search", "--limit", "x"], "--limit must be a whole number from 1 to 1000, got 'x'"),
            (["list", "--bogus"], "unknown option '--bogus' (try: mt-models --help)"),
            (["remove"], "remove needs a model NAME, as mt-models list shows it"),
        ]:
            with self.subTest(args=args):
                proc = subprocess.run([MT_MODELS] + args, capture_output=True, timeout=60, env=env)
                err = proc.stderr.decode()
                self.assertEqual(proc.returncode, 2, f"{args}: {err}")
                self.assertEqual(err.splitlines(), ["mt-models: " + err[len("mt-models: "):].strip()], args)
                self.assertIn(needle, err, args)

    def test_mt_server_errors(self):
        if not os.path.exists(MT_SERVER):
            self.skipTest(f"{MT_SERVER} is not built")
        self.one_line_error([MT_SERVER, "--bogus"], 2, "unknown option '--bogus' (see --help)")
        empty = os.path.join(self.tmp, "not-a-model-either")
        os.makedirs(empty, exist_ok=True)
        proc = subprocess.run([MT_SERVER, "--model", empty, "--port", "0"], capture_output=True, timeout=120)
        self.assertEqual(proc.returncode, 1)
        self.assertIn(f"{empty} is not a model directory", proc.stderr.decode())


class ModelsDirTest(unittest.TestCase):
    """mt-translate --models-dir DIR: the model for the pair asked among those installed in
    DIR (models/en-de and models/de-en linked there, beside a directory without
    config.json), as --model would run it; a pair none serves is one line naming the
    pairs there. Unpacked argos-translate packages there are models too, as mt-server
    --models-dir serves them (the same listing, models_dir.h)."""

    @classmethod
    def setUpClass(cls):
        if not os.path.exists(CLI):
            raise unittest.SkipTest(f"{CLI} is not built")
        cls.models = {}
        for pair in ("en-de", "de-en"):
            path = os.path.abspath(os.path.join(SOURCE, "models", pair))
            if not os.path.exists(os.path.join(path, "config.json")):
                raise unittest.SkipTest(f"{path} is not there")
            cls.models[pair] = path
        cls.tmp = tempfile.mkdtemp(prefix="mt-test-cli-models-dir-")
        cls.dir = os.path.join(cls.tmp, "installed")
        os.makedirs(os.path.join(cls.dir, "notes"))
        for pair, path in cls.models.items():
            os.symlink(path, os.path.join(cls.dir, pair))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def one_line_error(self, args, code, needle):
        proc = run(args, "Hello.\n", check=False)
        err = proc.stderr.decode()
        self.assertEqual(proc.returncode, code, err)
        self.assertEqual(len(err.splitlines()), 1, f"{args}: not one line: {err!r}")
        self.assertIn(needle, err, args)

    def test_the_pair_picks_the_model(self):
        for pair, text, flags in [("en-de", "The file could not be opened.\nHello world.\n",
                                   ["--source-lang", "en", "--target-lang", "de"]),
                                  ("de-en", "Die Datei wurde gespeichert.\n", ["--source", "DE", "--target", "en"]),
                                  ("de-en", "Die Datei wurde gespeichert.\n", ["--target-lang", "en"])]:
            with self.subTest(flags=flags):
                want = run(["--model", self.models[pair]], text).stdout
                got = run(["--models-dir", self.dir] + flags, text).stdout
                self.assertEqual(got, want)
                self.assertEqual(len(got.splitlines()), len(text.splitlines()))

    def test_one_model_needs_no_pair(self):
        one = os.path.join(self.tmp, "one")
        os.makedirs(one, exist_ok=True)
        if not os.path.exists(os.path.join(one, "en-de")):
            os.symlink(self.models["en-de"], os.path.join(one, "en-de"))
        text = "Hello world.\n"
        self.assertEqual(run(["--models-dir", one], text).stdout, run(["--model", self.models["en-de"]], text).stdout)

    def test_argos_package_is_picked_as_mt_server_serves_it(self):
        """An unpacked argos-translate package in DIR (tiny CTranslate2 model of tests/fuzz/ct2,
        pair xx -> yy in its metadata.json) is one of DIR's models, used in place, as
        mt-server --models-dir serves it: picked by its pair, it translates as --model
        PACKAGE does; a directory with metadata.json but no model/model.bin is no model."""
        d = os.path.join(self.tmp, "with-argos")
        os.makedirs(os.path.join(d, "half-package"))
        with open(os.path.join(d, "half-package", "metadata.json"), "w") as f:
            f.write('{"from_code": "fr", "to_code": "de"}')
        os.symlink(self.models["en-de"], os.path.join(d, "en-de"))
        spm = os.path.join(self.models["en-de"], "source.spm")
        ct2 = mtfixtures.tiny_ct2_dir(os.path.join(self.tmp, "argos-ct2"), spm=spm)
        pkg = mtfixtures.argos_package_dir(os.path.join(d, "argos-xx-yy"), ct2, spm)
        ids = "3 4 5\n9 8 7 6 5\n4\n"
        args = ["--input", "ids", "--output", "ids", "--max-length", "12"]
        want = run(["--model", pkg] + args, ids).stdout
        self.assertEqual(len(want.splitlines()), 3)
        for flags in (["--source-lang", "xx", "--target-lang", "yy"], ["--target", "YY"]):
            with self.subTest(flags=flags):
                self.assertEqual(run(["--models-dir", d] + flags + args, ids).stdout, want)
        text = "Hello world.\n"
        self.assertEqual(run(["--models-dir", d, "--source-lang", "en"], text).stdout,
                         run(["--model", self.models["en-de"]], text).stdout)
        self.one_line_error([CLI, "--models-dir", d], 1, f"--models-dir {d} holds 2 models; pick one with "
                            "--source-lang/--target-lang: argos-xx-yy (xx->yy, argos package), en-de (en->de)")
        self.one_line_error([CLI, "--models-dir", d, "--source-lang", "fr"], 1, "has no model for fr -> any")
        only = os.path.join(self.tmp, "only-argos")
        os.makedirs(only)
        os.symlink(pkg, os.path.join(only, "pkg"))
        self.assertEqual(run(["--models-dir", only] + args, ids).stdout, want)

    def test_errors_name_the_pairs_installed(self):
        pairs = "de-en (de->en), en-de (en->de)"
        empty = os.path.join(self.tmp, "empty")
        os.makedirs(empty, exist_ok=True)
        for args, code, needle in [
            (["--source-lang", "en", "--target-lang", "fr"], 1,
             f"--models-dir {self.dir} has no model for en -> fr; installed: {pairs}"),
            (["--source-lang", "fr"], 1, f"has no model for fr -> any; installed: {pairs}"),
            ([], 1, f"--models-dir {self.dir} holds 2 models; pick one with --source-lang/--target-lang: {pairs}"),
            (["--model", self.models["en-de"]], 2, "give --model or --models-dir, not both"),
        ]:
            with self.subTest(args=args):
                self.one_line_error([CLI, "--models-dir", self.dir] + args, code, needle)
        self.one_line_error([CLI, "--models-dir", empty], 1, f"--models-dir {empty}: no model there")
        self.one_line_error([CLI, "--models-dir", os.path.join(self.tmp, "absent")], 1,
                            f"--models-dir {os.path.join(self.tmp, 'absent')}: No such file or directory")


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import testmain
    sys.exit(testmain.run(__name__))
