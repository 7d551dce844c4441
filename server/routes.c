/* routes.c: the route table. Every endpoint is one row: its methods, its path (or path
 * prefix), the handler that answers once its body is in, who may call it, how much body
 * it reads, and its metrics label. handler.c picks a request's row here; the 404 text,
 * the 405 text, the Allow header and the CORS preflight's methods are derived from it. */
#include "deepl.h"
#include "internal.h"

#include <stdio.h>
#include <string.h>

static const srv_route ROUTES[] = {
    {SRV_POST, "/translate", 0, srv_ep_translate, SRV_AUTH_KEY, SRV_BODY_REQUEST, MT_EP_TRANSLATE},
    /* LibreTranslate clients POST /languages too (the body is ignored) */
    {SRV_GET | SRV_POST, "/languages", 0, srv_ep_languages, SRV_AUTH_NONE, SRV_BODY_NONE, MT_EP_LANGUAGES},
    {SRV_GET, "/health", 0, srv_ep_health, SRV_AUTH_NONE, SRV_BODY_NONE, MT_EP_HEALTH},
    {SRV_GET, "/health/live", 0, srv_ep_health, SRV_AUTH_NONE, SRV_BODY_NONE, MT_EP_HEALTH},
    {SRV_GET, "/health/ready", 0, srv_ep_health, SRV_AUTH_NONE, SRV_BODY_NONE, MT_EP_HEALTH},
    {SRV_GET, "/metrics", 0, srv_ep_metrics, SRV_AUTH_METRICS, SRV_BODY_NONE, MT_EP_METRICS},
    {SRV_POST, "/detect", 0, srv_ep_detect, SRV_AUTH_KEY, SRV_BODY_REQUEST, MT_EP_OTHER},
    {SRV_POST, "/suggest", 0, srv_ep_suggest, SRV_AUTH_KEY, SRV_BODY_REQUEST, MT_EP_OTHER},
    {SRV_POST, "/translate_file", 0, srv_ep_translate_file, SRV_AUTH_KEY, SRV_BODY_FILE, MT_EP_OTHER},
    {SRV_GET, "/download_file/", 1, srv_ep_download, SRV_AUTH_NONE, SRV_BODY_NONE, MT_EP_OTHER},
    /* DeepL's API v2 (ep_deepl.c, ep_deepl_doc.c): its clients take our URL as serverUrl */
    {SRV_POST, "/v2/translate", 0, srv_ep_deepl_translate, SRV_AUTH_KEY, SRV_BODY_REQUEST, MT_EP_TRANSLATE},
    {SRV_GET | SRV_POST, "/v2/languages", 0, srv_ep_deepl_languages, SRV_AUTH_KEY, SRV_BODY_REQUEST, MT_EP_LANGUAGES},
    {SRV_GET | SRV_POST, "/v2/usage", 0, srv_ep_deepl_usage, SRV_AUTH_KEY, SRV_BODY_REQUEST, MT_EP_OTHER},
    {SRV_POST, "/v2/document", 0, srv_ep_deepl_document, SRV_AUTH_KEY, SRV_BODY_FILE, MT_EP_OTHER},
    {SRV_GET | SRV_POST, "/v2/document/", 1, srv_ep_deepl_document_id, SRV_AUTH_KEY, SRV_BODY_REQUEST, MT_EP_OTHER},
    {SRV_GET, "/v2/glossary-language-pairs", 0, srv_ep_deepl_glossary, SRV_AUTH_KEY, SRV_BODY_REQUEST, MT_EP_OTHER},
    {SRV_GET | SRV_POST, "/v2/glossaries", 0, srv_ep_deepl_glossary, SRV_AUTH_KEY, SRV_BODY_REQUEST, MT_EP_OTHER},
    {SRV_GET | SRV_DELETE, "/v2/glossaries/", 1, srv_ep_deepl_glossary, SRV_AUTH_KEY, SRV_BODY_REQUEST, MT_EP_OTHER},
    {SRV_GET | SRV_POST, "/v3/glossaries", 0, srv_ep_deepl_glossary, SRV_AUTH_KEY, SRV_BODY_REQUEST, MT_EP_OTHER},
    {SRV_GET | SRV_DELETE, "/v3/glossaries/", 1, srv_ep_deepl_glossary, SRV_AUTH_KEY, SRV_BODY_REQUEST, MT_EP_OTHER},
    {SRV_GET, "/frontend/settings", 0, srv_ep_settings, SRV_AUTH_NONE, SRV_BODY_NONE, MT_EP_OTHER},
    {SRV_GET, "/spec", 0, srv_ep_static, SRV_AUTH_NONE, SRV_BODY_NONE, MT_EP_OTHER},
    {SRV_GET, "/", 0, srv_ep_static, SRV_AUTH_NONE, SRV_BODY_NONE, MT_EP_OTHER},
    {SRV_GET, "/index.html", 0, srv_ep_static, SRV_AUTH_NONE, SRV_BODY_NONE, MT_EP_OTHER},
    {SRV_GET, "/app.js", 0, srv_ep_static, SRV_AUTH_NONE, SRV_BODY_NONE, MT_EP_OTHER},
    {SRV_GET, "/style.css", 0, srv_ep_static, SRV_AUTH_NONE, SRV_BODY_NONE, MT_EP_OTHER},
    /* the page links favicon.svg; /favicon.ico is what browsers ask for by default */
    {SRV_GET, "/favicon.svg", 0, srv_ep_static, SRV_AUTH_NONE, SRV_BODY_NONE, MT_EP_OTHER},
    {SRV_GET, "/favicon.ico", 0, srv_ep_static, SRV_AUTH_NONE, SRV_BODY_NONE, MT_EP_OTHER},
};
enum { N_ROUTES = sizeof ROUTES / sizeof ROUTES[0] };

const srv_route *srv_route_find(const char *path)
{
    for (int i = 0; i < N_ROUTES; i++) {
        const srv_route *r = &ROUTES[i];
        if (r->prefix ? strncmp(path, r->path, strlen(r->path)) == 0 : strcmp(path, r->path) == 0) return r;
    }
    return NULL;
}

unsigned srv_method_bit(const char *method)
{
    if (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0) return SRV_GET;
    if (strcmp(method, "POST") == 0) return SRV_POST;
    if (strcmp(method, "DELETE") == 0) return SRV_DELETE;
    return 0;
}

const char *srv_route_allow(const srv_route *r)
{
    if (!r) return "GET, HEAD";
    if (r->methods & SRV_DELETE) return "GET, HEAD, DELETE, OPTIONS";
    return r->methods == SRV_POST ? "POST, OPTIONS" : r->methods & SRV_POST ? "GET, HEAD, POST, OPTIONS"
                                                                            : "GET, HEAD, OPTIONS";
}

void srv_route_not_allowed(const srv_route *r, char *out, size_t cap)
{
    snprintf(out, cap, "method not allowed: use %s %s%s", r->methods & SRV_GET ? "GET" : "POST", r->path,
             r->prefix ? "ID" : "");
}

void srv_route_not_found(const char *path, char *out, size_t cap)
{
    size_t n = (size_t)snprintf(out, cap, "not found: %.150s (endpoints:", path);
    for (int i = 0; i < N_ROUTES && n < cap; i++) {
        const srv_route *r = &ROUTES[i];
        if (r->handler == srv_ep_static && strcmp(r->path, "/") != 0) continue; /* the page: once */
        const char *m = r->methods == (SRV_GET | SRV_POST) ? "GET" : r->methods & SRV_POST ? "POST" : "GET";
        n += (size_t)snprintf(out + n, cap - n, "%s %s %s%s", i ? "," : "", m, r->path, r->prefix ? "ID" : "");
    }
    if (n < cap) snprintf(out + n, cap - n, ")");
}
