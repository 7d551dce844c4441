/* ep_suggest.c: POST /suggest, LibreTranslate's suggested corrections, kept by the store
 * (store.h): in the PostgreSQL database every replica shares when server.shared_state is
 * set, else in SQLite when [server] suggestions_db is set, else 403 as LibreTranslate
 * answers with suggestions off. Every suggestion is a database row, so a client's
 * suggestions are limited per minute (limits.c) besides its requests. This file also
 * opens the store for auth.c and limits.c. */
#include "internal.h"

#include <stdio.h>
#include <string.h>

#include "log.h"
#include "store.h"

int srv_suggest_init(mt_server *s, char *err, size_t errlen)
{
    atomic_store(&s->store_keys, -1);
    mt_store_options o = mt_store_options_default();
    o.url = s->cfg->shared_state;
    o.sqlite_path = s->cfg->suggestions_db;
    /* a connection for each HTTP thread and one for the file jobs' character charges */
    o.pool_size = s->cfg->http_threads + 1 > 32 ? 32 : s->cfg->http_threads + 1;
    if (!o.url[0] && !o.sqlite_path[0]) return 0;
    if (!(s->store = mt_store_open(&o, err, errlen))) return -1;
    if (mt_store_shared(s->store)) {
        char url[300], q[320];
        mt_store_redact(o.url, url, sizeof url); /* the password never reaches the log */
        mt_log_write(s->log, MT_LOG_INFO, "shared_state", "url=%s", mt_log_quote(q, sizeof q, url));
    }
    return 0;
}

void srv_suggest_free(mt_server *s)
{
    mt_store_close(s->store);
    s->store = NULL;
}

enum MHD_Result srv_ep_suggest(mt_server *s, req_ctx *c)
{
    char err[512];
    json_t *obj = NULL;
    if (!mt_store_has_suggestions(s->store)) return srv_send_error(c, 403, "Suggestions are disabled on this server.");
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
    st = mt_store_suggest_add(s->store, v[0], v[1], v[2], v[3], err, sizeof err);
    json_decref(obj);
    if (st == MT_STORE_DOWN) {
        char msg[600];
        snprintf(msg, sizeof msg, "Suggestions are unavailable: the shared state database is down (%s)", err);
        return srv_send_error(c, 503, msg);
    }
    if (st) return srv_send_error(c, 500, err);
    return srv_send_json(c, 200, json_pack("{s:b}", "success", 1), NULL, NULL);
}
