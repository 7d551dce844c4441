/* ep_health.c: GET /health, /health/live and /health/ready. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "store.h"

/* /health/live: the process answers (200 while loading and draining too: restarting it
 * would not help). /health/ready and /health: 200 when it takes translations, else 503;
 * "degraded" with the dependency that is down (the shared state database) named. */
enum MHD_Result srv_ep_health(mt_server *s, req_ctx *c)
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
    json_t *body = json_pack("{s:s, s:o, s:i}", "status", "ok", "models", models, "workers", s->workers);
    /* A dependency that is down is named, but the replica stays ready: text translation
     * does not need it, and taking every replica out of the balancer would stop that too. */
    char why[300];
    if (mt_store_shared(s->store) && mt_store_ping(s->store, why, sizeof why) != MT_STORE_OK) {
        json_object_set_new(body, "status", json_string("degraded"));
        json_object_set_new(body, "down", json_pack("{s:s}", "shared_state", why));
    }
    return srv_send_json(c, 200, body, NULL, NULL);
}
