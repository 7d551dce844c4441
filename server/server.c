/* server.c: libmicrohttpd glue: routing, body reading, /translate's pipeline around the
 * batcher, responses, the disconnect/deadline watcher, access log and metrics. */
#include "server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <microhttpd.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "langs.h"
#include "request.h"
#include "service.h"

#define WATCH_INTERVAL_MS 50

typedef struct req_ctx req_ctx;

struct mt_server {
    const mt_config *cfg;
    mt_log *log;
    mt_metrics *metrics;
    struct MHD_Daemon *daemon;
    int port;
    char host[256];
    /* models (set by mt_server_load before `ready`) */
    mt_translator **trs;
    char **names;
    int n_models;
    mt_langs *langs;
    char *languages_json;     /* GET /languages body, built once */
    mt_service *svc;
    int workers;
    atomic_int ready, draining, in_flight;
    /* suspended /translate connections, watched for disconnects and deadlines */
    pthread_mutex_t watch_mu;
    pthread_cond_t watch_cond;
    req_ctx *watched;
    int n_watched, watch_stop, watch_started;
    pthread_t watcher;
};

enum { P_NEW = 0, P_BODY, P_QUEUED, P_DONE };

struct req_ctx {
    mt_server *srv;
    struct MHD_Connection *conn;
    mt_endpoint ep;
    char method[16];
    char path[160];
    char remote[64];
    double t_start;
    int phase;
    /* body */
    char *body;
    size_t len, cap;
    int too_large, discard, deferred_status;
    size_t dropped;
    char deferred_msg[300];
    mt_content_type ctype;
    char boundary[80];
    /* outcome, for the access log */
    int status;
    size_t bytes_out;
    int sentences;
    const char *model_name;
    char error[160];
    /* /translate */
    mt_request req;
    int route, detected, rejected;
    mt_service_job *job;
    int stopped;              /* the watcher cancelled the job */
    int fd;
    req_ctx *wnext, *wprev;
    int watched;
};

/* ------------------------------------------------------------------ responses */

/* Copies s into d[cap], cut if needed (log fields). */
static void copy_text(char *d, size_t cap, const char *s)
{
    size_t n = strlen(s);
    if (n >= cap) n = cap - 1;
    memcpy(d, s, n);
    d[n] = '\0';
}

static void add_common_headers(req_ctx *c, struct MHD_Response *r)
{
    MHD_add_response_header(r, "Access-Control-Allow-Origin", "*");
    if (atomic_load(&c->srv->draining)) MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
}

static enum MHD_Result send_buffer(req_ctx *c, int status, char *buf, size_t len,
                                   const char *content_type, const char *h1, const char *v1)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, buf, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(buf);
        return MHD_NO;
    }
    if (content_type) MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    if (h1) MHD_add_response_header(r, h1, v1);
    add_common_headers(c, r);
    enum MHD_Result ret = MHD_queue_response(c->conn, (unsigned)status, r);
    MHD_destroy_response(r);
    c->status = status;
    c->bytes_out = len;
    c->phase = P_DONE;
    return ret;
}

static enum MHD_Result send_json(req_ctx *c, int status, json_t *body, const char *h1,
                                 const char *v1)
{
    char *text = body ? json_dumps(body, JSON_COMPACT | JSON_REAL_PRECISION(9)) : NULL;
    json_decref(body);
    if (!text) return MHD_NO;
    return send_buffer(c, status, text, strlen(text), "application/json", h1, v1);
}

/* {"error": "..."}: LibreTranslate's error shape, used by both request forms. */
static enum MHD_Result send_error(req_ctx *c, int status, const char *msg)
{
    copy_text(c->error, sizeof c->error, msg);
    const char *h = NULL, *v = NULL;
    char allow[64];
    if (status == 503) {
        h = MHD_HTTP_HEADER_RETRY_AFTER;
        v = "1";
    } else if (status == 405) {
        snprintf(allow, sizeof allow, "%s",
                 c->ep == MT_EP_TRANSLATE ? "POST, OPTIONS"
                 : c->ep == MT_EP_LANGUAGES ? "GET, HEAD, POST, OPTIONS"
                                            : "GET, HEAD");
        h = MHD_HTTP_HEADER_ALLOW;
        v = allow;
    }
    return send_json(c, status, json_pack("{s:s}", "error", msg), h, v);
}

/* ------------------------------------------------------------------ watcher */

static void watch_add(mt_server *s, req_ctx *c)
{
    pthread_mutex_lock(&s->watch_mu);
    c->wprev = NULL;
    c->wnext = s->watched;
    if (s->watched) s->watched->wprev = c;
    s->watched = c;
    s->n_watched++;
    c->watched = 1;
    pthread_mutex_unlock(&s->watch_mu);
}

static void watch_remove_locked(mt_server *s, req_ctx *c)
{
    if (!c->watched) return;
    if (c->wprev) c->wprev->wnext = c->wnext;
    else s->watched = c->wnext;
    if (c->wnext) c->wnext->wprev = c->wprev;
    c->wnext = c->wprev = NULL;
    c->watched = 0;
    s->n_watched--;
    if (s->n_watched == 0) pthread_cond_broadcast(&s->watch_cond);
}

/* Every WATCH_INTERVAL_MS: cancels jobs whose client hung up or whose deadline passed,
 * then has the batcher drop their queued sentences. */
static void *watcher_main(void *arg)
{
    mt_server *s = arg;
    struct pollfd *fds = NULL;
    req_ctx **who = NULL;
    int cap = 0;
    pthread_mutex_lock(&s->watch_mu);
    while (!s->watch_stop) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += WATCH_INTERVAL_MS * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&s->watch_cond, &s->watch_mu, &ts);
        if (s->watch_stop) break;
        if (s->n_watched > cap) {
            int ncap = s->n_watched * 2;
            struct pollfd *nf = realloc(fds, sizeof *nf * (size_t)ncap);
            if (nf) fds = nf;
            req_ctx **nw = realloc(who, sizeof *nw * (size_t)ncap);
            if (nw) who = nw;
            if (!nf || !nw) continue;
            cap = ncap;
        }
        int n = 0, cancelled = 0;
        double now = mt_now();
        for (req_ctx *c = s->watched; c; c = c->wnext) {
            if (!c->stopped && mt_service_job_expire(c->job, now)) {
                c->stopped = 1;
                cancelled++;
            }
            if (c->fd >= 0 && !c->stopped) {
                fds[n].fd = c->fd;
                fds[n].events = POLLRDHUP;
                fds[n].revents = 0;
                who[n++] = c;
            }
        }
        if (n > 0 && poll(fds, (nfds_t)n, 0) > 0) {
            for (int i = 0; i < n; i++)
                if (fds[i].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) {
                    who[i]->stopped = 1;
                    if (mt_service_job_cancel(who[i]->job, MT_SERVICE_CLIENT_GONE))
                        cancelled++;
                }
        }
        if (cancelled && s->svc) {
            /* The purge may finish jobs, whose callbacks take watch_mu. */
            pthread_mutex_unlock(&s->watch_mu);
            mt_service_purge(s->svc);
            pthread_mutex_lock(&s->watch_mu);
        }
    }
    pthread_mutex_unlock(&s->watch_mu);
    free(fds);
    free(who);
    return NULL;
}

/* Service callback: the job is finished (worker or watcher thread). */
static void job_done(mt_service_job *job, void *user)
{
    (void)job;
    req_ctx *c = user;
    mt_server *s = c->srv;
    pthread_mutex_lock(&s->watch_mu);
    watch_remove_locked(s, c);
    pthread_mutex_unlock(&s->watch_mu);
    MHD_resume_connection(c->conn);
}

/* ------------------------------------------------------------------ /translate */

static int ct_equal(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned char d = (unsigned char)(la != lb);
    for (size_t i = 0; i < la; i++) d |= (unsigned char)(a[i] ^ b[i % (lb ? lb : 1)]);
    return d == 0;
}

/* 0 when no keys are configured or a configured key is presented; else 403 + message. */
static int check_api_key(mt_server *s, req_ctx *c, const json_t *obj, char *err, size_t errlen)
{
    const mt_config *cfg = s->cfg;
    if (cfg->n_api_keys == 0) return 0;
    const char *key = mt_request_api_key(obj);
    const char *auth = MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!key && auth && strncasecmp(auth, "Bearer ", 7) == 0) {
        key = auth + 7;
        while (*key == ' ') key++;
    }
    if (!key) key = MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND, "X-API-Key");
    if (!key || !*key) {
        snprintf(err, errlen, "missing API key: send \"api_key\" in the body, an "
                 "\"Authorization: Bearer KEY\" or an \"X-API-Key\" header");
        return 403;
    }
    int ok = 0;
    for (int i = 0; i < cfg->n_api_keys; i++) ok |= ct_equal(key, cfg->api_keys[i]);
    if (!ok) {
        snprintf(err, errlen, "invalid API key");
        return 403;
    }
    return 0;
}

/* Service options: the model's defaults, the server's defaults, then the request's. */
static int build_options(mt_server *s, const mt_route *route, const mt_request *rq,
                         mt_service_options *so, char *err, size_t errlen)
{
    const mt_config *cfg = s->cfg;
    mt_search_options *o = &so->search;
    mt_service_options_default(s->svc, route->model, so);
    so->input = rq->html ? MT_FORMAT_HTML : MT_FORMAT_TEXT;
    so->target_lang = route->by_token ? route->target : NULL;
    if (cfg->beam_size > 0) o->beam_size = cfg->beam_size;
    if (cfg->length_penalty >= 0) o->length_penalty = (float)cfg->length_penalty;
    if (cfg->max_length > 0) o->max_length = cfg->max_length;
    o->n_best = 1;
    if (rq->beam_size > 0) o->beam_size = rq->beam_size;
    if (rq->length_penalty >= 0) o->length_penalty = (float)rq->length_penalty;
    if (rq->max_length > 0) o->max_length = rq->max_length; /* checked by the service */
    if (rq->n_best > 0) {
        o->n_best = rq->n_best;
        if (rq->beam_size == 0 && o->beam_size < o->n_best) o->beam_size = o->n_best;
    }
    if (o->n_best > o->beam_size) {
        snprintf(err, errlen, "n_best (%d) must not exceed beam_size (%d)", o->n_best, o->beam_size);
        return 400;
    }
    return 0;
}

static void free_translation(req_ctx *c)
{
    mt_service_job_free(c->job);
    c->job = NULL;
    mt_request_clear(&c->req);
}

static double round3(double x) { return floor(x * 1000.0 + 0.5) / 1000.0; }

static json_t *detected_json(const char *lang)
{
    return json_pack("{s:f, s:s}", "confidence", 100.0, "language", lang);
}

/* The translations as the response's arrays: texts and scores (best), n-best lists
 * (native) and alternatives (LibreTranslate), one detectedLanguage entry per text. */
typedef struct {
    json_t *texts, *scores, *nbest, *alts, *detected;
} answer_parts;

static void parts_free(answer_parts *p)
{
    json_decref(p->texts), json_decref(p->scores), json_decref(p->nbest);
    json_decref(p->alts), json_decref(p->detected);
}

static int build_parts(const mt_translation *res, int n_texts, const char *source, answer_parts *p)
{
    *p = (answer_parts){json_array(), json_array(), json_array(), json_array(), json_array()};
    if (!p->texts || !p->scores || !p->nbest || !p->alts || !p->detected) return -1;
    for (int t = 0; t < n_texts; t++) {
        json_t *list = json_array(), *alt = json_array();
        for (int k = 0; list && alt && k < res[t].n_best; k++) {
            const char *str = res[t].texts[k];
            float score = res[t].scores[k];
            if (k == 0) {
                json_array_append_new(p->texts, json_string(str));
                json_array_append_new(p->scores, json_real(score));
            } else {
                json_array_append_new(alt, json_string(str));
            }
            json_array_append_new(list, json_pack("{s:s, s:f}", "text", str, "score", (double)score));
        }
        json_array_append_new(p->nbest, list);
        json_array_append_new(p->alts, alt);
        json_array_append_new(p->detected, detected_json(source));
    }
    return 0;
}

/* LibreTranslate's answer: translatedText (and alternatives, detectedLanguage), a string
 * or an array as the request's q was. Takes the parts. */
static json_t *libre_body(req_ctx *c, const mt_route *route, int n_best, answer_parts *p)
{
    json_t *body;
    if (c->req.text_is_array) {
        body = json_pack("{s:o}", "translatedText", p->texts);
        if (n_best > 1) json_object_set_new(body, "alternatives", p->alts);
        else json_decref(p->alts);
        if (c->detected) json_object_set_new(body, "detectedLanguage", p->detected);
        else json_decref(p->detected);
    } else {
        body = json_pack("{s:O}", "translatedText", json_array_get(p->texts, 0));
        if (n_best > 1) json_object_set(body, "alternatives", json_array_get(p->alts, 0));
        if (c->detected) json_object_set_new(body, "detectedLanguage", detected_json(route->source));
        json_decref(p->texts), json_decref(p->alts), json_decref(p->detected);
    }
    json_decref(p->scores);
    json_decref(p->nbest);
    return body;
}

/* The native answer: translations, scores, model, languages, timings, n_best. Takes the parts. */
static json_t *native_body(mt_server *s, req_ctx *c, const mt_route *route, int n_best,
                           answer_parts *p)
{
    mt_service_stats st;
    mt_service_job_stats(c->job, &st);
    double now = mt_now();
    double queue_ms = st.t_started > 0 ? (st.t_started - st.t_submitted) * 1e3 : 0;
    double translate_ms = st.t_started > 0 && st.t_done > 0 ? (st.t_done - st.t_started) * 1e3 : 0;
    json_t *body = json_pack("{s:o, s:o, s:s, s:s, s:s, s:{s:f, s:f, s:f}}", "translations", p->texts,
                             "scores", p->scores, "model", s->names[route->model], "source",
                             route->source, "target", route->target, "timing_ms", "queue",
                             round3(queue_ms), "translate", round3(translate_ms), "total",
                             round3((now - c->t_start) * 1e3));
    if (body && n_best > 1) json_object_set_new(body, "n_best", p->nbest);
    else json_decref(p->nbest);
    if (body && c->detected) json_object_set_new(body, "detectedLanguage", detected_json(route->source));
    json_decref(p->alts);
    json_decref(p->detected);
    return body;
}

/* Builds the 200 answer once every text is translated. */
static enum MHD_Result respond_translation(mt_server *s, req_ctx *c)
{
    const mt_route *route = mt_langs_get(s->langs, c->route);
    const mt_translation *res = mt_service_job_results(c->job);
    int n_best = c->req.n_texts > 0 ? res[0].n_best : 1;
    answer_parts p;
    if (build_parts(res, c->req.n_texts, route->source, &p)) {
        parts_free(&p);
        return send_error(c, 500, "could not decode the translation");
    }
    mt_service_stats st;
    mt_service_job_stats(c->job, &st);
    mt_metrics_translated(s->metrics, route->model, st.sentences, st.source_tokens, st.target_tokens);
    json_t *body = c->req.form == MT_FORM_LIBRE ? libre_body(c, route, n_best, &p)
                                                : native_body(s, c, route, n_best, &p);
    return send_json(c, 200, body, NULL, NULL);
}

/* The job finished (resumed connection): 200, or why not. */
static enum MHD_Result finish_translate(mt_server *s, req_ctx *c)
{
    if (c->rejected) {
        mt_metrics_rejected(s->metrics);
        char msg[128];
        snprintf(msg, sizeof msg, "server overloaded: %d requests queued; retry later",
                 s->cfg->queue_capacity);
        return send_error(c, 503, msg);
    }
    const char *why;
    switch (mt_service_job_outcome(c->job, &why)) {
    case MT_SERVICE_OK: return respond_translation(s, c);
    case MT_SERVICE_CLIENT_GONE:
        c->status = 499; /* nobody to answer: close */
        snprintf(c->error, sizeof c->error, "client disconnected");
        c->phase = P_DONE;
        return MHD_NO;
    case MT_SERVICE_DEADLINE: {
        char msg[128];
        snprintf(msg, sizeof msg, "translation did not finish within the request timeout (%g s)",
                 s->cfg->request_timeout);
        return send_error(c, 504, msg);
    }
    case MT_SERVICE_SHUTDOWN: return send_error(c, 503, "server is shutting down");
    default: break;
    }
    char msg[300];
    snprintf(msg, sizeof msg, "translation failed: %s", why);
    return send_error(c, 500, msg);
}

/* Decodes and checks the body into c->req; 0 or an HTTP status with a message. */
static int read_request(mt_server *s, req_ctx *c, char *err, size_t errlen)
{
    json_t *obj = NULL;
    int from_form = 0;
    int st = mt_request_decode(c->ctype, c->boundary, c->body ? c->body : "", c->len, &obj,
                               &from_form, err, errlen);
    if (st) return st;
    if ((st = check_api_key(s, c, obj, err, errlen))) {
        json_decref(obj);
        return st;
    }
    mt_request_limits lim = {s->cfg->max_texts, s->cfg->max_text_chars, s->cfg->max_beam_size};
    st = mt_request_parse(obj, from_form, &lim, &c->req, err, errlen);
    json_decref(obj);
    return st;
}

/* Queues the prepared job with the connection suspended (it may finish, and resume the
 * connection, at once); a full queue resumes it to answer 503. */
static enum MHD_Result queue_job(mt_server *s, req_ctx *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    c->fd = ci ? ci->connect_fd : -1;
    c->phase = P_QUEUED;
    MHD_suspend_connection(c->conn);
    watch_add(s, c);
    if (mt_service_run(s->svc, c->job, job_done, c) != MT_SERVICE_OK) {
        c->rejected = 1;
        pthread_mutex_lock(&s->watch_mu);
        watch_remove_locked(s, c);
        pthread_mutex_unlock(&s->watch_mu);
        MHD_resume_connection(c->conn);
    }
    return MHD_YES;
}

/* The whole body is here: parse, route, hand the texts to the service (or answer now). */
static enum MHD_Result start_translate(mt_server *s, req_ctx *c)
{
    char err[512];
    int st = read_request(s, c, err, sizeof err);
    if (st) return send_error(c, st, err);
    c->route = mt_langs_resolve(s->langs, c->req.source, c->req.target, &c->detected, err, sizeof err);
    if (c->route < 0) return send_error(c, 400, err);
    const mt_route *route = mt_langs_get(s->langs, c->route);
    c->model_name = s->names[route->model];
    mt_service_options so;
    if ((st = build_options(s, route, &c->req, &so, err, sizeof err))) return send_error(c, st, err);
    so.deadline = s->cfg->request_timeout > 0 ? c->t_start + s->cfg->request_timeout : 0;
    st = mt_service_prepare(s->svc, route->model, &so, c->req.n_texts,
                            (const char *const *)c->req.texts, c->req.lens, &c->job, err, sizeof err);
    if (st) return send_error(c, st == MT_SERVICE_INVALID ? 400 : 500, err);
    mt_service_stats stats;
    mt_service_job_stats(c->job, &stats);
    c->sentences = stats.sentences;
    return queue_job(s, c);
}

/* ------------------------------------------------------------------ GET endpoints */

static enum MHD_Result respond_health(mt_server *s, req_ctx *c)
{
    if (atomic_load(&s->draining))
        return send_json(c, 503, json_pack("{s:s}", "status", "draining"), NULL, NULL);
    if (!atomic_load(&s->ready))
        return send_json(c, 503, json_pack("{s:s}", "status", "loading"),
                         MHD_HTTP_HEADER_RETRY_AFTER, "1");
    json_t *models = json_array();
    for (int i = 0; i < mt_langs_count(s->langs); i++) {
        const mt_route *r = mt_langs_get(s->langs, i);
        json_array_append_new(models, json_pack("{s:s, s:s, s:s}", "name", s->names[r->model],
                                                "source", r->source, "target", r->target));
    }
    return send_json(c, 200, json_pack("{s:s, s:o, s:i}", "status", "ok", "models", models,
                                       "workers", s->workers),
                     NULL, NULL);
}

static enum MHD_Result respond_metrics(mt_server *s, req_ctx *c)
{
    mt_metrics_gauges g = {0};
    g.ready = atomic_load(&s->ready);
    g.draining = atomic_load(&s->draining);
    g.in_flight = atomic_load(&s->in_flight);
    if (g.ready)
        mt_service_gauges(s->svc, &g.queued_sentences, &g.queued_requests, &g.busy_workers,
                          &g.workers);
    char *text = mt_metrics_render(s->metrics, &g);
    if (!text) return send_error(c, 500, "out of memory");
    return send_buffer(c, 200, text, strlen(text), "text/plain; version=0.0.4; charset=utf-8",
                       NULL, NULL);
}

static enum MHD_Result respond_languages(mt_server *s, req_ctx *c)
{
    if (!atomic_load(&s->ready)) return send_error(c, 503, "models are loading; retry shortly");
    char *text = strdup(s->languages_json);
    if (!text) return send_error(c, 500, "out of memory");
    return send_buffer(c, 200, text, strlen(text), "application/json", NULL, NULL);
}

static enum MHD_Result send_preflight(req_ctx *c)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "Access-Control-Allow-Methods",
                            c->ep == MT_EP_TRANSLATE ? "POST, OPTIONS" : "GET, HEAD, OPTIONS");
    MHD_add_response_header(r, "Access-Control-Allow-Headers",
                            "Content-Type, Authorization, X-API-Key");
    MHD_add_response_header(r, "Access-Control-Max-Age", "86400");
    add_common_headers(c, r);
    enum MHD_Result ret = MHD_queue_response(c->conn, 204, r);
    MHD_destroy_response(r);
    c->status = 204;
    c->phase = P_DONE;
    return ret;
}

static enum MHD_Result respond_get(mt_server *s, req_ctx *c)
{
    switch (c->ep) {
    case MT_EP_HEALTH: return respond_health(s, c);
    case MT_EP_METRICS: return respond_metrics(s, c);
    case MT_EP_LANGUAGES: return respond_languages(s, c);
    default: return send_error(c, 404, "not found");
    }
}

/* ------------------------------------------------------------------ request handler */

static mt_endpoint endpoint_of(const char *url)
{
    if (strcmp(url, "/translate") == 0) return MT_EP_TRANSLATE;
    if (strcmp(url, "/languages") == 0) return MT_EP_LANGUAGES;
    if (strcmp(url, "/health") == 0) return MT_EP_HEALTH;
    if (strcmp(url, "/metrics") == 0) return MT_EP_METRICS;
    return MT_EP_OTHER;
}

static void note_remote(req_ctx *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    snprintf(c->remote, sizeof c->remote, "-");
    if (!ci || !ci->client_addr) return;
    const struct sockaddr *sa = ci->client_addr;
    socklen_t len = sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    if (getnameinfo(sa, len, c->remote, sizeof c->remote, NULL, 0, NI_NUMERICHOST) != 0)
        snprintf(c->remote, sizeof c->remote, "-");
}

/* First call for a request: route it; answer at once or start reading the body. */
/* Answers after the (empty or ignored) body has been read: MHD keeps the connection
 * alive only for answers queued once the request is complete. */
static enum MHD_Result defer(req_ctx *c, int status, const char *msg)
{
    c->discard = 1;
    c->phase = P_BODY;
    c->deferred_status = status;
    if (msg) copy_text(c->deferred_msg, sizeof c->deferred_msg, msg);
    return MHD_YES;
}

/* First call for a request: route it; refuse at once what cannot succeed, else read
 * the body first. */
static enum MHD_Result begin_request(mt_server *s, req_ctx *c, const char *method)
{
    int is_get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    int is_post = strcmp(method, "POST") == 0;
    if (c->ep == MT_EP_OTHER) {
        char msg[300];
        snprintf(msg, sizeof msg, "not found: %s (endpoints: POST /translate, GET /languages, "
                 "GET /health, GET /metrics)", c->path);
        return defer(c, 404, msg);
    }
    if (strcmp(method, "OPTIONS") == 0) return defer(c, 204, NULL); /* CORS preflight */
    if (c->ep == MT_EP_TRANSLATE) {
        if (!is_post) return defer(c, 405, "method not allowed: use POST /translate");
    } else if (c->ep == MT_EP_LANGUAGES && is_post) {
        return defer(c, 0, NULL); /* LibreTranslate accepts POST /languages; body ignored */
    } else if (!is_get) {
        char msg[256];
        snprintf(msg, sizeof msg, "method not allowed: use GET %s", c->path);
        return defer(c, 405, msg);
    } else {
        return defer(c, 0, NULL);
    }
    /* POST /translate: refuse early what cannot succeed. */
    if (atomic_load(&s->draining)) return send_error(c, 503, "server is shutting down");
    if (!atomic_load(&s->ready)) return send_error(c, 503, "models are loading; retry shortly");
    char err[256];
    const char *ct = MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    c->ctype = mt_request_content_type(ct, c->boundary, sizeof c->boundary, err, sizeof err);
    if (c->ctype == MT_CT_UNSUPPORTED) return send_error(c, 415, err);
    const char *cl = MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl) {
        char *end;
        errno = 0;
        unsigned long long n = strtoull(cl, &end, 10);
        if (!errno && end != cl && n > (unsigned long long)s->cfg->max_body_bytes) {
            snprintf(err, sizeof err, "request body too large: %llu bytes (limit %ld)", n,
                     s->cfg->max_body_bytes);
            return send_error(c, 413, err);
        }
    }
    c->phase = P_BODY;
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    (void)version;
    mt_server *s = cls;
    req_ctx *c = *con_cls;
    if (!c) {
        c = calloc(1, sizeof *c);
        if (!c) return MHD_NO;
        c->srv = s;
        c->conn = conn;
        c->fd = -1;
        c->t_start = mt_now();
        c->ep = endpoint_of(url);
        snprintf(c->method, sizeof c->method, "%s", method);
        snprintf(c->path, sizeof c->path, "%s", url);
        note_remote(c);
        *con_cls = c;
        atomic_fetch_add(&s->in_flight, 1);
        return begin_request(s, c, method);
    }
    if (c->phase == P_BODY) {
        if (*upload_data_size) {
            size_t n = *upload_data_size;
            *upload_data_size = 0;
            if (c->too_large || c->discard) {
                /* Bodies are read (and dropped) so that an answer can be sent; one that
                 * goes on far past the limit gets the connection closed instead. */
                c->dropped += n;
                return c->dropped > (size_t)s->cfg->max_body_bytes + (1u << 20) ? MHD_NO : MHD_YES;
            }
            if (c->len + n > (size_t)s->cfg->max_body_bytes) {
                c->too_large = 1;
                c->dropped = c->len + n;
                return MHD_YES;
            }
            if (c->len + n + 1 > c->cap) {
                size_t cap = c->cap ? c->cap : 4096;
                while (cap < c->len + n + 1) cap *= 2;
                if (cap > (size_t)s->cfg->max_body_bytes + 1) cap = (size_t)s->cfg->max_body_bytes + 1;
                char *b = realloc(c->body, cap);
                if (!b) return MHD_NO;
                c->body = b;
                c->cap = cap;
            }
            memcpy(c->body + c->len, upload_data, n);
            c->len += n;
            c->body[c->len] = '\0';
            return MHD_YES;
        }
        /* The body is complete. */
        if (c->discard) {
            if (c->deferred_status == 204) return send_preflight(c);
            if (c->deferred_status) return send_error(c, c->deferred_status, c->deferred_msg);
            return respond_get(s, c);
        }
        if (c->too_large) {
            char msg[128];
            snprintf(msg, sizeof msg, "request body too large (limit %ld bytes)", s->cfg->max_body_bytes);
            return send_error(c, 413, msg);
        }
        mt_service_arriving(s->svc, 1);
        enum MHD_Result r = start_translate(s, c);
        mt_service_arriving(s->svc, -1);
        return r;
    }
    if (c->phase == P_QUEUED) return finish_translate(s, c);
    *upload_data_size = 0; /* P_DONE: an answer is queued already */
    return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)conn;
    mt_server *s = cls;
    req_ctx *c = *con_cls;
    if (!c) return;
    *con_cls = NULL;
    if (c->status == 0) c->status = 499; /* the client went away before an answer */
    double secs = mt_now() - c->t_start;
    mt_metrics_request(s->metrics, c->ep, c->status, secs);
    if (s->cfg->access_log && mt_log_enabled(s->log, MT_LOG_INFO)) {
        char path[200], err[200], model[80];
        mt_log_write(s->log, MT_LOG_INFO, "access",
                     "method=%s path=%s status=%d bytes_in=%zu bytes_out=%zu sentences=%d "
                     "latency_ms=%.3f remote=%s model=%s%s%s%s",
                     c->method, mt_log_quote(path, sizeof path, c->path), c->status, c->len,
                     c->bytes_out, c->sentences, secs * 1e3, c->remote,
                     mt_log_quote(model, sizeof model, c->model_name ? c->model_name : "-"),
                     c->error[0] ? " error=" : "",
                     c->error[0] ? mt_log_quote(err, sizeof err, c->error) : "",
                     toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " aborted=1");
    }
    free_translation(c);
    free(c->body);
    free(c);
    atomic_fetch_sub(&s->in_flight, 1);
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    mt_server *s = cls;
    char msg[512], q[600];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r')) msg[--n] = '\0';
    mt_log_write(s->log, MT_LOG_WARN, "http", "msg=%s", mt_log_quote(q, sizeof q, msg));
}

/* ------------------------------------------------------------------ life cycle */

mt_server *mt_server_create(const mt_config *cfg, mt_log *log, mt_metrics *metrics, char *err,
                            size_t errlen)
{
    mt_server *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->cfg = cfg;
    s->log = log;
    s->metrics = metrics;
    snprintf(s->host, sizeof s->host, "%s", cfg->host);
    pthread_mutex_init(&s->watch_mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->watch_cond, &ca);
    pthread_condattr_destroy(&ca);

    struct addrinfo hints, *ai = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    char port[16];
    snprintf(port, sizeof port, "%d", cfg->port);
    int gai = getaddrinfo(cfg->host, port, &hints, &ai);
    if (gai != 0 || !ai) {
        snprintf(err, errlen, "cannot resolve listen address '%s': %s", cfg->host, gai_strerror(gai));
        mt_server_free(s);
        return NULL;
    }
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_ITC | MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
    struct sockaddr_storage addr;
    memcpy(&addr, ai->ai_addr, ai->ai_addrlen);
    freeaddrinfo(ai);
    struct MHD_OptionItem opts[] = {
        {MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)on_mhd_log, s},
        {MHD_OPTION_SOCK_ADDR, 0, &addr},
        {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, s},
        {MHD_OPTION_CONNECTION_LIMIT, cfg->max_connections, NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)(unsigned)cfg->idle_timeout, NULL},
        {cfg->http_threads > 1 ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END,
         cfg->http_threads, NULL},
        {MHD_OPTION_END, 0, NULL},
    };
    s->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_ARRAY, opts,
                                 MHD_OPTION_END);
    if (!s->daemon) {
        snprintf(err, errlen, "cannot listen on %s port %d (address in use, or not allowed?)",
                 cfg->host, cfg->port);
        mt_server_free(s);
        return NULL;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = di ? di->port : cfg->port;
    if (pthread_create(&s->watcher, NULL, watcher_main, s) != 0) {
        snprintf(err, errlen, "cannot start the watcher thread");
        mt_server_free(s);
        return NULL;
    }
    s->watch_started = 1;
    return s;
}

int mt_server_port(const mt_server *s) { return s->port; }

int mt_server_in_flight(const mt_server *s) { return atomic_load(&((mt_server *)s)->in_flight); }

/* Routes of translator i: its own pair, and for a multilingual model one per target
 * language token. 0 or -1 with a message. */
static int add_routes(mt_server *s, int i, const char *path, char *err, size_t errlen)
{
    const mt_translator *tr = s->trs[i];
    const char *src = mt_translator_source_lang(tr), *tgt = mt_translator_target_lang(tr);
    if (mt_langs_add(s->langs, src, tgt, i, 0)) {
        snprintf(err, errlen, "model %s: invalid language pair %s-%s", path, src, tgt);
        return -1;
    }
    for (int k = 0; k < mt_translator_target_count(tr); k++) {
        char code[33];
        if (mt_translator_target_code(tr, k, code, sizeof code)) continue;
        if (mt_langs_add(s->langs, src, code, i, 1)) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    return 0;
}

/* Loads configured model i and adds its routes; 0 or -1 with a message. */
static int load_model(mt_server *s, int i, char *err, size_t errlen)
{
    const mt_config_model *m = &s->cfg->models[i];
    double t0 = mt_now();
    char e[512];
    mt_translator *tr = mt_translator_load(m->path, m->source, m->target, e, sizeof e);
    if (!tr) {
        snprintf(err, errlen, "cannot load model %s: %s", m->path, e);
        return -1;
    }
    s->trs[i] = tr;
    s->n_models = i + 1;
    s->names[i] = strdup(m->name ? m->name : mt_translator_name(tr));
    if (!s->names[i]) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (add_routes(s, i, m->path, err, errlen)) return -1;
    const mt_model_info *info = mt_translator_model_info(tr);
    char q1[600], q2[100];
    mt_log_write(s->log, MT_LOG_INFO, "model_loaded",
                 "model=%s dir=%s source=%s target=%s language_tokens=%d d_model=%d "
                 "layers=%d+%d beam=%d max_length=%d load_ms=%.1f",
                 mt_log_quote(q2, sizeof q2, s->names[i]), mt_log_quote(q1, sizeof q1, m->path),
                 mt_translator_source_lang(tr), mt_translator_target_lang(tr),
                 mt_translator_target_count(tr), info->d_model, info->encoder_layers,
                 info->decoder_layers, info->default_beam_size, info->default_max_length,
                 (mt_now() - t0) * 1e3);
    return 0;
}

/* The metrics observer of the service. */
static void on_batch(void *m, int sentences, long tokens, double secs) { mt_metrics_batch(m, sentences, tokens, secs); }
static void on_queue_wait(void *m, double secs) { mt_metrics_queue_wait(m, secs); }
static void on_cancelled(void *m, long sentences) { mt_metrics_cancelled(m, sentences); }

/* Starts the translation service's workers over the loaded models. */
static int start_service(mt_server *s, char *err, size_t errlen)
{
    const mt_config *cfg = s->cfg;
    int workers = cfg->workers;
    if (workers <= 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        workers = (int)(cpus > 0 ? cpus : 1) / (cfg->threads_per_worker > 0 ? cfg->threads_per_worker : 1);
        if (workers < 1) workers = 1;
    }
    mt_service_config sc = {workers, cfg->threads_per_worker, cfg->queue_capacity,
                            cfg->batch_max_sentences, cfg->batch_max_tokens, cfg->batch_max_wait_ms};
    mt_service_observer obs = {on_batch, on_queue_wait, on_cancelled, s->metrics};
    s->svc = mt_service_create(s->trs, s->n_models, &sc, &obs, err, errlen);
    if (!s->svc) return -1;
    s->workers = workers;
    mt_log_write(s->log, MT_LOG_INFO, "ready",
                 "models=%d routes=%d workers=%d threads_per_worker=%d queue_capacity=%d "
                 "batch_max_sentences=%d blas=%s",
                 s->n_models, mt_langs_count(s->langs), workers, cfg->threads_per_worker,
                 cfg->queue_capacity, cfg->batch_max_sentences, mt_translator_blas_name());
    return 0;
}

int mt_server_load(mt_server *s, char *err, size_t errlen)
{
    int n = s->cfg->n_models;
    s->trs = calloc((size_t)n + 1, sizeof *s->trs);
    s->names = calloc((size_t)n + 1, sizeof *s->names);
    s->langs = mt_langs_create();
    if (!s->trs || !s->names || !s->langs) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (load_model(s, i, err, errlen)) return -1;
    json_t *langs = mt_langs_json(s->langs);
    s->languages_json = langs ? json_dumps(langs, JSON_COMPACT) : NULL;
    json_decref(langs);
    if (!s->languages_json || mt_metrics_set_models(s->metrics, n, (const char *const *)s->names)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (start_service(s, err, errlen)) return -1;
    atomic_store(&s->ready, 1);
    return 0;
}

void mt_server_begin_drain(mt_server *s)
{
    if (atomic_exchange(&s->draining, 1)) return;
    if (s->daemon) {
        MHD_socket fd = MHD_quiesce_daemon(s->daemon);
        if (fd != MHD_INVALID_SOCKET) close(fd);
    }
}

void mt_server_free(mt_server *s)
{
    if (!s) return;
    atomic_store(&s->draining, 1);
    /* Cancel what is still queued or running; their connections resume with a 503. */
    if (s->svc) mt_service_abort(s->svc, MT_SERVICE_SHUTDOWN);
    pthread_mutex_lock(&s->watch_mu);
    double until = mt_now() + 10.0;
    while (s->n_watched > 0 && mt_now() < until) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += 20000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&s->watch_cond, &s->watch_mu, &ts);
    }
    s->watch_stop = 1;
    pthread_cond_broadcast(&s->watch_cond);
    pthread_mutex_unlock(&s->watch_mu);
    if (s->watch_started) pthread_join(s->watcher, NULL);
    /* Give resumed connections a moment to send their answers. */
    for (int i = 0; i < 50 && atomic_load(&s->in_flight) > 0; i++) usleep(10000);
    if (s->daemon) MHD_stop_daemon(s->daemon);
    mt_service_free(s->svc);
    for (int i = 0; i < s->n_models; i++) {
        mt_translator_free(s->trs[i]);
        free(s->names[i]);
    }
    free(s->trs);
    free(s->names);
    mt_langs_free(s->langs);
    free(s->languages_json);
    pthread_cond_destroy(&s->watch_cond);
    pthread_mutex_destroy(&s->watch_mu);
    free(s);
}
