#!/usr/bin/python3
"""Writes tests/fuzz/safetensors: seeds for tests/fuzz_safetensors.c, small safetensors files
in the layout the Hugging Face library writes (8-byte little-endian header length, a JSON
object naming each tensor's dtype, shape and data_offsets, then the data section).

  tests/fuzz/make_safetensors_seeds.py [OUT_DIR]

Without seeds libFuzzer rarely builds a header length that fits and a JSON object behind
it, so the target stayed in the first length check (11 coverage points in 10 million runs).
The seeds cover every dtype the reader accepts, __metadata__, a zero-size tensor, a scalar,
padding after the JSON (the library pads the header with spaces to 8 bytes), an unknown
dtype, overlapping tensors, offsets past the end and a shape that disagrees with the bytes.
"""
import json
import os
import struct
import sys


def write(path, header, data, pad=True, raw_header=None):
    h = raw_header if raw_header is not None else json.dumps(header, separators=(",", ":")).encode()
    if pad:
        h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "safetensors")
    os.makedirs(out, exist_ok=True)
    f32 = struct.pack("<6f", 0.5, -1.0, 2.0, 3.5, -0.25, 1e-3)
    f16 = struct.pack("<4e", 0.5, -1.0, 65504.0, 6e-5)
    bf16 = bytes([0x00, 0x3f, 0x80, 0xbf, 0x7f, 0x7f, 0x01, 0x00])  # 0.5, -1, max, tiny
    i8 = bytes([0, 1, 127, 0x80, 0xff, 42])
    write(os.path.join(out, "all_types.safetensors"), {
        "__metadata__": {"format": "pt"},
        "encoder.weight": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
        "decoder.half": {"dtype": "F16", "shape": [4], "data_offsets": [24, 32]},
        "decoder.bf": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [32, 40]},
        "lm_head.qweight": {"dtype": "I8", "shape": [3, 2], "data_offsets": [40, 46]},
    }, f32 + f16 + bf16 + i8)
    write(os.path.join(out, "scalar_and_empty.safetensors"), {
        "scale": {"dtype": "F32", "shape": [], "data_offsets": [0, 4]},
        "empty": {"dtype": "F32", "shape": [0, 5], "data_offsets": [4, 4]},
    }, struct.pack("<f", 0.125))
    write(os.path.join(out, "no_tensors.safetensors"), {"__metadata__": {}}, b"")
    write(os.path.join(out, "unpadded.safetensors"), {
        "w": {"dtype": "F16", "shape": [1, 2], "data_offsets": [0, 4]}}, f16[:4], pad=False)
    write(os.path.join(out, "unknown_dtype.safetensors"), {
        "w": {"dtype": "F64", "shape": [1], "data_offsets": [0, 8]}}, b"\0" * 8)
    write(os.path.join(out, "overlap.safetensors"), {
        "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
        "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, f32[:12])
    write(os.path.join(out, "past_end.safetensors"), {
        "w": {"dtype": "I8", "shape": [64], "data_offsets": [0, 64]}}, i8)
    write(os.path.join(out, "shape_mismatch.safetensors"), {
        "w": {"dtype": "F32", "shape": [3, 3], "data_offsets": [0, 24]}}, f32)
    write(os.path.join(out, "not_object.safetensors"), None, b"", raw_header=b"[1,2,3]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
