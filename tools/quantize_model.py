#!/usr/bin/python3
"""Write an int8 copy of a model directory: 4x smaller weights that run int8 by default.

    tools/quantize_model.py models/de-en /tmp/de-en-int8

Every matrix of IN/model.safetensors (F32, F16 or BF16) is stored as I8, quantized per
output row (symmetric, scale = max|w| / 127, float32 scales in "<name>_scale"); vectors
(biases, layer norms) keep their dtype. The other files are copied unchanged. mt-translate
and mt-server then run the directory with compute type int8 unless told otherwise
(float32 still works on it: the weights are read back as q * scale). The converters take
the same step with --quantize int8.

    tools/quantize_model.py --dequantize models/en-de /tmp/en-de-float32

does the reverse for tools that read only float weights (CTranslate2's converter, the
benchmarks' peers): every I8 matrix becomes float32 q * scale, exactly the weights the
engine computes with under --compute-type float32, so the copy translates as the stored
int8 directory does with float32.
"""
import argparse
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_io import dequantize_int8, quantize_int8, read, read_header, write  # noqa: E402


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


def dequantize_file(path, out_path):
    """Writes safetensors file PATH with its I8 matrices as float32 q * scale to OUT_PATH;
    returns (matrices widened, bytes before, bytes after)."""
    before = os.path.getsize(path)
    try:
        tensors = read(path)
        floats = dequantize_int8(tensors)
    except (OSError, ValueError, KeyError) as e:
        raise QuantizeError(f"cannot read {path}: {e}") from None
    count = sum(1 for k, v in tensors.items() if v.dtype.kind == "i" and v.itemsize == 1)
    if not count:
        raise QuantizeError(f"{path} is not quantized (it holds no I8 tensor)")
    write(out_path, floats)
    return count, before, os.path.getsize(out_path)


def quantize_dir(src, dst, convert=None):
    if not os.path.isfile(os.path.join(src, "model.safetensors")):
        raise QuantizeError(f"{src}/model.safetensors not found")
    if os.path.lexists(dst):
        raise QuantizeError(f"{dst} already exists")
    tmp = dst.rstrip("/") + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        shutil.copytree(src, tmp, ignore=shutil.ignore_patterns("model.safetensors"))
        result = (convert or quantize_file)(os.path.join(src, "model.safetensors"),
                                            os.path.join(tmp, "model.safetensors"))
        os.rename(tmp, dst)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return result


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dequantize", action="store_true",
                   help="the reverse: IN is stored int8, OUT gets float32 weights q * scale")
    p.add_argument("in_dir", help="model directory (F32, F16 or BF16 weights; I8 with --dequantize)")
    p.add_argument("out_dir", help="directory to create (must not exist)")
    args = p.parse_args(argv)
    try:
        count, before, after = quantize_dir(args.in_dir, args.out_dir,
                                            dequantize_file if args.dequantize else None)
    except (QuantizeError, OSError) as e:
        print(f"quantize_model: {e}", file=sys.stderr)
        return 1
    print(f"quantize_model: wrote {args.out_dir}: {count} matrices as "
          f"{'float32' if args.dequantize else 'int8'}, model.safetensors "
          f"{before / 1e6:.1f} MB -> {after / 1e6:.1f} MB", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
