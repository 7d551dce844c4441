/* lt_detect.c: POST /detect in LibreTranslate's shape (the service's detector: the
 * served source languages only, so that short texts are usable; 501 when none of them is
 * detectable), and POST /suggest (stored in SQLite through store/ when [server]
 * suggestions_db is set, else 403 as LibreTranslate answers with suggestions off). */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "suggest.h"

enum { MAX_RESULTS = 8 };

int srv_lt_suggest_init(mt_server *s, char *err, size_t errlen)
{
    if (!s->cfg->suggestions_db[0]) return 0;
    s->suggest = mt_suggest_open(s->cfg->suggestions_db, err, errlen);
    return s->suggest ? 0 : -1;
}

void srv_lt_detect_free(mt_server *s)
{
    mt_suggest_close(s->suggest);
    s->suggest = NULL;
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
    if (!mt_service_can_detect(s->svc)) {
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
        int k = mt_service_detect(s->svc, json_string_value(t), len, NULL, res, MAX_RESULTS);
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
    /* every suggestion is a row in the database: limited per client like translations */
    enum MHD_Result limited;
    json_t *q = json_object_get(obj, "q"), *sg = json_object_get(obj, "s");
    long chars = (long)(json_string_length(q) + json_string_length(sg));
    if (srv_lt_suggest_check(s, c, mt_request_api_key(obj), chars, &limited)) {
        json_decref(obj);
        return limited;
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
