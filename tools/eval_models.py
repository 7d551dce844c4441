#!/usr/bin/python3
"""One quality table for English<->German and English<->French models: BLEU and chrF on
Multi30k test_2016_flickr, the debian-l10n and Tatoeba dev splits and our everyday
sentences (all of them, and "everyday-unseen": the pairs neither of whose sentences
occurs in the model's training corpora; common short sentences such as "I don't know."
are also Tatoeba or debian-l10n lines), news (news-dev); the numbers check, the emoji
check, and the scores by sentence length.

  tools/eval_models.py NAME=DIR [NAME=DIR ...] [--beam 4] [--threads 2] [--sets ...]
                       [--show-examples] [--no-buckets] [--eval-dir runs/eval]

Each DIR is a model directory whose tokenizer_config.json names its pair (en-de, de-en,
en-fr or fr-en); every set is read in the matching direction. Sets (--sets, comma-
separated; a set a language lacks shows "n/a"):

  multi30k-test    Multi30k test_2016_flickr, 1,000 image captions (out of domain for
                   models that do not train on Multi30k)
  debian-dev       debian-l10n dev, 2,000 software and help sentences
  tatoeba-dev      Tatoeba dev, everyday sentences
  everyday         tools/data/everyday.en-X.tsv, written for this evaluation
  everyday-unseen  its pairs neither of whose sentences is a line of the corpora the
                   model was trained on: those its record (DIR/mixture.json, written by
                   tools/build_bundled_models.sh: tools/training_record.py) names, else
                   prepare_corpus.py's defaults, Tatoeba and debian-l10n train; Multi30k
                   only when the record names it ("n/a" when a corpus file is missing)
  long             tools/data/long.en-X.tsv: documentation sentences of 26-50 words from
                   manual pages and the Debian Administrator's Handbook pages that
                   tools/corpus/ holds out of training (tools/corpus/long_dev.py)
  news-dev         runs/eval/news-dev.en-X.tsv (--eval-dir): news: the first 988 lines
                   (62 articles) of NTREX-128, newstest2019's English with professional
                   German and French translations, that tools/corpus/news_dev.py writes
                   from a fetched snapshot (not kept in the repository); evaluation only
  numbers          tools/data/numbers.en-X.tsv: sentences with numbers, prices, times
                   and dates; the cell gives the share of the source's numbers that the
                   output has, and the sentences with all of them; the issue asks >= 98 %.
                   A number is a maximal run of digits, once times in words are digits
                   ("half past seven", "halb acht", "sept heures et demie": 7 30) and
                   12-hour times 24-hour ("8 pm": 20), and the month of a date counts
                   too ("14 March 2025": 14, 2025, month 3)
  emoji            tools/data/emoji.en-X.tsv: sentences with emoji and symbols; the share
                   of the source's symbols (characters of Unicode category S*, emoji
                   sequences whole, variation selector 16 ignored) that come back, and
                   the sentences with all of them; the issue asks 100 %

The length table pools the BLEU sets evaluated (not numbers and emoji) and splits their
sentences by source words: 1-10, 11-25, 26-50, over 50. Translation is done by the C
engine (`mt-translate` in $MT_BUILD_DIR, default build/); scores by tools/bleu.py
(sacreBLEU-compatible 13a BLEU and chrF). Example, old against new:

  git archive HEAD~N models | tar -x -C /tmp/old
  tools/eval_models.py old-en-de=/tmp/old/models/en-de new-en-de=models/en-de \\
                       old-de-en=/tmp/old/models/de-en new-de-en=models/de-en
"""
import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import time
import unicodedata
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bleu  # noqa: E402
import training_record  # noqa: E402

SHARED = os.environ.get("MT_SHARED_DIR", os.path.join(HERE, "..", "..", "shared"))
# The sentences a newcomer types first; each must come out exactly right.
MUST_BE_RIGHT = ["I love you.", "How much does this cost?", "Where is the train station?"]
DATA = os.path.join(HERE, "data")
EVERYDAY = os.path.join(DATA, "everyday.en-de.tsv")
# Sets made from data outside the repository (tools/corpus/news_dev.py writes news-dev).
EVAL_DIR = os.path.join(HERE, "..", "runs", "eval")
LANGS = ("de", "fr")
BUCKETS = [(1, 10), (11, 25), (26, 50), (51, None)]
DIGITS = re.compile(r"\d+")
ZWJ, VS16 = "\u200d", "\ufe0f"


def read_gz(path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def read_tsv(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    return [r[0] for r in rows], [r[1] for r in rows]


def corpus_files(name, path, x):
    """The files of a training corpus (one gzip TSV, or Multi30k's two line files): a
    ../shared corpus by name, an --extra corpus by its recorded path (as given, relative to
    the repository, as build_bundled_models.sh runs, or its name under runs/corpus/, where
    build_bundled_models.sh makes it)."""
    d = os.path.join(SHARED, "data")
    if name == "multi30k":
        return [f"{d}/multi30k/train.en.gz", f"{d}/multi30k/train.{x}.gz"]
    if path is None and name in ("tatoeba", "debian-l10n"):
        return [f"{d}/{name}/train.en-{x}.tsv.gz"]
    repo = os.path.dirname(HERE)
    corpus = os.path.join(repo, "runs", "corpus")
    tries = [path, os.path.join(repo, path), os.path.join(corpus, os.path.basename(path))] \
        if path else [os.path.join(corpus, f"{name}.en-{x}.tsv.gz")]
    return [next((t for t in tries if os.path.exists(t)), tries[-1])]


_SEEN = {}


def training_sentences(corpora, x):
    """(English sentences, X sentences) of the corpora ({name: recorded file or None}),
    as sets; raises FileNotFoundError naming a missing file."""
    key = (x, tuple(sorted(corpora.items(), key=lambda kv: kv[0])))
    if key not in _SEEN:
        en, other = set(), set()
        for name, path in sorted(corpora.items()):
            files = corpus_files(name, path, x)
            for f in files:
                if not os.path.exists(f):
                    raise FileNotFoundError(f"{path or f} (training corpus {name}) is missing")
            e, g = (read_gz(files[0]), read_gz(files[1])) if len(files) == 2 else read_tsv(files[0])
            en.update(e)
            other.update(g)
        _SEEN[key] = (en, other)
    return _SEEN[key]


def everyday_unseen(pairs, model_dir, x):
    """(the everyday pairs model_dir has not seen, a line saying how "seen" was decided),
    or (None, why) when a training corpus cannot be read."""
    corpora, how = training_record.trained_corpora(model_dir)
    said = f"seen = {', '.join(sorted(corpora))} ({how})"
    try:
        return unseen(pairs, *training_sentences(corpora, x)), said
    except FileNotFoundError as e:
        return None, f"{said}; n/a: {e}"


SET_NAMES = ("multi30k-test", "debian-dev", "tatoeba-dev", "everyday", "everyday-unseen",
             "long", "news-dev", "numbers", "emoji")
CHECKS = ("numbers", "emoji")  # scored by what they keep, not BLEU


def load_set(name, x, eval_dir=EVAL_DIR):
    """(English lines, X lines) of a set, or None when it has no X version (or, for
    news-dev, when tools/corpus/news_dev.py has not written it into eval_dir)."""
    d = os.path.join(SHARED, "data")
    local = {"everyday": f"everyday.en-{x}.tsv", "everyday-unseen": f"everyday.en-{x}.tsv",
             "numbers": f"numbers.en-{x}.tsv", "emoji": f"emoji.en-{x}.tsv",
             "long": f"long.en-{x}.tsv"}
    if name == "multi30k-test":
        path = f"{d}/multi30k/test_2016_flickr.{x}.gz"
        return (read_gz(f"{d}/multi30k/test_2016_flickr.en.gz"), read_gz(path)) \
            if os.path.exists(path) else None
    if name in ("debian-dev", "tatoeba-dev"):
        path = f"{d}/{name[:-4].replace('debian', 'debian-l10n')}/dev.en-{x}.tsv.gz"
        return read_tsv(path) if os.path.exists(path) else None
    if name == "news-dev":
        path = os.path.join(eval_dir, f"news-dev.en-{x}.tsv")
        return read_tsv(path) if os.path.exists(path) else None
    path = os.path.join(DATA, local[name])
    if not os.path.exists(path):
        return None
    pairs = read_tsv(path)
    return pairs  # everyday-unseen: everyday_unseen() filters it for each model


def unseen(pairs, train_en, train_x):
    kept = [(e, g) for e, g in zip(*pairs) if e not in train_en and g not in train_x]
    return [e for e, _ in kept], [g for _, g in kept]


def translate(model_dir, lines, beam, threads):
    exe = os.path.join(os.environ.get("MT_BUILD_DIR", os.path.join(HERE, "..", "build")),
                       "cli", "mt-translate")
    proc = subprocess.run([exe, "--model", model_dir, "--beam", str(beam), "--threads", str(threads)],
                          input="\n".join(lines) + "\n", capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"mt-translate failed on {model_dir}: {proc.stderr.strip()}")
    out = proc.stdout.split("\n")[: len(lines)]
    if len(out) != len(lines):
        sys.exit(f"mt-translate gave {len(out)} lines for {len(lines)}")
    return out


def pair_of(model_dir):
    with open(os.path.join(model_dir, "tokenizer_config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    return cfg["source_lang"], cfg["target_lang"]


# Times in words, as the hours and minutes they stand for: "half past seven", "halb acht"
# and "sept heures et demie" are all 7:30, so "halb sieben" for "half past seven" (an hour
# early) is a lost number, and "7:30" a kept one. Only the forms that are times whatever
# the context (a bare "sept heures" may be a duration).
HOUR_WORDS = {w: i + 1 for words in ("one two three four five six seven eight nine ten eleven twelve",
                                      "eins zwei drei vier fünf sechs sieben acht neun zehn elf zwölf",
                                      "une deux trois quatre cinq six sept huit neuf dix onze douze")
              for i, w in enumerate(words.split())}
HOUR = r"(\d{1,2}|" + "|".join(sorted(HOUR_WORDS, key=len, reverse=True)) + ")"
# (pattern, minutes, hours to add): "quarter to eight" is 7:45
TIME_PHRASES = [(re.compile(p, re.I), m, dh) for p, m, dh in (
    (rf"\bhalf past {HOUR}\b", 30, 0),
    (rf"\b(?:a )?quarter past {HOUR}\b", 15, 0),
    (rf"\b(?:a )?quarter to {HOUR}\b", 45, -1),
    (rf"\bhalb {HOUR}\b", 30, -1),
    (rf"\bviertel nach {HOUR}\b", 15, 0),
    (rf"\b(?:viertel vor|dreiviertel) {HOUR}\b", 45, -1),
    (rf"\b{HOUR} (?:heures?|h) et demie\b", 30, 0),
    (rf"\b{HOUR} (?:heures?|h) et quart\b", 15, 0),
    (rf"\b{HOUR} (?:heures?|h) moins (?:le )?quart\b", 45, -1))]
# "8 pm" and "8:15 p.m." are 20 and 20:15 (as "20 Uhr" and "20 h 15"); "12 a.m." is 0.
PM = re.compile(r"\b(\d{1,2})((?::\d\d)?\s*)(p\.\s?m\.|pm\b|PM\b)")
AM12 = re.compile(r"\b12((?::\d\d)?\s*)(a\.\s?m\.|AM\b)")  # not "am": German "12 am Ende"
# The month of a date ("14 March 2025", "3. Juni", "1er octobre", "September 2019"):
# a month name next to a number counts as one more number of the sentence.
MONTHS = {"Jänner": 1}
for _names in ("January February March April May June July August September October November "
               "December", "Januar Februar März April Mai Juni Juli August September Oktober "
               "November Dezember", "janvier février mars avril mai juin juillet août septembre "
               "octobre novembre décembre"):
    for _i, _name in enumerate(_names.split()):
        MONTHS[_name] = MONTHS[_name.capitalize()] = _i + 1
_MONTH = "(" + "|".join(sorted(MONTHS, key=len, reverse=True)) + ")"
DATE_MONTH = re.compile(rf"(?:\d(?:\.|er|st|nd|rd|th)? (?:of )?{_MONTH}\b|\b{_MONTH} (?:the )?\d)")


def times_as_digits(text):
    """text with its times in words as digits (TIME_PHRASES) and 12-hour times as 24-hour."""
    for pattern, minutes, dh in TIME_PHRASES:
        def sub(m, minutes=minutes, dh=dh):
            h = m.group(1).lower()
            h = int(h) if h.isdigit() else HOUR_WORDS[h]
            return f"{(h + dh - 1) % 12 + 1 if h <= 12 else h + dh}:{minutes}"
        text = pattern.sub(sub, text)
    text = PM.sub(lambda m: f"{int(m.group(1)) + 12 if int(m.group(1)) < 12 else m.group(1)}"
                            f"{m.group(2)}", text)
    return AM12.sub(lambda m: f"0{m.group(1)}", text)


def numbers_of(text):
    """The numbers of text, as the numbers check counts them: each maximal run of digits
    once times in words and 12-hour times are digits (times_as_digits), and the month of
    each date ("month 3")."""
    got = Counter(DIGITS.findall(times_as_digits(text)))
    got.update(f"month {MONTHS[a or b]}" for a, b in DATE_MONTH.findall(text))
    return got


def numbers_kept(hyps, sources):
    """(numbers of the sources found in the outputs, numbers, sentences with all), numbers
    as numbers_of counts them. A run of digits, so "12,50" and "12.50" both give 12 and 50:
    a changed digit, a dropped number, an hour early or a wrong month counts, a decimal
    separator or the way a time or a date is written does not."""
    found = total = whole = 0
    for hyp, src in zip(hyps, sources):
        want, got = numbers_of(src), numbers_of(hyp)
        n = sum(want.values())
        k = sum((want & got).values())
        found, total, whole = found + k, total + n, whole + (k == n)
    return found, total, whole


def symbols(text):
    """The symbols of text: characters of Unicode category S* (currency, math, other
    symbols, emoji), with the skin-tone modifiers, ZWJ joins and regional-indicator
    pairs that make one emoji kept together; variation selector 16 dropped."""
    out, i = [], 0
    text = text.replace(VS16, "")
    while i < len(text):
        c = text[i]
        if unicodedata.category(c)[0] == "S" or unicodedata.category(c) == "No":
            j = i + 1
            while j < len(text) and (0x1F3FB <= ord(text[j]) <= 0x1F3FF or
                                     (text[j] == ZWJ and j + 1 < len(text)) or
                                     (text[j - 1] == ZWJ)):
                j += 1
            if 0x1F1E6 <= ord(c) <= 0x1F1FF and j < len(text) and 0x1F1E6 <= ord(text[j]) <= 0x1F1FF:
                j += 1  # a flag: two regional indicators
            out.append(text[i:j])
            i = j
        else:
            i += 1
    return out


def symbols_kept(srcs, hyps):
    """(symbols of the sources found in the outputs, symbols, sentences with all)."""
    found = total = whole = 0
    for src, hyp in zip(srcs, hyps):
        want, got = Counter(symbols(src)), Counter(symbols(hyp))
        n = sum(want.values())
        k = sum((want & got).values())
        found, total, whole = found + k, total + n, whole + (k == n)
    return found, total, whole


def bucket_of(line):
    n = len(line.split())
    for lo, hi in BUCKETS:
        if n >= lo and (hi is None or n <= hi):
            return (lo, hi)
    return BUCKETS[0]


def bucket_name(b):
    return f"{b[0]}-{b[1]} words" if b[1] else f"over {b[0] - 1} words"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("models", nargs="+", help="NAME=DIR")
    p.add_argument("--beam", type=int, default=4)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--sets", default="multi30k-test,debian-dev,tatoeba-dev,everyday",
                   help="comma-separated: " + ", ".join(SET_NAMES))
    p.add_argument("--show-examples", action="store_true",
                   help="print the must-be-right sentences' translations, and the first "
                        "emoji sentences' and the numbers sentences' that lose one")
    p.add_argument("--no-buckets", action="store_true", help="no length table")
    p.add_argument("--eval-dir", default=EVAL_DIR,
                   help="where news-dev.en-X.tsv is (default runs/eval of the repository)")
    args = p.parse_args()
    names = args.sets.split(",")
    unknown = [n for n in names if n not in SET_NAMES]
    if unknown:
        sys.exit(f"unknown set {', '.join(unknown)}; sets: {', '.join(SET_NAMES)}")
    models = []
    for spec in args.models:
        name, _, model_dir = spec.partition("=")
        src, tgt = pair_of(model_dir)
        if "en" not in (src, tgt) or ({src, tgt} - {"en"}).pop() not in LANGS:
            sys.exit(f"{model_dir}: pair {src}-{tgt}; this table is for en<->de and en<->fr")
        models.append((name, model_dir, src, tgt))
    sets = {}
    for x in sorted({(m[2] if m[3] == "en" else m[3]) for m in models}):
        for s in names:
            sets[(s, x)] = load_set(s, x, args.eval_dir)
    rows, bucket_rows = [], []
    for name, model_dir, src, tgt in models:
        x = src if tgt == "en" else tgt
        row = [name, f"{src}-{tgt}"]
        pooled = {b: ([], []) for b in BUCKETS}
        for s in names:
            data = sets[(s, x)]
            if s == "everyday-unseen" and data is not None:
                try:
                    data, said = everyday_unseen(data, model_dir, x)
                except ValueError as e:  # a record that is not one
                    sys.exit(str(e))
                print(f"# {name} everyday-unseen: {said}", file=sys.stderr)
            if data is None:
                row.append("n/a")
                continue
            en, other = data
            srcs, refs = (en, other) if src == "en" else (other, en)
            t0 = time.time()
            hyps = translate(model_dir, srcs, args.beam, args.threads)
            print(f"# {name} {s}: {len(srcs)} lines in {time.time() - t0:.1f} s", file=sys.stderr)
            if s == "numbers":
                k, n, whole = numbers_kept(hyps, srcs)
                row.append(f"{100 * k / max(n, 1):.1f} % of {n} ({whole}/{len(srcs)} whole)")
                if args.show_examples:
                    for line, hyp in zip(srcs, hyps):
                        if numbers_kept([hyp], [line])[2] == 0:
                            print(f"#   numbers lost: {line} -> {hyp}", file=sys.stderr)
                continue
            if s == "emoji":
                k, n, whole = symbols_kept(srcs, hyps)
                row.append(f"{100 * k / max(n, 1):.1f} % of {n} ({whole}/{len(srcs)} whole)")
                if args.show_examples:
                    for line, hyp in list(zip(srcs, hyps))[:5]:
                        print(f"#   {line} -> {hyp}", file=sys.stderr)
                continue
            b = bleu.corpus_bleu(hyps, refs).score
            c = bleu.corpus_chrf(hyps, refs)
            row.append(f"{b:.2f} / {c:.2f}")
            if s != "everyday-unseen":  # a subset of everyday: pooled once
                for line, hyp, ref in zip(srcs, hyps, refs):
                    pooled[bucket_of(line)][0].append(hyp)
                    pooled[bucket_of(line)][1].append(ref)
            if s == "everyday" and args.show_examples:
                for line, hyp, ref in zip(srcs, hyps, refs):
                    if line in MUST_BE_RIGHT or (src != "en" and ref in MUST_BE_RIGHT):
                        print(f"#   {line} -> {hyp}", file=sys.stderr)
        rows.append(row)
        cells = []
        for bk in BUCKETS:
            hyps, refs = pooled[bk]
            if hyps:
                cells.append(f"{bleu.corpus_bleu(hyps, refs).score:.2f} / "
                             f"{bleu.corpus_chrf(hyps, refs):.2f} ({len(hyps)})")
            else:
                cells.append("-")
        if any(c != "-" for c in cells):
            bucket_rows.append([f"{name} by length", f"{src}-{tgt}"] + cells)
    header = ["model", "pair"] + [f"{s} {'kept' if s in CHECKS else 'BLEU / chrF'}" for s in names]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for r in rows:
        print("| " + " | ".join(r) + " |")
    if bucket_rows and not args.no_buckets:
        print()
        header = ["model", "pair"] + [f"{bucket_name(b)}: BLEU / chrF (sentences)" for b in BUCKETS]
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for r in bucket_rows:
            print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
