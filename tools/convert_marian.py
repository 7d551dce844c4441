#!/usr/bin/python3
"""Converts a Marian transformer (an unpacked OPUS-MT release) into the engine's model directory.

    tools/convert_marian.py MARIAN_DIR OUT_DIR [--source-lang L] [--target-lang L] [--quantize int8]

MARIAN_DIR is what an OPUS-MT zip unpacks to: decoder.yml (or Marian's own
MODEL.npz.decoder.yml), which names the .npz weights and the source/target
vocabulary .yml files; source.spm and target.spm; README.md. OUT_DIR, which must
not exist yet, receives the Hugging Face MarianMT layout the engine loads
(config.json, generation_config.json, model.safetensors, vocab.json and, with two
vocabularies, target_vocab.json, tokenizer_config.json, special_tokens_map.json,
source.spm, target.spm, plus README.md and LICENSE when present). With --quantize int8
the matrices are stored as I8 with per-row float scales (see tools/quantize_model.py):
4x smaller than float32, and the engine runs such a directory int8 by default.

The mapping follows transformers' convert_marian_to_pytorch.py, the script that
made the Helsinki-NLP/opus-mt-* directories, so a converted zip behaves like its
Hugging Face twin:
  * Marian matrices are [in, out] and become [out, in]; [1, n] vectors become [n];
    layer l{i} (1-based) becomes layers.{i-1};
  * "<pad>" is appended to each vocabulary with a zero embedding row (and a zero
    output row and bias), and is the decoder start token: Marian starts decoding
    from a zero embedding, which that row reproduces;
  * scale_embedding and static (sinusoidal) positions, as Marian's transformer;
  * decoder.yml's beam-size and normalize become num_beams and length_penalty.
Where the script is silent or wrong it does better: untied output matrices
(decoder_ff_logit_out_W) become lm_head.weight, two vocabularies of different
sizes are kept, and Marian's "gelu" (x * sigmoid(1.702 x), not the erf gelu) becomes
"quick_gelu" rather than a mislabelled "gelu".

One difference from Marian itself remains, shared with every Hugging Face
OPUS-MT directory: the engine (like transformers) computes position frequencies
10000^(-2i/d), Marian exp(-i ln(10000) / (d/2 - 1)). Positions are not stored in
the model, so no conversion can change that; translations of real models are
nearly, not always exactly, Marian's.

Only the post-norm transformer the engine runs is accepted; any other Marian
setting (pre-norm, embedding LayerNorm, average-attention decoder, learned
positions, ...) is refused with the setting's name, and every tensor of the .npz
must be used. Output is written to a temporary directory beside OUT_DIR and
renamed into place at the end, so a failure leaves no partial OUT_DIR.
"""
import argparse
import glob
import json
import os
import re
import shutil
import sys
import tempfile

import numpy as np
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from safetensors_io import quantize_int8  # noqa: E402
from safetensors_io import write as write_safetensors  # noqa: E402

CONFIG_KEY = "special:model.yml"
PAD = "<pad>"
EOS = "</s>"
UNK = "<unk>"
MAX_LENGTH = 512  # generation limit, as in the Hugging Face conversion
# Sinusoidal positions have no trained size; Marian decodes up to 1000 tokens by default.
MAX_POSITIONS = 1024
LANGUAGE_TOKEN = re.compile(r">>.+<<")

# Marian options that select an architecture other than the engine's post-norm
# transformer: (option, Marian's default, accepted values, why others are refused).
REQUIRED_OPTIONS = [
    ("type", None, ["transformer"], "only Marian's transformer architecture is supported"),
    ("transformer-preprocess", "", [""],
     "a non-empty value adds LayerNorm before each sublayer (pre-norm); the engine "
     "runs post-norm transformers only"),
    ("transformer-postprocess", "dan", ["dan"],
     "the engine applies dropout-add-LayerNorm ('dan') after every sublayer"),
    ("transformer-postprocess-emb", "d", ["d", ""],
     "an 'n' normalises the embeddings, which the engine does not do"),
    ("transformer-postprocess-top", "", [""],
     "a final LayerNorm on top of the stacks belongs to pre-norm models"),
    ("transformer-decoder-autoreg", "self-attention", ["self-attention"],
     "average-attention and RNN decoders are not supported"),
    ("transformer-ffn-depth", 2, [2], "the engine's feed-forward blocks have two layers"),
    ("transformer-decoder-ffn-depth", 0, [0, 2],
     "the engine's feed-forward blocks have two layers"),
    ("transformer-tied-layers", [], [[]], "layer sharing is not supported"),
    ("transformer-train-position-embeddings", False, [False],
     "learned positions (Wpos) are not supported: the engine computes sinusoidal ones"),
    ("transformer-no-projection", False, [False],
     "attention without output projection is not supported"),
    ("right-left", False, [False], "right-to-left models produce reversed output"),
    ("ulr", False, [False], "universal language representation embeddings are not supported"),
    ("lemma-dim-emb", 0, [0], "factored vocabularies are not supported"),
]

# Marian's "gelu" is x * sigmoid(1.702 x): Hugging Face's "quick_gelu", not its erf "gelu".
ACTIVATIONS = {"swish": "swish", "relu": "relu", "gelu": "quick_gelu"}

# Marian block names -> Hugging Face module names, and Marian's W{q,k,v,o} letters.
LAYER_TENSORS = {"self": "self_attn", "context": "encoder_attn"}
LINEAR_PARTS = {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "out_proj"}


class ConversionError(Exception):
    """A problem with the input model, reported to the user as one message."""


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("marian_dir", help="unpacked OPUS-MT / Marian model directory")
    p.add_argument("out_dir", help="model directory to create (must not exist)")
    p.add_argument("--source-lang", help="source language code (default: from README.md)")
    p.add_argument("--target-lang",
                   help="(default) target language code (default: from README.md); for "
                        "multilingual models, one of its >>xxx<< tokens")
    p.add_argument("--quantize", choices=["int8"],
                   help="store the matrices as int8 with per-row scales (4x smaller than float32; "
                        "the engine then runs int8 by default)")
    return p.parse_args(argv)


# ---- reading the Marian directory ----------------------------------------------------

def load_yaml_file(path, what):
    try:
        with open(path, encoding="utf-8") as f:
            data = yaml.safe_load(f)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise ConversionError(f"cannot read {what} {path}: {e}") from None
    if not isinstance(data, dict):
        raise ConversionError(f"{what} {path} is not a YAML mapping")
    return data


def find_decoder_yml(marian_dir):
    """decoder.yml of an OPUS-MT release, else the MODEL.npz.decoder.yml Marian writes."""
    path = os.path.join(marian_dir, "decoder.yml")
    if os.path.isfile(path):
        return path
    found = sorted(glob.glob(os.path.join(glob.escape(marian_dir), "*.decoder.yml")))
    if len(found) == 1:
        return found[0]
    if not found:
        raise ConversionError(f"{marian_dir}: no decoder.yml (it names the model's .npz and "
                              f"vocabulary files); is this an unpacked OPUS-MT/Marian model?")
    raise ConversionError(f"{marian_dir}: several *.decoder.yml files, cannot choose: "
                          + ", ".join(os.path.basename(f) for f in found))


def resolve(marian_dir, name, what):
    """A file named in decoder.yml: relative to the directory, else by its base name
    (decoder.yml files written at training time may hold absolute paths)."""
    for path in (os.path.join(marian_dir, name), os.path.join(marian_dir, os.path.basename(name))):
        if os.path.isfile(path):
            return path
    raise ConversionError(f"{what} '{name}' named in decoder.yml not found in {marian_dir}")


def read_decoder_settings(marian_dir):
    """(npz path, source vocab path, target vocab path, decoder.yml options)."""
    path = find_decoder_yml(marian_dir)
    dec = load_yaml_file(path, "decoder config")
    models, vocabs = dec.get("models"), dec.get("vocabs")
    if not isinstance(models, list) or not models:
        raise ConversionError(f"{path}: no 'models' list")
    if len(models) != 1:
        raise ConversionError(f"{path}: an ensemble of {len(models)} models cannot be "
                              f"converted into one model")
    if not isinstance(vocabs, list) or len(vocabs) != 2:
        raise ConversionError(f"{path}: 'vocabs' must list a source and a target vocabulary "
                              f"(multi-source models are not supported)")
    npz = resolve(marian_dir, str(models[0]), "model")
    src, tgt = (resolve(marian_dir, str(v), "vocabulary") for v in vocabs)
    return npz, src, tgt, dec


def load_vocab(path):
    """{token: id} of a Marian vocabulary .yml, ids checked to be 0..n-1.

    Marian writes "token: id" with YAML quoting and escapes ('"\\""', '"\\t"', ...);
    tokens that look like numbers, booleans or null ('1', 'true', '~') must stay
    strings, so the YAML is read without type resolution.
    """
    if not path.endswith((".yml", ".yaml")):
        raise ConversionError(f"vocabulary {path}: only Marian .yml vocabularies are supported "
                              f"(OPUS-MT releases use them)")
    loader = getattr(yaml, "CBaseLoader", yaml.BaseLoader)
    try:
        with open(path, encoding="utf-8") as f:
            raw = yaml.load(f, Loader=loader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise ConversionError(f"cannot read vocabulary {path}: {e}") from None
    if not isinstance(raw, dict) or not raw:
        raise ConversionError(f"vocabulary {path} is not a 'token: id' mapping")
    vocab = {}
    for token, value in raw.items():
        if not isinstance(token, str) or not isinstance(value, str) or not value.isdigit():
            raise ConversionError(f"vocabulary {path}: entry {token!r}: {value!r} "
                                  f"is not 'token: id'")
        vocab[token] = int(value)
    ids = sorted(vocab.values())
    if ids != list(range(len(ids))):
        first = next(i for i, v in enumerate(ids) if v != i)
        raise ConversionError(f"vocabulary {path}: ids are not 0..{len(ids) - 1} "
                              f"(id {first} missing or repeated)")
    for token in (EOS, UNK):
        if token not in vocab:
            raise ConversionError(f"vocabulary {path} has no {token} entry")
    if PAD in vocab:
        raise ConversionError(f"vocabulary {path} already has {PAD}: the conversion appends it")
    return vocab


def model_options(npz, path):
    """The options Marian saved in the .npz (special:model.yml, NUL-terminated bytes)."""
    if CONFIG_KEY not in npz.files:
        raise ConversionError(f"{path}: no '{CONFIG_KEY}' entry; not a Marian model file")
    entry = npz[CONFIG_KEY]
    if entry.dtype.itemsize != 1:  # Marian writes int8; char arrays hold the same bytes
        raise ConversionError(f"{path}: '{CONFIG_KEY}' is not a byte array ({entry.dtype})")
    raw = entry.tobytes().split(b"\0", 1)[0]
    try:
        options = yaml.safe_load(raw.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError) as e:
        raise ConversionError(f"{path}: unreadable '{CONFIG_KEY}': {e}") from None
    if not isinstance(options, dict):
        raise ConversionError(f"{path}: '{CONFIG_KEY}' is not a YAML mapping")
    return options


def check_options(opts, path):
    """Refuses models whose options select anything but the engine's architecture,
    naming the option: converting them would produce a model that loads but
    translates wrongly."""
    for key, default, accepted, why in REQUIRED_OPTIONS:
        value = opts.get(key, default)
        if value not in accepted:
            raise ConversionError(f"{path}: unsupported Marian setting {key}: {value!r}: {why}")
    act = opts.get("transformer-ffn-activation", "swish")
    if act not in ACTIVATIONS:
        raise ConversionError(f"{path}: unsupported Marian setting transformer-ffn-activation: "
                              f"{act!r} (supported: {', '.join(ACTIVATIONS)})")


def read_languages(marian_dir, args):
    """(source_lang, target_lang): the options, else README.md's single language per side."""
    listed = {}
    readme = os.path.join(marian_dir, "README.md")
    if os.path.isfile(readme):
        with open(readme, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = re.match(r"\s*\*\s*(source|target) language\(s\):\s*(.+)", line)
                if m:
                    listed.setdefault(m.group(1), [])
                    for lang in m.group(2).split():
                        if lang not in listed[m.group(1)]:
                            listed[m.group(1)].append(lang)
    chosen = []
    for side, given in (("source", args.source_lang), ("target", args.target_lang)):
        langs = listed.get(side, [])
        if given:
            chosen.append(given)
        elif len(langs) == 1:
            chosen.append(langs[0])
        else:
            found = f"README.md lists {' '.join(langs)}" if langs else "README.md does not say"
            raise ConversionError(f"which {side} language? {found}; give --{side}-lang")
    return tuple(chosen)


# ---- tensors --------------------------------------------------------------------------

class Tensors:
    """The .npz's float tensors, fetched by name and shape; records what was used."""

    def __init__(self, npz, path):
        self.npz, self.path = npz, path
        self.used = {CONFIG_KEY}
        self.missing = []

    def get(self, name, shape):
        """float32 copy of tensor `name`, which must have `shape`.

        A missing tensor is recorded and stands in as zeros, so that one run lists
        every missing name; check_complete() then refuses the model."""
        if name not in self.npz.files:
            self.missing.append(name)
            return np.zeros(shape, np.float32)
        self.used.add(name)
        arr = self.npz[name]
        if arr.dtype not in (np.float32, np.float16):
            raise ConversionError(f"{self.path}: tensor {name} has dtype {arr.dtype}, "
                                  f"expected float32 or float16")
        if tuple(arr.shape) != tuple(shape):
            raise ConversionError(f"{self.path}: tensor {name} has shape {list(arr.shape)}, "
                                  f"the model options imply {list(shape)}")
        return arr.astype(np.float32)

    def check_complete(self):
        if self.missing:
            shown = ", ".join(self.missing[:8]) + (" ..." if len(self.missing) > 8 else "")
            raise ConversionError(f"{self.path}: {len(self.missing)} tensor(s) missing: {shown}")
        extra = sorted(set(self.npz.files) - self.used)
        if extra:
            shown = ", ".join(extra[:8]) + (" ..." if len(extra) > 8 else "")
            raise ConversionError(f"{self.path}: tensor(s) that a post-norm transformer with these "
                                  f"options does not have: {shown}")


def with_pad_row(matrix):
    """Appends the zero row of "<pad>" (the decoder start, which Marian embeds as zeros)."""
    return np.concatenate([matrix, np.zeros((1, matrix.shape[1]), np.float32)])


def convert_tensors(t, opts, n_src, n_tgt):
    """{Hugging Face name: float32 array} from the Marian tensors in `t`."""
    d = opts.get("dim-emb", 512)
    ffn = opts.get("transformer-dim-ffn", 2048)
    dec_ffn = opts.get("transformer-decoder-dim-ffn", 0) or ffn
    tie_all = opts.get("tied-embeddings-all", False)
    tie_src = tie_all or opts.get("tied-embeddings-src", False)
    tie_out = tie_all or opts.get("tied-embeddings", False)
    out = {}
    if tie_src:
        if n_src != n_tgt:
            raise ConversionError(f"{t.path}: tied-embeddings-src/all share one embedding, but "
                                  f"the vocabularies have {n_src} and {n_tgt} entries")
        out["model.shared.weight"] = with_pad_row(t.get("Wemb", (n_src, d)))
    else:
        out["model.encoder.embed_tokens.weight"] = with_pad_row(t.get("encoder_Wemb", (n_src, d)))
        out["model.decoder.embed_tokens.weight"] = with_pad_row(t.get("decoder_Wemb", (n_tgt, d)))
    if not tie_out:  # tied: no lm_head.weight, the engine ties it to the decoder embedding
        out["lm_head.weight"] = with_pad_row(t.get("decoder_ff_logit_out_W", (d, n_tgt)).T)
    # Marian's output layer has a bias unless trained with --output-omit-bias.
    bias = (t.get("decoder_ff_logit_out_b", (1, n_tgt)) if not opts.get("output-omit-bias", False)
            else np.zeros((1, n_tgt), np.float32))
    out["final_logits_bias"] = np.concatenate([bias, np.zeros((1, 1), np.float32)], axis=1)

    for side, depth, width in (("encoder", opts.get("enc-depth", 6), ffn),
                               ("decoder", opts.get("dec-depth", 6), dec_ffn)):
        for i in range(1, depth + 1):
            hf = f"model.{side}.layers.{i - 1}"
            blocks = ["self", "context"] if side == "decoder" else ["self"]
            for block in blocks:
                mp = f"{side}_l{i}_{block}"
                for part, proj in LINEAR_PARTS.items():
                    w = t.get(f"{mp}_W{part}", (d, d))
                    b = t.get(f"{mp}_b{part}", (1, d))
                    out[f"{hf}.{LAYER_TENSORS[block]}.{proj}.weight"] = w.T
                    out[f"{hf}.{LAYER_TENSORS[block]}.{proj}.bias"] = b[0]
                norm = f"{hf}.{LAYER_TENSORS[block]}_layer_norm"
                for marian, hf_name in (("scale", "weight"), ("bias", "bias")):
                    out[f"{norm}.{hf_name}"] = t.get(f"{mp}_Wo_ln_{marian}", (1, d))[0]
            mp = f"{side}_l{i}_ffn"
            for k, (n_in, n_out) in (("1", (d, width)), ("2", (width, d))):
                w = t.get(f"{mp}_W{k}", (n_in, n_out))
                b = t.get(f"{mp}_b{k}", (1, n_out))
                out[f"{hf}.fc{k}.weight"] = w.T
                out[f"{hf}.fc{k}.bias"] = b[0]
            for marian, hf_name in (("scale", "weight"), ("bias", "bias")):
                out[f"{hf}.final_layer_norm.{hf_name}"] = t.get(f"{mp}_ffn_ln_{marian}", (1, d))[0]
    t.check_complete()
    return {name: np.ascontiguousarray(arr) for name, arr in out.items()}


# ---- the output directory ---------------------------------------------------------------

def json_text(obj, **kw):
    return json.dumps(obj, ensure_ascii=False, **kw) + "\n"


def build_configs(opts, dec, vocabs, langs, separate):
    """config.json, generation_config.json, tokenizer_config.json, special_tokens_map.json."""
    src_vocab, tgt_vocab = vocabs
    n_src, n_tgt = len(src_vocab), len(tgt_vocab)
    pad = n_tgt  # appended after the target vocabulary's last id
    eos = tgt_vocab[EOS]
    d = opts.get("dim-emb", 512)
    heads = opts.get("transformer-heads", 8)
    ffn = opts.get("transformer-dim-ffn", 2048)
    if d % heads or d % 2:
        raise ConversionError(f"dim-emb {d} must be even and divisible by "
                              f"transformer-heads {heads}")
    beams = dec.get("beam-size", 12)  # Marian's default
    normalize = dec.get("normalize", 0.0)  # Marian's default: no length normalisation
    if not isinstance(beams, int) or beams < 1:
        raise ConversionError(f"decoder.yml: beam-size {beams!r} is not a positive integer")
    if not isinstance(normalize, (int, float)) or isinstance(normalize, bool):
        raise ConversionError(f"decoder.yml: normalize {normalize!r} is not a number")
    tie_all = opts.get("tied-embeddings-all", False)
    config = {
        "_name_or_path": "marian", "architectures": ["MarianMTModel"], "model_type": "marian",
        "activation_dropout": 0.0, "attention_dropout": 0.0, "dropout": 0.1,
        "activation_function": ACTIVATIONS[opts.get("transformer-ffn-activation", "swish")],
        "d_model": d, "encoder_layers": opts.get("enc-depth", 6),
        "decoder_layers": opts.get("dec-depth", 6), "num_hidden_layers": opts.get("enc-depth", 6),
        "encoder_attention_heads": heads, "decoder_attention_heads": heads,
        "encoder_ffn_dim": ffn,
        "decoder_ffn_dim": opts.get("transformer-decoder-dim-ffn", 0) or ffn,
        "vocab_size": n_src + 1, "decoder_vocab_size": n_tgt + 1,
        "pad_token_id": pad, "eos_token_id": eos, "forced_eos_token_id": eos, "bos_token_id": 0,
        "decoder_start_token_id": pad, "bad_words_ids": [[pad]],
        "scale_embedding": True, "static_position_embeddings": True,
        "positions_formula": "marian",  # Marian trains with tensor2tensor timescales
        "normalize_embedding": False,
        "max_position_embeddings": MAX_POSITIONS, "max_length": MAX_LENGTH,
        "num_beams": beams, "length_penalty": float(normalize),
        "share_encoder_decoder_embeddings": bool(tie_all or opts.get("tied-embeddings-src", False)),
        "tie_word_embeddings": bool(tie_all or opts.get("tied-embeddings", False)),
        "is_encoder_decoder": True, "torch_dtype": "float32", "use_cache": True,
    }
    generation = {
        "bad_words_ids": [[pad]], "bos_token_id": 0, "decoder_start_token_id": pad,
        "eos_token_id": eos, "forced_eos_token_id": eos, "max_length": MAX_LENGTH,
        "num_beams": beams, "length_penalty": float(normalize), "pad_token_id": pad,
        "renormalize_logits": True,
    }
    tokenizer = {
        "source_lang": langs[0], "target_lang": langs[1], "separate_vocabs": separate,
        "eos_token": EOS, "unk_token": UNK, "pad_token": PAD, "model_max_length": MAX_LENGTH,
        "clean_up_tokenization_spaces": True, "sp_model_kwargs": {},
        "tokenizer_class": "MarianTokenizer",
    }
    special = {"eos_token": EOS, "unk_token": UNK, "pad_token": PAD}
    return {"config.json": json_text(config, indent=2, sort_keys=True),
            "generation_config.json": json_text(generation, indent=2, sort_keys=True),
            "tokenizer_config.json": json_text(tokenizer, indent=2, sort_keys=True),
            "special_tokens_map.json": json_text(special, indent=2, sort_keys=True)}


def check_languages(src_vocab, langs):
    """For multilingual models (">>xxx<<" source tokens), the default target must be one."""
    tokens = sorted(t for t in src_vocab if LANGUAGE_TOKEN.fullmatch(t))
    if tokens and f">>{langs[1]}<<" not in src_vocab:
        raise ConversionError(
            f"the model picks its output language with a >>xxx<< token and has no "
            f">>{langs[1]}<<; give --target-lang one of: "
            + " ".join(t[2:-2] for t in tokens))
    return tokens


def convert(args):
    """Builds OUT_DIR from MARIAN_DIR; raises ConversionError on unsupported input."""
    marian_dir, out_dir = args.marian_dir, os.path.normpath(args.out_dir)
    if not os.path.isdir(marian_dir):
        raise ConversionError(f"{marian_dir}: not a directory")
    if os.path.lexists(out_dir):
        raise ConversionError(f"{out_dir} already exists; remove it or choose another name")
    npz_path, src_path, tgt_path, dec = read_decoder_settings(marian_dir)
    spm = {}
    for name in ("source.spm", "target.spm"):
        spm[name] = os.path.join(marian_dir, name)
        if not os.path.isfile(spm[name]):
            raise ConversionError(f"{marian_dir}: {name} (the SentencePiece model) not found")
    langs = read_languages(marian_dir, args)
    src_vocab = load_vocab(src_path)
    tgt_vocab = src_vocab if os.path.samefile(src_path, tgt_path) else load_vocab(tgt_path)
    separate = src_vocab != tgt_vocab
    if src_vocab[EOS] != tgt_vocab[EOS]:
        raise ConversionError(f"{EOS} is {src_vocab[EOS]} in {src_path} but {tgt_vocab[EOS]} in "
                              f"{tgt_path}; the engine uses one end-of-sentence id for both")
    lang_tokens = check_languages(src_vocab, langs)

    try:
        npz = np.load(npz_path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise ConversionError(f"cannot read {npz_path}: {e}") from None
    with npz:
        opts = model_options(npz, npz_path)
        check_options(opts, npz_path)
        dims = opts.get("dim-vocabs")
        if dims is not None and list(dims) != [len(src_vocab), len(tgt_vocab)]:
            raise ConversionError(f"{npz_path}: dim-vocabs {dims} but the vocabularies have "
                                  f"{len(src_vocab)} and {len(tgt_vocab)} entries")
        tensors = convert_tensors(Tensors(npz, npz_path), opts, len(src_vocab), len(tgt_vocab))
    files = build_configs(opts, dec, (src_vocab, tgt_vocab), langs, separate)

    def vocab_json(vocab):
        return json_text({**vocab, PAD: len(vocab)}, indent=2, sort_keys=True)

    files["vocab.json"] = vocab_json(src_vocab)
    if separate:
        files["target_vocab.json"] = vocab_json(tgt_vocab)

    parent = os.path.dirname(os.path.abspath(out_dir))
    tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(out_dir)}.", suffix=".tmp", dir=parent)
    try:
        for name, text in files.items():
            with open(os.path.join(tmp, name), "w", encoding="utf-8") as f:
                f.write(text)
        for name, path in spm.items():
            shutil.copyfile(path, os.path.join(tmp, name))
        for name in ("README.md", "LICENSE"):
            if os.path.isfile(os.path.join(marian_dir, name)):
                shutil.copyfile(os.path.join(marian_dir, name), os.path.join(tmp, name))
        if args.quantize == "int8":
            write_safetensors(os.path.join(tmp, "model.safetensors"), quantize_int8(tensors),
                              {"format": "pt", "quantization": "int8 per-row symmetric"})
        else:
            write_safetensors(os.path.join(tmp, "model.safetensors"), tensors)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)  # mkdtemp's 0700 would hide the model from a server user
        os.rename(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return lang_tokens, langs, (len(src_vocab) + 1, len(tgt_vocab) + 1)


def main(argv=None):
    args = parse_args(argv)
    try:
        lang_tokens, langs, sizes = convert(args)
    except ConversionError as e:
        print(f"convert_marian: {e}", file=sys.stderr)
        return 1
    print(f"convert_marian: wrote {args.out_dir} ({langs[0]} -> {langs[1]}, vocabulary "
          f"{sizes[0]}/{sizes[1]} with <pad>)", file=sys.stderr)
    if lang_tokens:
        print(f"convert_marian: multilingual: {len(lang_tokens)} target-language tokens: "
              + " ".join(lang_tokens), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
