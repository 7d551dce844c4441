/* service_engine.h: the service below the request layer, for the service's own files,
 * tests and benchmarks (front ends use service.h only): a service over translators
 * already loaded, one model's fully resolved engine options (mt_search_options), and jobs
 * that translate texts with one model (prepare, run, read, free). The thread-safety and
 * cancellation rules of service.h apply; a job belongs to its caller as a task does.
 */
#ifndef MT_TRANSLATOR_SERVICE_ENGINE_H
#define MT_TRANSLATOR_SERVICE_ENGINE_H

#include <stddef.h>

#include "options_search.h"
#include "service.h"
#include "translator.h"

typedef struct mt_service_job mt_service_job;

/* The same over translators trs[0, n) already loaded (borrowed: they must outlive the
 * service). */
mt_service *mt_service_create(mt_translator *const *trs, int n, const mt_service_config *cfg,
                              const mt_service_observer *obs, char *err, size_t errlen);

/* One model's fully resolved options (mt_service_resolve_options makes them from a
 * request; a new decoding option is a row in decoding_options.h). Jobs whose options differ in a
 * batch_key option never share a batch. */
typedef struct {
    mt_search_options search; /* every decoding option (options.h); cancel, target_prefix and
                               * sentence_index there are set by the service */
    mt_format input;          /* what the texts are */
    int output_ids;           /* 1: translations are target ids ("12 7 9"), sentences joined by a space */
    const char *target_lang;  /* multilingual models: the target ("fra"); NULL: the model's own */
    double deadline;          /* CLOCK_MONOTONIC seconds (mt_now()), 0: none */
    const char *const *target_prefix; /* per text of the request (NULL, or NULL entries: none):
                                         * the text its translation starts with (its first
                                         * sentence's); with prefix_ids: target ids "12 7" */
    int prefix_ids;
    unsigned protect;         /* MT_PROTECT_* kinds kept byte for byte, in text and HTML
                               * (default MT_PROTECT_ALL; 0: none) */
    int one_sentence;         /* 1: each text unit is one sentence (mt_translator_segment_whole) */
    mt_decoding asked;        /* the request's own decoding options (resolve keeps them; none by
                               * default): a pivot route resolves each step's search from them
                               * over that step's model's defaults (pivot.c) */
} mt_service_options;

/* The model's search defaults (n_best 1, unk_id the tokenizer's), plain text in and out,
 * every protected kind kept, no deadline. */
void mt_service_options_default(const mt_service *svc, int model, mt_service_options *opts);

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
 * Returns MT_SERVICE_OK, or (done will not run) MT_SERVICE_BUSY when the queue is full, or
 * MT_SERVICE_SHUTDOWN when the service is stopping or was aborted for shutdown. */
int mt_service_run(mt_service *svc, mt_service_job *job, void (*done)(mt_service_job *, void *),
                   void *user);

/* Cancels with `reason` (MT_SERVICE_CLIENT_GONE ...) if still running; 1 when this call did. */
int mt_service_job_cancel(mt_service_job *job, int reason);
/* Cancels the job (MT_SERVICE_DEADLINE) when its deadline is past at `now`; 1 when it did. */
int mt_service_job_expire(mt_service_job *job, double now);

/* After done: MT_SERVICE_OK, a cancel reason, or MT_SERVICE_FAILED with *message set. */
int mt_service_job_outcome(const mt_service_job *job, const char **message);
/* After done with MT_SERVICE_OK: one translation per text (owned by the job). */
const mt_translation *mt_service_job_results(const mt_service_job *job);

void mt_service_job_stats(const mt_service_job *job, mt_service_stats *st);
void mt_service_job_free(mt_service_job *job);

/* Prepare, run and wait: out[i] is filled for each text (free each with
 * mt_translation_clear). Returns MT_SERVICE_OK or another outcome with a message. */
int mt_service_translate(mt_service *svc, int model, const mt_service_options *opts, int n,
                         const char *const *texts, const size_t *lens, mt_translation *out,
                         char *err, size_t errlen);

/* The options a request gets on `route`: its own over the service's defaults over the
 * model's, then the policy (sampling without a beam size: beam 1; n_best without a beam
 * size raises it; n_best <= beam_size) and the ranges. MT_SERVICE_OK, or
 * MT_SERVICE_INVALID with a message naming the field. */
int mt_service_resolve_options(const mt_service *svc, int route, const mt_service_request *rq,
                               mt_service_options *opts, char *err, size_t errlen);

/* The search part of that: the service's defaults and then `asked` over o (which holds a
 * model's defaults, mt_service_options_default), then the policy and n_best <= beam_size.
 * MT_SERVICE_OK or MT_SERVICE_INVALID with a message; the model's ranges are left to
 * mt_service_check_options. */
int mt_service_apply_decoding(const mt_service *svc, const mt_decoding *asked, mt_search_options *o, char *err,
                              size_t errlen);

#endif
