"""MarianMT forward pass in plain PyTorch (float32, inference only).

Written from the Hugging Face MarianMTModel semantics, not from our own training
code, so that it can referee the C engine:

  * embeddings x sqrt(d_model) when scale_embedding, plus sinusoidal positions
    from 0 (sin half, then cos half, same frequency index), no embedding LayerNorm;
  * post-norm blocks: h = LN(h + sublayer(h)), LayerNorm eps 1e-5, no final
    LayerNorm after either stack;
  * attention scales q by head_dim^-0.5 after its projection; padded source
    positions are masked for the encoder and for cross-attention;
  * logits = h . lm_head^T + final_logits_bias.

Two decoder entry points: decoder_logits() runs a whole prefix at once with a
causal mask (for kernel probes), while DecoderCache/decode_step() run one token
per step over a batch of beams, keeping self-attention K/V per layer and
computing cross-attention K/V once per sentence (for translation).
"""
import math
import os

import numpy as np
import torch
import torch.nn.functional as F

from . import safetensors_file
from .config import load_config

LN_EPS = 1e-5


def sinusoidal_positions(n_pos, dim, formula="huggingface"):
    """Static position table [n_pos, dim], computed in float64 then rounded.

    Column j < dim/2 is sin(pos * w_j), column dim/2 + j is cos(pos * w_j), with
    w_j = 1 / 10000^(2j/dim) for Hugging Face's MarianMT ("huggingface") and the
    tensor2tensor timescales w_j = exp(-j * log(10000) / (dim/2 - 1)) that Marian
    itself trains with ("marian").
    """
    half = dim // 2
    pos = np.arange(n_pos, dtype=np.float64)[:, None]
    j = np.arange(half, dtype=np.float64)[None, :]
    if formula == "marian":
        angle = pos * np.exp(-j * math.log(10000.0) / max(half - 1, 1))
    else:
        angle = pos / np.power(10000.0, 2.0 * j / dim)
    table = np.zeros((n_pos, dim), dtype=np.float64)
    table[:, :half] = np.sin(angle)
    table[:, half:2 * half] = np.cos(angle)
    return torch.from_numpy(table.astype(np.float32))


def _activation(name):
    """The feed-forward nonlinearity named by config.json's activation_function."""
    if name == "relu":
        return F.relu
    if name == "gelu":
        return F.gelu   # exact erf form, as HF's "gelu"
    if name == "quick_gelu":        # Marian's "gelu"
        return lambda x: x * torch.sigmoid(1.702 * x)
    if name in ("gelu_new", "gelu_pytorch_tanh"):
        return lambda x: F.gelu(x, approximate="tanh")
    return F.silu                   # "swish" and "silu": x * sigmoid(x)


class _Layer:
    """Weights of one encoder or decoder layer, looked up by Hugging Face name."""

    def __init__(self, w, prefix, cross):
        def lin(name):
            return (w[f"{prefix}.{name}.weight"], w[f"{prefix}.{name}.bias"])
        self.self_attn = [lin("self_attn.q_proj"), lin("self_attn.k_proj"),
                          lin("self_attn.v_proj"), lin("self_attn.out_proj")]
        self.self_ln = lin("self_attn_layer_norm")
        if cross:
            self.cross_attn = [lin("encoder_attn.q_proj"), lin("encoder_attn.k_proj"),
                               lin("encoder_attn.v_proj"), lin("encoder_attn.out_proj")]
            self.cross_ln = lin("encoder_attn_layer_norm")
        self.fc1 = lin("fc1")
        self.fc2 = lin("fc2")
        self.final_ln = lin("final_layer_norm")


def _split_heads(x, heads):
    """[B, T, d] -> [B, heads, T, d/heads]."""
    b, t, d = x.shape
    return x.view(b, t, heads, d // heads).transpose(1, 2)


def _merge_heads(x):
    """[B, heads, T, dh] -> [B, T, heads*dh]."""
    b, h, t, dh = x.shape
    return x.transpose(1, 2).reshape(b, t, h * dh)


def _attend(q, k, v, mask=None):
    """softmax(q k^T + mask) v over the last two dims; q is already scaled.

    mask, when given, is a boolean tensor broadcastable to the scores that is True
    where attention is forbidden.
    """
    scores = torch.matmul(q, k.transpose(-1, -2))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    return torch.matmul(torch.softmax(scores, dim=-1), v)


class MarianModel:
    """A MarianMT checkpoint loaded into float32 torch tensors."""

    def __init__(self, model_dir):
        self.cfg = cfg = load_config(model_dir)
        w = {name: torch.from_numpy(arr) for name, arr in safetensors_file.read(
            os.path.join(model_dir, "model.safetensors")).items()}
        # HF saves tied matrices once, under whichever name it met first; with
        # separate vocabularies the encoder and decoder embeddings really differ.
        self.enc_embed = self._first(w, ["model.encoder.embed_tokens.weight", "model.shared.weight",
                                         "model.decoder.embed_tokens.weight"], cfg.vocab_size)
        self.dec_embed = self._first(w, ["model.decoder.embed_tokens.weight", "model.shared.weight",
                                         "model.encoder.embed_tokens.weight"], cfg.decoder_vocab_size)
        self.lm_head = w.get("lm_head.weight", self.dec_embed)
        if tuple(self.lm_head.shape) != (cfg.decoder_vocab_size, cfg.d_model):
            raise ValueError(f"lm_head.weight has shape {tuple(self.lm_head.shape)}")
        bias = w.get("final_logits_bias")
        self.logits_bias = (bias.reshape(-1) if bias is not None
                            else torch.zeros(cfg.decoder_vocab_size))
        self.encoder = [_Layer(w, f"model.encoder.layers.{i}", False)
                        for i in range(cfg.encoder_layers)]
        self.decoder = [_Layer(w, f"model.decoder.layers.{i}", True)
                        for i in range(cfg.decoder_layers)]
        self.embed_scale = math.sqrt(cfg.d_model) if cfg.scale_embedding else 1.0
        # A stored embed_positions table wins over the formula (as in the engine).
        stored = w.get("model.encoder.embed_positions.weight",
                       w.get("model.decoder.embed_positions.weight"))
        self.positions = (stored.float() if stored is not None else
                          sinusoidal_positions(cfg.max_positions, cfg.d_model, cfg.positions_formula))
        self.act = _activation(cfg.activation)

    @staticmethod
    def _first(w, names, rows):
        """The first tensor among `names` that has `rows` rows (tied weights)."""
        for name in names:
            if name in w and w[name].shape[0] == rows:
                return w[name]
        raise ValueError(f"no embedding with {rows} rows among {names}")

    # ---- building blocks -------------------------------------------------

    def _embed(self, table, ids, start_pos):
        """Token embeddings (scaled) plus positions start_pos.. for ids [B, T]."""
        t = ids.shape[1]
        return table[ids] * self.embed_scale + self.positions[start_pos:start_pos + t]

    def _ffn(self, layer, h):
        """Post-norm feed-forward block."""
        x = F.linear(self.act(F.linear(h, *layer.fc1)), *layer.fc2)
        return F.layer_norm(h + x, h.shape[-1:], *layer.final_ln, eps=LN_EPS)

    def _project_q(self, proj, x, heads):
        """Query projection split into heads and scaled by head_dim^-0.5."""
        q = _split_heads(F.linear(x, *proj), heads)
        return q * (q.shape[-1] ** -0.5)

    def _attention_block(self, proj, ln, h, memory, mask, heads):
        """Post-norm attention block: queries from h, keys and values from memory (h itself
        for self-attention), then residual and LayerNorm."""
        q_w, k_w, v_w, o_w = proj
        q = self._project_q(q_w, h, heads)
        k = _split_heads(F.linear(memory, *k_w), heads)
        v = _split_heads(F.linear(memory, *v_w), heads)
        a = F.linear(_merge_heads(_attend(q, k, v, mask)), *o_w)
        return F.layer_norm(h + a, h.shape[-1:], *ln, eps=LN_EPS)

    # ---- encoder -----------------------------------------------------------

    def encode(self, src, src_pad):
        """Encoder output [B, S, d] for ids src [B, S]; src_pad [B, S] is True on padding."""
        heads = self.cfg.encoder_heads
        h = self._embed(self.enc_embed, src, 0)
        key_mask = src_pad[:, None, None, :]
        for layer in self.encoder:
            h = self._attention_block(layer.self_attn, layer.self_ln, h, h, key_mask, heads)
            h = self._ffn(layer, h)
        return h

    # ---- decoder, whole prefix (probes) -------------------------------------

    def decoder_logits(self, enc, src_pad, prefix):
        """Logits [B, T, V_tgt] for every position of prefix [B, T] (causal mask, no cache)."""
        heads = self.cfg.decoder_heads
        t = prefix.shape[1]
        h = self._embed(self.dec_embed, prefix, 0)
        causal = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        key_mask = src_pad[:, None, None, :]
        for layer in self.decoder:
            h = self._attention_block(layer.self_attn, layer.self_ln, h, h, causal, heads)
            h = self._attention_block(layer.cross_attn, layer.cross_ln, h, enc, key_mask, heads)
            h = self._ffn(layer, h)
        return F.linear(h, self.lm_head, self.logits_bias)

    # ---- decoder, one step over a batch of beams (translation) ---------------

    def start_decoding(self, enc, src_pad, slots):
        """A DecoderCache for sentences enc [N, S, d], each with `slots` beam rows."""
        heads = self.cfg.decoder_heads
        cross = []
        for layer in self.decoder:
            _, k_w, v_w, _ = layer.cross_attn
            cross.append((_split_heads(F.linear(enc, *k_w), heads),
                          _split_heads(F.linear(enc, *v_w), heads)))
        return DecoderCache(cross, src_pad[:, None, None, :], slots, self.cfg.decoder_layers)

    def decode_step(self, cache, tokens, pos):
        """Logits [N*slots, V_tgt] for the next token after `tokens` [N*slots] at position pos.

        Rows are grouped by sentence: rows s*slots .. s*slots+slots-1 belong to
        sentence s of the cache. Appends this step's K/V to the cache.
        """
        heads = self.cfg.decoder_heads
        n, slots = cache.cross[0][0].shape[0], cache.slots
        h = self._embed(self.dec_embed, tokens[:, None], pos)         # [R, 1, d]
        for i, layer in enumerate(self.decoder):
            q_w, k_w, v_w, o_w = layer.self_attn
            q = self._project_q(q_w, h, heads)                        # [R, H, 1, dh]
            k = _split_heads(F.linear(h, *k_w), heads)
            v = _split_heads(F.linear(h, *v_w), heads)
            k, v = cache.append(i, k, v)
            a = F.linear(_merge_heads(_attend(q, k, v)), *o_w)
            h = F.layer_norm(h + a, h.shape[-1:], *layer.self_ln, eps=LN_EPS)
            # Cross-attention: the beams of one sentence share its K/V, so stack
            # them as the query rows of one [slots, S] attention per sentence.
            q_w, _, _, o_w = layer.cross_attn
            q = self._project_q(q_w, h.view(n, slots, -1), heads)   # [N, H, slots, dh]
            ck, cv = cache.cross[i]
            if cache.align_layer == i:  # alignments: this layer's probabilities, head mean
                scores = torch.matmul(q, ck.transpose(-1, -2)).masked_fill(cache.src_mask, float("-inf"))
                cache.attention = torch.softmax(scores, dim=-1).mean(dim=1).reshape(n * slots, -1)
            a = _merge_heads(_attend(q, ck, cv, cache.src_mask))      # [N, slots, d]
            a = F.linear(a.reshape(n * slots, 1, -1), *o_w)
            h = F.layer_norm(h + a, h.shape[-1:], *layer.cross_ln, eps=LN_EPS)
            h = self._ffn(layer, h)
        return F.linear(h[:, 0], self.lm_head, self.logits_bias)


class DecoderCache:
    """Per-layer self-attention K/V of every beam row, and per-sentence cross K/V."""

    def __init__(self, cross, src_mask, slots, layers):
        self.cross = cross          # per layer (K, V), each [N, H, S, dh]
        self.src_mask = src_mask    # [N, 1, 1, S], True on source padding
        self.slots = slots
        self.self_kv = [None] * layers  # per layer (K, V), each [N*slots, H, t, dh]
        self.align_layer = None     # decoder layer whose cross-attention decode_step keeps
        self.attention = None       # [N*slots, S]: its probabilities averaged over heads

    def append(self, layer, k, v):
        """Adds this step's k, v [R, H, 1, dh] and returns the whole history."""
        if self.self_kv[layer] is not None:
            pk, pv = self.self_kv[layer]
            k, v = torch.cat([pk, k], dim=2), torch.cat([pv, v], dim=2)
        self.self_kv[layer] = (k, v)
        return k, v

    def reorder(self, rows, sentences=None):
        """Keeps beam rows `rows` (new row i continues old row rows[i]) and, when
        some sentences are done, only the cross K/V of `sentences`."""
        self.self_kv = [None if kv is None else (kv[0].index_select(0, rows),
                                                 kv[1].index_select(0, rows))
                        for kv in self.self_kv]
        if sentences is not None:
            self.cross = [(k.index_select(0, sentences), v.index_select(0, sentences))
                          for k, v in self.cross]
            self.src_mask = self.src_mask.index_select(0, sentences)
