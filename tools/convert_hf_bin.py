#!/usr/bin/python3
"""Writes model.safetensors beside the pytorch_model.bin of a Hugging Face MarianMT directory.

    tools/convert_hf_bin.py HF_DIR

Many older Helsinki-NLP/opus-mt-* directories hold only pytorch_model.bin (a
torch.save'd state dict); the engine reads safetensors. Tensors keep their names,
shapes and dtypes (float32, float16 or bfloat16). Hugging Face ties the
embeddings and the output projection, so the .bin stores one matrix under up to
four names; that matrix is written once, under the name the engine reads first
(model.shared.weight, then the encoder's, then the decoder's embedding), and
the aliases are left out because the engine ties them itself.

The state dict is checked against config.json before anything is written: every
key must belong to a post-norm MarianMT model with that many layers and none may
be missing, so a checkpoint of another architecture (a pre-norm model's
layer_norm, layernorm_embedding, ...) is refused with the offending keys named.
The file is written under a temporary name and renamed, so a failure leaves no
model.safetensors behind. The .bin is read with torch.load(weights_only=True),
which refuses pickled code. With --quantize int8 the matrices are stored as I8 with
per-row scales (tools/quantize_model.py tells how), and the engine then runs int8.
"""
import argparse
import json
import os
import struct
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_io import quantize_int8, should_quantize  # noqa: E402

SAFETENSORS_DTYPES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.int8: "I8"}
# Names of one tied matrix, in the order the engine looks for them.
TIED_NAMES = ["model.shared.weight", "model.encoder.embed_tokens.weight",
              "model.decoder.embed_tokens.weight", "lm_head.weight"]
LINEAR = ["q_proj", "k_proj", "v_proj", "out_proj"]


class ConversionError(Exception):
    """A problem with the input checkpoint, reported to the user as one message."""


def layer_keys(cross):
    """Parameter names inside one encoder (cross=False) or decoder layer."""
    blocks = ["self_attn"] + (["encoder_attn"] if cross else [])
    names = [f"{b}.{p}.{k}" for b in blocks for p in LINEAR for k in ("weight", "bias")]
    names += [f"{b}_layer_norm.{k}" for b in blocks for k in ("weight", "bias")]
    names += [f"{m}.{k}" for m in ("fc1", "fc2", "final_layer_norm") for k in ("weight", "bias")]
    return set(names)


def check_keys(state, config):
    """Refuses keys a post-norm MarianMT model of this config does not have, and
    missing layer parameters; one of the embedding names must be present."""
    depth = {"encoder": config.get("encoder_layers"), "decoder": config.get("decoder_layers")}
    for side, n in depth.items():
        if not isinstance(n, int) or n < 1:
            raise ConversionError(f"config.json: {side}_layers missing or not a positive integer")
    optional = set(TIED_NAMES) | {"final_logits_bias", "model.encoder.embed_positions.weight",
                                  "model.decoder.embed_positions.weight"}
    wanted = {f"model.{side}.layers.{i}.{k}" for side, n in depth.items()
              for i in range(n) for k in layer_keys(side == "decoder")}
    unexpected = sorted(k for k in state if k not in wanted and k not in optional)
    if unexpected:
        shown = ", ".join(unexpected[:8]) + (" ..." if len(unexpected) > 8 else "")
        raise ConversionError(f"{len(unexpected)} key(s) that a post-norm MarianMT model with "
                              f"{depth['encoder']}+{depth['decoder']} layers does not have: "
                              f"{shown}")
    missing = sorted(wanted - set(state))
    if missing:
        shown = ", ".join(missing[:8]) + (" ..." if len(missing) > 8 else "")
        raise ConversionError(f"{len(missing)} key(s) missing: {shown}")
    if not any(k in state for k in TIED_NAMES[:2]):
        raise ConversionError("no model.shared.weight nor model.encoder.embed_tokens.weight")


def storage_key(t):
    """Identifies the memory a tensor views: equal keys are the same (tied) matrix."""
    storage = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    return (storage.data_ptr(), t.storage_offset(), tuple(t.shape), tuple(t.stride()), t.dtype)


def drop_tied_aliases(state):
    """The state dict without the later names of tied matrices; returns (kept, dropped)."""
    first = {}
    dropped = []
    for name in TIED_NAMES:
        if name in state:
            key = storage_key(state[name])
            if key in first:
                dropped.append(f"{name} (= {first[key]})")
            else:
                first[key] = name
    kept = {k: v for k, v in state.items()
            if k not in TIED_NAMES or first.get(storage_key(v)) == k}
    return kept, dropped


def tensor_bytes(t):
    """Raw little-endian bytes of a tensor (bfloat16 through its 16-bit pattern)."""
    t = t.detach().contiguous().cpu()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return t.numpy().tobytes()


def write_safetensors(path, state):
    """Writes {name: tensor} in safetensors layout via a temporary file and rename."""
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name in sorted(state):
        t = state[name]
        blob = tensor_bytes(t)
        header[name] = {"dtype": SAFETENSORS_DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    tmp = path + ".tmp"
    try:
        with open(tmp, "wb") as f:
            f.write(struct.pack("<Q", len(raw)))
            f.write(raw)
            for blob in blobs:
                f.write(blob)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def quantized(state):
    """The matrices of `state` as I8 plus their "_scale" vectors (safetensors_io's rule)."""
    out = {}
    for name, t in state.items():
        if t.dim() == 2 and should_quantize(name, t.to(torch.float32)[:1].numpy()):
            q = quantize_int8({name: t.to(torch.float32).numpy()})
            out.update({k: torch.from_numpy(v) for k, v in q.items()})
        else:
            out[name] = t
    return out


def convert(hf_dir, quantize=None):
    """Checks HF_DIR/pytorch_model.bin and writes HF_DIR/model.safetensors.

    Returns (number of tensors written, dropped alias descriptions)."""
    bin_path = os.path.join(hf_dir, "pytorch_model.bin")
    out_path = os.path.join(hf_dir, "model.safetensors")
    if not os.path.isfile(bin_path):
        raise ConversionError(f"{bin_path} not found")
    if os.path.lexists(out_path):
        raise ConversionError(f"{out_path} already exists; remove it to convert again")
    try:
        with open(os.path.join(hf_dir, "config.json"), encoding="utf-8") as f:
            config = json.load(f)
    except (OSError, ValueError) as e:
        raise ConversionError(f"cannot read {hf_dir}/config.json: {e}") from None
    if config.get("model_type") != "marian":
        raise ConversionError(f"config.json: model_type {config.get('model_type')!r}, "
                              f"expected 'marian'")
    try:
        state = torch.load(bin_path, map_location="cpu", weights_only=True)
    except Exception as e:  # torch raises many types for corrupt or unsafe files
        raise ConversionError(f"cannot load {bin_path}: {e}") from None
    if not isinstance(state, dict) or not all(
            isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items()):
        raise ConversionError(f"{bin_path} is not a flat state dict of named tensors")
    bad = sorted(k for k, v in state.items() if v.dtype not in SAFETENSORS_DTYPES)
    if bad:
        raise ConversionError("tensor(s) with a dtype other than float32/float16/bfloat16: "
                              + ", ".join(f"{k} ({state[k].dtype})" for k in bad[:8]))
    check_keys(state, config)
    kept, dropped = drop_tied_aliases(state)
    write_safetensors(out_path, quantized(kept) if quantize == "int8" else kept)
    return len(kept), dropped


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("hf_dir", help="Hugging Face MarianMT directory with pytorch_model.bin")
    p.add_argument("--quantize", choices=["int8"],
                   help="store the matrices as int8 with per-row scales (4x smaller than float32)")
    args = p.parse_args(argv)
    try:
        count, dropped = convert(args.hf_dir, args.quantize)
    except ConversionError as e:
        print(f"convert_hf_bin: {e}", file=sys.stderr)
        return 1
    print(f"convert_hf_bin: wrote {os.path.join(args.hf_dir, 'model.safetensors')} "
          f"({count} tensors)", file=sys.stderr)
    if dropped:
        print("convert_hf_bin: tied copies left out: " + ", ".join(dropped), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
