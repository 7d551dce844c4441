/* ep_detect.c: POST /detect in LibreTranslate's shape: per text, the languages it may be
 * in, best first, from the service's detector (the served source languages only, so that
 * short texts are usable; 501 when none of them is detectable). */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { MAX_RESULTS = 8 };

enum MHD_Result srv_ep_detect(mt_server *s, req_ctx *c)
{
    char err[512];
    json_t *obj = NULL;
    int from_form = 0;
    int st = srv_read_body(s, c, &obj, &from_form, err, sizeof err);
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
    if (srv_rate_check(s, c, json_string_value(json_object_get(obj, "api_key")), chars, &limited)) {
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
        json_t *r = srv_render_detection(res, k);
        if (out) json_array_append_new(out, r);
        else single = r;
    }
    json_decref(obj);
    return srv_send_json(c, 200, out ? out : single, NULL, NULL);
}
