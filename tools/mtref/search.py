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

Decoding controls (all off by default; model/decode_opts.c implements the same):
per hypothesis at step t with gen = its generated tokens so far (start excluded),
  * before log_softmax: every distinct token of gen has its logit divided by
    repetition_penalty when positive, multiplied when not; when sampling, all
    logits are divided by sampling_temperature (float32);
  * after the masks: at t < len(target_prefix) (and t < L - 1) every token but
    target_prefix[t] is -inf and nothing else applies; otherwise eos is -inf while
    t < min_length (not at t = L - 1), and every token completing an n-gram
    (n = no_repeat_ngram_size) already in gen is -inf;
  * sampling (sampling_topk != 1, beam 1): instead of the best candidate, one token
    is drawn: log-probs sorted descending, the k best kept (k = 0: all; ties with
    the k-th kept), then the shortest head whose mass (exp(lp - max) in float64)
    reaches top-p of theirs, ties with its last value kept; with u = uniform(seed,
    sentence index, t) (splitmix64), token ids are walked in increasing order
    adding exp(lp - max) until the sum exceeds u * total.

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
    sampling_topk: int = 1           # 1: no sampling; 0: whole vocabulary
    sampling_topp: float = 1.0
    sampling_temperature: float = 1.0
    seed: int = 0
    sentence_index: list = None      # per sentence, for the random numbers; None: batch position
    no_repeat_ngram_size: int = 0
    repetition_penalty: float = 1.0
    min_length: int = 0
    target_prefix: list = None       # per sentence, a list of ids (or None)
    return_scores: bool = False      # Hypothesis.token_scores: log-probs of ids then eos
    return_alignments: bool = False  # Hypothesis.alignment: per id, argmax source position
    alignment_layer: int = -1        # of the head-averaged cross-attention of this layer

    def controls(self):
        """True when any decoding control is set (the plain search otherwise)."""
        return (self.sampling_topk != 1 or self.no_repeat_ngram_size > 0 or
                self.repetition_penalty != 1.0 or self.min_length > 0 or
                self.target_prefix is not None)


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
    token_scores: list = None
    alignment: list = None


def step_limit(opts, src_len, max_positions):
    """Number of decoding steps allowed for a source of src_len ids (eos included).

    The factor product is taken in float32, as the C engine's float option is.
    """
    limit = opts.max_length
    if opts.max_length_factor > 0:
        scaled = np.float32(opts.max_length_factor) * np.float32(src_len)
        limit = min(limit, int(math.floor(scaled)) + 10)
    return max(1, min(limit, max_positions))


MASK64 = (1 << 64) - 1


def _splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


def uniform(seed, index, step):
    """The [0, 1) number of (seed, sentence index, step), as mt_decode_opts_uniform."""
    x = _splitmix64(_splitmix64(_splitmix64(seed & MASK64) ^ (index & MASK64)) ^ step)
    return (x >> 11) * (1.0 / 9007199254740992.0)


def control_logits(opts, gen, row):
    """Repetition penalty and temperature on one row of float32 logits, in place."""
    if opts.repetition_penalty != 1.0:
        penalty = torch.tensor(opts.repetition_penalty, dtype=torch.float32)
        for v in dict.fromkeys(gen):
            row[v] = row[v] / penalty if row[v] > 0 else row[v] * penalty
    if opts.sampling_topk != 1 and opts.sampling_temperature != 1.0:
        row /= torch.tensor(opts.sampling_temperature, dtype=torch.float32)


def control_logprobs(opts, eos_id, sent, gen, t, limit, row):
    """Prefix forcing, min length and no-repeat n-grams on one row of log-probs."""
    prefix = opts.target_prefix[sent] if opts.target_prefix is not None else None
    if prefix and t < len(prefix) and t < limit - 1:
        keep = row[prefix[t]].clone()
        row[:] = float("-inf")
        row[prefix[t]] = keep
        return
    if t < opts.min_length and t < limit - 1:
        row[eos_id] = float("-inf")
    n = opts.no_repeat_ngram_size
    if n > 0 and t + 1 >= n:
        head = gen[t - (n - 1):]
        for start in range(t - (n - 1)):
            if gen[start:start + n - 1] == head:
                row[gen[start + n - 1]] = float("-inf")


def sample(opts, index, t, lp):
    """The token drawn from a row of float32 log-probs (numpy), or None."""
    finite = np.sort(lp[lp > -np.inf])[::-1]
    if finite.size == 0:
        return None
    k = opts.sampling_topk if 0 < opts.sampling_topk < finite.size else finite.size
    top = float(finite[0])
    mass = 0.0
    for i in range(k):
        mass += math.exp(float(finite[i]) - top)
    last = k - 1
    if opts.sampling_topp < 1.0:
        kept = 0.0
        for i in range(k):
            kept += math.exp(float(finite[i]) - top)
            if kept >= float(np.float32(opts.sampling_topp)) * mass:
                last = i
                break
    threshold = finite[last]
    chosen = [v for v in range(lp.size) if lp[v] >= threshold and lp[v] > -np.inf]
    total = 0.0
    for v in chosen:
        total += math.exp(float(lp[v]) - top)
    target, acc, pick = uniform(opts.seed, index, t) * total, 0.0, None
    for v in chosen:
        pick = v
        acc += math.exp(float(lp[v]) - top)
        if acc > target:
            break
    return pick


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
    if opts.return_alignments:
        cache.align_layer = opts.alignment_layer % cfg.decoder_layers
    paths = {s: [([], [])] for s in range(n)}  # per alive hypothesis: (log-probs, alignments)
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
        controls = opts.controls()
        if controls:
            for i, s in enumerate(active):
                for h, prefix in enumerate(alive[s]):
                    control_logits(opts, prefix[1:], logits[i * k_beam + h])
        lp = torch.log_softmax(logits, dim=-1)
        lp[:, banned] = float("-inf")
        if controls:
            for i, s in enumerate(active):
                for h, prefix in enumerate(alive[s]):
                    control_logprobs(opts, cfg.eos_id, s, prefix[1:], t, limits[s], lp[i * k_beam + h])
        for i, s in enumerate(active):
            if t == limits[s] - 1:                # last step: eos is forced
                rows = slice(i * k_beam, (i + 1) * k_beam)
                eos_lp = lp[rows, cfg.eos_id].clone()
                lp[rows] = float("-inf")
                lp[rows, cfg.eos_id] = eos_lp
        scores = (cum[:, None] + lp).view(len(active), k_beam * vocab)
        if opts.sampling_topk != 1:
            if k_beam != 1:
                raise ValueError("sampling needs beam_size 1")
            picked, cuts = [], [math.inf] * len(active)
            for i, s in enumerate(active):
                index = opts.sentence_index[s] if opts.sentence_index is not None else s
                v = sample(opts, index, t, lp[i].numpy())
                picked.append([] if v is None else [(v, float(scores[i, v]))])
        else:
            picked, cuts = _select(scores, [k_beam - len(finished[s]) for s in active])
        for s, cut in zip(active, cuts):
            margins[s] = min(margins[s], cut)

        next_active, parent_rows, next_tokens, next_cum = [], [], [], []
        for i, s in enumerate(active):
            survivors = []
            for flat, score in picked[i]:
                h, v = divmod(flat, vocab)
                prefix = alive[s][h]
                row = i * k_beam + h
                lps, aligns = paths[s][h]
                lps = lps + [float(lp[row, v])]
                if v == cfg.eos_id:
                    length = np.float32(t + 1)
                    normalised = np.float32(score) / (length ** alpha)
                    finished[s].append(Hypothesis(
                        prefix[1:], float(normalised), lps if opts.return_scores else None,
                        aligns if opts.return_alignments else None))
                else:
                    if opts.return_alignments:
                        aligns = aligns + [int(torch.argmax(cache.attention[row, :len(sources[s])]))]
                    survivors.append((row, prefix + [v], score, (lps, aligns)))
            if not survivors:
                continue
            alive[s] = [p for _, p, _, _ in survivors]
            paths[s] = [x for _, _, _, x in survivors]
            survivors = [x[:3] for x in survivors]
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
