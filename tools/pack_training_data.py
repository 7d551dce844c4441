#!/usr/bin/python3
"""Pack a prepared training mixture for a machine without ../shared, and unpack it there.

--pack DATA --to DIR: DATA is a directory tools/prepare_corpus.py wrote (train.{en,X}.gz,
valid.{en,X}.gz); DIR gets pairs.tsv.xz (each distinct pair once with its count in the
mixture: the mixture repeats Tatoeba and other corpora, so this is about a third of the
size), the validation files and the vocabulary (--spm). --unpack DIR --to WORK writes
train.en / train.X (the mixture again, each pair as often as its count), the validation
files and spm.model into WORK. The language is read from DATA/mixture.json when packing
and from DIR/pack.json when unpacking.
"""
import argparse
import collections
import gzip
import json
import lzma
import os
import shutil
import sys


def pack(data, to, spm_path):
    with open(os.path.join(data, "mixture.json"), encoding="utf-8") as f:
        lang = json.load(f)["pair"].split("-")[1]
    counts = collections.Counter()
    with gzip.open(os.path.join(data, "train.en.gz"), "rt", encoding="utf-8") as fe, \
            gzip.open(os.path.join(data, f"train.{lang}.gz"), "rt", encoding="utf-8") as fx:
        for e, x in zip(fe, fx):
            e, x = e.rstrip("\n"), x.rstrip("\n")
            if "\t" in e or "\t" in x:
                sys.exit(f"a training line holds a tab: {e[:60]!r}")
            counts[(e, x)] += 1
    os.makedirs(to, exist_ok=True)
    with lzma.open(os.path.join(to, "pairs.tsv.xz"), "wt", encoding="utf-8", preset=9) as out:
        for (e, x), n in sorted(counts.items()):
            out.write(f"{n}\t{e}\t{x}\n")
    for name in (f"valid.en.gz", f"valid.{lang}.gz"):
        shutil.copyfile(os.path.join(data, name), os.path.join(to, name))
    shutil.copyfile(spm_path, os.path.join(to, "spm.model"))
    meta = {"lang": lang, "distinct_pairs": len(counts), "pairs": sum(counts.values()),
            "source": os.path.abspath(data)}
    with open(os.path.join(to, "pack.json"), "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=2)
    print(json.dumps(meta))


def unpack(src, to):
    with open(os.path.join(src, "pack.json"), encoding="utf-8") as f:
        meta = json.load(f)
    lang = meta["lang"]
    os.makedirs(to, exist_ok=True)
    n = 0
    with lzma.open(os.path.join(src, "pairs.tsv.xz"), "rt", encoding="utf-8") as inp, \
            open(os.path.join(to, "train.en"), "w", encoding="utf-8") as fe, \
            open(os.path.join(to, f"train.{lang}"), "w", encoding="utf-8") as fx:
        for line in inp:
            count, e, x = line.rstrip("\n").split("\t")
            for _ in range(int(count)):
                fe.write(e + "\n")
                fx.write(x + "\n")
                n += 1
    if n != meta["pairs"]:
        sys.exit(f"unpacked {n} pairs, the pack says {meta['pairs']}")
    for name in ("valid.en.gz", f"valid.{lang}.gz", "spm.model"):
        shutil.copyfile(os.path.join(src, name), os.path.join(to, name))
    print(f"unpacked {n} pairs ({meta['distinct_pairs']} distinct) into {to}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--pack", metavar="DATA")
    p.add_argument("--unpack", metavar="DIR")
    p.add_argument("--to", required=True)
    p.add_argument("--spm", help="the vocabulary to pack (default DATA/spm.model)")
    a = p.parse_args()
    if bool(a.pack) == bool(a.unpack):
        p.error("give one of --pack and --unpack")
    if a.pack:
        pack(a.pack, a.to, a.spm or os.path.join(a.pack, "spm.model"))
    else:
        unpack(a.unpack, a.to)


if __name__ == "__main__":
    main()
