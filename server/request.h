/* request.h: request decoding, where every field of a body is parsed, without any model:
 * content type, JSON / form-encoded / multipart decoding (also /detect's, /suggest's and
 * /translate_file's bodies), the native and LibreTranslate field sets of POST /translate,
 * types and limits; the decoding options are read as the table in include/mt/options.h
 * names them. Every failure comes with the HTTP status to answer and a message saying
 * what and where. Pure functions of their inputs (fuzzed by tests/fuzz_request.c).
 *
 * Three steps, so that the API key is checked before field errors are reported:
 *   mt_request_decode()  body -> JSON object (form fields become strings / arrays)
 *   mt_request_api_key() the "api_key" field, if any
 *   mt_request_parse()   object -> mt_request (types, ranges, limits)
 *
 * Thread-safety: no shared state; call from any thread.
 */
#ifndef MT_SERVER_REQUEST_H
#define MT_SERVER_REQUEST_H

#include <jansson.h>
#include <stddef.h>

#include "options.h"

/* MT_FORM_DEEPL: POST /v2/translate, read by ep_deepl.c (not by mt_request_parse) */
typedef enum { MT_FORM_NATIVE = 0, MT_FORM_LIBRE = 1, MT_FORM_DEEPL = 2 } mt_request_form;

typedef struct {
    mt_request_form form; /* native ("text") or LibreTranslate ("q") */
    int text_is_array;    /* the text field was an array: answer with an array */
    int n_texts;
    char **texts;         /* UTF-8, NUL-terminated, lens[i] bytes */
    size_t *lens;
    char *source;         /* requested source language, "auto", or NULL (not given) */
    char *target;         /* requested target language or NULL (not given) */
    int html;             /* "format": "html": texts are HTML fragments */
    mt_decoding decoding; /* the decoding options given (options.h; LibreTranslate's
                           * "alternatives" as n_best) */
    char **target_prefix; /* n_texts entries (NULL: none) or NULL: "target_prefix" (text)
                           * or "target_prefix_ids" (ids "12 7", prefix_ids set) */
    int prefix_ids;
    int show_billed;      /* DeepL form: answer with billed_characters */
    int one_sentence;     /* DeepL's split_sentences=0: each text is one sentence */
    struct mt_glossary *glossary; /* DeepL's glossary_id: its entries, borrowed while the
                                   * request is submitted (the service copies what it
                                   * needs); NULL: none */
} mt_request;

typedef struct {
    int max_texts;       /* texts per request (413 beyond) */
    int max_text_chars;  /* code points per text (413 beyond) */
    int max_beam_size;   /* largest beam_size / n_best (400 beyond) */
} mt_request_limits;

typedef enum {
    MT_CT_JSON = 0,
    MT_CT_FORM = 1,      /* application/x-www-form-urlencoded */
    MT_CT_MULTIPART = 2, /* multipart/form-data */
    MT_CT_UNSUPPORTED = -1
} mt_content_type;

/* Classifies a Content-Type header (NULL: missing). For multipart, copies the boundary
 * into boundary[cap]. Returns MT_CT_UNSUPPORTED with a message for anything else. */
mt_content_type mt_request_content_type(const char *header, char *boundary, size_t cap,
                                        char *err, size_t errlen);

/* Decodes a body to a JSON object (new reference in *out). A form body's fields become
 * strings, repeated fields arrays of strings, and *from_form is set (a form-labelled body
 * that starts with '{' is read as JSON, as `curl -d '{...}'` sends it). Returns 0, or an
 * HTTP status (400, 415) with a message. */
int mt_request_decode(mt_content_type type, const char *boundary, const char *body,
                      size_t len, json_t **out, int *from_form, char *err, size_t errlen);

/* The request's "api_key" field when it is a string, else NULL (borrowed from obj). */
const char *mt_request_api_key(const json_t *obj);

/* Reads the fields of a decoded body. `from_form`: numbers may be given as text.
 * Unknown fields are ignored. Returns 0, or an HTTP status (400, 413) with a message;
 * on success free req with mt_request_clear(). */
int mt_request_parse(const json_t *obj, int from_form, const mt_request_limits *lim,
                     mt_request *req, char *err, size_t errlen);
void mt_request_clear(mt_request *req);

/* One part of a multipart/form-data body: pointers into the body (not NUL-terminated).
 * filename is set (has_filename) for a file upload; content_type when the part has one. */
typedef struct {
    const char *name, *filename, *content_type, *data;
    size_t name_len, filename_len, content_type_len, len;
    int has_filename;
} mt_multipart_part;

/* Called for each part in order; returns 0 to go on, or an HTTP status (with err set). */
typedef int (*mt_multipart_fn)(void *user, const mt_multipart_part *part, char *err, size_t errlen);

/* The one multipart/form-data reader (the /translate form fields and /translate_file
 * uploads): splits body[0..len) on boundary and calls fn for each part. Returns 0, fn's
 * status, or 400 with a message naming the part that is malformed. */
int mt_multipart_parse(const char *boundary, const char *body, size_t len,
                       mt_multipart_fn fn, void *user, char *err, size_t errlen);

#endif
