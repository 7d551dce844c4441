#!/usr/bin/python3
"""English-French pairs of official text: Canada's consolidated federal Acts (Open
Government Licence - Canada, Justice Canada).

Canada drafts its federal laws in English and French side by side, and Justice Canada
publishes the consolidated Acts as XML, one file per Act and language, in
github:justicecanada/laws-lois-xml (`fetch` brings it; the few files of 4 MiB or more,
the Criminal Code, the Excise Tax Act and the Income Tax Act, do not arrive and are
skipped): eng/acts/NAME.xml and fra/lois/NAME.xml. Both versions of an Act carry the
same `lims:fid` on each provision (section, subsection, paragraph, definition, heading,
marginal note), so a provision's text pairs with its other-language version by that id,
whatever the order (definitions are sorted by the term in each language). Each pair then
becomes sentence pairs as in tools/corpus/xquad.py (one to one where the sentence counts
agree, else aligned by length and shared numbers and names), up to --max-chars. Left out:
repealed provisions ("[Repealed ...]"), amendment history, tables and schedules'
bilingual lists, and the other language's term that a definition cites in parentheses.
Filters and evaluation dedup as tools/corpus/manpages.py, plus the news dev set
(runs/eval/news-dev.en-fr.tsv, or the files --held-out names).

Formal, precise language with long sentences (rights, institutions, procedures,
numbers and dates), in a quantity that would swamp the other corpora: --max-pairs keeps
a fixed, content-chosen share (the pairs whose English side hashes lowest), the same on
every run.

  tools/corpus/canlaws.py --lang fr --source /work/.mirror/justicecanada+laws-lois-xml/repo \\
      --out runs/corpus/canlaws.en-fr.tsv.gz

--source is the fetched snapshot (a bare git directory, read at HEAD; default
runs/corpus/laws-lois-xml) or a folder with the same eng/acts and fra/lois folders.
Output: gzip TSV, columns en, fr, source ("canlaws:NAME", the Act's consolidated number).
Counts on stdout.
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import manpages  # noqa: E402
import prepare_corpus  # noqa: E402
import xquad  # noqa: E402

LIMS = "{http://justice.gc.ca/lims}"
FOLDERS = {"en": "eng/acts", "fr": "fra/lois"}
# Elements whose own text is a segment, and elements whose <Text>/<TitleText> children are.
OWN_TEXT = {"MarginalNote", "LongTitle", "ShortTitle"}
CHILD_TEXT = {"Text", "TitleText"}
# Left out of a segment's text: notes, and the other language's defined term.
SKIP = {"en": {"FootnoteRef", "Footnote", "HistoricalNote", "DefinedTermFr"},
        "fr": {"FootnoteRef", "Footnote", "HistoricalNote", "DefinedTermEn"}}
REPEALED = re.compile(r"^\[(Repealed|Abrogé)", re.I)


class Source:
    """The Acts of a fetched snapshot (git directory) or of a folder with its layout."""

    def __init__(self, path):
        self.path = path
        self.folder = os.path.isdir(os.path.join(path, FOLDERS["en"]))
        if not self.folder:
            proc = subprocess.run(["git", "--git-dir", path, "ls-tree", "-r", "-l", "HEAD",
                                   FOLDERS["en"] + "/", FOLDERS["fr"] + "/"],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                raise SystemExit(f"{path}: neither a folder with {FOLDERS['en']}/ nor a git "
                                 f"directory ({proc.stderr.strip()}); fetch "
                                 "github:justicecanada/laws-lois-xml and give its git "
                                 "directory as --source (tools/corpus/README.md)")
            # a size of "BAD" (or "-"): a file the snapshot lacks (4 MiB or more)
            self.tree = {f.split("\t")[1]: f.split()[3] not in ("BAD", "-")
                         for f in proc.stdout.splitlines() if "\t" in f}

    def names(self, lang):
        if self.folder:
            return {os.path.basename(p)[:-4] for p in
                    glob.glob(os.path.join(self.path, FOLDERS[lang], "*.xml"))}
        pre = FOLDERS[lang] + "/"
        return {p[len(pre):-4] for p, present in self.tree.items()
                if p.startswith(pre) and p.endswith(".xml") and present}

    def read(self, lang, name):
        rel = f"{FOLDERS[lang]}/{name}.xml"
        if self.folder:
            with open(os.path.join(self.path, rel), "rb") as f:
                return f.read()
        proc = subprocess.run(["git", "--git-dir", self.path, "show", f"HEAD:{rel}"],
                              capture_output=True)
        if proc.returncode != 0:
            raise SystemExit(f"{self.path}: cannot read {rel}: "
                             f"{proc.stderr.decode('utf-8', 'replace').strip()}")
        return proc.stdout


def text_of(elem, skip):
    parts = [elem.text or ""]
    for child in elem:
        if child.tag not in skip:
            parts.append(text_of(child, skip))
        parts.append(child.tail or "")
    return "".join(parts)


def node_key(elem, counts):
    """What identifies ELEM among its siblings in both languages: its Label (section 2,
    subsection (1), paragraph (a)), a definition's English term (definitions are sorted
    by the term in each language), else its rank among same-tag siblings (headings)."""
    label = elem.find("Label")
    if label is not None and (label.text or "").strip() and "Heading" not in elem.tag:
        # (a heading's label is words, "PART 1" / "PARTIE 1": headings go by rank)
        return (elem.tag, label.text.strip().strip("()"))  # "(a)" in English, "a)" in French
    if elem.tag == "Definition":
        term = elem.find(".//DefinedTermEn")
        if term is not None:
            return (elem.tag, "".join(term.itertext()).strip())
    counts[elem.tag] = counts.get(elem.tag, 0) + 1
    return (elem.tag, f"#{counts[elem.tag]}")


def segments(data, lang, where):
    """{key: text} of one Act's XML, the key a provision's path of labels (the same in
    the English and the French version)."""
    try:
        root = ET.fromstring(data)
    except ET.ParseError as e:
        raise SystemExit(f"{where}: not well-formed XML: {e}")
    out = {}

    def walk(elem, path):
        counts, k = {}, 0
        for child in elem:
            if child.tag in CHILD_TEXT:
                out[path + ((child.tag, k),)] = text_of(child, SKIP[lang])
                k += 1
            elif child.tag in OWN_TEXT:
                out[path + ((child.tag, 0),)] = text_of(child, SKIP[lang])
            elif child.tag not in SKIP[lang] and child.tag != "Label":
                walk(child, path + (node_key(child, counts),))

    walk(root, ())
    for key, text in list(out.items()):
        # the brackets a dropped term leaves, "( )", go with the space before them
        text = re.sub(r"\s*\(\s*\)", "", re.sub(r"\s+", " ", text)).strip()
        if not text or REPEALED.match(text):
            del out[key]
        else:
            out[key] = text
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--lang", required=True, choices=["fr"])
    p.add_argument("--source", default="runs/corpus/laws-lois-xml",
                   help="the fetched justicecanada/laws-lois-xml git directory (or a link "
                   "to it), or a folder with eng/acts/ and fra/lois/ (default %(default)s)")
    p.add_argument("--out", required=True)
    p.add_argument("--shared", default=os.path.join(HERE, "..", "..", "..", "shared"))
    prepare_corpus.add_held_out_option(p)
    p.add_argument("--max-chars", type=int, default=600)
    p.add_argument("--max-pairs", type=int, default=40000,
                   help="keep at most this many pairs, those whose English side hashes "
                   "lowest (0: all; default %(default)s)")
    args = p.parse_args()
    x = args.lang
    held_out = prepare_corpus.held_out_files(p, args.held_out, x)
    src = Source(args.source)
    names = sorted(src.names("en") & src.names(x))
    if not names:
        raise SystemExit(f"{args.source}: no Act in both {FOLDERS['en']}/ and {FOLDERS[x]}/")
    held = manpages.held_out_keys(args.shared, x) | prepare_corpus.tsv_keys(held_out)
    stats = dict(acts=len(names), provisions=0, unpaired=0, held_out=0)
    keeper = manpages.Keeper(held, stats)
    rows = []
    for name in names:
        en = segments(src.read("en", name), "en", f"{FOLDERS['en']}/{name}.xml")
        xs = segments(src.read(x, name), x, f"{FOLDERS[x]}/{name}.xml")
        stats["unpaired"] += len(set(en) ^ set(xs))
        for key in [k for k in en if k in xs]:  # in the English document's order
            stats["provisions"] += 1
            group = (prepare_corpus.clean(en[key]), prepare_corpus.clean(xs[key]))
            for pair in xquad.paragraph_to_pairs(group, args.max_chars):
                kept = keeper.keep(*pair)
                if kept:
                    rows.append((*kept, f"canlaws:{name}"))
    stats["pairs_before_cap"] = len(rows)
    if args.max_pairs and len(rows) > args.max_pairs:
        chosen = set(sorted(range(len(rows)), key=lambda i: (
            zlib.crc32(rows[i][0].encode()), i))[:args.max_pairs])
        rows = [r for i, r in enumerate(rows) if i in chosen]
    manpages.write_outputs(rows, [], args.out, None, stats)


if __name__ == "__main__":
    main()
