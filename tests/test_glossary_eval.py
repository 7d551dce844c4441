#!/usr/bin/env python3
"""Glossary enforcement on real software messages (tools/eval_glossary.py --check): with the
bundled en-de model, every glossary term of 250 debian-l10n dev messages (at least 98%)
comes out as its target term through mt-translate --glossary, and chrF against the
references is no more than 1 point below the translation without the glossary. Skips (77)
when ../shared's debian-l10n data or the bundled model is absent.

Run: MT_BUILD_DIR=build MT_SOURCE_DIR=. /usr/bin/python3 tests/test_glossary_eval.py
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mtfixtures as ts  # noqa: E402


def main():
    return ts.eval_check("eval_glossary.py", timeout=900)


if __name__ == "__main__":
    sys.exit(main())
