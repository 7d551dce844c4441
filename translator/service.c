/* service.c: the text pipeline around the batcher. A request's texts are segmented and
 * encoded on the caller's thread (prepare), their sentences queued longest first so that
 * the batcher's length-closest batches follow the sorted order (run), and when the last
 * sentence is done the hypotheses are decoded and each text rejoined (on the worker
 * thread that finished it) before the caller's callback runs. */
#include "service.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "pivot.h"
#include "service_impl.h"

_Static_assert((int)MT_SERVICE_CLIENT_GONE == (int)MT_JOB_CLIENT_GONE &&
                   (int)MT_SERVICE_DEADLINE == (int)MT_JOB_DEADLINE && (int)MT_SERVICE_SHUTDOWN == (int)MT_JOB_SHUTDOWN,
               "service outcomes extend the batcher's cancel reasons");

void mt_service_options_default(const mt_service *svc, int model, mt_service_options *opts)
{
    memset(opts, 0, sizeof *opts);
    mt_search_options_default(mt_translator_model(svc->trs[model]), &opts->search);
    opts->search.n_best = 1;
    opts->search.unk_id = mt_tokenizer_unk_id(mt_translator_tokenizer(svc->trs[model]));
    opts->protect = MT_PROTECT_ALL;
}

int mt_service_check_options(const mt_service *svc, int model, const mt_service_options *opts, char *err,
                             size_t errlen)
{
    const mt_model_info *in = mt_translator_model_info(svc->trs[model]);
    if (opts->search.max_length > in->max_positions) {
        mt_error(-1, err, errlen, "max_length %d exceeds the model's limit of %d tokens", opts->search.max_length,
                 in->max_positions);
        return MT_SERVICE_INVALID;
    }
    mt_search_options o = opts->search;
    o.target_prefix = NULL;
    if (mt_search_options_check(in, &o, err, errlen))
        return MT_SERVICE_INVALID;
    if (opts->search.return_alignments && opts->input == MT_FORMAT_HTML && !opts->output_ids) {
        mt_error(-1, err, errlen, "return_alignments is not available with format html (HTML answers keep markup)");
        return MT_SERVICE_INVALID;
    }
    return MT_SERVICE_OK;
}

/* ---- prepare: segment and encode ---- */

/* Space-separated ids "12 7 9" below vocab (which side: in messages) into a malloc'd array
 * with room for one more; the count, or -1 with a message naming the byte. */
static int parse_ids(const char *text, size_t len, int vocab, const char *side, int32_t **ids, char *err,
                     size_t errlen)
{
    int32_t *buf = malloc(sizeof *buf * (len / 2 + 2));
    int n = 0;
    if (!buf)
        return mt_error(-1, err, errlen, "out of memory");
    for (size_t i = 0; i < len;) {
        if (text[i] == ' ' || text[i] == '\t') {
            i++;
            continue;
        }
        long v = 0;
        size_t start = i;
        while (i < len && text[i] >= '0' && text[i] <= '9' && v <= vocab)
            v = v * 10 + (text[i++] - '0');
        if (i == start || (i < len && text[i] != ' ' && text[i] != '\t') || v >= vocab) {
            free(buf);
            return mt_error(-1, err, errlen, "bad %s id at byte %zu: expected integers 0 to %d", side,
                            start, vocab - 1);
        }
        buf[n++] = (int32_t)v;
    }
    *ids = buf;
    return n;
}

/* MT_FORMAT_IDS: the whole text is one sentence given as ids; eos is appended. */
static int parse_source_ids(const mt_translator *tr, const char *text, size_t len, int32_t **ids, char *err,
                            size_t errlen)
{
    const mt_model_info *in = mt_model_get_info(mt_translator_model(tr));
    int n = parse_ids(text, len, in->src_vocab_size, "source", ids, err, errlen);
    if (n >= 0) (*ids)[n++] = in->eos_id;
    return n;
}

/* Cuts unit u into job->segs[u]; returns its sentence count or -1 with a message. */
static int segment_text(mt_service_job *j, const mt_translator *tr, int u, char *err, size_t errlen)
{
    int max_tokens = mt_translator_max_source_tokens(tr);
    if (j->verbatim[u])
        return 0;
    if (j->opts.input == MT_FORMAT_IDS) { /* one sentence, unless empty */
        j->segs[u] = calloc(1, sizeof *j->segs[u]);
        if (!j->segs[u]) {
            mt_error(-1, err, errlen, "out of memory");
            return -1;
        }
        j->segs[u][0] = (mt_segment){0, j->lens[u], 1};
        j->n_segs[u] = j->lens[u] > 0;
    } else {
        if (j->opts.one_sentence && !j->html_nodes)
            j->n_segs[u] = mt_translator_segment_whole(tr, j->texts[u], j->lens[u], max_tokens, &j->segs[u],
                                                       err, errlen);
        else
            j->n_segs[u] = (j->html_nodes ? mt_translator_segment_html : mt_translator_segment)(
                tr, j->texts[u], j->lens[u], max_tokens, &j->segs[u], err, errlen);
        if (j->n_segs[u] < 0) {
            j->n_segs[u] = 0;
            return -1;
        }
    }
    int n = 0;
    for (int s = 0; s < j->n_segs[u]; s++)
        n += j->segs[u][s].translate;
    return n;
}

/* The target_prefix of text t as ids into sentence si's slot. */
static int encode_prefix(mt_service_job *j, const mt_translator *tr, int t, int si, char *err, size_t errlen)
{
    const char *p = j->opts.target_prefix ? j->opts.target_prefix[t] : NULL;
    if (!p || !*p)
        return 0;
    int n;
    if (j->opts.prefix_ids) {
        n = parse_ids(p, strlen(p), mt_translator_model_info(tr)->tgt_vocab_size, "target", &j->prefix[si], err,
                      errlen);
    } else {
        const mt_tokenizer *tok = mt_translator_tokenizer(tr);
        size_t len = strlen(p);
        n = mt_tokenizer_encode_target(tok, p, len, NULL, 0, err, errlen);
        if (n >= 0 && !(j->prefix[si] = malloc(sizeof(int32_t) * ((size_t)n + 1))))
            return mt_error(-1, err, errlen, "out of memory");
        if (n >= 0)
            n = mt_tokenizer_encode_target(tok, p, len, j->prefix[si], n, err, errlen);
    }
    if (n < 0) {
        char why[200];
        snprintf(why, sizeof why, "%s", err);
        return mt_error(-1, err, errlen, "text %d: target_prefix: %s", t, why);
    }
    j->prefix_len[si] = n;
    return 0;
}

/* Encodes every sentence of every unit into j->ids, in text order; a text's target_prefix
 * goes with its first sentence. */
static int encode_all(mt_service_job *j, const mt_translator *tr, int32_t token, int *lens, char *err,
                      size_t errlen)
{
    int si = 0;
    for (int t = 0; t < j->n_texts; t++) {
        int first = si;
        for (int u = j->first_unit[t]; u < j->first_unit[t + 1]; u++)
            for (int s = 0; s < j->n_segs[u]; s++) {
                const mt_segment *sg = &j->segs[u][s];
                if (!sg->translate)
                    continue;
                lens[si] = j->opts.input == MT_FORMAT_IDS
                               ? parse_source_ids(tr, j->texts[u], j->lens[u], &j->ids[si], err, errlen)
                               : mt_translator_encode_to(tr, token, j->html_nodes, j->texts[u] + sg->start,
                                                         sg->len, &j->ids[si], err, errlen);
                if (lens[si] < 0)
                    return -1;
                j->src_lens[si] = lens[si];
                si++;
            }
        if (si > first && encode_prefix(j, tr, t, first, err, errlen))
            return -1;
    }
    return 0;
}

typedef struct {
    int len, sentence;
} queued;

static int longest_first(const void *pa, const void *pb)
{
    const queued *a = pa, *b = pb;
    if (a->len != b->len)
        return b->len - a->len;
    return a->sentence - b->sentence;
}

/* Queue order: longest sentence first (ties in text order), so that batches of similar
 * lengths form from the front of the queue. */
static int order_items(mt_service_job *j, const int *lens)
{
    int n = j->n_sents;
    queued *order = malloc(sizeof *order * ((size_t)n + 1));
    j->job.items = calloc((size_t)n + 1, sizeof *j->job.items);
    j->item_of = calloc((size_t)n + 1, sizeof *j->item_of);
    if (!order || !j->job.items || !j->item_of) {
        free(order);
        return -1;
    }
    for (int i = 0; i < n; i++)
        order[i] = (queued){lens[i], i};
    qsort(order, (size_t)n, sizeof *order, longest_first);
    for (int k = 0; k < n; k++) {
        j->item_of[order[k].sentence] = k;
        j->job.items[k].ids = j->ids[order[k].sentence];
        j->job.items[k].len = order[k].len;
        j->job.items[k].index = (uint64_t)order[k].sentence;
        j->job.items[k].prefix = j->prefix[order[k].sentence];
        j->job.items[k].prefix_len = j->prefix_len[order[k].sentence];
    }
    j->job.n_items = n;
    free(order);
    return 0;
}

/* Grows the per-unit arrays to hold unit u. */
static int unit_room(mt_service_job *j, int u, int *cap)
{
    if (u < *cap)
        return 0;
    int c = *cap * 2 + 8;
#define GROW(f)                                                                                          \
    do {                                                                                                 \
        void *g = realloc(j->f, sizeof *j->f * (size_t)c);                                               \
        if (!g)                                                                                          \
            return -1;                                                                                   \
        j->f = g;                                                                                        \
        memset(j->f + *cap, 0, sizeof *j->f * (size_t)(c - *cap));                                       \
    } while (0)
    GROW(texts);
    GROW(lens);
    GROW(verbatim);
    GROW(prot);
    GROW(mk);
    GROW(segs);
    GROW(n_segs);
#undef GROW
    *cap = c;
    return 0;
}

static int add_unit(mt_service_job *j, int *cap, const char *s, size_t n, int verbatim)
{
    int u = j->n_units;
    if (unit_room(j, u, cap) || !(j->texts[u] = malloc(n + 1)))
        return -1;
    memcpy(j->texts[u], s, n);
    j->texts[u][n] = 0;
    j->lens[u] = n;
    j->verbatim[u] = verbatim;
    j->n_units++;
    return 0;
}

/* mt_tokenizer_spells as a protect.h spells function: ctx is the const mt_tokenizer. */
static int spells_by_tokenizer(const void *tok, const char *ch, size_t n) { return mt_tokenizer_spells(tok, ch, n); }

/* The units of text t: the text itself, its text with protected spans cut out, or (HTML)
 * its blocks' plain text with their markup taken out, and the tags between. */
static int add_text_units(mt_service_job *j, int *cap, const char *text, size_t len)
{
    unsigned kinds = j->opts.protect | MT_PROTECT_LONG_WORD; /* never sent to the model */
    /* characters the model's source side cannot spell (MT_PROTECT_UNKNOWN) */
    const mt_tokenizer *tok = mt_translator_tokenizer(j->svc->trs[j->model]);
    if (j->opts.input == MT_FORMAT_HTML && !j->html_nodes) {
        mt_segment *blocks;
        int nb = mt_html_block_split(text, len, &blocks);
        if (nb < 0)
            return -1;
        for (int b = 0; b < nb; b++) {
            const char *s = text + blocks[b].start;
            if (!blocks[b].translate) {
                if (add_unit(j, cap, s, blocks[b].len, 1))
                    goto fail;
                continue;
            }
            /* whitespace at a block's edges stays where it is */
            size_t a = 0, e = blocks[b].len;
            while (a < e && strchr(" \t\r\n\f", s[a]))
                a++;
            while (e > a && strchr(" \t\r\n\f", s[e - 1]))
                e--;
            if (a && add_unit(j, cap, s, a, 1))
                goto fail;
            const char *tail = s + e;
            size_t tail_len = blocks[b].len - e;
            s += a;
            size_t blen = e - a;
            char *wrapped = kinds ? mt_html_wrap_protected_with(s, blen, kinds, spells_by_tokenizer, tok) : NULL;
            mt_markup *mk = mt_markup_split(wrapped ? wrapped : s, wrapped ? strlen(wrapped) : blen);
            free(wrapped);
            if (!mk)
                goto fail;
            if (add_unit(j, cap, mt_markup_text(mk), strlen(mt_markup_text(mk)), 0)) {
                mt_markup_free(mk);
                goto fail;
            }
            j->mk[j->n_units - 1] = mk;
            /* HTML whitespace: a line break inside a block is a space, not a new line */
            for (char *c = j->texts[j->n_units - 1]; *c; c++)
                if (*c == '\n' || *c == '\r' || *c == '\t' || *c == '\f')
                    *c = ' ';
            if (tail_len && add_unit(j, cap, tail, tail_len, 1))
                goto fail;
        }
        free(blocks);
        return 0;
    fail:
        free(blocks);
        return -1;
    }
    if (j->opts.input == MT_FORMAT_TEXT && !j->opts.output_ids && kinds) {
        mt_protect *p = mt_protect_create_with(text, len, kinds, spells_by_tokenizer, tok);
        if (!p)
            return -1;
        if (mt_protect_count(p) > 0) {
            if (add_unit(j, cap, mt_protect_text(p), strlen(mt_protect_text(p)), 0)) {
                mt_protect_free(p);
                return -1;
            }
            j->prot[j->n_units - 1] = p;
            return 0;
        }
        mt_protect_free(p);
    }
    return add_unit(j, cap, text, len, 0);
}

/* Builds every text's units. */
static int copy_texts(mt_service_job *j, int n, const char *const *texts, const size_t *lens)
{
    int cap = 0;
    j->n_texts = n;
    j->first_unit = calloc((size_t)n + 1, sizeof *j->first_unit);
    if (!j->first_unit || unit_room(j, 0, &cap))
        return -1;
    for (int t = 0; t < n; t++) {
        j->first_unit[t] = j->n_units;
        if (add_text_units(j, &cap, texts[t], lens[t]))
            return -1;
    }
    j->first_unit[n] = j->n_units;
    return 0;
}

/* Segments and encodes every text of j; MT_SERVICE_OK or why not. */
static int prepare_job(mt_service_job *j, const mt_translator *tr, const char *target_lang, char *err,
                       size_t errlen)
{
    for (int u = 0; u < j->n_units; u++) {
        int n = segment_text(j, tr, u, err, errlen);
        if (n < 0)
            return MT_SERVICE_INVALID;
        j->n_sents += n;
    }
    int32_t token = mt_translator_target_token(tr, target_lang);
    int *lens = calloc((size_t)j->n_sents + 1, sizeof *lens);
    j->ids = calloc((size_t)j->n_sents + 1, sizeof *j->ids);
    j->src_lens = calloc((size_t)j->n_sents + 1, sizeof *j->src_lens);
    j->prefix = calloc((size_t)j->n_sents + 1, sizeof *j->prefix);
    j->prefix_len = calloc((size_t)j->n_sents + 1, sizeof *j->prefix_len);
    if (!lens || !j->ids || !j->src_lens || !j->prefix || !j->prefix_len) {
        free(lens);
        mt_error(-1, err, errlen, "out of memory");
        return MT_SERVICE_NOMEM;
    }
    int rc = encode_all(j, tr, token, lens, err, errlen) ? MT_SERVICE_INVALID : MT_SERVICE_OK;
    if (!rc && order_items(j, lens)) {
        mt_error(-1, err, errlen, "out of memory");
        rc = MT_SERVICE_NOMEM;
    }
    free(lens);
    return rc;
}

int mt_service_prepare(mt_service *svc, int model, const mt_service_options *opts, int n,
                       const char *const *texts, const size_t *lens, mt_service_job **job, char *err,
                       size_t errlen)
{
    *job = NULL;
    if (model < 0 || model >= svc->n) {
        mt_error(-1, err, errlen, "no model %d", model);
        return MT_SERVICE_INVALID;
    }
    if (mt_service_check_options(svc, model, opts, err, errlen))
        return MT_SERVICE_INVALID;
    mt_service_job *j = calloc(1, sizeof *j);
    if (j) {
        j->opts = *opts;
        j->html_nodes = opts->input == MT_FORMAT_HTML && opts->output_ids;
        j->svc = svc; /* copy_texts reads the model's tokenizer */
        j->model = model;
    }
    if (!j || copy_texts(j, n, texts, lens)) {
        mt_error(-1, err, errlen, "out of memory");
        mt_service_job_free(j);
        return MT_SERVICE_NOMEM;
    }
    j->svc = svc;
    j->model = model;
    j->opts.target_lang = NULL;
    int rc = prepare_job(j, svc->trs[model], opts->target_lang, err, errlen);
    if (rc) {
        mt_service_job_free(j);
        return rc;
    }
    j->job.model = model;
    j->job.opts = opts->search;
    j->job.opts.target_prefix = NULL; /* per item */
    j->job.opts.target_prefix_len = NULL;
    j->job.opts.sentence_index = NULL;
    /* Protected spans and inline markup are put back by alignment. */
    for (int u = 0; u < j->n_units; u++)
        if (!opts->search.return_alignments && (j->prot[u] || (j->mk[u] && mt_markup_count(j->mk[u]) > 0))) {
            j->job.opts.return_alignments = 1;
            j->job.opts.alignment_layer = -1; /* the best layer; a caller's value was not checked */
        }
    j->job.deadline = opts->deadline;
    atomic_store(&j->job.cancel, MT_JOB_RUNNING);
    *job = j;
    return MT_SERVICE_OK;
}

int mt_service_run(mt_service *svc, mt_service_job *j, void (*done)(mt_service_job *, void *), void *user)
{
    if (j->pivot)
        return mt_pivot_run(j, done, user);
    j->done = done;
    j->user = user;
    j->job.on_done = mt_service_job_finished;
    j->job.user = j;
    if (j->job.n_items == 0) { /* only empty or blank texts */
        mt_service_job_finished(&j->job, j);
        return MT_SERVICE_OK;
    }
    int rc = mt_batcher_submit(svc->batcher, &j->job);
    return rc == 0 ? MT_SERVICE_OK : rc == -3 ? MT_SERVICE_SHUTDOWN : MT_SERVICE_BUSY;
}

void mt_service_arriving(mt_service *svc, int delta) { mt_batcher_arriving(svc->batcher, delta); }
int mt_service_job_cancel(mt_service_job *j, int reason)
{
    return j->pivot ? mt_pivot_cancel(j, reason) : mt_job_cancel(&j->job, reason);
}
int mt_service_job_expire(mt_service_job *j, double now)
{
    return j->pivot ? mt_pivot_expire(j, now) : mt_job_expire(&j->job, now);
}
void mt_service_purge(mt_service *svc) { mt_batcher_purge(svc->batcher); }
void mt_service_abort(mt_service *svc, int reason) { mt_batcher_abort(svc->batcher, reason); }

int mt_service_job_outcome(const mt_service_job *j, const char **message)
{
    if (message)
        *message = j->message;
    return j->outcome;
}

const mt_translation *mt_service_job_results(const mt_service_job *j) { return j->results; }

void mt_service_job_stats(const mt_service_job *j, mt_service_stats *st)
{
    if (j->pivot) {
        mt_pivot_stats(j, st);
        return;
    }
    memset(st, 0, sizeof *st);
    st->texts = j->n_texts;
    st->sentences = j->n_sents;
    for (int i = 0; i < j->job.n_items; i++)
        st->source_tokens += j->job.items[i].len;
    st->target_tokens = j->target_tokens;
    st->t_submitted = j->job.t_submitted;
    st->t_started = j->job.t_started;
    st->t_done = j->job.t_done;
}

void mt_service_job_free(mt_service_job *j)
{
    if (!j)
        return;
    if (j->pivot) {
        mt_pivot_free(j);
        return;
    }
    mt_job_clear_results(&j->job);
    for (int i = 0; i < j->n_sents; i++) {
        if (j->ids)
            free(j->ids[i]);
        if (j->prefix)
            free(j->prefix[i]);
    }
    for (int u = 0; u < j->n_units; u++) {
        free(j->texts[u]);
        free(j->segs[u]);
        mt_protect_free(j->prot[u]);
        mt_markup_free(j->mk[u]);
    }
    for (int t = 0; j->results && t < j->n_texts; t++)
        mt_translation_clear(&j->results[t]);
    free(j->ids);
    free(j->src_lens);
    free(j->prefix);
    free(j->prefix_len);
    free(j->item_of);
    free(j->job.items);
    free(j->first_unit);
    free(j->texts);
    free(j->lens);
    free(j->verbatim);
    free(j->prot);
    free(j->mk);
    free(j->segs);
    free(j->n_segs);
    free(j->results);
    free(j);
}

/* ---- blocking use ---- */

const char *mt_service_outcome_text(int outcome)
{
    switch (outcome) {
    case MT_SERVICE_BUSY: return "the translation queue is full";
    /* for good (cancelled, or refused after mt_service_abort(SHUTDOWN)): not "retry" */
    case MT_SERVICE_SHUTDOWN: return "the translation service is shutting down";
    case MT_SERVICE_DEADLINE: return "the translation did not finish before its deadline";
    case MT_SERVICE_CLIENT_GONE: return "translation was cancelled: nobody waits for it";
    default: return "translation was cancelled";
    }
}

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int done;
} waiter;

static void wake(mt_service_job *job, void *user)
{
    (void)job;
    waiter *w = user;
    pthread_mutex_lock(&w->mu);
    w->done = 1;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->mu);
}

/* Moves the job's results to out (the job keeps empty translations). */
static void take_results(mt_service_job *j, mt_translation *out)
{
    for (int t = 0; t < j->n_texts; t++) {
        out[t] = j->results[t];
        memset(&j->results[t], 0, sizeof j->results[t]);
    }
}

int mt_service_translate(mt_service *svc, int model, const mt_service_options *opts, int n,
                         const char *const *texts, const size_t *lens, mt_translation *out, char *err,
                         size_t errlen)
{
    memset(out, 0, sizeof *out * (size_t)n);
    mt_service_job *j;
    int rc = mt_service_prepare(svc, model, opts, n, texts, lens, &j, err, errlen);
    if (rc)
        return rc;
    waiter w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    rc = mt_service_run(svc, j, wake, &w);
    if (rc) {
        mt_error(-1, err, errlen, "%s", mt_service_outcome_text(rc));
    } else {
        pthread_mutex_lock(&w.mu);
        while (!w.done)
            pthread_cond_wait(&w.cond, &w.mu);
        pthread_mutex_unlock(&w.mu);
        const char *msg;
        rc = mt_service_job_outcome(j, &msg);
        if (rc == MT_SERVICE_OK)
            take_results(j, out);
        else if (rc == MT_SERVICE_FAILED)
            mt_error(-1, err, errlen, "%s", msg);
        else
            mt_error(-1, err, errlen, "%s", mt_service_outcome_text(rc));
    }
    mt_service_job_free(j);
    pthread_cond_destroy(&w.cond);
    pthread_mutex_destroy(&w.mu);
    return rc;
}

void mt_translation_clear(mt_translation *t)
{
    for (int k = 0; t->texts && k < t->n_best; k++)
        free(t->texts[k]);
    free(t->texts);
    free(t->scores);
    free(t->token_scores);
    free(t->token_alignments);
    free(t->alignments);
    memset(t, 0, sizeof *t);
}

static void *dup_bytes(const void *p, size_t n)
{
    if (!p || n == 0) return NULL;
    void *q = malloc(n);
    if (q) memcpy(q, p, n);
    return q;
}

int mt_translation_copy(mt_translation *dst, const mt_translation *src)
{
    memset(dst, 0, sizeof *dst);
    dst->texts = calloc((size_t)(src->n_best > 0 ? src->n_best : 1), sizeof *dst->texts);
    dst->scores = dup_bytes(src->scores, (size_t)src->n_best * sizeof *src->scores);
    if (!dst->texts || (src->n_best > 0 && !dst->scores)) goto fail;
    dst->n_best = src->n_best;
    for (int k = 0; k < src->n_best; k++)
        if (!(dst->texts[k] = strdup(src->texts[k]))) goto fail;
    dst->n_tokens = src->n_tokens;
    dst->n_alignments = src->n_alignments;
    dst->token_scores = dup_bytes(src->token_scores, (size_t)src->n_tokens * sizeof *src->token_scores);
    dst->token_alignments = dup_bytes(src->token_alignments,
                                      (size_t)src->n_tokens * sizeof *src->token_alignments);
    dst->alignments = dup_bytes(src->alignments, (size_t)src->n_alignments * sizeof *src->alignments);
    if ((src->token_scores && src->n_tokens && !dst->token_scores) ||
        (src->token_alignments && src->n_tokens && !dst->token_alignments) ||
        (src->alignments && src->n_alignments && !dst->alignments))
        goto fail;
    return 0;
fail:
    mt_translation_clear(dst);
    return -1;
}

int mt_service_cache_stats(mt_service *svc, long *hits, long *misses, long *entries, size_t *bytes)
{
    return mt_batcher_cache_stats(svc->batcher, hits, misses, entries, bytes);
}

void mt_service_gauges(mt_service *svc, int *queued_sentences, int *jobs, int *busy_workers, int *workers)
{
    mt_batcher_gauges(svc->batcher, queued_sentences, jobs, busy_workers, workers);
}

double mt_service_backlog_seconds(mt_service *svc) { return mt_batcher_backlog_seconds(svc->batcher); }
