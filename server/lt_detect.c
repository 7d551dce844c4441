/* lt_detect.c: language detection in the server (issue 14): POST /detect in
 * LibreTranslate's shape, the per-text detection behind `source: "auto"`, and POST /suggest
 * (stored in SQLite through store/ when [server] suggestions_db is set, else 403 as
 * LibreTranslate answers with suggestions off).
 *
 * The detector (detect/, libexttextcat) is created once the models are loaded, with the
 * loaded models' source languages as its only candidates: answers are restricted to
 * languages the server can translate from, which is what makes short texts usable
 * (see the README's accuracy table). Codes libexttextcat has no fingerprint for are left
 * out (logged); with no candidate left, /detect answers 501 and "auto" keeps its old
 * rule (the one model into the target). */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "detect.h"
#include "suggest.h"

enum { MAX_RESULTS = 8 };

/* The distinct source languages of the routes, in route order. */
static int source_codes(const mt_server *s, const char **codes, int cap)
{
    int n = 0;
    for (int i = 0; i < mt_langs_count(s->langs); i++) {
        const char *src = mt_langs_get(s->langs, i)->source;
        int seen = 0;
        for (int k = 0; k < n; k++) seen |= strcasecmp(codes[k], src) == 0;
        if (!seen && n < cap) codes[n++] = src;
    }
    return n;
}

int srv_lt_detect_init(mt_server *s, char *err, size_t errlen)
{
    const char *codes[64], *known[64];
    int n = source_codes(s, codes, 64), n_known = 0;
    char e[256];
    for (int i = 0; i < n; i++) { /* keep the codes libexttextcat has fingerprints for */
        mt_detector *d = mt_detector_create(&codes[i], 1, NULL, e, sizeof e);
        if (d) {
            known[n_known++] = codes[i];
            mt_detector_free(d);
        } else {
            mt_log_write(s->log, MT_LOG_WARN, "detect", "lang=%s msg=\"not detectable: %s\"", codes[i], e);
        }
    }
    if (n_known == 0) return 0;
    s->detector = mt_detector_create(known, n_known, NULL, err, errlen);
    if (!s->detector) return -1;
    mt_log_write(s->log, MT_LOG_INFO, "detect", "languages=%d", n_known);
    return 0;
}

int srv_lt_suggest_init(mt_server *s, char *err, size_t errlen)
{
    if (!s->cfg->suggestions_db[0]) return 0;
    s->suggest = mt_suggest_open(s->cfg->suggestions_db, err, errlen);
    return s->suggest ? 0 : -1;
}

void srv_lt_detect_free(mt_server *s)
{
    mt_detector_free(s->detector);
    s->detector = NULL;
    mt_suggest_close(s->suggest);
    s->suggest = NULL;
}

/* Best first; only languages some route into `target` starts from when target is set. */
static int detect_text(mt_server *s, const char *text, size_t len, const char *target,
                       mt_detect_result *out, int max)
{
    mt_detect_result all[MAX_RESULTS];
    int n = mt_detect(s->detector, text, len, all, MAX_RESULTS);
    if (n <= 0) return n;
    int k = 0;
    for (int i = 0; i < n && k < max; i++) {
        int ok = !target;
        for (int r = 0; !ok && r < mt_langs_count(s->langs); r++) {
            const mt_route *rt = mt_langs_get(s->langs, r);
            ok = strcasecmp(rt->source, all[i].code) == 0 && strcasecmp(rt->target, target) == 0;
        }
        if (ok) out[k++] = all[i];
    }
    return k;
}

/* The route from `code` into target, or -1. */
static int route_of(mt_server *s, const char *code, const char *target)
{
    for (int r = 0; r < mt_langs_count(s->langs); r++) {
        const mt_route *rt = mt_langs_get(s->langs, r);
        if (strcasecmp(rt->source, code) == 0 && strcasecmp(rt->target, target) == 0) return r;
    }
    return -1;
}

int srv_lt_detect_route(mt_server *s, const char *text, size_t len, const char *target)
{
    mt_detect_result res[1];
    if (!s->detector || !target) return -1;
    size_t n = len > 65536 ? 65536 : len; /* the start of a file says enough */
    while (n < len && n > 0 && ((unsigned char)text[n] & 0xC0) == 0x80) n--;
    return detect_text(s, text, n, target, res, 1) > 0 ? route_of(s, res[0].code, target) : -1;
}

int srv_lt_auto_detect(mt_server *s, req_ctx *c, char *err, size_t errlen)
{
    mt_request *rq = &c->req;
    if (!s->detector || !rq->source || strcasecmp(rq->source, "auto") != 0 || !rq->target ||
        rq->n_texts == 0)
        return 0;
    c->auto_routes = calloc((size_t)rq->n_texts, sizeof *c->auto_routes);
    c->auto_conf = calloc((size_t)rq->n_texts, sizeof *c->auto_conf);
    if (!c->auto_routes || !c->auto_conf) {
        snprintf(err, errlen, "out of memory");
        return 500;
    }
    /* Texts without evidence of their own follow the request's texts taken together. */
    int fallback = -1;
    double fallback_conf = 0;
    for (int t = 0; t < rq->n_texts; t++) {
        mt_detect_result res[1];
        int n = detect_text(s, rq->texts[t], rq->lens[t], rq->target, res, 1);
        c->auto_routes[t] = n > 0 ? route_of(s, res[0].code, rq->target) : -1;
        c->auto_conf[t] = n > 0 ? res[0].confidence : 0;
        if (c->auto_routes[t] < 0 && fallback < 0) {
            size_t total = 0;
            for (int i = 0; i < rq->n_texts; i++) total += rq->lens[i] + 1;
            char *all = malloc(total + 1);
            if (!all) {
                snprintf(err, errlen, "out of memory");
                return 500;
            }
            size_t off = 0;
            for (int i = 0; i < rq->n_texts; i++) {
                memcpy(all + off, rq->texts[i], rq->lens[i]);
                off += rq->lens[i];
                all[off++] = '\n';
            }
            int m = detect_text(s, all, off, rq->target, res, 1);
            free(all);
            if (m > 0) {
                fallback = route_of(s, res[0].code, rq->target);
                fallback_conf = res[0].confidence;
            }
            if (fallback < 0) { /* no evidence at all: the first model into target */
                int det;
                char e[256];
                fallback = mt_langs_resolve(s->langs, "auto", rq->target, &det, e, sizeof e);
                for (int r = 0; fallback < 0 && r < mt_langs_count(s->langs); r++)
                    if (strcasecmp(mt_langs_get(s->langs, r)->target, rq->target) == 0) fallback = r;
                fallback_conf = 0;
            }
            if (fallback < 0) { /* nothing translates into target: resolve says so */
                free(c->auto_routes), free(c->auto_conf);
                c->auto_routes = NULL, c->auto_conf = NULL;
                return 0;
            }
        }
        if (c->auto_routes[t] < 0) {
            c->auto_routes[t] = fallback;
            c->auto_conf[t] = fallback_conf;
        }
    }
    c->route = c->auto_routes[0];
    c->detected = 1;
    return 0;
}

int srv_lt_auto_next(req_ctx *c)
{
    int n = c->req.n_texts;
    if (!c->auto_results && !(c->auto_results = calloc((size_t)n, sizeof *c->auto_results))) return -1;
    const mt_translation *res = mt_service_job_results(c->job);
    int k = 0;
    for (int t = 0; t < n; t++) {
        if (c->auto_routes[t] != c->route) continue;
        const mt_translation *r = &res[k++];
        if (mt_translation_copy(&c->auto_results[t], r)) return -1;
    }
    for (int t = 0; t < n; t++)
        if (!c->auto_results[t].texts) {
            c->route = c->auto_routes[t];
            return 1;
        }
    return 0;
}

/* ---------------------------------------------------------------- POST bodies */

static json_t *results_json(const mt_detect_result *res, int n)
{
    json_t *arr = json_array();
    for (int i = 0; arr && i < n; i++)
        json_array_append_new(arr, json_pack("{s:f, s:s}", "confidence",
                                             (double)(long)(res[i].confidence * 10 + 0.5) / 10.0,
                                             "language", res[i].code));
    return arr;
}

/* Decodes the body; checks the API key; the texts of "q" (a string or a list). */
static int read_body(mt_server *s, req_ctx *c, json_t **obj, char *err, size_t errlen)
{
    int from_form = 0;
    int st = mt_request_decode(c->ctype, c->boundary, c->body ? c->body : "", c->len, obj,
                               &from_form, err, errlen);
    if (st) return st;
    if ((st = srv_check_api_key(s, c, *obj, err, errlen))) return st;
    return 0;
}

static enum MHD_Result respond_detect(mt_server *s, req_ctx *c)
{
    char err[512];
    json_t *obj = NULL;
    int st = read_body(s, c, &obj, err, sizeof err);
    if (st) {
        json_decref(obj);
        return srv_send_error(c, st, err);
    }
    if (!s->detector) {
        json_decref(obj);
        return srv_send_error(c, 501, "language detection is not available for the loaded models' languages");
    }
    json_t *q = json_object_get(obj, "q");
    if (!q) {
        json_decref(obj);
        return srv_send_error(c, 400, "Invalid request: missing q parameter");
    }
    if (!json_is_string(q) && !json_is_array(q)) {
        json_decref(obj);
        return srv_send_error(c, 400, "Invalid request: q must be a string or a list of strings");
    }
    size_t n = json_is_string(q) ? 1 : json_array_size(q);
    if (json_is_array(q) && (n == 0 || n > (size_t)s->cfg->max_texts)) {
        json_decref(obj);
        snprintf(err, sizeof err, "Invalid request: q must hold 1 to %d texts", s->cfg->max_texts);
        return srv_send_error(c, n == 0 ? 400 : 413, err);
    }
    long chars = 0; /* the rate limit counts detected characters as translated ones */
    for (size_t i = 0; i < n; i++) {
        json_t *t = json_is_string(q) ? q : json_array_get(q, i);
        if (json_is_string(t)) chars += (long)json_string_length(t);
    }
    enum MHD_Result limited;
    if (srv_lt_rate_check(s, c, json_string_value(json_object_get(obj, "api_key")), chars, &limited)) {
        json_decref(obj);
        return limited;
    }
    json_t *out = json_is_array(q) ? json_array() : NULL;
    json_t *single = NULL;
    for (size_t i = 0; i < n; i++) {
        json_t *t = json_is_string(q) ? q : json_array_get(q, i);
        if (!json_is_string(t)) {
            json_decref(obj), json_decref(out);
            snprintf(err, sizeof err, "Invalid request: q[%zu] is not a string", i);
            return srv_send_error(c, 400, err);
        }
        size_t len = json_string_length(t);
        if (len == 0 && !json_is_array(q)) {
            json_decref(obj), json_decref(out);
            return srv_send_error(c, 400, "Invalid request: q is empty");
        }
        if ((long)len > 4L * s->cfg->max_text_chars) {
            json_decref(obj), json_decref(out);
            snprintf(err, sizeof err, "Invalid request: q%s is longer than %d characters",
                     json_is_array(q) ? "[i]" : "", s->cfg->max_text_chars);
            return srv_send_error(c, 413, err);
        }
        mt_detect_result res[MAX_RESULTS];
        int k = detect_text(s, json_string_value(t), len, NULL, res, MAX_RESULTS);
        if (k < 0) {
            json_decref(obj), json_decref(out);
            return srv_send_error(c, 500, "language detection failed");
        }
        json_t *r = results_json(res, k);
        if (out) json_array_append_new(out, r);
        else single = r;
    }
    json_decref(obj);
    return srv_send_json(c, 200, out ? out : single, NULL, NULL);
}

static enum MHD_Result respond_suggest(mt_server *s, req_ctx *c)
{
    char err[512];
    json_t *obj = NULL;
    if (!s->suggest) return srv_send_error(c, 403, "Suggestions are disabled on this server.");
    int st = read_body(s, c, &obj, err, sizeof err);
    if (st) {
        json_decref(obj);
        return srv_send_error(c, st, err);
    }
    static const char *const names[] = {"q", "s", "source", "target"};
    const char *v[4];
    for (int i = 0; i < 4; i++) {
        json_t *f = json_object_get(obj, names[i]);
        v[i] = json_is_string(f) ? json_string_value(f) : NULL;
        if (!v[i] || !*v[i]) {
            snprintf(err, sizeof err, "Invalid request: missing %s parameter", names[i]);
            json_decref(obj);
            return srv_send_error(c, 400, err);
        }
    }
    if (strlen(v[0]) > 4u * (size_t)s->cfg->max_text_chars || strlen(v[1]) > 4u * (size_t)s->cfg->max_text_chars) {
        json_decref(obj);
        return srv_send_error(c, 413, "Invalid request: suggestion too long");
    }
    st = mt_suggest_add(s->suggest, v[0], v[1], v[2], v[3], err, sizeof err);
    json_decref(obj);
    if (st) return srv_send_error(c, 500, err);
    return srv_send_json(c, 200, json_pack("{s:b}", "success", 1), NULL, NULL);
}

enum MHD_Result srv_lt_respond_post(mt_server *s, req_ctx *c)
{
    if (!atomic_load(&s->ready)) return srv_send_error(c, 503, "models are loading; retry shortly");
    if (c->lt_post == SRV_LT_DETECT) return respond_detect(s, c);
    if (c->lt_post == SRV_LT_SUGGEST) return respond_suggest(s, c);
    return srv_lt_respond_file_post(s, c);
}
