/* ep_languages.c: GET (and LibreTranslate's POST) /languages: every language served as
 * a source or a target with the targets it translates into (built once at load from
 * the service's routes). */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

enum MHD_Result srv_ep_languages(mt_server *s, req_ctx *c)
{
    if (!atomic_load(&s->ready)) return srv_send_error(c, 503, "models are loading; retry shortly");
    char *text = strdup(s->languages_json);
    if (!text) return srv_send_error(c, 500, "out of memory");
    return srv_send_buffer(c, 200, text, strlen(text), "application/json", NULL, NULL);
}
