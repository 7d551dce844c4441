"""The original Transformer with Hugging Face MarianMT semantics, in PyTorch.

Module and parameter names mirror MarianMTModel so that state_dict() keys are the
safetensors names the C engine loads (model.shared.weight,
model.encoder.layers.{i}.self_attn.q_proj.weight, ...). Semantics the engine
relies on: post-norm blocks, sinusoidal positions from 0 (sin half then cos
half), embeddings scaled by sqrt(d_model), one embedding matrix tied across
encoder, decoder and output projection, q scaled by head_dim^-0.5 after its
projection, no final LayerNorm.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def sinusoidal_positions(n_pos, dim, formula="huggingface"):
    """Static position table [n_pos, dim].

    Column i < dim/2 holds sin(pos * w_i); column dim/2 + i holds the matching cos,
    so both halves share frequency index i. w_i = 1 / 10000^(2i/dim) is
    MarianSinusoidalPositionalEmbedding's ("huggingface"); "marian" uses Marian's
    tensor2tensor timescales w_i = exp(-i * log(10000) / (dim/2 - 1)).
    """
    if dim % 2:
        raise ValueError("d_model must be even")
    pos = torch.arange(n_pos, dtype=torch.float64).unsqueeze(1)
    i = torch.arange(dim // 2, dtype=torch.float64).unsqueeze(0)
    if formula == "marian":
        angle = pos * torch.exp(-i * math.log(10000.0) / max(dim // 2 - 1, 1))
    elif formula == "huggingface":
        angle = pos / torch.pow(10000.0, 2.0 * i / dim)
    else:
        raise ValueError(f"unknown positions formula {formula!r}")
    return torch.cat([torch.sin(angle), torch.cos(angle)], dim=1).float()


class Attention(nn.Module):
    """Multi-head attention with separate biased q/k/v/out projections (Marian layout)."""

    def __init__(self, d, heads, attn_dropout):
        super().__init__()
        if d % heads:
            raise ValueError("d_model must be divisible by heads")
        self.heads, self.head_dim = heads, d // heads
        self.scale = self.head_dim ** -0.5
        self.attn_dropout = attn_dropout
        self.q_proj = nn.Linear(d, d)
        self.k_proj = nn.Linear(d, d)
        self.v_proj = nn.Linear(d, d)
        self.out_proj = nn.Linear(d, d)

    def forward(self, x, kv, mask):
        """x [B,T,d] attends to kv [B,S,d]; mask is additive, broadcastable to [B,H,T,S]."""
        b, t, d = x.shape
        s = kv.shape[1]
        q = (self.q_proj(x) * self.scale).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(kv).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(kv).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        if q.is_cuda:
            # The fused kernel on a GPU (same arithmetic: q is already scaled, the mask
            # additive); the plain formula below stays the reference on the CPU.
            out = F.scaled_dot_product_attention(
                q, k, v, attn_mask=mask.to(q.dtype), scale=1.0,
                dropout_p=self.attn_dropout if self.training else 0.0)
            return self.out_proj(out.transpose(1, 2).reshape(b, t, d))
        scores = torch.matmul(q, k.transpose(-1, -2)) + mask
        probs = F.dropout(torch.softmax(scores, dim=-1), self.attn_dropout, self.training)
        out = torch.matmul(probs.to(v.dtype), v).transpose(1, 2).reshape(b, t, d)
        return self.out_proj(out)


class EncoderLayer(nn.Module):
    def __init__(self, d, heads, ffn, dropout, attn_dropout):
        super().__init__()
        self.dropout = dropout
        self.self_attn = Attention(d, heads, attn_dropout)
        self.self_attn_layer_norm = nn.LayerNorm(d, eps=1e-5)
        self.fc1 = nn.Linear(d, ffn)
        self.fc2 = nn.Linear(ffn, d)
        self.final_layer_norm = nn.LayerNorm(d, eps=1e-5)

    def forward(self, h, src_mask):
        a = self.self_attn(h, h, src_mask)
        h = self.self_attn_layer_norm(h + F.dropout(a, self.dropout, self.training))
        f = self.fc2(F.relu(self.fc1(h)))
        return self.final_layer_norm(h + F.dropout(f, self.dropout, self.training))


class DecoderLayer(nn.Module):
    def __init__(self, d, heads, ffn, dropout, attn_dropout):
        super().__init__()
        self.dropout = dropout
        self.self_attn = Attention(d, heads, attn_dropout)
        self.self_attn_layer_norm = nn.LayerNorm(d, eps=1e-5)
        self.encoder_attn = Attention(d, heads, attn_dropout)
        self.encoder_attn_layer_norm = nn.LayerNorm(d, eps=1e-5)
        self.fc1 = nn.Linear(d, ffn)
        self.fc2 = nn.Linear(ffn, d)
        self.final_layer_norm = nn.LayerNorm(d, eps=1e-5)

    def forward(self, h, enc, self_mask, src_mask):
        a = self.self_attn(h, h, self_mask)
        h = self.self_attn_layer_norm(h + F.dropout(a, self.dropout, self.training))
        a = self.encoder_attn(h, enc, src_mask)
        h = self.encoder_attn_layer_norm(h + F.dropout(a, self.dropout, self.training))
        f = self.fc2(F.relu(self.fc1(h)))
        return self.final_layer_norm(h + F.dropout(f, self.dropout, self.training))


class Stack(nn.Module):
    """Holds `layers` so keys read model.encoder.layers.{i}... as in HF."""

    def __init__(self, layers):
        super().__init__()
        self.layers = nn.ModuleList(layers)


class Inner(nn.Module):
    """The `model.` prefix of MarianMTModel: shared embedding, encoder, decoder."""

    def __init__(self, vocab, d, pad_id):
        super().__init__()
        self.shared = nn.Embedding(vocab, d, padding_idx=pad_id)


class MarianTransformer(nn.Module):
    def __init__(self, vocab_size, pad_id, d_model=256, enc_layers=3, dec_layers=3,
                 heads=4, ffn=1024, dropout=0.1, attn_dropout=0.1, max_positions=512,
                 positions_formula="huggingface"):
        super().__init__()
        self.pad_id, self.d_model, self.dropout = pad_id, d_model, dropout
        self.embed_scale = math.sqrt(d_model)
        self.model = Inner(vocab_size, d_model, pad_id)
        self.model.encoder = Stack([EncoderLayer(d_model, heads, ffn, dropout, attn_dropout)
                                    for _ in range(enc_layers)])
        self.model.decoder = Stack([DecoderLayer(d_model, heads, ffn, dropout, attn_dropout)
                                    for _ in range(dec_layers)])
        self.register_buffer("final_logits_bias", torch.zeros(1, vocab_size))
        self.register_buffer("positions", sinusoidal_positions(max_positions, d_model, positions_formula),
                             persistent=False)
        self.reset_parameters()

    def reset_parameters(self):
        """Xavier-uniform projections and N(0, d^-1/2) embeddings (as fairseq's
        Transformer): with the sqrt(d) input scale the embedded tokens start at unit
        variance, which trains from scratch better than HF's N(0, 0.02)."""
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                nn.init.zeros_(m.bias)
        nn.init.normal_(self.model.shared.weight, 0.0, self.d_model ** -0.5)
        with torch.no_grad():
            self.model.shared.weight[self.pad_id].zero_()

    def embed(self, ids):
        x = F.embedding(ids, self.model.shared.weight, self.pad_id) * self.embed_scale
        x = x + self.positions[: ids.shape[1]]
        return F.dropout(x, self.dropout, self.training)

    def forward(self, src, dec_in):
        """Decoder hidden states [B,T,d] for source ids [B,S] and decoder inputs [B,T]."""
        neg = -1e9
        src_mask = (src == self.pad_id).to(torch.float32)[:, None, None, :] * neg
        t = dec_in.shape[1]
        causal = torch.triu(torch.full((t, t), neg, device=dec_in.device), diagonal=1)
        h = self.embed(src)
        for layer in self.model.encoder.layers:
            h = layer(h, src_mask)
        y = self.embed(dec_in)
        for layer in self.model.decoder.layers:
            y = layer(y, h, causal, src_mask)
        return y

    def logits(self, h, drop_pad=False):
        """h . E^T + final_logits_bias. With drop_pad the pad column (the last id) is
        left out, so training never pushes gradient into the pad row, keeping it zero."""
        w, bias = self.model.shared.weight, self.final_logits_bias[0]
        if drop_pad:
            assert self.pad_id == w.shape[0] - 1
            w, bias = w[:-1], bias[:-1]
        return F.linear(h, w, bias)
