/* endpoints.c: GET /health, /metrics, /languages and the CORS preflight answer. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* /health/live: the process answers (200 while loading and draining too: restarting it
 * would not help). /health/ready and /health: 200 when it takes translations, else 503. */
static enum MHD_Result respond_health(mt_server *s, req_ctx *c)
{
    if (strcmp(c->path, "/health/live") == 0)
        return srv_send_json(c, 200, json_pack("{s:s}", "status", "alive"), NULL, NULL);
    if (atomic_load(&s->draining))
        return srv_send_json(c, 503, json_pack("{s:s}", "status", "draining"), NULL, NULL);
    if (!atomic_load(&s->ready))
        return srv_send_json(c, 503, json_pack("{s:s}", "status", "loading"),
                         MHD_HTTP_HEADER_RETRY_AFTER, "1");
    json_t *models = json_array();
    const mt_langs *langs = mt_service_langs(s->svc);
    for (int i = 0; i < mt_langs_count(langs); i++) {
        const mt_route *r = mt_langs_get(langs, i);
        json_array_append_new(models, json_pack("{s:s, s:s, s:s}", "name", mt_service_model_info(s->svc, r->model)->name,
                                                "source", r->source, "target", r->target));
    }
    return srv_send_json(c, 200, json_pack("{s:s, s:o, s:i}", "status", "ok", "models", models,
                                       "workers", s->workers),
                     NULL, NULL);
}

/* /metrics is protected like the API once API keys exist (it names models, traffic and
 * the process): an API key or the metrics key opens it, unless metrics_public. */
static int metrics_allowed(mt_server *s, req_ctx *c)
{
    const mt_config *cfg = s->cfg;
    if (cfg->metrics_public || (cfg->n_api_keys == 0 && !cfg->metrics_key[0])) return 1;
    char err[200];
    if (cfg->n_api_keys > 0 && srv_check_api_key(s, c, NULL, err, sizeof err) == 0) return 1;
    if (!cfg->metrics_key[0]) return 0;
    const char *k = MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (k && strncasecmp(k, "Bearer ", 7) == 0) k += 7;
    else k = MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND, "X-API-Key");
    if (!k) k = MHD_lookup_connection_value(c->conn, MHD_GET_ARGUMENT_KIND, "api_key");
    return k && srv_key_equal(k, cfg->metrics_key);
}

static enum MHD_Result respond_metrics(mt_server *s, req_ctx *c)
{
    if (!metrics_allowed(s, c))
        return srv_send_error(c, 403, "GET /metrics needs an API key or the metrics key (server.metrics_key); "
                                      "server.metrics_public opens it");
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
    char *text = mt_metrics_render(s->metrics, &g);
    if (!text) return srv_send_error(c, 500, "out of memory");
    return srv_send_buffer(c, 200, text, strlen(text), "text/plain; version=0.0.4; charset=utf-8",
                       NULL, NULL);
}

static enum MHD_Result respond_languages(mt_server *s, req_ctx *c)
{
    if (!atomic_load(&s->ready)) return srv_send_error(c, 503, "models are loading; retry shortly");
    char *text = strdup(s->languages_json);
    if (!text) return srv_send_error(c, 500, "out of memory");
    return srv_send_buffer(c, 200, text, strlen(text), "application/json", NULL, NULL);
}

enum MHD_Result srv_send_preflight(req_ctx *c)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "Access-Control-Allow-Methods",
                            c->ep == MT_EP_TRANSLATE ? "POST, OPTIONS" : "GET, HEAD, OPTIONS");
    MHD_add_response_header(r, "Access-Control-Allow-Headers",
                            "Content-Type, Authorization, X-API-Key");
    MHD_add_response_header(r, "Access-Control-Max-Age", "86400");
    srv_add_common_headers(c, r);
    srv_conn_received(c); /* an answer is going out: no 408 may be written now */
    enum MHD_Result ret = MHD_queue_response(c->conn, 204, r);
    MHD_destroy_response(r);
    c->status = 204;
    c->phase = P_DONE;
    return ret;
}

enum MHD_Result srv_respond_get(mt_server *s, req_ctx *c)
{
    switch (c->ep) {
    case MT_EP_HEALTH: return respond_health(s, c);
    case MT_EP_METRICS: return respond_metrics(s, c);
    case MT_EP_LANGUAGES: return respond_languages(s, c);
    default: return srv_lt_respond_get(s, c); /* issue 14: /frontend/settings */
    }
}
