#!/usr/bin/python3
"""tools/data/long.en-X.tsv: the long-sentence dev set (documentation sentences of
26-50 English words) from the pages that manpages.py and handbook.py hold out of
training (--dev-out), less any pair with a side that is a line of a training corpus.

  tools/corpus/long_dev.py --lang fr   # after manpages.py / handbook.py --dev-out
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import prepare_corpus  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--lang", required=True, choices=["de", "fr"])
    p.add_argument("--corpus-dir", default="runs/corpus")
    p.add_argument("--shared", default=os.path.join(HERE, "..", "..", "..", "shared"))
    p.add_argument("--out", help="default tools/data/long.en-X.tsv")
    args = p.parse_args()
    x, d = args.lang, os.path.join(args.shared, "data")
    train = set()
    for c in ("tatoeba", "debian-l10n"):
        for pair in prepare_corpus.read_pairs_tsv(f"{d}/{c}/train.en-{x}.tsv.gz"):
            train.update(prepare_corpus.eval_key(t) for t in pair)
    for pair in prepare_corpus.read_pairs_parallel(f"{d}/multi30k/train.en.gz",
                                                   f"{d}/multi30k/train.{x}.gz"):
        train.update(prepare_corpus.eval_key(t) for t in pair)
    rows, seen, dropped = [], set(), 0
    for name in ("manpages", "handbook"):
        with open(os.path.join(args.corpus_dir, f"{name}.en-{x}.dev.tsv"), encoding="utf-8") as f:
            for line in f:
                e, t = line.rstrip("\n").split("\t")
                if prepare_corpus.eval_key(e) in train or prepare_corpus.eval_key(t) in train:
                    dropped += 1
                elif e not in seen:
                    seen.add(e)
                    rows.append((e, t))
    out = args.out or os.path.join(os.path.dirname(HERE), "data", f"long.en-{x}.tsv")
    with open(out, "w", encoding="utf-8") as f:
        for e, t in rows:
            f.write(f"{e}\t{t}\n")
    print(f"{out}: {len(rows)} pairs; {dropped} dropped as training lines")


if __name__ == "__main__":
    main()
