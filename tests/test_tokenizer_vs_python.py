#!/usr/bin/python3
"""C tokenizer vs python3-sentencepiece + vocab.json, with MarianTokenizer's rules.

Encode: a leading ">>xxx<<" that the vocabulary has stays one token; the rest goes
through source.spm; each piece maps through vocab.json (missing -> unk id); eos is
appended. Decode: ids -> pieces (vocab.json), eos/pad/unk and ">>xxx<<" dropped,
target.spm DecodePieces, remaining U+2581 -> " ", str.strip().

Runs tokenize-tool (built in MT_BUILD_DIR/tests) on the real OPUS-MT en-pt files in
tests/fixtures over a few hundred varied sentences and random id sequences: 330 Multi30k
lines from $MT_SHARED_DIR/data/multi30k when it is there (said so when it is not), and the
built-in list below either way.
Prints "N passed, M failed"; exits non-zero on any failure.
"""
import gzip
import json
import os
import random
import subprocess
import sys

import sentencepiece as spm

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.environ.get("MT_BUILD_DIR", os.path.join(HERE, "..", "build"))
SHARED = os.environ.get("MT_SHARED_DIR") or os.path.join(HERE, "..", "..", "shared")
MODEL = os.path.join(HERE, "fixtures", "opus-mt-tc-big-en-pt")
MULTI30K = os.path.join(SHARED, "data", "multi30k")
TOOL = os.path.join(BUILD, "tests", "tokenize-tool")


class Reference:
    """MarianTokenizer's rules over python3-sentencepiece and the JSON files."""

    def __init__(self, model_dir):
        def load(name):
            with open(os.path.join(model_dir, name), encoding="utf-8") as f:
                return json.load(f)

        self.vocab = load("vocab.json")
        config, tok_config = load("config.json"), load("tokenizer_config.json")
        assert not tok_config.get("separate_vocabs", False), "test model has one vocabulary"
        self.inv = {i: p for p, i in self.vocab.items()}
        self.unk = self.vocab[tok_config.get("unk_token", "<unk>")]
        self.eos = config["eos_token_id"]
        self.pad = config["pad_token_id"]
        self.src = spm.SentencePieceProcessor(model_file=os.path.join(model_dir, "source.spm"))
        self.tgt = spm.SentencePieceProcessor(model_file=os.path.join(model_dir, "target.spm"))
        self.skip = {self.eos, self.pad, self.unk}
        self.skip |= {i for p, i in self.vocab.items() if is_lang_token(p)}

    def encode(self, text):
        ids = []
        if text.startswith(">>"):
            end = text.find("<<", 3)  # ">>.+?<<" at the start
            if end != -1 and text[: end + 2] in self.vocab:
                ids.append(self.vocab[text[: end + 2]])
                text = text[end + 2 :]
        pieces = self.src.encode(text, out_type=str)
        return ids + [self.vocab.get(p, self.unk) for p in pieces] + [self.eos]

    def decode(self, ids):
        pieces = [self.inv[i] for i in ids if i not in self.skip]
        return self.tgt.decode_pieces(pieces).replace("\u2581", " ").strip()


def is_lang_token(p):
    return len(p) >= 5 and p.startswith(">>") and p.endswith("<<")


def read_lines(name, n):
    path = os.path.join(MULTI30K, name)
    if not os.path.exists(path):
        print(f"note: {path} is absent: its {n} lines left out (the built-in texts still run)")
        return []
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for _, line in zip(range(n), f)]


def sentences():
    texts = read_lines("test_2016_flickr.en.gz", 250)
    texts += read_lines("test_2016_flickr.de.gz", 40)  # umlauts, ß
    texts += read_lines("test_2016_flickr.fr.gz", 40)  # accents, apostrophes
    texts += [
        "", " ", "   \t  ", "\u3000", "\u00a0x\u00a0",
        "Hello world!", "hello   world", "  leading and trailing  ",
        "The café naïve résumé coöperate façade Øresund Ångström",
        "São Paulo, João e a seleção jogaram às 21h30 — ótimo!",
        "Prices: $1,234.56, €7.89, £0.01, ¥100, 50%, 3/4, 1e-9, 2^10 = 1024",
        "Phone +351 912 345 678, ISBN 978-3-16-148410-0, 2024-01-31T12:00:00Z",
        "0123456789 00000 1.0 -42 +7 12:34 1st 2nd 3rd 4th",
        "I ❤️ emoji 😀😃😄 👍🏽 👨‍👩‍👧‍👦 🇵🇹",
        "日本語のテキストと中文文本和한국어 텍스트",
        "Русский текст, Ελληνικά, עברית, العربية, हिन्दी, ไทย",
        "ﬁne ﬂour ｆｕｌｌｗｉｄｔｈ Ｈｅｌｌｏ ① ² ™ … ‘quotes’ “double” «guillemets»",
        "e\u0301 vs \u00e9, a\u0308, zero\u200bwidth, soft\u00adhyphen, bidi\u202etext",
        "tabs\tin\ttext and a form\x0cfeed and a NUL\x00byte",
        "</s> <unk> <pad> <s> literal special tokens",
        ">>por<< Hello world!", ">>pob<<Good morning", ">>por<<", ">>por<<>>pob<< x",
        ">>por<<<< x", ">>>por<< x", ">> por<< x", ">>xyz<< unknown code",
        ">>por <<", "x >>por<< in the middle", ">><< empty code", ">>a<<b",
        "A" * 3000, "word " * 4000, "ab" * 5000 + " end",
        "Mixed CASE and ALL CAPS SENTENCE WITH NUMBERS 123ABC abc123",
        "URLs https://example.com/a/b?c=d&e=f#g and mail a.b@c.de",
        "C:\\path\\to\\file.txt and /usr/local/bin and ~/.config",
        "(parentheses) [brackets] {braces} <angles> \"quotes\" 'single' `back`",
        "!!!??? ... --- *** ### @@@ ~~~ ^^^ ||| \\\\ ///",
    ]
    return texts


INVALID = [
    b"abc\xff", b"\xc0\xaf", b"ok \xed\xa0\x80 x", b"ab\xe2\x82", b"\xf4\x90\x80\x80",
    b"caf\xc3\xa9 \x80", b"\xe0\x80\x80", b"\xf0\x8f\xbf\xbf", b"x" * 100 + b"\xfe",
    b"\xc3\xa9\xc3", b">>por<< \xff",
]


def run_tool(mode, lines):
    data = b"".join(line + b"\n" for line in lines)
    proc = subprocess.run([TOOL, MODEL, mode], input=data, capture_output=True, timeout=300)
    if proc.returncode != 0:
        sys.exit(f"tokenize-tool {mode} failed ({proc.returncode}): "
                 f"{proc.stderr.decode(errors='replace')}")
    out = proc.stdout.decode("utf-8").split("\n")
    assert out[-1] == "", "output does not end with a newline"
    out = [json.loads(x) for x in out[:-1]]
    if len(out) != len(lines):
        sys.exit(f"tokenize-tool {mode}: {len(out)} output lines for {len(lines)} inputs")
    return out


def main():
    if not os.path.exists(TOOL):
        sys.exit(f"missing {TOOL}: build the project first (MT_BUILD_DIR={BUILD})")
    ref = Reference(MODEL)
    passed, failed = 0, 0

    def report(ok, what, got, want):
        nonlocal passed, failed
        if ok:
            passed += 1
            return
        failed += 1
        if failed <= 20:
            print(f"FAIL {what}\n  got:  {str(got)[:300]}\n  want: {str(want)[:300]}")

    # Encode: valid text.
    texts = sentences()
    assert not any("\n" in t for t in texts)
    got = run_tool("encode", [t.encode("utf-8") for t in texts])
    want = [ref.encode(t) for t in texts]
    for t, g, w in zip(texts, got, want):
        report(g == w, f"encode {t[:60]!r}", g, w)

    # Encode: invalid UTF-8 reports the byte where Python's strict decoder stops.
    got = run_tool("encode", INVALID)
    for b, g in zip(INVALID, got):
        try:
            b.decode("utf-8")
            report(False, f"invalid {b[:20]!r}", g, "python accepts it")
            continue
        except UnicodeDecodeError as e:
            w = {"error": f"invalid UTF-8 at byte {e.start}"}
        report(g == w, f"invalid {b[:20]!r}", g, w)

    # Decode: the encodings above, then random id sequences (specials mixed in).
    rng = random.Random(1234)
    seqs = [w for w in want if len(w) < 2000]
    ids_all = sorted(ref.inv)
    for _ in range(300):
        n = rng.randint(0, 40)
        seq = [rng.choice(ids_all) for _ in range(n)]
        for _ in range(rng.randint(0, 3)):
            seq.insert(rng.randint(0, len(seq)), rng.choice(sorted(ref.skip)))
        seqs.append(seq)
    got = run_tool("decode", [" ".join(map(str, s)).encode() for s in seqs])
    for s, g in zip(seqs, got):
        w = ref.decode(s)
        report(g == w, f"decode {s[:12]}", g, w)

    # Decode: ids outside the vocabulary are errors.
    bad = [[len(ref.inv)], [-1], [25006, 10**6]]
    got = run_tool("decode", [" ".join(map(str, s)).encode() for s in bad])
    for s, g in zip(bad, got):
        report(isinstance(g, dict) and "not in the target vocabulary" in g.get("error", ""),
               f"decode out of range {s}", g, "an error")

    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
