/* rejoin.c: when a job's last sentence is done, its hypotheses are decoded, protected
 * spans and inline markup put back by alignment, and each text rejoined from its
 * sentences (on the worker thread that finished it) before the caller's callback runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "status.h"
#include "service_impl.h"

/* ---- finish: decode and rejoin ---- */

static char *format_ids(const int32_t *ids, int n)
{
    char *out = malloc((size_t)n * 12 + 1), *p = out;
    if (!out)
        return NULL;
    *p = 0;
    for (int i = 0; i < n; i++)
        p += sprintf(p, i ? " %d" : "%d", ids[i]);
    return out;
}

/* Decodes sentence si's hypotheses into h (texts malloc'd, scores borrowed from its item). */
static int decode_sentence(mt_service_job *j, int si, mt_sentence_hyps *h, char *err, size_t errlen)
{
    const mt_translator *tr = j->svc->trs[j->model];
    mt_item *it = &j->job.items[j->item_of[si]];
    h->texts = calloc((size_t)it->n_hyps + 1, sizeof *h->texts);
    h->scores = it->scores;
    if (!h->texts) {
        mt_error(-1, err, errlen, "out of memory");
        return -1;
    }
    if (it->n_hyps > 0)
        j->target_tokens += it->hyp_lens[0];
    for (int k = 0; k < it->n_hyps; k++) {
        h->texts[k] = j->opts.output_ids ? format_ids(it->hyp_ids[k], it->hyp_lens[k])
                                         : mt_translator_decode(tr, it->hyp_ids[k], it->hyp_lens[k], err, errlen);
        if (!h->texts[k]) {
            if (j->opts.output_ids)
                mt_error(-1, err, errlen, "out of memory");
            return -1;
        }
        h->n = k + 1;
    }
    return 0;
}

typedef struct {
    int (*p)[2];
    int n, cap;
} pairs;

static int add_pair(pairs *ps, int a, int b)
{
    if (ps->n == ps->cap) {
        int c = ps->cap * 2 + 16;
        void *g = realloc(ps->p, sizeof *ps->p * (size_t)c);
        if (!g)
            return -1;
        ps->p = g;
        ps->cap = c;
    }
    ps->p[ps->n][0] = a;
    ps->p[ps->n][1] = b;
    ps->n++;
    return 0;
}

static int by_pair(const void *pa, const void *pb)
{
    const int *a = pa, *b = pb;
    return a[0] != b[0] ? (a[0] > b[0]) - (a[0] < b[0]) : (a[1] > b[1]) - (a[1] < b[1]);
}

/* Sorted, duplicates dropped. */
static void unique_pairs(pairs *ps)
{
    if (ps->n < 2)
        return;
    qsort(ps->p, (size_t)ps->n, sizeof *ps->p, by_pair);
    int w = 1;
    for (int i = 1; i < ps->n; i++)
        if (by_pair(ps->p[i], ps->p[w - 1]))
            memcpy(ps->p[w++], ps->p[i], sizeof *ps->p);
    ps->n = w;
}

/* Word pairs of hypothesis k over the sentences [first, first + n) of one unit, their
 * words counted from (*src_word, *out_word), which advance past them. */
static int word_pairs(const mt_service_job *j, int first, int n, int k, int *src_word, int *out_word, pairs *ps)
{
    const mt_translator *tr = j->svc->trs[j->model];
    const mt_tokenizer *tok = mt_translator_tokenizer(tr);
    int32_t eos = mt_translator_model_info(tr)->eos_id;
    for (int si = first; si < first + n; si++) {
        const mt_item *it = &j->job.items[j->item_of[si]];
        int kk = k < it->n_hyps ? k : it->n_hyps - 1;
        if (kk < 0)
            continue;
        int sl = j->src_lens[si], hl = it->hyp_lens[kk];
        int *smap = malloc(sizeof *smap * ((size_t)sl + 1)), *tmap = malloc(sizeof *tmap * ((size_t)hl + 1));
        if (!smap || !tmap) {
            free(smap);
            free(tmap);
            return -1;
        }
        int sw = mt_word_map(tok, 0, eos, j->ids[si], sl, smap);
        int tw = mt_word_map(tok, 1, eos, it->hyp_ids[kk], hl, tmap);
        int rc = 0;
        for (int q = 0; !rc && it->alignment && q < hl; q++) {
            int a = it->alignment[kk][q];
            if (a >= 0 && a < sl && smap[a] >= 0 && tmap[q] >= 0)
                rc = add_pair(ps, *src_word + smap[a], *out_word + tmap[q]);
        }
        free(smap);
        free(tmap);
        if (rc)
            return -1;
        *src_word += sw;
        *out_word += tw;
    }
    return 0;
}

/* The best translation's token scores and token alignments over text t's sentences. */
static int token_extras(mt_service_job *j, int t, int first, int n, mt_translation *r)
{
    int total = 0;
    for (int si = first; si < first + n; si++) {
        const mt_item *it = &j->job.items[j->item_of[si]];
        total += it->n_hyps > 0 ? it->hyp_lens[0] : 0;
    }
    (void)t;
    r->n_tokens = total;
    if (j->opts.search.return_scores && !(r->token_scores = calloc((size_t)total + 1, sizeof *r->token_scores)))
        return -1;
    if (j->opts.search.return_alignments &&
        !(r->token_alignments = calloc((size_t)total + 1, sizeof *r->token_alignments)))
        return -1;
    int src_off = 0, out = 0;
    for (int si = first; si < first + n; si++) {
        const mt_item *it = &j->job.items[j->item_of[si]];
        for (int q = 0; it->n_hyps > 0 && q < it->hyp_lens[0]; q++, out++) {
            if (r->token_scores && it->token_scores)
                r->token_scores[out] = it->token_scores[0][q];
            if (r->token_alignments && it->alignment) {
                r->token_alignments[out][0] = src_off + it->alignment[0][q];
                r->token_alignments[out][1] = out;
            }
        }
        src_off += j->src_lens[si];
    }
    return 0;
}

typedef struct {
    char *s;
    size_t n;
} strbuf;

static int append(strbuf *b, const char *s, size_t n)
{
    char *g = realloc(b->s, b->n + n + 1);
    if (!g)
        return -1;
    memcpy(g + b->n, s, n);
    b->s = g;
    b->n += n;
    b->s[b->n] = 0;
    return 0;
}

/* Unit u's k-th translation (malloc'd) from its sentences' hypotheses hyps[0, ...) (the
 * sentences from `first` in text order): rejoined, then its protected spans or inline
 * markup put back by the word alignment; *score and *used: the mean score, sentences. */
static char *join_unit(mt_service_job *j, int u, int first, const mt_sentence_hyps *hyps, int k, float *score,
                       int *used, pairs *user_pairs, int *src_word, int *out_word)
{
    mt_join_mode mode = j->opts.output_ids ? MT_JOIN_IDS : j->html_nodes ? MT_JOIN_HTML : MT_JOIN_TEXT;
    int n = 0;
    for (int s = 0; s < j->n_segs[u]; s++)
        n += j->segs[u][s].translate;
    *used = n;
    *score = 0;
    if (j->verbatim[u]) {
        char *c = malloc(j->lens[u] + 1);
        if (c)
            memcpy(c, j->texts[u], j->lens[u] + 1);
        return c;
    }
    char *joined = mt_translator_join(j->texts[u], j->segs[u], j->n_segs[u], hyps, k, mode, score);
    if (joined && j->mk[u]) { /* the block's edges are verbatim units: no whitespace at its ends */
        size_t a = strspn(joined, " \t\r\n\f"), e = strlen(joined);
        while (e > a && strchr(" \t\r\n\f", joined[e - 1]))
            e--;
        memmove(joined, joined + a, e - a);
        joined[e - a] = 0;
    }
    int restore = j->prot[u] || (j->mk[u] && mt_markup_count(j->mk[u]) > 0);
    if (joined && !restore && !user_pairs && j->mk[u]) { /* no markup to place: escaped */
        char *out = mt_markup_restore(j->mk[u], joined, NULL, 0);
        if (out)
            mt_html_unwrap_protected(out);
        free(joined);
        return out;
    }
    if (!joined || (!restore && !user_pairs))
        return joined;
    pairs ps = {0};
    int sw = 0, ow = 0;
    if (word_pairs(j, first, n, k, &sw, &ow, &ps)) {
        free(ps.p);
        free(joined);
        return NULL;
    }
    unique_pairs(&ps);
    char *out = joined;
    if (j->prot[u])
        out = mt_protect_restore(j->prot[u], joined, (const int(*)[2])ps.p, ps.n);
    else if (j->mk[u]) {
        out = mt_markup_restore(j->mk[u], joined, (const int(*)[2])ps.p, ps.n);
        if (out)
            mt_html_unwrap_protected(out);
    }
    if (out != joined)
        free(joined);
    for (int i = 0; out && user_pairs && i < ps.n; i++)
        if (add_pair(user_pairs, *src_word + ps.p[i][0], *out_word + ps.p[i][1])) {
            free(out);
            out = NULL;
        }
    *src_word += sw;
    *out_word += ow;
    free(ps.p);
    return out;
}

/* Text t's n-best translations from its sentences' hypotheses hyps[0, ...) (the first
 * being sentence `first` in text order). */
static int join_text(mt_service_job *j, int t, int first, const mt_sentence_hyps *hyps)
{
    int n_best = j->opts.search.n_best;
    mt_translation *r = &j->results[t];
    r->texts = calloc((size_t)n_best + 1, sizeof *r->texts);
    r->scores = calloc((size_t)n_best + 1, sizeof *r->scores);
    if (!r->texts || !r->scores)
        return -1;
    r->n_best = n_best;
    int want_pairs = j->opts.search.return_alignments && !j->opts.output_ids;
    int n_sents = 0;
    for (int k = 0; k < n_best; k++) {
        strbuf b = {0};
        pairs ps = {0};
        int used_total = 0, parts = 0, sw = 0, ow = 0, sent = first;
        double sum = 0;
        float single = 0;
        if (append(&b, "", 0))
            return -1;
        for (int u = j->first_unit[t]; u < j->first_unit[t + 1]; u++) {
            float sc;
            int used;
            char *part = join_unit(j, u, sent, hyps + (sent - first), k, &sc, &used,
                                   want_pairs && k == 0 ? &ps : NULL, &sw, &ow);
            if (!part || append(&b, part, strlen(part))) {
                free(part);
                free(b.s);
                free(ps.p);
                return -1;
            }
            free(part);
            if (used) {
                single = sc;
                sum += (double)sc * used;
                used_total += used;
                parts++;
            }
            sent += used;
        }
        n_sents = sent - first;
        r->texts[k] = b.s;
        /* one part: its score exactly as the join computed it */
        r->scores[k] = parts <= 1 ? single : (float)(sum / used_total);
        if (k == 0 && want_pairs) {
            unique_pairs(&ps);
            r->alignments = ps.p;
            r->n_alignments = ps.n;
        } else {
            free(ps.p);
        }
    }
    if ((j->opts.search.return_scores || j->opts.search.return_alignments) && !j->opts.output_ids)
        return token_extras(j, t, first, n_sents, r);
    return 0;
}

/* Every sentence is translated: decode and rejoin. Returns 0 or -1 with j->message set. */
static int build_results(mt_service_job *j)
{
    mt_sentence_hyps *hyps = calloc((size_t)j->n_sents + 1, sizeof *hyps);
    j->results = calloc((size_t)j->n_texts + 1, sizeof *j->results);
    int rc = hyps && j->results ? 0 : -1;
    if (rc)
        snprintf(j->message, sizeof j->message, "out of memory");
    for (int si = 0; !rc && si < j->n_sents; si++)
        rc = decode_sentence(j, si, &hyps[si], j->message, sizeof j->message);
    for (int t = 0, first = 0; !rc && t < j->n_texts; t++) {
        if (join_text(j, t, first, hyps + first)) {
            snprintf(j->message, sizeof j->message, "out of memory");
            rc = -1;
        }
        for (int u = j->first_unit[t]; u < j->first_unit[t + 1]; u++)
            for (int s = 0; s < j->n_segs[u]; s++)
                first += j->segs[u][s].translate;
    }
    for (int si = 0; hyps && si < j->n_sents; si++) {
        for (int k = 0; k < hyps[si].n; k++)
            free(hyps[si].texts[k]);
        free(hyps[si].texts);
    }
    free(hyps);
    return rc;
}

/* The batcher finished the job (worker thread, or purge/abort): outcome, then results. */
void mt_service_job_finished(mt_job *job, void *user)
{
    (void)job;
    mt_service_job *j = user;
    int all_ok = 1;
    for (int i = 0; i < j->job.n_items; i++)
        all_ok &= j->job.items[i].status == MT_OK;
    if (all_ok) {
        j->outcome = build_results(j) ? MT_SERVICE_FAILED : MT_SERVICE_OK;
    } else {
        int reason = atomic_load(&j->job.cancel);
        j->outcome = reason != MT_JOB_RUNNING ? reason : MT_SERVICE_FAILED;
        if (reason == MT_JOB_RUNNING)
            snprintf(j->message, sizeof j->message, "%s", j->job.error ? j->job.error_text : "internal error");
    }
    j->done(j, j->user);
}

