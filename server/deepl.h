/* deepl.h: DeepL's API v2 (ep_deepl.c, ep_deepl_doc.c), private to server/: its
 * endpoints as the route table names them, the document table's life cycle, and what the
 * two files share (DeepL's answers and its API key). DeepL's clients (deepl-node,
 * deepl-python, Weblate's machinery) talk to mt-server with a server URL of ours.
 *
 * Thread-safety: the handlers run on libmicrohttpd's threads like every endpoint; the
 * document table has a mutex of its own.
 */
#ifndef MT_SERVER_DEEPL_H
#define MT_SERVER_DEEPL_H

#include "internal.h"

/* The endpoints (routes.c). */
enum MHD_Result srv_ep_deepl_translate(mt_server *s, req_ctx *c);
enum MHD_Result srv_ep_deepl_languages(mt_server *s, req_ctx *c);
enum MHD_Result srv_ep_deepl_usage(mt_server *s, req_ctx *c);
enum MHD_Result srv_ep_deepl_document(mt_server *s, req_ctx *c);      /* POST /v2/document */
enum MHD_Result srv_ep_deepl_document_id(mt_server *s, req_ctx *c);   /* /v2/document/ID[/result] */
/* ep_deepl_glossary.c: /v2/glossary-language-pairs, /v2/glossaries[/ID[/entries]] */
enum MHD_Result srv_ep_deepl_glossary(mt_server *s, req_ctx *c);
/* The glossaries (the shared store, else SQLite); 0, or -1 with a message. */
int srv_glossaries_init(mt_server *s, char *err, size_t errlen);
void srv_glossaries_free(mt_server *s);
/* Glossary id of API key `key` for a translation from source_lang to target_lang (DeepL
 * or route codes): 0 with *out (a parsed copy that may be shared: give it back with
 * srv_deepl_glossary_release once the translation is submitted), or the status to answer
 * (404 unknown, 400 another language pair, 503 / 500 the store) with a message. */
int srv_deepl_glossary_load(mt_server *s, const char *key, const char *id, const char *source_lang,
                            const char *target_lang, struct mt_glossary **out, char *err, size_t errlen);
void srv_deepl_glossary_release(mt_server *s, struct mt_glossary *g);

/* render.c: a finished POST /v2/translate as {"translations": [...]}; NULL out of memory. */
json_t *srv_deepl_render(mt_server *s, req_ctx *c);

/* The document table (document ids to keys); 0, or -1 with a message. */
int srv_deepl_init(mt_server *s, char *err, size_t errlen);
void srv_deepl_free(mt_server *s);
/* ep_files.c: the file job with spool id `spool_id` extracted `chars` characters of text
 * (a DeepL document's billed_characters; other jobs are not in the table). */
void srv_deepl_doc_chars(mt_server *s, const char *spool_id, long long chars);

/* ---- shared by ep_deepl.c and ep_deepl_doc.c ---- */

/* {"message": msg} with status (DeepL's error shape). */
enum MHD_Result srv_deepl_error(req_ctx *c, int status, const char *msg);
/* Decodes the body (an empty one is {}) into *obj and checks the DeepL API key
 * (Authorization: DeepL-Auth-Key KEY, else the deprecated auth_key field of the body or
 * query) against the server's API keys; the key presented is copied to key[cap] ("" for
 * none). 0, or the status to answer with err (and *obj NULL). */
int srv_deepl_begin(mt_server *s, req_ctx *c, json_t **obj, int *from_form, char *key, size_t cap, char *err,
                    size_t errlen);
/* The DeepL API key check alone, with obj the decoded parameters (multipart: its fields). */
int srv_deepl_auth(mt_server *s, req_ctx *c, const json_t *obj, char *key, size_t cap, char *err, size_t errlen);
/* A DeepL language code ("EN-GB", "de", "PT-br") as one of our route codes among the
 * routes' sources (want_target 0) or targets (1), into out[cap]; 0, or -1 when none. */
int srv_deepl_lang(const mt_service *svc, const char *code, int want_target, char *out, size_t cap);
/* Our code as DeepL's upper-case one ("deu" -> "DE", "pt-BR" -> "PT-BR") into out. */
void srv_deepl_code(const char *ours, char *out, size_t cap);

#endif
