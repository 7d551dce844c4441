#!/usr/bin/env python3
"""Glossary enforcement on real software messages (tools/eval_glossary.py --check): with the
bundled en-de model, every glossary term of 250 debian-l10n dev messages (at least 98%)
comes out as its target term through mt-translate --glossary, and chrF against the
references is no more than 1 point below the translation without the glossary. Skips (77)
when ../shared's debian-l10n data or the bundled model is absent.

Run: MT_BUILD_DIR=build MT_SOURCE_DIR=. /usr/bin/python3 tests/test_glossary_eval.py
"""
import os
import subprocess
import sys

SOURCE = os.environ.get("MT_SOURCE_DIR", ".")
BUILD = os.environ.get("MT_BUILD_DIR", "build")


def main():
    model = os.path.join(SOURCE, "models", "en-de", "model.safetensors")
    if not os.path.exists(model):
        print("SKIP: no bundled model at %s" % model)
        return 77
    cli = os.path.join(BUILD, "cli", "mt-translate")
    res = subprocess.run([sys.executable, os.path.join(SOURCE, "tools", "eval_glossary.py"), "--check",
                          "--cli", cli, "--model", os.path.join(SOURCE, "models", "en-de")], timeout=900)
    return res.returncode


if __name__ == "__main__":
    sys.exit(main())
