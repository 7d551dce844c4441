/* translate.c: POST /translate: decode the body, check the API key, route the language
 * pair, hand the texts to the translation service, answer in the request's form (native
 * or LibreTranslate) when the job is finished. Knows no tokenizer, search or model. */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "utf8.h"

/* Compares keys in time independent of where they differ. */
int srv_key_equal(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned char d = (unsigned char)(la != lb);
    for (size_t i = 0; i < la; i++) d |= (unsigned char)(a[i] ^ b[i % (lb ? lb : 1)]);
    return d == 0;
}

const char *srv_presented_key(req_ctx *c, const json_t *obj)
{
    /* The body's api_key, else the query's (?api_key=, as LibreTranslate clients send it),
     * else the headers; an empty one counts as absent (clients send "" with a header key). */
    const char *key = mt_request_api_key(obj);
    if (key && !*key) key = NULL;
    if (!key) key = MHD_lookup_connection_value(c->conn, MHD_GET_ARGUMENT_KIND, "api_key");
    if (key && !*key) key = NULL;
    const char *auth = MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!key && auth && strncasecmp(auth, "Bearer ", 7) == 0) {
        key = auth + 7;
        while (*key == ' ') key++;
        if (!*key) key = NULL; /* an empty "Bearer " does not hide an X-API-Key */
    }
    if (!key) key = MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND, "X-API-Key");
    return key && *key ? key : NULL;
}

/* 0 when no keys are configured or a configured key is presented; else 403 + message. */
int srv_check_api_key(mt_server *s, req_ctx *c, const json_t *obj, char *err, size_t errlen)
{
    const mt_config *cfg = s->cfg;
    if (cfg->n_api_keys == 0) return 0;
    const char *key = srv_presented_key(c, obj);
    if (!key) {
        snprintf(err, errlen, "missing API key: send \"api_key\" in the body, an "
                 "\"Authorization: Bearer KEY\" or an \"X-API-Key\" header");
        return 403;
    }
    int ok = 0;
    for (int i = 0; i < cfg->n_api_keys; i++) ok |= srv_key_equal(key, cfg->api_keys[i]);
    if (!ok) {
        snprintf(err, errlen, "invalid API key");
        return 403;
    }
    return 0;
}

void srv_free_translation(req_ctx *c)
{
    mt_service_task_free(c->task);
    c->task = NULL;
    mt_request_clear(&c->req);
}

static double round3(double x) { return floor(x * 1000.0 + 0.5) / 1000.0; }

/* Text t's detectedLanguage: the language of the route it took, and how sure detection was. */
static json_t *detected_json(const mt_service_task *task, int t)
{
    double conf = (double)(long)(mt_service_task_confidence(task, t) * 10 + 0.5) / 10.0;
    return json_pack("{s:f, s:s}", "confidence", conf, "language", mt_service_task_route(task, t)->source);
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

static int build_parts(req_ctx *c, const mt_translation *res, int n_texts, answer_parts *p)
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
        json_array_append_new(p->detected, detected_json(c->task, t));
    }
    return 0;
}

/* LibreTranslate's answer: translatedText (and alternatives, detectedLanguage), a string
 * or an array as the request's q was. Takes the parts. */
static json_t *libre_body(req_ctx *c, int n_best, answer_parts *p)
{
    json_t *body;
    int detected = mt_service_task_detected(c->task);
    if (c->req.text_is_array) {
        body = json_pack("{s:o}", "translatedText", p->texts);
        if (n_best > 1) json_object_set_new(body, "alternatives", p->alts);
        else json_decref(p->alts);
        if (detected) json_object_set_new(body, "detectedLanguage", p->detected);
        else json_decref(p->detected);
    } else {
        body = json_pack("{s:O}", "translatedText", json_array_get(p->texts, 0));
        if (n_best > 1) json_object_set(body, "alternatives", json_array_get(p->alts, 0));
        if (detected) json_object_set(body, "detectedLanguage", json_array_get(p->detected, 0));
        json_decref(p->texts), json_decref(p->alts), json_decref(p->detected);
    }
    json_decref(p->scores);
    json_decref(p->nbest);
    return body;
}

static json_t *pairs_json(const int (*p)[2], int n)
{
    json_t *a = json_array();
    for (int i = 0; a && i < n; i++) json_array_append_new(a, json_pack("[ii]", p[i][0], p[i][1]));
    return a;
}

/* return_scores / return_alignments: per text, of the best translation. */
static void add_extras(json_t *body, const mt_request *rq, const mt_translation *res)
{
    unsigned set = rq->decoding.set;
    if ((set & (1u << MT_OPT_RETURN_SCORES)) && rq->decoding.v.return_scores) {
        json_t *all = json_array();
        for (int t = 0; t < rq->n_texts; t++) {
            json_t *a = json_array();
            for (int q = 0; res[t].token_scores && q < res[t].n_tokens; q++)
                json_array_append_new(a, json_real(res[t].token_scores[q]));
            json_array_append_new(all, a);
        }
        json_object_set_new(body, "token_scores", all);
    }
    if ((set & (1u << MT_OPT_RETURN_ALIGNMENTS)) && rq->decoding.v.return_alignments) {
        json_t *words = json_array(), *tokens = json_array();
        for (int t = 0; t < rq->n_texts; t++) {
            json_array_append_new(words, pairs_json((const int(*)[2])res[t].alignments, res[t].n_alignments));
            json_array_append_new(tokens, pairs_json((const int(*)[2])res[t].token_alignments,
                                                     res[t].token_alignments ? res[t].n_tokens : 0));
        }
        json_object_set_new(body, "alignments", words);
        json_object_set_new(body, "token_alignments", tokens);
    }
}

/* The native answer: translations, scores, model, languages, timings (of every part),
 * n_best. Takes the parts. */
static json_t *native_body(mt_server *s, req_ctx *c, int n_best, const mt_translation *res, answer_parts *p)
{
    const mt_route *route = mt_service_task_route(c->task, 0);
    mt_service_stats st;
    mt_service_task_stats(c->task, &st);
    double now = mt_now();
    double queue_ms = st.t_started > 0 ? (st.t_started - st.t_submitted) * 1e3 : 0;
    double translate_ms = st.t_started > 0 && st.t_done > 0 ? (st.t_done - st.t_started) * 1e3 : 0;
    json_t *body = json_pack("{s:o, s:o, s:s, s:s, s:s, s:{s:f, s:f, s:f}}", "translations", p->texts,
                             "scores", p->scores, "model", mt_service_model_info(s->svc, route->model)->name,
                             "source", route->source, "target", route->target, "timing_ms", "queue",
                             round3(queue_ms), "translate", round3(translate_ms), "total",
                             round3((now - c->t_start) * 1e3));
    if (body && n_best > 1) json_object_set_new(body, "n_best", p->nbest);
    else json_decref(p->nbest);
    if (body) add_extras(body, &c->req, res);
    if (body && mt_service_task_detected(c->task)) {
        if (mt_service_task_detected(c->task) == 2) json_object_set(body, "detectedLanguage", p->detected);
        else json_object_set_new(body, "detectedLanguage", detected_json(c->task, 0));
    }
    json_decref(p->alts);
    json_decref(p->detected);
    return body;
}

/* Builds the 200 answer once every text is translated. */
static enum MHD_Result respond_translation(mt_server *s, req_ctx *c)
{
    const mt_translation *res = mt_service_task_results(c->task);
    int n_best = c->req.n_texts > 0 ? res[0].n_best : 1;
    answer_parts p;
    if (build_parts(c, res, c->req.n_texts, &p)) {
        parts_free(&p);
        return srv_send_error(c, 500, "could not decode the translation");
    }
    json_t *body = c->req.form == MT_FORM_LIBRE ? libre_body(c, n_best, &p) : native_body(s, c, n_best, res, &p);
    return srv_send_json(c, 200, body, NULL, NULL);
}

/* The job finished (resumed connection): 200, or why not. */
enum MHD_Result srv_finish_translate(mt_server *s, req_ctx *c)
{
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
        srv_copy_text(c->error, sizeof c->error, msg);
        return srv_send_json(c, 503, json_pack("{s:s}", "error", msg), MHD_HTTP_HEADER_RETRY_AFTER, after);
    }
    const char *why;
    switch (mt_service_task_outcome(c->task, &why)) {
    case MT_SERVICE_OK: return respond_translation(s, c);
    case MT_SERVICE_BUSY: c->rejected = 1; return srv_finish_translate(s, c);
    case MT_SERVICE_CLIENT_GONE:
        c->status = 499; /* nobody to answer: close */
        snprintf(c->error, sizeof c->error, "client disconnected");
        c->phase = P_DONE;
        return MHD_NO;
    case MT_SERVICE_DEADLINE: {
        char msg[128];
        snprintf(msg, sizeof msg, "translation did not finish within the request timeout (%g s)",
                 s->cfg->request_timeout);
        return srv_send_error(c, 504, msg);
    }
    case MT_SERVICE_SHUTDOWN: return srv_send_error(c, 503, "server is shutting down");
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
    int st = mt_request_decode(c->ctype, c->boundary, c->body ? c->body : "", c->len, &obj,
                               &from_form, err, errlen);
    if (st) return st;
    if ((st = srv_check_api_key(s, c, obj, err, errlen))) {
        json_decref(obj);
        return st;
    }
    const char *k = mt_request_api_key(obj); /* the rate limit's client (issue 14) */
    snprintf(key, keylen, "%s", k ? k : "");
    mt_request_limits lim = {s->cfg->max_texts, s->cfg->max_text_chars, s->cfg->max_beam_size};
    st = mt_request_parse(obj, from_form, &lim, &c->req, err, errlen);
    json_decref(obj);
    return st;
}

/* Queues the submitted task with the connection suspended (it may finish, and resume the
 * connection, at once); a full queue resumes it to answer 503. */
static enum MHD_Result queue_task(mt_server *s, req_ctx *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    c->fd = ci ? ci->connect_fd : -1;
    c->phase = P_QUEUED;
    MHD_suspend_connection(c->conn);
    srv_watch_add(s, c);
    if (mt_service_task_start(c->task, srv_job_done, c) != MT_SERVICE_OK) {
        c->rejected = 1;
        pthread_mutex_lock(&s->watch_mu);
        srv_watch_remove_locked(s, c);
        pthread_mutex_unlock(&s->watch_mu);
        MHD_resume_connection(c->conn);
    }
    return MHD_YES;
}

/* The whole body is here: parse, rate-limit, submit to the service (or answer now). */
enum MHD_Result srv_start_translate(mt_server *s, req_ctx *c)
{
    char err[512], key[128];
    int st = read_request(s, c, key, sizeof key, err, sizeof err);
    if (st) return srv_send_error(c, st, err);
    long chars = 0;
    for (int i = 0; i < c->req.n_texts; i++) chars += (long)mt_utf8_chars(c->req.texts[i], c->req.lens[i]);
    enum MHD_Result limited;
    if (srv_lt_rate_check(s, c, key, chars, &limited)) return limited;
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
    rq.deadline = s->cfg->request_timeout > 0 ? c->t_start + s->cfg->request_timeout : 0;
    st = mt_service_submit(s->svc, &rq, &c->task, err, sizeof err);
    if (st) return srv_send_error(c, st == MT_SERVICE_INVALID ? 400 : 500, err);
    mt_service_stats stats;
    mt_service_task_stats(c->task, &stats);
    c->sentences += stats.sentences;
    c->model_name = mt_service_model_info(s->svc, mt_service_task_route(c->task, 0)->model)->name;
    return queue_task(s, c);
}
