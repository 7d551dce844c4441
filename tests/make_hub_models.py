#!/usr/bin/python3
"""Writes the repositories tests/fake_hub.py serves for tests/test_mt_models.py.

  tests/make_hub_models.py OUT      (needs python3-torch for the pytorch_model.bin layouts)

OUT/hub/OWNER/NAME are the repositories; OUT/originals/NAME the models they were made
from (tools/make_test_model.py's directories), the weights the PyTorch reference reads.

  Helsinki-NLP/opus-mt-en-de       model.safetensors (F32), as published today
  Helsinki-NLP/opus-mt-de-en       pytorch_model.bin only (torch.save, float32), with Hugging
                                   Face's tied copies (one matrix under four names) and the
                                   stored position tables, as the older OPUS-MT uploads hold
  Helsinki-NLP/opus-mt-en-es       pytorch_model.bin in float16, separate vocabularies
  Helsinki-NLP/opus-mt-fr-en       pytorch_model.bin in torch's legacy (before 1.6) format
  google/t5-small-like             a T5 config.json: refused by name before any weights
  evil/opus-mt-en-xx               a MarianMT config with a pytorch_model.bin whose pickle calls
                                   os.system("touch MARKER") (MARKER: argv[2], default OUT/pwned)

  tests/make_hub_models.py --opus-size DIR [--legacy]
      DIR/config.json + DIR/pytorch_model.bin of an OPUS-MT (transformer-base) size: d 512,
      6+6 layers, ffn 2048, vocabulary 58,101 (298 MB, random weights), for timing
      `mt-models convert DIR` against tools/convert_hf_bin.py on a copy

torch is used here only, to write the test data as torch.save writes it.
"""
import collections
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.join(os.path.dirname(HERE), "tools")
sys.path.insert(0, TOOLS)

import torch  # noqa: E402

from mtref import safetensors_file  # noqa: E402
from mtref.model import sinusoidal_positions  # noqa: E402

PY = "/usr/bin/python3"
TIED = ["model.shared.weight", "model.encoder.embed_tokens.weight",
        "model.decoder.embed_tokens.weight", "lm_head.weight"]


def make_model(out, *args):
    subprocess.run([PY, os.path.join(TOOLS, "make_test_model.py"), out, *args], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def hf_state(model_dir, dtype):
    """The state dict Hugging Face saves: tied matrices stored once under every name."""
    w = {k: torch.from_numpy(v.copy()).to(dtype)
         for k, v in safetensors_file.read(os.path.join(model_dir, "model.safetensors")).items()}
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    table = sinusoidal_positions(cfg["max_position_embeddings"], cfg["d_model"],
                                 cfg.get("positions_formula", "huggingface"))
    for side in ("encoder", "decoder"):
        w[f"model.{side}.embed_positions.weight"] = table.to(dtype)
    if "model.shared.weight" in w:
        shared = w["model.shared.weight"]
        w["model.encoder.embed_tokens.weight"] = w["model.decoder.embed_tokens.weight"] = shared
        w.setdefault("lm_head.weight", shared)
    return collections.OrderedDict(sorted(w.items()))


def as_bin_repo(original, repo, dtype, legacy=False):
    shutil.copytree(original, repo, ignore=shutil.ignore_patterns("model.safetensors"))
    torch.save(hf_state(original, dtype), os.path.join(repo, "pytorch_model.bin"),
               _use_new_zipfile_serialization=not legacy)


class Evil:
    """Pickles as a call to os.system: what a weights-only load must refuse."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def opus_size(out, legacy):
    """A transformer-base MarianMT state dict with Hugging Face's four tied names."""
    d, ff, vocab, layers = 512, 2048, 58101, 6
    g = torch.Generator().manual_seed(0)

    def r(*shape):
        return torch.randn(*shape, generator=g) * 0.02
    shared = r(vocab, d)
    st = collections.OrderedDict((n, shared) for n in TIED)
    st["final_logits_bias"] = torch.zeros(1, vocab)
    for side, cross in (("encoder", False), ("decoder", True)):
        st[f"model.{side}.embed_positions.weight"] = r(512, d)
        for i in range(layers):
            p = f"model.{side}.layers.{i}."
            for b in ["self_attn"] + (["encoder_attn"] if cross else []):
                for q in ("q_proj", "k_proj", "v_proj", "out_proj"):
                    st[p + f"{b}.{q}.weight"], st[p + f"{b}.{q}.bias"] = r(d, d), r(d)
                st[p + f"{b}_layer_norm.weight"], st[p + f"{b}_layer_norm.bias"] = torch.ones(d), torch.zeros(d)
            st[p + "fc1.weight"], st[p + "fc1.bias"] = r(ff, d), r(ff)
            st[p + "fc2.weight"], st[p + "fc2.bias"] = r(d, ff), r(d)
            st[p + "final_layer_norm.weight"], st[p + "final_layer_norm.bias"] = torch.ones(d), torch.zeros(d)
    os.makedirs(out, exist_ok=True)
    torch.save(st, os.path.join(out, "pytorch_model.bin"), _use_new_zipfile_serialization=not legacy)
    with open(os.path.join(out, "config.json"), "w", encoding="utf-8") as f:
        json.dump({"model_type": "marian", "architectures": ["MarianMTModel"], "d_model": d,
                   "encoder_layers": layers, "decoder_layers": layers, "vocab_size": vocab}, f)


def main(argv):
    if len(argv) > 2 and argv[1] == "--opus-size":
        return opus_size(argv[2], "--legacy" in argv[3:])
    out = argv[1]
    marker = argv[2] if len(argv) > 2 else os.path.join(out, "pwned")
    hub, orig = os.path.join(out, "hub"), os.path.join(out, "originals")
    os.makedirs(hub, exist_ok=True)
    os.makedirs(orig, exist_ok=True)
    make_model(os.path.join(orig, "en-de"), "--seed", "11")
    make_model(os.path.join(orig, "de-en"), "--seed", "12", "--tokenizer-from", os.path.join(orig, "en-de"))
    make_model(os.path.join(orig, "en-es"), "--seed", "13", "--separate-vocabs", "--dtype", "F16",
               "--vocab-size", "300", "280")
    shutil.copytree(os.path.join(orig, "en-de"), os.path.join(hub, "Helsinki-NLP", "opus-mt-en-de"))
    as_bin_repo(os.path.join(orig, "de-en"), os.path.join(hub, "Helsinki-NLP", "opus-mt-de-en"), torch.float32)
    as_bin_repo(os.path.join(orig, "en-es"), os.path.join(hub, "Helsinki-NLP", "opus-mt-en-es"), torch.float16)
    make_model(os.path.join(orig, "fr-en"), "--seed", "14", "--tokenizer-from", os.path.join(orig, "en-de"),
               "--activation", "swish")
    as_bin_repo(os.path.join(orig, "fr-en"), os.path.join(hub, "Helsinki-NLP", "opus-mt-fr-en"), torch.float32,
                legacy=True)

    t5 = os.path.join(hub, "google", "t5-small-like")
    shutil.copytree(os.path.join(orig, "en-de"), t5)
    with open(os.path.join(t5, "config.json"), "w", encoding="utf-8") as f:
        json.dump({"architectures": ["T5ForConditionalGeneration"], "model_type": "t5", "d_model": 64}, f)

    evil = os.path.join(hub, "evil", "opus-mt-en-xx")
    shutil.copytree(os.path.join(orig, "en-de"), evil, ignore=shutil.ignore_patterns("model.safetensors"))
    state = collections.OrderedDict(hf_state(os.path.join(orig, "en-de"), torch.float32))
    state["model.encoder.layers.0.fc1.bias"] = Evil(marker)
    torch.save(state, os.path.join(evil, "pytorch_model.bin"))


if __name__ == "__main__":
    main(sys.argv)
