#!/usr/bin/python3
"""English-X sentence pairs from public-domain Bible translations (X = de or fr).

General-language narrative, dialogue and long sentences, which the documentation
corpora lack. English: the New Heart English Bible (NHEB, 2009, dedicated to the public
domain by its translators). German: the Menge-Bibel in Hermann Menge's last text of 1939
(Menge died in 1939; public domain since 2010, as the Deutsche Bibelgesellschaft says).
French: Perret-Gentil's Old Testament (1861) and Rilliet's New Testament (1858)
(public domain). All three come as CrossWire SWORD modules (zText: zlib blocks and
a verse index) in github:scrollmapper/bible_databases, sources_backup/LANG/NAME/NAME.zip
(files under 4 MiB, so the `fetch` tool brings them; the full-text JSON/CSV files there
are larger and do not arrive).

A module's verse index is laid out by its versification (SWORD's canon_*.h tables, read
from Debian 12's libsword-dev, downloaded with `apt-get download`): so every entry maps
to (book, chapter, verse) and the two languages pair by reference. A chapter is used
only where both versifications give it the same number of verses (German Psalms count
the superscription as verse 1; Joel and Malachi divide chapters differently). Footnotes
and section headings are dropped (a psalm's superscription is text and stays), the rest
of the OSIS markup stripped. Consecutive
verses are joined until both sides end a sentence at the same verse (a verse is often
half a sentence); a verse missing on either side loses the run it falls in; a group then
becomes sentence pairs where both sides have as many sentences, or stays whole up to
--max-chars; filters and evaluation-set dedup as tools/corpus/manpages.py.

  tools/corpus/bible.py --lang de --source /work/.mirror/scrollmapper+bible_databases/repo \\
      --out runs/corpus/bible.en-de.tsv.gz

--source is the fetched snapshot (a bare git directory, read at HEAD; default
runs/corpus/bible_databases, where a link to it lets tools/build_bundled_models.sh
--corpus bible run this script) or a directory holding NHEB.zip, GerMenge.zip and
FrePGR.zip. Output: gzip TSV, columns en, X, source
("bible:BOOK CHAPTER"). Counts on stdout.
"""
import argparse
import html
import io
import os
import re
import struct
import sys
import zipfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import manpages  # noqa: E402
import prepare_corpus  # noqa: E402
import snapshot  # noqa: E402

# language: (directory under sources_backup/, module name)
MODULES = {"en": ("en", "NHEB"), "de": ("de", "GerMenge"), "fr": ("fr", "FrePGR")}
NOTE = re.compile(r"<note\b[^>]*?(?<!/)>.*?</note>", re.S)  # attached to a word: no space
# Section headings go; a canonical title (a psalm's superscription) is Bible text and
# stays: the translations put it in verse 1, and a module may close it late, past the
# verse's first words.
TITLE = re.compile(r"<title\b(?![^>]*canonical=\"true\")[^>]*?(?<!/)>.*?</title>", re.S)
INLINE = re.compile(r"</?(hi|divineName|transChange|w|name|foreign|seg|catchWord|rdg)\b[^>]*>")
TAG = re.compile(r"<[^>]*>")  # the rest (div, l, lg, lb, chapter, milestone) part words
# A space that a tag left before punctuation (French keeps its own before ; : ! ?).
SPACE_BEFORE = {"fr": re.compile(r"\s+(?=[.,])"), None: re.compile(r"\s+(?=[.,;:!?])")}
# A group of verses closes where both sides end a sentence: . ! ? then closing quotes or
# brackets.
SENTENCE_CLOSED = re.compile(r"[.!?][\"'»«”’)\]]*$")


def module_zip(source, lang):
    """The module's zip as bytes, from the snapshot's git directory or a plain directory."""
    sub, name = MODULES[lang]
    return snapshot.read(source, f"sources_backup/{sub}/{name}/{name}.zip",
                         "github:scrollmapper/bible_databases")


def read_module(data, label="module"):
    """(versification, {testament: {index: raw OSIS text}}) of a zText module's zip;
    LABEL names it in the messages of a damaged one."""
    try:
        return read_zip(zipfile.ZipFile(io.BytesIO(data)), label)
    except (zipfile.BadZipFile, KeyError, struct.error, zlib.error) as e:
        raise SystemExit(f"{label}: not a readable zText module zip ({e.__class__.__name__}: {e})")


def read_zip(z, label):
    names = z.namelist()
    confs = [n for n in names if n.startswith("mods.d/") and n.endswith(".conf")]
    if not confs:
        raise SystemExit(f"{label}: module zip without mods.d/*.conf")
    conf = z.read(confs[0]).decode("utf-8", "replace")
    v11n = re.search(r"^Versification=(\S+)", conf, re.M)
    if (re.search(r"^ModDrv=(?!zText)", conf, re.M | re.I)
            or re.search(r"^CipherKey=\S", conf, re.M)):
        raise SystemExit(f"{label}: {confs[0]}: only unenciphered zText modules are read")
    texts = {}
    for t in ("ot", "nt"):
        idx = [n for n in names if n.endswith(f"/{t}.bzv")]
        if not idx:
            continue
        d = idx[0][:-3]
        bzs, bzv, bzz = z.read(d + "bzs"), z.read(d + "bzv"), z.read(d + "bzz")
        blocks, verses = {}, {}
        for i in range(len(bzv) // 10):
            block, offset, size = struct.unpack_from("<IIH", bzv, i * 10)
            if size == 0:
                continue
            if block not in blocks:
                start, csize, _ = struct.unpack_from("<III", bzs, block * 12)
                blocks[block] = zlib.decompress(bzz[start:start + csize])
            verses[i] = blocks[block][offset:offset + size].decode("utf-8", "replace")
        texts[t] = verses
    return (v11n.group(1) if v11n else "KJV"), texts


def canon(headers, v11n):
    """{testament: {index: (book, chapter, verse)}} of a SWORD versification, from
    canon.h (KJV) and canon_NAME.h: each testament's index holds 0 (empty), 1 (the
    testament's heading), then per book its heading and per chapter its heading and
    verses."""
    def load(name):
        path = os.path.join(headers, name)
        if not os.path.isfile(path):
            raise SystemExit(f"{path}: no such versification header (Versification={v11n})")
        with open(path, encoding="latin-1") as f:
            return re.sub(r"//[^\n]*", "", f.read())
    base = load("canon.h")
    suffix = "" if v11n == "KJV" else "_" + v11n.lower()
    src = load(f"canon{suffix}.h") if suffix else base

    def books(kind):
        m = (re.search(r"struct sbook %s%s\[\] = \{(.*?)\};" % (kind, suffix), src, re.S)
             or re.search(r"struct sbook %s\[\] = \{(.*?)\};" % kind, base, re.S))
        if not m:
            raise SystemExit(f"{headers}: no {kind} table for Versification={v11n}")
        return [(osis, int(n)) for _, _, osis, n in
                re.findall(r'\{"([^"]*)",\s*"([^"]*)",\s*"([^"]*)",\s*(\d+)\}', m.group(1)) if osis]
    m = re.search(r"int vm%s\[\] = \{(.*?)\};" % suffix, src, re.S)
    if not m:
        raise SystemExit(f"{headers}: no vm{suffix} table for Versification={v11n}")
    counts = [int(x) for x in re.findall(r"\d+", m.group(1))]
    if sum(n for _, n in books("otbooks") + books("ntbooks")) != len(counts):
        raise SystemExit(f"{headers}: Versification={v11n}: the books' chapters and the "
                         f"verse-count table ({len(counts)} chapters) disagree")
    out, chapter_no = {}, 0
    for t in ("ot", "nt"):
        index, refs = 2, {}
        for book, chapters in books(t + "books"):
            index += 1
            for c in range(1, chapters + 1):
                index += 1
                for v in range(1, counts[chapter_no] + 1):
                    refs[index] = (book, c, v)
                    index += 1
                chapter_no += 1
        out[t] = refs
    return out


def plain(osis, lang):
    """Verse text without footnotes, headings and markup."""
    text = prepare_corpus.clean(html.unescape(
        TAG.sub(" ", INLINE.sub("", TITLE.sub(" ", NOTE.sub("", osis))))))
    return SPACE_BEFORE.get(lang, SPACE_BEFORE[None]).sub("", text)


def chapters(headers, data, lang, label):
    """{(book, chapter): {verse: text}} of one module (empty verses left out) and
    {(book, chapter): verse count of its versification}."""
    v11n, texts = read_module(data, label)
    refs = canon(headers, v11n)
    out, size = {}, {}
    for t, table in refs.items():
        for (book, c, v) in table.values():
            size[(book, c)] = max(size.get((book, c), 0), v)
        for index, raw in texts.get(t, {}).items():
            ref = table.get(index)
            text = plain(raw, lang) if ref else ""
            if text:
                out.setdefault(ref[:2], {})[ref[2]] = text
    return out, size


def groups(en, x):
    """Runs of consecutive verses joined until both sides close a sentence together."""
    out, a, b, broken = [], [], [], False
    for v in range(1, max(list(en) + list(x) + [0]) + 1):
        if v not in en or v not in x:
            # A verse missing on one side (a textual variant one translation leaves out):
            # the sentence it belongs to is lost, up to where both sides close one.
            a, b, broken = [], [], True
            continue
        a.append(en[v])
        b.append(x[v])
        if SENTENCE_CLOSED.search(a[-1]) and SENTENCE_CLOSED.search(b[-1]):
            if not broken:
                out.append((" ".join(a), " ".join(b)))
            a, b, broken = [], [], False
    return out


def pairs_of(group, max_chars):
    e, t = group
    se, st = manpages.sentences(e), manpages.sentences(t)
    cand = list(zip(se, st)) if len(se) == len(st) and len(se) > 1 else [(e, t)]
    return [(a, b) for a, b in cand
            if len(a) <= max_chars and len(b) <= max_chars and manpages.good(a, b)]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--lang", required=True, choices=["de", "fr"])
    p.add_argument("--source", default="runs/corpus/bible_databases",
                   help="the fetched scrollmapper/bible_databases git directory (or a link "
                   "to it), or a directory with the module zips (default %(default)s)")
    p.add_argument("--out", required=True)
    p.add_argument("--cache", default="runs/corpus/debs")
    p.add_argument("--canon", help="directory of SWORD's canon*.h (default: from Debian 12's "
                   "libsword-dev, downloaded into --cache)")
    p.add_argument("--shared", default=os.path.join(HERE, "..", "..", "..", "shared"))
    p.add_argument("--max-chars", type=int, default=600)
    args = p.parse_args()
    x = args.lang
    headers = args.canon or os.path.join(manpages.fetch(args.cache, ["libsword-dev"])[0],
                                         "usr/include/sword")
    en, en_size = chapters(headers, module_zip(args.source, "en"), "en",
                            MODULES["en"][1] + ".zip")
    xs, x_size = chapters(headers, module_zip(args.source, x), x, MODULES[x][1] + ".zip")
    held = manpages.held_out_keys(args.shared, x)
    rows = []
    stats = dict(chapters=0, skipped_chapters=0, groups=0, held_out=0)
    keeper = manpages.Keeper(held, stats)
    for ref in sorted(set(en) & set(xs)):
        if en_size.get(ref) != x_size.get(ref):
            stats["skipped_chapters"] += 1
            continue
        stats["chapters"] += 1
        for group in groups(en[ref], xs[ref]):
            stats["groups"] += 1
            for pair in pairs_of(group, args.max_chars):
                kept = keeper.keep(*pair)
                if kept:
                    rows.append((*kept, f"bible:{ref[0]} {ref[1]}"))
    manpages.write_outputs(rows, [], args.out, None, stats)


if __name__ == "__main__":
    main()
