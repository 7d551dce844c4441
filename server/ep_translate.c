/* ep_translate.c: POST /translate: decode the body (request.c), check the API key and the
 * rate limit, submit one request to the translation service (which routes, detects,
 * resolves options and translates), wait suspended, and answer in the request's form
 * (render.c) when the task is finished. */
#include "deepl.h"
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "utf8.h"

void srv_free_translation(req_ctx *c)
{
    mt_service_task_free(c->task);
    c->task = NULL;
    mt_request_clear(&c->req);
}

/* The 200 answer once every text is translated. */
static enum MHD_Result respond_translation(mt_server *s, req_ctx *c)
{
    json_t *body = srv_render_translation(s, c);
    if (!body) return srv_send_error(c, 500, "could not decode the translation");
    return srv_send_json(c, 200, body, NULL, NULL);
}

/* The service is stopping: its queue was aborted for shutdown and refuses everything
 * from now on (or cancelled this task). 503 as every answer of a draining server
 * (handler.c), not the overload answer: no "retry after N s" and not counted as
 * rejected for a full queue. Its "Retry-After: 1" and "Connection: close" (respond.c,
 * while draining) do not invite a retry here: the listener is already closed
 * (mt_server_begin_drain), so the retry opens a new connection, which a balancer sends to
 * another instance (or this address refuses until the server is back). */
static enum MHD_Result shutting_down(req_ctx *c) { return srv_send_error(c, 503, "server is shutting down"); }

/* The job finished (resumed connection): 200, or why not. */
enum MHD_Result srv_finish_translate(mt_server *s, req_ctx *c)
{
    if (c->rejected == MT_SERVICE_SHUTDOWN) return shutting_down(c);
    if (c->rejected) {
        mt_metrics_rejected(s->metrics);
        /* Refused by the queue: the work ahead of it would outlast its timeout (the queue
         * only refuses that with work ahead), or the queue is full. Retry-After: when, at
         * the measured pace, the work ahead is down to half the timeout. */
        double backlog = mt_service_backlog_seconds(s->svc), timeout = s->cfg->request_timeout;
        long retry = timeout > 0 && backlog > timeout / 2 ? (long)ceil(backlog - timeout / 2) : 1;
        char msg[240], after[24];
        if (timeout > 0 && backlog > 0)
            snprintf(msg, sizeof msg, "server overloaded: the queue holds about %.0f s of work and this "
                     "request would not finish within the request timeout (%g s); retry after %ld s",
                     backlog, timeout, retry);
        else
            snprintf(msg, sizeof msg, "server overloaded: %d requests queued; retry later",
                     s->cfg->queue_capacity);
        snprintf(after, sizeof after, "%ld", retry);
        srv_copy_text(c->out.error, sizeof c->out.error, msg);
        return srv_send_json(c, 503, json_pack("{s:s}", "error", msg), MHD_HTTP_HEADER_RETRY_AFTER, after);
    }
    const char *why;
    switch (mt_service_task_outcome(c->task, &why)) {
    case MT_SERVICE_OK: return respond_translation(s, c);
    case MT_SERVICE_BUSY: c->rejected = MT_SERVICE_BUSY; return srv_finish_translate(s, c);
    case MT_SERVICE_CLIENT_GONE:
        c->out.status = 499; /* nobody to answer: close */
        snprintf(c->out.error, sizeof c->out.error, "client disconnected");
        c->phase = P_DONE;
        return MHD_NO;
    case MT_SERVICE_DEADLINE: {
        char msg[128];
        snprintf(msg, sizeof msg, "translation did not finish within the request timeout (%g s)",
                 s->cfg->request_timeout);
        return srv_send_error(c, 504, msg);
    }
    case MT_SERVICE_SHUTDOWN: return shutting_down(c);
    default: break;
    }
    char msg[300];
    snprintf(msg, sizeof msg, "translation failed: %s", why);
    return srv_send_error(c, 500, msg);
}

/* Decodes and checks the body into c->req; 0 or an HTTP status with a message. */
static int read_request(mt_server *s, req_ctx *c, char *key, size_t keylen, char *err,
                        size_t errlen)
{
    json_t *obj = NULL;
    int from_form = 0;
    int st = srv_read_body(s, c, &obj, &from_form, err, errlen);
    if (st) {
        json_decref(obj);
        return st;
    }
    const char *k = mt_request_api_key(obj); /* the rate limit's client */
    snprintf(key, keylen, "%s", k ? k : "");
    mt_request_limits lim = {s->cfg->max_texts, s->cfg->max_text_chars, s->cfg->max_beam_size};
    st = mt_request_parse(obj, from_form, &lim, &c->req, err, errlen);
    /* a DeepL glossary of the presented key (ep_deepl_glossary.c), as with /v2/translate */
    const char *gid = st ? NULL : json_string_value(json_object_get(obj, "glossary_id"));
    if (gid && *gid) {
        const char *owner = srv_presented_key(c, obj);
        if (!c->req.source || !strcasecmp(c->req.source, "auto") || !c->req.target)
            st = 400, snprintf(err, errlen, "glossary_id needs the source and target languages (not auto)");
        else
            st = srv_deepl_glossary_load(s, owner ? owner : "", gid, c->req.source, c->req.target, &c->req.glossary,
                                         err, errlen);
    }
    json_decref(obj);
    return st;
}

enum MHD_Result srv_queue_task(mt_server *s, req_ctx *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    c->fd = ci ? ci->connect_fd : -1;
    c->phase = P_QUEUED;
    MHD_suspend_connection(c->conn);
    srv_watch_add(s, c);
    int rc = mt_service_task_start(c->task, srv_job_done, c);
    if (rc != MT_SERVICE_OK) {
        c->rejected = rc; /* MT_SERVICE_BUSY or MT_SERVICE_SHUTDOWN: srv_finish_translate */
        pthread_mutex_lock(&s->watch_mu);
        srv_watch_remove_locked(s, c);
        pthread_mutex_unlock(&s->watch_mu);
        MHD_resume_connection(c->conn);
    }
    return MHD_YES;
}

static enum MHD_Result submit(mt_server *s, req_ctx *c, const char *key, srv_rate_fn rate, srv_fail_fn fail)
{
    char err[512];
    long chars = 0;
    for (int i = 0; i < c->req.n_texts; i++) chars += (long)mt_utf8_chars(c->req.texts[i], c->req.lens[i]);
    enum MHD_Result limited;
    if (rate(s, c, key, chars, &limited)) return limited;
    mt_service_request rq;
    mt_service_request_init(&rq);
    rq.source = c->req.source;
    rq.target = c->req.target;
    rq.n = c->req.n_texts;
    rq.texts = (const char *const *)c->req.texts;
    rq.lens = c->req.lens;
    rq.decoding = c->req.decoding;
    rq.input = c->req.html ? MT_FORMAT_HTML : MT_FORMAT_TEXT;
    rq.target_prefix = (const char *const *)c->req.target_prefix;
    rq.prefix_ids = c->req.prefix_ids;
    rq.glossary = c->req.glossary;
    rq.one_sentence = c->req.one_sentence;
    rq.deadline = s->cfg->request_timeout > 0 ? c->t_start + s->cfg->request_timeout : 0;
    int st = mt_service_submit(s->svc, &rq, &c->task, err, sizeof err);
    if (st) return fail(c, st == MT_SERVICE_INVALID ? 400 : 500, err);
    mt_service_stats stats;
    mt_service_task_stats(c->task, &stats);
    c->out.sentences += stats.sentences;
    c->out.model_name = mt_service_model_info(s->svc, mt_service_task_route(c->task, 0)->model)->name;
    return srv_queue_task(s, c);
}

enum MHD_Result srv_submit_translation(mt_server *s, req_ctx *c, const char *key, srv_rate_fn rate,
                                       srv_fail_fn fail)
{
    enum MHD_Result r = submit(s, c, key, rate, fail);
    srv_deepl_glossary_release(s, c->req.glossary); /* submitted: the service holds what it needs */
    c->req.glossary = NULL;
    return r;
}

enum MHD_Result srv_while_arriving(mt_server *s, req_ctx *c, enum MHD_Result (*start)(mt_server *, req_ctx *))
{
    mt_service_arriving(s->svc, 1); /* batches being formed wait for it */
    enum MHD_Result r = start(s, c);
    mt_service_arriving(s->svc, -1);
    return r;
}

/* The body is whole: decode, then rate-limit and submit; the connection waits suspended
 * for the task, or is answered now (an error, a limit). */
static enum MHD_Result start_translate(mt_server *s, req_ctx *c)
{
    char err[512], key[128];
    int st = read_request(s, c, key, sizeof key, err, sizeof err);
    if (st) return srv_send_error(c, st, err);
    return srv_submit_translation(s, c, key, srv_rate_check, srv_send_error);
}

enum MHD_Result srv_ep_translate(mt_server *s, req_ctx *c) { return srv_while_arriving(s, c, start_translate); }
