#!/usr/bin/python3
"""English-German pairs of encyclopaedic prose and questions: XQuAD (DeepMind, CC BY-SA 4.0).

XQuAD is the 240 paragraphs and 1,190 questions of 48 English Wikipedia articles of the
SQuAD v1.1 development set (the Super Bowl, Warsaw, the Normans, the Amazon rainforest,
the Yuan dynasty, oxygen, ...) with their professional translations; German is one of its
ten languages, French is not. Written, edited, fact-dense text with names, numbers and
dates: the register of news, which the other corpora lack. From github:deepmind/xquad
(`fetch` brings it: files under 4 MiB): xquad.en.json and xquad.de.json, in the SQuAD
format, the same articles and paragraphs in the same order with the same question ids.
A paragraph pairs with its translation where the question ids agree (the check that the
files line up), then becomes sentence pairs: one to one where both sides have as many
sentences, else by a length-based alignment that lets a sentence pair with two or three
(translators split long sentences), dropping beads whose lengths disagree; each question pairs with the one of the
same id (the answers, short spans, are not used). Filters and evaluation dedup as
tools/corpus/manpages.py, plus the news dev set (runs/eval/news-dev.en-de.tsv, the files
--held-out names).

  tools/corpus/xquad.py --lang de --source /work/.mirror/deepmind+xquad/repo \\
      --out runs/corpus/xquad.en-de.tsv.gz

--source is the fetched snapshot (a bare git directory, read at HEAD; default
runs/corpus/xquad, where a link to it lets tools/build_bundled_models.sh --corpus xquad
run this script) or a folder holding the two files. Output: gzip TSV, columns en, de,
source ("xquad:context" or "xquad:question"). Counts on stdout.
"""
import argparse
import json
import math
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import bible  # noqa: E402
import manpages  # noqa: E402
import prepare_corpus  # noqa: E402
import snapshot  # noqa: E402


def load(source, lang):
    name = f"xquad.{lang}.json"
    raw = snapshot.read(source, name, "github:deepmind/xquad")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SystemExit(f"{source}: {name} is not JSON: {e}")
    articles = data.get("data") if isinstance(data, dict) else None
    if not isinstance(articles, list) or not all(
            isinstance(a, dict) and isinstance(a.get("paragraphs"), list) for a in articles):
        raise SystemExit(f"{source}: {name}: expected SQuAD format "
                         "({\"data\": [{\"paragraphs\": [...]}, ...]})")
    paragraphs = []
    for a in articles:
        for p in a["paragraphs"]:
            if not isinstance(p, dict) or not isinstance(p.get("context"), str) \
                    or not isinstance(p.get("qas"), list):
                raise SystemExit(f"{source}: {name}: article {a.get('title')!r} has a "
                                 "paragraph without context and qas")
            qas = {q.get("id"): q.get("question", "") for q in p["qas"] if isinstance(q, dict)}
            paragraphs.append((p["context"], qas))
    return paragraphs


def paragraph_pairs(en, x, stats):
    """[(en, x, kind)] of two files' paragraphs, which must line up one to one."""
    if len(en) != len(x):
        raise SystemExit(f"the English file has {len(en)} paragraphs, the translation "
                         f"{len(x)}: not the same XQuAD release")
    out = []
    for (ectx, eqs), (xctx, xqs) in zip(en, x):
        if list(eqs) != list(xqs):
            stats["skipped_paragraphs"] += 1  # the files do not line up here
            continue
        stats["paragraphs"] += 1
        out.append((ectx, xctx, "context"))
        out.extend((eqs[k], xqs[k], "question") for k in eqs)
    if en and stats["skipped_paragraphs"] > len(en) // 10:
        raise SystemExit(f"{stats['skipped_paragraphs']} of {len(en)} paragraphs have "
                         "other question ids in the translation: the files do not line up")
    return out


# Sentence beads the alignment may form (English sentences, translated sentences), and
# what a bead other than one-to-one costs on top of its mismatch.
BEADS = {(1, 1): 0.0, (1, 2): 0.3, (2, 1): 0.3, (1, 3): 0.6, (3, 1): 0.6, (2, 2): 0.6}
MAX_LENGTH_MISMATCH = 0.45  # |log of the length ratio| a kept bead may have (about 1.6:1)
ANCHOR_WEIGHT = 0.6
WORD = re.compile(r"\w+")


def anchors(text, shared):
    return {w for w in WORD.findall(text) if w in shared}


def align_sentences(es, xs):
    """[(en, x)] of a paragraph whose sides have different sentence counts (translators
    split and join sentences): the beads above chosen by dynamic programming over the
    sentence lists, at the least cost of length mismatch (Gale and Church's idea) plus
    anchor mismatch (the numbers and names, words with a digit or a capital and four
    letters, that occur on both sides of the paragraph: a bead should hold the same
    ones); each bead's sides joined with a space, beads whose lengths disagree dropped."""
    if not es or not xs:
        return []
    ratio = sum(map(len, xs)) / max(1, sum(map(len, es)))
    names = [w for w in WORD.findall(" ".join(es))
             if any(c.isdigit() for c in w) or (len(w) >= 4 and w[0].isupper())]
    shared = set(names) & set(WORD.findall(" ".join(xs)))

    def length_mismatch(a, b):
        return abs(math.log((len(b) + 10) / (ratio * len(a) + 10)))

    def cost_of(a, b):
        ea, xb = anchors(a, shared), anchors(b, shared)
        union = ea | xb
        miss = 1 - len(ea & xb) / len(union) if union else 0.0
        return length_mismatch(a, b) + ANCHOR_WEIGHT * miss

    inf = float("inf")
    cost = [[inf] * (len(xs) + 1) for _ in range(len(es) + 1)]
    back = {}
    cost[0][0] = 0.0
    for i in range(len(es) + 1):
        for j in range(len(xs) + 1):
            if cost[i][j] == inf:
                continue
            for (di, dj), extra in BEADS.items():
                if i + di > len(es) or j + dj > len(xs):
                    continue
                c = cost[i][j] + extra + cost_of(" ".join(es[i:i + di]), " ".join(xs[j:j + dj]))
                if c < cost[i + di][j + dj]:
                    cost[i + di][j + dj] = c
                    back[(i + di, j + dj)] = (i, j)
    if cost[len(es)][len(xs)] == inf:
        return []
    pairs, at = [], (len(es), len(xs))
    while at != (0, 0):
        i, j = back[at]
        a, b = " ".join(es[i:at[0]]), " ".join(xs[j:at[1]])
        if length_mismatch(a, b) <= MAX_LENGTH_MISMATCH:
            pairs.append((a, b))
        at = (i, j)
    return pairs[::-1]


def paragraph_to_pairs(group, max_chars):
    """Sentence pairs of a paragraph: one to one where both sides have as many
    sentences (bible.pairs_of), else aligned by length."""
    e, t = group
    se, st = manpages.sentences(e), manpages.sentences(t)
    if len(se) == len(st):
        return bible.pairs_of(group, max_chars)
    return [(a, b) for a, b in align_sentences(se, st)
            if len(a) <= max_chars and len(b) <= max_chars and manpages.good(a, b)]


def text(s):
    """A context's text on one line: a subscript written on the next line ("O\n2",
    the oxygen article) joins its formula, any other line break becomes a space."""
    return re.sub(r"\s*\n\s*", " ", re.sub(r"(?<=[A-Za-z])\n(?=\d)", "", s))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--lang", required=True, choices=["de"])
    p.add_argument("--source", default="runs/corpus/xquad",
                   help="the fetched deepmind/xquad git directory (or a link to it), or a "
                   "folder with xquad.en.json and xquad.de.json (default %(default)s)")
    p.add_argument("--out", required=True)
    p.add_argument("--shared", default=os.path.join(HERE, "..", "..", "..", "shared"))
    prepare_corpus.add_held_out_option(p)
    p.add_argument("--max-chars", type=int, default=600)
    args = p.parse_args()
    x = args.lang
    held_out = prepare_corpus.held_out_files(p, args.held_out, x)
    en, xs = load(args.source, "en"), load(args.source, x)
    held = manpages.held_out_keys(args.shared, x) | prepare_corpus.tsv_keys(held_out)
    stats = dict(paragraphs=0, skipped_paragraphs=0, questions=0, held_out=0)
    keeper = manpages.Keeper(held, stats)
    rows = []
    for e, t, kind in paragraph_pairs(en, xs, stats):
        stats["questions"] += kind == "question"
        group = (prepare_corpus.clean(text(e)), prepare_corpus.clean(text(t)))
        for pair in paragraph_to_pairs(group, args.max_chars):
            kept = keeper.keep(*pair)
            if kept:
                rows.append((*kept, f"xquad:{kind}"))
    manpages.write_outputs(rows, [], args.out, None, stats)


if __name__ == "__main__":
    main()
