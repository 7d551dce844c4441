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

#include "batcher.h"
#include "internal.h"

_Static_assert((int)MT_SERVICE_CLIENT_GONE == (int)MT_JOB_CLIENT_GONE &&
                   (int)MT_SERVICE_DEADLINE == (int)MT_JOB_DEADLINE && (int)MT_SERVICE_SHUTDOWN == (int)MT_JOB_SHUTDOWN,
               "service outcomes extend the batcher's cancel reasons");

struct mt_service {
    mt_translator **trs;
    const mt_model **models; /* the batcher's view of trs (kept for it) */
    int n;
    mt_batcher *batcher;
};

struct mt_service_job {
    mt_service *svc;
    mt_job job;                /* the batcher's view: items in queue order (longest first) */
    int model;
    mt_service_options opts;   /* target_lang: not kept (borrowed; used by prepare only) */
    int n_texts, n_sents;
    char **texts;              /* copies */
    size_t *lens;
    mt_segment **segs;         /* per text */
    int *n_segs;
    int32_t **ids;             /* per sentence, in text order */
    int *item_of;              /* sentence (text order) -> index in job.items */
    mt_translation *results;   /* per text, once done */
    int outcome;
    char message[256];
    long target_tokens;
    void (*done)(mt_service_job *, void *);
    void *user;
};

void mt_service_config_default(mt_service_config *cfg)
{
    *cfg = (mt_service_config){.workers = 1, .threads_per_worker = 1, .capacity = 16, .max_sentences = 32,
                               .max_tokens = INT_MAX / 2, .max_wait_ms = 0};
}

mt_service *mt_service_create(mt_translator *const *trs, int n, const mt_service_config *cfg,
                              const mt_service_observer *obs, char *err, size_t errlen)
{
    mt_service *svc = calloc(1, sizeof *svc);
    if (svc) {
        svc->trs = calloc((size_t)n + 1, sizeof *svc->trs);
        svc->models = calloc((size_t)n + 1, sizeof *svc->models);
    }
    if (!svc || !svc->models || !svc->trs) {
        mt_error(-1, err, errlen, "out of memory");
        mt_service_free(svc);
        return NULL;
    }
    svc->n = n;
    for (int i = 0; i < n; i++) {
        svc->trs[i] = trs[i];
        svc->models[i] = mt_translator_model(trs[i]);
    }
    mt_batcher_config bc = {cfg->workers,       cfg->threads_per_worker, cfg->capacity,
                            cfg->max_sentences, cfg->max_tokens,         cfg->max_wait_ms};
    mt_batcher_observer bo = {0};
    if (obs)
        bo = (mt_batcher_observer){obs->batch, obs->queue_wait, obs->cancelled, obs->user};
    svc->batcher = mt_batcher_create(svc->models, n, &bc, &bo, err, errlen);
    if (!svc->batcher) {
        mt_service_free(svc);
        return NULL;
    }
    return svc;
}

void mt_service_free(mt_service *svc)
{
    if (!svc)
        return;
    mt_batcher_free(svc->batcher);
    free(svc->models);
    free(svc->trs);
    free(svc);
}

void mt_service_options_default(const mt_service *svc, int model, mt_service_options *opts)
{
    memset(opts, 0, sizeof *opts);
    mt_search_options_default(mt_translator_model(svc->trs[model]), &opts->search);
    opts->search.n_best = 1;
}

/* ---- prepare: segment and encode ---- */

/* MT_FORMAT_IDS: the whole text is one sentence given as ids; eos is appended. */
static int parse_source_ids(const mt_translator *tr, const char *text, size_t len, int32_t **ids, char *err,
                            size_t errlen)
{
    const mt_model_info *in = mt_model_get_info(mt_translator_model(tr));
    int32_t *buf = malloc(sizeof *buf * (len / 2 + 2));
    int n = 0;
    if (!buf) {
        mt_error(-1, err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < len;) {
        if (text[i] == ' ' || text[i] == '\t') {
            i++;
            continue;
        }
        long v = 0;
        size_t start = i;
        while (i < len && text[i] >= '0' && text[i] <= '9' && v <= in->src_vocab_size)
            v = v * 10 + (text[i++] - '0');
        if (i == start || (i < len && text[i] != ' ' && text[i] != '\t') || v >= in->src_vocab_size) {
            mt_error(-1, err, errlen, "bad source id at byte %zu: expected integers below %d", start, in->src_vocab_size);
            free(buf);
            return -1;
        }
        buf[n++] = (int32_t)v;
    }
    buf[n++] = in->eos_id;
    *ids = buf;
    return n;
}

/* Cuts text t into job->segs[t]; returns its sentence count or -1 with a message. */
static int segment_text(mt_service_job *j, const mt_translator *tr, int t, char *err, size_t errlen)
{
    int max_tokens = mt_translator_max_source_tokens(tr);
    if (j->opts.input == MT_FORMAT_IDS) { /* one sentence, unless empty */
        j->segs[t] = calloc(1, sizeof *j->segs[t]);
        if (!j->segs[t]) {
            mt_error(-1, err, errlen, "out of memory");
            return -1;
        }
        j->segs[t][0] = (mt_segment){0, j->lens[t], 1};
        j->n_segs[t] = j->lens[t] > 0;
    } else {
        j->n_segs[t] = (j->opts.input == MT_FORMAT_HTML ? mt_translator_segment_html : mt_translator_segment)(
            tr, j->texts[t], j->lens[t], max_tokens, &j->segs[t], err, errlen);
        if (j->n_segs[t] < 0) {
            j->n_segs[t] = 0;
            return -1;
        }
    }
    int n = 0;
    for (int s = 0; s < j->n_segs[t]; s++)
        n += j->segs[t][s].translate;
    return n;
}

/* Encodes every sentence of every text into j->ids, in text order. */
static int encode_all(mt_service_job *j, const mt_translator *tr, int32_t token, int *lens, char *err,
                      size_t errlen)
{
    int html = j->opts.input == MT_FORMAT_HTML;
    for (int t = 0, si = 0; t < j->n_texts; t++)
        for (int s = 0; s < j->n_segs[t]; s++) {
            const mt_segment *sg = &j->segs[t][s];
            if (!sg->translate)
                continue;
            lens[si] = j->opts.input == MT_FORMAT_IDS
                           ? parse_source_ids(tr, j->texts[t], j->lens[t], &j->ids[si], err, errlen)
                           : mt_translator_encode_to(tr, token, html, j->texts[t] + sg->start, sg->len,
                                                     &j->ids[si], err, errlen);
            if (lens[si] < 0)
                return -1;
            si++;
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
    }
    j->job.n_items = n;
    free(order);
    return 0;
}

/* Copies the texts and allocates the per-text arrays. */
static int copy_texts(mt_service_job *j, int n, const char *const *texts, const size_t *lens)
{
    j->n_texts = n;
    j->texts = calloc((size_t)n + 1, sizeof *j->texts);
    j->lens = calloc((size_t)n + 1, sizeof *j->lens);
    j->segs = calloc((size_t)n + 1, sizeof *j->segs);
    j->n_segs = calloc((size_t)n + 1, sizeof *j->n_segs);
    if (!j->texts || !j->lens || !j->segs || !j->n_segs)
        return -1;
    for (int t = 0; t < n; t++) {
        j->texts[t] = malloc(lens[t] + 1);
        if (!j->texts[t])
            return -1;
        memcpy(j->texts[t], texts[t], lens[t]);
        j->texts[t][lens[t]] = 0;
        j->lens[t] = lens[t];
    }
    return 0;
}

/* Segments and encodes every text of j; MT_SERVICE_OK or why not. */
static int prepare_job(mt_service_job *j, const mt_translator *tr, const char *target_lang, char *err,
                       size_t errlen)
{
    for (int t = 0; t < j->n_texts; t++) {
        int n = segment_text(j, tr, t, err, errlen);
        if (n < 0)
            return MT_SERVICE_INVALID;
        j->n_sents += n;
    }
    int32_t token = mt_translator_target_token(tr, target_lang);
    int *lens = calloc((size_t)j->n_sents + 1, sizeof *lens);
    j->ids = calloc((size_t)j->n_sents + 1, sizeof *j->ids);
    if (!lens || !j->ids) {
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
    int max_positions = mt_translator_model_info(svc->trs[model])->max_positions;
    if (opts->search.max_length > max_positions) {
        mt_error(-1, err, errlen, "max_length %d exceeds the model's limit of %d tokens", opts->search.max_length,
                 max_positions);
        return MT_SERVICE_INVALID;
    }
    mt_service_job *j = calloc(1, sizeof *j);
    if (!j || copy_texts(j, n, texts, lens)) {
        mt_error(-1, err, errlen, "out of memory");
        mt_service_job_free(j);
        return MT_SERVICE_NOMEM;
    }
    j->svc = svc;
    j->model = model;
    j->opts = *opts;
    j->opts.target_lang = NULL;
    int rc = prepare_job(j, svc->trs[model], opts->target_lang, err, errlen);
    if (rc) {
        mt_service_job_free(j);
        return rc;
    }
    j->job.model = model;
    j->job.opts = opts->search;
    j->job.deadline = opts->deadline;
    atomic_store(&j->job.cancel, MT_JOB_RUNNING);
    *job = j;
    return MT_SERVICE_OK;
}

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

/* Text t's n-best translations from its sentences' hypotheses hyps[0, ...). */
static int join_text(mt_service_job *j, int t, const mt_sentence_hyps *hyps)
{
    int n_best = j->opts.search.n_best;
    mt_translation *r = &j->results[t];
    mt_join_mode mode = j->opts.output_ids                ? MT_JOIN_IDS
                        : j->opts.input == MT_FORMAT_HTML ? MT_JOIN_HTML
                                                          : MT_JOIN_TEXT;
    r->texts = calloc((size_t)n_best + 1, sizeof *r->texts);
    r->scores = calloc((size_t)n_best + 1, sizeof *r->scores);
    if (!r->texts || !r->scores)
        return -1;
    r->n_best = n_best;
    for (int k = 0; k < n_best; k++) {
        r->texts[k] = mt_translator_join(j->texts[t], j->segs[t], j->n_segs[t], hyps, k, mode, &r->scores[k]);
        if (!r->texts[k])
            return -1;
    }
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
        if (join_text(j, t, hyps + first)) {
            snprintf(j->message, sizeof j->message, "out of memory");
            rc = -1;
        }
        for (int s = 0; s < j->n_segs[t]; s++)
            first += j->segs[t][s].translate;
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
static void job_finished(mt_job *job, void *user)
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

int mt_service_run(mt_service *svc, mt_service_job *j, void (*done)(mt_service_job *, void *), void *user)
{
    j->done = done;
    j->user = user;
    j->job.on_done = job_finished;
    j->job.user = j;
    if (j->job.n_items == 0) { /* only empty or blank texts */
        job_finished(&j->job, j);
        return MT_SERVICE_OK;
    }
    return mt_batcher_submit(svc->batcher, &j->job) ? MT_SERVICE_BUSY : MT_SERVICE_OK;
}

void mt_service_arriving(mt_service *svc, int delta) { mt_batcher_arriving(svc->batcher, delta); }
int mt_service_job_cancel(mt_service_job *j, int reason) { return mt_job_cancel(&j->job, reason); }
int mt_service_job_expire(mt_service_job *j, double now) { return mt_job_expire(&j->job, now); }
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
    mt_job_clear_results(&j->job);
    for (int i = 0; j->ids && i < j->n_sents; i++)
        free(j->ids[i]);
    for (int t = 0; t < j->n_texts; t++) {
        if (j->texts)
            free(j->texts[t]);
        if (j->segs)
            free(j->segs[t]);
        if (j->results)
            mt_translation_clear(&j->results[t]);
    }
    free(j->ids);
    free(j->item_of);
    free(j->job.items);
    free(j->texts);
    free(j->lens);
    free(j->segs);
    free(j->n_segs);
    free(j->results);
    free(j);
}

/* ---- blocking use ---- */

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
        mt_error(-1, err, errlen, "the translation queue is full");
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
            mt_error(-1, err, errlen, "translation was cancelled");
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
    memset(t, 0, sizeof *t);
}

void mt_service_gauges(mt_service *svc, int *queued_sentences, int *jobs, int *busy_workers, int *workers)
{
    mt_batcher_gauges(svc->batcher, queued_sentences, jobs, busy_workers, workers);
}
