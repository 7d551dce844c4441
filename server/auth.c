/* auth.c: API keys: the key a request presents (body, query or headers), the check
 * against [server] api_keys and the shared store's keys, /metrics' key, and reading a
 * body with its key checked. */
#include "internal.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "store.h"

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

/* With the shared store, a key not in the config is looked up there on every request, so
 * a key added or removed with `mt-server keys` counts on every replica at once. */
static int check_store_key(mt_server *s, req_ctx *c, const char *key, char *err, size_t errlen)
{
    char why[300];
    if (!key) {
        /* keys are needed once the config or the database holds one; while the database
         * is down, what it said last decides (text translation goes on for open servers) */
        int any = mt_store_key_any(s->store, why, sizeof why);
        if (any >= 0) atomic_store(&s->store_keys, any);
        else any = atomic_load(&s->store_keys);
        if (any == 0 && s->cfg->n_api_keys == 0) return 0;
        if (any < 0) {
            snprintf(err, errlen, "API keys cannot be checked: the shared state database is down (%s)", why);
            return 503;
        }
        snprintf(err, errlen, "missing API key: send \"api_key\" in the body, an "
                 "\"Authorization: Bearer KEY\" or an \"X-API-Key\" header");
        return 403;
    }
    mt_store_key k;
    int found = mt_store_key_find(s->store, key, &k, why, sizeof why);
    if (found == 1) {
        atomic_store(&s->store_keys, 1);
        c->key_from_store = 1;
        c->key_chars_limit = k.chars_per_minute;
        return 0;
    }
    if (found < 0) {
        /* an open server (no key anywhere when last asked) stays open while it is down */
        if (s->cfg->n_api_keys == 0 && atomic_load(&s->store_keys) == 0) return 0;
        snprintf(err, errlen, "API key cannot be checked: the shared state database is down (%s)", why);
        return 503;
    }
    /* on an open server (no key anywhere) a key is ignored, as without the store */
    if (s->cfg->n_api_keys == 0 && mt_store_key_any(s->store, why, sizeof why) == 0) {
        atomic_store(&s->store_keys, 0);
        return 0;
    }
    snprintf(err, errlen, "invalid API key");
    return 403;
}

/* 0 when no keys are configured or a configured key is presented; else 403 (503 when the
 * shared store that would know the key is down) + message. */
int srv_check_api_key(mt_server *s, req_ctx *c, const json_t *obj, char *err, size_t errlen)
{
    const mt_config *cfg = s->cfg;
    int shared = mt_store_shared(s->store);
    if (cfg->n_api_keys == 0 && !shared) return 0;
    const char *key = srv_presented_key(c, obj);
    int ok = 0;
    for (int i = 0; key && i < cfg->n_api_keys; i++) ok |= srv_key_equal(key, cfg->api_keys[i]);
    if (ok) return 0;
    if (shared) return check_store_key(s, c, key, err, errlen);
    if (!key) {
        snprintf(err, errlen, "missing API key: send \"api_key\" in the body, an "
                 "\"Authorization: Bearer KEY\" or an \"X-API-Key\" header");
        return 403;
    }
    snprintf(err, errlen, "invalid API key");
    return 403;
}

int srv_keys_required(mt_server *s)
{
    if (s->cfg->n_api_keys > 0) return 1;
    if (!mt_store_shared(s->store)) return 0;
    char why[300];
    int any = mt_store_key_any(s->store, why, sizeof why);
    if (any >= 0) atomic_store(&s->store_keys, any);
    else any = atomic_load(&s->store_keys);
    return any != 0;
}

/* /metrics is protected like the API once API keys exist (it names models, traffic and
 * the process): an API key or the metrics key opens it, unless metrics_public. */
int srv_metrics_allowed(mt_server *s, req_ctx *c)
{
    const mt_config *cfg = s->cfg;
    if (cfg->metrics_public) return 1;
    int keyed = srv_keys_required(s);
    if (!keyed && !cfg->metrics_key[0]) return 1;
    char err[200];
    if (keyed && srv_check_api_key(s, c, NULL, err, sizeof err) == 0) return 1;
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
