/* url.c: see url.h. */
#include "url.h"

#include <stdio.h>
#include <string.h>

void mt_url_redact(const char *url, char *out, size_t cap)
{
    if (!cap) return;
    snprintf(out, cap, "%s", url ? url : "");
    /* scheme://user:PASSWORD@host...: the user info's password */
    char *scheme = strstr(out, "://");
    if (scheme) {
        char *user = scheme + 3, *at = strchr(user, '@'), *slash = strchr(user, '/');
        char *colon = at ? memchr(user, ':', (size_t)(at - user)) : NULL;
        if (at && (!slash || at < slash) && colon) {
            char rest[1024];
            snprintf(rest, sizeof rest, "%s", at);
            snprintf(colon, cap - (size_t)(colon - out), ":***%s", rest);
        }
    }
    /* password=VALUE in a query string or a conninfo */
    for (char *p = strstr(out, "password="); p; p = strstr(p + 1, "password=")) {
        char *v = p + 9, *end = v + strcspn(v, "& ");
        char rest[1024];
        snprintf(rest, sizeof rest, "%s", end);
        snprintf(v, cap - (size_t)(v - out), "***%s", rest);
    }
}
