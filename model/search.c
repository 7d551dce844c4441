/* search.c: beam search (greedy is beam 1) over a batch of sentences, and the state.
 *
 * The algorithm, which tools/reference.py implements identically:
 *   limit = min(max_length, max_positions, floor(max_length_factor * src_len) + 10 if the
 *   factor is > 0), at least 1. A sentence starts with one live hypothesis [start], score 0.
 *   At step t every live hypothesis gets log_softmax(logits) over the whole target
 *   vocabulary; pad and bad ids are then set to -inf, and at t = limit-1 everything but
 *   eos is. Candidate score = hypothesis score + log-prob. The k = beam - finished best
 *   candidates of the sentence are taken (ties: smaller hyp_index * V + token first).
 *   In that order, a candidate ending in eos is finished with normalised score
 *   score / (t+1)^alpha; any other becomes a live hypothesis of step t+1. The sentence is
 *   done when nothing is live; its finished hypotheses, best normalised score first
 *   (earlier-finished first on ties), are the n-best list.
 * The beam shrinks as hypotheses finish (as in Marian), so finished work stops costing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode_opts.h"
#include "internal.h"
#include "packed.h"
#include "probe.h"

struct mt_sentence {
    int limit;      /* decoding steps allowed */
    int n_fin;      /* finished hypotheses so far */
    int fin_first;  /* index of its first slot in the finished arrays (beam slots each) */
    int status;
};

typedef mt_candidate candidate;

typedef struct {
    const mt_model *model;
    float *logits;
    int rows, vocab, step;
    const int *row_sent;
    const mt_sentence *sents;
    const float *cum;
    int beam;
    candidate *best; /* (rows, beam) */
    int *n_best;     /* per row */
    float *scratch;  /* (tasks, vocab): sampling's sort space */
    const mt_search_options *opts; /* decoding controls (decode_opts.c) */
    int opts_active;  /* logits/log-prob hooks or sampling are on */
    int materialise;  /* write log-probs into logits (controls, scores) */
    const int *gen;  /* (rows, gen_stride): tokens generated so far */
    size_t gen_stride;
} rank_job;

/* Per row: the row's own k best candidates (enough for the sentence's top k, whatever
 * the other rows hold) by score + log_softmax(logits), masks applied. The log-softmax is
 * never materialised: its normaliser (logsumexp) is one vector pass, and the top-k pass
 * forms cum + (logit - lse) only where a block of 16 might hold a candidate. */
static void rank_task(void *p, int task, int n_tasks)
{
    const rank_job *j = p;
    const mt_model *m = j->model;
    const mt_kernels *kern = m->kern;
    int eos = m->info.eos_id, V = j->vocab;
    for (int r = task; r < j->rows; r += n_tasks) {
        float *lp = j->logits + (size_t)r * (size_t)V;
        const mt_sentence *s = &j->sents[j->row_sent[r]];
        /* decoding controls (decode_opts.c): NULL gen = none set */
        const int *gen = j->opts_active ? j->gen + (size_t)r * j->gen_stride : NULL;
        if (gen)
            mt_decode_opts_logits(j->opts, gen, j->step, lp, V);
        float mx = kern->max(lp, V);
        float lse = mx + logf(kern->exp_sum(lp, V, mx));
        if (j->materialise) { /* the controls and the score history need real log-probs */
            for (int v = 0; v < V; v++)
                lp[v] -= lse;
            lse = 0.0f;
        }
        lp[m->info.pad_id] = -INFINITY;
        for (int b = 0; b < m->n_bad_ids; b++)
            lp[m->bad_ids[b]] = -INFINITY;
        if (gen)
            mt_decode_opts_logprobs(j->opts, &m->info, j->row_sent[r], gen, j->step, s->limit, lp, V);
        candidate *best = j->best + (size_t)r * (size_t)j->beam;
        int n = 0;
        float cum = j->cum[r];
        if (j->step == s->limit - 1) { /* forced eos */
            if (lp[eos] > -INFINITY)
                best[n++] = (candidate){cum + (lp[eos] - lse), r, eos};
        } else if (gen && mt_decode_opts_sampling(j->opts)) { /* beam 1: one drawn candidate */
            int v = mt_decode_opts_sample(j->opts, j->row_sent[r], j->step, lp, V,
                                          j->scratch + (size_t)task * (size_t)V);
            if (v >= 0)
                best[n++] = (candidate){cum + lp[v], r, v};
        } else {
            n = kern->top_k(lp, V, lse, cum, j->beam - s->n_fin, r, best);
        }
        j->n_best[r] = n;
    }
}

mt_state *mt_state_create_in(const mt_model *model, mt_pool *pool, int threads, char *err,
                             size_t errlen)
{
    if (threads < 1) threads = 1;
    mt_state *st = calloc(1, sizeof *st);
    if (!st)
        return mt_strfmt(err, errlen, "out of memory"), NULL;
    st->model = model;
    st->threads = threads;
    st->pool = pool;
    st->split_min = model->split_min;
    if (!pool && threads > 1) {
        st->pool = st->own_pool = mt_pool_create(threads - 1);
        if (!st->pool) {
            free(st);
            return mt_strfmt(err, errlen, "cannot start %d threads", threads), NULL;
        }
    }
    /* The oneDNN engine and streams are made here, not on a state's first product */
    if (model->n_packs && !(st->packed = mt_packed_ctx_create(threads, err, errlen))) {
        mt_state_free(st);
        return NULL;
    }
    return st;
}

mt_state *mt_state_create(const mt_model *model, int threads, char *err, size_t errlen)
{
    return mt_state_create_in(model, NULL, threads, err, errlen);
}

/* Every scratch buffer of the state: they grow to the largest batch seen. */
static size_t state_buffers(mt_state *st, mt_buf **bufs)
{
    mt_buf *all[] = {&st->enc_x, &st->enc_qkv, &st->enc_ctx, &st->enc_tmp, &st->enc_ffn, &st->att_scores, &st->att_rows,
                     &st->cross_kv, &st->src_off, &st->dec_x, &st->dec_qkv, &st->dec_ctx, &st->dec_tmp,
                     &st->dec_ffn, &st->logits, &st->self_k, &st->self_v, &st->hist[0], &st->hist[1],
                     &st->toks[0], &st->toks[1], &st->rows, &st->next_rows, &st->cand, &st->sentences,
                     &st->fin_ids, &st->fin, &st->n_cand,
                     &st->attn, &st->ahist[0], &st->ahist[1], &st->shist[0], &st->shist[1],
                     &st->fin_align, &st->fin_scores, &st->sample_scratch, &st->split_scratch};
    size_t n = sizeof all / sizeof *all;
    memcpy(bufs, all, sizeof all);
    return n;
}

/* Scratch bytes the state holds, its split parts' included. */
static size_t state_held(mt_state *st)
{
    mt_buf *bufs[64];
    size_t n = state_buffers(st, bufs), held = 0;
    for (size_t i = 0; i < n; i++)
        held += bufs[i]->cap;
    for (int p = 0; p < st->n_split; p++)
        held += state_held(st->split[p]);
    return held;
}

size_t mt_state_trim(mt_state *st, size_t keep)
{
    size_t held = state_held(st);
    if (held <= keep)
        return 0;
    mt_buf *bufs[64];
    size_t n = state_buffers(st, bufs);
    for (size_t i = 0; i < n; i++)
        mt_buf_release(bufs[i]);
    for (int p = 0; p < st->n_split; p++)
        mt_state_trim(st->split[p], 0);
    return held;
}

void mt_state_free(mt_state *st)
{
    if (!st)
        return;
    for (int p = 0; p < st->n_split; p++)
        mt_state_free(st->split[p]);
    st->n_split = 0;
    mt_pool_free(st->own_pool);
    mt_packed_ctx_free(st->packed);
    mt_state_trim(st, 0);
    free(st);
}

const char *mt_state_error(const mt_state *st) { return st->error; }

static int fail(mt_state *st, int code, const char *msg)
{
    mt_strfmt(st->error, sizeof st->error, "%s", msg);
    return code;
}

/* For a failure the callee has already described in st->error: keeps its words. */
static int fail_keep(mt_state *st, int code, const char *fallback)
{
    return st->error[0] ? code : fail(st, code, fallback);
}

/* Checks every source's length and ids; the message names the sentence's batch index. */
static int check_sources(mt_state *st, int n, const int32_t *const *src, const int *lens)
{
    const mt_model_info *in = &st->model->info;
    for (int s = 0; s < n; s++) {
        if (lens[s] < 1 || lens[s] > in->max_positions) {
            mt_strfmt(st->error, sizeof st->error, "sentence %d has %d source tokens (allowed: 1 to %d)", s,
                      lens[s], in->max_positions);
            return MT_ERR_INVALID;
        }
        for (int i = 0; i < lens[s]; i++)
            if (src[s][i] < 0 || src[s][i] >= in->src_vocab_size) {
                mt_strfmt(st->error, sizeof st->error, "sentence %d: token id %d is outside the vocabulary (%d)",
                          s, src[s][i], in->src_vocab_size);
                return MT_ERR_INVALID;
            }
    }
    return MT_OK;
}

/* Runs the encoder plus the cross-attention projections over checked sources. */
static int prepare_sources(mt_state *st, int n, const int32_t *const *src, const int *lens, float **kv,
                           int *max_len)
{
    const mt_model_info *in = &st->model->info;
    int total = 0;
    *max_len = 0;
    for (int s = 0; s < n; s++) {
        total += lens[s];
        *max_len = lens[s] > *max_len ? lens[s] : *max_len;
    }
    float *enc;
    st->error[0] = 0;
    int rc = mt_encode_batch(st, n, src, lens, &enc);
    if (rc)
        return fail_keep(st, rc, "the encoder failed");
    *kv = mt_buf_reserve(&st->cross_kv, sizeof(float) * (size_t)total * (size_t)in->decoder_layers * 2 *
                                            (size_t)in->d_model);
    if (!*kv) {
        mt_strfmt(st->error, sizeof st->error, "out of memory for the cross-attention keys and values of %d tokens",
                  total);
        return MT_ERR_NOMEM;
    }
    mt_cross_kv(st, enc, total, *kv);
    return MT_OK;
}

static int step_limit(const mt_model_info *in, const mt_search_options *o, int src_len)
{
    int limit = o->max_length;
    if (o->max_length_factor > 0.0f) {
        int rel = (int)floorf(o->max_length_factor * (float)src_len) + 10;
        limit = rel < limit ? rel : limit;
    }
    limit = limit < in->max_positions ? limit : in->max_positions;
    return limit < 1 ? 1 : limit;
}

/* One mt_translate_ids call's buffers (all owned by the state) and fixed sizes. Per live
 * hypothesis (row), rows/next hold three columns: sentence | token fed | score. */
typedef struct {
    const mt_search_options *o;
    int K, V, cur;
    size_t stride, max_rows;      /* steps + 1; sentences * beam */
    mt_sentence *sents;
    int *hist[2], *toks[2];       /* (rows, stride), double-buffered */
    int *rows, *next;
    candidate *best;              /* (rows, K) */
    int *n_cand;
    int32_t *fin_ids;
    mt_hypothesis *fin;
    /* return_scores / return_alignments (decode_opts.c): per-row histories moved like toks */
    int want_hist, max_src;
    int *ahist[2];
    float *shist[2], *attn, *fin_scores, *logits;
    int32_t *fin_align;
    const int32_t *const *src;
    const int *lens;
} search_run;

static int search_alloc(mt_state *st, search_run *sr, int n, const int *lens)
{
    const mt_model_info *in = &st->model->info;
    sr->sents = mt_buf_reserve(&st->sentences, sizeof *sr->sents * (size_t)n);
    int max_limit = 1;
    for (int s = 0; s < n && sr->sents; s++) {
        sr->sents[s] = (mt_sentence){.limit = step_limit(in, sr->o, lens[s]), .fin_first = s * sr->K,
                                     .status = MT_OK};
        max_limit = sr->sents[s].limit > max_limit ? sr->sents[s].limit : max_limit;
    }
    sr->stride = (size_t)max_limit + 1;
    sr->max_rows = (size_t)n * (size_t)sr->K;
    size_t cells = sr->max_rows * sr->stride;
    for (int b = 0; b < 2; b++) {
        sr->hist[b] = mt_buf_reserve(&st->hist[b], sizeof(int) * cells);
        sr->toks[b] = mt_buf_reserve(&st->toks[b], sizeof(int) * cells);
    }
    sr->rows = mt_buf_reserve(&st->rows, (sizeof(int) * 2 + sizeof(float)) * sr->max_rows);
    sr->next = mt_buf_reserve(&st->next_rows, (sizeof(int) * 2 + sizeof(float)) * sr->max_rows);
    sr->best = mt_buf_reserve(&st->cand, sizeof(candidate) * sr->max_rows * (size_t)sr->K);
    sr->n_cand = mt_buf_reserve(&st->n_cand, sizeof(int) * sr->max_rows);
    sr->fin_ids = mt_buf_reserve(&st->fin_ids, sizeof(int32_t) * cells);
    sr->fin = mt_buf_reserve(&st->fin, sizeof(mt_hypothesis) * sr->max_rows);
    if (!sr->sents || !sr->hist[0] || !sr->hist[1] || !sr->toks[0] || !sr->toks[1] || !sr->rows || !sr->next ||
        !sr->best || !sr->n_cand || !sr->fin_ids || !sr->fin)
        return fail(st, MT_ERR_NOMEM, "out of memory for the beam search's bookkeeping");
    return MT_OK;
}

/* The score and alignment histories, only when a caller asked for them. */
static int search_alloc_history(mt_state *st, search_run *sr)
{
    const mt_search_options *o = sr->o;
    sr->want_hist = o->return_scores || mt_decode_opts_aligns(o);
    if (!sr->want_hist)
        return MT_OK;
    size_t cells = sr->max_rows * sr->stride;
    for (int b = 0; b < 2; b++) {
        sr->ahist[b] = mt_buf_reserve(&st->ahist[b], sizeof(int) * cells);
        sr->shist[b] = mt_buf_reserve(&st->shist[b], sizeof(float) * cells);
    }
    sr->attn = mt_buf_reserve(&st->attn, sizeof(float) * sr->max_rows * (size_t)sr->max_src);
    sr->fin_align = mt_buf_reserve(&st->fin_align, sizeof(int32_t) * cells);
    sr->fin_scores = mt_buf_reserve(&st->fin_scores, sizeof(float) * cells);
    if (!sr->ahist[0] || !sr->ahist[1] || !sr->shist[0] || !sr->shist[1] || !sr->attn || !sr->fin_align ||
        !sr->fin_scores)
        return fail(st, MT_ERR_NOMEM, "out of memory for scores and alignments");
    return MT_OK;
}

/* A finished hypothesis' per-token log-probs (eos's last) and alignments; replace_unknowns. */
static void finish_history(search_run *sr, const candidate *c, int s, int f, int t, int32_t *ids)
{
    const mt_search_options *o = sr->o;
    float *fs = sr->fin_scores + (size_t)f * sr->stride;
    int32_t *fa = sr->fin_align + (size_t)f * sr->stride;
    for (int q = 0; q < t; q++) {
        fs[q] = sr->shist[sr->cur][(size_t)c->row * sr->stride + (size_t)q];
        fa[q] = sr->ahist[sr->cur][(size_t)c->row * sr->stride + (size_t)q];
    }
    fs[t] = sr->logits[(size_t)c->row * (size_t)sr->V + (size_t)c->token];
    sr->fin[f].token_scores = o->return_scores ? fs : NULL;
    sr->fin[f].alignment = o->return_alignments ? fa : NULL;
    for (int q = 0; o->replace_unknowns && q < t; q++)
        if (ids[q] == o->unk_id && sr->src[s][fa[q]] != o->unk_id)
            ids[q] = sr->src[s][fa[q]];
}

/* A continuing row's histories: its parent's, plus this step's log-prob and alignment. */
static void extend_history(search_run *sr, const candidate *c, int s, int nr, int t)
{
    int cur = sr->cur;
    int *da = sr->ahist[!cur] + (size_t)nr * sr->stride;
    float *ds = sr->shist[!cur] + (size_t)nr * sr->stride;
    memcpy(da, sr->ahist[cur] + (size_t)c->row * sr->stride, sizeof(int) * (size_t)t);
    memcpy(ds, sr->shist[cur] + (size_t)c->row * sr->stride, sizeof(float) * (size_t)t);
    da[t] = mt_decode_opts_aligns(sr->o)
                ? mt_decode_opts_argmax(sr->attn + (size_t)c->row * (size_t)sr->max_src, sr->lens[s])
                : 0;
    ds[t] = sr->logits[(size_t)c->row * (size_t)sr->V + (size_t)c->token];
}

/* Merges sentence rs[a]'s rows [a, b) into its k best candidates at step t: those ending
 * in eos finish, the others become rows of step t+1 (appended at *new_rows). Returns b. */
static int advance_sentence(const mt_model_info *in, search_run *sr, int a, int rows, int t, int *new_rows)
{
    const mt_search_options *o = sr->o;
    const int *rs = sr->rows;
    int s = rs[a], b = a, cur = sr->cur;
    while (b < rows && rs[b] == s)
        b++;
    mt_sentence *S = &sr->sents[s];
    int k = sr->K - S->n_fin, n_top = 0;
    candidate top[256];
    for (int r = a; r < b; r++)
        for (int i = 0; i < sr->n_cand[r]; i++)
            mt_keep_best(top, &n_top, k, sr->best[(size_t)r * (size_t)sr->K + (size_t)i]);
    int cancelled = o->cancel && o->cancel(o->cancel_user, s);
    if (cancelled)
        S->status = MT_ERR_CANCELLED;
    int *ns = sr->next, *ntok = sr->next + sr->max_rows;
    float *ncum = (float *)(sr->next + 2 * sr->max_rows);
    for (int i = 0; i < n_top && !cancelled; i++) {
        const candidate *c = &top[i];
        const int *ptoks = sr->toks[cur] + (size_t)c->row * sr->stride;
        if (c->token == in->eos_id) {
            int f = S->fin_first + S->n_fin++;
            int32_t *ids = sr->fin_ids + (size_t)f * sr->stride;
            for (int q = 0; q < t; q++)
                ids[q] = ptoks[q];
            sr->fin[f] = (mt_hypothesis){.ids = ids, .length = t,
                                         .score = c->score / powf((float)(t + 1), o->length_penalty)};
            if (sr->want_hist)
                finish_history(sr, c, s, f, t, ids);
        } else {
            int nr = (*new_rows)++;
            ns[nr] = s;
            ntok[nr] = c->token;
            ncum[nr] = c->score;
            int *dt = sr->toks[!cur] + (size_t)nr * sr->stride, *dh = sr->hist[!cur] + (size_t)nr * sr->stride;
            memcpy(dt, ptoks, sizeof(int) * (size_t)t);
            dt[t] = c->token;
            memcpy(dh, sr->hist[cur] + (size_t)c->row * sr->stride, sizeof(int) * (size_t)(t + 1));
            if (sr->want_hist)
                extend_history(sr, c, s, nr, t);
        }
    }
    return b;
}

/* Each sentence's finished hypotheses, best first (stable), into results. */
static void collect_results(search_run *sr, int n, mt_result *results)
{
    for (int s = 0; s < n; s++) {
        mt_sentence *S = &sr->sents[s];
        mt_hypothesis *h = sr->fin + S->fin_first;
        for (int i = 1; i < S->n_fin; i++) { /* insertion sort: stable, n_fin <= beam */
            mt_hypothesis x = h[i];
            int j = i;
            while (j > 0 && h[j - 1].score < x.score) {
                h[j] = h[j - 1];
                j--;
            }
            h[j] = x;
        }
        int keep = S->status == MT_OK ? (S->n_fin < sr->o->n_best ? S->n_fin : sr->o->n_best) : 0;
        results[s] = (mt_result){.status = S->status, .n_hyps = keep, .hyps = h};
    }
}

/* One batch on one state: every product split into st->threads tasks. */
static int search_batch(mt_state *st, const mt_search_options *o, int n, const int32_t *const *src,
                        const int *lens, mt_result *results)
{
    const mt_model *m = st->model;
    const mt_model_info *in = &m->info;
    float *kv;
    int max_src, rc = prepare_sources(st, n, src, lens, &kv, &max_src);
    if (rc)
        return rc;
    search_run sr = {.o = o, .K = o->beam_size, .V = in->tgt_vocab_size, .max_src = max_src, .src = src,
                     .lens = lens};
    if ((rc = search_alloc(st, &sr, n, lens)) || (rc = search_alloc_history(st, &sr)))
        return rc;
    int opts_active = mt_decode_opts_active(o);
    float *scratch = NULL;
    if (opts_active && mt_decode_opts_sampling(o)) {
        scratch = mt_buf_reserve(&st->sample_scratch,
                                 sizeof(float) * (size_t)st->threads * (size_t)sr.V);
        if (!scratch)
            return fail(st, MT_ERR_NOMEM, "out of memory for sampling");
    }

    int rows = n;
    size_t slot_base = 0, R = sr.max_rows;
    for (int r = 0; r < n; r++) {
        sr.rows[r] = r;
        sr.rows[R + r] = in->decoder_start_id;
        ((float *)(sr.rows + 2 * R))[r] = 0.0f;
    }
    int *src_off = st->src_off.ptr; /* filled by the encoder */
    for (int t = 0; rows > 0; t++) {
        for (int r = 0; r < rows; r++)
            sr.hist[sr.cur][(size_t)r * sr.stride + (size_t)t] = (int)(slot_base + (size_t)r);
        mt_decoder_input din = {.rows = rows, .step = t, .tokens = sr.rows + R, .row_sent = sr.rows,
                                .hist = sr.hist[sr.cur], .hist_stride = (int)sr.stride, .slot_base = slot_base,
                                .cross_kv = kv, .src_off = src_off, .src_len = lens, .max_src_len = max_src,
                                .attn_out = mt_decode_opts_aligns(o) ? sr.attn : NULL,
                                .attn_layer = mt_decode_opts_layer(in, o)};
        float *logits;
        if ((rc = mt_decoder_step(st, &din, &logits)))
            return fail_keep(st, rc, "the decoder failed");
        slot_base += (size_t)rows;
        rank_job rj = {.model = m, .logits = logits, .rows = rows, .vocab = sr.V, .step = t, .row_sent = sr.rows,
                       .sents = sr.sents, .cum = (float *)(sr.rows + 2 * R), .beam = sr.K, .best = sr.best,
                       .n_best = sr.n_cand, .scratch = scratch, .opts = o, .opts_active = opts_active,
                       .materialise = opts_active || sr.want_hist, .gen = sr.toks[sr.cur],
                       .gen_stride = sr.stride};
        sr.logits = logits;
        mt_pool_run(st->pool, rank_task, &rj, st->threads);
        int new_rows = 0;
        for (int a = 0; a < rows;) /* each sentence's rows are contiguous */
            a = advance_sentence(in, &sr, a, rows, t, &new_rows);
        int *swap = sr.rows;
        sr.rows = sr.next;
        sr.next = swap;
        sr.cur = !sr.cur;
        rows = new_rows;
    }
    /* The row buffers may have been swapped: keep the state pointing at what it owns. */
    if (sr.rows != st->rows.ptr) {
        mt_buf tmp = st->rows;
        st->rows = st->next_rows;
        st->next_rows = tmp;
    }
    collect_results(&sr, n, results);
    return MT_OK;
}

/* A batch split across threads: part p holds the sentences p, p + parts, ... (a batch
 * sorted by length gives each part the same mix), with the options that are per
 * sentence (prefixes, sample indices, cancellation) renumbered to the part's order. */
typedef struct {
    int n;
    const int32_t **src;
    int *lens;
    uint64_t *index;
    const int32_t **prefix;
    int *prefix_len;
    mt_result *results;
} split_part;

typedef struct {
    mt_state **states;           /* one one-thread state per part */
    const mt_search_options *o;
    split_part *parts;
    int n_parts;
    int rc[MT_SPLIT_MAX];
} split_job;

typedef struct {
    const mt_search_options *o;
    int part, parts;             /* the part's sentences are part, part + parts, ... */
} split_cancel_ctx;

static int split_cancel(void *user, int index)
{
    const split_cancel_ctx *c = user;
    return c->o->cancel(c->o->cancel_user, c->part + index * c->parts);
}

static void split_task(void *p, int task, int n_tasks)
{
    (void)n_tasks;
    split_job *j = p;
    split_part *part = &j->parts[task];
    mt_search_options o = *j->o;
    split_cancel_ctx cc = {j->o, task, j->n_parts};
    o.sentence_index = part->index;
    o.target_prefix = j->o->target_prefix ? part->prefix : NULL;
    o.target_prefix_len = j->o->target_prefix ? part->prefix_len : NULL;
    if (j->o->cancel) {
        o.cancel = split_cancel;
        o.cancel_user = &cc;
    }
    j->rc[task] = search_batch(j->states[task], &o, part->n, part->src, part->lens, part->results);
}

/* Whether a batch of n sentences runs faster as one part per thread, each searched on
 * one core with no synchronisation between them, than as one batch whose products are
 * split: a decoding step of a small model is too short to split well (products of a few
 * dozen rows, then the log-softmax, top-k and beam bookkeeping on one thread), so two
 * cores on halves of the batch do about 1.5 times the work of two cores on the whole. */
static int split_parts(const mt_state *st, int n)
{
    if (st->split_min <= 0)
        return 0;
    int parts = st->threads < MT_SPLIT_MAX ? st->threads : MT_SPLIT_MAX;
    if (parts > n / st->split_min) /* each part gets at least split_min sentences */
        parts = n / st->split_min;
    return parts;
}

static int search_split(mt_state *st, const mt_search_options *o, int n, const int32_t *const *src,
                        const int *lens, mt_result *results, int parts)
{
    char err[200];
    for (int p = st->n_split; p < parts; p++) {
        if (!(st->split[p] = mt_state_create_in(st->model, NULL, 1, err, sizeof err)))
            return fail(st, MT_ERR_NOMEM, "out of memory for a batch split across threads");
        st->split[p]->split_min = 0;
        st->n_split = p + 1;
    }
    size_t per = sizeof(const int32_t *) * 2 + sizeof(int) * 2 + sizeof(uint64_t) + sizeof(mt_result);
    unsigned char *mem = mt_buf_reserve(&st->split_scratch, per * (size_t)n + sizeof(split_part) * (size_t)parts);
    if (!mem)
        return fail(st, MT_ERR_NOMEM, "out of memory for a batch split across threads");
    split_part *part = (split_part *)mem;
    const int32_t **src_at = (const int32_t **)(part + parts), **prefix_at = src_at + n;
    mt_result *res_at = (mt_result *)(prefix_at + n);
    uint64_t *index_at = (uint64_t *)(res_at + n);
    int *lens_at = (int *)(index_at + n), *plen_at = lens_at + n;
    int at = 0;
    for (int p = 0; p < parts; p++) {
        split_part *q = &part[p];
        *q = (split_part){.n = 0, .src = src_at + at, .lens = lens_at + at, .index = index_at + at,
                          .prefix = prefix_at + at, .prefix_len = plen_at + at, .results = res_at + at};
        for (int s = p; s < n; s += parts, q->n++) {
            q->src[q->n] = src[s];
            q->lens[q->n] = lens[s];
            q->index[q->n] = o->sentence_index ? o->sentence_index[s] : (uint64_t)s;
            q->prefix[q->n] = o->target_prefix ? o->target_prefix[s] : NULL;
            q->prefix_len[q->n] = o->target_prefix && o->target_prefix_len ? o->target_prefix_len[s] : 0;
        }
        at += q->n;
    }
    split_job job = {.states = st->split, .o = o, .parts = part, .n_parts = parts};
    mt_pool_run(st->pool, split_task, &job, parts);
    for (int p = 0; p < parts; p++) {
        if (job.rc[p]) {
            snprintf(st->error, sizeof st->error, "%s", mt_state_error(st->split[p]));
            return job.rc[p];
        }
        for (int i = 0; i < part[p].n; i++)
            results[p + i * parts] = part[p].results[i];
    }
    return MT_OK;
}

int mt_translate_ids(mt_state *st, const mt_search_options *o, int n, const int32_t *const *src,
                     const int *lens, mt_result *results)
{
    st->error[0] = 0;
    if (n < 0 || o->beam_size < 1 || o->beam_size > 256 || o->n_best < 1 || o->n_best > o->beam_size ||
        o->max_length < 1)
        return fail(st, MT_ERR_INVALID, "invalid search options: need 1 <= n_best <= beam_size <= 256 and max_length >= 1");
    if (mt_decode_opts_check(&st->model->info, o, n, st->error, sizeof st->error))
        return MT_ERR_INVALID;
    int rc = check_sources(st, n, src, lens);
    if (rc || n == 0)
        return rc;
    int *kept = NULL;
    if (st->model->drop_source_eos) { /* a model trained without eos on the source side */
        if (!(kept = malloc(sizeof *kept * (size_t)n)))
            return fail(st, MT_ERR_NOMEM, "out of memory");
        for (int i = 0; i < n; i++)
            kept[i] = lens[i] > 1 && src[i][lens[i] - 1] == st->model->info.eos_id ? lens[i] - 1 : lens[i];
        lens = kept;
    }
    int parts = split_parts(st, n);
    rc = parts > 1 ? search_split(st, o, n, src, lens, results, parts) : search_batch(st, o, n, src, lens, results);
    free(kept);
    return rc;
}

int mt_encode_one(mt_state *st, const int32_t *src, int src_len, float *out)
{
    float *kv;
    int max_src, rc = check_sources(st, 1, &src, &src_len);
    if (rc || (rc = prepare_sources(st, 1, &src, &src_len, &kv, &max_src)))
        return rc;
    memcpy(out, st->enc_x.ptr, sizeof(float) * (size_t)src_len * (size_t)st->model->info.d_model);
    return MT_OK;
}

int mt_decoder_logits(mt_state *st, const int32_t *src, int src_len, const int32_t *prefix, int prefix_len,
                      float *out)
{
    const mt_model_info *in = &st->model->info;
    float *kv;
    int max_src, rc = check_sources(st, 1, &src, &src_len);
    if (rc || (rc = prepare_sources(st, 1, &src, &src_len, &kv, &max_src)))
        return rc;
    if (prefix_len < 1 || prefix_len > in->max_positions)
        return fail(st, MT_ERR_INVALID, "prefix length out of range");
    int *hist = mt_buf_reserve(&st->hist[0], sizeof(int) * (size_t)prefix_len);
    if (!hist)
        return fail(st, MT_ERR_NOMEM, "out of memory");
    int zero = 0, off = 0;
    for (int t = 0; t < prefix_len; t++) {
        if (prefix[t] < 0 || prefix[t] >= in->tgt_vocab_size)
            return fail(st, MT_ERR_INVALID, "prefix token outside the target vocabulary");
        hist[t] = t;
        mt_decoder_input din = {.rows = 1, .step = t, .tokens = &prefix[t], .row_sent = &zero, .hist = hist,
                                .hist_stride = prefix_len, .slot_base = (size_t)t, .cross_kv = kv,
                                .src_off = &off, .src_len = &src_len, .max_src_len = src_len};
        float *logits;
        if ((rc = mt_decoder_step(st, &din, &logits)))
            return fail_keep(st, rc, "the decoder failed");
        memcpy(out + (size_t)t * (size_t)in->tgt_vocab_size, logits, sizeof(float) * (size_t)in->tgt_vocab_size);
    }
    return MT_OK;
}
