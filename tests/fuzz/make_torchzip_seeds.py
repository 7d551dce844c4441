#!/usr/bin/python3
"""Writes tests/fuzz/torchzip: seeds for tests/fuzz_torchzip.c (needs python3-torch).

  tests/fuzz/make_torchzip_seeds.py [OUT_DIR]

state.zip: a small state dict as torch.save writes it (float32, float16, bfloat16, a tied
matrix under two names, a transposed view, a Parameter); evil.zip: one whose pickle calls
os.system; data.pkl / evil.pkl: their pickles alone; legacy.pkl: the pre-1.6 format.
"""
import collections
import io
import os
import sys
import zipfile

import torch


class Evil:
    def __reduce__(self):
        return (os.system, ("true",))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                              "torchzip")
    os.makedirs(out, exist_ok=True)
    g = torch.Generator().manual_seed(1)
    shared = torch.randn(6, 4, generator=g)
    state = collections.OrderedDict([
        ("model.shared.weight", shared), ("lm_head.weight", shared),
        ("half", torch.randn(3, 5, generator=g).half()), ("bf16", torch.randn(2, 3, generator=g).bfloat16()),
        ("view", torch.randn(4, 3, generator=g).t()), ("param", torch.nn.Parameter(torch.ones(3))),
        ("scalar", torch.tensor(2.5)),
    ])
    torch.save(state, os.path.join(out, "state.zip"))
    torch.save({"x": torch.zeros(2), "y": Evil()}, os.path.join(out, "evil.zip"))
    for name in ("state", "evil"):
        with zipfile.ZipFile(os.path.join(out, name + ".zip")) as z:
            pkl = [n for n in z.namelist() if n.endswith("/data.pkl")][0]
            with open(os.path.join(out, name + ".pkl"), "wb") as f:
                f.write(z.read(pkl))
    buf = io.BytesIO()
    torch.save({"x": torch.zeros(2)}, buf, _use_new_zipfile_serialization=False)
    with open(os.path.join(out, "legacy.pkl"), "wb") as f:
        f.write(buf.getvalue())


if __name__ == "__main__":
    main()
