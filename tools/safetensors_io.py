"""Minimal safetensors writer and reader (numpy only).

The format is small enough that a self-contained implementation avoids a
dependency the Debian image does not ship: an 8-byte little-endian header
length, a JSON header padded with spaces to a multiple of 8, then the raw
little-endian tensor bytes, contiguous and in header order.
"""
import json
import os
import struct

import numpy as np

_DTYPES = {
    "F16": np.dtype("<f2"),
    "F32": np.dtype("<f4"),
    "F64": np.dtype("<f8"),
    "I32": np.dtype("<i4"),
    "I64": np.dtype("<i8"),
    "I8": np.dtype("i1"),
}
_NAMES = {v: k for k, v in _DTYPES.items()}


def write(path, tensors, metadata=None):
    """Write {name: numpy array} to `path` atomically (temp file + rename).

    Arrays keep their own dtype; the caller chooses F16/F32 per tensor.
    """
    header = {}
    blobs = []
    offset = 0
    for name, arr in tensors.items():
        arr = np.ascontiguousarray(arr)
        dt = arr.dtype.newbyteorder("<")
        if dt not in _NAMES:
            raise ValueError(f"{name}: unsupported dtype {arr.dtype}")
        data = arr.astype(dt, copy=False).tobytes()
        header[name] = {"dtype": _NAMES[dt], "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    header["__metadata__"] = dict(metadata or {"format": "pt"})
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for data in blobs:
            f.write(data)
    os.replace(tmp, path)


def read_header(path):
    """Return (header dict, byte offset where tensor data starts), validating layout.

    Raises ValueError when offsets are not contiguous, overlap, or run past the file.
    """
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        if n % 8 or 8 + n > size:
            raise ValueError(f"bad header length {n}")
        header = json.loads(f.read(n).decode("utf-8"))
    start = 8 + n
    spans = sorted((v["data_offsets"], k) for k, v in header.items() if k != "__metadata__")
    pos = 0
    for (b, e), name in spans:
        info = header[name]
        if info.get("dtype") not in _DTYPES and info.get("dtype") != "BF16":
            raise ValueError(f"{name}: unsupported dtype {info.get('dtype')!r}")
        item = 2 if info["dtype"] == "BF16" else _DTYPES[info["dtype"]].itemsize
        want = int(np.prod(info["shape"], dtype=np.int64)) * item
        if b != pos or e - b != want:
            raise ValueError(f"{name}: offsets {b},{e} not contiguous / wrong size")
        pos = e
    if start + pos != size:
        raise ValueError(f"data ends at {start + pos}, file has {size} bytes")
    return header, start


def read(path):
    """Read a safetensors file into {name: numpy array} (metadata dropped; BF16 as float32)."""
    header, start = read_header(path)
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        if info["dtype"] == "BF16":  # numpy has no bfloat16: widened to float32
            bits = np.frombuffer(data[b:e], dtype="<u2").astype(np.uint32) << 16
            out[name] = bits.view(np.float32).reshape(info["shape"])
            continue
        out[name] = np.frombuffer(data[b:e], dtype=_DTYPES[info["dtype"]]).reshape(info["shape"])
    return out


def should_quantize(name, arr):
    """Matrices the engine multiplies by: every 2-D `.weight` (the shared embedding, which
    is also the output projection, included); not the stored sinusoid tables."""
    return arr.ndim == 2 and name.endswith(".weight") and "embed_positions" not in name \
        and arr.dtype.kind == "f"


def quantize_int8(tensors):
    """{name: float array} -> the same with each matrix as I8 plus "<name>_scale".

    Per output row, symmetric: scale = max|w| / 127 (float32), q = round(w / scale)
    clipped to +-127, the rule the engine applies when it quantizes at load, so a stored
    int8 model and the same model quantized at load compute the same products. A row of
    zeros gets scale 1. The engine reads q * scale back; float32 still runs on the file.
    """
    out = {}
    for name, arr in tensors.items():
        if not should_quantize(name, arr):
            out[name] = arr
            continue
        w = np.asarray(arr, dtype=np.float32)
        amax = np.abs(w).max(axis=1)
        scale = np.where(amax > 0, amax / np.float32(127.0), np.float32(1.0)).astype(np.float32)
        q = np.clip(np.rint(w / scale[:, None]), -127, 127).astype(np.int8)
        out[name] = q
        out[name + "_scale"] = scale
    return out


def dequantize_int8(tensors):
    """The inverse of quantize_int8 as the engine reads it: each I8 matrix with its
    "<name>_scale" becomes the float32 product q * scale (one rounding per element, so
    the result equals the weights the engine computes with under --compute-type float32);
    the scales are dropped and every other tensor is returned as it is. An I8 tensor
    without a matching scale vector raises ValueError."""
    out = {}
    for name, arr in tensors.items():
        if name.endswith("_scale") and tensors.get(name[:-6]) is not None \
                and tensors[name[:-6]].dtype == np.int8:
            continue
        if arr.dtype != np.int8:
            out[name] = arr
            continue
        scale = tensors.get(name + "_scale")
        if scale is None or arr.ndim != 2 or scale.shape != (arr.shape[0],):
            raise ValueError(f"{name}: an I8 matrix needs a scale vector of {arr.shape[0]} "
                             f"rows in {name}_scale")
        out[name] = arr.astype(np.float32) * scale.astype(np.float32)[:, None]
    return out
