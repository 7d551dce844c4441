/* lt_frontend.c: GET /frontend/settings in LibreTranslate's shape (issue 14). The
 * charLimit it reports is [limits] max_text_chars, the limit /translate enforces per
 * text, so the web page's counter and the server agree. Routed from handler.c as an
 * "other" endpoint (the metrics count it under "other"). */
#include "internal.h"

#include <string.h>

int srv_lt_is_get_path(const char *path)
{
    return strcmp(path, "/frontend/settings") == 0;
}

static json_t *lang_json(const char *code)
{
    const char *name = mt_lang_name(code);
    return json_pack("{s:s, s:s}", "code", code, "name", name ? name : code);
}

enum MHD_Result srv_lt_respond_get(mt_server *s, req_ctx *c)
{
    if (strcmp(c->path, "/frontend/settings") != 0) return srv_send_error(c, 404, "not found");
    if (!atomic_load(&s->ready)) return srv_send_error(c, 503, "models are loading; retry shortly");
    const mt_route *r = mt_langs_count(s->langs) > 0 ? mt_langs_get(s->langs, 0) : NULL;
    json_t *lang = json_object();
    if (r) {
        json_object_set_new(lang, "source", lang_json(r->source));
        json_object_set_new(lang, "target", lang_json(r->target));
    }
    json_t *body = json_pack("{s:b, s:i, s:b, s:i, s:b, s:o, s:b, s:[]}",
                             "apiKeys", s->cfg->n_api_keys > 0,
                             "charLimit", s->cfg->max_text_chars,
                             "filesTranslation", 0, /* /translate_file is not wired yet */
                             "frontendTimeout", 500,
                             "keyRequired", s->cfg->n_api_keys > 0,
                             "language", lang,
                             "suggestions", 0, /* /suggest is not wired yet */
                             "supportedFilesFormat");
    return srv_send_json(c, 200, body, NULL, NULL);
}
