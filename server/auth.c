/* auth.c: API keys: the key a request presents (body, query or headers), the check
 * against [server] api_keys, /metrics' key, and reading a body with its key checked. */
#include "internal.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

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

/* /metrics is protected like the API once API keys exist (it names models, traffic and
 * the process): an API key or the metrics key opens it, unless metrics_public. */
int srv_metrics_allowed(mt_server *s, req_ctx *c)
{
    const mt_config *cfg = s->cfg;
    if (cfg->metrics_public || (cfg->n_api_keys == 0 && !cfg->metrics_key[0])) return 1;
    char err[200];
    if (cfg->n_api_keys > 0 && srv_check_api_key(s, c, NULL, err, sizeof err) == 0) return 1;
    if (!cfg->metrics_key[0]) return 0;
    const char *k = MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (k && strncasecmp(k, "Bearer ", 7) == 0) k += 7;
    else k = MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND, "X-API-Key");
    if (!k) k = MHD_lookup_connection_value(c->conn, MHD_GET_ARGUMENT_KIND, "api_key");
    return k && srv_key_equal(k, cfg->metrics_key);
}

int srv_read_body(mt_server *s, req_ctx *c, json_t **obj, int *from_form, char *err, size_t errlen)
{
    int st = mt_request_decode(c->in.ctype, c->in.boundary, c->in.body ? c->in.body : "", c->in.len, obj, from_form, err,
                               errlen);
    return st ? st : srv_check_api_key(s, c, *obj, err, errlen);
}
