#!/usr/bin/python3
"""English-X sentence pairs from Debian 12's translated books (X = de or fr).

The Debian Administrator's Handbook (`debian-handbook` 11.20220922), the Debian New
Maintainers' Guide (`maint-guide[-X]` 1.2.53), the Debian Developer's Reference
(`developers-reference[-X]` 12.18) and the Debian FAQ (`debian-faq[-X]` 11.1) ship as
HTML in each language, built from one DocBook or Sphinx source and per-language PO
files: every language has the same pages, sections (with the same ids) and paragraphs.
So each page's paragraphs (`para` blocks or <p>; listings left out) are grouped by the
section before them and paired by position inside a section whose paragraph count
agrees in both languages; then split into sentences as tools/corpus/manpages.py does
(sentence pairs where both sides have as many, the paragraph whole up to --max-chars
otherwise) and filtered the same way, evaluation sentences included.

  tools/corpus/handbook.py --lang fr --out runs/corpus/handbook.en-fr.tsv.gz

Output: gzip TSV, columns en, X, source ("BOOK:PAGE"). Counts on stdout. Licences:
debian-handbook GPL-2+ or CC-BY-SA-3.0 (Raphaël Hertzog, Roland Mas, Freexian SARL);
maint-guide, developers-reference and debian-faq: see their copyright files
(tools/corpus/README.md).
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

LANG_DIR = {"en": "en-US", "de": "de-DE", "fr": "fr-FR"}
# book: (package of language L, glob of its pages, page name of a path); {L} is the
# language, {LL} publican's (en-US).
BOOKS = {
    "debian-handbook": ("debian-handbook", "usr/share/doc/debian-handbook/html/{LL}/*.html",
                        lambda path: os.path.basename(path)[:-5]),
    "maint-guide": ("maint-guide{-L}", "usr/share/doc/maint-guide{-L}/html/*.{L}.html",
                    lambda path: os.path.basename(path).split(".")[0]),
    "developers-reference": ("developers-reference{-L}",
                             "usr/share/developers-reference/{L/}*.html",
                             lambda path: os.path.basename(path)[:-5]),
    "debian-faq": ("debian-faq{-L}", "usr/share/doc/debian/FAQ/{L/}*.{L}.html",
                   lambda path: os.path.basename(path).split(".")[0]),
}


def book_pages(cache, book, lang):
    """{page name: path} of one book in one language."""
    pkg, pattern, name = BOOKS[book]
    sub = {"{LL}": LANG_DIR[lang], "{L}": lang, "{-L}": "" if lang == "en" else "-" + lang,
           "{L/}": "" if lang == "en" else lang + "/"}
    for k, v in sub.items():
        pkg, pattern = pkg.replace(k, v), pattern.replace(k, v)
    root = manpages.fetch(cache, [pkg])[0]
    pages = {name(p): p for p in glob.glob(os.path.join(root, pattern)) if not os.path.islink(p)}
    # The Developer's Reference also ships as one page holding every chapter: it would
    # put the held-out chapters' text into training.
    pages.pop("developers-reference", None)
    return pages
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
        if a.get("id") and ((tag == "a" and self.in_heading) or tag == "section" or
                            (tag == "div" and "section" in (a.get("class") or "").split())):
            self.key = a["id"]
        if tag in VOID:
            return
        if tag in ("pre", "script", "style"):
            self.skip += 1
        buf = None
        classes = (a.get("class") or "").split()
        if (tag == "div" and "para" in classes) or (tag == "p" and "title" not in classes):
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
    p.add_argument("--books", default=",".join(BOOKS), help="comma-separated: " + ", ".join(BOOKS))
    p.add_argument("--dev-out", help="write the held-out pages' pairs of 26-50 English "
                   "words here (TSV: en, X)")
    args = p.parse_args()
    x = args.lang
    held = manpages.held_out_keys(args.shared, x)
    rows, dev_rows = [], []
    stats = dict(pages=0, sections=0, skipped_sections=0, paragraphs=0, held_out=0, dev_pages=0)
    keeper = manpages.Keeper(held, stats)
    pages = []
    for book in args.books.split(","):
        en, other = book_pages(args.cache, book, "en"), book_pages(args.cache, book, x)
        pages += [(book, name, en[name], other[name]) for name in sorted(en) if name in other]
    for book, page, en_path, x_path in pages:
        stats["pages"] += 1
        es, xs = page_paragraphs(en_path), page_paragraphs(x_path)
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
                    kept = keeper.keep(a, b)
                    if kept:
                        (dev_rows if dev else rows).append((*kept, f"{book}:{page}"))
    manpages.write_outputs(rows, manpages.long_dev(dev_rows), args.out, args.dev_out, stats)


if __name__ == "__main__":
    main()
