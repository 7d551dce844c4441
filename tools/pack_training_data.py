#!/usr/bin/python3
"""Pack prepared training mixtures for a machine without ../shared, and unpack them there.

--pack X=DATA [--pack Y=DATA ...] --to DIR: each DATA is a directory that
tools/prepare_corpus.py wrote for English<->X (train.{en,X}.gz, valid.{en,X}.gz,
spm.model or --spm X=PATH). DIR gets pairs.tsv.xz (each distinct pair once with its
count in the mixture, every language in one stream sorted by the English side, so the
English sentences that debian-l10n and Tatoeba share between German and French cost
little), X.valid.en.gz, X.valid.X.gz, X.spm.model and X.mixture.json (the mixture's
record, which tools/train_gpu.sh gives each model it trains: tools/training_record.py)
for each X, and pack.json.
--unpack DIR --to WORK writes WORK/X/train.en and WORK/X/train.X (the mixture again,
each pair as often as its count, in the packed order: train.py batches by length and
shuffles itself), WORK/X/valid.{en,X}.gz, WORK/X/spm.model and WORK/X/mixture.json for
each X in the pack.
--omit-copies packs the mixture without its made-up pairs (the symbol and number copies
of prepare_corpus.py, listed in DATA/copies.tsv.gz: 160k of the 920k distinct pairs of
the four-direction run) and --unpack makes as many again from the packed pairs.
"""
import argparse
import collections
import gzip
import json
import lzma
import os
import random
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def read_mixture(data, lang):
    counts = collections.Counter()
    with gzip.open(os.path.join(data, "train.en.gz"), "rt", encoding="utf-8") as fe, \
            gzip.open(os.path.join(data, f"train.{lang}.gz"), "rt", encoding="utf-8") as fx:
        for e, x in zip(fe, fx):
            e, x = e.rstrip("\n"), x.rstrip("\n")
            if "\t" in e or "\t" in x:
                sys.exit(f"a training line holds a tab: {e[:60]!r}")
            counts[(e, x)] += 1
    return counts


def read_copies(data):
    """The mixture's made-up pairs (prepare_corpus.py's copies.tsv.gz), with counts."""
    with gzip.open(os.path.join(data, "copies.tsv.gz"), "rt", encoding="utf-8") as f:
        return collections.Counter(tuple(line.rstrip("\n").split("\t")) for line in f)


def pack(specs, spms, to, omit_copies):
    os.makedirs(to, exist_ok=True)
    rows, meta = [], {"langs": {}}
    for lang, data in specs:
        with open(os.path.join(data, "mixture.json"), encoding="utf-8") as f:
            mixture = json.load(f)
        got = mixture["pair"].split("-")[1]
        if got != lang:
            sys.exit(f"{data} holds en-{got}, not en-{lang}")
        counts = read_mixture(data, lang)
        made = {}
        if omit_copies:
            copies = read_copies(data)
            for pair, n in copies.items():
                if counts[pair] < n:
                    sys.exit(f"{data}: copies.tsv.gz does not match the mixture ({pair[0][:60]!r})")
                counts[pair] -= n
            counts = +counts  # drops the pairs left with no copy
            c = mixture["corpora"]
            made = {"seed": mixture["seed"],
                    "symbol": sum(v["pairs"] for k, v in c.items() if k.endswith("symbol copies")),
                    "number": c.get("number copies", {}).get("pairs", 0)}
            if made["symbol"] + made["number"] != sum(copies.values()):
                sys.exit(f"{data}: copies.tsv.gz holds {sum(copies.values())} pairs, "
                         f"mixture.json counts {made['symbol'] + made['number']}")
        rows.extend((e, lang, n, x) for (e, x), n in counts.items())
        for side in ("en", lang):
            shutil.copyfile(os.path.join(data, f"valid.{side}.gz"),
                            os.path.join(to, f"{lang}.valid.{side}.gz"))
        shutil.copyfile(spms.get(lang) or os.path.join(data, "spm.model"),
                        os.path.join(to, f"{lang}.spm.model"))
        shutil.copyfile(os.path.join(data, "mixture.json"), os.path.join(to, f"{lang}.mixture.json"))
        meta["langs"][lang] = {"distinct_pairs": len(counts), "pairs": sum(counts.values()),
                               "source": os.path.abspath(data)}
        if made:
            meta["langs"][lang]["copies_to_make"] = made
    rows.sort()
    with lzma.open(os.path.join(to, "pairs.tsv.xz"), "wt", encoding="utf-8",
                   preset=9 | lzma.PRESET_EXTREME) as out:
        for e, lang, n, x in rows:
            out.write(f"{lang}\t{n}\t{e}\t{x}\n")
    with open(os.path.join(to, "pack.json"), "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=2)
    meta["bytes"] = sum(os.path.getsize(os.path.join(to, n)) for n in os.listdir(to))
    print(json.dumps(meta))


def unpack(src, to):
    with open(os.path.join(src, "pack.json"), encoding="utf-8") as f:
        meta = json.load(f)
    langs = meta["langs"]
    files, n = {}, collections.Counter()
    distinct = collections.defaultdict(set)
    for lang in langs:
        os.makedirs(os.path.join(to, lang), exist_ok=True)
        files[lang] = (open(os.path.join(to, lang, "train.en"), "w", encoding="utf-8"),
                       open(os.path.join(to, lang, f"train.{lang}"), "w", encoding="utf-8"))
    with lzma.open(os.path.join(src, "pairs.tsv.xz"), "rt", encoding="utf-8") as inp:
        for line in inp:
            lang, count, e, x = line.rstrip("\n").split("\t")
            if "copies_to_make" in langs[lang]:
                distinct[lang].add((e, x))
            fe, fx = files[lang]
            for _ in range(int(count)):
                fe.write(e + "\n")
                fx.write(x + "\n")
            n[lang] += int(count)
    for lang, m in langs.items():
        if n[lang] != m["pairs"]:
            sys.exit(f"unpacked {n[lang]} en-{lang} pairs, the pack says {m['pairs']}")
        made = m.get("copies_to_make")
        if made:
            # The copies the pack left out, made again as prepare_corpus.py makes them
            # (from every distinct pair of the pack rather than per corpus).
            import prepare_corpus
            pool = sorted(distinct[lang])
            copies = prepare_corpus.symbol_pairs(pool, made["symbol"],
                                                 random.Random(made["seed"] + 1000))
            copies += prepare_corpus.number_pairs(pool, made["number"],
                                                  random.Random(made["seed"] + 2000))
            fe, fx = files[lang]
            for e, x in copies:
                fe.write(e + "\n")
                fx.write(x + "\n")
            print(f"made {len(copies)} copy pairs for en-{lang} again")
    for fe, fx in files.values():
        fe.close()
        fx.close()
    for lang, m in langs.items():
        for name in ("valid.en.gz", f"valid.{lang}.gz", "spm.model", "mixture.json"):
            path = os.path.join(src, f"{lang}.{name}")
            if name == "mixture.json" and not os.path.exists(path):
                # a pack made before packs carried it: the models get no record
                print(f"warning: {path} missing: the en-{lang} models get no record of "
                      f"their data (mixture.json)", file=sys.stderr)
                continue
            shutil.copyfile(path, os.path.join(to, lang, name))
        print(f"unpacked {n[lang]} en-{lang} pairs ({m['distinct_pairs']} distinct) "
              f"into {os.path.join(to, lang)}")


def lang_path(spec, what):
    lang, sep, path = spec.partition("=")
    if not sep or lang not in ("de", "fr") or not path:
        sys.exit(f"{what} wants LANG=PATH with LANG de or fr, not {spec!r}")
    return lang, path


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--pack", action="append", default=[], metavar="X=DATA")
    p.add_argument("--spm", action="append", default=[], metavar="X=PATH",
                   help="the vocabulary to pack for X (default DATA/spm.model)")
    p.add_argument("--omit-copies", action="store_true",
                   help="leave the symbol and number copies (DATA/copies.tsv.gz) out of the "
                        "pack; --unpack makes as many again")
    p.add_argument("--unpack", metavar="DIR")
    p.add_argument("--to", required=True)
    a = p.parse_args()
    if bool(a.pack) == bool(a.unpack):
        p.error("give --pack (one or more) or --unpack")
    if a.pack:
        specs = [lang_path(s, "--pack") for s in a.pack]
        spms = dict(lang_path(s, "--spm") for s in a.spm)
        pack(specs, spms, a.to, a.omit_copies)
    else:
        unpack(a.unpack, a.to)


if __name__ == "__main__":
    main()
