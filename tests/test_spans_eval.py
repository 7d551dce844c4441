#!/usr/bin/env python3
"""Protected spans on real software messages (tools/eval_spans.py --check): with the bundled
en-de model, at least 99% of 200 debian-l10n dev messages with placeholders, URLs or e-mail
addresses come back with every span exact (bytes, count, quotes and brackets around it, not
glued to a word), and chrF with protection on is not below chrF with it off. Skips (77)
when ../shared's debian-l10n data or the bundled model is absent.

Run: MT_BUILD_DIR=build MT_SOURCE_DIR=. /usr/bin/python3 tests/test_spans_eval.py
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
    res = subprocess.run([sys.executable, os.path.join(SOURCE, "tools", "eval_spans.py"), "--check", "--show",
                          "--cli", cli, "--model", os.path.join(SOURCE, "models", "en-de")], timeout=1500)
    return res.returncode


if __name__ == "__main__":
    sys.exit(main())
