#!/usr/bin/python3
"""English-X sentence pairs from The Debian Administrator's Handbook (X = de or fr).

Debian 12's `debian-handbook` package (11.20220922) ships the book as HTML in each
language, built by publican from one DocBook source and per-language PO files: every
language has the same pages, sections (with the same ids) and paragraphs. So each
page's paragraphs (DocBook `para`, screen listings left out) are grouped by the
section heading before them and paired by position inside a section whose paragraph
count agrees in both languages; then split into sentences as tools/corpus/manpages.py
does (sentence pairs where both sides have as many, the paragraph whole up to
--max-chars otherwise) and filtered the same way, evaluation sentences included.

  tools/corpus/handbook.py --lang fr --out runs/corpus/handbook.en-fr.tsv.gz

Output: gzip TSV, columns en, X, source ("debian-handbook:PAGE"). Counts on stdout.
Licence of the book: GPL-2+ or CC-BY-SA-3.0, (c) Raphaël Hertzog, Roland Mas,
Freexian SARL and the translators.
"""
import argparse
import glob
import html.parser
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import manpages  # noqa: E402
import prepare_corpus  # noqa: E402

LANG_DIR = {"en": "en-US", "de": "de-DE", "fr": "fr-FR"}
HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
VOID = {"br", "img", "hr", "meta", "link", "input", "col", "area", "base", "wbr"}


class Paragraphs(html.parser.HTMLParser):
    """{section id: [paragraph text, ...]} of one page, in document order."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.sections = {}
        self.key = "(top)"
        self.stack = []       # open tags: (tag, paragraph buffer or None)
        self.skip = 0         # depth inside <pre>, <script>, <style>
        self.in_heading = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in HEADINGS:
            self.in_heading += 1
        if tag == "a" and self.in_heading and a.get("id"):
            self.key = a["id"]
        if tag in VOID:
            return
        if tag in ("pre", "script", "style"):
            self.skip += 1
        buf = None
        if tag == "div" and "para" in (a.get("class") or "").split():
            buf = []
            self.sections.setdefault(self.key, []).append(buf)
        self.stack.append((tag, buf))

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if tag in HEADINGS:
            self.in_heading = max(0, self.in_heading - 1)
        while self.stack:
            t, _ = self.stack.pop()
            if t in ("pre", "script", "style"):
                self.skip -= 1
            if t == tag:
                break

    def handle_data(self, data):
        if self.skip:
            return
        for _, buf in reversed(self.stack):
            if buf is not None:
                buf.append(data)
                return

    def result(self):
        return {k: [" ".join("".join(b).split()) for b in v] for k, v in self.sections.items()}


def page_paragraphs(path):
    p = Paragraphs()
    with open(path, encoding="utf-8") as f:
        p.feed(f.read())
    return p.result()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--lang", required=True, choices=["de", "fr"])
    p.add_argument("--out", required=True)
    p.add_argument("--cache", default="runs/corpus/debs")
    p.add_argument("--shared", default=os.path.join(HERE, "..", "..", "..", "shared"))
    p.add_argument("--max-chars", type=int, default=600)
    p.add_argument("--dev-out", help="write the held-out pages' pairs of 26-50 English "
                   "words here (TSV: en, X)")
    args = p.parse_args()
    x = args.lang
    root = os.path.join(manpages.fetch(args.cache, ["debian-handbook"])[0],
                        "usr/share/doc/debian-handbook/html")
    held = manpages.held_out_keys(args.shared, x)
    seen, rows, dev_rows = set(), [], []
    stats = dict(pages=0, sections=0, skipped_sections=0, paragraphs=0, held_out=0, dev_pages=0)
    for en_path in sorted(glob.glob(os.path.join(root, LANG_DIR["en"], "*.html"))):
        x_path = os.path.join(root, LANG_DIR[x], os.path.basename(en_path))
        if not os.path.exists(x_path):
            continue
        stats["pages"] += 1
        es, xs = page_paragraphs(en_path), page_paragraphs(x_path)
        page = os.path.basename(en_path)[:-5]
        dev = manpages.held_out_page(page)
        stats["dev_pages"] += dev
        for key, eps in es.items():
            xps = xs.get(key)
            stats["sections"] += 1
            if xps is None or len(xps) != len(eps):
                stats["skipped_sections"] += 1
                continue
            for e, t in zip(eps, xps):
                stats["paragraphs"] += 1
                se, st = manpages.sentences(e), manpages.sentences(t)
                if len(se) == len(st) and len(se) > 1:
                    cand = list(zip(se, st))
                else:
                    cand = [(e, t)]
                for a, b in cand:
                    if len(a) > args.max_chars or len(b) > args.max_chars or not manpages.good(a, b):
                        continue
                    a, b = prepare_corpus.clean(a), prepare_corpus.clean(b)
                    if (a, b) in seen:
                        continue
                    seen.add((a, b))
                    if prepare_corpus.eval_key(a) in held or prepare_corpus.eval_key(b) in held:
                        stats["held_out"] += 1
                        continue
                    (dev_rows if dev else rows).append((a, b, f"debian-handbook:{page}"))
    manpages.write_outputs(rows, manpages.long_dev(dev_rows), args.out, args.dev_out, stats)


if __name__ == "__main__":
    main()
