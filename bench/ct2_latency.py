#!/usr/bin/python3
"""CTranslate2 one sentence at a time, timed one by one (bench_peers.py's batch-1 rows).

  ct2_latency.py CT2_DIR TOKENIZER_DIR COMPUTE_TYPE THREADS BEAM MAX_LENGTH < lines > out

Prints each translation and, at the end, one JSON line on stderr:
{"load_s": ..., "latency_ms": [...]} (tokenization included in each sentence's time, as
latency-tool's service call includes ours). A benchmark helper for the peer in
../shared/peers/ctranslate2; nothing in the product uses it."""
import json
import os
import sys
import time

SHARED = os.environ.get("MT_SHARED_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                                      "shared"))
sys.path.insert(0, os.path.join(SHARED, "peers", "ctranslate2", "python"))
import ctranslate2  # noqa: E402
import sentencepiece as spm  # noqa: E402


def main():
    model, tok, ctype, threads, beam, max_len = sys.argv[1:7]
    t0 = time.perf_counter()
    src = spm.SentencePieceProcessor(model_file=os.path.join(tok, "source.spm"))
    tgt = spm.SentencePieceProcessor(model_file=os.path.join(tok, "target.spm"))
    tr = ctranslate2.Translator(model, device="cpu", compute_type=ctype, intra_threads=int(threads))
    load = time.perf_counter() - t0
    lat = []
    out = []
    for line in sys.stdin.read().splitlines():
        s = time.perf_counter()
        r = tr.translate_batch([src.encode(line, out_type=str)], max_batch_size=1, beam_size=int(beam),
                               max_decoding_length=int(max_len))
        out.append(tgt.decode_pieces(r[0].hypotheses[0]))
        lat.append((time.perf_counter() - s) * 1e3)
    sys.stdout.write("".join(o + "\n" for o in out))
    print(json.dumps({"load_s": round(load, 4), "latency_ms": [round(x, 3) for x in lat]}), file=sys.stderr)


if __name__ == "__main__":
    main()
