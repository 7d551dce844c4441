/* handler.c: the libmicrohttpd callbacks: framing checks, the request's route (the table
 * in routes.c) and early refusals, body reading up to the route's limit, dispatch to the
 * route's handler, and the access log and request metrics when a request completes. */
#include "internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

/* Answers after the (empty or ignored) body has been read: MHD keeps the connection
 * alive only for answers queued once the request is complete. */
static enum MHD_Result defer(req_ctx *c, int status, const char *msg)
{
    c->in.discard = 1;
    c->phase = P_BODY;
    c->in.deferred_status = status;
    if (msg) srv_copy_text(c->in.deferred_msg, sizeof c->in.deferred_msg, msg);
    return MHD_YES;
}

/* ---- request framing and target checks (RFC 9112, request smuggling) ---- */

void *srv_on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    (void)conn;
    mt_server *s = cls;
    /* %00 decodes to a NUL that would cut the path short ("/translate%00x" served as
     * "/translate"): remember it before libmicrohttpd unescapes the target. */
    const char *q = strchr(uri, '?');
    size_t path_len = q ? (size_t)(q - uri) : strlen(uri);
    for (const char *p = uri; (p = strchr(p, '%')) != NULL; p++)
        if (p[1] == '0' && p[2] == '0') return (size_t)(p - uri) < path_len ? &s->nul_in_path : &s->nul_in_query;
    return NULL;
}

typedef struct {
    int content_length, host, transfer_encoding, content_encoding;
    char first_length[32];
    int lengths_differ;
    char te[64], ce[64];
} header_counts;

static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    header_counts *h = cls;
    if (!value) value = "";
    if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0) {
        if (h->content_length++ == 0) snprintf(h->first_length, sizeof h->first_length, "%s", value);
        else if (strcmp(h->first_length, value) != 0) h->lengths_differ = 1;
    } else if (strcasecmp(key, MHD_HTTP_HEADER_HOST) == 0) {
        h->host++;
    } else if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0) {
        if (h->transfer_encoding++ == 0) snprintf(h->te, sizeof h->te, "%s", value);
    } else if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_ENCODING) == 0) {
        if (h->content_encoding++ == 0) snprintf(h->ce, sizeof h->ce, "%s", value);
    }
    return MHD_YES;
}

/* A framing error: answered at once with Connection: close, so that nothing the client
 * sent after the headers is read as another request. */
static enum MHD_Result refuse_and_close(req_ctx *c, int status, const char *msg)
{
    c->in.close_after = 1;
    return srv_send_error(c, status, msg);
}

/* Refuses requests whose framing is ambiguous or unsupported, and bad targets; MHD_YES with
 * *answered 0 when the request may go on. */
static enum MHD_Result check_request(mt_server *s, req_ctx *c, const char *version, int marker,
                                     int *answered)
{
    *answered = 1;
    if (marker == 1) return defer(c, 404, "not found: the path contains %00 (a NUL byte)");
    if (marker == 2) return refuse_and_close(c, 400, "bad request: the query contains %00 (a NUL byte)");
    header_counts h = {0};
    MHD_get_connection_values(c->conn, MHD_HEADER_KIND, count_header, &h);
    if (h.transfer_encoding) {
        const char *v = h.te;
        while (*v == ' ' || *v == '\t') v++;
        size_t n = strlen(v);
        while (n && (v[n - 1] == ' ' || v[n - 1] == '\t')) n--;
        if (h.transfer_encoding > 1 || n != 7 || strncasecmp(v, "chunked", 7) != 0)
            return refuse_and_close(c, 501, "Transfer-Encoding other than a single \"chunked\" is not supported");
        if (h.content_length)
            return refuse_and_close(c, 400, "bad request: both Transfer-Encoding and Content-Length (RFC 9112 6.1)");
    }
    if (h.lengths_differ)
        return refuse_and_close(c, 400, "bad request: Content-Length headers that differ (RFC 9112 6.3)");
    if (h.content_length) {
        const char *v = h.first_length;
        int digits = *v != '\0';
        for (const char *p = v; *p; p++) digits &= *p >= '0' && *p <= '9';
        if (!digits) return refuse_and_close(c, 400, "bad request: Content-Length is not a decimal number");
    }
    if (strcmp(version, MHD_HTTP_VERSION_1_1) == 0 && h.host != 1)
        return refuse_and_close(c, 400, h.host ? "bad request: more than one Host header"
                                               : "bad request: HTTP/1.1 needs a Host header");
    if (h.content_encoding && strcasecmp(h.ce, "identity") != 0) {
        char msg[160];
        snprintf(msg, sizeof msg, "unsupported Content-Encoding \"%.60s\": send the body uncompressed", h.ce);
        c->in.close_after = 1;
        return srv_send_error(c, 415, msg);
    }
    (void)s;
    *answered = 0;
    return MHD_YES;
}

/* First call for a request: find its route (routes.c); refuse at once what cannot
 * succeed, else read the body first (dropped for routes that take none). */
static enum MHD_Result begin_request(mt_server *s, req_ctx *c, const char *method)
{
    const srv_route *r = c->route;
    if (!r) {
        char msg[512];
        srv_route_not_found(c->path, msg, sizeof msg);
        return defer(c, 404, msg);
    }
    if (strcmp(method, "OPTIONS") == 0) return defer(c, 204, NULL); /* CORS preflight */
    if (!(r->methods & srv_method_bit(method))) {
        char msg[256];
        srv_route_not_allowed(r, msg, sizeof msg);
        return defer(c, 405, msg);
    }
    if (r->body == SRV_BODY_NONE) return defer(c, 0, NULL);
    c->in.limit = r->body == SRV_BODY_FILE ? (size_t)s->cfg->max_file_bytes + 65536 : (size_t)s->cfg->max_body_bytes;
    /* A body to read: refuse early what cannot succeed. */
    if (atomic_load(&s->draining)) return srv_send_error(c, 503, "server is shutting down");
    if (!atomic_load(&s->ready)) return srv_send_error(c, 503, "models are loading; retry shortly");
    char err[256];
    const char *ct = MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    c->in.ctype = mt_request_content_type(ct, c->in.boundary, sizeof c->in.boundary, err, sizeof err);
    if (c->in.ctype == MT_CT_UNSUPPORTED) return srv_send_error(c, 415, err);
    const char *cl = MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl) {
        char *end;
        errno = 0;
        unsigned long long n = strtoull(cl, &end, 10);
        if (!errno && end != cl && n > (unsigned long long)c->in.limit) {
            snprintf(err, sizeof err, "request body too large: %llu bytes (limit %zu)", n,
                     c->in.limit);
            return srv_send_error(c, 413, err);
        }
    }
    c->phase = P_BODY;
    return MHD_YES;
}

enum MHD_Result srv_on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    mt_server *s = cls;
    req_ctx *c = *con_cls;
    int marker = c == (void *)&s->nul_in_path ? 1 : c == (void *)&s->nul_in_query ? 2 : 0;
    if (marker) c = NULL;
    if (!c) {
        if (srv_conn_refused(s, conn)) return MHD_NO; /* answered 503 at accept */
        c = calloc(1, sizeof *c);
        if (!c) return MHD_NO;
        c->srv = s;
        c->conn = conn;
        c->fd = -1;
        c->http11 = strcmp(version, MHD_HTTP_VERSION_1_1) == 0;
        c->t_start = mt_now();
        c->route = srv_route_find(url);
        c->ep = c->route ? c->route->ep : MT_EP_OTHER;
        c->in.limit = (size_t)s->cfg->max_body_bytes;
        snprintf(c->method, sizeof c->method, "%s", method);
        snprintf(c->path, sizeof c->path, "%s", url);
        srv_conn_client(s, conn, c->remote, sizeof c->remote); /* behind a trusted proxy: its client */
        *con_cls = c;
        atomic_fetch_add(&s->in_flight, 1);
        int answered;
        enum MHD_Result r = check_request(s, c, version, marker, &answered);
        return answered ? r : begin_request(s, c, method);
    }
    if (c->phase == P_BODY) {
        if (*upload_data_size) {
            size_t n = *upload_data_size;
            *upload_data_size = 0;
            if (c->in.too_large || c->in.discard) {
                /* Bodies are read (and dropped) so that an answer can be sent; one that
                 * goes on far past the limit gets the connection closed instead. */
                c->in.dropped += n;
                return c->in.dropped > c->in.limit + (1u << 20) ? MHD_NO : MHD_YES;
            }
            if (c->in.len + n > c->in.limit) {
                c->in.too_large = 1;
                c->in.dropped = c->in.len + n;
                return MHD_YES;
            }
            if (c->in.len + n + 1 > c->in.cap) {
                size_t cap = c->in.cap ? c->in.cap : 4096;
                while (cap < c->in.len + n + 1) cap *= 2;
                if (cap > c->in.limit + 1) cap = c->in.limit + 1;
                char *b = realloc(c->in.body, cap);
                if (!b) return MHD_NO;
                c->in.body = b;
                c->in.cap = cap;
            }
            memcpy(c->in.body + c->in.len, upload_data, n);
            c->in.len += n;
            c->in.body[c->in.len] = '\0';
            return MHD_YES;
        }
        /* The body is complete. libmicrohttpd 0.9.75 does not update a connection's
         * event-loop state while it is suspended, and reads from a resumed connection
         * that was last seen waiting for data: the FIN of a client that half-closed
         * after sending (shutdown(SHUT_WR), nc -N) then closes the connection before
         * its answer is queued. Answering on the next call instead (the next round of
         * the event loop, at once) lets it first record that the request is whole. */
        if (!c->settled) {
            c->settled = 1;
            srv_conn_received(c);
            return MHD_YES;
        }
        if (c->in.discard) {
            if (c->in.deferred_status == 204) return srv_send_preflight(c);
            if (c->in.deferred_status) return srv_send_error(c, c->in.deferred_status, c->in.deferred_msg);
        }
        if (c->in.too_large) {
            char msg[128];
            snprintf(msg, sizeof msg, "request body too large (limit %zu bytes)", c->in.limit);
            return srv_send_error(c, 413, msg);
        }
        if (c->route->auth == SRV_AUTH_METRICS && !srv_metrics_allowed(s, c))
            return srv_send_error(c, 403, "GET /metrics needs an API key or the metrics key (server.metrics_key); "
                                          "server.metrics_public opens it");
        return c->route->handler(s, c);
    }
    if (c->phase == P_QUEUED) return srv_finish_translate(s, c);
    *upload_data_size = 0; /* P_DONE: an answer is queued already */
    return MHD_YES;
}

void srv_on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    mt_server *s = cls;
    req_ctx *c = *con_cls;
    *con_cls = NULL;
    srv_conn_answered(s, conn);
    if (!c || c == (void *)&s->nul_in_path || c == (void *)&s->nul_in_query) return; /* markers */
    if (c->out.status == 0) c->out.status = 499; /* the client went away before an answer */
    double secs = mt_now() - c->t_start;
    mt_metrics_request(s->metrics, c->ep, c->out.status, secs);
    if (s->cfg->access_log && mt_log_enabled(s->log, MT_LOG_INFO)) {
        char path[200], err[200], model[80], method[40];
        mt_log_write(s->log, MT_LOG_INFO, "access",
                     "method=%s path=%s status=%d bytes_in=%zu bytes_out=%zu sentences=%d "
                     "latency_ms=%.3f remote=%s model=%s%s%s%s",
                     mt_log_quote(method, sizeof method, c->method), mt_log_quote(path, sizeof path, c->path),
                     c->out.status, c->in.len,
                     c->out.bytes_out, c->out.sentences, secs * 1e3, c->remote,
                     mt_log_quote(model, sizeof model, c->out.model_name ? c->out.model_name : "-"),
                     c->out.error[0] ? " error=" : "",
                     c->out.error[0] ? mt_log_quote(err, sizeof err, c->out.error) : "",
                     toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " aborted=1");
    }
    srv_free_translation(c);
    free(c->in.body);
    free(c);
    atomic_fetch_sub(&s->in_flight, 1);
}

void srv_on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    mt_server *s = cls;
    char msg[512], q[600];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r')) msg[--n] = '\0';
    mt_log_write(s->log, MT_LOG_WARN, "http", "msg=%s", mt_log_quote(q, sizeof q, msg));
}
