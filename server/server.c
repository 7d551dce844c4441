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

#include "batcher.h"
#include "langs.h"
#include "request.h"
#include "translator.h"

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
    const mt_model **models;
    char **names;
    int *max_src_tokens;
    int32_t *own_token;       /* source id of ">>target<<" the translator prepends, or -1 */
    int n_models;
    mt_langs *langs;
    char *languages_json;     /* GET /languages body, built once */
    mt_batcher *batcher;
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
    mt_segment **segs;
    int *n_segs;
    int32_t **ids;            /* per item, from mt_translator_encode */
    mt_job job;
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
            if (c->job.deadline > 0 && now > c->job.deadline) {
                int expected = MT_JOB_RUNNING;
                if (atomic_compare_exchange_strong(&c->job.cancel, &expected, MT_JOB_DEADLINE))
                    cancelled++;
            }
            if (c->fd >= 0 && atomic_load(&c->job.cancel) == MT_JOB_RUNNING) {
                fds[n].fd = c->fd;
                fds[n].events = POLLRDHUP;
                fds[n].revents = 0;
                who[n++] = c;
            }
        }
        if (n > 0 && poll(fds, (nfds_t)n, 0) > 0) {
            for (int i = 0; i < n; i++)
                if (fds[i].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) {
                    int expected = MT_JOB_RUNNING;
                    if (atomic_compare_exchange_strong(&who[i]->job.cancel, &expected,
                                                       MT_JOB_CLIENT_GONE))
                        cancelled++;
                }
        }
        if (cancelled && s->batcher) {
            /* The purge may finish jobs, whose callbacks take watch_mu. */
            pthread_mutex_unlock(&s->watch_mu);
            mt_batcher_purge(s->batcher);
            pthread_mutex_lock(&s->watch_mu);
        }
    }
    pthread_mutex_unlock(&s->watch_mu);
    free(fds);
    free(who);
    return NULL;
}

/* Batcher callback: the job's last sentence is done (worker or watcher thread). */
static void job_done(mt_job *job, void *user)
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

/* Search options: the model's defaults, the server's defaults, then the request's. */
static int build_options(mt_server *s, int model, const mt_request *rq, mt_search_options *o,
                         char *err, size_t errlen)
{
    const mt_config *cfg = s->cfg;
    const mt_model *m = s->models[model];
    const mt_model_info *info = mt_model_get_info(m);
    mt_search_options_default(m, o);
    if (cfg->beam_size > 0) o->beam_size = cfg->beam_size;
    if (cfg->length_penalty >= 0) o->length_penalty = (float)cfg->length_penalty;
    if (cfg->max_length > 0) o->max_length = cfg->max_length;
    o->n_best = 1;
    if (rq->beam_size > 0) o->beam_size = rq->beam_size;
    if (rq->length_penalty >= 0) o->length_penalty = (float)rq->length_penalty;
    if (rq->max_length > 0) {
        if (rq->max_length > info->max_positions) {
            snprintf(err, errlen, "max_length %d exceeds the model's limit of %d tokens",
                     rq->max_length, info->max_positions);
            return 400;
        }
        o->max_length = rq->max_length;
    }
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
    mt_job_clear_results(&c->job);
    for (int i = 0; c->ids && i < c->job.n_items; i++) free(c->ids[i]);
    free(c->ids);
    free(c->job.items);
    c->ids = NULL;
    c->job.items = NULL;
    c->job.n_items = 0;
    for (int i = 0; c->segs && i < c->req.n_texts; i++) free(c->segs[i]);
    free(c->segs);
    free(c->n_segs);
    c->segs = NULL;
    c->n_segs = NULL;
    mt_request_clear(&c->req);
}

static double round3(double x) { return floor(x * 1000.0 + 0.5) / 1000.0; }

static json_t *detected_json(const char *lang)
{
    return json_pack("{s:f, s:s}", "confidence", 100.0, "language", lang);
}

/* Builds the 200 answer once every sentence is translated. */
static enum MHD_Result respond_translation(mt_server *s, req_ctx *c)
{
    const mt_route *route = mt_langs_get(s->langs, c->route);
    mt_translator *tr = s->trs[route->model];
    int n_items = c->job.n_items, n_texts = c->req.n_texts, n_best = c->job.opts.n_best;
    mt_sentence_hyps *hyps = calloc((size_t)n_items + 1, sizeof *hyps);
    json_t *texts = json_array(), *scores = json_array(), *nbest = json_array();
    json_t *alts = json_array(), *detected = json_array();
    enum MHD_Result ret;
    char err[256];
    long src_tokens = 0, tgt_tokens = 0;
    int ok = hyps && texts && scores && nbest && alts && detected;
    for (int i = 0; ok && i < n_items; i++) {
        mt_item *it = &c->job.items[i];
        src_tokens += it->len;
        if (it->n_hyps > 0) tgt_tokens += it->hyp_lens[0];
        hyps[i].texts = calloc((size_t)it->n_hyps + 1, sizeof *hyps[i].texts);
        hyps[i].scores = it->scores;
        if (!hyps[i].texts) ok = 0;
        for (int k = 0; ok && k < it->n_hyps; k++) {
            hyps[i].texts[k] = mt_translator_decode(tr, it->hyp_ids[k], it->hyp_lens[k], err, sizeof err);
            if (!hyps[i].texts[k]) ok = 0;
            else hyps[i].n = k + 1;
        }
    }
    for (int t = 0, first = 0; ok && t < n_texts; t++) {
        json_t *list = json_array(), *alt = json_array();
        for (int k = 0; list && alt && k < n_best; k++) {
            float score;
            char *str = mt_translator_join(c->req.texts[t], c->segs[t], c->n_segs[t], hyps + first, k,
                                           c->req.html ? MT_JOIN_HTML : MT_JOIN_TEXT, &score);
            if (!str) {
                ok = 0;
                break;
            }
            if (k == 0) {
                json_array_append_new(texts, json_string(str));
                json_array_append_new(scores, json_real(score));
            } else {
                json_array_append_new(alt, json_string(str));
            }
            json_array_append_new(list, json_pack("{s:s, s:f}", "text", str, "score", (double)score));
            free(str);
        }
        json_array_append_new(nbest, list);
        json_array_append_new(alts, alt);
        json_array_append_new(detected, detected_json(route->source));
        for (int j = 0; j < c->n_segs[t]; j++) first += c->segs[t][j].translate;
    }
    for (int i = 0; hyps && i < n_items; i++) {
        for (int k = 0; k < hyps[i].n; k++) free(hyps[i].texts[k]);
        free(hyps[i].texts);
    }
    free(hyps);
    if (!ok) {
        json_decref(texts), json_decref(scores), json_decref(nbest), json_decref(alts);
        json_decref(detected);
        return send_error(c, 500, "could not decode the translation");
    }
    mt_metrics_translated(s->metrics, route->model, n_items, src_tokens, tgt_tokens);
    json_t *body;
    if (c->req.form == MT_FORM_LIBRE) {
        if (c->req.text_is_array) {
            body = json_pack("{s:o}", "translatedText", texts);
            if (n_best > 1) json_object_set_new(body, "alternatives", alts);
            else json_decref(alts);
            if (c->detected) json_object_set_new(body, "detectedLanguage", detected);
            else json_decref(detected);
        } else {
            body = json_pack("{s:O}", "translatedText", json_array_get(texts, 0));
            if (n_best > 1) json_object_set(body, "alternatives", json_array_get(alts, 0));
            if (c->detected) json_object_set_new(body, "detectedLanguage", detected_json(route->source));
            json_decref(texts), json_decref(alts), json_decref(detected);
        }
        json_decref(scores);
        json_decref(nbest);
    } else {
        double now = mt_now();
        double queue_ms = c->job.t_started > 0 ? (c->job.t_started - c->job.t_submitted) * 1e3 : 0;
        double translate_ms =
            c->job.t_started > 0 && c->job.t_done > 0 ? (c->job.t_done - c->job.t_started) * 1e3 : 0;
        body = json_pack("{s:o, s:o, s:s, s:s, s:s, s:{s:f, s:f, s:f}}", "translations", texts,
                         "scores", scores, "model", s->names[route->model], "source",
                         route->source, "target", route->target, "timing_ms", "queue",
                         round3(queue_ms), "translate", round3(translate_ms), "total",
                         round3((now - c->t_start) * 1e3));
        if (body && n_best > 1) json_object_set_new(body, "n_best", nbest);
        else json_decref(nbest);
        if (body && c->detected) json_object_set_new(body, "detectedLanguage", detected_json(route->source));
        json_decref(alts);
        json_decref(detected);
    }
    ret = send_json(c, 200, body, NULL, NULL);
    return ret;
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
    int all_ok = 1;
    for (int i = 0; i < c->job.n_items; i++) all_ok &= c->job.items[i].status == MT_OK;
    if (all_ok) return respond_translation(s, c);
    switch (atomic_load(&c->job.cancel)) {
    case MT_JOB_CLIENT_GONE:
        c->status = 499; /* nobody to answer: close */
        snprintf(c->error, sizeof c->error, "client disconnected");
        c->phase = P_DONE;
        return MHD_NO;
    case MT_JOB_DEADLINE: {
        char msg[128];
        snprintf(msg, sizeof msg, "translation did not finish within the request timeout (%g s)",
                 s->cfg->request_timeout);
        return send_error(c, 504, msg);
    }
    case MT_JOB_SHUTDOWN: return send_error(c, 503, "server is shutting down");
    default: break;
    }
    char msg[300];
    snprintf(msg, sizeof msg, "translation failed: %s",
             c->job.error ? c->job.error_text : "internal error");
    return send_error(c, 500, msg);
}

/* Adjusts a sentence's leading language token for a multilingual route. */
static int set_language_token(mt_server *s, const mt_route *r, int32_t **ids, int n)
{
    int32_t own = s->own_token[r->model];
    if (r->target_token < 0) return n;
    if (own >= 0 && n > 0 && (*ids)[0] == own) {
        (*ids)[0] = r->target_token;
        return n;
    }
    int32_t *p = realloc(*ids, sizeof *p * (size_t)(n + 1));
    if (!p) return -1;
    memmove(p + 1, p, sizeof *p * (size_t)n);
    p[0] = r->target_token;
    *ids = p;
    return n + 1;
}

/* The whole body is here: parse, route, segment, encode, queue (or answer now). */
static enum MHD_Result start_translate(mt_server *s, req_ctx *c)
{
    char err[512];
    json_t *obj = NULL;
    int from_form = 0;
    int st = mt_request_decode(c->ctype, c->boundary, c->body ? c->body : "", c->len, &obj,
                               &from_form, err, sizeof err);
    if (st) return send_error(c, st, err);
    if ((st = check_api_key(s, c, obj, err, sizeof err))) {
        json_decref(obj);
        return send_error(c, st, err);
    }
    mt_request_limits lim = {s->cfg->max_texts, s->cfg->max_text_chars, s->cfg->max_beam_size};
    st = mt_request_parse(obj, from_form, &lim, &c->req, err, sizeof err);
    json_decref(obj);
    if (st) return send_error(c, st, err);
    c->route = mt_langs_resolve(s->langs, c->req.source, c->req.target, &c->detected, err, sizeof err);
    if (c->route < 0) return send_error(c, 400, err);
    const mt_route *route = mt_langs_get(s->langs, c->route);
    int model = route->model;
    mt_translator *tr = s->trs[model];
    c->model_name = s->names[model];
    c->job.model = model;
    if ((st = build_options(s, model, &c->req, &c->job.opts, err, sizeof err)))
        return send_error(c, st, err);

    /* Segment every text; each to-translate segment becomes one queued sentence. */
    int n = c->req.n_texts, n_items = 0;
    c->segs = calloc((size_t)n + 1, sizeof *c->segs);
    c->n_segs = calloc((size_t)n + 1, sizeof *c->n_segs);
    if (!c->segs || !c->n_segs) return send_error(c, 500, "out of memory");
    for (int t = 0; t < n; t++) {
        c->n_segs[t] = (c->req.html ? mt_translator_segment_html : mt_translator_segment)(
            tr, c->req.texts[t], c->req.lens[t], s->max_src_tokens[model], &c->segs[t], err, sizeof err);
        if (c->n_segs[t] < 0) {
            c->n_segs[t] = 0;
            return send_error(c, 400, err);
        }
        for (int j = 0; j < c->n_segs[t]; j++) n_items += c->segs[t][j].translate;
    }
    c->job.items = calloc((size_t)n_items + 1, sizeof *c->job.items);
    c->ids = calloc((size_t)n_items + 1, sizeof *c->ids);
    if (!c->job.items || !c->ids) return send_error(c, 500, "out of memory");
    for (int t = 0, i = 0; t < n; t++)
        for (int j = 0; j < c->n_segs[t]; j++) {
            const mt_segment *sg = &c->segs[t][j];
            if (!sg->translate) continue;
            int len = (c->req.html ? mt_translator_encode_html : mt_translator_encode)(
                tr, c->req.texts[t] + sg->start, sg->len, &c->ids[i], err, sizeof err);
            if (len >= 0) len = set_language_token(s, route, &c->ids[i], len);
            c->job.n_items = i + 1; /* so that cleanup frees ids[0..i] */
            if (len < 0) return send_error(c, 400, err);
            c->job.items[i].ids = c->ids[i];
            c->job.items[i].len = len;
            i++;
        }
    c->job.n_items = n_items;
    c->sentences = n_items;
    if (n_items == 0) return respond_translation(s, c); /* only empty / blank texts */

    c->job.deadline = s->cfg->request_timeout > 0 ? c->t_start + s->cfg->request_timeout : 0;
    atomic_store(&c->job.cancel, MT_JOB_RUNNING);
    c->job.on_done = job_done;
    c->job.user = c;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    c->fd = ci ? ci->connect_fd : -1;
    /* Suspend before submitting: the job may finish (and resume us) at once. */
    c->phase = P_QUEUED;
    MHD_suspend_connection(c->conn);
    watch_add(s, c);
    if (mt_batcher_submit(s->batcher, &c->job) != 0) {
        c->rejected = 1;
        pthread_mutex_lock(&s->watch_mu);
        watch_remove_locked(s, c);
        pthread_mutex_unlock(&s->watch_mu);
        MHD_resume_connection(c->conn);
    }
    return MHD_YES;
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
        mt_batcher_gauges(s->batcher, &g.queued_sentences, &g.queued_requests, &g.busy_workers,
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
        mt_batcher_arriving(s->batcher, 1);
        enum MHD_Result r = start_translate(s, c);
        mt_batcher_arriving(s->batcher, -1);
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

int mt_server_load(mt_server *s, char *err, size_t errlen)
{
    const mt_config *cfg = s->cfg;
    int n = cfg->n_models;
    s->trs = calloc((size_t)n, sizeof *s->trs);
    s->models = calloc((size_t)n, sizeof *s->models);
    s->names = calloc((size_t)n, sizeof *s->names);
    s->max_src_tokens = calloc((size_t)n, sizeof *s->max_src_tokens);
    s->own_token = calloc((size_t)n, sizeof *s->own_token);
    s->langs = mt_langs_create();
    if (!s->trs || !s->models || !s->names || !s->max_src_tokens || !s->own_token || !s->langs) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        const mt_config_model *m = &cfg->models[i];
        double t0 = mt_now();
        char e[512];
        mt_translator *tr = mt_translator_load(m->path, m->source, m->target, e, sizeof e);
        if (!tr) {
            snprintf(err, errlen, "cannot load model %s: %s", m->path, e);
            return -1;
        }
        s->trs[i] = tr;
        s->n_models = i + 1;
        s->models[i] = mt_translator_model(tr);
        s->names[i] = strdup(m->name ? m->name : mt_translator_name(tr));
        if (!s->names[i]) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        s->max_src_tokens[i] = mt_translator_max_source_tokens(tr);
        const char *src = mt_translator_source_lang(tr), *tgt = mt_translator_target_lang(tr);
        if (mt_langs_add(s->langs, src, tgt, i, -1)) {
            snprintf(err, errlen, "model %s: invalid language pair %s-%s", m->path, src, tgt);
            return -1;
        }
        /* Multilingual models: every ">>xxx<<" token is a target this model offers. */
        const mt_tokenizer *tok = mt_translator_tokenizer(tr);
        int n_lang = mt_tokenizer_language_token_count(tok);
        s->own_token[i] = -1;
        if (n_lang > 0) {
            char piece[64];
            snprintf(piece, sizeof piece, ">>%s<<", tgt);
            s->own_token[i] = mt_tokenizer_source_id(tok, piece);
        }
        for (int k = 0; k < n_lang; k++) {
            const char *t = mt_tokenizer_language_token(tok, k);
            size_t tl = strlen(t);
            if (tl < 5 || tl > 36 || strncmp(t, ">>", 2) != 0 || strcmp(t + tl - 2, "<<") != 0) continue;
            char code[33];
            snprintf(code, sizeof code, "%.*s", (int)(tl - 4), t + 2);
            if (mt_langs_add(s->langs, src, code, i, mt_tokenizer_source_id(tok, t))) {
                snprintf(err, errlen, "out of memory");
                return -1;
            }
        }
        const mt_model_info *info = mt_model_get_info(s->models[i]);
        char q1[600], q2[100];
        mt_log_write(s->log, MT_LOG_INFO, "model_loaded",
                     "model=%s dir=%s source=%s target=%s language_tokens=%d d_model=%d "
                     "layers=%d+%d beam=%d max_length=%d load_ms=%.1f",
                     mt_log_quote(q2, sizeof q2, s->names[i]), mt_log_quote(q1, sizeof q1, m->path),
                     src, tgt, n_lang, info->d_model, info->encoder_layers, info->decoder_layers,
                     info->default_beam_size, info->default_max_length, (mt_now() - t0) * 1e3);
    }
    json_t *langs = mt_langs_json(s->langs);
    s->languages_json = langs ? json_dumps(langs, JSON_COMPACT) : NULL;
    json_decref(langs);
    if (!s->languages_json || mt_metrics_set_models(s->metrics, n, (const char *const *)s->names)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int workers = cfg->workers;
    if (workers <= 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        workers = (int)(cpus > 0 ? cpus : 1) / (cfg->threads_per_worker > 0 ? cfg->threads_per_worker : 1);
        if (workers < 1) workers = 1;
    }
    mt_batcher_config bc = {workers, cfg->threads_per_worker, cfg->queue_capacity,
                            cfg->batch_max_sentences, cfg->batch_max_tokens, cfg->batch_max_wait_ms};
    s->batcher = mt_batcher_create(s->models, n, &bc, s->metrics, err, errlen);
    if (!s->batcher) return -1;
    s->workers = workers;
    mt_log_write(s->log, MT_LOG_INFO, "ready",
                 "models=%d routes=%d workers=%d threads_per_worker=%d queue_capacity=%d "
                 "batch_max_sentences=%d blas=%s",
                 n, mt_langs_count(s->langs), workers, cfg->threads_per_worker, cfg->queue_capacity,
                 cfg->batch_max_sentences, mt_blas_core_name());
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
    if (s->batcher) mt_batcher_abort(s->batcher, MT_JOB_SHUTDOWN);
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
    mt_batcher_free(s->batcher);
    for (int i = 0; i < s->n_models; i++) {
        mt_translator_free(s->trs[i]);
        free(s->names[i]);
    }
    free(s->trs);
    free(s->models);
    free(s->names);
    free(s->max_src_tokens);
    free(s->own_token);
    mt_langs_free(s->langs);
    free(s->languages_json);
    pthread_cond_destroy(&s->watch_cond);
    pthread_mutex_destroy(&s->watch_mu);
    free(s);
}
