/* ep_static.c: the web page and LibreTranslate's GET endpoints: /frontend/settings in its
 * shape (charLimit is [limits] max_text_chars, the limit /translate enforces per text, so
 * the web page's counter and the server agree), /spec (web/openapi.json) and the web page
 * at / (index.html, app.js, style.css, favicon.svg). Files are served from a fixed table
 * of names (routes.c lists their paths), so no request path ever reaches the file
 * system: no traversal is possible. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats.h"
#include "store.h"

typedef struct {
    const char *path, *file, *type;
} static_file;

static const static_file FILES[] = {
    {"/", "index.html", "text/html; charset=utf-8"},
    {"/index.html", "index.html", "text/html; charset=utf-8"},
    {"/app.js", "app.js", "text/javascript; charset=utf-8"},
    {"/style.css", "style.css", "text/css; charset=utf-8"},
    {"/spec", "openapi.json", "application/json"},
    /* The page links favicon.svg; /favicon.ico is what browsers ask for by default. */
    {"/favicon.svg", "favicon.svg", "image/svg+xml"},
    {"/favicon.ico", "favicon.svg", "image/svg+xml"},
};
#define N_FILES (sizeof FILES / sizeof FILES[0])

static const static_file *static_of(const char *path)
{
    for (size_t i = 0; i < N_FILES; i++)
        if (strcmp(path, FILES[i].path) == 0) return &FILES[i];
    return NULL;
}

/* Reads the file anew for each request: the page can be edited without a restart. */
static enum MHD_Result respond_file(mt_server *s, req_ctx *c, const static_file *f)
{
    char path[600];
    const char *root = s->cfg->web_root[0] ? s->cfg->web_root : MT_WEB_DIR;
    snprintf(path, sizeof path, "%s/%s", root, f->file);
    FILE *fp = fopen(path, "rb");
    if (!fp) return srv_send_error(c, 404, "the web page is not installed (see --web-root)");
    char *buf = NULL;
    size_t len = 0, cap = 0, n;
    char chunk[8192];
    while ((n = fread(chunk, 1, sizeof chunk, fp)) > 0) {
        if (len + n > cap) {
            size_t nc = cap ? cap * 2 : 16384;
            while (nc < len + n) nc *= 2;
            char *b = realloc(buf, nc);
            if (!b) {
                free(buf);
                fclose(fp);
                return srv_send_error(c, 500, "out of memory");
            }
            buf = b;
            cap = nc;
        }
        memcpy(buf + len, chunk, n);
        len += n;
    }
    int bad = ferror(fp);
    fclose(fp);
    if (bad) {
        free(buf);
        return srv_send_error(c, 500, "cannot read the web page");
    }
    if (!buf && !(buf = malloc(1))) return srv_send_error(c, 500, "out of memory");
    return srv_send_buffer(c, 200, buf, len, f->type, NULL, NULL);
}

static json_t *lang_json(const char *code)
{
    const char *name = mt_lang_name(code);
    return json_pack("{s:s, s:s}", "code", code, "name", name ? name : code);
}

enum MHD_Result srv_ep_static(mt_server *s, req_ctx *c)
{
    const static_file *f = static_of(c->path);
    return f ? respond_file(s, c, f) : srv_send_error(c, 404, "not found");
}

enum MHD_Result srv_ep_settings(mt_server *s, req_ctx *c)
{
    if (!atomic_load(&s->ready)) return srv_send_error(c, 503, "models are loading; retry shortly");
    const mt_langs *langs = mt_service_langs(s->svc);
    const mt_route *r = mt_langs_count(langs) > 0 ? mt_langs_get(langs, 0) : NULL;
    json_t *lang = json_object();
    if (r) {
        /* LibreTranslate's page starts on "auto" when it can detect */
        json_object_set_new(lang, "source", mt_service_can_detect(s->svc) ? json_pack("{s:s, s:s}", "code", "auto", "name",
                                                                   "Auto Detect")
                                                        : lang_json(r->source));
        json_object_set_new(lang, "target", lang_json(r->target));
    }
    json_t *formats = json_array();
    if ((s->spool != NULL)) { /* ".txt,.html,..." as a list */
        const char *p = mt_format_extensions();
        while (*p) {
            size_t n = strcspn(p, ",");
            json_array_append_new(formats, json_stringn(p, n));
            p += n + (p[n] == ',');
        }
    }
    json_t *body = json_pack("{s:b, s:i, s:b, s:i, s:b, s:o, s:b, s:o, s:I}",
                             "apiKeys", srv_keys_required(s),
                             "charLimit", s->cfg->max_text_chars,
                             "filesTranslation", (s->spool != NULL),
                             "frontendTimeout", 500,
                             "keyRequired", srv_keys_required(s),
                             "language", lang,
                             "suggestions", mt_store_has_suggestions(s->store),
                             "supportedFilesFormat", formats,
                             "maxFileBytes", (json_int_t)((s->spool != NULL) ? s->cfg->max_file_bytes : 0));
    return srv_send_json(c, 200, body, NULL, NULL);
}
