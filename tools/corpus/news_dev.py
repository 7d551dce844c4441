#!/usr/bin/python3
"""The news dev set: English-German and English-French news sentences from NTREX-128
(Microsoft, CC-BY-SA 4.0), for evaluation only; never train on it.

NTREX-128 is the English source of the WMT19 news test set (newstest2019, 1,997
sentences of 123 English news articles from BBC, Reuters, the Guardian, Newsweek, ...)
translated by professionals into 128 languages, line by line, so German and French have
the same English sentences. From github:MicrosoftTranslator/NTREX (`fetch` brings it:
files under 4 MiB): NTREX-128/newstest2019-src.eng.txt (the original English),
newstest2019-ref.deu.txt, newstest2019-ref.fra.txt (French of France, not fra-CA) and
DOCUMENT_IDS.tsv (each line's article). The first articles in file order, as many as fit
in --lines lines (whole articles, so none is cut), become the dev set; --lines 0 takes
all 1,997.

  tools/corpus/news_dev.py [--source /work/.mirror/MicrosoftTranslator+NTREX/repo]
                           [--lines 1000] [--out-dir runs/eval] [--overlap]

--source is the fetched snapshot (a bare git directory, read at HEAD) or a folder holding
the four files. Output: runs/eval/news-dev.en-de.tsv and news-dev.en-fr.tsv, English<TAB>
other, one pair a line, the set tools/eval_models.py --sets news-dev scores. Counts on
stdout. --overlap also counts the dev lines whose English or German/French side is a line
of a training corpus (compared case- and space-insensitively, as prepare_corpus.py's
evaluation dedup does): the packed mixtures runs/mix-de-d20 and runs/mix-fr-d20
(train.*.gz) and the corpora the shipped models' records name (models/*/mixture.json).
"""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import prepare_corpus  # noqa: E402
import snapshot  # noqa: E402

FETCH = "github:MicrosoftTranslator/NTREX"
SOURCE = "/work/.mirror/MicrosoftTranslator+NTREX/repo"
ENGLISH = "NTREX-128/newstest2019-src.eng.txt"
OTHER = {"de": "NTREX-128/newstest2019-ref.deu.txt", "fr": "NTREX-128/newstest2019-ref.fra.txt"}
DOCS = "DOCUMENT_IDS.tsv"


def read_lines(source, path):
    """The lines of PATH in the snapshot (CRLF as the release has it, or LF)."""
    raw = snapshot.read(source, path, FETCH)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SystemExit(f"{source}: {path} is not UTF-8: {e}")
    lines = text.replace("\r\n", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def commit_of(source):
    """HEAD's commit of a git directory, or None for a plain folder."""
    proc = subprocess.run(["git", "--git-dir", source, "rev-parse", "HEAD"],
                          capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else None


def first_articles(doc_ids, limit):
    """The number of lines of the first articles (runs of one id) that fit in limit lines
    (all when limit is 0), and how many articles that is."""
    ends = [i + 1 for i in range(len(doc_ids))
            if i + 1 == len(doc_ids) or doc_ids[i + 1] != doc_ids[i]]
    if not ends:
        raise SystemExit("the snapshot's files are empty")
    fit = ends if limit <= 0 else [e for e in ends if e <= limit]
    if not fit:
        raise SystemExit(f"--lines {limit} is less than the first article ({ends[0]} lines)")
    return fit[-1], len(fit)


def dev_pairs(source, x, limit):
    """([(English, X)], articles) of the first articles that fit in limit lines."""
    en = read_lines(source, ENGLISH)
    other = read_lines(source, OTHER[x])
    doc_ids = [line.split("\t")[0] for line in read_lines(source, DOCS)]
    for path, lines in ((OTHER[x], other), (DOCS, doc_ids)):
        if len(lines) != len(en):  # every file has one line per English sentence
            raise SystemExit(f"{source}: {path} has {len(lines)} lines, {ENGLISH} {len(en)}: "
                             "the files are not line-aligned")
    end, articles = first_articles(doc_ids, limit)
    pairs = []
    for i, (e, t) in enumerate(zip(en[:end], other[:end])):
        e, t = prepare_corpus.clean(e), prepare_corpus.clean(t)
        if not e or not t:
            raise SystemExit(f"{source}: line {i + 1} is empty in {ENGLISH if not e else OTHER[x]}")
        pairs.append((e, t))
    return pairs, articles


def training_files(x):
    """{label: files} of the training text to compare with, as eval_models.corpus_files
    gives them (two line files, English and X, or one TSV): the packed mixture
    runs/mix-X-d20 and the shipped models' corpora."""
    import eval_models
    import training_record
    mix = os.path.join(REPO, "runs", f"mix-{x}-d20")
    found = {f"runs/mix-{x}-d20": [os.path.join(mix, f"train.{s}.gz") for s in ("en", x)]}
    for pair in (f"en-{x}", f"{x}-en"):
        model = os.path.join(REPO, "models", pair)
        if not os.path.isdir(model):
            continue
        corpora, _ = training_record.trained_corpora(model)
        for name, path in sorted(corpora.items()):
            found[f"models/{pair}: {name}"] = eval_models.corpus_files(name, path, x)
    return found


def overlap(pairs, x):
    """Print, for each training source, how many dev pairs have their English or X side
    (or both) as one of its lines; return the number of dev pairs with a side in any."""
    import eval_models
    keys_en = {prepare_corpus.eval_key(e): i for i, (e, _) in enumerate(pairs)}
    keys_x = {prepare_corpus.eval_key(t): i for i, (_, t) in enumerate(pairs)}
    hit_any = set()
    for label, files in training_files(x).items():
        missing = [f for f in files if not os.path.exists(f)]
        if missing:
            print(f"  {label}: n/a ({', '.join(missing)} missing)")
            continue
        en, other = (eval_models.read_gz(files[0]), eval_models.read_gz(files[1])) \
            if len(files) == 2 else eval_models.read_tsv(files[0])
        hit_en = {keys_en[k] for k in map(prepare_corpus.eval_key, en) if k in keys_en}
        hit_x = {keys_x[k] for k in map(prepare_corpus.eval_key, other) if k in keys_x}
        hit_any |= hit_en | hit_x
        print(f"  {label}: {len(hit_en | hit_x)} pairs with a side in it "
              f"(English {len(hit_en)}, {x} {len(hit_x)})")
        for i in sorted(hit_en | hit_x)[:5]:
            print(f"    {pairs[i][0]} | {pairs[i][1]}")
    return len(hit_any)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--source", default=SOURCE,
                   help="the fetched MicrosoftTranslator/NTREX git directory, or a folder with "
                   "the four files (default %(default)s)")
    p.add_argument("--lines", type=int, default=1000,
                   help="at most this many lines, whole articles (0: all 1,997; default %(default)s)")
    p.add_argument("--out-dir", default=os.path.join(REPO, "runs", "eval"))
    p.add_argument("--overlap", action="store_true",
                   help="count the dev pairs with a side that is a training line")
    args = p.parse_args()
    commit = commit_of(args.source)
    print(f"NTREX-128 from {args.source}" + (f" at {commit}" if commit else " (a folder)"))
    os.makedirs(args.out_dir, exist_ok=True)
    for x in ("de", "fr"):
        pairs, articles = dev_pairs(args.source, x, args.lines)
        out = os.path.join(args.out_dir, f"news-dev.en-{x}.tsv")
        with open(out, "w", encoding="utf-8") as f:
            for e, t in pairs:
                f.write(f"{e}\t{t}\n")
        words = sum(len(e.split()) for e, _ in pairs)
        long = sum(len(e.split()) > 25 for e, _ in pairs)
        print(f"{out}: {len(pairs)} pairs from {articles} articles, {words:,} English words "
              f"(mean {words / len(pairs):.1f}; {long} pairs of over 25)")
        if args.overlap:
            n = overlap(pairs, x)
            print(f"  en-{x}: {n} of {len(pairs)} pairs have a side that is a training line")


if __name__ == "__main__":
    main()
