/* batcher.h: the bounded translation queue, dynamic batching across callers, and the
 * worker threads that run the model. Internal to translator/: service.c is its only user
 * (callers of the library see service.h, which speaks texts, not ids).
 *
 * A job is one service request's work: its encoded sentences, the model and the search
 * options. Jobs are admitted up to a capacity (beyond it submit fails: answer 503), and
 * only when the work ahead of them and their own can be done before their deadline at
 * the pace measured so far (else submit fails at once rather than letting the job time
 * out in the queue). Sentences of all admitted jobs wait in one FIFO; a worker takes the
 * oldest sentence and fills the batch in arrival order with queued sentences that use the
 * same model and options, within max_sentences and max_tokens (padded), giving at most a
 * quarter of it to one sentence each of requests that have not started yet. While more
 * requests are expected (being prepared, see mt_batcher_arriving, or from clients whose
 * previous request just finished) and the batch is not full, it waits up to max_wait_ms
 * (from the oldest sentence's arrival) for them; a lone client never waits. Each result goes back to its own sentence; when a job's last
 * sentence is done its on_done callback runs (on a worker thread, or in
 * mt_batcher_purge/mt_batcher_abort): it must not block.
 *
 * Cancellation: set job->cancel (MT_JOB_*). Queued sentences of cancelled jobs, or of jobs
 * whose deadline passed, are dropped without compute; sentences in a running batch stop
 * at the next decoding step (mt_search_options.cancel).
 *
 * Thread-safety: every function may be called from any thread. The job belongs to the
 * batcher from mt_batcher_submit() until on_done; its owner may only set job->cancel.
 */
#ifndef MT_TRANSLATOR_BATCHER_H
#define MT_TRANSLATOR_BATCHER_H

#include <stdatomic.h>
#include <stdint.h>

#include "model.h"

/* Why a job stopped early (job->cancel). */
enum { MT_JOB_RUNNING = 0, MT_JOB_CLIENT_GONE = 1, MT_JOB_DEADLINE = 2, MT_JOB_SHUTDOWN = 3 };

typedef struct mt_job mt_job;
typedef struct mt_item mt_item;

struct mt_item {
    mt_job *job;
    const int32_t *ids;   /* source ids ending in eos (owned by the job's owner) */
    int len;
    uint64_t index;       /* its sentence index in its request (seeded sampling draws from it) */
    const int32_t *prefix;/* target_prefix ids (owned by the job's owner), NULL: none */
    int prefix_len;
    /* filled by the batcher */
    int status;           /* MT_OK, MT_ERR_CANCELLED or an engine error */
    int n_hyps;
    int32_t **hyp_ids;    /* n_hyps arrays (malloc'd; mt_job_clear_results frees) */
    int *hyp_lens;
    float *scores;
    float **token_scores; /* return_scores: per hypothesis, hyp_len + 1 log-probs; else NULL */
    int32_t **alignment;  /* return_alignments / replace_unknowns: per hypothesis, per id the
                           * source position attended most; else NULL */
    /* private to the batcher */
    double t_queued;
    int in_batch;         /* picked for the batch being formed */
    mt_item *next, *prev; /* queue links */
};

struct mt_job {
    int model;                 /* index into the batcher's models */
    mt_search_options opts;    /* cancel / cancel_user, sentence_index and target_prefix are set
                                * by the batcher from the items */
    int n_items;
    mt_item *items;
    double deadline;           /* CLOCK_MONOTONIC seconds, 0 = none */
    atomic_int cancel;         /* MT_JOB_* */
    void (*on_done)(mt_job *job, void *user);
    void *user;
    /* filled by the batcher */
    atomic_int remaining;      /* items not finished */
    int error;                 /* 1: a batch failed; error_text says why */
    char error_text[256];
    double t_submitted, t_started, t_done; /* monotonic seconds; t_started: first batch */
    double retry_after;        /* submit refused it (-2): seconds until the queue could finish it */
    /* private to the batcher */
    int fresh_taken;           /* has a place in the batch being formed */
    mt_job *jnext, *jprev;     /* admitted jobs; jnext also chains finished jobs */
};

typedef struct {
    int workers;             /* threads */
    int threads_per_worker;  /* BLAS threads of each worker's states */
    int capacity;            /* jobs admitted at once */
    int max_sentences;       /* per batch */
    int max_tokens;          /* padded source tokens per batch */
    int max_wait_ms;
    size_t cache_bytes;      /* sentence cache budget (0: no cache) */
} mt_batcher_config;

/* What the batcher reports as it works (any member may be NULL; called without locks
 * held, from worker threads or from purge/abort). */
typedef struct {
    void (*batch)(void *user, int sentences, long padded_tokens, double seconds);
    void (*queue_wait)(void *user, double seconds); /* a job's wait before its first batch */
    void (*cancelled)(void *user, long sentences);  /* dropped or stopped sentences */
    void *user;
} mt_batcher_observer;

typedef struct mt_batcher mt_batcher;

/* Creates one state per (worker, model) and starts the workers. */
mt_batcher *mt_batcher_create(const mt_model *const *models, int n_models,
                              const mt_batcher_config *cfg, const mt_batcher_observer *obs, char *err,
                              size_t errlen);
/* Cancels what is queued or running (MT_JOB_SHUTDOWN), joins the workers, frees. */
void mt_batcher_free(mt_batcher *b);

/* Queues a job with at least one item. Returns 0, -1 when at capacity, -2 when, at the
 * pace measured so far, the work queued ahead of it and its own would not be done before
 * its deadline (job->retry_after: the seconds after which it would), or -3 when stopping
 * or closed by an abort for shutdown (for good: nothing will be admitted again). */
int mt_batcher_submit(mt_batcher *b, mt_job *job);
/* Seconds the workers need, at the measured pace, for what is queued and running now
 * (0 before anything was measured). */
double mt_batcher_backlog_seconds(mt_batcher *b);
/* Requests being prepared that will be submitted soon (+1 before parsing, -1 after):
 * batches wait for them up to max_wait_ms. */
void mt_batcher_arriving(mt_batcher *b, int delta);
/* Drops queued sentences of cancelled or expired jobs now (not waiting for a worker). */
void mt_batcher_purge(mt_batcher *b);
/* Cancels every admitted job with `reason` and drops their queued sentences; with
 * MT_JOB_SHUTDOWN every later submission is refused as if stopping (-3). */
void mt_batcher_abort(mt_batcher *b, int reason);

/* Current numbers for /metrics. */
void mt_batcher_gauges(mt_batcher *b, int *queued_sentences, int *jobs, int *busy_workers,
                       int *workers);

/* The sentence cache's counters; 0 when there is no cache (*st zeroed). */
int mt_batcher_cache_stats(mt_batcher *b, long *hits, long *misses, long *entries, size_t *bytes);

/* Frees the hypotheses the batcher attached to a finished job's items. */
void mt_job_clear_results(mt_job *job);

/* Sets job->cancel to reason if the job is still running; 1 when this call set it. */
int mt_job_cancel(mt_job *job, int reason);
/* The one deadline check: cancels the job (MT_JOB_DEADLINE) when `now` is past its
 * deadline; 1 when this call cancelled it. */
int mt_job_expire(mt_job *job, double now);

/* CLOCK_MONOTONIC in seconds. */
double mt_now(void);

#endif
