#!/usr/bin/python3
"""Writes a tiny random Marian transformer as an OPUS-MT release directory would hold it.

The Marian converter (tools/convert_marian.py) cannot be tried on real OPUS-MT
zips here, so its tests need inputs written exactly as Marian writes them:

  * MODEL.npz: float32 parameters under Marian's names ("Wemb" or
    "encoder_Wemb"/"decoder_Wemb", "encoder_l1_self_Wq" ... with 1-based layer
    numbers, matrices [in, out], biases and LayerNorm parameters [1, d],
    "decoder_ff_logit_out_W" [d, V] when the output layer is not tied,
    "decoder_ff_logit_out_b" [1, V]) plus "special:model.yml", the model's YAML
    options as a NUL-terminated int8 array;
  * the vocabulary .yml ("token: id" lines in id order, quoted and escaped the
    way a YAML emitter must for tokens such as '"', ':', '#', '- ' or tabs);
  * decoder.yml (model and vocabulary file names, beam-size, normalize);
  * source.spm / target.spm and an OPUS-MT style README.md naming the languages.

Vocabularies come either from an existing Hugging Face model directory
(--vocab-from: its vocab.json without "<pad>", which is what the OPUS-MT .yml
held before the Hugging Face conversion appended the pad, and its .spm files) or
from SentencePiece models trained here on synthetic sentences, with "</s>" 0,
"<unk>" 1, optional ">>xxx<<" target-language tokens and a set of tokens that
are awkward to write in YAML.

The weights are random but plant a word-for-word "translator", so that outputs
have varied lengths and beam search has real choices (see make_weights).
"""
import argparse
import io
import os
import random
import re
import sys

import numpy as np
import yaml

# Tokens a YAML writer must quote or escape, plus plain scalars that a typed YAML
# loader would turn into numbers, booleans or null: the converter must read all of
# them back as the exact strings.
TRICKY_TOKENS = [
    '"', "'", ":", "#", "- ", "-", "?", "[", "]", "{", "}", ",", "&", "*", "!", "|", ">",
    "%", "@", "`", "~", "null", "true", "no", "yes", "1", "42", "0x10", "1e3", "3.14", "-1",
    "\u2581über", "ß", "日本", "é", "😀", "a: b", "a #b", "x:", "\\", "\\n", "\t", " lead",
    "trail ", "it's", 'say "hi"', "<<", "=", "\u2581\"", ".\"", "\u2581'", "---", "#1", ": ",
    "\u00a0nbsp",
]
# Written with \u / \U escapes, and in single quotes ('' for '), to cover the other
# YAML spellings a hand-edited or differently emitted vocabulary may use.
ESCAPED_TOKENS = {"é", "😀", "日本"}
SINGLE_QUOTED_TOKENS = {"it's", "a #b"}

SOURCE_SYLLABLES = "ka ro mi te su na lo pe ri do ve sa Ku Ma ön".split()
TARGET_SYLLABLES = "schu bä lin ker ög mar tes fi da zun Wo Ha ei".split()


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out_dir")
    p.add_argument("--d-model", type=int, default=32)
    p.add_argument("--layers", type=int, nargs=2, default=[2, 2], metavar=("ENC", "DEC"))
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--ffn", type=int, default=64)
    p.add_argument("--activation", choices=["swish", "relu", "gelu"], default="swish",
                   help="transformer-ffn-activation (Marian's default is swish)")
    p.add_argument("--tie", choices=["all", "src", "output", "none"], default="all",
                   help="all: tied-embeddings-all (one Wemb, output tied); src: "
                        "tied-embeddings-src (one Wemb, own output matrix); output: "
                        "tied-embeddings (encoder_Wemb, decoder_Wemb, output tied to the "
                        "latter); none: three separate matrices")
    p.add_argument("--separate-vocabs", action="store_true",
                   help="own source and target vocabularies (.src/.trg.vocab.yml)")
    p.add_argument("--languages", nargs="+", default=[], metavar="LANG",
                   help="add >>LANG<< target-language tokens to the source vocabulary")
    p.add_argument("--source-lang", default="en", help="for README.md")
    p.add_argument("--target-lang", help="for README.md (default: --languages, else de)")
    p.add_argument("--vocab-from", metavar="DIR",
                   help="take vocab.json (without <pad>) and the .spm files of this "
                        "Hugging Face model directory")
    p.add_argument("--vocab-size", type=int, nargs=2, default=[300, 250], metavar=("SRC", "TGT"),
                   help="SentencePiece sizes to train (without --vocab-from)")
    p.add_argument("--omit-output-bias", action="store_true",
                   help="no decoder_ff_logit_out_b (Marian's --output-omit-bias)")
    p.add_argument("--beam-size", type=int, default=4, help="decoder.yml beam-size")
    p.add_argument("--normalize", type=float, default=0.6, help="decoder.yml normalize")
    p.add_argument("--eos-bias", type=float, default=1.0, help="output bias of </s>")
    p.add_argument("--bias-scale", type=float, default=0.5,
                   help="std of the random output biases")
    p.add_argument("--logit-scale", type=float, default=8.0,
                   help="last decoder LayerNorm gain: about the std of the logits")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    if args.d_model % args.heads or args.d_model % 2:
        p.error("--d-model must be even and divisible by --heads")
    if args.vocab_from and (args.separate_vocabs or args.languages):
        p.error("--vocab-from takes the vocabularies as they are in DIR")
    if args.tie in ("all", "src") and args.separate_vocabs:
        p.error(f"--tie {args.tie} shares one embedding matrix: it needs one vocabulary")
    return args


# ---- vocabularies -------------------------------------------------------------------

def synthetic_sentences(syllables, count, seed):
    """`count` sentences of a made-up language: words of 1-3 syllables, punctuation."""
    rng = random.Random(seed)
    words = sorted({"".join(rng.choice(syllables) for _ in range(rng.randint(1, 3)))
                    for _ in range(400)})
    out = []
    for _ in range(count):
        sentence = " ".join(rng.choice(words) for _ in range(rng.randint(2, 12)))
        if rng.random() < 0.3:
            sentence += f" {rng.randint(0, 999)}"
        out.append(sentence[0].upper() + sentence[1:] + rng.choice([".", ".", "?", "!", " :"]))
    return out


def train_spm(lines, vocab_size):
    """A unigram SentencePiece model (serialized bytes) trained on `lines`."""
    import sentencepiece
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=model, vocab_size=vocab_size,
        model_type="unigram", character_coverage=1.0, hard_vocab_limit=False,
        minloglevel=2, num_threads=1)
    return model.getvalue()


def spm_pieces(model_bytes):
    """The ordinary pieces of a SentencePiece model (control and unknown left out)."""
    import sentencepiece
    sp = sentencepiece.SentencePieceProcessor(model_proto=model_bytes)
    return [sp.id_to_piece(i) for i in range(sp.get_piece_size())
            if not (sp.is_control(i) or sp.is_unknown(i))]


def ordered_vocab(tokens):
    """{token: id} numbering the distinct tokens in order."""
    vocab = {}
    for token in tokens:
        vocab.setdefault(token, len(vocab))
    return vocab


def generated_vocabs(args):
    """Trains the .spm files and builds Marian-style vocabularies from their pieces.

    Returns (source vocab, target vocab, {file name: bytes}); one dict serves both
    sides unless --separate-vocabs.
    """
    src_spm = train_spm(synthetic_sentences(SOURCE_SYLLABLES, 2000, args.seed), args.vocab_size[0])
    tgt_spm = train_spm(synthetic_sentences(TARGET_SYLLABLES, 2000, args.seed + 1),
                        args.vocab_size[1])
    head = ["</s>", "<unk>"]
    languages = [f">>{lang}<<" for lang in args.languages]
    files = {"source.spm": src_spm, "target.spm": tgt_spm}
    if args.separate_vocabs:
        src = ordered_vocab(head + languages + TRICKY_TOKENS + spm_pieces(src_spm))
        tgt = ordered_vocab(head + TRICKY_TOKENS[::-1] + spm_pieces(tgt_spm))
        return src, tgt, files
    shared = ordered_vocab(head + languages + TRICKY_TOKENS + spm_pieces(src_spm)
                           + spm_pieces(tgt_spm))
    return shared, shared, files


def copied_vocabs(src_dir):
    """Vocabularies and .spm files of a Hugging Face directory, "<pad>" removed.

    The Hugging Face conversion appended "<pad>" after the last Marian id, so
    dropping it gives back the Marian vocabulary.
    """
    import json

    def load(name):
        with open(os.path.join(src_dir, name), encoding="utf-8") as f:
            vocab = json.load(f)
        if vocab.get("<pad>") != max(vocab.values()):
            raise SystemExit(f"{src_dir}/{name}: <pad> is not the last id")
        del vocab["<pad>"]
        return vocab

    src = load("vocab.json")
    tgt = load("target_vocab.json") if os.path.exists(
        os.path.join(src_dir, "target_vocab.json")) else src
    files = {}
    for name in ("source.spm", "target.spm"):
        with open(os.path.join(src_dir, name), "rb") as f:
            files[name] = f.read()
    return src, tgt, files


_PLAIN = re.compile(r"[^\s\-?:,\[\]{}#&*!|>'\"%@`]([^:#]|:(?!\s|$)|(?<!\s)#)*")
_UNSAFE_CHARS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\"\\\\]")


def yaml_scalar(token):
    """The token as a YAML mapping key: plain when a YAML parser reads it back verbatim,
    else double-quoted with escapes (as yaml-cpp, Marian's writer, does), or in the
    alternative spellings of ESCAPED_TOKENS / SINGLE_QUOTED_TOKENS."""
    if token in SINGLE_QUOTED_TOKENS:
        return "'" + token.replace("'", "''") + "'"
    escape_all = token in ESCAPED_TOKENS
    if (not escape_all and _PLAIN.fullmatch(token) and not _UNSAFE_CHARS.search(token)
            and token == token.strip(" \t")):
        return token
    out = []
    for ch in token:
        code = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\n":
            out.append("\\n")
        elif code < 0x20 or 0x7f <= code <= 0x9f:
            out.append(f"\\x{code:02x}")
        elif (escape_all and code > 0x7e) or _UNSAFE_CHARS.match(ch):
            out.append(f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def vocab_yml(vocab):
    """The text of a Marian vocabulary file: one "token: id" line per entry, id order.

    Parsed back here, so that a converter failure on it is the converter's."""
    text = "".join(f"{yaml_scalar(tok)}: {i}\n"
                   for tok, i in sorted(vocab.items(), key=lambda x: x[1]))
    loaded = yaml.load(text, Loader=getattr(yaml, "CBaseLoader", yaml.BaseLoader))
    if {k: int(v) for k, v in loaded.items()} != vocab:
        raise AssertionError("vocabulary YAML does not read back as written")
    return text


# ---- weights ------------------------------------------------------------------------

def random_orthogonal(rng, n):
    """A uniformly random n x n orthogonal matrix (QR of a Gaussian, signs fixed)."""
    q, r = np.linalg.qr(rng.standard_normal((n, n)))
    return q * np.sign(np.diag(r))


def reflection(a, b):
    """The Householder reflection taking direction a to direction b."""
    a, b = a / np.linalg.norm(a), b / np.linalg.norm(b)
    v = a - b
    if np.linalg.norm(v) < 1e-12:
        return np.eye(len(a))
    return np.eye(len(a)) - 2.0 * np.outer(v, v) / (v @ v)


def make_weights(args, n_src, n_tgt, src_eos, tgt_eos):
    """Float32 parameters under Marian's names, shaped as Marian stores them.

    A purely random decoder repeats one token until the length limit, which tests
    little, so a monotone dictionary translator is planted under random noise:
    token embeddings avoid the highest-frequency position columns, so states keep
    their position; in decoder layer 1 cross-attention, query = key = those
    position columns (step t attends to source position t), value = identity and
    output = a random rotation R of the token columns that maps the source </s>
    onto the output </s>. Step t thus tends to emit the target token closest to
    R(source token t) and to stop where the source stops. Everything else is
    random at half strength; the last LayerNorm gain sets how peaked the output
    distributions are.
    """
    rng = np.random.default_rng(args.seed)
    d, ffn, heads = args.d_model, args.ffn, args.heads
    dh, half = d // heads, d // 2
    n_freq = max(1, min(4, dh // 2))
    pos_cols = list(range(n_freq)) + list(range(half, half + n_freq))
    tok_cols = [c for c in range(d) if c not in pos_cols]

    def normal(shape, std):
        return (rng.standard_normal(shape) * std).astype(np.float32)

    def token_rows(n):
        rows = np.zeros((n, d), np.float32)
        rows[:, tok_cols] = normal((n, len(tok_cols)), 1.0)
        return 1.5 * rows / np.linalg.norm(rows, axis=1, keepdims=True)

    w = {}

    def dense(prefix, suffix, n_in, n_out, gain=1.0):
        # Variance-preserving scale keeps activations O(1) through the stack; blocks
        # that write into the residual stream leave the position columns alone.
        w[f"{prefix}_W{suffix}"] = normal((n_in, n_out), gain * n_in ** -0.5)
        w[f"{prefix}_b{suffix}"] = normal((1, n_out), 0.1 * gain)
        if n_out == d and suffix in ("o", "2"):
            w[f"{prefix}_W{suffix}"][:, pos_cols] = 0.0
            w[f"{prefix}_b{suffix}"][:, pos_cols] = 0.0

    def layer_norm(prefix, gain=1.0):
        w[f"{prefix}_ln_scale"] = (gain * (1.0 + normal((1, d), 0.1))).astype(np.float32)
        w[f"{prefix}_ln_bias"] = normal((1, d), 0.1)
        w[f"{prefix}_ln_scale"][:, pos_cols] = 1.0
        w[f"{prefix}_ln_bias"][:, pos_cols] = 0.0

    enc_emb = token_rows(n_src)
    if args.tie in ("all", "src"):
        w["Wemb"] = dec_emb = enc_emb
    else:
        dec_emb = token_rows(n_tgt)
        w["encoder_Wemb"], w["decoder_Wemb"] = enc_emb, dec_emb
    out_rows = dec_emb if args.tie in ("all", "output") else token_rows(n_tgt)
    if args.tie in ("src", "none"):
        w["decoder_ff_logit_out_W"] = np.ascontiguousarray(out_rows.T)
    if not args.omit_output_bias:
        bias = normal((1, n_tgt), args.bias_scale)
        bias[0, tgt_eos] += args.eos_bias
        w["decoder_ff_logit_out_b"] = bias
    rotation = random_orthogonal(rng, len(tok_cols))
    rotation = reflection(rotation @ enc_emb[src_eos, tok_cols],
                          out_rows[tgt_eos, tok_cols]) @ rotation

    for side, depth in (("encoder", args.layers[0]), ("decoder", args.layers[1])):
        for i in range(1, depth + 1):
            blocks = ["self", "context"] if side == "decoder" else ["self"]
            for block in blocks:
                prefix = f"{side}_l{i}_{block}"
                if block == "context" and i == 1:
                    qk = np.zeros((d, d), np.float32)
                    for head in range(heads):
                        for j, col in enumerate(pos_cols):
                            qk[col, head * dh + j] = 8.0
                    out = np.zeros((d, d), np.float32)
                    out[np.ix_(tok_cols, tok_cols)] = 4.0 * rotation.T  # y = x W: W = R^T
                    for name, mat in (("q", qk), ("k", qk), ("v", np.eye(d, dtype=np.float32)),
                                      ("o", out)):
                        w[f"{prefix}_W{name}"] = mat.copy()
                        w[f"{prefix}_b{name}"] = np.zeros((1, d), np.float32)
                else:
                    for name in "qkv":
                        dense(prefix, name, d, d)
                    dense(prefix, "o", d, d, 0.5)
                layer_norm(f"{prefix}_Wo")
            prefix = f"{side}_l{i}_ffn"
            dense(prefix, "1", d, ffn)
            dense(prefix, "2", ffn, d, 0.5)
            last = side == "decoder" and i == depth
            layer_norm(f"{prefix}_ffn", args.logit_scale if last else 1.0)
    return w


# ---- Marian files -------------------------------------------------------------------

def model_options(args, n_src, n_tgt):
    """The options Marian stores in special:model.yml (as written by Marian 1.x)."""
    return {
        "type": "transformer", "dim-vocabs": [n_src, n_tgt], "dim-emb": args.d_model,
        "enc-depth": args.layers[0], "dec-depth": args.layers[1],
        "transformer-heads": args.heads, "transformer-dim-ffn": args.ffn,
        "transformer-ffn-activation": args.activation, "transformer-ffn-depth": 2,
        "transformer-decoder-ffn-depth": 0, "transformer-decoder-dim-ffn": 0,
        "transformer-decoder-autoreg": "self-attention", "transformer-dim-aan": 2048,
        "transformer-aan-activation": "swish", "transformer-aan-depth": 2,
        "transformer-aan-nogate": False, "transformer-no-projection": False,
        "transformer-preprocess": "", "transformer-postprocess": "dan",
        "transformer-postprocess-emb": "d", "transformer-postprocess-top": "",
        "transformer-tied-layers": [], "transformer-train-position-embeddings": False,
        "transformer-guided-alignment-layer": "last", "transformer-depth-scaling": False,
        "tied-embeddings": args.tie == "output", "tied-embeddings-src": args.tie == "src",
        "tied-embeddings-all": args.tie == "all", "output-omit-bias": args.omit_output_bias,
        "right-left": False, "layer-normalization": False, "skip": False, "ulr": False,
        "ulr-dim-emb": 0, "lemma-dim-emb": 0, "input-types": [],
        "dec-cell": "gru", "dec-cell-base-depth": 2, "dec-cell-high-depth": 1,
        "enc-cell": "gru", "enc-cell-depth": 1, "enc-type": "bidirectional",
        "version": "v1.11.0 f00d062 2022-02-08 08:39:24 -0800",
    }


def npz_yaml_entry(options):
    """special:model.yml as Marian saves it: the YAML text's bytes, NUL-terminated, int8."""
    text = yaml.safe_dump(options, default_flow_style=False, sort_keys=True)
    return np.frombuffer(text.encode("utf-8") + b"\0", dtype=np.int8).copy()


def readme(args):
    """An OPUS-MT README.md header naming the language pair."""
    target = args.target_lang or (" ".join(args.languages) if args.languages else "de")
    lines = ["# opus-2022-02-08.zip", "", "* dataset: opus", "* model: transformer",
             f"* source language(s): {args.source_lang}", f"* target language(s): {target}",
             "* pre-processing: normalization + SentencePiece (spm32k,spm32k)"]
    if args.languages:
        lines.append("* a sentence initial language token is required in the form of "
                     "`>>id<<` (id = valid target language ID)")
    return "\n".join(lines) + "\n"


def main(argv=None):
    args = parse_args(argv)
    src_vocab, tgt_vocab, files = (copied_vocabs(args.vocab_from) if args.vocab_from
                                   else generated_vocabs(args))
    separate = src_vocab != tgt_vocab
    n_src, n_tgt = len(src_vocab), len(tgt_vocab)
    if args.tie in ("all", "src") and separate:
        raise SystemExit(f"--tie {args.tie} needs one vocabulary; {args.vocab_from} has two")

    stem = "opus.spm32k-spm32k"
    model_name = f"{stem}.transformer.model1.npz.best-perplexity.npz"
    if separate:
        vocab_names = [f"{stem}.src.vocab.yml", f"{stem}.trg.vocab.yml"]
        files[vocab_names[0]] = vocab_yml(src_vocab).encode("utf-8")
        files[vocab_names[1]] = vocab_yml(tgt_vocab).encode("utf-8")
    else:
        vocab_names = [f"{stem}.vocab.yml"] * 2
        files[vocab_names[0]] = vocab_yml(src_vocab).encode("utf-8")
    decoder = {"models": [model_name], "vocabs": vocab_names, "beam-size": args.beam_size,
               "normalize": args.normalize, "word-penalty": 0, "mini-batch": 16,
               "maxi-batch": 100, "maxi-batch-sort": "src", "relative-paths": True}
    files["decoder.yml"] = yaml.safe_dump(decoder, sort_keys=False).encode("utf-8")
    files["README.md"] = readme(args).encode("utf-8")

    weights = make_weights(args, n_src, n_tgt, src_vocab["</s>"], tgt_vocab["</s>"])
    weights["special:model.yml"] = npz_yaml_entry(model_options(args, n_src, n_tgt))

    os.makedirs(args.out_dir)
    for name, blob in files.items():
        with open(os.path.join(args.out_dir, name), "wb") as f:
            f.write(blob)
    np.savez(os.path.join(args.out_dir, model_name), **weights)
    print(f"{args.out_dir}: vocab {n_src}/{n_tgt}, tie {args.tie}, {args.activation}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
