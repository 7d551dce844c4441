#!/usr/bin/python3
"""One quality table for en<->de models: BLEU and chrF on Multi30k test_2016_flickr,
the debian-l10n and Tatoeba dev splits, and our everyday-sentences set (all of it, and
"everyday-unseen": the pairs neither of whose sentences occurs in a training corpus;
common short sentences such as "I don't know." are also Tatoeba or debian-l10n lines).

  tools/eval_models.py NAME=DIR [NAME=DIR ...] [--beam 4] [--threads 2] [--sets ...]
                       [--show-examples]

Each DIR is a model directory whose tokenizer_config.json names its pair (en-de or
de-en); every set is read in the matching direction. Translation is done by the C
engine (`mt-translate` in $MT_BUILD_DIR, default build/); scores by tools/bleu.py
(sacreBLEU-compatible 13a BLEU and chrF). Example, old against new:

  git archive HEAD~N models | tar -x -C /tmp/old
  tools/eval_models.py old-en-de=/tmp/old/models/en-de new-en-de=models/en-de \\
                       old-de-en=/tmp/old/models/de-en new-de-en=models/de-en
"""
import argparse
import gzip
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bleu  # noqa: E402

SHARED = os.environ.get("MT_SHARED_DIR", os.path.join(HERE, "..", "..", "shared"))
# The sentences a newcomer types first; each must come out exactly right.
MUST_BE_RIGHT = ["I love you.", "How much does this cost?", "Where is the train station?"]
EVERYDAY = os.path.join(HERE, "data", "everyday.en-de.tsv")


def read_gz(path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def read_tsv(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    return [r[0] for r in rows], [r[1] for r in rows]


def training_sentences(d):
    """The English and the German sentences of the three training corpora, as sets."""
    en = set(read_gz(f"{d}/multi30k/train.en.gz"))
    de = set(read_gz(f"{d}/multi30k/train.de.gz"))
    for corpus in ("tatoeba", "debian-l10n"):
        e, g = read_tsv(f"{d}/{corpus}/train.en-de.tsv.gz")
        en.update(e)
        de.update(g)
    return en, de


def load_sets(names):
    """{name: (english lines, german lines)} for the sets named."""
    d = os.path.join(SHARED, "data")
    loaders = {
        "multi30k-test": lambda: (read_gz(f"{d}/multi30k/test_2016_flickr.en.gz"),
                                  read_gz(f"{d}/multi30k/test_2016_flickr.de.gz")),
        "debian-dev": lambda: read_tsv(f"{d}/debian-l10n/dev.en-de.tsv.gz"),
        "tatoeba-dev": lambda: read_tsv(f"{d}/tatoeba/dev.en-de.tsv.gz"),
        "everyday": lambda: read_tsv(EVERYDAY),
        "everyday-unseen": lambda: unseen(read_tsv(EVERYDAY), *training_sentences(d)),
    }
    unknown = [n for n in names if n not in loaders]
    if unknown:
        sys.exit(f"unknown set {', '.join(unknown)}; sets: {', '.join(loaders)}")
    return {n: loaders[n]() for n in names}


def unseen(pairs, train_en, train_de):
    kept = [(e, g) for e, g in zip(*pairs) if e not in train_en and g not in train_de]
    return [e for e, _ in kept], [g for _, g in kept]


def translate(model_dir, lines, beam, threads):
    exe = os.path.join(os.environ.get("MT_BUILD_DIR", os.path.join(HERE, "..", "build")),
                       "cli", "mt-translate")
    proc = subprocess.run([exe, "--model", model_dir, "--beam", str(beam), "--threads", str(threads)],
                          input="\n".join(lines) + "\n", capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"mt-translate failed on {model_dir}: {proc.stderr.strip()}")
    out = proc.stdout.split("\n")[: len(lines)]
    if len(out) != len(lines):
        sys.exit(f"mt-translate gave {len(out)} lines for {len(lines)}")
    return out


def pair_of(model_dir):
    with open(os.path.join(model_dir, "tokenizer_config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    return cfg["source_lang"], cfg["target_lang"]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("models", nargs="+", help="NAME=DIR")
    p.add_argument("--beam", type=int, default=4)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--sets", default="multi30k-test,debian-dev,tatoeba-dev,everyday",
                   help="comma-separated: multi30k-test, debian-dev, tatoeba-dev, everyday, "
                        "everyday-unseen")
    p.add_argument("--show-examples", action="store_true",
                   help="print the must-be-right sentences' translations")
    args = p.parse_args()
    names = args.sets.split(",")
    sets = load_sets(names)
    rows = []
    for spec in args.models:
        name, _, model_dir = spec.partition("=")
        src, tgt = pair_of(model_dir)
        if {src, tgt} != {"en", "de"}:
            sys.exit(f"{model_dir}: pair {src}-{tgt}; this table is for en<->de")
        row = [name, f"{src}-{tgt}"]
        for s in names:
            en, de = sets[s]
            srcs, refs = (en, de) if src == "en" else (de, en)
            t0 = time.time()
            hyps = translate(model_dir, srcs, args.beam, args.threads)
            b = bleu.corpus_bleu(hyps, refs).score
            c = bleu.corpus_chrf(hyps, refs)
            row.append(f"{b:.2f} / {c:.2f}")
            print(f"# {name} {s}: {len(srcs)} lines in {time.time() - t0:.1f} s", file=sys.stderr)
            if s == "everyday" and args.show_examples:
                for line, hyp in zip(srcs, hyps):
                    if line in MUST_BE_RIGHT or (src == "de" and refs[srcs.index(line)] in MUST_BE_RIGHT):
                        print(f"#   {line} -> {hyp}", file=sys.stderr)
        rows.append(row)
    header = ["model", "pair"] + [f"{s} BLEU / chrF" for s in names]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
