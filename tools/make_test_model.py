#!/usr/bin/python3
"""Writes a small random MarianMT model in the real Hugging Face / OPUS-MT layout.

The engine-vs-reference tests need models that exercise every layout variant the
loader must accept (shared or separate vocabularies, tied or untied output
projection, F32/F16/BF16 storage, special ids in unusual places, either set of
embedding names) without shipping real weights. The output directory holds
config.json, generation_config.json, tokenizer_config.json,
special_tokens_map.json, model.safetensors, source.spm, target.spm, vocab.json
and, with separate vocabularies, target_vocab.json.

Tokenizers are either copied from an existing model directory (--tokenizer-from)
or trained here: a tiny unigram SentencePiece per language from the first lines
of the Multi30k training data, with the special tokens placed at the requested ids.

The weights are random noise on top of a planted word-for-word translator (see
make_weights), so that exact comparisons are meaningful: outputs follow the
source, about as long as it (Multi30k sentences: 5-40 tokens), ending with eos;
the winning token is usually well ahead of the runner-up, so float rounding
rarely decides between two tokens; and the noise still gives beam search real
alternatives (beam 4 differs from greedy on about a third of the sentences).
Known limit: hypotheses that skip the final eos may continue with confident
junk, which length normalisation can prefer for very short sources.

  tools/make_test_model.py OUT_DIR [--activation swish] [--separate-vocabs]
      [--untied-lm-head] [--dtype F16] [--eos-id 5 --pad-id 7] [--bias-scale 0.5]
      [--save-embed-names encoder-decoder] [--tokenizer-from DIR] [--seed N]
"""
import argparse
import glob
import gzip
import io
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

from mtref import safetensors_file  # noqa: E402
from mtref.model import sinusoidal_positions  # noqa: E402

DEFAULT_SHARED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared")


def parse_args(argv):
    """Command-line options (the model shape defaults keep test models small)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out_dir")
    p.add_argument("--d-model", type=int, default=64)
    p.add_argument("--layers", type=int, nargs=2, default=[2, 2], metavar=("ENC", "DEC"))
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--ffn", type=int, default=128)
    p.add_argument("--activation", choices=["relu", "swish", "gelu", "quick_gelu", "gelu_new"], default="relu")
    p.add_argument("--separate-vocabs", action="store_true",
                   help="source and target vocabularies differ (target_vocab.json)")
    p.add_argument("--untied-lm-head", action="store_true", help="write lm_head.weight")
    p.add_argument("--dtype", choices=["F32", "F16", "BF16"], default="F32")
    p.add_argument("--eos-id", type=int, help="default 0")
    p.add_argument("--unk-id", type=int, help="default 1 (or the lowest free id)")
    p.add_argument("--pad-id", type=int, help="default: the last id of the (smaller) vocabulary")
    p.add_argument("--bias-scale", type=float, default=0.0,
                   help="std of random final_logits_bias entries (0: only eos is biased)")
    p.add_argument("--eos-bias", type=float, default=1.0, help="final_logits_bias of eos")
    p.add_argument("--logit-scale", type=float, default=2.0,
                   help="gain of the last decoder LayerNorm: how peaky the outputs are")
    p.add_argument("--embed-norm", type=float, default=1.0,
                   help="norm of every embedding row (before the sqrt(d) input scaling)")
    p.add_argument("--noise-gain", type=float,
                   help="scale of the random sublayers' outputs (see make_weights); default "
                        "0.5, or 0.25 for vocabularies over 4096 entries, whose many random "
                        "rows would otherwise outvote the planted translation")
    p.add_argument("--align-sharpness", type=float, default=10.0,
                   help="query/key gain of the planted position alignment")
    p.add_argument("--align-gain", type=float, default=6.0,
                   help="output gain of the planted word-for-word cross-attention")
    p.add_argument("--tokenizer-from", metavar="DIR",
                   help="copy spm/vocab files and special ids from this model directory")
    p.add_argument("--vocab-size", type=int, nargs=2, default=[400, 360], metavar=("SRC", "TGT"),
                   help="SentencePiece sizes to train (without --tokenizer-from)")
    p.add_argument("--train-lines", type=int, default=2000)
    p.add_argument("--shared-dir", default=os.environ.get("MT_SHARED_DIR", DEFAULT_SHARED))
    p.add_argument("--max-positions", type=int, default=256)
    p.add_argument("--max-length", type=int, default=128, help="written to the configs")
    p.add_argument("--save-embed-names", choices=["shared", "encoder-decoder"], default="shared",
                   help="model.shared.weight, or model.{encoder,decoder}.embed_tokens.weight "
                        "(separate vocabularies always get the latter)")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    if args.d_model % args.heads or args.d_model % 2:
        p.error("--d-model must be even and divisible by --heads")
    if args.tokenizer_from and (args.eos_id is not None or args.pad_id is not None
                                or args.unk_id is not None or args.separate_vocabs):
        p.error("--tokenizer-from takes the vocabularies and special ids from DIR")
    return args


# ---- tokenizers -------------------------------------------------------------

def train_spm(lines, vocab_size):
    """A unigram SentencePiece model (serialized bytes) trained on `lines`."""
    import sentencepiece
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=model, vocab_size=vocab_size,
        model_type="unigram", character_coverage=1.0,
        minloglevel=2, num_threads=1)
    return model.getvalue()


def spm_pieces(model_bytes):
    """The ordinary pieces of a SentencePiece model (control and unknown left out)."""
    import sentencepiece
    sp = sentencepiece.SentencePieceProcessor(model_proto=model_bytes)
    return [sp.id_to_piece(i) for i in range(sp.get_piece_size())
            if not (sp.is_control(i) or sp.is_unknown(i))]


def place_vocab(pieces, specials):
    """vocab {piece: id} of len(pieces) + len(specials) entries, specials at fixed ids.

    specials maps token text to id; the other ids, in increasing order, take the
    pieces in order, so every id below the size names exactly one piece.
    """
    size = len(pieces) + len(specials)
    vocab = {}
    for text, i in specials.items():
        if not 0 <= i < size:
            raise SystemExit(f"special id {i} for {text} outside the vocabulary (size {size})")
        vocab[text] = i
    if len(set(specials.values())) != len(specials):
        raise SystemExit(f"special ids collide: {specials}")
    free = (i for i in range(size) if i not in specials.values())
    for piece in pieces:
        vocab[piece] = next(free)
    return vocab


def read_lines(path, count):
    """The first `count` lines of a gzip text file."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for _, line in zip(range(count), f)]


def training_lines(args, lang):
    """The first --train-lines lines of Multi30k train (../shared). Without ../shared, the
    committed evaluation sets tools/data/*.en-de.tsv (about 600 pairs of everyday, numeric,
    emoji and long sentences): the model is random either way, only its pieces differ."""
    path = os.path.join(args.shared_dir, "data", "multi30k", f"train.{lang}.gz")
    if os.path.exists(path):
        return read_lines(path, args.train_lines)
    column = 0 if lang == "en" else 1
    lines = []
    for name in sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "*.en-de.tsv"))):
        with open(name, encoding="utf-8") as f:
            lines += [row.rstrip("\n").split("\t")[column] for row in f if "\t" in row]
    if not lines:
        raise SystemExit(f"no training text: {path} is absent and tools/data has no *.en-de.tsv")
    print(f"make_test_model: {path} is absent; SentencePiece trained on tools/data/*.en-de.tsv "
          f"({len(lines)} lines)", file=sys.stderr)
    return lines[:args.train_lines]


def build_tokenizer(args):
    """Trains the spm models and vocabularies. Returns (files, vocab sizes, special ids)."""
    src_spm = train_spm(training_lines(args, "en"), args.vocab_size[0])
    tgt_spm = train_spm(training_lines(args, "de"), args.vocab_size[1])
    src_pieces, tgt_pieces = spm_pieces(src_spm), spm_pieces(tgt_spm)
    if args.separate_vocabs:
        sizes = (len(src_pieces) + 3, len(tgt_pieces) + 3)
    else:
        # One vocabulary for both sides, as OPUS-MT does: the union of the pieces.
        seen = set(src_pieces)
        src_pieces = src_pieces + [p for p in tgt_pieces if p not in seen]
        sizes = (len(src_pieces) + 3,) * 2
    eos = 0 if args.eos_id is None else args.eos_id
    pad = min(sizes) - 1 if args.pad_id is None else args.pad_id
    unk = args.unk_id
    if unk is None:
        unk = next(i for i in range(1, min(sizes)) if i not in (eos, pad))
    specials = {"</s>": eos, "<unk>": unk, "<pad>": pad}
    files = {"source.spm": src_spm, "target.spm": tgt_spm,
             "vocab.json": json_bytes(place_vocab(src_pieces, specials))}
    if args.separate_vocabs:
        files["target_vocab.json"] = json_bytes(place_vocab(tgt_pieces, specials))
    return files, sizes, {"eos": eos, "unk": unk, "pad": pad}


def copy_tokenizer(src_dir):
    """Reads tokenizer files and special ids from an existing model directory."""
    files = {}
    for name in ("source.spm", "target.spm", "vocab.json", "target_vocab.json",
                 "tokenizer_config.json", "special_tokens_map.json"):
        path = os.path.join(src_dir, name)
        if os.path.exists(path):
            with open(path, "rb") as f:
                files[name] = f.read()
    vocab = json.loads(files["vocab.json"])
    target = json.loads(files.get("target_vocab.json", files["vocab.json"]))
    with open(os.path.join(src_dir, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    ids = {"eos": cfg["eos_token_id"], "pad": cfg["pad_token_id"], "unk": vocab.get("<unk>")}
    return files, (max(vocab.values()) + 1, max(target.values()) + 1), ids


def json_bytes(obj):
    """JSON text as Hugging Face writes it (indent 2, UTF-8)."""
    return (json.dumps(obj, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


# ---- weights ------------------------------------------------------------------

def make_weights(args, src_vocab, tgt_vocab, eos):
    """Float32 tensors under Hugging Face MarianMT names: random noise on a planted translator.

    A purely random decoder makes a poor test subject: with tied embeddings it
    repeats its input token, otherwise a source-dependent constant, its lengths
    run to the limit, and random near-ties make float rounding decide outputs.
    So the weights plant a monotone word-for-word translator, and random layers
    at --noise-gain perturb it so that search still has alternatives:

      * a few high-frequency position columns (the first n sin columns, their cos
        partners, and the near-zero lowest-frequency sin column as a reference)
        stay free of token embeddings and of every sublayer's output, so the
        LayerNorm outputs keep the positions;
      * decoder layer 0 cross-attention: query = key = --align-sharpness times
        (position column - reference column) in every head, so step t attends to
        source position t (the reference cancels the LayerNorm mean);
        value = identity, out_proj = --align-gain on the token columns;
      * output rows: target id pi(s) gets exactly source row s, for a random
        injection pi (the identity when source and target share embeddings) with
        pi(eos) = eos. Step t thus emits pi(source token t), ending with eos where
        the source does, and the winner is well separated from the runner-up.

    Embedding rows have equal norms (no "hub" tokens). The last decoder LayerNorm
    gain (--logit-scale) sets how peaky the distributions are.
    """
    rng = np.random.default_rng(args.seed)
    d, ffn, dh = args.d_model, args.ffn, args.d_model // args.heads
    n_freq = max(1, min(4, (dh - 1) // 2))
    pos_cols = list(range(n_freq)) + list(range(d // 2, d // 2 + n_freq))
    ref_col = d // 2 - 1
    free_cols = pos_cols + [ref_col]
    tok_cols = [c for c in range(d) if c not in free_cols]

    def normal(shape, std):
        return (rng.standard_normal(shape) * std).astype(np.float32)

    def linear(prefix, n_out, n_in, gain=1.0):
        # Variance-preserving scale keeps activations O(1) through the stack.
        w[f"{prefix}.weight"] = normal((n_out, n_in), gain * n_in ** -0.5)
        w[f"{prefix}.bias"] = normal((n_out,), 0.1 * gain)

    def residual_linear(prefix, n_in, gain):
        # A sublayer output projection that leaves the position columns alone.
        linear(prefix, d, n_in, gain)
        w[f"{prefix}.weight"][free_cols] = 0.0
        w[f"{prefix}.bias"][free_cols] = 0.0

    def layer_norm(prefix, gain=1.0):
        w[f"{prefix}.weight"] = (gain * (1.0 + normal((d,), 0.1))).astype(np.float32)
        w[f"{prefix}.bias"] = normal((d,), 0.1)
        w[f"{prefix}.weight"][free_cols] = gain
        w[f"{prefix}.bias"][free_cols] = 0.0

    def token_rows(n):
        rows = np.zeros((n, d), np.float32)
        rows[:, tok_cols] = normal((n, len(tok_cols)), 1.0)
        return args.embed_norm * rows / np.linalg.norm(rows, axis=1, keepdims=True)

    def translated_rows():
        # Output rows with row pi(s) = enc_embed[s]: the planted dictionary.
        rows = token_rows(tgt_vocab)
        src_ids = np.array([i for i in rng.permutation(src_vocab) if i != eos])
        tgt_ids = np.array([i for i in rng.permutation(tgt_vocab) if i != eos])
        n = min(len(src_ids), len(tgt_ids))
        rows[tgt_ids[:n]] = enc_embed[src_ids[:n]]
        rows[eos] = enc_embed[eos]
        return rows

    enc_embed = token_rows(src_vocab)
    dec_embed = translated_rows() if args.separate_vocabs else enc_embed
    lm_head = translated_rows() if args.untied_lm_head else None

    w = {}
    noise = args.noise_gain
    for side, count in (("encoder", args.layers[0]), ("decoder", args.layers[1])):
        for i in range(count):
            prefix = f"model.{side}.layers.{i}"
            for proj in ("q_proj", "k_proj", "v_proj"):
                linear(f"{prefix}.self_attn.{proj}", d, d)
            residual_linear(f"{prefix}.self_attn.out_proj", d, noise)
            layer_norm(f"{prefix}.self_attn_layer_norm")
            if side == "decoder" and i == 0:
                cross = f"{prefix}.encoder_attn"
                qk = np.zeros((d, d), np.float32)
                for head in range(args.heads):
                    for j, col in enumerate(pos_cols):
                        qk[head * dh + j, col] = args.align_sharpness
                        qk[head * dh + j, ref_col] = -args.align_sharpness
                out = np.zeros((d, d), np.float32)
                out[tok_cols, tok_cols] = args.align_gain
                for proj, weight in (("q_proj", qk), ("k_proj", qk),
                                     ("v_proj", np.eye(d, dtype=np.float32)), ("out_proj", out)):
                    w[f"{cross}.{proj}.weight"] = weight.copy()
                    w[f"{cross}.{proj}.bias"] = np.zeros(d, np.float32)
                layer_norm(f"{prefix}.encoder_attn_layer_norm")
            elif side == "decoder":
                for proj in ("q_proj", "k_proj", "v_proj"):
                    linear(f"{prefix}.encoder_attn.{proj}", d, d)
                residual_linear(f"{prefix}.encoder_attn.out_proj", d, noise)
                layer_norm(f"{prefix}.encoder_attn_layer_norm")
            linear(f"{prefix}.fc1", ffn, d)
            residual_linear(f"{prefix}.fc2", ffn, noise)
            last = side == "decoder" and i == count - 1
            layer_norm(f"{prefix}.final_layer_norm", args.logit_scale if last else 1.0)
        w[f"model.{side}.embed_positions.weight"] = sinusoidal_positions(
            args.max_positions, d).numpy()  # stored like HF does; loaders ignore it

    if args.save_embed_names == "shared" and not args.separate_vocabs:
        w["model.shared.weight"] = enc_embed
    else:
        w["model.encoder.embed_tokens.weight"] = enc_embed
        w["model.decoder.embed_tokens.weight"] = dec_embed
    if lm_head is not None:
        w["lm_head.weight"] = lm_head
    bias = normal((1, tgt_vocab), args.bias_scale) if args.bias_scale > 0 \
        else np.zeros((1, tgt_vocab), np.float32)
    bias[0, eos] += args.eos_bias
    w["final_logits_bias"] = bias
    return w


# ---- configuration files ------------------------------------------------------

def configs(args, sizes, ids):
    """config.json, generation_config.json, tokenizer_config.json and the special map."""
    src_vocab, tgt_vocab = sizes
    eos, pad, unk = ids["eos"], ids["pad"], ids["unk"]
    shared = not args.separate_vocabs
    config = {
        "_name_or_path": "mt-test-model", "activation_dropout": 0.0,
        "activation_function": args.activation, "architectures": ["MarianMTModel"],
        "attention_dropout": 0.0, "bad_words_ids": [[pad]], "bos_token_id": 0,
        "classifier_dropout": 0.0, "d_model": args.d_model,
        "decoder_attention_heads": args.heads, "decoder_ffn_dim": args.ffn,
        "decoder_layerdrop": 0.0, "decoder_layers": args.layers[1],
        "decoder_start_token_id": pad, "decoder_vocab_size": tgt_vocab, "dropout": 0.1,
        "encoder_attention_heads": args.heads, "encoder_ffn_dim": args.ffn,
        "encoder_layerdrop": 0.0, "encoder_layers": args.layers[0],
        "eos_token_id": eos, "forced_eos_token_id": eos, "init_std": 0.02,
        "is_encoder_decoder": True, "max_length": args.max_length,
        "max_position_embeddings": args.max_positions, "model_type": "marian",
        "normalize_embedding": False, "num_beams": 4, "num_hidden_layers": args.layers[0],
        "pad_token_id": pad, "scale_embedding": True,
        "share_encoder_decoder_embeddings": shared, "static_position_embeddings": True,
        "tie_word_embeddings": not args.untied_lm_head,
        "torch_dtype": {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[args.dtype],
        "transformers_version": "4.44.0", "use_cache": True, "vocab_size": src_vocab,
    }
    generation = {
        "bad_words_ids": [[pad]], "bos_token_id": 0, "decoder_start_token_id": pad,
        "eos_token_id": eos, "forced_eos_token_id": eos, "max_length": args.max_length,
        "num_beams": 4, "pad_token_id": pad, "renormalize_logits": True,
        "transformers_version": "4.44.0",
    }
    added = {str(i): {"content": text, "lstrip": False, "normalized": False, "rstrip": False,
                      "single_word": False, "special": True}
             for i, text in sorted(((eos, "</s>"), (unk, "<unk>"), (pad, "<pad>")))}
    tokenizer = {
        "added_tokens_decoder": added, "clean_up_tokenization_spaces": True,
        "eos_token": "</s>", "model_max_length": 512, "pad_token": "<pad>",
        "separate_vocabs": args.separate_vocabs, "source_lang": "en", "sp_model_kwargs": {},
        "target_lang": "de", "tokenizer_class": "MarianTokenizer", "unk_token": "<unk>",
    }
    special = {name: {"content": text, "lstrip": False, "normalized": False, "rstrip": False,
                      "single_word": False}
               for name, text in (("eos_token", "</s>"), ("pad_token", "<pad>"),
                                  ("unk_token", "<unk>"))}
    return {"config.json": json_bytes(config), "generation_config.json": json_bytes(generation),
            "tokenizer_config.json": json_bytes(tokenizer),
            "special_tokens_map.json": json_bytes(special)}


def main(argv=None):
    """Writes the model directory; returns the process exit status."""
    args = parse_args(argv)
    if args.tokenizer_from:
        files, sizes, ids = copy_tokenizer(args.tokenizer_from)
        args.separate_vocabs = "target_vocab.json" in files
    else:
        files, sizes, ids = build_tokenizer(args)
    # Tokenizer files copied from a real model keep their own tokenizer_config.json.
    for name, blob in configs(args, sizes, ids).items():
        files.setdefault(name, blob)
    os.makedirs(args.out_dir, exist_ok=True)
    for name, blob in files.items():
        with open(os.path.join(args.out_dir, name), "wb") as f:
            f.write(blob)
    if args.noise_gain is None:
        args.noise_gain = 0.5 if max(sizes) <= 4096 else 0.25
    weights = make_weights(args, sizes[0], sizes[1], ids["eos"])
    safetensors_file.write(os.path.join(args.out_dir, "model.safetensors"), weights, args.dtype)
    print(f"{args.out_dir}: vocab {sizes[0]}/{sizes[1]}, eos {ids['eos']}, pad {ids['pad']}, "
          f"unk {ids['unk']}, {args.dtype}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
