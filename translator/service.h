/* service.h: the translation service every front end goes through (mt-translate and
 * mt-server). Texts in, texts out: a request is a list of texts (plain text, HTML or
 * source ids) with its options; the service segments them into sentences, encodes each
 * (target-language token included), queues the sentences in one bounded queue shared by
 * every caller, where worker threads batch sentences of the same model and options by
 * length across requests, search, decode and rejoin; then the request's callback runs
 * with one translation (n-best texts and scores) per text.
 *
 * Life of a request: mt_service_prepare() (segmentation, encoding; input errors are
 * reported here), mt_service_run() (queued; the callback follows, on a worker thread,
 * or at once when nothing needs translating), read the outcome and the translations,
 * mt_service_job_free(). mt_service_translate() does all of it and waits.
 *
 * Cancellation: mt_service_job_cancel() (a client went away, shutting down) or the
 * request's deadline; queued sentences are dropped without compute and running ones stop
 * at their next decoding step. The callback still runs once.
 *
 * Thread-safety: an mt_service is shared by all threads; every call may come from any
 * thread. A job belongs to its caller, who may cancel it at any time but may read its
 * results only after its callback ran, and frees it once.
 */
#ifndef MT_TRANSLATOR_SERVICE_H
#define MT_TRANSLATOR_SERVICE_H

#include <stddef.h>

#include "protect.h"
#include "translator.h"

typedef struct mt_service mt_service;
typedef struct mt_service_job mt_service_job;

typedef struct {
    int workers;             /* worker threads, each with one model state per model */
    int threads_per_worker;  /* BLAS threads of each state */
    int capacity;            /* requests admitted at once (beyond: MT_SERVICE_BUSY) */
    int max_sentences;       /* sentences per batch */
    int max_tokens;          /* padded source tokens per batch */
    int max_wait_ms;         /* a batch that is not full waits this long for expected requests */
    size_t cache_bytes;      /* sentence cache: finished sentences by model, options and source
                              * ids, LRU within this many bytes (0: none). Sampling, target
                              * prefixes, per-token extras and extra banned ids bypass it */
} mt_service_config;

/* One worker, batches of 32 sentences, no waiting: what a single caller wants. */
void mt_service_config_default(mt_service_config *cfg);

/* Reports of the service's work, for metrics (each member may be NULL; called from
 * worker threads and from mt_service_purge / mt_service_abort, without locks held). */
typedef struct {
    void (*batch)(void *user, int sentences, long padded_tokens, double seconds);
    void (*queue_wait)(void *user, double seconds);
    void (*cancelled)(void *user, long sentences);
    void *user;
} mt_service_observer;

/* Starts the workers for translators trs[0, n) (borrowed: they must outlive the service).
 * obs may be NULL. Returns NULL with a message on failure. */
mt_service *mt_service_create(mt_translator *const *trs, int n, const mt_service_config *cfg,
                              const mt_service_observer *obs, char *err, size_t errlen);
/* Cancels what is left (MT_SERVICE_SHUTDOWN), joins the workers, frees the service. */
void mt_service_free(mt_service *svc);

/* What the texts of a request are. */
typedef enum {
    MT_FORMAT_TEXT = 0,  /* plain text: lines and sentences, whitespace kept */
    MT_FORMAT_HTML = 1,  /* an HTML fragment: markup kept, text nodes translated */
    MT_FORMAT_IDS = 2,   /* one sentence of space-separated source ids (eos appended) */
} mt_format;

/* Per-request options. New decoding options are added here (with their default in
 * mt_service_options_default); requests with different options never share a batch. */
typedef struct {
    mt_search_options search; /* beam_size, n_best, length_penalty, max_length (cancel: the service's) */
    mt_format input;          /* what the texts are */
    int output_ids;           /* 1: translations are target ids ("12 7 9"), sentences joined by a space */
    const char *target_lang;  /* multilingual models: the target ("fra"); NULL: the model's own */
    double deadline;          /* CLOCK_MONOTONIC seconds (mt_now()), 0: none */
    /* Decoding controls (issue 17) are in `search` (sampling_*, seed, no_repeat_ngram_size,
     * repetition_penalty, min_length, return_scores, return_alignments, alignment_layer,
     * replace_unknowns); target_prefix and sentence_index there are set by the service. */
    const char *const *target_prefix; /* per text of the request (NULL, or NULL entries: none):
                                         * the text its translation starts with (its first
                                         * sentence's); with prefix_ids: target ids "12 7" */
    int prefix_ids;
    unsigned protect;         /* MT_PROTECT_* kinds kept byte for byte, in text and HTML
                               * (default MT_PROTECT_ALL; 0: none) */
} mt_service_options;

/* The model's search defaults (n_best 1, unk_id the tokenizer's), plain text in and out,
 * every protected kind kept, no deadline. */
void mt_service_options_default(const mt_service *svc, int model, mt_service_options *opts);

/* The translation of one text: n_best texts, best first, with their scores (the mean of
 * the sentences' normalised scores), and extras of the best one when asked. Token
 * positions run over the text's sentences in order: source tokens as encoded (language
 * token and eos included), output tokens as generated (eos excluded). */
typedef struct {
    int n_best;
    char **texts;
    float *scores;
    int n_tokens;                /* output tokens of the best translation (with extras) */
    float *token_scores;         /* return_scores: n_tokens log-probs */
    int (*token_alignments)[2];  /* return_alignments: n_tokens [source token, output token] */
    int n_alignments;
    int (*alignments)[2];        /* return_alignments: [source word, output word] pairs over the
                                  * whitespace-separated words of the text and its translation
                                  * (protected spans cut out of both), sorted, distinct */
} mt_translation;

/* Outcomes of a request (mt_service_job_outcome) and results of submitting one. */
enum {
    MT_SERVICE_OK = 0,
    MT_SERVICE_CLIENT_GONE = 1,  /* cancelled: nobody waits for the answer */
    MT_SERVICE_DEADLINE = 2,     /* its deadline passed */
    MT_SERVICE_SHUTDOWN = 3,     /* the service is stopping */
    MT_SERVICE_FAILED = 4,       /* the engine failed; the message says why */
    MT_SERVICE_INVALID = 5,      /* prepare: bad input (which text, what) */
    MT_SERVICE_BUSY = 6,         /* run: the queue is at capacity, or stopping */
    MT_SERVICE_NOMEM = 7,
};

/* Checks opts against the model (ranges of every decoding control); MT_SERVICE_OK or
 * MT_SERVICE_INVALID with a message naming the field and its allowed range. prepare
 * runs it too. */
int mt_service_check_options(const mt_service *svc, int model, const mt_service_options *opts, char *err,
                             size_t errlen);

/* Segments and encodes texts[0, n) (lens[i] bytes each, copied) for translator `model`.
 * Returns MT_SERVICE_OK with *job set, or MT_SERVICE_INVALID / MT_SERVICE_NOMEM with a
 * message. */
int mt_service_prepare(mt_service *svc, int model, const mt_service_options *opts, int n,
                       const char *const *texts, const size_t *lens, mt_service_job **job,
                       char *err, size_t errlen);
/* Queues a prepared job; done(job, user) runs once when it is finished (on a worker
 * thread; before this call returns when nothing needed translating) and must not block.
 * Returns MT_SERVICE_OK, or MT_SERVICE_BUSY (done will not run). */
int mt_service_run(mt_service *svc, mt_service_job *job, void (*done)(mt_service_job *, void *),
                   void *user);
/* Requests about to be prepared (+1) or prepared (-1): batches wait for them. */
void mt_service_arriving(mt_service *svc, int delta);

/* Cancels with `reason` (MT_SERVICE_CLIENT_GONE ...) if still running; 1 when this call did. */
int mt_service_job_cancel(mt_service_job *job, int reason);
/* Cancels the job (MT_SERVICE_DEADLINE) when its deadline is past at `now`; 1 when it did. */
int mt_service_job_expire(mt_service_job *job, double now);
/* Drops queued sentences of cancelled or expired jobs now. */
void mt_service_purge(mt_service *svc);
/* Cancels every admitted job with `reason`. */
void mt_service_abort(mt_service *svc, int reason);

/* After done: MT_SERVICE_OK, a cancel reason, or MT_SERVICE_FAILED with *message set. */
int mt_service_job_outcome(const mt_service_job *job, const char **message);
/* After done with MT_SERVICE_OK: one translation per text (owned by the job). */
const mt_translation *mt_service_job_results(const mt_service_job *job);

typedef struct {
    int texts, sentences;
    long source_tokens, target_tokens;    /* target: of the best hypotheses */
    double t_submitted, t_started, t_done; /* mt_now() seconds; 0: not reached */
} mt_service_stats;
void mt_service_job_stats(const mt_service_job *job, mt_service_stats *st);
void mt_service_job_free(mt_service_job *job);

/* Prepare, run and wait: out[i] is filled for each text (free each with
 * mt_translation_clear). Returns MT_SERVICE_OK or another outcome with a message. */
int mt_service_translate(mt_service *svc, int model, const mt_service_options *opts, int n,
                         const char *const *texts, const size_t *lens, mt_translation *out,
                         char *err, size_t errlen);
void mt_translation_clear(mt_translation *t);
/* Deep copy of src into dst (cleared first by the caller); 0, or -1 out of memory (dst is
 * then cleared). */
int mt_translation_copy(mt_translation *dst, const mt_translation *src);

/* Sentence cache counters for /metrics; 0 when the service has no cache (all set to 0). */
int mt_service_cache_stats(mt_service *svc, long *hits, long *misses, long *entries, size_t *bytes);

/* Queue numbers for /metrics. */
void mt_service_gauges(mt_service *svc, int *queued_sentences, int *jobs, int *busy_workers,
                       int *workers);

/* CLOCK_MONOTONIC in seconds (the clock of deadlines and stats). */
double mt_now(void);

#endif
