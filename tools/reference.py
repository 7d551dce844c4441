#!/usr/bin/python3
"""Reference MarianMT translator in PyTorch: the referee and speed peer of the C engine.

Reads a Hugging Face MarianMT / OPUS-MT model directory (config.json,
generation_config.json, model.safetensors, source.spm, target.spm, vocab.json,
target_vocab.json) and translates stdin line by line with the project's beam
search (tools/mtref/search.py), batched and KV-cached like a production decoder.
It shares no code with the training tools, on purpose.

  tools/reference.py --model DIR [--beam N] [--length-penalty A] [--max-length N]
      [--max-length-factor F] [--n-best N] [--threads N] [--batch-size N]
      [--input text|ids] [--output text|ids] < in > out
  tools/reference.py --model DIR --probe OUT.bin < probes

Output: one line per input line, in input order; an empty input line gives an
empty output line. --input ids: space-separated source ids without eos (eos is
appended). --output ids: generated ids without the start token and eos. With
--n-best N > 1 each input gives (up to) N lines "INDEX ||| translation ||| score"
(INDEX counts input lines from 0, score has 6 decimals); an empty input line
then gives N lines "INDEX |||  ||| 0.000000", as mt-translate prints.

--hf-clean-up: text output gets Hugging Face's clean_up_tokenization too (drops
the space before . , ! ? and in some English contractions) when
tokenizer_config.json asks for it, as the real OPUS-MT files do; the project's
contract (and the C engine) leave it out.

--margins FILE: one line per input line with the smallest score difference that
decided its search (see mtref.search.SentenceResult); tests use it to tell a
genuine mismatch from a near-tie that float rounding may legitimately flip.

--probe: each stdin line is "SRC_IDS<TAB>PREFIX_IDS" (SRC_IDS end in eos, PREFIX
starts with the decoder start id); for each line OUT.bin receives, as
little-endian float32, the encoder output [src_len, d_model] then the decoder
logits [prefix_len, V_tgt] of a full causal pass (raw: bias included, no masking).
This is the input/output contract of the engine's tests/model-probe.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

from mtref.model import MarianModel  # noqa: E402
from mtref.search import SearchOptions, translate_batch  # noqa: E402
from mtref.tokenizer import MarianTokenizer  # noqa: E402


def parse_args(argv):
    """Command-line options; search defaults come from the model directory."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="model directory (Hugging Face layout)")
    p.add_argument("--beam", type=int, help="beam size (default: num_beams, else 4)")
    p.add_argument("--length-penalty", type=float, help="alpha (default: model's, else 1.0)")
    p.add_argument("--max-length", type=int, help="max decoding steps, eos included")
    p.add_argument("--max-length-factor", type=float, default=0.0,
                   help="also at most floor(F * source ids) + 10 steps; 0 disables")
    p.add_argument("--n-best", type=int, default=1, help="hypotheses printed per input")
    # Decoding controls (mtref.search's module docstring defines them).
    p.add_argument("--sampling-topk", type=int, default=1, help="1: no sampling; 0: whole vocabulary")
    p.add_argument("--sampling-topp", type=float, default=1.0)
    p.add_argument("--sampling-temperature", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0, help="sampling seed (line i draws with index i)")
    p.add_argument("--no-repeat-ngram-size", type=int, default=0)
    p.add_argument("--repetition-penalty", type=float, default=1.0)
    p.add_argument("--min-length", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    p.add_argument("--batch-size", type=int, default=32, help="sentences per batch")
    p.add_argument("--input", choices=["text", "ids"], default="text")
    p.add_argument("--output", choices=["text", "ids"], default="text")
    p.add_argument("--probe", metavar="OUT.bin", help="write encoder outputs and logits")
    p.add_argument("--hf-clean-up", action="store_true",
                   help="also apply Hugging Face's clean_up_tokenization to text output "
                        "(when tokenizer_config.json asks for it, as OPUS-MT's does)")
    p.add_argument("--margins", metavar="FILE",
                   help="also write each line's search decision margin (for tests)")
    args = p.parse_args(argv)
    for name in ("beam", "n_best", "threads", "batch_size", "max_length"):
        value = getattr(args, name)
        if value is not None and value < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    return args


class Reference:
    """A loaded model and tokenizer; the CLI's work, callable in-process by tests."""

    def __init__(self, model_dir, hf_clean_up=False):
        self.model = MarianModel(model_dir)
        self.cfg = self.model.cfg
        self.tokenizer = MarianTokenizer(model_dir, self.cfg, hf_clean_up)

    def probe(self, lines):
        """--probe: encoder output then full-prefix logits per line, as float32 LE bytes."""
        chunks = []
        for number, line in enumerate(lines, 1):
            try:
                src_text, prefix_text = line.rstrip("\n").split("\t")
                src = torch.tensor([[int(x) for x in src_text.split()]])
                prefix = torch.tensor([[int(x) for x in prefix_text.split()]])
            except ValueError:
                raise ValueError(f"probe line {number}: expected 'SRC_IDS<TAB>PREFIX_IDS'")
            pad = torch.zeros(src.shape, dtype=torch.bool)
            with torch.no_grad():
                enc = self.model.encode(src, pad)
                logits = self.model.decoder_logits(enc, pad, prefix)
            chunks.append(enc[0].numpy().astype("<f4").tobytes())
            chunks.append(logits[0].numpy().astype("<f4").tobytes())
        return b"".join(chunks)

    def search_options(self, args):
        """SearchOptions from the command line, falling back to the model's defaults."""
        cfg = self.cfg
        opts = SearchOptions(
            beam_size=args.beam or cfg.num_beams,
            length_penalty=(args.length_penalty if args.length_penalty is not None
                            else cfg.length_penalty),
            max_length=args.max_length or cfg.max_length,
            max_length_factor=args.max_length_factor,
            n_best=args.n_best,
            sampling_topk=args.sampling_topk, sampling_topp=args.sampling_topp,
            sampling_temperature=args.sampling_temperature, seed=args.seed,
            no_repeat_ngram_size=args.no_repeat_ngram_size,
            repetition_penalty=args.repetition_penalty, min_length=args.min_length,
            bad_ids=[i for i in cfg.bad_words_ids if 0 <= i < cfg.decoder_vocab_size])
        if opts.n_best > opts.beam_size:
            raise ValueError(f"--n-best {opts.n_best} exceeds the beam size {opts.beam_size}")
        return opts

    def source_ids(self, lines, args):
        """Source id lists (ending in eos) per non-empty input line, keyed by line index."""
        sources = {}
        for index, line in enumerate(lines):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            if args.input == "ids":
                ids = [int(x) for x in line.split()] + [self.cfg.eos_id]
            else:
                ids = self.tokenizer.encode(line)
            if len(ids) > self.cfg.max_positions:
                raise ValueError(f"line {index + 1}: {len(ids)} source ids exceed "
                                 f"max_position_embeddings {self.cfg.max_positions}")
            sources[index] = ids
        return sources

    def translate(self, lines, args):
        """Output lines per input line (one, or n-best lines) and each line's decision margin.

        Inputs are sorted by length into batches so each batch pads little;
        results go back by line index. Empty lines give [""] and margin None.
        """
        opts = self.search_options(args)
        sources = self.source_ids(lines, args)
        order = sorted(sources, key=lambda i: len(sources[i]))
        results = {}
        with torch.no_grad():
            for start in range(0, len(order), args.batch_size):
                batch = order[start:start + args.batch_size]
                opts.sentence_index = batch  # samples depend on the line, not the batch
                found = translate_batch(self.model, [sources[i] for i in batch], opts)
                results.update(zip(batch, found))
        outputs, margins = [], []
        for index in range(len(lines)):
            result = results.get(index)
            outputs.append(self.format(index, result, args))
            margins.append(result.margin if result else None)
        return outputs, margins

    def format(self, index, result, args):
        """The output line(s) of one input line; result is None for an empty line."""
        def render(hyp):
            if args.output == "ids":
                return " ".join(str(i) for i in hyp.ids)
            return self.tokenizer.decode(hyp.ids)
        if args.n_best == 1:
            return [render(result.hyps[0]) if result and result.hyps else ""]
        if result is None:  # nothing to translate: n_best empty entries, as mt-translate
            return [f"{index} |||  ||| {0.0:.6f}"] * args.n_best
        return [f"{index} ||| {render(h)} ||| {h.score:.6f}" for h in result.hyps]


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    ref = Reference(args.model, args.hf_clean_up)
    lines = sys.stdin.readlines()
    try:
        if args.probe:
            with open(args.probe, "wb") as out:
                out.write(ref.probe(lines))
            return 0
        outputs, margins = ref.translate(lines, args)
    except ValueError as e:
        raise SystemExit(f"reference.py: {e}")
    sys.stdout.write("".join(line + "\n" for group in outputs for line in group))
    sys.stdout.flush()
    if args.margins:
        with open(args.margins, "w") as f:
            f.write("".join("\n" if m is None else f"{m:.9g}\n" for m in margins))
    return 0


if __name__ == "__main__":
    sys.exit(main())
