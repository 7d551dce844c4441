#!/usr/bin/python3
"""Writes tests/fuzz/ct2: seeds for tests/fuzz_ct2.c, tiny model.bin files written by
CTranslate2's own spec classes (the peer build in ../shared/peers/ctranslate2).

  tests/fuzz/make_ct2_seeds.py [OUT_DIR]

post_<type>.bin: a post-norm TransformerSpec (d 8, 2 heads, ffn 16, 1+1 layers, 10 tokens)
stored as float32, float16, bfloat16, int8 and int16; pre_norm.bin: the pre-norm form;
v3.bin: post_float32.bin rewritten in binary version 3 (item sizes, not type ids);
truncated.bin: post_int8.bin cut in the middle of a variable; separate.bin: separate
vocabularies (10 source tokens t*, 12 target tokens u*).
"""
import os
import struct
import sys

import numpy as np

PEER = os.environ.get("MT_CT2_PEER") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                                       "shared", "peers", "ctranslate2")
sys.path.insert(0, os.path.join(PEER, "python"))
from ctranslate2.specs import common_spec, transformer_spec  # noqa: E402


def tiny_spec(pre_norm, rng, d=8, heads=2, ffn=16, vocab=10, layers=1, tgt_vocab=None):
    tgt_vocab = tgt_vocab or vocab
    spec = transformer_spec.TransformerSpec.from_config((layers, layers), heads, pre_norm=pre_norm,
                                                         activation=common_spec.Activation.RELU)

    positions = 2 * rng.standard_normal((16, d)).astype(np.float32)  # one table: the engine shares it
    for enc_dec in (spec.encoder, spec.decoder):
        enc_dec.scale_embeddings = float(np.sqrt(d))
        emb = enc_dec.embeddings[0] if isinstance(enc_dec.embeddings, list) else enc_dec.embeddings
        rows = vocab if enc_dec is spec.encoder else tgt_vocab
        emb.weight = 0.3 * rng.standard_normal((rows, d)).astype(np.float32)  # positions matter too
        enc_dec.position_encodings.encodings = positions
        if pre_norm:
            enc_dec.layer_norm.gamma = np.ones(d, np.float32)
            enc_dec.layer_norm.beta = np.zeros(d, np.float32)
        for layer in enc_dec.layer:
            atts = [layer.self_attention] + ([layer.attention] if hasattr(layer, "attention") else [])
            for att in atts:
                for i, lin in enumerate(att.linear):
                    rows = d
                    if att is layer.self_attention and i == 0:
                        rows = 3 * d
                    elif att is not layer.self_attention and i == 1:
                        rows = 2 * d
                    lin.weight = rng.standard_normal((rows, d)).astype(np.float32)
                    lin.bias = rng.standard_normal(rows).astype(np.float32)
                att.layer_norm.gamma = np.ones(d, np.float32)
                att.layer_norm.beta = np.zeros(d, np.float32)
            layer.ffn.linear_0.weight = rng.standard_normal((ffn, d)).astype(np.float32)
            layer.ffn.linear_0.bias = rng.standard_normal(ffn).astype(np.float32)
            layer.ffn.linear_1.weight = rng.standard_normal((d, ffn)).astype(np.float32)
            layer.ffn.linear_1.bias = rng.standard_normal(d).astype(np.float32)
            layer.ffn.layer_norm.gamma = np.ones(d, np.float32)
            layer.ffn.layer_norm.beta = np.zeros(d, np.float32)
    spec.decoder.projection.weight = rng.standard_normal((tgt_vocab, d)).astype(np.float32)
    spec.decoder.projection.bias = np.zeros(tgt_vocab, np.float32)
    tokens = ["</s>", "<unk>", "<s>"] + ["t%d" % i for i in range(vocab - 3)]
    tgt_tokens = ["</s>", "<unk>", "<s>"] + ["u%d" % i for i in range(tgt_vocab - 3)]
    spec.config.add_source_eos = True
    spec.config.decoder_start_token = "</s>"
    spec.register_source_vocabulary(tokens)
    spec.register_target_vocabulary(tgt_tokens if tgt_vocab != vocab else tokens)
    return spec


def save(spec, quantization, out_dir, name):
    import tempfile
    spec.validate()
    spec.optimize(quantization=quantization)
    with tempfile.TemporaryDirectory() as tmp:
        spec.save(tmp)
        with open(os.path.join(tmp, "model.bin"), "rb") as f:
            data = f.read()
    with open(os.path.join(out_dir, name), "wb") as f:
        f.write(data)
    return data


def to_v3(data):
    """Rewrites a version-6 file as version 3: item size and element count per variable."""
    p = 0

    def take(n):
        nonlocal p
        b = data[p:p + n]
        p += n
        return b
    out = bytearray()
    version = struct.unpack("<I", take(4))[0]
    assert version == 6
    out += struct.pack("<I", 3)
    n = struct.unpack("<H", data[p:p + 2])[0]
    out += take(2 + n) + take(4)  # spec name, revision
    count = struct.unpack("<I", take(4))[0]
    out += struct.pack("<I", count)
    sizes = {0: 4, 1: 1, 2: 2, 3: 4, 4: 2, 5: 2}
    for _ in range(count):
        n = struct.unpack("<H", data[p:p + 2])[0]
        out += take(2 + n)
        rank = data[p]
        out += take(1 + 4 * rank)
        type_id, nbytes = struct.unpack("<BI", take(5))
        assert type_id in (0, 1, 2), "version 3 has float32, int16 and int8 only"
        out += struct.pack("<BI", sizes[type_id], nbytes // sizes[type_id]) + take(nbytes)
    out += data[p:]  # aliases
    return bytes(out)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "ct2")
    os.makedirs(out, exist_ok=True)
    for q in ("float32", "float16", "bfloat16", "int8", "int16"):
        data = save(tiny_spec(False, np.random.default_rng(1)), q, out, "post_%s.bin" % q)
        if q == "float32":
            with open(os.path.join(out, "v3.bin"), "wb") as f:
                f.write(to_v3(data))
        if q == "int8":
            with open(os.path.join(out, "truncated.bin"), "wb") as f:
                f.write(data[: len(data) // 2])
    save(tiny_spec(True, np.random.default_rng(2)), None, out, "pre_norm.bin")
    save(tiny_spec(False, np.random.default_rng(3), tgt_vocab=12), None, out, "separate.bin")
    print("wrote", out)


if __name__ == "__main__":
    main()
