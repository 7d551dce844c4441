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
        want = int(np.prod(info["shape"], dtype=np.int64)) * _DTYPES[info["dtype"]].itemsize
        if b != pos or e - b != want:
            raise ValueError(f"{name}: offsets {b},{e} not contiguous / wrong size")
        pos = e
    if start + pos != size:
        raise ValueError(f"data ends at {start + pos}, file has {size} bytes")
    return header, start


def read(path):
    """Read a safetensors file into {name: numpy array} (metadata dropped)."""
    header, start = read_header(path)
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        out[name] = np.frombuffer(data[b:e], dtype=_DTYPES[info["dtype"]]).reshape(info["shape"])
    return out
