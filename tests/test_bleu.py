#!/usr/bin/python3
"""tools/bleu.py against hand-computed sacreBLEU values (BLEU, 13a tokens, chrF).

Every expected number below is worked out in the comment beside it from
sacreBLEU's definitions, so a change to the metric shows up as a test failure
rather than as a silent shift in the reported quality. Prints a final line
"N passed, M failed".
"""
import gzip
import math
import os
import subprocess
import sys
import tempfile
import unittest

SOURCE_DIR = os.environ.get("MT_SOURCE_DIR") or os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tools"))

import bleu  # noqa: E402


class Tokenize13a(unittest.TestCase):
    def test_punctuation_and_quotes(self):
        # Symbols and quotes split; the period ends the sentence; apostrophes stay.
        self.assertEqual(bleu.tokenize_13a('He said: "It\'s fine!" (really)'),
                         ["He", "said", ":", '"', "It's", "fine", "!", '"', "(", "really", ")"])

    def test_numbers(self):
        # Period and comma stay between digits; a dash after a digit splits.
        self.assertEqual(bleu.tokenize_13a("Pi is 3.14, 1,000 times; 5-3 well-known."),
                         ["Pi", "is", "3.14", ",", "1,000", "times", ";", "5", "-", "3",
                          "well-known", "."])

    def test_entities_and_spaces(self):
        self.assertEqual(bleu.tokenize_13a("a &amp; b &quot;c&quot;  &lt;d&gt;"),
                         ["a", "&", "b", '"', "c", '"', "<", "d", ">"])
        self.assertEqual(bleu.tokenize_13a("   "), [])


class CorpusBleu(unittest.TestCase):
    REF = "the cat sat on the mat"

    def test_identical_is_100(self):
        score = bleu.corpus_bleu([self.REF, "a dog runs in the park ."],
                                 [self.REF, "a dog runs in the park ."])
        self.assertAlmostEqual(score.score, 100.0, places=9)
        self.assertEqual(score.bp, 1.0)

    def test_empty_hypothesis_is_0(self):
        score = bleu.corpus_bleu(["", ""], [self.REF, "x"])
        self.assertEqual(score.score, 0.0)
        self.assertEqual(score.hyp_len, 0)
        self.assertEqual(score.bp, 0.0)
        self.assertIn("BLEU = 0.00", str(score))

    def test_empty_corpus_is_0(self):
        self.assertEqual(bleu.corpus_bleu([], []).score, 0.0)

    def test_longer_hypothesis_has_no_brevity_penalty(self):
        # 7 tokens vs 6: precisions 6/7, 5/6, 4/5, 3/4 -> (3/7)^(1/4) = 0.809107.
        score = bleu.corpus_bleu([self.REF + " today"], [self.REF])
        self.assertEqual(score.bp, 1.0)
        self.assertEqual(score.correct, [6, 5, 4, 3])
        self.assertEqual(score.total, [7, 6, 5, 4])
        self.assertAlmostEqual(score.score, 100 * (3 / 7) ** 0.25, places=9)
        self.assertEqual(f"{score.score:.2f}", "80.91")

    def test_short_hypothesis_gets_brevity_penalty(self):
        # All precisions 1, 5 tokens vs 6: BP = exp(1 - 6/5) = 0.818731.
        score = bleu.corpus_bleu(["the cat sat on the"], [self.REF])
        self.assertAlmostEqual(score.bp, math.exp(-0.2), places=12)
        self.assertAlmostEqual(score.score, 100 * math.exp(-0.2), places=9)
        self.assertEqual(str(score), "BLEU = 81.87 100.0/100.0/100.0/100.0 "
                                     "(BP = 0.819 ratio = 0.833 hyp_len = 5 ref_len = 6)")

    def test_single_sentence_exp_smoothing(self):
        # "a b c d" vs "a b c e": 3/4, 2/3, 1/2, and no 4-gram match, which 'exp'
        # smoothing turns into 1 / (2 * 1): BLEU = (3/4 * 2/3 * 1/2 * 1/2)^(1/4).
        score = bleu.corpus_bleu(["a b c d"], ["a b c e"])
        self.assertEqual(score.correct, [3, 2, 1, 0])
        self.assertAlmostEqual(score.precisions[3], 50.0)
        self.assertAlmostEqual(score.score, 100 * 0.125 ** 0.25, places=9)

    def test_too_short_for_4grams_is_0(self):
        # Three tokens have no 4-gram at all: that order's precision is 0, so BLEU is 0.
        self.assertEqual(bleu.corpus_bleu(["a b c"], ["a b c"]).score, 0.0)

    def test_corpus_pools_counts_and_clips(self):
        # Clipping: "the the the the" matches "the" twice in "the cat the mat".
        # Corpus pooling: the second segment's matches add to the first's.
        score = bleu.corpus_bleu(["the the the the", "a b c d"], ["the cat the mat", "a b c d"])
        self.assertEqual(score.correct, [2 + 4, 0 + 3, 0 + 2, 0 + 1])
        self.assertEqual(score.total, [8, 6, 4, 2])
        expected = 100 * (6 / 8 * 3 / 6 * 2 / 4 * 1 / 2) ** 0.25
        self.assertAlmostEqual(score.score, expected, places=9)

    def test_case_sensitive_and_tokenised(self):
        # "The cat." tokenises to "The cat ."; lower-case "the" does not match "The".
        score = bleu.corpus_bleu(["the cat ."], ["The cat."])
        self.assertEqual(score.correct[0], 2)

    def test_mismatched_lengths_raise(self):
        with self.assertRaises(ValueError):
            bleu.corpus_bleu(["a"], [])


class CorpusChrf(unittest.TestCase):
    def test_identical_is_100(self):
        self.assertAlmostEqual(bleu.corpus_chrf(["a cat sat"], ["a cat sat"]), 100.0)

    def test_whitespace_is_ignored(self):
        self.assertAlmostEqual(bleu.corpus_chrf(["acat sat"], ["a cat  sat"]), 100.0)

    def test_hand_computed_symmetric(self):
        # "abc" vs "abd": order 1 P=R=2/3, order 2 P=R=1/2, order 3 P=R=0; orders
        # 4-6 have no n-grams and do not count. Average 7/18, F2 = 38.888...
        self.assertAlmostEqual(bleu.corpus_chrf(["abc"], ["abd"]), 100 * 7 / 18, places=9)

    def test_hand_computed_recall_weighted(self):
        # "ab" vs "abc": order 1 P=1 R=2/3, order 2 P=1 R=1/2 (order 3: no hypothesis
        # n-gram). Averages P=1, R=7/12; F2 = 5 * P * R / (4P + R) = 63.636...
        p, r = 1.0, 7 / 12
        self.assertAlmostEqual(bleu.corpus_chrf(["ab"], ["abc"]), 100 * 5 * p * r / (4 * p + r),
                               places=9)

    def test_empty_hypothesis_is_0(self):
        self.assertEqual(bleu.corpus_chrf([""], ["abc"]), 0.0)

    def test_published_sacrebleu_values(self):
        # Values sacreBLEU printed for the examples of the Hugging Face 'chrf' metric card.
        self.assertAlmostEqual(bleu.corpus_chrf(
            ["The relationship between Obama and Netanyahu is not exactly friendly."],
            ["The ties between Obama and Netanyahu are not particularly friendly."]),
            61.576379378113785, places=9)
        self.assertAlmostEqual(bleu.corpus_chrf(
            ["The relationship between cats and dogs is not exactly friendly.",
             "a good bookshop is just a genteel black hole that knows how to read."],
            ["The relationship between dogs and cats is not exactly friendly.",
             "A good bookshop is just a genteel Black Hole that knows how to read."]),
            84.64214891738334, places=9)


class CommandLine(unittest.TestCase):
    def test_prints_bleu_and_chrf_with_gzip_reference(self):
        with tempfile.TemporaryDirectory() as tmp:
            hyp, ref = os.path.join(tmp, "hyp.txt"), os.path.join(tmp, "ref.txt.gz")
            with open(hyp, "w", encoding="utf-8") as f:
                f.write("the cat sat on the\n")
            with gzip.open(ref, "wt", encoding="utf-8") as f:
                f.write("the cat sat on the mat\n")
            out = subprocess.run([sys.executable, os.path.join(SOURCE_DIR, "tools", "bleu.py"),
                                  hyp, ref, "--chrf"], capture_output=True, text=True, check=True)
        self.assertTrue(out.stdout.startswith("BLEU = 81.87 100.0/100.0/100.0/100.0 (BP = 0.819"))
        self.assertRegex(out.stdout, r" chrF = \d+\.\d\d\n$")

    def test_line_count_mismatch_fails(self):
        with tempfile.TemporaryDirectory() as tmp:
            hyp, ref = os.path.join(tmp, "hyp.txt"), os.path.join(tmp, "ref.txt")
            with open(hyp, "w") as f:
                f.write("a\nb\n")
            with open(ref, "w") as f:
                f.write("a\n")
            out = subprocess.run([sys.executable, os.path.join(SOURCE_DIR, "tools", "bleu.py"),
                                  hyp, ref], capture_output=True, text=True)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("2 lines", out.stderr)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import testmain
    sys.exit(testmain.run(__name__))
