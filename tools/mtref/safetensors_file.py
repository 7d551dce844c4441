"""Self-contained safetensors reader and writer (numpy only).

Debian ships no `safetensors` package, and the reference must not borrow the
training tools' helper, so the format is handled here: an 8-byte little-endian
header length N, N bytes of JSON {name: {dtype, shape, data_offsets: [begin, end]}}
(plus an optional "__metadata__" entry), then the raw little-endian tensor bytes,
offsets relative to the end of the header.
"""
import json
import struct

import numpy as np

# Stored dtypes the reader accepts; every tensor is returned as float32 because
# that is what the engine computes in after converting at load time. I8 is a matrix
# stored int8 (tools/quantize_model.py): read back as q * "<name>_scale" per row.
_ITEM_SIZE = {"F32": 4, "F16": 2, "BF16": 2, "I8": 1}


def _to_float32(raw, dtype, shape):
    """Decode the little-endian bytes of one tensor into a float32 array."""
    if dtype == "F32":
        arr = np.frombuffer(raw, dtype="<f4")
    elif dtype == "F16":
        arr = np.frombuffer(raw, dtype="<f2").astype(np.float32)
    elif dtype == "I8":
        arr = np.frombuffer(raw, dtype="i1").astype(np.float32)
    elif dtype == "BF16":
        # bfloat16 is the high half of a float32: widen by shifting 16 bits left.
        half = np.frombuffer(raw, dtype="<u2").astype(np.uint32)
        arr = (half << 16).view(np.float32)
    else:
        raise ValueError(f"unsupported safetensors dtype {dtype}")
    return arr.reshape(shape).astype(np.float32, copy=True)


def read(path, skip=lambda name: False):
    """Load every tensor of `path` (except those `skip(name)` rejects) as float32.

    Returns {name: np.ndarray}. Offsets are validated against the file size so a
    truncated or malformed file fails with a message instead of garbage weights.
    A stored-int8 matrix (I8 rows q plus a float vector "<name>_scale", one per row)
    comes back as the float32 product q * scale, the weights the engine computes with
    under --compute-type float32; its "_scale" entry is consumed, not returned.
    """
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError(f"{path}: too short for a safetensors header")
    (header_len,) = struct.unpack("<Q", data[:8])
    if 8 + header_len > len(data):
        raise ValueError(f"{path}: header length {header_len} exceeds file size")
    header = json.loads(data[8:8 + header_len].decode("utf-8"))
    base = 8 + header_len
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__" or skip(name):
            continue
        dtype, shape = info["dtype"], info["shape"]
        begin, end = info["data_offsets"]
        count = int(np.prod(shape)) if shape else 1
        if dtype not in _ITEM_SIZE:
            raise ValueError(f"{path}: tensor {name} has unsupported dtype {dtype}")
        if end - begin != count * _ITEM_SIZE[dtype] or base + end > len(data) or begin < 0:
            raise ValueError(f"{path}: tensor {name} has bad data_offsets {begin}..{end}")
        tensors[name] = _to_float32(data[base + begin:base + end], dtype, shape)
    for name in [k for k, v in header.items() if k != "__metadata__" and v["dtype"] == "I8"]:
        if name not in tensors:
            continue
        tensors[name] = _dequantize(path, name, tensors[name], tensors.pop(name + "_scale", None))
    return tensors


def _dequantize(path, name, q, scale):
    """q * scale per row in float32 (one rounding, as the engine's widening does)."""
    if scale is None:
        raise ValueError(f"{path}: int8 tensor {name} has no {name}_scale")
    if q.ndim != 2 or scale.shape != (q.shape[0],):
        raise ValueError(f"{path}: {name}_scale has shape {list(scale.shape)}, "
                         f"want [{q.shape[0] if q.ndim else 0}] for {name} {list(q.shape)}")
    if not np.all(np.isfinite(scale)) or np.any(scale < 0):
        raise ValueError(f"{path}: {name}_scale has a negative or non-finite scale")
    return (q * scale[:, None]).astype(np.float32)


def _encode(arr, dtype):
    """Round a float32 array to the stored dtype and return its bytes."""
    arr = np.ascontiguousarray(arr, dtype=np.float32)
    if dtype == "F32":
        return arr.astype("<f4").tobytes()
    if dtype == "F16":
        return arr.astype("<f2").tobytes()
    if dtype == "BF16":
        # Round to nearest even on the 16 dropped bits (as torch does).
        bits = arr.view(np.uint32).astype(np.uint64)
        rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
        return rounded.astype("<u2").tobytes()
    raise ValueError(f"unsupported safetensors dtype {dtype}")


def write(path, tensors, dtype="F32"):
    """Write {name: float array} to `path`, every tensor stored as `dtype`.

    Names are written sorted and the header is space-padded to a multiple of 8
    bytes, as the reference implementation does.
    """
    header = {"__metadata__": {"format": "pt"}}
    blobs = []
    offset = 0
    for name in sorted(tensors):
        arr = np.asarray(tensors[name])
        blob = _encode(arr, dtype)
        header[name] = {"dtype": dtype, "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)
