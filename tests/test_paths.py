#!/usr/bin/python3
"""File paths and "::"-qualified names come back byte for byte (MT_PROTECT_PATH).

Before the kind existed the shipped en-de wrote "Edit /etc/apt/sources.list and run
./configure." as "... ./konfigurieren.", "Class::Accessor::Grouped" as
"Class::Accessor::Gruppeed" and "../x" as "./x". Runs the real mt-translate
($MT_BUILD_DIR/cli/mt-translate) on models/en-de and models/de-en: each path or name is in
the output exactly as often as in the source, and the words around it are translated.
Skips (77) without the binary or the models.
"""
import os
import subprocess
import sys
import unittest

SOURCE = os.environ.get("MT_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("MT_BUILD_DIR") or os.path.join(SOURCE, "build")
CLI = os.path.join(BUILD, "cli", "mt-translate")
MODELS = {pair: os.path.join(SOURCE, "models", pair) for pair in ("en-de", "de-en")}


def translate(pair, lines):
    proc = subprocess.run([CLI, "--model", MODELS[pair]], input="".join(l + "\n" for l in lines).encode(),
                          capture_output=True, timeout=600)
    if proc.returncode != 0:
        raise AssertionError(f"mt-translate {pair} failed: {proc.stderr.decode()}")
    out = proc.stdout.decode().splitlines()
    assert len(out) == len(lines), out
    return out


class Paths(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(CLI):
            raise unittest.SkipTest(f"{CLI} is not built")
        for d in MODELS.values():
            if not os.path.exists(os.path.join(d, "vocab.json")):
                raise unittest.SkipTest(f"{d} is missing (the shipped models)")

    def check(self, pair, cases):
        out = translate(pair, [src for src, _, _ in cases])
        for (src, kept, words), got in zip(cases, out):
            with self.subTest(source=src):
                for k in kept:
                    self.assertEqual(got.count(k), src.count(k), f"{k!r} not kept once per copy: {src!r} -> {got!r}")
                for w in words:  # translated, not copied
                    self.assertIn(w, got, f"{src!r} -> {got!r}")

    def test_en_de(self):
        self.check("en-de", [
            ("Edit /etc/apt/sources.list and run ./configure.", ["/etc/apt/sources.list", "./configure"], []),
            ("Class::Accessor::Grouped is a module.", ["Class::Accessor::Grouped"], ["Modul"]),
            ("Copy ~/.bashrc to /usr/share/doc/ and read ../x first.", ["~/.bashrc", "/usr/share/doc/", "../x"],
             ["Kopier"]),
            ("Set Acquire::http::No-Cache to true.", ["Acquire::http::No-Cache"], []),
        ])

    def test_de_en(self):
        self.check("de-en", [
            ("Bearbeiten Sie /etc/apt/sources.list und führen Sie ./configure aus.",
             ["/etc/apt/sources.list", "./configure"], []),
            ("Class::Accessor::Grouped ist ein Modul.", ["Class::Accessor::Grouped"], ["module"]),
        ])


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import testmain
    sys.exit(testmain.run(__name__))
