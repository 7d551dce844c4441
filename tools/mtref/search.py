"""The project's beam search, defined exactly so the C engine can match it token for token.

For each sentence, with K = beam size, alpha = length penalty and L its step limit:
alive hypotheses start as [decoder_start] with cumulative score 0. At step t,
k_t = K - (number finished). Every alive hypothesis scores each next token as
cum + log_softmax(logits) (float32), with pad, single-token bad words and, at the
last step, everything but eos set to -inf. The k_t best finite candidates over all
(hypothesis h, token v) are taken by score, ties to the smaller flat index h*V + v
(a stable sort of -score). In that order an eos candidate finishes (n = t + 1
tokens including eos, normalised score c / n^alpha in float32) and any other
becomes an alive hypothesis, appended in that order. The search ends when no
hypothesis is alive; the result is the finished list sorted by normalised score,
descending and stable. K = 1 is greedy decoding.

The batch is laid out as `slots` = K rows per sentence still searching; rows past
a sentence's alive count are placeholders with score -inf (never selected), so the
cross-attention keys of each sentence serve its K rows without copies.
"""
import math
from dataclasses import dataclass, field

import numpy as np
import torch


@dataclass
class SearchOptions:
    """One translation request's search settings (see the module docstring)."""
    beam_size: int = 4
    length_penalty: float = 1.0
    max_length: int = 256
    max_length_factor: float = 0.0   # > 0: also at most floor(factor * src_len) + 10 steps
    n_best: int = 1
    bad_ids: list = field(default_factory=list)


@dataclass
class SentenceResult:
    """A sentence's hypotheses, best first, and how close its search came to a tie.

    margin is the smallest score difference that decided anything: a beam cut
    (k-th vs (k+1)-th candidate) or the order of the returned hypotheses (and
    whether the next one made it). An implementation whose scores differ from
    these by less than margin / 2 must make every decision the same way, so
    comparisons may excuse a differing output only when margin is tiny.
    """
    hyps: list
    margin: float


@dataclass
class Hypothesis:
    """A finished translation: generated ids without start and eos, normalised score."""
    ids: list
    score: float


def step_limit(opts, src_len, max_positions):
    """Number of decoding steps allowed for a source of src_len ids (eos included).

    The factor product is taken in float32, as the C engine's float option is.
    """
    limit = opts.max_length
    if opts.max_length_factor > 0:
        scaled = np.float32(opts.max_length_factor) * np.float32(src_len)
        limit = min(limit, int(math.floor(scaled)) + 10)
    return max(1, min(limit, max_positions))


def _select(scores, k_per_row):
    """For each row of scores [N, C], the first k stable-sorted (-score) finite entries.

    Computes the k-th best value with topk, keeps every entry at least that good
    (ties included, in index order) and stable-sorts only those, which gives the
    same prefix as a stable sort of the whole row. Returns per row a list of
    (flat index, score), and per row the margin of the cut: k-th best minus
    (k+1)-th best score (inf when nothing finite was left out).
    """
    n, width = scores.shape
    k_max = min(max(k_per_row) + 1, width)
    top = torch.topk(scores, k_max, dim=1).values
    kth = top[torch.arange(n), torch.tensor(k_per_row) - 1]
    keep = (scores >= kth[:, None]) & (scores > float("-inf"))
    rows, cols = keep.nonzero(as_tuple=True)
    vals = scores[rows, cols]
    order = torch.sort(-vals, stable=True).indices
    order = order[torch.sort(rows[order], stable=True).indices]
    picked = [[] for _ in range(n)]
    for r, c, v in zip(rows[order].tolist(), cols[order].tolist(), vals[order].tolist()):
        if len(picked[r]) < k_per_row[r]:
            picked[r].append((c, v))
    margins = []
    for r, k in enumerate(k_per_row):
        inside = top[r, k - 1].item()
        outside = top[r, k].item() if k < k_max else float("-inf")
        margins.append(inside - outside if outside > float("-inf") else math.inf)
    return picked, margins


def translate_batch(model, sources, opts):
    """Searches every source id list (each ending in eos) in one batch.

    Returns a SentenceResult per source: its finished hypotheses best first (at
    most opts.n_best) and its decision margin.
    """
    cfg = model.cfg
    k_beam = opts.beam_size
    n = len(sources)
    vocab = cfg.decoder_vocab_size
    width = max(len(s) for s in sources)
    src = torch.full((n, width), cfg.pad_id, dtype=torch.long)
    for i, s in enumerate(sources):
        src[i, :len(s)] = torch.tensor(s, dtype=torch.long)
    src_pad = torch.arange(width)[None, :] >= torch.tensor([len(s) for s in sources])[:, None]

    enc = model.encode(src, src_pad)
    cache = model.start_decoding(enc, src_pad, k_beam)
    limits = [step_limit(opts, len(s), cfg.max_positions) for s in sources]
    banned = torch.tensor(sorted({cfg.pad_id, *opts.bad_ids}), dtype=torch.long)
    alpha = np.float32(opts.length_penalty)

    active = list(range(n))                       # sentences in cache order
    alive = {s: [[cfg.decoder_start_id]] for s in active}  # prefixes per sentence
    finished = {s: [] for s in active}
    margins = [math.inf] * n
    tokens = torch.full((n * k_beam,), cfg.decoder_start_id, dtype=torch.long)
    cum = torch.full((n * k_beam,), float("-inf"))
    cum[::k_beam] = 0.0

    t = 0
    while active:
        logits = model.decode_step(cache, tokens, t)
        lp = torch.log_softmax(logits, dim=-1)
        lp[:, banned] = float("-inf")
        for i, s in enumerate(active):
            if t == limits[s] - 1:                # last step: eos is forced
                rows = slice(i * k_beam, (i + 1) * k_beam)
                eos_lp = lp[rows, cfg.eos_id].clone()
                lp[rows] = float("-inf")
                lp[rows, cfg.eos_id] = eos_lp
        scores = (cum[:, None] + lp).view(len(active), k_beam * vocab)
        picked, cuts = _select(scores, [k_beam - len(finished[s]) for s in active])
        for s, cut in zip(active, cuts):
            margins[s] = min(margins[s], cut)

        next_active, parent_rows, next_tokens, next_cum = [], [], [], []
        for i, s in enumerate(active):
            survivors = []
            for flat, score in picked[i]:
                h, v = divmod(flat, vocab)
                prefix = alive[s][h]
                if v == cfg.eos_id:
                    length = np.float32(t + 1)
                    normalised = np.float32(score) / (length ** alpha)
                    finished[s].append(Hypothesis(prefix[1:], float(normalised)))
                else:
                    survivors.append((i * k_beam + h, prefix + [v], score))
            if not survivors:
                continue
            alive[s] = [p for _, p, _ in survivors]
            next_active.append(i)
            pad_slots = k_beam - len(survivors)
            parent_rows += [r for r, _, _ in survivors] + [survivors[0][0]] * pad_slots
            next_tokens += [p[-1] for _, p, _ in survivors] + [cfg.decoder_start_id] * pad_slots
            next_cum += [c for _, _, c in survivors] + [float("-inf")] * pad_slots
        if not next_active:
            break
        cache.reorder(torch.tensor(parent_rows, dtype=torch.long),
                      None if len(next_active) == len(active)
                      else torch.tensor(next_active, dtype=torch.long))
        active = [active[i] for i in next_active]
        tokens = torch.tensor(next_tokens, dtype=torch.long)
        cum = torch.tensor(next_cum, dtype=torch.float32)
        t += 1

    results = []
    for s in range(n):
        ranked = sorted(finished[s], key=lambda hyp: -hyp.score)
        shown = ranked[:opts.n_best + 1]
        order_margin = min((a.score - b.score for a, b in zip(shown, shown[1:])), default=math.inf)
        results.append(SentenceResult(ranked[:opts.n_best], min(margins[s], order_margin)))
    return results
