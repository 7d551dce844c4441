"""Reading the JSON files of a MarianMT model directory.

Hugging Face spreads the settings over config.json (architecture and the original
generation defaults), generation_config.json (newer generation defaults, which win)
and tokenizer_config.json (vocabulary layout). This module turns them into one
plain object so the model, tokenizer and search read the same values.
"""
import json
import os
from dataclasses import dataclass, field


def load_json(path, default=None):
    """Parse a JSON file, or return `default` when it does not exist."""
    if not os.path.exists(path):
        if default is None:
            raise FileNotFoundError(path)
        return default
    with open(path, encoding="utf-8") as f:
        return json.load(f)


@dataclass
class MarianConfig:
    """Everything the reference needs from a model directory's JSON files."""
    d_model: int
    encoder_layers: int
    decoder_layers: int
    encoder_heads: int
    decoder_heads: int
    encoder_ffn_dim: int
    decoder_ffn_dim: int
    vocab_size: int           # rows of the encoder embedding
    decoder_vocab_size: int   # rows of the decoder embedding and of the logits
    pad_id: int
    eos_id: int
    decoder_start_id: int
    activation: str
    scale_embedding: bool
    max_positions: int
    positions_formula: str = "huggingface"  # or "marian" (tensor2tensor timescales)
    num_beams: int = 4
    max_length: int = 256
    length_penalty: float = 1.0
    bad_words_ids: list = field(default_factory=list)  # single-token entries only
    separate_vocabs: bool = False
    tokenizer: dict = field(default_factory=dict)       # tokenizer_config.json as is
    special_tokens: dict = field(default_factory=dict)  # special_tokens_map.json as is


def load_config(model_dir):
    """Read config.json, generation_config.json (overrides) and tokenizer_config.json."""
    cfg = load_json(os.path.join(model_dir, "config.json"))
    gen = load_json(os.path.join(model_dir, "generation_config.json"), {})
    tok = load_json(os.path.join(model_dir, "tokenizer_config.json"), {})
    special = load_json(os.path.join(model_dir, "special_tokens_map.json"), {})

    def pick(key, default):
        """generation_config.json first, then config.json, then the default."""
        for source in (gen, cfg):
            if source.get(key) is not None:
                return source[key]
        return default

    activation = cfg.get("activation_function", "gelu")  # MarianConfig's default
    if activation not in ("relu", "gelu", "swish", "silu", "quick_gelu", "gelu_new", "gelu_pytorch_tanh"):
        raise ValueError(f"unsupported activation_function {activation!r}")
    formula = cfg.get("positions_formula", "huggingface")
    if formula not in ("huggingface", "marian"):
        raise ValueError(f"unsupported positions_formula {formula!r}")
    bad = [ids[0] for ids in pick("bad_words_ids", []) if len(ids) == 1]
    vocab_size = int(cfg["vocab_size"])
    return MarianConfig(
        d_model=int(cfg["d_model"]),
        encoder_layers=int(cfg["encoder_layers"]),
        decoder_layers=int(cfg["decoder_layers"]),
        encoder_heads=int(cfg["encoder_attention_heads"]),
        decoder_heads=int(cfg["decoder_attention_heads"]),
        encoder_ffn_dim=int(cfg["encoder_ffn_dim"]),
        decoder_ffn_dim=int(cfg["decoder_ffn_dim"]),
        vocab_size=vocab_size,
        decoder_vocab_size=int(cfg.get("decoder_vocab_size") or vocab_size),
        pad_id=int(cfg["pad_token_id"]),
        eos_id=int(cfg["eos_token_id"]),
        decoder_start_id=int(cfg.get("decoder_start_token_id", cfg["pad_token_id"])),
        activation=activation,
        scale_embedding=bool(cfg.get("scale_embedding", False)),
        max_positions=int(cfg.get("max_position_embeddings", 512)),
        positions_formula=formula,
        num_beams=int(pick("num_beams", 4)),
        max_length=int(pick("max_length", 256)),
        length_penalty=float(pick("length_penalty", 1.0)),
        bad_words_ids=bad,
        separate_vocabs=bool(tok.get("separate_vocabs", False)),
        tokenizer=tok,
        special_tokens=special,
    )
