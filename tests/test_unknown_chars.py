#!/usr/bin/python3
"""Characters the shipped models cannot spell come back as themselves (MT_PROTECT_UNKNOWN).

models/en-de and models/de-en have no byte fallback: "東京" encodes to <unk>, "€", "£",
"≤", "≥" are pieces the models barely saw ("It costs €5." came out "Es kostet 665."), and
"™" and "²" are read as "TM" and "2" (normalisation): none came back. Runs
the real mt-translate ($MT_BUILD_DIR/cli/mt-translate) on those models, text and HTML:
each such character is in the output, once per source copy, while the words around it are
translated; with --no-protect the old output (no "€") comes back. Skips (77) without the
binary or the models.
"""
import os
import subprocess
import sys
import unittest

SOURCE = os.environ.get("MT_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("MT_BUILD_DIR") or os.path.join(SOURCE, "build")
CLI = os.path.join(BUILD, "cli", "mt-translate")
MODELS = {pair: os.path.join(SOURCE, "models", pair) for pair in ("en-de", "de-en")}


def translate(pair, lines, *args):
    proc = subprocess.run([CLI, "--model", MODELS[pair]] + list(args), input="".join(l + "\n" for l in lines).encode(),
                          capture_output=True, timeout=600)
    if proc.returncode != 0:
        raise AssertionError(f"mt-translate {pair} {args} failed: {proc.stderr.decode()}")
    out = proc.stdout.decode().splitlines()
    if not args:
        assert len(out) == len(lines), out
    return out


class ShippedModelCase(unittest.TestCase):
    """Cases run through mt-translate on the shipped models (test_paths.py shares it):
    check() asserts each kept string comes back once per source copy and each word is
    there (translated, not copied)."""

    @classmethod
    def setUpClass(cls):
        if not os.path.exists(CLI):
            raise unittest.SkipTest(f"{CLI} is not built")
        for d in MODELS.values():
            if not os.path.exists(os.path.join(d, "vocab.json")):
                raise unittest.SkipTest(f"{d} is missing (the shipped models)")

    def check(self, pair, cases, *args):
        out = translate(pair, [src for src, _, _ in cases], *args)
        for (src, kept, words), got in zip(cases, out):
            with self.subTest(source=src):
                for k in kept:
                    self.assertEqual(got.count(k), src.count(k), f"{k!r} not kept once per copy: {src!r} -> {got!r}")
                for w in words:  # translated, not copied
                    self.assertIn(w, got, f"{src!r} -> {got!r}")


class UnknownCharacters(ShippedModelCase):

    def test_en_de_text(self):
        self.check("en-de", [
            ("It costs €5.", ["€5"], ["kostet"]),
            ("The ticket costs 12,50 €.", ["12,50 €"], ["kostet"]),
            ("The price is £20.", ["£20"], ["Preis"]),
            ("x ≤ 10 and y ≥ 2", ["≤ 10", "≥ 2"], ["und"]),
            ("I live in 東京 and work in 大阪.", ["東京", "大阪"], ["und"]),
            ("This brand ™ is registered.", ["™"], ["Marke"]),  # read as "TM": dropped before
            ("The area is 40 m².", ["m²"], ["40"]),  # read as "m2"
            ("The water is 25 °C.", ["°C"], ["Wasser"]),  # a symbol the model learnt: unchanged
        ])

    def test_de_en_text(self):
        self.check("de-en", [
            ("Das Ticket kostet 12,50 €.", ["12,50 €"], ["ticket"]),
            ("Es kostet 5 € pro Person.", ["5 €"], ["per"]),
            ("Ich wohne in 東京.", ["東京"], ["live"]),
        ])

    def test_html(self):
        html = "<p>It costs <b>€5</b> and the ticket costs 12,50 €.</p><p>I live in 東京.</p>"
        out = "\n".join(translate("en-de", [html], "--input", "html"))
        for k in ["<b>€5</b>", "12,50 €", "東京", "kostet"]:
            self.assertIn(k, out, out)
        self.assertEqual(out.count("€"), 2, out)

    def test_no_protect_is_the_old_behaviour(self):
        """The characters are kept by protection, not by the model: without it they are lost."""
        out = translate("en-de", ["It costs €5.", "The ticket costs 12,50 €."], "--no-protect")
        for got in out:
            self.assertNotIn("€", got, out)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import testmain
    sys.exit(testmain.run(__name__))
