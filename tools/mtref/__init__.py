"""mtref: an independent PyTorch reference for Hugging Face MarianMT inference.

The C engine is checked against this package, so it deliberately shares no code
with the training tools (tools/train.py, tools/transformer.py): a bug copied into
both sides would hide itself. Modules:

  safetensors_file  reading (and, for test models, writing) .safetensors files
  config            config.json / generation_config.json / tokenizer_config.json
  model             weights and the forward pass (batched, KV-cached)
  tokenizer         MarianTokenizer-compatible text <-> ids
  search            the project's beam search, shared definition with the C engine
"""
