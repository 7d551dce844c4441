#!/usr/bin/python3
"""English-X sentence pairs from Debian 12's translated manual pages (X = de or fr).

The translations in manpages-de / manpages-fr (the manpages-l10n project) and in the
packages that ship their own (dpkg, apt, procps, ...: whatever is installed under
/usr/share/man/X) are made with po4a from the English pages, which keeps the page's
structure: paragraph k of the translation translates paragraph k of the English page
of the same version. So both pages are rendered with groff (one paragraph a line, no
hyphenation, no justification), cut into sections at their headings (the translation's
extra last section, its translators, dropped) and paired by position inside a section
whose paragraph count agrees. A paragraph pair whose
sentence counts agree becomes sentence pairs; otherwise it is kept whole up to
--max-chars (long sentences are what the models lack). Pairs whose two sides are equal
(commands, options, code), that have too few letters, or whose lengths differ by more
than 2:1 (4:1 up to 30 characters) are dropped; so is any pair with a side that is
also a sentence of an evaluation set (Multi30k val/test, Tatoeba and debian-l10n dev,
tools/data/*.tsv; compared case- and space-insensitively).

English pages: the Debian 12 packages manpages and manpages-dev (downloaded with
`apt-get download` into --cache) and the installed /usr/share/man/manN. Translated
pages: manpages-X (downloaded) and the installed /usr/share/man/X.

  tools/corpus/manpages.py --lang fr --out runs/corpus/manpages.en-fr.tsv.gz

Output: gzip TSV, columns en, X, source ("manpages:NAME.SECTION"). Counts on stdout.
Debian 12 (bookworm) only: data from Debian 13 is kept for evaluation.
"""
import argparse
import glob
import gzip
import os
import re
import subprocess
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import prepare_corpus  # noqa: E402

ENGLISH_DEBS = ["manpages", "manpages-dev"]
GROFF = ["groff", "-k", "-t", "-man", "-Tutf8", "-rLL=5000n", "-rHY=0",
         "-P-c", "-P-b", "-P-o", "-P-u"]
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'«(]?[^\W\d_])")


def held_out_page(name):
    """One page in 10, chosen by its name (the same in every language), is kept out of
    training whole: its long sentences make the long-sentence dev set."""
    return zlib.crc32(name.encode()) % 10 == 0


def write_outputs(rows, dev_rows, out, dev_out, stats):
    """The training TSV, the dev TSV (the held-out pages' pairs of 26-50 English words)
    and a summary line on stdout."""
    for path, data in ((out, rows), (dev_out, dev_rows)):
        if path is None:
            continue
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path + ".tmp", "wt", encoding="utf-8") as f:
            for r in data:
                f.write("\t".join(r[:2] if path == dev_out else r) + "\n")
        os.replace(path + ".tmp", path)
    words = sum(len(r[0].split()) for r in rows)
    long = sum(1 for r in rows if len(r[0].split()) > 25)
    print(f"{out}: {len(rows)} pairs, {words} English words, {long} of over 25 words; "
          f"dev {len(dev_rows)} pairs; " + ", ".join(f"{k} {v}" for k, v in stats.items()))


class Keeper:
    """What every corpus script keeps of the pairs it finds: each pair once (after
    prepare_corpus.clean) and none with a side that is an evaluation sentence (held:
    held_out_keys; counted in stats["held_out"])."""

    def __init__(self, held, stats):
        self.held, self.stats, self.seen = held, stats, set()
        stats.setdefault("held_out", 0)

    def keep(self, a, b):
        """(a, b) cleaned, or None for a pair seen before or holding an evaluation sentence."""
        a, b = prepare_corpus.clean(a), prepare_corpus.clean(b)
        if (a, b) in self.seen:
            return None
        self.seen.add((a, b))
        if prepare_corpus.eval_key(a) in self.held or prepare_corpus.eval_key(b) in self.held:
            self.stats["held_out"] += 1
            return None
        return a, b


def long_dev(pairs):
    return [p for p in pairs if 26 <= len(p[0].split()) <= 50]


def fetch(cache, packages):
    """Download (once) and unpack the .debs; returns their unpacked roots."""
    os.makedirs(cache, exist_ok=True)
    roots = []
    for pkg in packages:
        root = os.path.join(cache, pkg)
        if not os.path.isdir(root):
            debs = glob.glob(os.path.join(cache, f"{pkg}_*.deb"))
            if not debs:
                subprocess.run(["apt-get", "download", pkg], cwd=cache, check=True,
                               stdout=subprocess.DEVNULL)
                debs = glob.glob(os.path.join(cache, f"{pkg}_*.deb"))
            subprocess.run(["dpkg-deb", "-x", debs[0], root + ".tmp"], check=True)
            os.replace(root + ".tmp", root)
        roots.append(root)
    return roots


def render(path):
    """The page as lines of text: one paragraph, heading or tag a line; None for a page
    that only includes another (.so) or that groff cannot render."""
    with gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb") as f:
        src = f.read()
    if len(src) < 200 and src.lstrip().startswith(b".so "):
        return None
    proc = subprocess.run(GROFF, input=src, capture_output=True)
    if proc.returncode != 0:
        return None
    text = proc.stdout.decode("utf-8", "replace")
    lines = [l.rstrip() for l in text.split("\n")]
    lines = [l for l in lines if l.strip()]
    return lines[1:-1]  # page header and footer


def sections(lines):
    """[(heading, [paragraph, ...])]: headings are the lines that start in column 0."""
    out = []
    for line in lines:
        if not line[0].isspace():
            out.append((line.strip(), []))
        elif out:
            out[-1][1].append(" ".join(line.split()))
    return out


def sentences(paragraph):
    return [s.strip() for s in SENTENCE_END.split(paragraph) if s.strip()]


def letters(text):
    return sum(1 for c in text if c.isalpha())


def good(en, x):
    if en == x or letters(en) < 3 or letters(x) < 3:
        return False
    if letters(en) < 0.5 * len(en.replace(" ", "")):
        return False
    a, b = len(en), len(x)
    limit = 4.0 if max(a, b) <= 30 else 2.0
    return max(a, b) <= limit * min(a, b)


def align_page(en_lines, x_lines, max_chars):
    """Pairs of one page; (pairs, paragraphs compared, sections skipped)."""
    es, xs = sections(en_lines), sections(x_lines)
    if len(xs) == len(es) + 1:
        xs = xs[:-1]  # the translation's own last section: its translators
    if len(es) != len(xs):
        return [], 0, len(es)
    pairs, compared, skipped = [], 0, 0
    for (_, ep), (_, xp) in zip(es, xs):
        if len(ep) != len(xp):
            skipped += 1
            continue
        for e, x in zip(ep, xp):
            compared += 1
            se, sx = sentences(e), sentences(x)
            if len(se) == len(sx) and len(se) > 1:
                pairs.extend(p for p in zip(se, sx) if len(p[0]) <= max_chars and len(p[1]) <= max_chars)
            elif len(e) <= max_chars and len(x) <= max_chars:
                pairs.append((e, x))
    return [p for p in pairs if good(*p)], compared, skipped


def held_out_keys(shared, x):
    """Every evaluation sentence of either language, as prepare_corpus compares them."""
    d = os.path.join(shared, "data")
    sets = [prepare_corpus.read_pairs_parallel(f"{d}/multi30k/{s}.en.gz", f"{d}/multi30k/{s}.{x}.gz")
            for s in ("val", "test_2016_flickr")]
    sets += [prepare_corpus.read_pairs_tsv(f"{d}/{c}/dev.en-{x}.tsv.gz") for c in ("tatoeba", "debian-l10n")]
    keys = {prepare_corpus.eval_key(t) for pairs in sets for p in pairs for t in p}
    return keys | prepare_corpus.local_eval_keys(x)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--lang", required=True, choices=["de", "fr"])
    p.add_argument("--out", required=True)
    p.add_argument("--cache", default="runs/corpus/debs")
    p.add_argument("--shared", default=os.path.join(HERE, "..", "..", "..", "shared"))
    p.add_argument("--max-chars", type=int, default=600,
                   help="longest side kept (about 150 tokens; the models take 512)")
    p.add_argument("--installed", default="/usr/share/man")
    p.add_argument("--dev-out", help="write the held-out pages' pairs of 26-50 English "
                   "words here (TSV: en, X)")
    args = p.parse_args()
    x = args.lang
    roots = fetch(args.cache, ENGLISH_DEBS + [f"manpages-{x}"])
    english = {}
    for root in [args.installed] + [os.path.join(r, "usr/share/man") for r in roots[:-1]]:
        for path in glob.glob(os.path.join(root, "man*", "*")):
            english[os.path.relpath(path, root)] = path  # later roots win: the packages
    translated = {}
    for root in [os.path.join(args.installed, x), os.path.join(roots[-1], "usr/share/man", x)]:
        for path in glob.glob(os.path.join(root, "man*", "*")):
            translated[os.path.relpath(path, root)] = path
    held = held_out_keys(args.shared, x)
    rows, dev_rows = [], []
    stats = dict(pages=0, aligned_pages=0, paragraphs=0, skipped_sections=0, held_out=0,
                 dev_pages=0)
    keeper = Keeper(held, stats)
    for rel in sorted(translated):
        if rel not in english:
            continue
        en_lines, x_lines = render(english[rel]), render(translated[rel])
        if not en_lines or not x_lines:
            continue
        stats["pages"] += 1
        pairs, compared, skipped = align_page(en_lines, x_lines, args.max_chars)
        stats["paragraphs"] += compared
        stats["skipped_sections"] += skipped
        if pairs:
            stats["aligned_pages"] += 1
        name = os.path.basename(rel)
        name = name[:-3] if name.endswith(".gz") else name
        dev = held_out_page(name)
        stats["dev_pages"] += dev
        for pair in pairs:
            kept = keeper.keep(*pair)
            if kept:
                (dev_rows if dev else rows).append((*kept, f"manpages:{name}"))
    write_outputs(rows, long_dev(dev_rows), args.out, args.dev_out, stats)


if __name__ == "__main__":
    main()
