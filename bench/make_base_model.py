#!/usr/bin/python3
"""Writes a random MarianMT model with the OPUS-MT transformer-base dimensions.

d_model 512, 6 encoder + 6 decoder layers, 8 heads, ffn 2048, one shared
vocabulary of 58,101 entries (tied output projection), float32: the shape of
e.g. Helsinki-NLP/opus-mt-en-de. It is the speed subject of bench/bench_engine.sh,
not a translator: only its sizes matter, and its outputs serve to check that the
C engine and the PyTorch reference decode the same ids.

The weights come from tools/make_test_model.py (a planted word-for-word
translator under random noise, so decoding stops after about as many steps as
the source has ids instead of always running to the length cap; the noise is
turned down from make_test_model's default, which at these sizes drowns the
planted translator and leaves outputs that repeat one token up to the cap), with the
tokenizer files of the OPUS-MT fixture (vocab.json: 54,776 entries, eos 44670,
unk 52024). make_test_model sizes the vocabulary from vocab.json, so here the
vocabulary is widened to 58,101 before the weights are drawn: ids
54,776..58,099 are ordinary tokens without a vocab.json entry (the benchmark
feeds and reads ids, so they are never spelled), and the last id, 58,100, is
pad = decoder start, listed in bad_words_ids; its embedding row is zero and
"<pad>" moves there in vocab.json and tokenizer_config.json (the fixture's
pad id, 54,775, becomes one more unnamed token).

  bench/make_base_model.py OUT_DIR [--seed N] [--eos-bias B] [--noise-gain G] [--fixture DIR] [--big]

--big: the transformer-big dimensions instead (d_model 1024, 16 heads, ffn 4096, 6+6
layers, same vocabulary), the size bench_peers.py's "big" model runs at.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.join(HERE, "..", "tools")
sys.path.insert(0, TOOLS)

import make_test_model as mtm  # noqa: E402
from mtref import safetensors_file  # noqa: E402

VOCAB = 58101
DEFAULT_FIXTURE = os.path.join(
    os.environ.get("MT_SHARED_DIR", os.path.join(HERE, "..", "..", "shared")),
    "fixtures", "opus-mt-tc-big-en-pt")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out_dir")
    p.add_argument("--fixture", default=DEFAULT_FIXTURE,
                   help="model directory whose tokenizer files are copied")
    p.add_argument("--seed", type=int, default=5)
    p.add_argument("--eos-bias", type=float, default=2.0)
    p.add_argument("--noise-gain", type=float, default=0.2,
                   help="make_test_model's noise scale; its default, 0.25, drowns the "
                        "planted translator at d 512 / 6 layers and outputs never end")
    p.add_argument("--big", action="store_true", help="d 1024, 16 heads, ffn 4096 (transformer-big)")
    args = p.parse_args(argv)
    d_model, heads, ffn = ("1024", "16", "4096") if args.big else ("512", "8", "2048")

    if not os.path.exists(os.path.join(args.fixture, "vocab.json")):
        raise SystemExit(f"{args.fixture}: no vocab.json (pass --fixture DIR)")
    opts = mtm.parse_args([
        args.out_dir, "--d-model", d_model, "--layers", "6", "6", "--heads", heads,
        "--ffn", ffn, "--tokenizer-from", args.fixture, "--seed", str(args.seed),
        "--eos-bias", str(args.eos_bias), "--noise-gain", str(args.noise_gain),
        "--max-positions", "512",
        "--max-length", "512"])
    files, sizes, ids = mtm.copy_tokenizer(args.fixture)
    if "target_vocab.json" in files:
        raise SystemExit(f"{args.fixture}: separate vocabularies are not supported here")
    if max(sizes) > VOCAB or ids["unk"] is None or max(ids["eos"], ids["unk"]) >= VOCAB - 1:
        raise SystemExit(f"{args.fixture}: vocabulary does not fit in {VOCAB} ids")
    opts.separate_vocabs = False
    sizes = (VOCAB, VOCAB)

    # Move "<pad>" to the new last id in vocab.json and tokenizer_config.json,
    # so the files agree with config.json (the old pad id becomes an unnamed
    # ordinary token). The fixture's config.json stays out: configs() writes
    # ours with the widened sizes and pad.
    old_pad = ids["pad"]
    ids = dict(ids, pad=VOCAB - 1)
    vocab = json.loads(files["vocab.json"])
    for piece, i in list(vocab.items()):
        if i == old_pad:
            del vocab[piece]
    vocab["<pad>"] = ids["pad"]
    files["vocab.json"] = mtm.json_bytes(vocab)
    if "tokenizer_config.json" in files:
        tok = json.loads(files["tokenizer_config.json"])
        added = tok.get("added_tokens_decoder") or {}
        if str(old_pad) in added:
            added[str(ids["pad"])] = added.pop(str(old_pad))
        files["tokenizer_config.json"] = mtm.json_bytes(tok)
    for name, blob in mtm.configs(opts, sizes, ids).items():
        files.setdefault(name, blob)
    os.makedirs(args.out_dir, exist_ok=True)
    for name, blob in files.items():
        with open(os.path.join(args.out_dir, name), "wb") as f:
            f.write(blob)
    weights = mtm.make_weights(opts, VOCAB, VOCAB, ids["eos"])
    weights["model.shared.weight"][ids["pad"]] = 0.0
    # Write to a temporary name first so an interrupted run leaves no half model.
    path = os.path.join(args.out_dir, "model.safetensors")
    safetensors_file.write(path + ".tmp", weights, "F32")
    os.replace(path + ".tmp", path)
    print(f"{args.out_dir}: d {d_model}, 6+6 layers, {heads} heads, ffn {ffn}, vocab {VOCAB}, "
          f"eos {ids['eos']}, unk {ids['unk']}, pad {ids['pad']}, F32", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
