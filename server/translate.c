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

/* 0 when no keys are configured or a configured key is presented; else 403 + message. */
int srv_check_api_key(mt_server *s, req_ctx *c, const json_t *obj, char *err, size_t errlen)
{
    const mt_config *cfg = s->cfg;
    if (cfg->n_api_keys == 0) return 0;
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
    }
    if (!key) key = MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND, "X-API-Key");
    if (!key || !*key) {
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
    /* decoding controls: the server's [decoding] defaults, then the request's */
    o->sampling_topk = rq->has_sampling_topk ? rq->sampling_topk : cfg->sampling_topk;
    o->sampling_topp = (float)(rq->sampling_topp > 0 ? rq->sampling_topp : cfg->sampling_topp);
    o->sampling_temperature = (float)(rq->sampling_temperature > 0 ? rq->sampling_temperature
                                                                   : cfg->sampling_temperature);
    o->seed = (uint64_t)(rq->has_seed ? rq->seed : cfg->seed);
    o->no_repeat_ngram_size = rq->no_repeat_ngram_size >= 0 ? rq->no_repeat_ngram_size : cfg->no_repeat_ngram_size;
    o->repetition_penalty = (float)(rq->repetition_penalty >= 1 ? rq->repetition_penalty : cfg->repetition_penalty);
    o->min_length = rq->min_length >= 0 ? rq->min_length : cfg->min_length;
    o->replace_unknowns = rq->replace_unknowns >= 0 ? rq->replace_unknowns : cfg->replace_unknowns;
    o->return_scores = rq->return_scores > 0;
    o->return_alignments = rq->return_alignments > 0;
    if (rq->has_alignment_layer) o->alignment_layer = rq->alignment_layer;
    if (o->sampling_topk != 1 && rq->beam_size == 0 && rq->n_best <= 1)
        o->beam_size = 1; /* sampling draws one hypothesis */
    so->target_prefix = (const char *const *)rq->target_prefix;
    so->prefix_ids = rq->prefix_ids;
    if (o->n_best > o->beam_size) {
        snprintf(err, errlen, "n_best (%d) must not exceed beam_size (%d)", o->n_best, o->beam_size);
        return 400;
    }
    if (mt_service_check_options(s->svc, route->model, so, err, errlen)) return 400;
    return 0;
}

void srv_free_translation(req_ctx *c)
{
    mt_service_job_free(c->job);
    c->job = NULL;
    if (c->auto_results)
        for (int t = 0; t < c->req.n_texts; t++) mt_translation_clear(&c->auto_results[t]);
    free(c->auto_results), free(c->auto_routes), free(c->auto_conf);
    c->auto_results = NULL, c->auto_routes = NULL, c->auto_conf = NULL;
    mt_request_clear(&c->req);
}

static double round3(double x) { return floor(x * 1000.0 + 0.5) / 1000.0; }

static json_t *detected_json(const char *lang)
{
    return json_pack("{s:f, s:s}", "confidence", 100.0, "language", lang);
}

/* Text t's detectedLanguage: what detection found (issue 14), else the route's source. */
static json_t *detected_text_json(mt_server *s, req_ctx *c, int t, const char *source)
{
    if (!c->auto_routes) return detected_json(source);
    double conf = (double)(long)(c->auto_conf[t] * 10 + 0.5) / 10.0;
    return json_pack("{s:f, s:s}", "confidence", conf, "language",
                     mt_langs_get(s->langs, c->auto_routes[t])->source);
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

static int build_parts(mt_server *s, req_ctx *c, const mt_translation *res, int n_texts,
                       const char *source, answer_parts *p)
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
        json_array_append_new(p->detected, detected_text_json(s, c, t, source));
    }
    return 0;
}

/* LibreTranslate's answer: translatedText (and alternatives, detectedLanguage), a string
 * or an array as the request's q was. Takes the parts. */
static json_t *libre_body(req_ctx *c, const mt_route *route, int n_best, answer_parts *p)
{
    (void)route;
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
        if (c->detected) json_object_set(body, "detectedLanguage", json_array_get(p->detected, 0));
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
    if (rq->return_scores > 0) {
        json_t *all = json_array();
        for (int t = 0; t < rq->n_texts; t++) {
            json_t *a = json_array();
            for (int q = 0; res[t].token_scores && q < res[t].n_tokens; q++)
                json_array_append_new(a, json_real(res[t].token_scores[q]));
            json_array_append_new(all, a);
        }
        json_object_set_new(body, "token_scores", all);
    }
    if (rq->return_alignments > 0) {
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

/* The native answer: translations, scores, model, languages, timings, n_best. Takes the parts. */
static json_t *native_body(mt_server *s, req_ctx *c, const mt_route *route, int n_best,
                           const mt_translation *res, answer_parts *p)
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
    if (body) add_extras(body, &c->req, res);
    if (body && c->detected) {
        if (c->auto_routes) json_object_set(body, "detectedLanguage", p->detected);
        else json_object_set_new(body, "detectedLanguage", detected_json(route->source));
    }
    json_decref(p->alts);
    json_decref(p->detected);
    return body;
}

/* Builds the 200 answer once every text is translated. */
static enum MHD_Result respond_translation(mt_server *s, req_ctx *c)
{
    const mt_route *route = mt_langs_get(s->langs, c->auto_routes ? c->auto_routes[0] : c->route);
    const mt_translation *res = c->auto_results ? c->auto_results : mt_service_job_results(c->job);
    int n_best = c->req.n_texts > 0 ? res[0].n_best : 1;
    answer_parts p;
    if (build_parts(s, c, res, c->req.n_texts, route->source, &p)) {
        parts_free(&p);
        return srv_send_error(c, 500, "could not decode the translation");
    }
    mt_service_stats st;
    mt_service_job_stats(c->job, &st);
    mt_metrics_translated(s->metrics, route->model, st.sentences, st.source_tokens, st.target_tokens);
    json_t *body = c->req.form == MT_FORM_LIBRE ? libre_body(c, route, n_best, &p)
                                                : native_body(s, c, route, n_best, res, &p);
    return srv_send_json(c, 200, body, NULL, NULL);
}

static enum MHD_Result start_part(mt_server *s, req_ctx *c);

/* The job finished (resumed connection): 200, or why not. */
enum MHD_Result srv_finish_translate(mt_server *s, req_ctx *c)
{
    if (c->rejected) {
        mt_metrics_rejected(s->metrics);
        char msg[128];
        snprintf(msg, sizeof msg, "server overloaded: %d requests queued; retry later",
                 s->cfg->queue_capacity);
        return srv_send_error(c, 503, msg);
    }
    const char *why;
    switch (mt_service_job_outcome(c->job, &why)) {
    case MT_SERVICE_OK:
        if (c->auto_routes) { /* issue 14: texts of several languages, one route at a time */
            int more = srv_lt_auto_next(c);
            if (more < 0) return srv_send_error(c, 500, "out of memory");
            if (more) {
                mt_service_job_free(c->job);
                c->job = NULL;
                return start_part(s, c);
            }
        }
        return respond_translation(s, c);
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

/* Queues the prepared job with the connection suspended (it may finish, and resume the
 * connection, at once); a full queue resumes it to answer 503. */
static enum MHD_Result queue_job(mt_server *s, req_ctx *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    c->fd = ci ? ci->connect_fd : -1;
    c->phase = P_QUEUED;
    MHD_suspend_connection(c->conn);
    srv_watch_add(s, c);
    if (mt_service_run(s->svc, c->job, srv_job_done, c) != MT_SERVICE_OK) {
        c->rejected = 1;
        pthread_mutex_lock(&s->watch_mu);
        srv_watch_remove_locked(s, c);
        pthread_mutex_unlock(&s->watch_mu);
        MHD_resume_connection(c->conn);
    }
    return MHD_YES;
}

/* The whole body is here: parse, route, hand the texts to the service (or answer now). */
enum MHD_Result srv_start_translate(mt_server *s, req_ctx *c)
{
    char err[512], key[128];
    int st = read_request(s, c, key, sizeof key, err, sizeof err);
    if (st) return srv_send_error(c, st, err);
    /* ---- LibreTranslate parity (issue 14): per-client rate limit ---- */
    long chars = 0;
    for (int i = 0; i < c->req.n_texts; i++) chars += (long)mt_utf8_chars(c->req.texts[i], c->req.lens[i]);
    enum MHD_Result limited;
    if (srv_lt_rate_check(s, c, key, chars, &limited)) return limited;
    /* issue 14: source "auto" detects each text's language (c->auto_routes) */
    if ((st = srv_lt_auto_detect(s, c, err, sizeof err))) return srv_send_error(c, st, err);
    if (!c->auto_routes)
        c->route = mt_langs_resolve(s->langs, c->req.source, c->req.target, &c->detected, err, sizeof err);
    if (c->route < 0) return srv_send_error(c, 400, err);
    return start_part(s, c);
}

/* Prepares and queues the texts of c->route (all of them, unless source "auto" found
 * several languages: then those detected in c->route's source). */
static enum MHD_Result start_part(mt_server *s, req_ctx *c)
{
    char err[512];
    int st;
    const mt_route *route = mt_langs_get(s->langs, c->route);
    c->model_name = s->names[route->model];
    mt_service_options so;
    if ((st = build_options(s, route, &c->req, &so, err, sizeof err))) return srv_send_error(c, st, err);
    so.deadline = s->cfg->request_timeout > 0 ? c->t_start + s->cfg->request_timeout : 0;
    int n = c->req.n_texts;
    const char **texts = malloc(((size_t)n + 1) * sizeof *texts);
    size_t *lens = malloc(((size_t)n + 1) * sizeof *lens);
    if (!texts || !lens) {
        free(texts), free(lens);
        return srv_send_error(c, 500, "out of memory");
    }
    int k = 0;
    for (int t = 0; t < n; t++)
        if (!c->auto_routes || c->auto_routes[t] == c->route) texts[k] = c->req.texts[t], lens[k++] = c->req.lens[t];
    st = mt_service_prepare(s->svc, route->model, &so, k, texts, lens, &c->job, err, sizeof err);
    free(texts), free(lens);
    if (st) return srv_send_error(c, st == MT_SERVICE_INVALID ? 400 : 500, err);
    mt_service_stats stats;
    mt_service_job_stats(c->job, &stats);
    c->sentences += stats.sentences;
    return queue_job(s, c);
}
