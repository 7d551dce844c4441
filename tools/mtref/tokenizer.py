"""MarianTokenizer-compatible conversion between text and ids.

Source side: a leading ">>xx<<" target-language code is kept as one token (the
same regular expression as MarianTokenizer), the rest is split into pieces by
source.spm, pieces map to ids through vocab.json (unknown piece -> "<unk>"), and
eos is appended. Target side: ids map back to pieces through the target
vocabulary (target_vocab.json when tokenizer_config.json says separate_vocabs,
else vocab.json), special tokens are dropped, target.spm joins the pieces, any
remaining "\u2581" becomes a space and the result is stripped: the project's
contract, which the C tokenizer implements. Hugging Face's decode() goes one
step further when tokenizer_config.json sets clean_up_tokenization_spaces (the
real OPUS-MT files do): it removes the space before . ? ! , and some English
contractions. That step is optional here (hf_clean_up), to measure the effect.

Not reproduced: Hugging Face's splitting of literal special-token strings such as
"</s>" typed inside the input text.
"""
import os
import re

import sentencepiece

from .config import load_json

SPIECE_UNDERLINE = "\u2581"
LANGUAGE_CODE = re.compile(">>.+<<")


def clean_up_tokenization(text):
    """Hugging Face PreTrainedTokenizer.clean_up_tokenization, verbatim rules."""
    return (text.replace(" .", ".").replace(" ?", "?").replace(" !", "!")
            .replace(" ,", ",").replace(" ' ", "'").replace(" n't", "n't")
            .replace(" 'm", "'m").replace(" 's", "'s").replace(" 've", "'ve")
            .replace(" 're", "'re"))


class MarianTokenizer:
    """Text <-> ids for one model directory; cfg is its mtref.config.MarianConfig."""

    def __init__(self, model_dir, cfg, hf_clean_up=False):
        self.source_spm = sentencepiece.SentencePieceProcessor(
            model_file=os.path.join(model_dir, "source.spm"))
        self.target_spm = sentencepiece.SentencePieceProcessor(
            model_file=os.path.join(model_dir, "target.spm"))
        self.vocab = load_json(os.path.join(model_dir, "vocab.json"))
        target_vocab = (load_json(os.path.join(model_dir, "target_vocab.json"))
                        if cfg.separate_vocabs else self.vocab)
        self.target_pieces = {i: piece for piece, i in target_vocab.items()}
        tok = cfg.tokenizer
        unk = self._token_text(tok.get("unk_token") or cfg.special_tokens.get("unk_token"), "<unk>")
        self.unk_id = self.vocab[unk]
        self.eos_id = cfg.eos_id
        # Ids dropped on output: the named special tokens as the target vocabulary
        # spells them, plus whatever config.json calls eos and pad.
        names = [self._token_text(tok.get(key) or cfg.special_tokens.get(key), None)
                 for key in ("eos_token", "unk_token", "pad_token")]
        names += [self._token_text(t, None) for t in tok.get("additional_special_tokens") or []]
        self.special_ids = {target_vocab[n] for n in names if n in target_vocab}
        self.special_ids |= {cfg.eos_id, cfg.pad_id}
        self.clean_up = hf_clean_up and bool(tok.get("clean_up_tokenization_spaces", True))

    @staticmethod
    def _token_text(token, default):
        """A special token from tokenizer_config.json: a string or an AddedToken dict."""
        if isinstance(token, dict):
            return token.get("content", default)
        return token if token is not None else default

    def encode(self, text):
        """Source ids for `text`, ending in eos."""
        match = LANGUAGE_CODE.match(text)
        code = [match.group(0)] if match else []
        pieces = code + self.source_spm.encode(LANGUAGE_CODE.sub("", text), out_type=str)
        return [self.vocab.get(p, self.unk_id) for p in pieces] + [self.eos_id]

    def decode(self, ids):
        """Target text for generated ids (no start token; eos, if any, is dropped)."""
        pieces = [self.target_pieces.get(i, "<unk>") for i in ids if i not in self.special_ids]
        text = self.target_spm.decode_pieces(pieces).replace(SPIECE_UNDERLINE, " ").strip()
        return clean_up_tokenization(text) if self.clean_up else text
