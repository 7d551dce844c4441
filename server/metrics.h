/* metrics.h: counters, gauges and histograms for GET /metrics (Prometheus text format 0.0.4).
 *
 * Thread-safety: every call may come from any thread (one mutex guards the numbers).
 */
#ifndef MT_SERVER_METRICS_H
#define MT_SERVER_METRICS_H

#include <stddef.h>

typedef enum {
    MT_EP_TRANSLATE = 0,
    MT_EP_LANGUAGES,
    MT_EP_HEALTH,
    MT_EP_METRICS,
    MT_EP_OTHER,
    MT_EP_COUNT
} mt_endpoint;

const char *mt_endpoint_path(mt_endpoint ep); /* "/translate", ..., "other" */

typedef struct mt_metrics mt_metrics;

/* Values read when /metrics is rendered (owned by the caller). */
typedef struct {
    int ready;             /* models loaded */
    int draining;          /* shutting down */
    int queued_sentences;  /* sentences waiting for a worker */
    int queued_requests;   /* translate requests admitted and not finished */
    int busy_workers;      /* workers running a batch */
    int workers;
    int in_flight;         /* HTTP requests being served */
    int cache_on;          /* the sentence cache is enabled: its counters follow */
    long cache_hits, cache_misses, cache_entries;
    size_t cache_bytes;
} mt_metrics_gauges;

mt_metrics *mt_metrics_create(void);
void mt_metrics_free(mt_metrics *m);

/* Names the models (label model="..."); call once before any translation is counted. */
int mt_metrics_set_models(mt_metrics *m, int n, const char *const *names);

/* One finished HTTP request. */
void mt_metrics_request(mt_metrics *m, mt_endpoint ep, int status, double seconds);
/* Sentences of one request translated by a model, with their token counts. */
void mt_metrics_translated(mt_metrics *m, int model, long sentences, long src_tokens,
                           long tgt_tokens);
/* One batch run by a worker: sentences, padded source tokens, compute seconds. */
void mt_metrics_batch(mt_metrics *m, int sentences, long tokens, double seconds);
/* Time a request's sentences waited before their first batch. */
void mt_metrics_queue_wait(mt_metrics *m, double seconds);
/* Requests refused because the queue was full; sentences dropped (client gone, deadline). */
void mt_metrics_rejected(mt_metrics *m);
void mt_metrics_cancelled(mt_metrics *m, long sentences);

/* The whole exposition text (malloc'd, caller frees), or NULL. */
char *mt_metrics_render(mt_metrics *m, const mt_metrics_gauges *g);

#endif
