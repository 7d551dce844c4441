/* ep_deepl_glossary.c: DeepL's glossaries (API v2), kept per API key
 * (include/mt/store_glossaries.h) and enforced by the translation service
 * (include/mt/glossary.h):
 *
 *   GET  /v2/glossary-language-pairs  {"supported_languages": [{source_lang, target_lang}]}:
 *        every language pair a model serves, in DeepL's lower-case codes;
 *   POST /v2/glossaries               name, source_lang, target_lang, entries,
 *        entries_format tsv (default) | csv, as a form or JSON: 201 with the glossary
 *        (glossary_id, name, ready, source_lang, target_lang, creation_time, entry_count);
 *        entries DeepL would refuse: 400 naming the line; too many entries or bytes: 413;
 *        the key's glossary limit reached: 456;
 *   GET  /v2/glossaries               {"glossaries": [...]}, the key's, oldest first;
 *   GET  /v2/glossaries/ID            the glossary; unknown (or another key's): 404;
 *   GET  /v2/glossaries/ID/entries    its entries as TSV (Accept: text/tab-separated-values,
 *        none, or a wildcard; any other: 415);
 *   DELETE /v2/glossaries/ID          204.
 *
 * API v3 (multilingual glossaries, as deepl-node's DeepLClient calls them), over the same
 * glossaries, each holding one dictionary (one language pair) here:
 *   POST /v3/glossaries                name, dictionaries [{source_lang, target_lang,
 *        entries, entries_format}] (JSON, or the form's "dictionaries[0].entries"...):
 *        201 {glossary_id, name, dictionaries: [{source_lang, target_lang, entry_count}],
 *        creation_time}; more than one dictionary: 400;
 *   GET  /v3/glossaries[/ID]; GET /v3/glossaries/ID/entries?source_lang=&target_lang=
 *        {"dictionaries": [{source_lang, target_lang, entries (TSV), entries_format}]};
 *   DELETE /v3/glossaries/ID           204. Editing (PATCH, PUT and DELETE of dictionaries)
 *        is not offered: a glossary is replaced by creating another.
 *
 * /v2/translate with glossary_id (ep_deepl.c) loads the key's glossary here, checks its
 * languages against the request's and hands its entries to the service. Glossaries live
 * in the shared PostgreSQL store where the server has one (every replica sees them), else
 * in the SQLite file [server] suggestions_db, else in memory until the server stops. The
 * owner is the API key presented; on a server without keys every client is one owner. */
#include "deepl.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "glossary.h"
#include "store_glossaries.h"
#include "utf8.h"

/* Parsed glossaries kept for translations: a 100,000-entry glossary costs about 0.25 s to
 * read from the store and index, a translation with it 0.005 s. A glossary never changes
 * after it is made (ids are random and never reused), so a copy stays right as long as the
 * glossary exists, which every translation checks in the store (a row, not its entries):
 * one deleted on another replica is not used here either. Entries are counted, and the
 * least recently used glossaries not in use go beyond CACHE_ENTRIES. */
enum { CACHE_SLOTS = 16, CACHE_ENTRIES = 200000 };

typedef struct {
    char id[40], owner[256];
    mt_glossary *g;   /* NULL: a free slot */
    int refs;         /* translations being submitted with it */
    unsigned long used;
} cached;

struct srv_glossaries {
    mt_glossaries *store;
    mt_glossaries_limits lim; /* the configured ones, also checked before parsing */
    pthread_mutex_t mu;
    cached slot[CACHE_SLOTS];
    unsigned long tick;
};

int srv_glossaries_init(mt_server *s, char *err, size_t errlen)
{
    struct srv_glossaries *gl = calloc(1, sizeof *gl);
    if (!gl) return snprintf(err, errlen, "glossaries: out of memory"), -1;
    mt_store *shared = mt_store_shared(s->store) ? s->store : NULL;
    const char *file = s->cfg->glossary_db[0] ? s->cfg->glossary_db : s->cfg->suggestions_db;
    gl->lim = mt_glossaries_limits_default();
    if (s->cfg->glossary_max_entries > 0) gl->lim.max_entries = s->cfg->glossary_max_entries;
    if (s->cfg->glossary_max_bytes > 0) gl->lim.max_bytes = (size_t)s->cfg->glossary_max_bytes;
    if (s->cfg->glossaries_per_key > 0) gl->lim.max_per_owner = s->cfg->glossaries_per_key;
    if (!(gl->store = mt_glossaries_open(shared, file, &gl->lim, err, errlen))) {
        free(gl);
        return -1;
    }
    pthread_mutex_init(&gl->mu, NULL);
    s->glossaries = gl;
    return 0;
}

void srv_glossaries_free(mt_server *s)
{
    struct srv_glossaries *gl = s->glossaries;
    if (!gl) return;
    for (int i = 0; i < CACHE_SLOTS; i++) mt_glossary_free(gl->slot[i].g);
    mt_glossaries_close(gl->store);
    pthread_mutex_destroy(&gl->mu);
    free(gl);
    s->glossaries = NULL;
}

/* The cached copy of owner's glossary id, taken (refs + 1), or NULL. */
static mt_glossary *cache_take(struct srv_glossaries *gl, const char *owner, const char *id)
{
    mt_glossary *g = NULL;
    pthread_mutex_lock(&gl->mu);
    for (int i = 0; i < CACHE_SLOTS && !g; i++) {
        cached *c = &gl->slot[i];
        if (c->g && !strcasecmp(c->id, id) && !strcmp(c->owner, owner)) {
            c->refs++;
            c->used = ++gl->tick;
            g = c->g;
        }
    }
    pthread_mutex_unlock(&gl->mu);
    return g;
}

/* Keeps g (taken once) when it fits, dropping the least recently used idle ones; 0, or -1
 * when it is not kept (the caller's to free). */
static int cache_put(struct srv_glossaries *gl, const char *owner, const char *id, mt_glossary *g)
{
    if (strlen(owner) >= sizeof gl->slot[0].owner || strlen(id) >= sizeof gl->slot[0].id) return -1;
    pthread_mutex_lock(&gl->mu);
    for (;;) {
        long total = mt_glossary_count(g);
        int free_slot = -1, lru = -1;
        for (int i = 0; i < CACHE_SLOTS; i++) {
            cached *c = &gl->slot[i];
            if (!c->g) {
                if (free_slot < 0) free_slot = i;
                continue;
            }
            total += mt_glossary_count(c->g);
            if (!c->refs && (lru < 0 || c->used < gl->slot[lru].used)) lru = i;
        }
        if (free_slot >= 0 && total <= CACHE_ENTRIES) {
            cached *c = &gl->slot[free_slot];
            snprintf(c->id, sizeof c->id, "%s", id);
            snprintf(c->owner, sizeof c->owner, "%s", owner);
            c->g = g;
            c->refs = 1;
            c->used = ++gl->tick;
            pthread_mutex_unlock(&gl->mu);
            return 0;
        }
        if (lru < 0) break; /* everything in use: not kept */
        mt_glossary_free(gl->slot[lru].g);
        memset(&gl->slot[lru], 0, sizeof gl->slot[lru]);
    }
    pthread_mutex_unlock(&gl->mu);
    return -1;
}

void srv_deepl_glossary_release(mt_server *s, mt_glossary *g)
{
    if (!g) return;
    struct srv_glossaries *gl = s->glossaries;
    pthread_mutex_lock(&gl->mu);
    int kept = 0;
    for (int i = 0; i < CACHE_SLOTS && !kept; i++)
        if (gl->slot[i].g == g) gl->slot[i].refs--, kept = 1;
    pthread_mutex_unlock(&gl->mu);
    if (!kept) mt_glossary_free(g);
}

/* A deleted glossary's copy goes (once idle; a translation that holds it finishes). */
static void cache_drop(struct srv_glossaries *gl, const char *id)
{
    pthread_mutex_lock(&gl->mu);
    for (int i = 0; i < CACHE_SLOTS; i++) {
        cached *c = &gl->slot[i];
        if (c->g && !c->refs && !strcasecmp(c->id, id)) {
            mt_glossary_free(c->g);
            memset(c, 0, sizeof *c);
        }
    }
    pthread_mutex_unlock(&gl->mu);
}

/* DeepL's glossary code of a DeepL or route code: the language alone, lower case ("EN-GB",
 * "eng" -> "en"). */
static void base_code(const char *code, char *out, size_t cap)
{
    char up[40];
    srv_deepl_code(code, up, sizeof up);
    size_t i = 0;
    for (; up[i] && up[i] != '-' && i + 1 < cap; i++) out[i] = (char)tolower((unsigned char)up[i]);
    out[i] = '\0';
}

/* The store's status as DeepL's: 404 is the caller's; MT_STORE_DOWN 503, others 500. */
static enum MHD_Result store_error(req_ctx *c, int rc, const char *err)
{
    return srv_deepl_error(c, rc == MT_STORE_DOWN ? 503 : 500, err);
}

static json_t *info_json(const mt_glossary_info *g)
{
    return json_pack("{s:s, s:s, s:b, s:s, s:s, s:s, s:i}", "glossary_id", g->id, "name", g->name, "ready", 1,
                     "source_lang", g->source, "target_lang", g->target, "creation_time", g->created, "entry_count",
                     g->entry_count);
}

static int add_info(void *user, const mt_glossary_info *g)
{
    json_t *o = info_json(g);
    if (o) json_array_append_new(user, o);
    return 0;
}

/* The pairs the models serve, DeepL's codes, each once. */
static json_t *language_pairs(mt_server *s)
{
    json_t *arr = json_array();
    const mt_langs *l = mt_service_langs(s->svc);
    for (int i = 0; arr && i < mt_langs_count(l); i++) {
        const mt_route *r = mt_langs_get(l, i);
        char src[40], tgt[40];
        base_code(r->source, src, sizeof src);
        base_code(r->target, tgt, sizeof tgt);
        int seen = 0;
        size_t k;
        json_t *e;
        json_array_foreach(arr, k, e) seen |= !strcmp(json_string_value(json_object_get(e, "source_lang")), src) &&
                                             !strcmp(json_string_value(json_object_get(e, "target_lang")), tgt);
        if (!seen) json_array_append_new(arr, json_pack("{s:s, s:s}", "source_lang", src, "target_lang", tgt));
    }
    return arr;
}

/* A string parameter of the body (form or JSON), else of the query. */
static const char *param(req_ctx *c, const json_t *obj, const char *name)
{
    const char *v = json_string_value(json_object_get(obj, name));
    return v ? v : MHD_lookup_connection_value(c->conn, MHD_GET_ARGUMENT_KIND, name);
}

/* s as printable ASCII (others as '?'), cut to cap - 1 bytes. */
static void printable(const char *s, char *out, size_t cap)
{
    size_t i = 0;
    for (; s[i] && i + 1 < cap; i++) out[i] = s[i] >= 0x20 && s[i] < 0x7F ? s[i] : '?';
    out[i] = '\0';
}

/* Checks and stores one glossary (one dictionary); 0 with *out, or the status with msg. */
static int make(mt_server *s, const char *key, const char *name, const char *source, const char *target,
                const char *entries, size_t entries_len, const char *fmt, mt_glossary_info *out, char *msg,
                size_t cap)
{
    if (!name || !*name) return snprintf(msg, cap, "Parameter 'name' not specified."), 400;
    size_t bad;
    if (strlen(name) > 255 || !mt_utf8_check(name, strlen(name), &bad))
        return snprintf(msg, cap, "Value for 'name' not supported: at most 255 bytes of UTF-8."), 400;
    for (const char *p = name; *p; p++)
        if ((unsigned char)*p < 0x20) return snprintf(msg, cap, "Value for 'name' not supported: a control character."), 400;
    if (!source || !*source) return snprintf(msg, cap, "Parameter 'source_lang' not specified."), 400;
    if (!target || !*target) return snprintf(msg, cap, "Parameter 'target_lang' not specified."), 400;
    if (!entries) return snprintf(msg, cap, "Parameter 'entries' not specified."), 400;
    if (fmt && *fmt && strcasecmp(fmt, "tsv") != 0 && strcasecmp(fmt, "csv") != 0)
        return snprintf(msg, cap, "Value for 'entries_format' not supported."), 400;
    /* the limits before the work: lines bound the entries from above (TSV exactly) */
    mt_glossaries_limits lim = s->glossaries->lim;
    long lines = entries_len > 0;
    for (size_t i = 0; i + 1 < entries_len; i++) lines += entries[i] == '\n';
    if (lines > lim.max_entries || entries_len > lim.max_bytes)
        return snprintf(msg, cap, "Glossary too large: %ld entries, %zu bytes (at most %d entries and %zu bytes)",
                        lines, entries_len, lim.max_entries, lim.max_bytes), 413;
    char src[40], tgt[40], gs[40], gt[40], why[256];
    int detected;
    if (srv_deepl_lang(s->svc, source, 0, src, sizeof src) || srv_deepl_lang(s->svc, target, 1, tgt, sizeof tgt) ||
        mt_service_route(s->svc, src, tgt, &detected, why, sizeof why) < 0) {
        char a[24], b[24]; /* echoed as printable ASCII only: the answer must stay valid JSON */
        printable(source, a, sizeof a);
        printable(target, b, sizeof b);
        return snprintf(msg, cap, "Unsupported glossary source and target language pair: %s-%s "
                        "(GET /v2/glossary-language-pairs lists the pairs)", a, b), 400;
    }
    base_code(source, gs, sizeof gs);
    base_code(target, gt, sizeof gt);
    mt_glossary *g = NULL;
    mt_glossary_format f = fmt && strcasecmp(fmt, "csv") == 0 ? MT_GLOSSARY_CSV : MT_GLOSSARY_TSV;
    if (mt_glossary_parse(entries, entries_len, f, gs, gt, &g, why, sizeof why))
        return snprintf(msg, cap, "Invalid glossary entries provided: %s", why), 400;
    char *tsv = mt_glossary_tsv(g);
    int count = mt_glossary_count(g);
    mt_glossary_free(g);
    if (!tsv) return snprintf(msg, cap, "out of memory"), 500;
    int rc = mt_glossaries_create(s->glossaries->store, key, name, gs, gt, tsv, count, out, msg, cap);
    free(tsv);
    return rc == MT_STORE_OK ? 0 : rc == MT_GLOSSARIES_TOO_LARGE ? 413 : rc == MT_GLOSSARIES_TOO_MANY ? 456
         : rc == MT_STORE_DOWN ? 503 : 500;
}

static enum MHD_Result create(mt_server *s, req_ctx *c, const json_t *obj, const char *key)
{
    const json_t *ev = json_object_get(obj, "entries");
    mt_glossary_info info;
    char msg[512];
    int st = make(s, key, param(c, obj, "name"), param(c, obj, "source_lang"), param(c, obj, "target_lang"),
                  json_string_value(ev), json_string_length(ev), param(c, obj, "entries_format"), &info, msg,
                  sizeof msg);
    if (st) return srv_deepl_error(c, st, msg);
    return srv_send_json(c, 201, info_json(&info), NULL, NULL);
}

/* Accept allows TSV: absent, text/tab-separated-values, or a wildcard. */
/* DELETE /v2/glossaries/ID and /v3/glossaries/ID: 204, or 404 for a glossary the key
 * does not own. */
static enum MHD_Result delete_glossary(mt_server *s, req_ctx *c, const char *key, const char *id)
{
    char why[256];
    int rc = mt_glossaries_delete(s->glossaries->store, key, id, why, sizeof why);
    cache_drop(s->glossaries, id);
    if (rc < 0) return store_error(c, rc, why);
    if (rc == 0) return srv_deepl_error(c, 404, "Glossary not found.");
    return srv_send_buffer(c, 204, strdup(""), 0, NULL, NULL, NULL);
}

static int accepts_tsv(const char *accept)
{
    if (!accept || !*accept) return 1;
    return strcasestr(accept, "text/tab-separated-values") || strstr(accept, "*/*") || strcasestr(accept, "text/*");
}

/* /v2/glossaries/ID[/entries] */
static enum MHD_Result one(mt_server *s, req_ctx *c, const char *key)
{
    const char *rest = c->path + strlen("/v2/glossaries/");
    char id[64];
    size_t n = strcspn(rest, "/");
    if (n >= sizeof id) n = sizeof id - 1;
    memcpy(id, rest, n);
    id[n] = '\0';
    int entries = strcmp(rest + strcspn(rest, "/"), "/entries") == 0;
    if (rest[strcspn(rest, "/")] && !entries) return srv_deepl_error(c, 404, "Not found.");
    int del = strcmp(c->method, "DELETE") == 0;
    if (del && entries) return srv_deepl_error(c, 405, "Method not allowed: DELETE /v2/glossaries/ID");
    if (del) return delete_glossary(s, c, key, id);
    char why[256];
    if (entries && !accepts_tsv(MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT)))
        return srv_deepl_error(c, 415, "Unsupported Media Type: glossary entries are sent as text/tab-separated-values");
    mt_glossary_info info;
    char *tsv = NULL;
    int rc = mt_glossaries_get(s->glossaries->store, key, id, &info, entries ? &tsv : NULL, why, sizeof why);
    if (rc < 0) return store_error(c, rc, why);
    if (rc == 0) return srv_deepl_error(c, 404, "Glossary not found.");
    if (!entries) return srv_send_json(c, 200, info_json(&info), NULL, NULL);
    return srv_send_buffer(c, 200, tsv, strlen(tsv), "text/tab-separated-values; charset=utf-8", NULL, NULL);
}

/* ---------------------------------------------------------------- API v3 */

/* DeepL's v3 glossaries hold a dictionary per language pair; here a glossary holds one,
 * so v2 and v3 see the same glossaries (a v2 one is a v3 one with one dictionary). */
static json_t *v3_json(const mt_glossary_info *g)
{
    return json_pack("{s:s, s:s, s:[{s:s, s:s, s:i}], s:s}", "glossary_id", g->id, "name", g->name, "dictionaries",
                     "source_lang", g->source, "target_lang", g->target, "entry_count", g->entry_count,
                     "creation_time", g->created);
}

static int add_v3(void *user, const mt_glossary_info *g)
{
    json_t *o = v3_json(g);
    if (o) json_array_append_new(user, o);
    return 0;
}

/* Field name of dictionary n: JSON {"dictionaries": [{...}]}, or the form's
 * "dictionaries[n].name" (as deepl-node sends it). */
static const json_t *dict_field(const json_t *obj, int n, const char *name)
{
    const json_t *d = json_object_get(obj, "dictionaries");
    if (json_is_array(d)) return json_object_get(json_array_get(d, (size_t)n), name);
    char k[80];
    snprintf(k, sizeof k, "dictionaries[%d].%s", n, name);
    return json_object_get(obj, k);
}

static enum MHD_Result v3_create(mt_server *s, req_ctx *c, const json_t *obj, const char *key)
{
    if (!dict_field(obj, 0, "source_lang") && !dict_field(obj, 0, "entries"))
        return srv_deepl_error(c, 400, "Parameter 'dictionaries' not specified.");
    if (dict_field(obj, 1, "source_lang") || dict_field(obj, 1, "entries"))
        return srv_deepl_error(c, 400, "This server keeps one dictionary per glossary: create a glossary per "
                               "language pair.");
    const json_t *ev = dict_field(obj, 0, "entries");
    mt_glossary_info info;
    char msg[512];
    int st = make(s, key, param(c, obj, "name"), json_string_value(dict_field(obj, 0, "source_lang")),
                  json_string_value(dict_field(obj, 0, "target_lang")), json_string_value(ev), json_string_length(ev),
                  json_string_value(dict_field(obj, 0, "entries_format")), &info, msg, sizeof msg);
    if (st) return srv_deepl_error(c, st, msg);
    return srv_send_json(c, 201, v3_json(&info), NULL, NULL);
}

/* /v3/glossaries/ID[/entries|/dictionaries] */
static enum MHD_Result v3_one(mt_server *s, req_ctx *c, const json_t *obj, const char *key)
{
    const char *rest = c->path + strlen("/v3/glossaries/");
    char id[64];
    size_t n = strcspn(rest, "/");
    snprintf(id, sizeof id, "%.*s", (int)(n < sizeof id ? n : sizeof id - 1), rest);
    const char *sub = rest + n;
    int del = strcmp(c->method, "DELETE") == 0;
    if (*sub && strcmp(sub, "/entries") != 0 && strcmp(sub, "/dictionaries") != 0)
        return srv_deepl_error(c, 404, "Not found.");
    if (!strcmp(sub, "/dictionaries") || (del && *sub))
        return srv_deepl_error(c, 400, "This server keeps one dictionary per glossary: delete the glossary "
                               "(DELETE /v3/glossaries/ID) or create another.");
    if (del) return delete_glossary(s, c, key, id);
    char why[256];
    mt_glossary_info info;
    char *tsv = NULL;
    int entries = *sub != '\0';
    int rc = mt_glossaries_get(s->glossaries->store, key, id, &info, entries ? &tsv : NULL, why, sizeof why);
    if (rc < 0) return store_error(c, rc, why);
    if (rc == 0) return srv_deepl_error(c, 404, "Glossary not found.");
    if (!entries) return srv_send_json(c, 200, v3_json(&info), NULL, NULL);
    const char *qs = param(c, obj, "source_lang"), *qt = param(c, obj, "target_lang");
    char bs[40] = "", bt[40] = "";
    if (qs && *qs) base_code(qs, bs, sizeof bs);
    if (qt && *qt) base_code(qt, bt, sizeof bt);
    if ((*bs && strcmp(bs, info.source)) || (*bt && strcmp(bt, info.target))) {
        free(tsv);
        return srv_deepl_error(c, 404, "Glossary dictionary not found.");
    }
    json_t *o = json_pack("{s:[{s:s, s:s, s:s, s:s}]}", "dictionaries", "source_lang", info.source, "target_lang",
                          info.target, "entries", tsv, "entries_format", "tsv");
    free(tsv);
    return o ? srv_send_json(c, 200, o, NULL, NULL) : srv_deepl_error(c, 500, "out of memory");
}

static enum MHD_Result v3(mt_server *s, req_ctx *c, const json_t *obj, const char *key)
{
    if (strcmp(c->path, "/v3/glossaries") != 0) return v3_one(s, c, obj, key);
    if (strcmp(c->method, "POST") == 0) return v3_create(s, c, obj, key);
    char err[256];
    json_t *arr = json_array();
    int rc = arr ? mt_glossaries_list(s->glossaries->store, key, add_v3, arr, err, sizeof err) : MT_STORE_ERROR;
    if (rc < 0) {
        json_decref(arr);
        return store_error(c, rc, arr ? err : "out of memory");
    }
    return srv_send_json(c, 200, json_pack("{s:o}", "glossaries", arr), NULL, NULL);
}

enum MHD_Result srv_ep_deepl_glossary(mt_server *s, req_ctx *c)
{
    json_t *obj;
    int from_form;
    char key[256], err[512];
    int st = srv_deepl_begin(s, c, &obj, &from_form, key, sizeof key, err, sizeof err);
    if (st) return srv_deepl_error(c, st, err);
    enum MHD_Result r;
    if (strncmp(c->path, "/v3/", 4) == 0) {
        r = v3(s, c, obj, key);
    } else if (strcmp(c->path, "/v2/glossary-language-pairs") == 0) {
        r = srv_send_json(c, 200, json_pack("{s:o}", "supported_languages", language_pairs(s)), NULL, NULL);
    } else if (strcmp(c->path, "/v2/glossaries") == 0 && strcmp(c->method, "POST") == 0) {
        r = create(s, c, obj, key);
    } else if (strcmp(c->path, "/v2/glossaries") == 0) {
        json_t *arr = json_array();
        int rc = arr ? mt_glossaries_list(s->glossaries->store, key, add_info, arr, err, sizeof err) : MT_STORE_ERROR;
        if (rc < 0) {
            json_decref(arr);
            r = store_error(c, rc, arr ? err : "out of memory");
        } else {
            r = srv_send_json(c, 200, json_pack("{s:o}", "glossaries", arr), NULL, NULL);
        }
    } else {
        r = one(s, c, key);
    }
    json_decref(obj);
    return r;
}

int srv_deepl_glossary_load(mt_server *s, const char *key, const char *id, const char *source_lang,
                            const char *target_lang, mt_glossary **out, char *err, size_t errlen)
{
    *out = NULL;
    mt_glossary_info info;
    int rc = mt_glossaries_get(s->glossaries->store, key, id, &info, NULL, err, errlen);
    if (rc < 0) return rc == MT_STORE_DOWN ? 503 : 500;
    if (rc == 0) return snprintf(err, errlen, "Glossary not found."), 404;
    char src[40], tgt[40];
    base_code(source_lang, src, sizeof src);
    base_code(target_lang, tgt, sizeof tgt);
    if (strcmp(src, info.source) != 0 || strcmp(tgt, info.target) != 0)
        return snprintf(err, errlen, "Language pair of the glossary (%s-%s) does not match the translation's (%s-%s).",
                        info.source, info.target, src, tgt), 400;
    if ((*out = cache_take(s->glossaries, key, info.id))) return 0;
    char *tsv = NULL;
    rc = mt_glossaries_get(s->glossaries->store, key, id, &info, &tsv, err, errlen);
    if (rc < 0) return rc == MT_STORE_DOWN ? 503 : 500;
    if (rc == 0) return snprintf(err, errlen, "Glossary not found."), 404; /* deleted meanwhile */
    rc = mt_glossary_parse(tsv, strlen(tsv), MT_GLOSSARY_TSV, NULL, NULL, out, err, errlen);
    free(tsv);
    if (rc) return 500;
    cache_put(s->glossaries, key, info.id, *out); /* not kept: released (freed) by the caller */
    return 0;
}
