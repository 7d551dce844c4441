/* service.h: the translation service every front end goes through (mt-translate and
 * mt-server). It owns every decision about what is translated and how:
 *   - the models: mt_service_load() takes model specs (paths, names, language pairs,
 *     compute types), loads and names them, and builds the language routes (langs.h);
 *   - routing: a request names source and target; "auto" detects each text's language
 *     (detect/) and fans the request out, one part per route, merged back in order;
 *   - options: the request's decoding options (options.h) over the service's defaults
 *     (the server's [decoding] settings) over the model's own, and the policy between
 *     them (sampling means beam 1, n_best <= beam_size, ranges);
 *   - the pipeline: texts are segmented and encoded (target-language token included),
 *     their sentences queued in one bounded queue shared by every caller, where worker
 *     threads batch sentences of the same model and options by length across requests
 *     (batcher.c), search, decode and rejoin.
 * Front ends build an mt_service_request and render the task's result; they never see a
 * model, a tokenizer or token ids.
 *
 * Life of a request: mt_service_submit() (routing, detection, options, segmentation,
 * encoding: input errors are reported here), mt_service_task_start() (queued; the
 * callback follows, on a worker thread, or at once when nothing needs translating), read
 * the outcome, the translations, each text's route and the merged stats,
 * mt_service_task_free(). mt_service_task_run() starts and waits;
 * mt_service_translate_request() does all of it.
 *
 * Below the request layer, service_engine.h's mt_service_prepare()/mt_service_run()
 * translate texts with one model and fully resolved engine options (the service's own
 * files, tests and benchmarks): this header names no model, tokenizer or search type.
 *
 * Cancellation: mt_service_task_cancel() (a client went away, shutting down) or the
 * request's deadline; queued sentences are dropped without compute and running ones stop
 * at their next decoding step. The callback still runs once.
 *
 * Thread-safety: an mt_service is shared by all threads; every call may come from any
 * thread. A task (job) belongs to its caller, who may cancel it at any time but may read
 * its results only after its callback ran, and frees it once.
 */
#ifndef MT_TRANSLATOR_SERVICE_H
#define MT_TRANSLATOR_SERVICE_H

#include <stddef.h>

#include "detect.h"
#include "glossary.h"
#include "langs.h"
#include "options.h"
#include "protect.h"

typedef struct mt_service mt_service;

typedef struct {
    int workers;             /* worker threads, each with one model state per model */
    int threads_per_worker;  /* compute threads of each worker (a batch split by sentence) */
    int capacity;            /* requests admitted at once (beyond: MT_SERVICE_BUSY) */
    int max_sentences;       /* sentences per batch */
    int max_tokens;          /* padded source tokens per batch */
    int max_wait_ms;         /* a batch that is not full waits this long for expected requests */
    size_t cache_bytes;      /* sentence cache: finished sentences by model, options and source
                              * ids, LRU within this many bytes (0: none). Sampling, target
                              * prefixes, per-token extras and extra banned ids bypass it */
    mt_decoding defaults;    /* decoding options of every request that does not set them */
    int detect;              /* 1: detect languages (source "auto", mt_service_detect) */
    /* mt_service_load: how every model computes (NULL / 0: the defaults) */
    const char *kernels;     /* at most this kernel path: scalar, avx2, avx512, auto */
    const char *cpu_hide;    /* CPU features taken as absent (vnni, bf16, amx), for tests */
    int split_min;           /* sentences per thread from which a batch is split (< 0: default) */
} mt_service_config;

/* One worker, batches of 32 sentences, no waiting: what a single caller wants. */
void mt_service_config_default(mt_service_config *cfg);

/* One model to serve. */
typedef struct {
    const char *path;         /* model directory */
    const char *name;         /* name in answers and logs; NULL: the directory's basename */
    const char *source, *target; /* language pair; NULL: the model's tokenizer_config.json */
    const char *compute_type; /* float32 | bfloat16 | int8 | auto | default; NULL: default */
} mt_service_spec;

/* A loaded model, as logs and answers describe it (strings owned by the service). */
typedef struct {
    const char *name, *path, *source, *target;
    const char *compute_type;   /* the type in use ("float32") */
    const char *compute_detail; /* its kernels and packing, in words */
    const char *format;         /* how its directory was read: "marian", or in place
                                 * "argos-package" / "ctranslate2" */
    int language_tokens;        /* ">>xxx<<" target tokens of a multilingual model */
    int d_model, encoder_layers, decoder_layers, default_beam_size, default_max_length;
    double load_ms;
} mt_service_model;

/* Reports of the service's work, for logs and metrics (each member may be NULL; called
 * from worker threads and from mt_service_purge / mt_service_abort, without locks held;
 * `loaded` and `note` from mt_service_load's thread). */
typedef struct {
    void (*batch)(void *user, int sentences, long padded_tokens, double seconds);
    void (*queue_wait)(void *user, double seconds);
    void (*cancelled)(void *user, long sentences);
    /* a request's part on model `model` finished: its sentences and tokens */
    void (*translated)(void *user, int model, long sentences, long source_tokens, long target_tokens);
    void (*loaded)(void *user, int model, const mt_service_model *m);
    void (*note)(void *user, int warning, const char *event, const char *text); /* a line for the log */
    void *user;
} mt_service_observer;

/* Process setup before any model is loaded: the BLAS kernel (blas_coretype, NULL: the
 * CPU's); may re-execute argv. */
void mt_service_process_setup(char **argv, const char *blas_coretype);

/* Loads the models of specs[0, n) (owned by the service), their routes, the language
 * detector (cfg->detect) and starts the workers. obs may be NULL. Returns NULL with a
 * message naming the model on failure. */
mt_service *mt_service_load(const mt_service_spec *specs, int n, const mt_service_config *cfg,
                            const mt_service_observer *obs, char *err, size_t errlen);

int mt_service_model_count(const mt_service *svc);
const mt_service_model *mt_service_model_info(const mt_service *svc, int model);
/* The routes (language pairs) the models serve: read-only. */
const mt_langs *mt_service_langs(const mt_service *svc);
/* The BLAS library's name and kernel, for logs. */
const char *mt_service_blas_name(void);
/* Cancels what is left (MT_SERVICE_SHUTDOWN), joins the workers, frees the service. */
void mt_service_free(mt_service *svc);

/* What the texts of a request are. */
typedef enum {
    MT_FORMAT_TEXT = 0,  /* plain text: lines and sentences, whitespace kept */
    MT_FORMAT_HTML = 1,  /* an HTML fragment: markup kept, text nodes translated */
    MT_FORMAT_IDS = 2,   /* one sentence of space-separated source ids (eos appended) */
} mt_format;


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
    MT_SERVICE_SHUTDOWN = 3,     /* the service is stopping (cancelled; start/run: refused after
                                  * an abort for shutdown): for good, not worth a retry here */
    MT_SERVICE_FAILED = 4,       /* the engine failed; the message says why */
    MT_SERVICE_INVALID = 5,      /* prepare: bad input (which text, what) */
    MT_SERVICE_BUSY = 6,         /* start/run: the queue is at capacity (or the work ahead would
                                  * outlast the deadline): a retry later may pass */
    MT_SERVICE_NOMEM = 7,
};

/* Requests about to be prepared (+1) or prepared (-1): batches wait for them. */
void mt_service_arriving(mt_service *svc, int delta);

/* Drops queued sentences of cancelled or expired jobs now. */
void mt_service_purge(mt_service *svc);
/* Cancels every admitted job with `reason`. With MT_SERVICE_SHUTDOWN the service admits
 * nothing more (start/run: MT_SERVICE_SHUTDOWN, as when stopping), so that a caller between
 * two submissions when it came (a file job's next chunk) starts no new work, and says why:
 * the blocking calls' message is "the translation service is shutting down", not a full
 * queue's. */
void mt_service_abort(mt_service *svc, int reason);


typedef struct {
    int texts, sentences;
    long source_tokens, target_tokens;    /* target: of the best hypotheses */
    double t_submitted, t_started, t_done; /* mt_now() seconds; 0: not reached */
} mt_service_stats;

void mt_translation_clear(mt_translation *t);
/* Deep copy of src into dst (cleared first by the caller); 0, or -1 out of memory (dst is
 * then cleared). */
int mt_translation_copy(mt_translation *dst, const mt_translation *src);

/* Sentence cache counters for /metrics; 0 when the service has no cache (all set to 0). */
int mt_service_cache_stats(mt_service *svc, long *hits, long *misses, long *entries, size_t *bytes);

/* Queue numbers for /metrics. */
void mt_service_gauges(mt_service *svc, int *queued_sentences, int *jobs, int *busy_workers,
                       int *workers);
/* Seconds the workers need, at the pace measured so far, for the work queued and running
 * now (0 before anything was measured). A request whose deadline falls before the queue
 * could finish it is refused with MT_SERVICE_BUSY rather than left to time out. */
double mt_service_backlog_seconds(mt_service *svc);

/* CLOCK_MONOTONIC in seconds (the clock of deadlines and stats). */
double mt_now(void);

/* ---------------------------------------------------------------- the request layer */

typedef struct mt_service_task mt_service_task;

/* What a front end asks for. */
typedef struct {
    const char *source;        /* language code; "auto": each text's language is detected
                                * (without a detector: the one route into target); NULL:
                                * the one route into target, or the first model when
                                * target is NULL too */
    const char *target;        /* language code; NULL: the one route from source */
    int n;                     /* texts[0, n), lens[i] bytes each (copied by submit) */
    const char *const *texts;
    const size_t *lens;
    mt_decoding decoding;      /* the request's options (see options.h) */
    mt_format input;           /* what the texts are */
    int output_ids;            /* 1: translations are target ids */
    const char *const *target_prefix; /* per text (NULL, or NULL entries: none) */
    int prefix_ids;            /* 1: the prefixes are target ids "12 7" */
    unsigned protect;          /* MT_PROTECT_* kinds kept byte for byte */
    double deadline;           /* mt_now() seconds; 0: none */
    int one_sentence;          /* 1: each text (each block of an HTML text) is translated as
                                * one sentence, its line breaks read as spaces (for callers
                                * that send one sentence per text); a text that encodes to
                                * more than the model's maximum source length is split as
                                * usual, since it could not be encoded whole */
    const mt_glossary *glossary; /* its source terms come out as its target terms
                                  * (glossary.h: masked at submit, put back in the
                                  * results; borrowed until submit returns); NULL: none */
} mt_service_request;

/* Plain text, no options, every protected kind kept, no deadline. */
void mt_service_request_init(mt_service_request *rq);

/* The route of a request with this source and target (langs.h rules; "auto" without
 * detection); *detected = 1 when source was "auto". The route index, or -1 with a
 * message listing the pairs served. */
int mt_service_route(const mt_service *svc, const char *source, const char *target, int *detected,
                     char *err, size_t errlen);

/* The options a request gets on `route` (the service's defaults and the model's under
 * its own, then the policy: mt_service_resolve_options in service_engine.h), every one
 * set in *out. MT_SERVICE_OK, or MT_SERVICE_INVALID with a message naming the field. */
int mt_service_resolve(const mt_service *svc, int route, const mt_service_request *rq, mt_decoding *out, char *err,
                       size_t errlen);

/* Routes (detecting each text's language for "auto"), resolves the options of each
 * route, segments and encodes every text: *task is ready to start. MT_SERVICE_OK, or
 * MT_SERVICE_INVALID (unknown pair, bad option or input: the message says which) or
 * MT_SERVICE_NOMEM. */
int mt_service_submit(mt_service *svc, const mt_service_request *rq, mt_service_task **task, char *err,
                      size_t errlen);
/* Queues the task's parts; done(task, user) runs once when every part is finished (on a
 * worker thread; before this call returns when nothing needed translating) and must not
 * block. MT_SERVICE_OK, or (done will not run) MT_SERVICE_BUSY (the queue is full) or
 * MT_SERVICE_SHUTDOWN (the service is stopping, or was aborted for shutdown: for good). */
int mt_service_task_start(mt_service_task *task, void (*done)(mt_service_task *, void *), void *user);

/* Cancels with `reason` (MT_SERVICE_CLIENT_GONE ...); 1 when this call did. */
int mt_service_task_cancel(mt_service_task *task, int reason);
/* Cancels (MT_SERVICE_DEADLINE) when its deadline is past at `now`; 1 when it did. */
int mt_service_task_expire(mt_service_task *task, double now);

/* After done: MT_SERVICE_OK, a cancel reason, MT_SERVICE_BUSY (a part found the queue
 * full), MT_SERVICE_SHUTDOWN (also when a part was refused for shutdown) or
 * MT_SERVICE_FAILED with *message set. */
int mt_service_task_outcome(const mt_service_task *task, const char **message);
/* After done with MT_SERVICE_OK: one translation per text, in request order (owned by
 * the task). */
const mt_translation *mt_service_task_results(const mt_service_task *task);
/* The route text t went to (t < 0 or no texts: the request's first route). */
const mt_route *mt_service_task_route(const mt_service_task *task, int t);
/* 0: the source was given; 1: "auto", resolved to the one route into target; 2: "auto",
 * each text's language detected (answers report the detected languages). */
int mt_service_task_detected(const mt_service_task *task);
/* How sure detection was of text t's language, 0..100 (100: not detected per text). */
double mt_service_task_confidence(const mt_service_task *task, int t);
/* Of every part together: texts, sentences and tokens summed; submitted / started the
 * earliest, done the latest. */
void mt_service_task_stats(const mt_service_task *task, mt_service_stats *st);
void mt_service_task_free(mt_service_task *task);

/* Starts the task and waits for its end (for callers that block): its outcome, with a
 * message when not MT_SERVICE_OK (MT_SERVICE_BUSY or MT_SERVICE_SHUTDOWN also when the
 * queue refused it: "the translation queue is full", "the translation service is shutting
 * down"). The
 * results, routes and stats are then read as after done; the caller still frees it. */
int mt_service_task_run(mt_service_task *task, char *err, size_t errlen);

/* Submit, run and wait: out[i] is filled for each text (free each with
 * mt_translation_clear). MT_SERVICE_OK or another outcome with a message. */
int mt_service_translate_request(mt_service *svc, const mt_service_request *rq, mt_translation *out, char *err,
                                 size_t errlen);
/* The same, keeping only each text's best translation: out[i] a malloc'd string for each
 * text ("" when it has none), freed by the caller. MT_SERVICE_OK, or another outcome with
 * a message and every out[i] NULL. What a front end that writes text back (a file
 * translated unit by unit: formats.h) needs. */
int mt_service_translate_texts(mt_service *svc, const mt_service_request *rq, char **out, char *err,
                               size_t errlen);

/* Language detection over the served source languages. */
int mt_service_can_detect(const mt_service *svc);
/* Best first, up to max results; only languages some route into `target` starts from
 * when target is not NULL. The count, or -1 (no detector, or it failed). */
int mt_service_detect(const mt_service *svc, const char *text, size_t len, const char *target,
                      mt_detect_result *out, int max);

#endif
