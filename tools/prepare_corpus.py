#!/usr/bin/python3
"""Build the training mixture for a bundled English<->X model pair from ../shared/data.

Writes, into OUT_DIR, gzip text files with one sentence a line, line-aligned (X is
--lang, de or fr):
  train.en.gz / train.X.gz    the mixture, shuffled with --seed
  valid.en.gz / valid.X.gz    the selection set (checkpoint choice during training)
  spm.txt                     a sample of the distinct training sentences (vocabulary)
  mixture.json                counts per corpus, so a model card can quote them, and the
                              files of --extra corpora (tools/training_record.py copies it
                              into the model directories as the record of their data)
  spm.model                   the joint SentencePiece unigram vocabulary (--vocab-size
                              pieces, Marian ids </s>=0 <unk>=1), trained on spm.txt

The mixture (why: see models/README.md):
  Multi30k train     xN  image captions (--multi30k-times, default 0: its terms are
                         non-commercial; the en-de models shipped so far had 3)
  Tatoeba train      xN  everyday conversational sentences, the language newcomers try
  debian-l10n train  x1  software messages, help text, package descriptions, Ding
  number copies      pairs whose numbers agree, with random numbers in their place
                     (--number-pairs; see number_pairs)
Pairs whose two sides hold different numbers ("256 Samples" / "255 échantillons") are
dropped (--keep-number-mismatch keeps them).
Training pairs with a side that also occurs in an evaluation set (Multi30k val/test,
Tatoeba dev, debian-l10n dev, tools/data/*.en-X.tsv; compared case- and
space-insensitively) are dropped.
Every sentence is NFC-normalised and its space characters (no-break, narrow no-break,
thin, tabs) become plain spaces, as the vocabulary's normaliser does at translation time.
The selection set takes a seeded sample of the dev splits (--valid-per-corpus pairs
each; Multi30k val only when Multi30k is trained on). Both directions use the same
files, swapped.

The vocabulary has byte fallback: a character it lacks (an emoji, a rare symbol) is
spelled as its UTF-8 bytes (<0xE2> <0x82> <0xAC> for the euro sign) instead of <unk>,
so the model can copy it. Its normaliser composes NFC and maps space characters to a
space but, unlike SentencePiece's default NFKC, leaves symbols as they are (™, ½, ²,
… would otherwise become TM, 1⁄2, 2, ...). Digits are split into single pieces, so
numbers are copied digit by digit.
"""
import argparse
import glob
import gzip
import json
import os
import random
import re
import unicodedata
from collections import Counter

import sentencepiece as spm

# Space characters the normaliser maps to U+0020 (Python's str.isspace() set, less
# the line breaks a one-line sentence cannot hold anyway).
SPACES = [0x09, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x1F, 0x85, 0xA0, 0x1680] + \
    list(range(0x2000, 0x200B)) + [0x2028, 0x2029, 0x202F, 0x205F, 0x3000]
# Removed from training text (the shared corpora already removed them from theirs).
INVISIBLE = re.compile("[\u00ad\u200b\u200c\u200d\u2060\ufeff]")
SPACE_RUN = re.compile("[" + "".join(chr(c) for c in SPACES) + " ]+")


def clean(text):
    """NFC, invisible characters removed, every run of spaces one plain space."""
    text = unicodedata.normalize("NFC", INVISIBLE.sub("", text))
    return SPACE_RUN.sub(" ", text).strip()


def eval_key(text):
    return " ".join(clean(text).casefold().split())


# Symbols for the copy examples: a sample of every emoji block (so every byte value of
# their UTF-8 reaches training) and common symbols, some with variation selector 16.
EMOJI_RANGES = [(0x1F300, 0x1F5FF), (0x1F600, 0x1F64F), (0x1F680, 0x1F6FF),
                (0x1F900, 0x1F9FF), (0x1FA70, 0x1FAFF), (0x2600, 0x26FF), (0x2700, 0x27BF)]
SYMBOLS = list("€£¥$¢©®™°±×÷½¼¾²³µ§¶†‡•→←↑↓⇒✓✔✗✘★☆♥♪♫☺☹☀☁☂☕⚠∞≈≠≤≥√∑πΩ…‰′″")
WORD = re.compile(r"^[A-Z0-9][\w.,:-]*$")


def random_symbol(rng):
    if rng.random() < 0.35:
        return rng.choice(SYMBOLS)
    while True:
        lo, hi = rng.choice(EMOJI_RANGES)
        c = chr(rng.randint(lo, hi))
        if unicodedata.category(c) == "So":
            return c + ("\ufe0f" if lo < 0x2800 and rng.random() < 0.3 else "")


def with_symbol(en, x, rng):
    """The pair with one symbol or emoji copied into both sides at the same place: at
    the end, at the start, after a word both sides share (a name or a number), or in
    place of it. None when the pair offers no shared word for the last two."""
    sym = random_symbol(rng)
    mode = rng.random()
    if mode < 0.4:
        return f"{en} {sym}", f"{x} {sym}"
    if mode < 0.55:
        return f"{sym} {en}", f"{sym} {x}"
    a, b = en.split(" "), x.split(" ")
    shared = [w for w in set(a) & set(b) if WORD.match(w) and a.count(w) == 1 and b.count(w) == 1]
    if not shared:
        return None
    w = rng.choice(sorted(shared))
    i, j = a.index(w), b.index(w)
    if mode < 0.8:
        a.insert(i + 1, sym)
        b.insert(j + 1, sym)
    else:
        a[i] = b[j] = sym
    return " ".join(a), " ".join(b)


def symbol_pairs(pairs, n, rng):
    """n copy examples made from a seeded sample of pairs of two or more words."""
    out = []
    pool = [p for p in pairs if " " in p[0]]
    while len(out) < n and pool:
        got = with_symbol(*rng.choice(pool), rng)
        if got is not None:
            out.append(got)
    return out


DIGITS = re.compile(r"\d+")
# Digits that belong to a placeholder or markup (%1, %2$s, {0}, $1, &#39;) are not numbers.
NOT_NUMBER = re.compile(r"[%{$&#\\]")


def numbers_of(text):
    return Counter(DIGITS.findall(text))


# Times, for numbers_disagree: the same clock time written the English 12-hour way and
# the German or French 24-hour way ("6:55 pm" / "18:55 Uhr", "9am" / "09:00 Uhr",
# "7 p.m." / "19 h") is one number, not two that disagree. am/pm is read on the English
# side only (German "am" is a word: "12 am Ende"); a time without am/pm stays as written
# ("6:30" / "18:30 Uhr" is not clearly the same time, and stays a mismatch).
EN_12H = re.compile(r"\b(\d{1,2})(?:[:.](\d\d))?\s*([ap])\.?\s?m\b\.?", re.I)
EN_OCLOCK = re.compile(r"\b(\d{1,2}) o'clock\b", re.I)
CLOCK = re.compile(r"\b(\d{1,2}):(\d\d)\b(?:\s*(?:Uhr|h)\b)?")
# A list or range whose last time alone carries the am/pm or "Uhr" ("7 and 9pm", "14 und
# 17 Uhr", "von 11.30 bis 21.00 Uhr"): each of its times gets it (list_times).
EN_LIST = re.compile(r"\b(\d{1,2}(?::\d\d)?)(\s*(?:,\s*(?:and\s|or\s)?|\s(?:and|or|to)\s|[-–])\s*)"
                     r"(?=\d{1,2}(?::\d\d)?\s*([ap])\.?\s?m\b)", re.I)
X_LIST = re.compile(r"\b(\d{1,2}(?:[.:]\d\d)?)(\s*(?:,\s*|\s(?:und|oder|bis)\s|[-–])\s*)"
                    r"(?=\d{1,2}(?:[.:]\d\d)?\s*(Uhr)\b)")
X_TIMES = [re.compile(r"\b(\d{1,2})[.:](\d\d)\s*Uhr\b"),  # 18.55 Uhr
           re.compile(r"\b(\d{1,2})\s*Uhr\b(?:\s*(\d\d)\b)?"),  # 19 Uhr, 19 Uhr 30
           re.compile(r"\b(\d{1,2})\s?h\s?(\d\d)?\b"),  # 19 h, 19h30, 19 h 30
           re.compile(r"\b(\d{1,2}) heures?(?: (\d\d)\b)?")]


def list_times(pattern, text, suffix):
    """text with the am/pm or "Uhr" of a list's last time written after each of its times
    ("7, 8 and 9pm" -> "7 pm, 8 pm and 9pm"), from the last one back."""
    for _ in range(20):
        new = pattern.sub(lambda g: f"{g.group(1)} {suffix(g.group(3))}{g.group(2)}", text)
        if new == text:
            break
        text = new
    return text


def times_and_numbers(text, english):
    """The numbers of text with each clock time one item ("time", hour, minute), hours of
    English 12-hour times as 24-hour ones; the other runs of digits as numbers_of."""
    times = Counter()
    if english:
        text = list_times(EN_LIST, text, lambda ap: ap.lower() + "m")
    else:
        text = list_times(X_LIST, text, lambda uhr: uhr)

    def add(h, m):
        h, m = int(h), int(m or 0)
        if h > 24 or m > 59:
            return None
        times[("time", h, m)] += 1
        return " "
    if english:
        def twelve(g):
            h = int(g.group(1))
            if not 1 <= h <= 12:
                return g.group(0)
            h = h % 12 + (12 if g.group(3).lower() == "p" else 0)
            return add(h, g.group(2)) or g.group(0)
        text = EN_12H.sub(twelve, text)
        text = EN_OCLOCK.sub(lambda g: add(g.group(1), 0) or g.group(0), text)
    patterns = [CLOCK] if english else [X_TIMES[0], CLOCK] + X_TIMES[1:]
    for pattern in patterns:
        text = pattern.sub(lambda g: add(g.group(1), g.group(2)) or g.group(0), text)
    return times + numbers_of(text)


def numbers_disagree(en, x):
    """True when both sides hold digits but not the same numbers (each maximal run of
    digits, as tools/eval_models.py's numbers check counts them): "256 Samples" /
    "255 échantillons". A side without digits may spell the number out ("2 modes" /
    "deux modes"), which is a translation, not an error. Clock times count as the same
    when they are the same time (times_and_numbers): "7 pm" / "19 Uhr" agree, "7 pm" /
    "18 Uhr" do not."""
    a, b = numbers_of(en), numbers_of(x)
    if not a or not b or a == b:
        return False
    return times_and_numbers(en, True) != times_and_numbers(x, False)


def random_number(rng):
    """Digits in the shapes numbers take in text: small counts, prices, times, years,
    phone and version numbers (the leading digit nonzero except for a lone 0)."""
    n = rng.choices([1, 2, 3, 4, 5, 6], weights=[25, 30, 15, 20, 6, 4])[0]
    if n == 4 and rng.random() < 0.6:
        return str(rng.randint(1900, 2039))  # a year
    first = str(rng.randint(1, 9)) if n > 1 else str(rng.randint(0, 9))
    return first + "".join(str(rng.randint(0, 9)) for _ in range(n - 1))


def numbers_copyable(en, x):
    """The pair holds numbers, the same on both sides, none of them in a placeholder."""
    a = numbers_of(en)
    return bool(a) and a == numbers_of(x) and not NOT_NUMBER.search(en) \
        and not NOT_NUMBER.search(x)


def with_numbers(en, x, rng):
    """The pair (numbers_copyable) with each of its numbers replaced by a random one,
    the same on both sides."""
    a = numbers_of(en)
    new = {}
    for old in a:
        while True:
            got = random_number(rng)
            if got not in new.values() and got not in a:
                break
        new[old] = got
    sub = lambda m: new[m.group(0)]  # noqa: E731
    return DIGITS.sub(sub, en), DIGITS.sub(sub, x)


def number_pairs(pairs, n, rng):
    """n copy examples: pairs whose numbers agree, each number replaced by a random
    one on both sides. With split digits a number is a run of one-digit pieces that
    the model must copy in order; the corpora hold few numbers (Tatoeba spells most of
    them out, debian-l10n's are mostly 1, 2 and years), and a model trained on them
    alone dropped or changed 80 % of the numbers of tools/data/numbers.en-fr.tsv."""
    pool = [p for p in pairs if numbers_copyable(*p)]
    return [with_numbers(*rng.choice(pool), rng) for _ in range(n if pool else 0)]


def train_vocabulary(text_path, prefix, vocab_size, byte_fallback, hard_limit=True):
    """PREFIX.model: a unigram vocabulary with Marian's ids (</s> 0, <unk> 1, no bos or
    pad), with byte fallback, NFC normaliser and split digits unless byte_fallback is
    false (the shipped en-de models' vocabulary: NFKC, every character a piece)."""
    opts = dict(input=text_path, model_prefix=prefix, vocab_size=vocab_size,
                model_type="unigram", bos_id=-1, eos_id=0, unk_id=1, pad_id=-1,
                input_sentence_size=0, minloglevel=1, num_threads=2,
                hard_vocab_limit=hard_limit)
    if byte_fallback:
        rules = prefix + ".normalization.tsv"
        write_normalization_rules(rules)
        # Characters outside 99.99 % coverage are left to the byte pieces.
        opts.update(character_coverage=0.9999, byte_fallback=True, split_digits=True,
                    normalization_rule_tsv=rules)
    else:
        opts.update(character_coverage=1.0)
    spm.SentencePieceTrainer.train(**opts)


def write_normalization_rules(path):
    """SentencePiece rules (hex code points, TAB, hex code points): NFC composition of
    every decomposed sequence, and space characters to U+0020. NFKC's compatibility
    mappings are left out on purpose."""
    with open(path, "w", encoding="utf-8") as f:
        for cp in range(0x110000):
            if 0xD800 <= cp < 0xE000:
                continue
            c = chr(cp)
            d = unicodedata.normalize("NFD", c)
            if d != c and unicodedata.normalize("NFC", d) == c:
                f.write(" ".join(f"{ord(x):X}" for x in d) + f"\t{cp:X}\n")
        for cp in SPACES:
            f.write(f"{cp:X}\t20\n")


def read_pairs_tsv(path):
    """(en, X) pairs of a shared TSV file (en, X, source...)."""
    pairs = []
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            if len(cols) >= 2:
                e, x = clean(cols[0]), clean(cols[1])
                if e and x:
                    pairs.append((e, x))
    return pairs


def read_pairs_parallel(src, tgt):
    with gzip.open(src, "rt", encoding="utf-8") as a, gzip.open(tgt, "rt", encoding="utf-8") as b:
        en = [x.rstrip("\n") for x in a]
        de = [x.rstrip("\n") for x in b]
    if len(en) != len(de):
        raise SystemExit(f"{src} and {tgt} differ in line count ({len(en)} vs {len(de)})")
    pairs = [(clean(e), clean(d)) for e, d in zip(en, de)]
    return [(e, d) for e, d in pairs if e and d]


def tsv_keys(paths):
    """Both sides of every English<TAB>X line of the files, as eval_key compares them."""
    keys = set()
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for line in f:
                keys.update(eval_key(t) for t in line.rstrip("\n").split("\t")[:2])
    return keys


def local_eval_keys(x, held_out=()):
    """Both sides of the evaluation sets written here (tools/data/*.en-X.tsv: everyday,
    numbers, emoji, long) and of the files held_out names (the news dev set that
    tools/corpus/news_dev.py extracts)."""
    return tsv_keys(glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                                           f"*.en-{x}.tsv")) + list(held_out))


def add_held_out_option(parser):
    parser.add_argument("--held-out", action="append", default=None, metavar="TSV",
                        help="another evaluation set (English<TAB>X lines) whose sentences no "
                             "training pair may contain; repeatable (default: runs/eval/*.en-X.tsv, "
                             "the news dev set of tools/corpus/news_dev.py, where it exists)")


def held_out_files(parser, given, x):
    """--held-out's files: those given, else runs/eval/*.en-X.tsv where present; a named
    file that does not exist is a usage error."""
    paths = given if given is not None else sorted(glob.glob(os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "runs", "eval", f"*.en-{x}.tsv")))
    for path in paths:
        if not os.path.isfile(path):
            parser.error(f"--held-out {path}: no such file")
    return paths


def write_lines(path, lines):
    with gzip.open(path + ".tmp", "wt", encoding="utf-8", compresslevel=3) as f:
        for line in lines:
            f.write(line + "\n")
    os.replace(path + ".tmp", path)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--shared", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared"))
    p.add_argument("--out", required=True)
    p.add_argument("--lang", default="de", choices=["de", "fr"],
                   help="the language paired with English")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--multi30k-times", type=int, default=0,
                   help="copies of Multi30k (non-commercial terms: 0, the default, for a model "
                        "others may use; the en-de models shipped so far had 3)")
    p.add_argument("--tatoeba-times", type=int, default=2)
    p.add_argument("--debian-times", type=int, default=1)
    p.add_argument("--debian-fraction", type=float, default=1.0,
                   help="keep this seeded share of debian-l10n's pairs (the data pack for a "
                        "GPU machine must fit its 64 MiB transfer: training/README.md)")
    p.add_argument("--extra", action="append", default=[], metavar="PATH[:TIMES]",
                   help="a further corpus (gzip TSV: en, X, source; tools/corpus/ makes "
                        "them) and its copies in the mixture (default 1); repeatable")
    p.add_argument("--valid-per-corpus", type=int, default=500)
    p.add_argument("--vocab-size", type=int, default=16000)
    p.add_argument("--spm-sentences", type=int, default=1500000,
                   help="distinct sentences sampled (seeded) for vocabulary training")
    p.add_argument("--symbol-pairs", type=int, default=20000,
                   help="copy examples (an emoji or symbol on both sides) made from each of "
                        "Tatoeba and debian-l10n; 0 with --no-byte-fallback")
    p.add_argument("--number-pairs", type=int, default=40000,
                   help="copy examples with random numbers (number_pairs), made from the "
                        "distinct pairs of every corpus whose numbers agree")
    p.add_argument("--keep-number-mismatch", action="store_true",
                   help="keep the pairs whose two sides hold different numbers (dropped "
                        "by default: numbers_disagree)")
    p.add_argument("--no-byte-fallback", action="store_true",
                   help="the vocabulary of the en-de models trained so far: NFKC, "
                        "no byte fallback, digits not split")
    add_held_out_option(p)
    p.add_argument("--skip-vocab", action="store_true",
                   help="write no vocabulary (a continued run keeps its model's own)")
    args = p.parse_args()
    data = os.path.join(args.shared, "data")
    rng = random.Random(args.seed)
    sym_rng = random.Random(args.seed + 1000)

    x = args.lang
    dev = {
        "multi30k val": read_pairs_parallel(f"{data}/multi30k/val.en.gz", f"{data}/multi30k/val.{x}.gz"),
        "tatoeba dev": read_pairs_tsv(f"{data}/tatoeba/dev.en-{x}.tsv.gz"),
        "debian-l10n dev": read_pairs_tsv(f"{data}/debian-l10n/dev.en-{x}.tsv.gz"),
    }
    # Every evaluation sentence, either language: no training pair may contain one.
    held = [read_pairs_parallel(f"{data}/multi30k/test_2016_flickr.en.gz",
                                f"{data}/multi30k/test_2016_flickr.{x}.gz")] + list(dev.values())
    held_keys = {eval_key(t) for pairs in held for pair in pairs for t in pair}
    held_out = held_out_files(p, args.held_out, x)
    held_keys |= local_eval_keys(x, held_out)

    corpora = {
        "multi30k": (f"{data}/multi30k/train.en.gz", f"{data}/multi30k/train.{x}.gz",
                     args.multi30k_times),
        "tatoeba": (f"{data}/tatoeba/train.en-{x}.tsv.gz", None, args.tatoeba_times),
        "debian-l10n": (f"{data}/debian-l10n/train.en-{x}.tsv.gz", None, args.debian_times),
    }
    for spec in args.extra:
        path, _, times = spec.partition(":")
        name = os.path.basename(path).split(".")[0]
        corpora[name] = (path, None, int(times or 1))
    mixture, distinct, counts = [], set(), {}
    copies = []  # the made-up pairs (symbol and number copies), also in copies.tsv.gz
    for name, (path, path_x, times) in corpora.items():
        if times == 0:
            continue
        pairs = read_pairs_parallel(path, path_x) if path_x else read_pairs_tsv(path)
        kept = [(e, t) for e, t in pairs if eval_key(e) not in held_keys
                and eval_key(t) not in held_keys]
        in_eval = len(pairs) - len(kept)
        mismatched = 0
        if not args.keep_number_mismatch:
            n = len(kept)
            kept = [(e, t) for e, t in kept if not numbers_disagree(e, t)]
            mismatched = n - len(kept)
        if name == "debian-l10n" and args.debian_fraction < 1.0:
            kept = random.Random(args.seed + 3000).sample(kept, round(len(kept) * args.debian_fraction))
        mixture.extend(kept * times)
        distinct.update(kept)
        if name in ("tatoeba", "debian-l10n") and not args.no_byte_fallback and args.symbol_pairs:
            # Byte pieces the model never saw it cannot copy: emoji and symbols are
            # almost absent from the corpora, so a few examples teach the copying.
            extra = symbol_pairs(kept, args.symbol_pairs, sym_rng)
            mixture.extend(extra)
            copies.extend(extra)
            counts[f"{name} symbol copies"] = {"pairs": len(extra), "times": 1}
        counts[name] = {"pairs": len(kept), "dropped_as_eval_sentences": in_eval,
                        # an --extra corpus's file: eval_models.py reads a model's
                        # training sentences from it (training_record.py)
                        **({"path": path} if path_x is None and name not in
                           ("tatoeba", "debian-l10n") else {}),
                        **({"fraction_kept": args.debian_fraction}
                           if name == "debian-l10n" and args.debian_fraction < 1.0 else {}),
                        "dropped_numbers_disagree": mismatched, "times": times, "en_words": sum(len(e.split()) for e, _ in kept),
                        f"{x}_words": sum(len(t.split()) for _, t in kept)}
    if args.number_pairs:
        extra = number_pairs(sorted(distinct), args.number_pairs, random.Random(args.seed + 2000))
        mixture.extend(extra)
        copies.extend(extra)
        counts["number copies"] = {"pairs": len(extra), "times": 1}
    rng.shuffle(mixture)

    if args.multi30k_times == 0:
        del dev["multi30k val"]
    valid = []
    for name, pairs in dev.items():
        valid.extend(rng.sample(pairs, min(args.valid_per_corpus, len(pairs))))

    os.makedirs(args.out, exist_ok=True)
    write_lines(os.path.join(args.out, "train.en.gz"), [e for e, _ in mixture])
    write_lines(os.path.join(args.out, f"train.{x}.gz"), [t for _, t in mixture])
    # pack_training_data.py --omit-copies leaves these out of a pack and has them made
    # again where the pack is unpacked (the same functions, its own seed).
    write_lines(os.path.join(args.out, "copies.tsv.gz"), [f"{e}\t{t}" for e, t in copies])
    write_lines(os.path.join(args.out, "valid.en.gz"), [e for e, _ in valid])
    write_lines(os.path.join(args.out, f"valid.{x}.gz"), [t for _, t in valid])
    # Vocabulary text: a seeded sample of the distinct sentences, so that
    # upsampling does not skew the piece inventory towards one corpus.
    texts = sorted({t for pair in distinct for t in pair})
    rng.shuffle(texts)
    texts = texts[: args.spm_sentences]
    with open(os.path.join(args.out, "spm.txt.tmp"), "w", encoding="utf-8") as f:
        for t in texts:
            f.write(t + "\n")
    os.replace(os.path.join(args.out, "spm.txt.tmp"), os.path.join(args.out, "spm.txt"))
    byte_fallback = not args.no_byte_fallback
    with open(os.path.join(args.out, "mixture.json"), "w", encoding="utf-8") as f:
        json.dump({"seed": args.seed, "pair": f"en-{x}", "corpora": counts,
                   "train_pairs": len(mixture), "valid_pairs": len(valid),
                   "valid_sets": list(dev), "spm_sentences": len(texts),
                   "byte_fallback": byte_fallback}, f, indent=2)
        f.write("\n")
    if args.skip_vocab:
        print(json.dumps(counts), len(mixture), "pairs;", len(valid), "valid; no vocabulary")
        return
    train_vocabulary(os.path.join(args.out, "spm.txt"), os.path.join(args.out, "spm"),
                     args.vocab_size, byte_fallback)
    print(json.dumps(counts), len(mixture), "pairs;", len(valid), "valid;", len(texts), "spm lines")


if __name__ == "__main__":
    main()
