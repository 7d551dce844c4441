#!/usr/bin/python3
"""English-German pairs of customer-service chats: the BConTrasT corpus (WMT20 chat
translation task, CC-BY-SA 4.0, Unbabel).

Conversational language, which the models lack most: 628 task dialogues of
Taskmaster-1 (ordering pizza or coffee, booking a car repair, a ride, cinema tickets or
a restaurant table) with every utterance translated into German by Unbabel; the agent's
side is English with its German translation, the customer's side German with the
English original. From github:Unbabel/BConTrasT (`fetch` brings it: files under 4 MiB):
train.json and dev.json; the test set (test1_corpus-with_gold_references.json) is left
out, for use as a conversational evaluation set. Each utterance is one pair (sentence
pairs where both sides have as many sentences); filters and evaluation dedup as
tools/corpus/manpages.py. German only: there is no French side.

  tools/corpus/bcontrast.py --lang de --source /work/.mirror/Unbabel+BConTrasT/repo \\
      --out runs/corpus/bcontrast.en-de.tsv.gz

--source is the fetched snapshot (a bare git directory, read at HEAD; default
runs/corpus/BConTrasT, where a link to it lets tools/build_bundled_models.sh --corpus
bcontrast run this script) or a folder holding train.json and dev.json. Output: gzip TSV,
columns en, de, source ("bcontrast:FILE"). Counts on stdout.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import bible  # noqa: E402
import manpages  # noqa: E402
import prepare_corpus  # noqa: E402
import snapshot  # noqa: E402

FILES = ["train.json", "dev.json"]
# A few German words, to check that each speaker's sides are the languages the corpus
# documents (agent: source English; customer: source German).
GERMAN = set("ich und ist nicht das die der sie wir mit für ein eine es".split())


def utterance_pairs(data, name):
    """[(en, de)] of one file: {dialogue id: [{speaker, source, target}, ...]}."""
    pairs, german_en = [], 0
    for key, dialogue in data.items():
        if not isinstance(dialogue, list) or not all(isinstance(u, dict) for u in dialogue):
            raise SystemExit(f"{name}: dialogue {key} is not a list of utterance objects")
        for u in dialogue:
            if u.get("speaker") == "agent":
                en, de = u.get("source", ""), u.get("target", "")
            elif u.get("speaker") == "customer":
                en, de = u.get("target", ""), u.get("source", "")
            else:
                raise SystemExit(f"{name}: utterance without speaker agent/customer: {u}")
            german_en += (len(GERMAN & set(en.lower().split()))
                          > len(GERMAN & set(de.lower().split())))
            pairs.append((en, de))
    if pairs and german_en > len(pairs) // 10:
        raise SystemExit(f"{name}: {german_en} of {len(pairs)} English sides look German: "
                         "the speakers' languages are not as documented")
    return pairs


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--lang", required=True, choices=["de"])
    p.add_argument("--source", default="runs/corpus/BConTrasT",
                   help="the fetched Unbabel/BConTrasT git directory (or a link to it), or "
                   "a folder with train.json and dev.json (default %(default)s)")
    p.add_argument("--out", required=True)
    p.add_argument("--shared", default=os.path.join(HERE, "..", "..", "..", "shared"))
    p.add_argument("--max-chars", type=int, default=600)
    args = p.parse_args()
    held = manpages.held_out_keys(args.shared, args.lang)
    rows = []
    stats = dict(utterances=0, held_out=0)
    keeper = manpages.Keeper(held, stats)
    for name in FILES:
        raw = snapshot.read(args.source, name, "github:Unbabel/BConTrasT")
        try:
            data = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise SystemExit(f"{args.source}: {name} is not JSON: {e}")
        if not isinstance(data, dict):
            raise SystemExit(f"{args.source}: {name}: expected an object of dialogues")
        for en, de in utterance_pairs(data, name):
            stats["utterances"] += 1
            group = (prepare_corpus.clean(en), prepare_corpus.clean(de))
            for pair in bible.pairs_of(group, args.max_chars):
                kept = keeper.keep(*pair)
                if kept:
                    rows.append((*kept, f"bcontrast:{name[:-5]}"))
    manpages.write_outputs(rows, [], args.out, None, stats)


if __name__ == "__main__":
    main()
