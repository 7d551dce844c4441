#!/usr/bin/python3
"""Build the training mixture for the bundled en<->de models from ../shared/data.

Writes, into OUT_DIR, gzip text files with one sentence a line, line-aligned:
  train.en.gz / train.de.gz   the mixture, shuffled with --seed
  valid.en.gz / valid.de.gz   the selection set (checkpoint choice during training)
  spm.txt                     each distinct training sentence once (vocabulary training)
  mixture.json                counts per corpus, so a model card can quote them
  spm.model                   the joint SentencePiece unigram vocabulary (--vocab-size
                              pieces, Marian ids </s>=0 <unk>=1), trained on spm.txt

The mixture (why: see models/README.md):
  Multi30k train     x3  image captions; keeps the test_2016_flickr quality
  Tatoeba train      x2  everyday conversational sentences, the language newcomers try
  debian-l10n train  x1  software messages, help text, package descriptions, Ding
The selection set takes a seeded sample of Multi30k val, Tatoeba dev and debian-l10n
dev (--valid-per-corpus pairs each). Both directions use the same files, swapped.
"""
import argparse
import gzip
import json
import os
import random

import sentencepiece as spm


def read_pairs_tsv(path):
    """(en, de) pairs of a shared TSV file (en, de, source...)."""
    pairs = []
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            if len(cols) >= 2 and cols[0].strip() and cols[1].strip():
                pairs.append((cols[0].strip(), cols[1].strip()))
    return pairs


def read_pairs_parallel(src, tgt):
    with gzip.open(src, "rt", encoding="utf-8") as a, gzip.open(tgt, "rt", encoding="utf-8") as b:
        en = [x.rstrip("\n") for x in a]
        de = [x.rstrip("\n") for x in b]
    if len(en) != len(de):
        raise SystemExit(f"{src} and {tgt} differ in line count ({len(en)} vs {len(de)})")
    return [(e.strip(), d.strip()) for e, d in zip(en, de) if e.strip() and d.strip()]


def write_lines(path, lines):
    with gzip.open(path + ".tmp", "wt", encoding="utf-8", compresslevel=3) as f:
        for line in lines:
            f.write(line + "\n")
    os.replace(path + ".tmp", path)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--shared", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared"))
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--multi30k-times", type=int, default=3)
    p.add_argument("--tatoeba-times", type=int, default=2)
    p.add_argument("--debian-times", type=int, default=1)
    p.add_argument("--valid-per-corpus", type=int, default=500)
    p.add_argument("--vocab-size", type=int, default=16000)
    p.add_argument("--spm-sentences", type=int, default=1500000,
                   help="distinct sentences sampled (seeded) for vocabulary training")
    p.add_argument("--skip-vocab", action="store_true",
                   help="write no vocabulary (a continued run keeps its model's own)")
    args = p.parse_args()
    data = os.path.join(args.shared, "data")
    rng = random.Random(args.seed)

    corpora = {
        "multi30k": (read_pairs_parallel(f"{data}/multi30k/train.en.gz", f"{data}/multi30k/train.de.gz"),
                     args.multi30k_times),
        "tatoeba": (read_pairs_tsv(f"{data}/tatoeba/train.en-de.tsv.gz"), args.tatoeba_times),
        "debian-l10n": (read_pairs_tsv(f"{data}/debian-l10n/train.en-de.tsv.gz"), args.debian_times),
    }
    mixture, distinct, counts = [], set(), {}
    for name, (pairs, times) in corpora.items():
        mixture.extend(pairs * times)
        distinct.update(pairs)
        counts[name] = {"pairs": len(pairs), "times": times,
                        "en_words": sum(len(e.split()) for e, _ in pairs),
                        "de_words": sum(len(d.split()) for _, d in pairs)}
    rng.shuffle(mixture)

    dev = {
        "multi30k val": read_pairs_parallel(f"{data}/multi30k/val.en.gz", f"{data}/multi30k/val.de.gz"),
        "tatoeba dev": read_pairs_tsv(f"{data}/tatoeba/dev.en-de.tsv.gz"),
        "debian-l10n dev": read_pairs_tsv(f"{data}/debian-l10n/dev.en-de.tsv.gz"),
    }
    valid = []
    for name, pairs in dev.items():
        valid.extend(rng.sample(pairs, min(args.valid_per_corpus, len(pairs))))

    os.makedirs(args.out, exist_ok=True)
    write_lines(os.path.join(args.out, "train.en.gz"), [e for e, _ in mixture])
    write_lines(os.path.join(args.out, "train.de.gz"), [d for _, d in mixture])
    write_lines(os.path.join(args.out, "valid.en.gz"), [e for e, _ in valid])
    write_lines(os.path.join(args.out, "valid.de.gz"), [d for _, d in valid])
    # Vocabulary text: a seeded sample of the distinct sentences, so that
    # upsampling does not skew the piece inventory towards captions.
    texts = sorted({t for pair in distinct for t in pair})
    rng.shuffle(texts)
    texts = texts[: args.spm_sentences]
    with open(os.path.join(args.out, "spm.txt.tmp"), "w", encoding="utf-8") as f:
        for t in texts:
            f.write(t + "\n")
    os.replace(os.path.join(args.out, "spm.txt.tmp"), os.path.join(args.out, "spm.txt"))
    with open(os.path.join(args.out, "mixture.json"), "w", encoding="utf-8") as f:
        json.dump({"seed": args.seed, "corpora": counts, "train_pairs": len(mixture),
                   "valid_pairs": len(valid), "spm_sentences": len(texts)}, f, indent=2)
        f.write("\n")
    if args.skip_vocab:
        print(json.dumps(counts), len(mixture), "pairs;", len(valid), "valid; no vocabulary")
        return
    spm.SentencePieceTrainer.train(
        input=os.path.join(args.out, "spm.txt"), model_prefix=os.path.join(args.out, "spm"),
        vocab_size=args.vocab_size, model_type="unigram", character_coverage=1.0, bos_id=-1,
        eos_id=0, unk_id=1, pad_id=-1, input_sentence_size=0, minloglevel=1, num_threads=2)
    print(json.dumps(counts), len(mixture), "pairs;", len(valid), "valid;", len(texts), "spm lines")


if __name__ == "__main__":
    main()
