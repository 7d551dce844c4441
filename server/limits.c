/* limits.c: per-client limits, as LibreTranslate has them: requests and characters per
 * minute ([limits] requests_per_minute, chars_per_minute; both 0, LibreTranslate's
 * default, means no limiter at all) for POST /translate and /translate_file (a request at
 * upload, then the characters of the text extracted from the file), and a limit of its
 * own for POST /suggest ([limits] suggestions_per_minute: every suggestion is a database
 * row), which also counts as a request of the characters it stores.
 *
 * A client is its API key only when the key is valid: keys are configured and the request
 * presents one of them (anything else was refused 403 before). On an open server a key is
 * just a string anyone can vary, so there the client is always its address (behind a
 * trusted proxy, the forwarded one: conns.c).
 *
 * With the shared store (server.shared_state) the buckets are counted in its database, so
 * N replicas enforce one limit, and a key kept there may carry its own character limit;
 * while the database is down, each replica falls back to its own counters. */
#include "internal.h"

#include <stdio.h>
#include <string.h>

#include "ratelimit.h"
#include "store.h"

int srv_limits_init(mt_server *s, char *err, size_t errlen)
{
    const mt_config *cfg = s->cfg;
    if (cfg->suggest_limit > 0) {
        mt_ratelimit_options o = mt_ratelimit_options_default();
        o.requests_per_minute = cfg->suggest_limit;
        if (!(s->suggest_limit = mt_ratelimit_create(&o, err, errlen))) return -1;
    }
    if (cfg->req_limit <= 0 && cfg->char_limit_per_minute <= 0) return 0;
    mt_ratelimit_options o = mt_ratelimit_options_default();
    o.requests_per_minute = cfg->req_limit;
    o.chars_per_minute = cfg->char_limit_per_minute;
    s->ratelimit = mt_ratelimit_create(&o, err, errlen);
    return s->ratelimit ? 0 : -1;
}

void srv_limits_free(mt_server *s)
{
    mt_ratelimit_free(s->ratelimit);
    s->ratelimit = NULL;
    mt_ratelimit_free(s->suggest_limit);
    s->suggest_limit = NULL;
}

void srv_rate_client(mt_server *s, req_ctx *c, const char *api_key, char *out, size_t cap)
{
    const mt_config *cfg = s->cfg;
    const char *key = api_key && *api_key ? api_key : srv_presented_key(c, NULL);
    int valid = key && c->key_from_store; /* checked against the shared store (auth.c) */
    for (int i = 0; key && i < cfg->n_api_keys; i++) valid |= srv_key_equal(key, cfg->api_keys[i]);
    /* Keys and addresses in separate name spaces: a key cannot pose as an address. */
    snprintf(out, cap, "%s%s", valid ? "key:" : "addr:", valid ? key : c->remote);
}

/* Charges `requests` and `chars` to client, in the shared store when there is one (one
 * limit across replicas), else (or while it is down) in process with rl: MT_RATE_*. */
static int charge_client(mt_server *s, mt_ratelimit *rl, const char *client, int requests, long chars,
                         int req_limit, long char_limit, int *retry)
{
    if (mt_store_shared(s->store) && (req_limit > 0 || char_limit > 0)) {
        char e[300];
        int rc = mt_store_rate_charge(s->store, client, requests, chars, req_limit, char_limit, retry, e,
                                      sizeof e);
        if (rc >= 0) return rc == MT_STORE_RATE_OK ? MT_RATE_OK : rc == MT_STORE_RATE_LIMITED ? MT_RATE_LIMITED
                                                                                             : MT_RATE_TOO_LARGE;
    }
    if (!rl) return MT_RATE_OK;
    return mt_ratelimit_charge(rl, client, requests, chars, retry);
}

/* Charges one request of `chars` to rl's client; 0, or -1 with a 429 queued. A key from
 * the shared store with its own character limit is held to that one. */
static int charge(mt_server *s, mt_ratelimit *rl, req_ctx *c, const char *api_key, long chars,
                  const char *what, int per_minute, enum MHD_Result *ret)
{
    int retry = 1;
    char client[180];
    srv_rate_client(s, c, api_key, client, sizeof client);
    int req_limit = what ? per_minute : s->cfg->req_limit;
    long char_limit = what ? 0 : c->key_chars_limit > 0 ? c->key_chars_limit : s->cfg->char_limit_per_minute;
    if (what) { /* its own bucket, beside the requests' */
        size_t n = strlen(client);
        snprintf(client + n, sizeof client - n, "/%s", what);
    }
    int rc = charge_client(s, rl, client, 1, what ? 0 : chars, req_limit, char_limit, &retry);
    if (rc == MT_RATE_OK) return 0;
    char msg[200], after[24];
    if (rc == MT_RATE_TOO_LARGE)
        snprintf(msg, sizeof msg, "Too many characters: %ld (limit %ld per minute)", chars, char_limit);
    else if (what)
        snprintf(msg, sizeof msg, "Slowdown: too many %s (limit %d per minute); retry after %d s", what,
                 per_minute, retry);
    else
        snprintf(msg, sizeof msg, "Slowdown: too many requests (limit %d requests, %ld characters "
                 "per minute); retry after %d s", req_limit, char_limit, retry);
    snprintf(after, sizeof after, "%d", retry);
    srv_copy_text(c->out.error, sizeof c->out.error, msg);
    *ret = srv_send_json(c, 429, json_pack("{s:s}", "error", msg), MHD_HTTP_HEADER_RETRY_AFTER, after);
    return -1;
}

int srv_rate_check(mt_server *s, req_ctx *c, const char *api_key, long chars,
                      enum MHD_Result *ret)
{
    return charge(s, s->ratelimit, c, api_key, chars, NULL, 0, ret);
}

int srv_suggest_rate_check(mt_server *s, req_ctx *c, const char *api_key, long chars,
                         enum MHD_Result *ret)
{
    if (charge(s, s->suggest_limit, c, api_key, 0, "suggestions", s->cfg->suggest_limit, ret)) return -1;
    return charge(s, s->ratelimit, c, api_key, chars, NULL, 0, ret);
}

int srv_rate_charge(mt_server *s, req_ctx *c, const char *api_key, int requests, long chars, int *retry,
                    long *char_limit)
{
    char client[180];
    srv_rate_client(s, c, api_key, client, sizeof client);
    *char_limit = c->key_chars_limit > 0 ? c->key_chars_limit : s->cfg->char_limit_per_minute;
    *retry = 1;
    if (!s->ratelimit && !mt_store_shared(s->store)) return MT_RATE_OK;
    return charge_client(s, s->ratelimit, client, requests, chars, s->cfg->req_limit, *char_limit, retry);
}

int srv_charge_chars(mt_server *s, const char *client, long long chars, char *err, size_t errlen)
{
    if (!s->ratelimit && !mt_store_shared(s->store)) return 0;
    int retry = 1;
    long n = chars > 0x7fffffffL ? 0x7fffffffL : (long)chars;
    int rc = charge_client(s, s->ratelimit, client, 0, n, s->cfg->req_limit, s->cfg->char_limit_per_minute, &retry);
    if (rc == MT_RATE_OK) return 0;
    if (rc == MT_RATE_TOO_LARGE)
        snprintf(err, errlen, "the file holds %lld characters of text, more than the limit of %ld per "
                 "minute", chars, s->cfg->char_limit_per_minute);
    else
        snprintf(err, errlen, "the file's %lld characters of text are over the limit of %ld per "
                 "minute; retry after %d s", chars, s->cfg->char_limit_per_minute, retry);
    return -1;
}
