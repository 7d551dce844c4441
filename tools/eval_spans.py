#!/usr/bin/python3
"""Protected spans on real software messages: are placeholders exact, and is the rest of
each message as good as without protection?

Takes the messages of the debian-l10n dev split (../shared/data/debian-l10n) that hold a
placeholder, URL or e-mail address: every one of dev.en-de (German references), then the
English side of dev.en-fr's until there are --count (exactness only: no German reference).
Translates them with mt-translate, protection on (the default) and off (--no-protect), and
reports per setting:

  exact: messages whose every span came back right: each span's bytes as often as in the
         source; a span between quotes or brackets in the source between an opening and a
         closing quote or bracket in the output (any style: '%s' may become »%s«); a span
         with whitespace on a side in the source not glued to a letter or digit there;
  chrF:  of the dev.en-de messages against their references (tools/bleu.py).

  tools/eval_spans.py [--cli build/cli/mt-translate] [--model models/en-de]
                      [--shared ../shared] [--count 200] [--check] [--show]

--check exits 1 unless protection on has >= 99% exact and chrF on >= chrF off; exit 77
when the data is absent. Spans are found here by their own patterns, not by protect.c's.
"""
import argparse
import gzip
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bleu  # noqa: E402

SPAN = re.compile(
    r"%(?:\d+\$)?[-+#0]*\d*(?:\.\d+)?[hlLqjzt]*[diouxXeEfFgGcsp]"  # printf
    r"|%\([A-Za-z_]\w*\)[-+#0]*\d*(?:\.\d+)?[diouxXeEfFgGcrs]"  # Python named
    r"|\{\w*\}"  # brace fields
    r"|\$\{\w+\}|\$[A-Z_][A-Z0-9_]{1,}"  # variables
    r"|<x id=\"[^\"]*\"/>"  # XML placeholders
    r"|(?:https?|ftp)://[^\s<>\"')\]]*[^\s<>\"')\].,;:!?]"  # URLs
    r"|[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}")  # e-mail
OPEN = set("'\"([{`“„‚‘«»‹›")
CLOSE = set("'\")]}'”“‘’»«›‹")


def spans(text):
    """(start, end) of each span (a printf '%s' at a word's start only, as protect.c)."""
    out = []
    for m in SPAN.finditer(text):
        s = m.group(0)
        if s.startswith("%") and not s.startswith("%(") and m.end() < len(text) and text[m.end()].isalnum():
            continue
        out.append((m.start(), m.end()))
    return out


def is_word(c):
    return c.isalnum() or c == "_"


def exact(src, out):
    """1 when every span of src came back right in out (see the module's docstring)."""
    sp = spans(src)
    for a, e in sp:
        x = src[a:e]
        if out.count(x) != src.count(x):
            return False
        hits = [i for i in range(len(out)) if out.startswith(x, i)]
        before = src[a - 1] if a > 0 else " "
        after = src[e] if e < len(src) else " "

        def around(i):
            return (out[i - 1] if i > 0 else " "), (out[i + len(x)] if i + len(x) < len(out) else " ")

        if before in OPEN and after in CLOSE:
            if not any(around(i)[0] in OPEN and around(i)[1] in CLOSE for i in hits):
                return False
        if before.isspace() and not any(not is_word(around(i)[0]) for i in hits):
            return False
        if after.isspace() and not any(not is_word(around(i)[1]) for i in hits):
            return False
    return True


def messages(shared, count):
    """[(source, reference or None)]: dev.en-de's with spans, then dev.en-fr's sources."""
    out, seen = [], set()
    base = os.path.join(shared, "data", "debian-l10n")
    for name, with_ref in (("dev.en-de.tsv.gz", True), ("dev.en-fr.tsv.gz", False)):
        with gzip.open(os.path.join(base, name), "rt", encoding="utf-8") as f:
            for line in f:
                cols = line.rstrip("\n").split("\t")
                if len(cols) < 2 or cols[0] in seen or not spans(cols[0]):
                    continue
                if not with_ref and len(out) >= count:
                    break
                seen.add(cols[0])
                out.append((cols[0], cols[1] if with_ref else None))
    return out


def translate(cli, model, lines, protect):
    args = [cli, "--model", model] + ([] if protect else ["--no-protect"])
    res = subprocess.run(args, input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=1800)
    if res.returncode != 0:
        sys.exit("%s failed (%d): %s" % (" ".join(args), res.returncode, res.stderr[-2000:]))
    out = res.stdout.split("\n")[:len(lines)]
    if len(out) != len(lines):
        sys.exit("%s: %d lines for %d" % (cli, len(out), len(lines)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    src_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--cli", default=os.path.join(os.environ.get("MT_BUILD_DIR", "build"), "cli", "mt-translate"))
    ap.add_argument("--model", default=os.path.join(src_dir, "models", "en-de"))
    ap.add_argument("--shared", default=os.environ.get("MT_SHARED_DIR", os.path.join(src_dir, "..", "shared")))
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--show", action="store_true", help="print the messages that are not exact")
    a = ap.parse_args()
    if not os.path.exists(os.path.join(a.shared, "data", "debian-l10n", "dev.en-de.tsv.gz")):
        print("SKIP: no debian-l10n data under %s" % a.shared)
        return 77
    msgs = messages(a.shared, a.count)
    src = [s for s, _ in msgs]
    with_ref = [i for i, (_, r) in enumerate(msgs) if r is not None]
    figures = {}
    for name, protect in (("on", True), ("off", False)):
        out = translate(a.cli, a.model, src, protect)
        good = [exact(s, o) for s, o in zip(src, out)]
        chrf = bleu.corpus_chrf([out[i] for i in with_ref], [msgs[i][1] for i in with_ref])
        figures[name] = (sum(good), chrf)
        print("protection %-3s: exact %d of %d (%.1f%%), chrF %.2f on the %d dev.en-de messages"
              % (name, sum(good), len(src), 100.0 * sum(good) / len(src), chrf, len(with_ref)))
        if a.show:
            for s, o, g in zip(src, out, good):
                if not g:
                    print("  %s\n  -> %s" % (s, o))
    if a.check:
        on_exact, on_chrf = figures["on"]
        ok = on_exact >= 0.99 * len(src) and on_chrf >= figures["off"][1]
        print("targets (exact >= 99%%, chrF on >= off): %s" % ("met" if ok else "NOT met"))
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
