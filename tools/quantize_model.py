#!/usr/bin/python3
"""Write an int8 copy of a model directory: 4x smaller weights that run int8 by default.

    tools/quantize_model.py models/en-de models/en-de-int8

Every matrix of IN/model.safetensors (F32, F16 or BF16) is stored as I8, quantized per
output row (symmetric, scale = max|w| / 127, float32 scales in "<name>_scale"); vectors
(biases, layer norms) keep their dtype. The other files are copied unchanged. mt-translate
and mt-server then run the directory with compute type int8 unless told otherwise
(float32 still works on it: the weights are read back as q * scale). The converters take
the same step with --quantize int8.
"""
import argparse
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_io import quantize_int8, read, read_header, write  # noqa: E402


class QuantizeError(Exception):
    """A problem with the input directory, reported as one message."""


def read_floats(path):
    """{name: array} of a safetensors file that is not quantized yet."""
    try:
        header, _ = read_header(path)
        if any(v.get("dtype") == "I8" for k, v in header.items() if k != "__metadata__"):
            raise QuantizeError(f"{path} is already quantized (it holds I8 tensors)")
        return read(path)
    except (OSError, ValueError, KeyError) as e:
        raise QuantizeError(f"cannot read {path}: {e}") from None


def quantize_file(path, out_path):
    """Quantizes safetensors file PATH into OUT_PATH (may be the same); returns
    (matrices quantized, bytes before, bytes after)."""
    before = os.path.getsize(path)
    tensors = read_floats(path)
    quantized = quantize_int8(tensors)
    count = sum(1 for k in quantized if k.endswith("_scale") and k[:-6] in tensors)
    if not count:
        raise QuantizeError(f"{path}: no matrix to quantize")
    write(out_path, quantized, {"format": "pt", "quantization": "int8 per-row symmetric"})
    return count, before, os.path.getsize(out_path)


def quantize_dir(src, dst):
    if not os.path.isfile(os.path.join(src, "model.safetensors")):
        raise QuantizeError(f"{src}/model.safetensors not found")
    if os.path.lexists(dst):
        raise QuantizeError(f"{dst} already exists")
    tmp = dst.rstrip("/") + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        shutil.copytree(src, tmp, ignore=shutil.ignore_patterns("model.safetensors"))
        result = quantize_file(os.path.join(src, "model.safetensors"),
                               os.path.join(tmp, "model.safetensors"))
        os.rename(tmp, dst)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return result


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("in_dir", help="model directory (F32, F16 or BF16 weights)")
    p.add_argument("out_dir", help="directory to create (must not exist)")
    args = p.parse_args(argv)
    try:
        count, before, after = quantize_dir(args.in_dir, args.out_dir)
    except (QuantizeError, OSError) as e:
        print(f"quantize_model: {e}", file=sys.stderr)
        return 1
    print(f"quantize_model: wrote {args.out_dir}: {count} matrices as int8, model.safetensors "
          f"{before / 1e6:.1f} MB -> {after / 1e6:.1f} MB", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
