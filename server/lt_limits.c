/* lt_limits.c: LibreTranslate's per-client limits for POST /translate (issue 14):
 * requests and characters per minute ([limits] requests_per_minute, chars_per_minute;
 * both 0, LibreTranslate's default, means no limiter at all). A client is its API key
 * when it sends one, else its address, as LibreTranslate keys its limits. */
#include "internal.h"

#include <stdio.h>

#include "ratelimit.h"

int srv_lt_init(mt_server *s, char *err, size_t errlen)
{
    const mt_config *cfg = s->cfg;
    if (srv_lt_files_init(s, err, errlen) || srv_lt_suggest_init(s, err, errlen)) return -1;
    if (cfg->req_limit <= 0 && cfg->char_limit_per_minute <= 0) return 0;
    mt_ratelimit_options o = mt_ratelimit_options_default();
    o.requests_per_minute = cfg->req_limit;
    o.chars_per_minute = cfg->char_limit_per_minute;
    s->ratelimit = mt_ratelimit_create(&o, err, errlen);
    return s->ratelimit ? 0 : -1;
}

void srv_lt_free(mt_server *s)
{
    mt_ratelimit_free(s->ratelimit);
    s->ratelimit = NULL;
    srv_lt_files_free(s);
    srv_lt_detect_free(s);
}

int srv_lt_rate_check(mt_server *s, req_ctx *c, const char *api_key, long chars,
                      enum MHD_Result *ret)
{
    if (!s->ratelimit) return 0;
    int retry = 1;
    char client[160];
    /* Keys and addresses in separate name spaces: a key cannot pose as an address. */
    snprintf(client, sizeof client, "%s%s", api_key && *api_key ? "key:" : "addr:",
             api_key && *api_key ? api_key : c->remote);
    int rc = mt_ratelimit_check(s->ratelimit, client, chars, &retry);
    if (rc == MT_RATE_OK) return 0;
    char msg[200], after[24];
    if (rc == MT_RATE_TOO_LARGE)
        snprintf(msg, sizeof msg, "Too many characters: %ld (limit %ld per minute)", chars,
                 s->cfg->char_limit_per_minute);
    else
        snprintf(msg, sizeof msg, "Slowdown: too many requests (limit %d requests, %ld characters "
                 "per minute); retry after %d s", s->cfg->req_limit, s->cfg->char_limit_per_minute,
                 retry);
    snprintf(after, sizeof after, "%d", retry);
    srv_copy_text(c->error, sizeof c->error, msg);
    *ret = srv_send_json(c, 429, json_pack("{s:s}", "error", msg), MHD_HTTP_HEADER_RETRY_AFTER, after);
    return -1;
}
