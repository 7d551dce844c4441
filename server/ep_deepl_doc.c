/* ep_deepl_doc.c: DeepL's document translation on the file-job machinery of
 * /translate_file (ep_files.c, spool/): POST /v2/document (multipart: file, target_lang,
 * source_lang, filename, formality, glossary_id) answers {document_id, document_key};
 * POST /v2/document/ID with document_key answers its status (queued, translating, done,
 * error; seconds_remaining while it runs); POST /v2/document/ID/result the translated
 * file, 503 before it is done (DeepL's clients wait on the status first).
 *
 * The document_key is what proves the caller uploaded it: the spool id (the capability
 * /download_file/ID takes) is never shown to DeepL clients; the table here maps a public
 * random document_id to its random key and to the spool id. An unknown id and a wrong key
 * both answer 404 (no oracle for which ids exist). Entries follow the spool: one whose
 * file expired is dropped when next looked up or when its slot is needed. */
#include "deepl.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include "formats.h"
#include "ratelimit.h"
#include "spool.h"

#define DOC_PREFIX "/v2/document/"

typedef struct {
    int used;
    char id[33];                  /* public: 32 upper-case hex digits, as DeepL's */
    char key[65];                 /* secret: 64 upper-case hex digits */
    char spool[MT_SPOOL_ID_LEN + 1];
    double t_start;               /* mt_now() at upload */
    long long chars;              /* characters of text extracted (-1: not yet) */
} doc;

struct srv_deepl {
    pthread_mutex_t mu;
    int cap;
    doc *docs;
};

int srv_deepl_init(mt_server *s, char *err, size_t errlen)
{
    struct srv_deepl *d = calloc(1, sizeof *d);
    int cap = s->cfg->max_file_jobs > 0 ? 2 * s->cfg->max_file_jobs : 64;
    if (d) d->docs = calloc((size_t)cap, sizeof *d->docs);
    if (!d || !d->docs) {
        free(d);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    d->cap = cap;
    pthread_mutex_init(&d->mu, NULL);
    s->deepl = d;
    return 0;
}

void srv_deepl_free(mt_server *s)
{
    if (!s->deepl) return;
    pthread_mutex_destroy(&s->deepl->mu);
    free(s->deepl->docs);
    free(s->deepl);
    s->deepl = NULL;
}

static int random_hex(char *out, size_t bytes)
{
    unsigned char b[32];
    if (bytes > sizeof b || getrandom(b, bytes, 0) != (ssize_t)bytes) return -1;
    for (size_t i = 0; i < bytes; i++) snprintf(out + 2 * i, 3, "%02X", b[i]);
    return 0;
}

/* Remembers a document (d->mu held). A slot whose spool entry is gone is reused, else
 * the oldest. */
static void doc_add_locked(mt_server *s, const char *spool_id, const char *id, const char *key)
{
    struct srv_deepl *d = s->deepl;
    doc *slot = NULL;
    for (int i = 0; i < d->cap && !slot; i++) {
        mt_spool_entry e;
        if (!d->docs[i].used || srv_files_lookup(s, d->docs[i].spool, &e)) slot = &d->docs[i];
    }
    for (int i = 0; i < d->cap && !slot; i++)
        if (!slot || d->docs[i].t_start < slot->t_start) slot = &d->docs[i];
    if (!slot) slot = &d->docs[0];
    slot->used = 1;
    snprintf(slot->id, sizeof slot->id, "%s", id);
    snprintf(slot->key, sizeof slot->key, "%s", key);
    snprintf(slot->spool, sizeof slot->spool, "%s", spool_id);
    slot->t_start = mt_now();
    slot->chars = -1;
}

void srv_deepl_doc_chars(mt_server *s, const char *spool_id, long long chars)
{
    struct srv_deepl *d = s->deepl;
    if (s->jobs) srv_jobs_note_chars(s, spool_id, chars); /* for whichever replica is asked */
    if (!d || s->jobs) return;
    pthread_mutex_lock(&d->mu);
    for (int i = 0; i < d->cap; i++)
        if (d->docs[i].used && strcmp(d->docs[i].spool, spool_id) == 0) d->docs[i].chars = chars;
    pthread_mutex_unlock(&d->mu);
}

/* The spool id, upload time and characters of document id when key is its key; 0 or -1. */
static int doc_find(mt_server *s, const char *id, const char *key, char *spool_id, double *t_start, long long *chars)
{
    struct srv_deepl *d = s->deepl;
    if (s->jobs) return key ? srv_jobs_find_document(s, id, key, spool_id, t_start, chars) : -1;
    int found = -1;
    pthread_mutex_lock(&d->mu);
    for (int i = 0; i < d->cap && found < 0; i++) {
        doc *x = &d->docs[i];
        if (!x->used || strcasecmp(x->id, id) != 0) continue;
        if (key && srv_key_equal(x->key, key)) { /* keys compared in constant time */
            memcpy(spool_id, x->spool, sizeof x->spool);
            *t_start = x->t_start;
            *chars = x->chars;
            found = 0;
        }
        break;
    }
    pthread_mutex_unlock(&d->mu);
    return found;
}

/* ---------------------------------------------------------------- POST /v2/document */

static enum MHD_Result fail(req_ctx *c, json_t *fields, int status, const char *msg)
{
    json_decref(fields);
    return srv_deepl_error(c, status, msg);
}

enum MHD_Result srv_ep_deepl_document(mt_server *s, req_ctx *c)
{
    char err[512], key[256];
    if (c->in.ctype != MT_CT_MULTIPART)
        return srv_deepl_error(c, 400, "Send the document as multipart/form-data (fields file, target_lang)");
    srv_upload u = {.max_field = 4096, .deepl = 1}; /* every text field, DeepL's words */
    int st = srv_upload_read(c, &u, err, sizeof err);
    if (!st) st = srv_deepl_auth(s, c, u.fields, key, sizeof key, err, sizeof err);
    if (st) return fail(c, u.fields, st, err);
    if (!s->spool) return fail(c, u.fields, 400, "Document translation is disabled on this server.");
    if (!u.n_files) return fail(c, u.fields, 400, "Parameter 'file' not specified.");
    const char *target = json_string_value(json_object_get(u.fields, "target_lang"));
    const char *source = json_string_value(json_object_get(u.fields, "source_lang"));
    const char *formality = json_string_value(json_object_get(u.fields, "formality"));
    const char *glossary = json_string_value(json_object_get(u.fields, "glossary_id"));
    if (!target || !*target) return fail(c, u.fields, 400, "Parameter 'target_lang' not specified.");
    char tgt[40], src[40] = "auto";
    if (srv_deepl_lang(s->svc, target, 1, tgt, sizeof tgt))
        return fail(c, u.fields, 400, "Value for 'target_lang' not supported.");
    if (source && *source && srv_deepl_lang(s->svc, source, 0, src, sizeof src))
        return fail(c, u.fields, 400, "Value for 'source_lang' not supported.");
    if (formality && (strcmp(formality, "more") == 0 || strcmp(formality, "less") == 0))
        return fail(c, u.fields, 400, "'formality' is not supported for given 'target_lang'.");
    if (glossary && *glossary) return fail(c, u.fields, 404, "Glossary not found.");
    if (u.file.len > (size_t)s->cfg->max_file_bytes) {
        snprintf(err, sizeof err, "Document too large: %zu bytes (limit %ld)", u.file.len, s->cfg->max_file_bytes);
        return fail(c, u.fields, 413, err);
    }
    const char *fname = json_string_value(json_object_get(u.fields, "filename"));
    char name[1024] = "document";
    if (fname && *fname) snprintf(name, sizeof name, "%s", fname);
    else if (u.file.has_filename && u.file.filename_len > 0)
        snprintf(name, sizeof name, "%.*s", (int)(u.file.filename_len < 1023 ? u.file.filename_len : 1023),
                 u.file.filename);
    mt_file_format fmt = mt_format_detect(name, (const unsigned char *)u.file.data, u.file.len);
    if (fmt == MT_FILE_UNKNOWN) {
        snprintf(err, sizeof err, "Invalid file data: unsupported file type; send one of %s", mt_format_extensions());
        return fail(c, u.fields, 400, err);
    }
    char client[160];
    srv_rate_client(s, c, key, client, sizeof client);
    int retry = 1;
    long limit;
    if (srv_rate_charge(s, c, key, 1, 0, &retry, &limit) != MT_RATE_OK) {
        char after[24];
        snprintf(err, sizeof err, "Too many requests: the limit is %d per minute; retry after %d s", s->cfg->req_limit, retry);
        snprintf(after, sizeof after, "%d", retry);
        json_decref(u.fields);
        srv_copy_text(c->out.error, sizeof c->out.error, err);
        return srv_send_json(c, 429, json_pack("{s:s}", "message", err), MHD_HTTP_HEADER_RETRY_AFTER, after);
    }
    int route = srv_files_route(s, fmt, u.file.data, u.file.len, src, tgt, err, sizeof err);
    if (route < 0) return fail(c, u.fields, 400, err);
    c->out.model_name = mt_service_model_info(s->svc, mt_langs_get(mt_service_langs(s->svc), route)->model)->name;
    double wait = 0;
    char spool_id[MT_SPOOL_ID_LEN + 1], id[33], dkey[65];
    if (random_hex(id, 16) || random_hex(dkey, 32)) return fail(c, u.fields, 500, "no random bytes for the document key");
    if (s->jobs) { /* in the shared queue, with its id and key: every replica finds it */
        st = srv_jobs_submit_document(s, client, name, u.file.data, u.file.len, fmt, route, id, dkey, spool_id, &wait,
                                      err, sizeof err);
    } else {
        /* The table's lock is held until the document is in it: the job's thread reports
         * the characters it extracted (srv_deepl_doc_chars) only then. */
        pthread_mutex_lock(&s->deepl->mu);
        st = srv_files_submit(s, client, name, u.file.data, u.file.len, fmt, route, spool_id, &wait, err, sizeof err);
        if (!st) doc_add_locked(s, spool_id, id, dkey);
        pthread_mutex_unlock(&s->deepl->mu);
    }
    json_decref(u.fields);
    if (st == 429 || st == 503) {
        char after[32];
        snprintf(after, sizeof after, "%ld", wait > 1 ? (long)(wait + 0.999) : 1L);
        srv_copy_text(c->out.error, sizeof c->out.error, err);
        return srv_send_json(c, st, json_pack("{s:s}", "message", err), MHD_HTTP_HEADER_RETRY_AFTER, after);
    }
    if (st) return srv_deepl_error(c, st, err);
    return srv_send_json(c, 200, json_pack("{s:s, s:s}", "document_id", id, "document_key", dkey), NULL, NULL);
}

/* ---------------------------------------------------------------- /v2/document/ID[/result] */

enum MHD_Result srv_ep_deepl_document_id(mt_server *s, req_ctx *c)
{
    char err[512], key[256];
    json_t *obj;
    int from_form;
    int st = srv_deepl_begin(s, c, &obj, &from_form, key, sizeof key, err, sizeof err);
    if (st) return srv_deepl_error(c, st, err);
    const char *rest = c->path + strlen(DOC_PREFIX);
    size_t n = strcspn(rest, "/");
    int result = strcmp(rest + n, "/result") == 0;
    if (n == 0 || n > 32 || (rest[n] && !result)) {
        json_decref(obj);
        return srv_deepl_error(c, 404, "Not found: use POST /v2/document/ID or /v2/document/ID/result");
    }
    char id[33];
    snprintf(id, sizeof id, "%.*s", (int)n, rest);
    const char *dkey = json_string_value(json_object_get(obj, "document_key"));
    if (!dkey) dkey = MHD_lookup_connection_value(c->conn, MHD_GET_ARGUMENT_KIND, "document_key");
    char dk[80];
    snprintf(dk, sizeof dk, "%s", dkey ? dkey : "");
    json_decref(obj);
    if (!dk[0]) return srv_deepl_error(c, 400, "Parameter 'document_key' not specified.");
    char spool_id[MT_SPOOL_ID_LEN + 1];
    double t_start = 0;
    long long chars = -1;
    mt_spool_entry e;
    if (!s->spool || doc_find(s, id, dk, spool_id, &t_start, &chars) || srv_files_lookup(s, spool_id, &e))
        return srv_deepl_error(c, 404, "Document not found.");
    if (!result) {
        json_t *body = json_pack("{s:s}", "document_id", id);
        if (!body) return srv_deepl_error(c, 500, "out of memory");
        if (e.state == MT_SPOOL_RUNNING) {
            int started = e.total > 0 || e.done > 0;
            json_object_set_new(body, "status", json_string(started ? "translating" : "queued"));
            if (e.done > 0 && e.total > e.done) {
                double left = (mt_now() - t_start) * (double)(e.total - e.done) / (double)e.done;
                json_object_set_new(body, "seconds_remaining", json_integer((json_int_t)ceil(left)));
            }
        } else if (e.state == MT_SPOOL_FAILED) {
            json_object_set_new(body, "status", json_string("error"));
            json_object_set_new(body, "error_message", json_string(e.error));
        } else {
            json_object_set_new(body, "status", json_string("done"));
        }
        if (chars >= 0) json_object_set_new(body, "billed_characters", json_integer((json_int_t)chars));
        return srv_send_json(c, 200, body, NULL, NULL);
    }
    if (e.state == MT_SPOOL_RUNNING) return srv_deepl_error(c, 503, "Document translation is not done yet.");
    if (e.state == MT_SPOOL_FAILED) {
        snprintf(err, sizeof err, "Document translation failed: %s", e.error);
        return srv_deepl_error(c, 400, err);
    }
    char *buf;
    size_t size;
    if (srv_files_read(s, spool_id, &buf, &size, err, sizeof err)) return srv_deepl_error(c, 404, "Document not found.");
    return srv_send_file(c, buf, size, e.name, e.mime);
}
