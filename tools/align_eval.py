#!/usr/bin/python3
"""Alignment error rate of the engine's word alignments against hand annotations.

    tools/align_eval.py [--model models/en-de] [--gold tests/data/alignments_multi30k_en_de.txt]
                        [--search-tool build/tests/search-tool] [--layer -1]

For each annotated (source, output) pair the output is forced as the target_prefix of a
greedy search with return_alignments (tests/search-tool), so the alignment is the one the
engine gives for exactly that output: per output token, the source token of highest
head-averaged cross-attention in decoder layer --layer. Tokens map to whitespace-separated
words through SentencePiece's word-start marker; the source eos aligns to no word. Word
pairs are the set of (source word, output word) of every output token.
AER = 1 - (|A & S| + |A & P|) / (|A| + |S|) (Och and Ney, 2003), over all pairs.
"""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from mtref.config import load_config  # noqa: E402
from mtref.tokenizer import MarianTokenizer  # noqa: E402

MARK = "\u2581"


def read_gold(path):
    """[(source, output, sure set, possible set)] from the annotation file."""
    blocks, lines = [], []
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.rstrip("\n")
            if line.startswith("#"):
                continue
            if not line.strip():
                if lines:
                    blocks.append(lines)
                lines = []
                continue
            lines.append(line)
    if lines:
        blocks.append(lines)
    gold = []
    for src, out, links in blocks:
        sure, possible = set(), set()
        for link in links.split():
            sep = "-" if "-" in link else "?"
            s, t = (int(x) for x in link.split(sep))
            (sure if sep == "-" else possible).add((s, t))
        gold.append((src, out, sure, sure | possible))
    return gold


def word_of_pieces(pieces):
    """Per piece, the index of the whitespace-separated word it belongs to."""
    words, index = [], -1
    for i, p in enumerate(pieces):
        if p.startswith(MARK) or i == 0:
            if p != MARK or i == 0:
                index += 1
        words.append(max(index, 0))
    return words


def main(argv=None):
    root = os.path.dirname(HERE)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=os.path.join(root, "models", "en-de"))
    ap.add_argument("--gold", default=os.path.join(root, "tests", "data", "alignments_multi30k_en_de.txt"))
    ap.add_argument("--search-tool", default=os.path.join(root, "build", "tests", "search-tool"))
    ap.add_argument("--layer", type=int, default=-1)
    args = ap.parse_args(argv)
    cfg = load_config(args.model)
    tok = MarianTokenizer(args.model, cfg)
    gold = read_gold(args.gold)
    lines, meta = [], []
    for src, out, _, _ in gold:
        src_pieces = tok.source_spm.encode(src, out_type=str)
        tgt_pieces = tok.target_spm.encode(out, out_type=str)
        src_ids = [tok.vocab.get(p, tok.unk_id) for p in src_pieces] + [cfg.eos_id]
        target_vocab = {p: i for i, p in tok.target_pieces.items()}
        tgt_ids = [target_vocab.get(p, tok.unk_id) for p in tgt_pieces]
        lines.append(" ".join(map(str, src_ids)) + "\t" + " ".join(map(str, tgt_ids)) + "\n")
        meta.append((word_of_pieces(src_pieces), word_of_pieces(tgt_pieces), len(tgt_ids)))
    proc = subprocess.run([args.search_tool, args.model, "beam=1", "return_alignments=1",
                           f"alignment_layer={args.layer}"],
                          input="".join(lines), capture_output=True, text=True, check=True)
    predicted = [None] * len(gold)
    for row in proc.stdout.splitlines():
        number, ids, _, align = row.split("\t")
        predicted[int(number)] = [int(x) for x in align.split()]
    a_total = s_total = a_s = a_p = 0
    for k, ((src, out, sure, possible), (src_words, tgt_words, n)) in enumerate(zip(gold, meta)):
        pairs = {(src_words[a], tgt_words[t]) for t, a in enumerate(predicted[k][:n])
                 if a < len(src_words)}
        a_total += len(pairs)
        s_total += len(sure)
        a_s += len(pairs & sure)
        a_p += len(pairs & possible)
        print(f"{k + 1:2d}  {' '.join(f'{s}-{t}' for s, t in sorted(pairs, key=lambda x: x[1]))}")
    aer = 1.0 - (a_s + a_p) / (a_total + s_total)
    precision, recall = a_p / a_total, a_s / s_total
    print(f"layer {args.layer}: AER {aer:.3f} (precision {precision:.3f}, recall {recall:.3f}, "
          f"{a_total} predicted links, {s_total} sure links, {len(gold)} sentences)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
