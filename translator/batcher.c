/* batcher.c: bounded job queue, dynamic batching across callers, worker threads (used by
 * service.c, which turns texts into the sentences queued here). */
#include "batcher.h"
#include "options_search.h"

#include "cache.h"
#include "cond.h"

#include <pthread.h>
#include <stdio.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RING 256

typedef struct {
    struct mt_batcher *b;
    pthread_t thread;
    int started;
    mt_state **states;      /* one per model */
    mt_item **cand;         /* the batch being formed: max_sentences */
    mt_item **batch;        /* max_sentences */
    const int32_t **src;
    int *lens;
    mt_result *results;
    uint64_t *index;        /* per batch position: the sentence's index in its request */
    const int32_t **prefix; /* per batch position: target_prefix ids or NULL */
    int *prefix_len;
} worker;

/* A state's scratch memory grows to the largest batch it has seen, so one spike (a request
 * of many long sentences) would keep hundreds of MiB for good. A worker that finds the
 * queue empty after a batch frees whatever a state holds beyond this. */
#define TRIM_KEEP_BYTES ((size_t)32 << 20)

struct mt_batcher {
    pthread_mutex_t mu;
    pthread_cond_t cond;    /* queue changed, arrivals changed, or stopping */
    mt_batcher_config cfg;
    const mt_model *const *models;
    int n_models;
    mt_batcher_observer obs;
    worker *workers;
    int n_workers;
    mt_pool *pool;          /* the process's compute helpers, shared by every state */
    mt_cache *cache;        /* finished sentences by (model, options, source ids); NULL: off */
    mt_item *head, *tail;   /* queued sentences, oldest first */
    int n_queued;
    mt_job *jobs;           /* admitted, unfinished jobs */
    int n_jobs;
    int arriving, busy, stopping;
    int closed; /* aborted for shutdown: nothing more is admitted */
    int scan_cap;
    /* Measured throughput, for admission: source tokens and seconds of one worker's
     * batches, both decayed by 0.9 a batch (their ratio weighs big batches by their size),
     * the batches measured, and the source tokens queued and running now. */
    double pace_tokens, pace_secs;
    long n_measured, queued_tokens, running_tokens;
    /* Recent job completions and submissions (ring buffers of times): a client whose
     * request just finished is likely to send the next one, so a batch that is not
     * full waits a little for those expected arrivals. */
    double done_times[RING], submit_times[RING];
    int done_pos, submit_pos;
};

double mt_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void mt_job_clear_results(mt_job *job)
{
    for (int i = 0; i < job->n_items; i++) {
        mt_item *it = &job->items[i];
        for (int k = 0; k < it->n_hyps; k++) free(it->hyp_ids[k]);
        free(it->hyp_ids);
        free(it->hyp_lens);
        free(it->scores);
        for (int k = 0; k < it->n_hyps; k++) {
            if (it->token_scores) free(it->token_scores[k]);
            if (it->alignment) free(it->alignment[k]);
        }
        free(it->token_scores);
        free(it->alignment);
        it->token_scores = NULL;
        it->alignment = NULL;
        it->hyp_ids = NULL;
        it->hyp_lens = NULL;
        it->scores = NULL;
        it->n_hyps = 0;
    }
}

/* ------------------------------------------------------------------ queue helpers (locked) */

static void unlink_item(mt_batcher *b, mt_item *it)
{
    if (it->prev) it->prev->next = it->next;
    else b->head = it->next;
    if (it->next) it->next->prev = it->prev;
    else b->tail = it->prev;
    it->next = it->prev = NULL;
    b->n_queued--;
    b->queued_tokens -= it->len;
}

int mt_job_cancel(mt_job *job, int reason)
{
    int expected = MT_JOB_RUNNING;
    return atomic_compare_exchange_strong(&job->cancel, &expected, reason);
}

int mt_job_expire(mt_job *job, double now)
{
    return job->deadline > 0 && now > job->deadline && mt_job_cancel(job, MT_JOB_DEADLINE);
}

/* Has the job been cancelled, or has its deadline passed (then it is marked)? */
static int job_stopped(mt_job *job, double now)
{
    mt_job_expire(job, now);
    return atomic_load(&job->cancel) != MT_JOB_RUNNING;
}

/* Counts one item of its job as done; a finished job leaves the admitted list and joins
 * *chain, whose on_done callbacks run after the lock is released. */
static void finish_item_locked(mt_batcher *b, mt_item *it, mt_job **chain)
{
    mt_job *job = it->job;
    if (atomic_fetch_sub(&job->remaining, 1) != 1) return;
    if (job->jprev) job->jprev->jnext = job->jnext;
    else b->jobs = job->jnext;
    if (job->jnext) job->jnext->jprev = job->jprev;
    job->jprev = NULL;
    b->n_jobs--;
    job->t_done = mt_now();
    b->done_times[b->done_pos] = job->t_done;
    b->done_pos = (b->done_pos + 1) % RING;
    job->jnext = *chain;
    *chain = job;
}

static void run_callbacks(mt_job *chain)
{
    /* the chain was built newest first: answer in the order the jobs finished, so jobs
     * finished by one batch are answered oldest first */
    mt_job *prev = NULL;
    while (chain) {
        mt_job *next = chain->jnext;
        chain->jnext = prev;
        prev = chain;
        chain = next;
    }
    chain = prev;
    while (chain) {
        mt_job *next = chain->jnext; /* read before on_done: the job may be freed after it */
        chain->jnext = NULL;
        chain->on_done(chain, chain->user);
        chain = next;
    }
}

/* Drops every queued item whose job is cancelled or expired. */
static long purge_locked(mt_batcher *b, mt_job **chain)
{
    double now = mt_now();
    long dropped = 0;
    for (mt_item *it = b->head, *next; it; it = next) {
        next = it->next;
        if (!job_stopped(it->job, now)) continue;
        unlink_item(b, it);
        it->status = MT_ERR_CANCELLED;
        finish_item_locked(b, it, chain);
        dropped++;
    }
    return dropped;
}

/* Sentences share a batch only with the same model and the same options (options.h
 * names which). */
static int same_options(const mt_job *a, const mt_job *b)
{
    return a->model == b->model && mt_options_same_batch(&a->opts, &b->opts);
}

static void add_ms(struct timespec *ts, double seconds)
{
    double whole = (double)(long)seconds;
    ts->tv_sec = (time_t)whole;
    ts->tv_nsec = (long)((seconds - whole) * 1e9);
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

/* Requests expected within the wait window: requests being prepared now, plus clients
 * whose requests finished recently and have not sent their next one yet. */
static int expected_arrivals(const mt_batcher *b, double now)
{
    double window = 2.0 * b->cfg.max_wait_ms / 1000.0;
    if (window < 0.002) window = 0.002;
    int done = 0, submitted = 0;
    for (int i = 0; i < RING; i++) {
        done += b->done_times[i] > now - window;
        submitted += b->submit_times[i] > now - window;
    }
    int recent = done - submitted;
    return b->arriving + (recent > 0 ? recent : 0);
}

/* Picks the next batch into w->batch. Returns its size; 0 when stopping with nothing
 * queued; -1 when finished jobs are waiting in *chain for their callbacks. */
static int form_batch_locked(mt_batcher *b, worker *w, mt_job **chain)
{
    for (;;) {
        double now = mt_now();
        mt_item *head = NULL;
        for (mt_item *it = b->head, *next; it; it = next) {
            next = it->next;
            if (job_stopped(it->job, now)) {
                unlink_item(b, it);
                it->status = MT_ERR_CANCELLED;
                finish_item_locked(b, it, chain);
                if (b->obs.cancelled) b->obs.cancelled(b->obs.user, 1);
                continue;
            }
            if (!head) head = it;
        }
        if (*chain) return -1;
        if (!head) {
            if (b->stopping) return 0;
            pthread_cond_wait(&b->cond, &b->mu);
            continue;
        }
        /* First come, first served across requests: the batch is built around the oldest
         * queued sentence and filled in arrival order, so every batch moves the oldest
         * request on and no request is overtaken indefinitely by later ones (age wins over
         * batch shape: sentences are not picked by length). One concession keeps short
         * requests quick: the first sentence of each request that has not started yet
         * (in arrival order) gets a place, at most a quarter of the batch, so a
         * one-sentence request waits behind the running batch, not behind every sentence
         * of a big request queued before it. */
        int n = 0, maxlen = 0;
        int fresh_cap = b->cfg.max_sentences / 4 > 0 ? b->cfg.max_sentences / 4 : 1;
        for (int pass = 0; pass < 3 && n < b->cfg.max_sentences; pass++) {
            int fresh = 0;
            for (mt_item *it = pass == 0 ? head : b->head; it && n < b->cfg.max_sentences;
                 it = pass == 0 ? NULL : it->next) {
                if (it->in_batch || !same_options(head->job, it->job)) continue;
                /* pass 1: one sentence of each request that has not started */
                if (pass == 1 && (it->job->t_started != 0 || it->job->fresh_taken || fresh >= fresh_cap))
                    continue;
                int len = it->len > maxlen ? it->len : maxlen;
                if (n > 0 && (long)(n + 1) * len > b->cfg.max_tokens) continue;
                if (pass == 1) it->job->fresh_taken = 1, fresh++;
                it->in_batch = 1;
                w->cand[n++] = it;
                maxlen = len;
            }
        }
        for (int i = 0; i < n; i++) {
            w->cand[i]->in_batch = 0;
            w->cand[i]->job->fresh_taken = 0;
        }
        /* Wait for sentences of requests still being prepared, unless the batch is full. */
        int full = n >= b->cfg.max_sentences || (long)(n + 1) * maxlen > b->cfg.max_tokens;
        double until = head->t_queued + b->cfg.max_wait_ms / 1000.0;
        if (!full && !b->stopping && now < until && expected_arrivals(b, now) > 0) {
            struct timespec ts;
            add_ms(&ts, until);
            pthread_cond_timedwait(&b->cond, &b->mu, &ts);
            continue;
        }
        int count = n;
        for (int i = 0; i < count; i++) {
            mt_item *it = w->cand[i];
            unlink_item(b, it);
            b->running_tokens += it->len;
            w->batch[i] = it;
            if (it->job->t_started == 0) {
                it->job->t_started = now;
                if (b->obs.queue_wait) b->obs.queue_wait(b->obs.user, now - it->job->t_submitted);
            }
        }
        return count;
    }
}

typedef struct {
    mt_item **batch;
} cancel_ctx;

/* Called by the engine between decoding steps. */
static int cancel_cb(void *user, int index)
{
    cancel_ctx *c = user;
    mt_job *job = c->batch[index]->job;
    return job_stopped(job, mt_now());
}

static void *copy_of(const void *src, size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (p && bytes) memcpy(p, src, bytes);
    return p;
}

/* Token scores and alignments of the hypotheses (when the search gave them); 0 when out
 * of memory. */
static int copy_extras(mt_item *it, const mt_result *r)
{
    int n = it->n_hyps;
    if (n > 0 && r->hyps[0].token_scores) {
        it->token_scores = calloc((size_t)n, sizeof *it->token_scores);
        if (!it->token_scores) return 0;
        for (int k = 0; k < n; k++)
            if (!(it->token_scores[k] = copy_of(r->hyps[k].token_scores,
                                                sizeof(float) * (size_t)(r->hyps[k].length + 1))))
                return 0;
    }
    if (n > 0 && r->hyps[0].alignment) {
        it->alignment = calloc((size_t)n, sizeof *it->alignment);
        if (!it->alignment) return 0;
        for (int k = 0; k < n; k++)
            if (!(it->alignment[k] = copy_of(r->hyps[k].alignment,
                                             sizeof(int32_t) * (size_t)r->hyps[k].length)))
                return 0;
    }
    return 1;
}

static void copy_result(mt_item *it, const mt_result *r)
{
    it->status = r->status;
    it->n_hyps = 0;
    if (r->status != MT_OK || r->n_hyps <= 0) return;
    it->hyp_ids = calloc((size_t)r->n_hyps, sizeof *it->hyp_ids);
    it->hyp_lens = calloc((size_t)r->n_hyps, sizeof *it->hyp_lens);
    it->scores = calloc((size_t)r->n_hyps, sizeof *it->scores);
    if (!it->hyp_ids || !it->hyp_lens || !it->scores) {
        it->status = MT_ERR_NOMEM;
        return;
    }
    for (int k = 0; k < r->n_hyps; k++) {
        const mt_hypothesis *h = &r->hyps[k];
        it->hyp_ids[k] = malloc(sizeof(int32_t) * (size_t)(h->length > 0 ? h->length : 1));
        if (!it->hyp_ids[k]) {
            it->status = MT_ERR_NOMEM;
            return;
        }
        if (h->length > 0) memcpy(it->hyp_ids[k], h->ids, sizeof(int32_t) * (size_t)h->length);
        it->hyp_lens[k] = h->length;
        it->scores[k] = h->score;
        it->n_hyps = k + 1;
    }
    if (!copy_extras(it, r)) it->status = MT_ERR_NOMEM;
}

/* ---- the sentence cache ---- */

/* Whether a job's sentences may be answered from the cache, and stored in it: only
 * deterministic searches whose result is the hypotheses alone (no sampling, no prefix,
 * no per-token extras, no id replacement, no extra banned ids). */
static int cacheable(const mt_batcher *b, const mt_job *job)
{
    const mt_search_options *o = &job->opts;
    return b->cache && o->sampling_topk == 1 && !o->return_scores && !o->return_alignments &&
           !o->replace_unknowns && o->n_bad_ids == 0;
}

/* key = model, compute type, the cache_key options (options.h), source length and ids,
 * as bytes (malloc'd); NULL when the item cannot be cached. */
static unsigned char *cache_key(const mt_batcher *b, const mt_item *it, size_t *key_len)
{
    if (it->prefix) return NULL; /* a prefixed result must never answer an unprefixed key */
    int32_t head[2] = {it->job->model, (int32_t)mt_model_compute_type(b->models[it->job->model])};
    int32_t len = it->len;
    size_t opt = mt_options_key_size();
    *key_len = sizeof head + opt + sizeof len + sizeof(int32_t) * (size_t)it->len;
    unsigned char *k = malloc(*key_len), *p = k;
    if (!k) return NULL;
    memcpy(p, head, sizeof head), p += sizeof head;
    mt_options_key(&it->job->opts, p), p += opt;
    memcpy(p, &len, sizeof len), p += sizeof len;
    memcpy(p, it->ids, sizeof(int32_t) * (size_t)it->len);
    return k;
}

/* value = n_hyps, then per hypothesis: length, score, ids. */
static void cache_store(mt_batcher *b, const mt_item *it)
{
    size_t key_len, n = sizeof(int32_t);
    for (int k = 0; k < it->n_hyps; k++) n += 2 * sizeof(int32_t) + sizeof(int32_t) * (size_t)it->hyp_lens[k];
    unsigned char *key = cache_key(b, it, &key_len), *v = malloc(n), *p = v;
    if (key && v) {
        int32_t nh = it->n_hyps;
        memcpy(p, &nh, sizeof nh), p += sizeof nh;
        for (int k = 0; k < it->n_hyps; k++) {
            int32_t len = it->hyp_lens[k];
            memcpy(p, &len, sizeof len), p += sizeof len;
            memcpy(p, &it->scores[k], sizeof(float)), p += sizeof(float);
            memcpy(p, it->hyp_ids[k], sizeof(int32_t) * (size_t)len), p += sizeof(int32_t) * (size_t)len;
        }
        mt_cache_put(b->cache, key, key_len, v, n);
    }
    free(key);
    free(v);
}

/* Fills the item's hypotheses from the cache; 1 on a hit. */
static int cache_answer(mt_batcher *b, mt_item *it)
{
    size_t key_len, n;
    void *val = NULL;
    unsigned char *key = cache_key(b, it, &key_len);
    int hit = key && mt_cache_get(b->cache, key, key_len, &val, &n);
    free(key);
    if (!hit) return 0;
    const unsigned char *p = val;
    int32_t nh;
    memcpy(&nh, p, sizeof nh), p += sizeof nh;
    it->hyp_ids = calloc((size_t)nh, sizeof *it->hyp_ids);
    it->hyp_lens = calloc((size_t)nh, sizeof *it->hyp_lens);
    it->scores = calloc((size_t)nh, sizeof *it->scores);
    int ok = it->hyp_ids && it->hyp_lens && it->scores;
    for (int k = 0; ok && k < nh; k++) {
        int32_t len;
        memcpy(&len, p, sizeof len), p += sizeof len;
        memcpy(&it->scores[k], p, sizeof(float)), p += sizeof(float);
        if (!(it->hyp_ids[k] = malloc(sizeof(int32_t) * (size_t)(len > 0 ? len : 1)))) ok = 0;
        else memcpy(it->hyp_ids[k], p, sizeof(int32_t) * (size_t)len);
        p += sizeof(int32_t) * (size_t)len;
        it->hyp_lens[k] = len;
        if (ok) it->n_hyps = k + 1;
    }
    free(val);
    if (!ok) { /* out of memory: compute it instead */
        for (int k = 0; k < it->n_hyps; k++) free(it->hyp_ids[k]);
        free(it->hyp_ids), free(it->hyp_lens), free(it->scores);
        it->hyp_ids = NULL, it->hyp_lens = NULL, it->scores = NULL, it->n_hyps = 0;
    }
    return ok;
}

int mt_batcher_cache_stats(mt_batcher *b, long *hits, long *misses, long *entries, size_t *bytes)
{
    mt_cache_stats st = {0};
    if (b->cache) mt_cache_get_stats(b->cache, &st);
    *hits = st.hits, *misses = st.misses, *entries = st.entries, *bytes = st.bytes;
    return b->cache != NULL;
}

static void run_batch(mt_batcher *b, worker *w, int n)
{
    mt_job *first = w->batch[0]->job;
    mt_search_options opts = first->opts;
    cancel_ctx cc = {w->batch};
    opts.cancel = cancel_cb;
    opts.cancel_user = &cc;
    int maxlen = 0, prefixed = 0;
    for (int i = 0; i < n; i++) {
        w->src[i] = w->batch[i]->ids;
        w->lens[i] = w->batch[i]->len;
        if (w->lens[i] > maxlen) maxlen = w->lens[i];
        w->index[i] = w->batch[i]->index;
        w->prefix[i] = w->batch[i]->prefix;
        w->prefix_len[i] = w->batch[i]->prefix_len;
        prefixed |= w->prefix[i] != NULL;
    }
    /* A sample depends on (seed, sentence index in its request, step) only, whatever the
     * batch; prefixes are per sentence. */
    opts.sentence_index = w->index;
    opts.target_prefix = prefixed ? w->prefix : NULL;
    opts.target_prefix_len = prefixed ? w->prefix_len : NULL;
    mt_state *st = w->states[first->model];
    double t0 = mt_now();
    int rc = mt_translate_ids(st, &opts, n, w->src, w->lens, w->results);
    double t1 = mt_now();
    char msg[256] = "";
    if (rc < 0 && rc != MT_ERR_CANCELLED) {
        snprintf(msg, sizeof msg, "%s", mt_state_error(st));
        for (int i = 0; i < n; i++) w->batch[i]->status = rc;
    } else {
        for (int i = 0; i < n; i++) {
            copy_result(w->batch[i], &w->results[i]);
            if (w->batch[i]->status == MT_OK && cacheable(b, first)) cache_store(b, w->batch[i]);
        }
    }
    if (b->obs.batch) b->obs.batch(b->obs.user, n, (long)n * maxlen, t1 - t0);
    long cancelled = 0;
    for (int i = 0; i < n; i++) cancelled += w->batch[i]->status == MT_ERR_CANCELLED;
    if (cancelled && b->obs.cancelled) b->obs.cancelled(b->obs.user, cancelled);
    long tokens = 0;
    for (int i = 0; i < n; i++) tokens += w->lens[i];
    mt_job *chain = NULL;
    pthread_mutex_lock(&b->mu);
    b->running_tokens -= tokens;
    if (rc >= 0 && t1 > t0) { /* a worker's pace over the last batches */
        b->pace_tokens = 0.9 * b->pace_tokens + (double)tokens;
        b->pace_secs = 0.9 * b->pace_secs + (t1 - t0);
        b->n_measured++;
    }
    for (int i = 0; i < n; i++) {
        mt_item *it = w->batch[i];
        if (it->status != MT_OK && it->status != MT_ERR_CANCELLED && !it->job->error) {
            it->job->error = 1;
            snprintf(it->job->error_text, sizeof it->job->error_text, "%s",
                     msg[0] ? msg : "out of memory");
        }
        finish_item_locked(b, it, &chain);
    }
    pthread_mutex_unlock(&b->mu);
    run_callbacks(chain);
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    mt_batcher *b = w->b;
    pthread_mutex_lock(&b->mu);
    for (;;) {
        mt_job *chain = NULL;
        int n = form_batch_locked(b, w, &chain);
        if (n < 0) {
            pthread_mutex_unlock(&b->mu);
            run_callbacks(chain);
            pthread_mutex_lock(&b->mu);
            continue;
        }
        if (n == 0) break;
        b->busy++;
        pthread_mutex_unlock(&b->mu);
        run_batch(b, w, n);
        pthread_mutex_lock(&b->mu);
        int idle = b->head == NULL;
        pthread_mutex_unlock(&b->mu);
        if (idle) {
            size_t freed = 0;
            for (int m = 0; m < b->n_models; m++) freed += mt_state_trim(w->states[m], TRIM_KEEP_BYTES);
            if (freed) malloc_trim(0); /* glibc keeps freed heap pages unless asked */
        }
        pthread_mutex_lock(&b->mu);
        b->busy--;
    }
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

/* ------------------------------------------------------------------ public */

static void free_workers(mt_batcher *b)
{
    for (int i = 0; b->workers && i < b->n_workers; i++) {
        worker *w = &b->workers[i];
        for (int m = 0; w->states && m < b->n_models; m++) mt_state_free(w->states[m]);
        free(w->states);
        free(w->cand);
        free(w->batch);
        free(w->src);
        free(w->lens);
        free(w->results);
        free(w->index);
        free(w->prefix);
        free(w->prefix_len);
    }
    free(b->workers);
    b->workers = NULL;
    mt_pool_free(b->pool); /* after the states that drive it */
    b->pool = NULL;
    mt_cache_free(b->cache);
    b->cache = NULL;
}

mt_batcher *mt_batcher_create(const mt_model *const *models, int n_models,
                              const mt_batcher_config *cfg, const mt_batcher_observer *obs, char *err,
                              size_t errlen)
{
    mt_batcher *b = calloc(1, sizeof *b);
    if (!b) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    b->cfg = *cfg;
    if (b->cfg.workers < 1) b->cfg.workers = 1;
    if (b->cfg.max_sentences < 1) b->cfg.max_sentences = 1;
    if (b->cfg.capacity < 1) b->cfg.capacity = 1;
    b->models = models;
    b->n_models = n_models;
    if (obs) b->obs = *obs;
    b->scan_cap = b->cfg.max_sentences;
    pthread_mutex_init(&b->mu, NULL);
    mt_cond_init_monotonic(&b->cond);
    b->n_workers = b->cfg.workers;
    b->workers = calloc((size_t)b->n_workers, sizeof *b->workers);
    if (!b->workers) goto nomem;
    size_t ms = (size_t)b->cfg.max_sentences;
    /* One pool for the process: each worker computes on its own thread and splits its
     * products over threads_per_worker tasks, which the pool's free helpers share; with
     * workers x (threads_per_worker - 1) helpers the process runs workers x
     * threads_per_worker compute threads whatever the number of models. */
    if (b->cfg.cache_bytes > 0 && !(b->cache = mt_cache_create(b->cfg.cache_bytes))) goto nomem;
    int tpw = b->cfg.threads_per_worker < 1 ? 1 : b->cfg.threads_per_worker;
    if (tpw > 1 && !(b->pool = mt_pool_create(b->n_workers * (tpw - 1)))) {
        snprintf(err, errlen, "cannot start %d compute threads", b->n_workers * (tpw - 1));
        goto fail;
    }
    for (int i = 0; i < b->n_workers; i++) {
        worker *w = &b->workers[i];
        w->b = b;
        w->states = calloc((size_t)n_models, sizeof *w->states);
        w->cand = calloc((size_t)b->scan_cap, sizeof *w->cand);
        w->batch = calloc(ms, sizeof *w->batch);
        w->src = calloc(ms, sizeof *w->src);
        w->lens = calloc(ms, sizeof *w->lens);
        w->results = calloc(ms, sizeof *w->results);
        w->index = calloc(ms, sizeof *w->index);
        w->prefix = calloc(ms, sizeof *w->prefix);
        w->prefix_len = calloc(ms, sizeof *w->prefix_len);
        if (!w->states || !w->cand || !w->batch || !w->src || !w->lens || !w->results || !w->index ||
            !w->prefix || !w->prefix_len)
            goto nomem;
        for (int m = 0; m < n_models; m++) {
            w->states[m] = mt_state_create_in(models[m], b->pool, tpw, err, errlen);
            if (!w->states[m]) goto fail;
        }
    }
    for (int i = 0; i < b->n_workers; i++) {
        if (pthread_create(&b->workers[i].thread, NULL, worker_main, &b->workers[i]) != 0) {
            snprintf(err, errlen, "cannot start worker thread %d", i);
            goto fail;
        }
        b->workers[i].started = 1;
    }
    return b;
nomem:
    snprintf(err, errlen, "out of memory");
fail:
    mt_batcher_free(b);
    return NULL;
}

void mt_batcher_free(mt_batcher *b)
{
    if (!b) return;
    pthread_mutex_lock(&b->mu);
    b->stopping = 1;
    pthread_cond_broadcast(&b->cond);
    pthread_mutex_unlock(&b->mu);
    mt_batcher_abort(b, MT_JOB_SHUTDOWN);
    for (int i = 0; b->workers && i < b->n_workers; i++)
        if (b->workers[i].started) pthread_join(b->workers[i].thread, NULL);
    free_workers(b);
    pthread_cond_destroy(&b->cond);
    pthread_mutex_destroy(&b->mu);
    free(b);
}

/* Seconds the workers need, at the measured pace, for `tokens` source tokens (0 until a
 * few batches have been measured: no guessing). */
static double seconds_for_locked(const mt_batcher *b, long tokens)
{
    if (b->n_measured < 3 || b->pace_tokens <= 0 || b->pace_secs <= 0) return 0;
    return (double)tokens * b->pace_secs / (b->pace_tokens * b->n_workers);
}

/* Seconds the queue needs to finish what is queued and running and then job; 0 when
 * nothing is ahead of it (waiting would not help a job that is too big on its own). */
static double admission_wait_locked(const mt_batcher *b, const mt_job *job)
{
    long ahead = b->queued_tokens + b->running_tokens, own = 0;
    if (ahead <= 0) return 0;
    for (int i = 0; i < job->n_items; i++) own += job->items[i].len;
    return seconds_for_locked(b, ahead + own);
}

double mt_batcher_backlog_seconds(mt_batcher *b)
{
    pthread_mutex_lock(&b->mu);
    double s = seconds_for_locked(b, b->queued_tokens + b->running_tokens);
    pthread_mutex_unlock(&b->mu);
    return s;
}

int mt_batcher_submit(mt_batcher *b, mt_job *job)
{
    job->retry_after = 0;
    if (job->n_items < 1) return -1;
    pthread_mutex_lock(&b->mu);
    if (b->stopping || b->closed || b->n_jobs >= b->cfg.capacity) {
        /* stopping for good is not a full queue: the caller says so (not "retry soon") */
        int rc = b->stopping || b->closed ? -3 : -1;
        pthread_mutex_unlock(&b->mu);
        return rc;
    }
    double now = mt_now();
    double need = admission_wait_locked(b, job);
    if (job->deadline > 0 && need > 0 && need > job->deadline - now) {
        /* It would wait out its deadline in the queue: refused now, with the time after
         * which the work ahead of it should have shrunk enough. */
        job->retry_after = need - (job->deadline - now);
        pthread_mutex_unlock(&b->mu);
        return -2;
    }
    job->t_submitted = now;
    b->submit_times[b->submit_pos] = now;
    b->submit_pos = (b->submit_pos + 1) % RING;
    job->t_started = 0;
    job->t_done = 0;
    job->error = 0;
    job->error_text[0] = '\0';
    atomic_store(&job->remaining, job->n_items);
    job->jprev = NULL;
    job->jnext = b->jobs;
    if (b->jobs) b->jobs->jprev = job;
    b->jobs = job;
    b->n_jobs++;
    mt_job *chain = NULL;
    int use_cache = cacheable(b, job);
    for (int i = 0; i < job->n_items; i++) {
        mt_item *it = &job->items[i];
        it->job = job;
        it->status = MT_OK;
        it->n_hyps = 0;
        it->t_queued = now;
        if (use_cache && cache_answer(b, it)) { /* never reaches a worker */
            if (!job->t_started) job->t_started = now;
            finish_item_locked(b, it, &chain);
            continue;
        }
        it->next = NULL;
        it->prev = b->tail;
        it->in_batch = 0;
        if (b->tail) b->tail->next = it;
        else b->head = it;
        b->tail = it;
        b->n_queued++;
        b->queued_tokens += it->len;
    }
    pthread_cond_broadcast(&b->cond);
    pthread_mutex_unlock(&b->mu);
    run_callbacks(chain); /* a job answered wholly from the cache is done already */
    return 0;
}

void mt_batcher_arriving(mt_batcher *b, int delta)
{
    pthread_mutex_lock(&b->mu);
    b->arriving += delta;
    if (b->arriving <= 0) {
        b->arriving = 0;
        pthread_cond_broadcast(&b->cond);
    }
    pthread_mutex_unlock(&b->mu);
}

void mt_batcher_purge(mt_batcher *b)
{
    mt_job *chain = NULL;
    pthread_mutex_lock(&b->mu);
    long dropped = purge_locked(b, &chain);
    pthread_mutex_unlock(&b->mu);
    if (dropped && b->obs.cancelled) b->obs.cancelled(b->obs.user, dropped);
    run_callbacks(chain);
}

void mt_batcher_abort(mt_batcher *b, int reason)
{
    mt_job *chain = NULL;
    pthread_mutex_lock(&b->mu);
    /* A shutdown is for good: a caller between two submissions (a file job's next chunk)
     * must not start new work after the abort it did not see. */
    if (reason == MT_JOB_SHUTDOWN) b->closed = 1;
    for (mt_job *j = b->jobs; j; j = j->jnext) mt_job_cancel(j, reason);
    long dropped = purge_locked(b, &chain);
    pthread_cond_broadcast(&b->cond);
    pthread_mutex_unlock(&b->mu);
    if (dropped && b->obs.cancelled) b->obs.cancelled(b->obs.user, dropped);
    run_callbacks(chain);
}

void mt_batcher_gauges(mt_batcher *b, int *queued_sentences, int *jobs, int *busy_workers,
                       int *workers)
{
    pthread_mutex_lock(&b->mu);
    *queued_sentences = b->n_queued;
    *jobs = b->n_jobs;
    *busy_workers = b->busy;
    *workers = b->n_workers;
    pthread_mutex_unlock(&b->mu);
}
