#!/usr/bin/python3
"""Corpus BLEU and chrF with sacreBLEU's default settings, without sacreBLEU.

Debian ships no sacrebleu, and the project reports its quality numbers in
sacreBLEU's terms, so this module reimplements exactly the defaults:

  BLEU: 13a tokenisation (mteval-v13a: unescape a few XML entities, split
        punctuation and symbols, periods and commas unless between digits, a
        dash after a digit), case-sensitive, n-grams 1-4 clipped by the
        reference counts, brevity penalty exp(1 - ref_len / hyp_len) when the
        hypothesis corpus is shorter, geometric mean of the precisions with
        'exp' smoothing (an order with no match counts as 1 / (2^k * total),
        k the number of such orders so far); no match at all gives 0.
  chrF: character n-grams 1-6 with whitespace removed, no word n-grams,
        beta 2; precision and recall averaged over the orders that both
        sides have n-grams of, then combined into the F-beta score.

  tools/bleu.py HYP_FILE REF_FILE [--chrf]    (either file may be .gz)

prints e.g. "BLEU = 37.12 70.1/45.2/30.1/20.5 (BP = 1.000 ratio = 1.012
hyp_len = 1234 ref_len = 1219)", followed by " chrF = 62.34" with --chrf.
"""
import argparse
import gzip
import math
import re
import sys
from collections import Counter
from dataclasses import dataclass

MAX_ORDER = 4
CHRF_ORDER = 6
CHRF_BETA = 2

# sacreBLEU's TokenizerRegexp, applied in this order to " line ".
_13A_RULES = [
    (re.compile(r"([\{-\~\[-\` -\&\(-\+\:-\@\/])"), r" \1 "),  # symbols, punctuation
    (re.compile(r"([^0-9])([\.,])"), r"\1 \2 "),   # period/comma unless after a digit
    (re.compile(r"([\.,])([^0-9])"), r" \1 \2"),   # period/comma unless before a digit
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),        # dash after a digit
]


def tokenize_13a(line):
    """sacreBLEU's '13a' tokenizer: the tokens of one segment."""
    line = line.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    if "&" in line:
        line = (line.replace("&quot;", '"').replace("&amp;", "&")
                .replace("&lt;", "<").replace("&gt;", ">"))
    line = f" {line} "
    for pattern, replacement in _13A_RULES:
        line = pattern.sub(replacement, line)
    return line.split()


def _ngrams(tokens, order):
    """Counter of the n-grams of every length 1..order (tuples of tokens)."""
    return Counter(tuple(tokens[i:i + n]) for n in range(1, order + 1)
                   for i in range(len(tokens) - n + 1))


@dataclass
class BleuScore:
    """Corpus BLEU with the statistics sacreBLEU prints."""
    score: float        # 0-100
    precisions: list    # per order, 0-100 (smoothed)
    bp: float           # brevity penalty
    hyp_len: int
    ref_len: int
    correct: list       # matching n-grams per order
    total: list         # hypothesis n-grams per order

    def __str__(self):
        ratio = self.hyp_len / self.ref_len if self.ref_len else 0.0
        precisions = "/".join(f"{p:.1f}" for p in self.precisions)
        return (f"BLEU = {self.score:.2f} {precisions} (BP = {self.bp:.3f} ratio = {ratio:.3f} "
                f"hyp_len = {self.hyp_len} ref_len = {self.ref_len})")


def corpus_bleu(hypotheses, references):
    """sacreBLEU's default corpus BLEU of parallel lists of strings (one reference each)."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    correct, total = [0] * MAX_ORDER, [0] * MAX_ORDER
    hyp_len = ref_len = 0
    for hyp, ref in zip(hypotheses, references):
        hyp_tokens, ref_tokens = tokenize_13a(hyp.rstrip()), tokenize_13a(ref.rstrip())
        hyp_len += len(hyp_tokens)
        ref_len += len(ref_tokens)
        hyp_counts, ref_counts = _ngrams(hyp_tokens, MAX_ORDER), _ngrams(ref_tokens, MAX_ORDER)
        for ngram, count in hyp_counts.items():
            correct[len(ngram) - 1] += min(count, ref_counts[ngram])
        for n in range(1, MAX_ORDER + 1):
            total[n - 1] += max(0, len(hyp_tokens) - n + 1)
    return _bleu_from_counts(correct, total, hyp_len, ref_len)


def _bleu_from_counts(correct, total, hyp_len, ref_len):
    """sacreBLEU's BLEU.compute_bleu with smooth_method='exp' and all four orders."""
    if hyp_len < ref_len:
        bp = math.exp(1 - ref_len / hyp_len) if hyp_len > 0 else 0.0
    else:
        bp = 1.0
    precisions = [0.0] * MAX_ORDER
    if not any(correct):
        return BleuScore(0.0, precisions, bp, hyp_len, ref_len, correct, total)
    smooth = 1.0
    for n in range(MAX_ORDER):
        if total[n] == 0:
            break  # later orders keep precision 0, so the score is 0
        if correct[n] == 0:
            smooth *= 2
            precisions[n] = 100.0 / (smooth * total[n])
        else:
            precisions[n] = 100.0 * correct[n] / total[n]
    # sacreBLEU takes log(0) as -9999999999, which makes the score 0.
    log_sum = sum(math.log(p) if p > 0 else -9999999999 for p in precisions)
    score = bp * math.exp(log_sum / MAX_ORDER)
    return BleuScore(score, precisions, bp, hyp_len, ref_len, correct, total)


def _char_ngrams(text, n):
    """Counter of the character n-grams of text with all whitespace removed."""
    text = "".join(text.split())
    return Counter(text[i:i + n] for i in range(len(text) - n + 1))


def corpus_chrf(hypotheses, references):
    """sacreBLEU's default corpus chrF (chrF2, character order 6, no word n-grams), 0-100."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    # Per order: hypothesis n-grams, reference n-grams, matches, summed over the corpus.
    stats = [[0, 0, 0] for _ in range(CHRF_ORDER)]
    for hyp, ref in zip(hypotheses, references):
        for n in range(1, CHRF_ORDER + 1):
            hyp_counts, ref_counts = _char_ngrams(hyp, n), _char_ngrams(ref, n)
            stats[n - 1][0] += sum(hyp_counts.values())
            stats[n - 1][1] += sum(ref_counts.values())
            stats[n - 1][2] += sum(min(c, ref_counts[g]) for g, c in hyp_counts.items())
    factor = CHRF_BETA ** 2
    avg_prec = avg_rec = 0.0
    effective_order = 0
    for n_hyp, n_ref, n_match in stats:
        if n_hyp > 0 and n_ref > 0:
            avg_prec += n_match / n_hyp
            avg_rec += n_match / n_ref
            effective_order += 1
    if effective_order == 0:
        return 0.0
    avg_prec /= effective_order
    avg_rec /= effective_order
    if avg_prec + avg_rec == 0:
        return 0.0
    return 100 * (1 + factor) * avg_prec * avg_rec / (factor * avg_prec + avg_rec)


def read_lines(path):
    """Lines of a text file (gzip when it ends in .gz), without their newlines."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def main(argv=None):
    p = argparse.ArgumentParser(description="Corpus BLEU (and chrF) with sacreBLEU's defaults.")
    p.add_argument("hypotheses", help="system output, one segment per line (.gz ok)")
    p.add_argument("references", help="reference translations, same line count (.gz ok)")
    p.add_argument("--chrf", action="store_true", help="also print chrF")
    args = p.parse_args(argv)
    hyps, refs = read_lines(args.hypotheses), read_lines(args.references)
    if len(hyps) != len(refs):
        sys.exit(f"bleu.py: {args.hypotheses} has {len(hyps)} lines, "
                 f"{args.references} has {len(refs)}")
    line = str(corpus_bleu(hyps, refs))
    if args.chrf:
        line += f" chrF = {corpus_chrf(hyps, refs):.2f}"
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
