/* ep_suggest.c: POST /suggest, LibreTranslate's suggested corrections: stored in SQLite
 * through store/ when [server] suggestions_db is set, else 403 as LibreTranslate answers
 * with suggestions off. Every suggestion is a database row, so a client's suggestions
 * are limited per minute (limits.c) besides its requests. */
#include "internal.h"

#include <stdio.h>
#include <string.h>

#include "suggest.h"

int srv_suggest_init(mt_server *s, char *err, size_t errlen)
{
    if (!s->cfg->suggestions_db[0]) return 0;
    s->suggest = mt_suggest_open(s->cfg->suggestions_db, err, errlen);
    return s->suggest ? 0 : -1;
}

void srv_suggest_free(mt_server *s)
{
    mt_suggest_close(s->suggest);
    s->suggest = NULL;
}

enum MHD_Result srv_ep_suggest(mt_server *s, req_ctx *c)
{
    char err[512];
    json_t *obj = NULL;
    if (!s->suggest) return srv_send_error(c, 403, "Suggestions are disabled on this server.");
    int from_form = 0;
    int st = srv_read_body(s, c, &obj, &from_form, err, sizeof err);
    if (st) {
        json_decref(obj);
        return srv_send_error(c, st, err);
    }
    /* every suggestion is a row in the database: limited per client like translations */
    enum MHD_Result limited;
    json_t *q = json_object_get(obj, "q"), *sg = json_object_get(obj, "s");
    long chars = (long)(json_string_length(q) + json_string_length(sg));
    if (srv_suggest_rate_check(s, c, mt_request_api_key(obj), chars, &limited)) {
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
