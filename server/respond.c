/* respond.c: answers: JSON bodies, {"error"} answers with their headers, CORS and
 * draining headers common to every answer. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Copies s into d[cap], cut if needed (log fields). */
void srv_copy_text(char *d, size_t cap, const char *s)
{
    size_t n = strlen(s);
    if (n >= cap) n = cap - 1;
    memcpy(d, s, n);
    d[n] = '\0';
}

void srv_add_common_headers(req_ctx *c, struct MHD_Response *r)
{
    MHD_add_response_header(r, "Access-Control-Allow-Origin", "*");
    if (atomic_load(&c->srv->draining) || c->in.close_after)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
}

enum MHD_Result srv_send_buffer(req_ctx *c, int status, char *buf, size_t len,
                                   const char *content_type, const char *h1, const char *v1)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, buf, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(buf);
        return MHD_NO;
    }
    if (content_type) MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    if (h1) MHD_add_response_header(r, h1, v1);
    srv_add_common_headers(c, r);
    srv_conn_received(c); /* an answer is going out: no 408 may be written now */
    enum MHD_Result ret = MHD_queue_response(c->conn, (unsigned)status, r);
    MHD_destroy_response(r);
    c->out.status = status;
    c->out.bytes_out = len;
    c->phase = P_DONE;
    return ret;
}

enum MHD_Result srv_send_json(req_ctx *c, int status, json_t *body, const char *h1,
                                 const char *v1)
{
    char *text = body ? json_dumps(body, JSON_COMPACT | JSON_REAL_PRECISION(9)) : NULL;
    json_decref(body);
    if (!text) return MHD_NO;
    return srv_send_buffer(c, status, text, strlen(text), "application/json", h1, v1);
}

/* {"error": "..."}: LibreTranslate's error shape, used by both request forms; under /v2/
 * DeepL's {"message": "..."} (its clients read that). */
enum MHD_Result srv_send_error(req_ctx *c, int status, const char *msg)
{
    srv_copy_text(c->out.error, sizeof c->out.error, msg);
    const char *h = NULL, *v = NULL;
    char allow[64];
    if (status == 503) {
        h = MHD_HTTP_HEADER_RETRY_AFTER;
        v = "1";
    } else if (status == 405) {
        snprintf(allow, sizeof allow, "%s", srv_route_allow(c->route));
        h = MHD_HTTP_HEADER_ALLOW;
        v = allow;
    }
    int deepl = c->route && strncmp(c->route->path, "/v2/", 4) == 0;
    return srv_send_json(c, status, json_pack("{s:s}", deepl ? "message" : "error", msg), h, v);
}

enum MHD_Result srv_send_preflight(req_ctx *c)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "Access-Control-Allow-Methods", srv_route_allow(c->route));
    MHD_add_response_header(r, "Access-Control-Allow-Headers",
                            "Content-Type, Authorization, X-API-Key");
    MHD_add_response_header(r, "Access-Control-Max-Age", "86400");
    srv_add_common_headers(c, r);
    srv_conn_received(c); /* an answer is going out: no 408 may be written now */
    enum MHD_Result ret = MHD_queue_response(c->conn, 204, r);
    MHD_destroy_response(r);
    c->out.status = 204;
    c->phase = P_DONE;
    return ret;
}
