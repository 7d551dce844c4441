/* ep_metrics.c: GET /metrics, the Prometheus text (metrics.c) with the service's queue
 * and cache gauges. Who may read it: the route's SRV_AUTH_METRICS (auth.c). */
#include "internal.h"

#include <string.h>

enum MHD_Result srv_ep_metrics(mt_server *s, req_ctx *c)
{
    mt_metrics_gauges g = {0};
    g.ready = atomic_load(&s->ready);
    g.draining = atomic_load(&s->draining);
    g.in_flight = atomic_load(&s->in_flight);
    if (g.ready)
        mt_service_gauges(s->svc, &g.queued_sentences, &g.queued_requests, &g.busy_workers,
                          &g.workers);
    if (g.ready)
        g.cache_on = mt_service_cache_stats(s->svc, &g.cache_hits, &g.cache_misses, &g.cache_entries,
                                            &g.cache_bytes);
    char *text = srv_jobs_metrics(s, mt_metrics_render(s->metrics, &g));
    if (!text) return srv_send_error(c, 500, "out of memory");
    return srv_send_buffer(c, 200, text, strlen(text), "text/plain; version=0.0.4; charset=utf-8",
                       NULL, NULL);
}
