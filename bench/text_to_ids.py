#!/usr/bin/python3
"""Converts text lines to space-separated source ids with a model's tokenizer files.

  bench/text_to_ids.py MODEL_DIR < text > ids

MODEL_DIR's source.spm splits each line into pieces and vocab.json maps them to
ids (a piece missing from vocab.json gives the "<unk>" id); no eos is appended,
which is the `--input ids` format of mt-translate and tools/reference.py. Done
once, so that both engines of bench/bench_engine.sh decode the very same ids
and tokenization takes no part in the timing. Empty lines stay empty.
"""
import json
import os
import sys

import sentencepiece


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        raise SystemExit("usage: text_to_ids.py MODEL_DIR < text > ids")
    model_dir = argv[0]
    sp = sentencepiece.SentencePieceProcessor(model_file=os.path.join(model_dir, "source.spm"))
    with open(os.path.join(model_dir, "vocab.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    unk = vocab["<unk>"]
    out = sys.stdout
    for line in sys.stdin:
        line = line.rstrip("\n")
        pieces = sp.encode(line, out_type=str) if line.strip() else []
        out.write(" ".join(str(vocab.get(piece, unk)) for piece in pieces) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
