#!/usr/bin/env python3
"""Protected spans on real software messages (tools/eval_spans.py --check): with the bundled
en-de model, at least 99% of 200 debian-l10n dev messages with placeholders, URLs or e-mail
addresses come back with every span exact (bytes, count, quotes and brackets around it, not
glued to a word), and chrF with protection on is not below chrF with it off. Skips (77)
when ../shared's debian-l10n data or the bundled model is absent.

Run: MT_BUILD_DIR=build MT_SOURCE_DIR=. /usr/bin/python3 tests/test_spans_eval.py
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mtfixtures as ts  # noqa: E402


def main():
    return ts.eval_check("eval_spans.py", ("--show",), timeout=1500)


if __name__ == "__main__":
    sys.exit(main())
