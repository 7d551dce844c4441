#!/usr/bin/python3
"""The record of a model's training data: MODEL_DIR/mixture.json, beside the weights.

  tools/training_record.py DATA/mixture.json MODEL_DIR [--earlier FROM_DIR]

writes MODEL_DIR/mixture.json: the mixture.json that tools/prepare_corpus.py wrote for
the data (corpora with their copies and counts, the files of --extra corpora, the seed),
and, for a model continued from FROM_DIR (build_bundled_models.sh --continue), FROM_DIR's
record under "earlier": a continued model has seen both. tools/build_bundled_models.sh
writes it for every model it trains; tools/eval_models.py reads it (trained_corpora) to
know which sentences a model has seen, for its "everyday-unseen" set.

A model directory without a record is taken to be trained on prepare_corpus.py's default
corpora: Tatoeba and debian-l10n train, never Multi30k (non-commercial terms: an
evaluation set unless a record says otherwise).
"""
import argparse
import json
import os
import sys

RECORD = "mixture.json"
# prepare_corpus.py's corpora by default (--multi30k-times 0).
DEFAULT_CORPORA = ("tatoeba", "debian-l10n")


def read(model_dir):
    """The record of model_dir, or None when it has none."""
    path = os.path.join(model_dir, RECORD)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        record = json.load(f)
    if not isinstance(record, dict) or not isinstance(record.get("corpora"), dict):
        raise ValueError(f"{path}: not a training record (no 'corpora' object)")
    return record


def trained_corpora(model_dir):
    """({corpus name: its file or None for a ../shared corpus}, how that was decided) of
    the corpora model_dir was trained on: those of its record and of every earlier run's,
    less the made-up copy pairs; prepare_corpus.py's defaults when it has no record."""
    record = read(model_dir)
    if record is None:
        return ({name: None for name in DEFAULT_CORPORA},
                f"no {os.path.join(model_dir, RECORD)}: prepare_corpus.py's default corpora")
    corpora = {}
    for rec in [record] + list(record.get("earlier", [])):
        for name, info in rec.get("corpora", {}).items():
            if name.endswith(" copies") or not info.get("times", 1):
                continue  # symbol and number copies: made from the corpora themselves
            corpora[name] = info.get("path") or corpora.get(name)
    how = f"recorded in {os.path.join(model_dir, RECORD)}"
    if record.get("earlier_unrecorded"):
        how += f" (but not what {record['earlier_unrecorded']} had been trained on)"
    return corpora, how


def same_data(a, b):
    return data_of(a) == data_of(b)


def data_of(record):
    """A record without its earlier runs: what one run was trained on."""
    return {k: v for k, v in record.items() if k not in ("earlier", "earlier_unrecorded")}


def write(mixture_path, model_dir, earlier_dir=None):
    """Write model_dir's record from a prepared data directory's mixture.json; with
    earlier_dir (the model it continues, possibly model_dir itself), keep that model's
    record under "earlier"."""
    with open(mixture_path, encoding="utf-8") as f:
        record = json.load(f)
    if earlier_dir is not None:
        old = read(earlier_dir)
        if old is None:
            print(f"training_record.py: warning: {earlier_dir} has no {RECORD}: the record of "
                  f"{model_dir} names this run's data only", file=sys.stderr)
            record["earlier_unrecorded"] = earlier_dir
        else:
            earlier = list(old.get("earlier", []))
            if not same_data(old, record):  # the same data again (a resumed run) adds nothing
                earlier.insert(0, data_of(old))
            if earlier:
                record["earlier"] = earlier
            if old.get("earlier_unrecorded"):
                record["earlier_unrecorded"] = old["earlier_unrecorded"]
    os.makedirs(model_dir, exist_ok=True)
    path = os.path.join(model_dir, RECORD)
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(record, f, ensure_ascii=False, indent=2)
        f.write("\n")
    os.replace(path + ".tmp", path)
    return path


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("mixture", help="a prepared data directory's mixture.json")
    p.add_argument("model_dir")
    p.add_argument("--earlier", metavar="FROM_DIR",
                   help="the model directory the training continues")
    args = p.parse_args()
    if not os.path.exists(args.mixture):
        sys.exit(f"training_record.py: no {args.mixture} (prepare the data directory again)")
    try:
        write(args.mixture, args.model_dir, args.earlier)
    except (ValueError, json.JSONDecodeError) as e:
        sys.exit(f"training_record.py: {e}")


if __name__ == "__main__":
    main()
