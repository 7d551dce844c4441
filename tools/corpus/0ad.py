#!/usr/bin/python3
"""English-X pairs from 0 A.D.'s translations (X = de or fr): civilisation histories,
map and unit descriptions, tutorials, the in-game manual.

0 A.D. (Debian 12's `0ad-data` 0.0.26, CC-BY-SA 3.0, Wildfire Games and its Transifex
translators) ships its catalogues as PO files inside
/usr/share/games/0ad/mods/public/public.zip (l10n/X.public-*.po), not as the .mo files
that the shared debian-l10n corpus was built from, so none of it is there yet. The .deb
(1.4 GB) is fetched with `apt-get download` into --cache; the zip is unpacked to a
temporary file only long enough to copy its l10n/ folder out (into --cache/0ad-l10n).

Each translated, non-fuzzy message: English msgid, X msgstr (plural entries give their
singular). Markup ([font=...], [color=...], [icon=...]) is removed; a message with a
placeholder (%(name)s, %s, {0}) is skipped, since the model should not learn them from
here. A message with line breaks (also the game's own, a backslash and n in the text:
quotations and their attributions) pairs line by line where both sides have as many
lines, and is kept whole otherwise; then sentence splitting, filters and evaluation
dedup as tools/corpus/manpages.py.

  tools/corpus/0ad.py --lang fr --out runs/corpus/0ad.en-fr.tsv.gz

Output: gzip TSV, columns en, X, source ("0ad:DOMAIN"). Counts on stdout.
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import manpages  # noqa: E402

PACKAGE = "0ad-data"
PUBLIC_ZIP = "./usr/share/games/0ad/mods/public/public.zip"
MARKUP = re.compile(r"\[/?(font|color|icon|b|i|u)\b[^\]]*\]")
PLACEHOLDER = re.compile(r"%\(\w+\)\w|%[sdif]|%\d|\{\w*\}|\$\w")
ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "r": ""}
ENTRY_LINE = re.compile(r'(msgctxt|msgid|msgid_plural|msgstr(?:\[\d+\])?)\s+"(.*)"$')


def l10n_dir(cache):
    """The l10n/ folder of public.zip, copied out of the .deb once."""
    out = os.path.join(cache, "0ad-l10n")
    if os.path.isdir(out):
        return out
    os.makedirs(cache, exist_ok=True)
    debs = glob.glob(os.path.join(cache, f"{PACKAGE}_*.deb"))
    if not debs:
        subprocess.run(["apt-get", "download", PACKAGE], cwd=cache, check=True,
                       stdout=subprocess.DEVNULL)
        debs = glob.glob(os.path.join(cache, f"{PACKAGE}_*.deb"))
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        tar = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", debs[0]], stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", tmp, PUBLIC_ZIP], stdin=tar.stdout, check=True)
        if tar.wait() != 0:
            raise SystemExit(f"dpkg-deb could not read {debs[0]}")
        with zipfile.ZipFile(os.path.join(tmp, PUBLIC_ZIP)) as z:
            for name in z.namelist():
                if name.startswith("l10n/") and name.endswith((".po", ".pot")):
                    z.extract(name, tmp)
        shutil.move(os.path.join(tmp, "l10n"), out)
    return out


def unescape(s):
    return re.sub(r"\\(.)", lambda m: ESCAPES.get(m.group(1), m.group(1)), s)


def po_entries(text):
    """[(msgid, msgstr)] of a PO file: translated, not fuzzy, not the header; for a
    plural entry its singular and msgstr[0]."""
    out, cur, key, fuzzy = [], {}, None, False
    for line in text.split("\n") + [""]:
        line = line.strip()
        new_entry = not line or line.startswith(("#", "msgctxt ", "msgid "))
        if new_entry and any(k.startswith("msgstr") for k in cur):
            s = cur.get("msgstr", cur.get("msgstr[0]", ""))
            if cur.get("msgid") and s and not fuzzy:
                out.append((unescape(cur["msgid"]), unescape(s)))
            cur, key, fuzzy = {}, None, False
        if line.startswith("#,"):
            fuzzy = "fuzzy" in line  # a flag of the entry that follows
        elif line.startswith('"') and line.endswith('"') and len(line) > 1 and key:
            cur[key] += line[1:-1]
        elif line and not line.startswith("#"):
            m = ENTRY_LINE.match(line)
            if m:
                key = m.group(1)
                cur[key] = m.group(2)
    return out


def pairs_of(en, x, max_chars):
    """Sentence pairs of one message (see the module's description)."""
    # The game's own line break is a backslash and n in the text ("\\n" in the PO file).
    en, x = (MARKUP.sub("", m).replace("\\n", "\n") for m in (en, x))
    if PLACEHOLDER.search(en) or PLACEHOLDER.search(x):
        return []
    el = [" ".join(l.split()) for l in en.split("\n") if l.strip()]
    xl = [" ".join(l.split()) for l in x.split("\n") if l.strip()]
    blocks = list(zip(el, xl)) if len(el) == len(xl) else [(" ".join(el), " ".join(xl))]
    out = []
    for e, t in blocks:
        se, st = manpages.sentences(e), manpages.sentences(t)
        cand = list(zip(se, st)) if len(se) == len(st) and len(se) > 1 else [(e, t)]
        out += [(a, b) for a, b in cand
                if len(a) <= max_chars and len(b) <= max_chars and manpages.good(a, b)]
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--lang", required=True, choices=["de", "fr"])
    p.add_argument("--out", required=True)
    p.add_argument("--cache", default="runs/corpus/debs")
    p.add_argument("--l10n", help="a folder of 0 A.D.'s X.public-*.po files (default: "
                   "copied from Debian 12's 0ad-data into --cache)")
    p.add_argument("--shared", default=os.path.join(HERE, "..", "..", "..", "shared"))
    p.add_argument("--max-chars", type=int, default=600)
    args = p.parse_args()
    x = args.lang
    folder = args.l10n or l10n_dir(args.cache)
    files = sorted(glob.glob(os.path.join(folder, f"{x}.*.po")))
    if not files:
        raise SystemExit(f"{folder}: no {x}.*.po files")
    held = manpages.held_out_keys(args.shared, x)
    rows = []
    stats = dict(files=len(files), messages=0, held_out=0)
    keeper = manpages.Keeper(held, stats)
    for path in files:
        domain = os.path.basename(path)[len(x) + 1:-3]
        try:
            with open(path, encoding="utf-8") as f:
                entries = po_entries(f.read())
        except UnicodeDecodeError as e:
            raise SystemExit(f"{path}: not UTF-8 ({e})")
        for en, t in entries:
            stats["messages"] += 1
            for pair in pairs_of(en, t, args.max_chars):
                kept = keeper.keep(*pair)
                if kept:
                    rows.append((*kept, f"0ad:{domain}"))
    manpages.write_outputs(rows, [], args.out, None, stats)


if __name__ == "__main__":
    main()
