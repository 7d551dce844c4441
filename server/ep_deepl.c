/* ep_deepl.c: DeepL's API v2 for DeepL's own clients: POST /v2/translate, GET|POST
 * /v2/languages and /v2/usage, DeepL's key header and its error answers. The request is
 * read here and submitted to the same translation service as POST /translate (ep_translate.c
 * queues it and resumes the connection; render.c calls srv_deepl_render for the answer).
 *
 * What DeepL's parameters do here:
 *   text (repeated form field or JSON list), source_lang (absent: detected per text),
 *   target_lang (DeepL's codes, case-insensitive; EN-GB / EN-US go to the English model,
 *   PT-BR / PT-PT to a Brazilian model when one is served, else the Portuguese one);
 *   tag_handling xml|html: the texts are markup (translator/html.c keeps tags byte for
 *   byte); ignore_tags: the content of those elements is kept untranslated (their start
 *   tags are marked translate="no" for the pipeline, and unmarked in the answer);
 *   split_sentences: 1 splits at sentence ends and newlines, nonewlines reads newlines as
 *   spaces, 0 translates each text as one sentence (newlines read as spaces; with
 *   tag_handling, each block of the markup, a p, li, td ..., is one sentence), except a
 *   text that encodes to more than the model's maximum source length, which is split as
 *   with 1 since the model could not read it whole;
 *   preserve_formatting: whitespace and punctuation are kept anyway; non_splitting_tags,
 *   splitting_tags, outline_detection, context and model_type are accepted and ignored;
 *   formality: no model has a formality control, so "more"/"less" are refused as DeepL
 *   refuses them for such a target and "prefer_*" fall back silently;
 *   glossary_id: the key's glossary (ep_deepl_glossary.c), source_lang required as DeepL
 *   requires it, the glossary's languages those of the request: each source term in the
 *   text comes out as its target term (the service enforces it, include/mt/glossary.h);
 *   show_billed_characters: billed_characters, the text's code points.
 *
 * Keys: the server's API keys ([server] api_keys); none configured, the server is open and
 * any key is taken. Limits: [limits] requests_per_minute answers 429, chars_per_minute
 * (DeepL's character quota, per minute here) 456; /v2/usage reports the latter. */
#include "deepl.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ratelimit.h"
#include "utf8.h"

/* Inserted after the element name of each ignore_tags start tag, removed from the answer. */
#define IGNORE_MARK " translate=\"no\" data-mt-deepl-ignore=\"\""

/* ---------------------------------------------------------------- shared */

enum MHD_Result srv_deepl_error(req_ctx *c, int status, const char *msg)
{
    srv_copy_text(c->out.error, sizeof c->out.error, msg);
    return srv_send_json(c, status, json_pack("{s:s}", "message", msg), NULL, NULL);
}

/* A field as a string: the body's, else the query's (DeepL's GET forms). */
static const char *field(req_ctx *c, const json_t *obj, const char *name)
{
    const char *v = json_string_value(json_object_get(obj, name));
    if (!v) v = MHD_lookup_connection_value(c->conn, MHD_GET_ARGUMENT_KIND, name);
    return v;
}

int srv_deepl_begin(mt_server *s, req_ctx *c, json_t **obj, int *from_form, char *key, size_t cap, char *err,
                    size_t errlen)
{
    *obj = NULL;
    *from_form = 0;
    key[0] = '\0';
    int st = 0;
    if (c->in.len == 0 || c->in.ctype == MT_CT_MULTIPART) *obj = json_object();
    else st = mt_request_decode(c->in.ctype, c->in.boundary, c->in.body, c->in.len, obj, from_form, err, errlen);
    if (!st && !*obj) {
        snprintf(err, errlen, "out of memory");
        st = 500;
    } else if (st) {
        st = st == 415 ? 415 : 400;
    } else {
        st = srv_deepl_auth(s, c, *obj, key, cap, err, errlen);
    }
    if (st) { /* the callers answer the error at once: nothing of theirs to free */
        json_decref(*obj);
        *obj = NULL;
    }
    return st;
}

int srv_deepl_auth(mt_server *s, req_ctx *c, const json_t *obj, char *key, size_t cap, char *err, size_t errlen)
{
    int st;
    /* "Authorization: DeepL-Auth-Key KEY", else the deprecated auth_key parameter */
    const char *auth = MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    const char *k = NULL;
    if (auth && strncasecmp(auth, "DeepL-Auth-Key ", 15) == 0) {
        k = auth + 15;
        while (*k == ' ') k++;
    }
    if (!k || !*k) k = field(c, obj, "auth_key");
    snprintf(key, cap, "%s", k ? k : "");
    /* The server's key check (config and shared store) reads a body's api_key first. */
    json_t *as = json_object();
    if (!as) {
        snprintf(err, errlen, "out of memory");
        return 500;
    }
    if (*key) json_object_set_new(as, "api_key", json_string(key));
    else if (auth && strncasecmp(auth, "DeepL-Auth-Key", 14) == 0) json_object_set_new(as, "api_key", json_string(""));
    st = srv_check_api_key(s, c, *key ? as : NULL, err, errlen);
    json_decref(as);
    if (st == 403) snprintf(err, errlen, "%s", *key ? "Wrong endpoint or invalid auth key" : "Missing auth key: send "
                            "an \"Authorization: DeepL-Auth-Key KEY\" header");
    return st;
}

/* ---------------------------------------------------------------- language codes */

static const char *const ISO3[][2] = {
    {"ar", "ara"}, {"bg", "bul"}, {"cs", "ces"}, {"da", "dan"}, {"de", "deu"}, {"el", "ell"},
    {"en", "eng"}, {"es", "spa"}, {"et", "est"}, {"fi", "fin"}, {"fr", "fra"}, {"he", "heb"},
    {"hu", "hun"}, {"id", "ind"}, {"it", "ita"}, {"ja", "jpn"}, {"ko", "kor"}, {"lt", "lit"},
    {"lv", "lav"}, {"nb", "nob"}, {"nl", "nld"}, {"pl", "pol"}, {"pt", "por"}, {"ro", "ron"},
    {"ru", "rus"}, {"sk", "slk"}, {"sl", "slv"}, {"sv", "swe"}, {"th", "tha"}, {"tr", "tur"},
    {"uk", "ukr"}, {"vi", "vie"}, {"zh", "zho"},
};
enum { N_ISO3 = sizeof ISO3 / sizeof ISO3[0] };

static int find_route_code(const mt_service *svc, const char *cand, int want_target, char *out, size_t cap)
{
    const mt_langs *l = mt_service_langs(svc);
    for (int i = 0; i < mt_langs_count(l); i++) {
        const mt_route *r = mt_langs_get(l, i);
        const char *code = want_target ? r->target : r->source;
        if (strcasecmp(code, cand) == 0) {
            snprintf(out, cap, "%s", code);
            return 0;
        }
    }
    return -1;
}

int srv_deepl_lang(const mt_service *svc, const char *code, int want_target, char *out, size_t cap)
{
    if (!code || !*code || strlen(code) > 20) return -1;
    char primary[24];
    size_t n = strcspn(code, "-_");
    snprintf(primary, sizeof primary, "%.*s", (int)n, code);
    /* the variant itself (a pt-BR model), then DeepL's regional variants' own models
     * (pob: OPUS-MT's Brazilian Portuguese), then the language */
    if (code[n] && find_route_code(svc, code, want_target, out, cap) == 0) return 0;
    if (strcasecmp(code, "pt-br") == 0 && find_route_code(svc, "pob", want_target, out, cap) == 0) return 0;
    if (find_route_code(svc, primary, want_target, out, cap) == 0) return 0;
    for (int i = 0; i < N_ISO3; i++)
        if (strcasecmp(ISO3[i][0], primary) == 0) return find_route_code(svc, ISO3[i][1], want_target, out, cap);
    return -1;
}

void srv_deepl_code(const char *ours, char *out, size_t cap)
{
    const char *code = ours;
    if (strcasecmp(ours, "pob") == 0) code = "pt-BR";
    for (int i = 0; i < N_ISO3; i++)
        if (strcasecmp(ISO3[i][1], ours) == 0) code = ISO3[i][0];
    size_t i = 0;
    for (; code[i] && i + 1 < cap; i++) out[i] = (char)toupper((unsigned char)(code[i] == '_' ? '-' : code[i]));
    if (cap) out[i < cap ? i : cap - 1] = '\0';
}

/* ---------------------------------------------------------------- GET /v2/languages */

static int has_code(json_t *arr, const char *code)
{
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e) if (strcmp(json_string_value(json_object_get(e, "language")), code) == 0) return 1;
    return 0;
}

static void add_lang(json_t *arr, const char *code, const char *name, int target)
{
    if (has_code(arr, code)) return;
    json_t *e = json_pack("{s:s, s:s}", "language", code, "name", name);
    if (e && target) json_object_set_new(e, "supports_formality", json_false()); /* no model has a control */
    if (e) json_array_append_new(arr, e);
}

static int cmp_lang(const void *a, const void *b)
{
    return strcmp(json_string_value(json_object_get(*(json_t *const *)a, "language")),
                  json_string_value(json_object_get(*(json_t *const *)b, "language")));
}

static json_t *languages_json(const mt_service *svc, int target)
{
    json_t *arr = json_array();
    const mt_langs *l = mt_service_langs(svc);
    for (int i = 0; arr && i < mt_langs_count(l); i++) {
        const mt_route *r = mt_langs_get(l, i);
        const char *ours = target ? r->target : r->source;
        char code[40];
        srv_deepl_code(ours, code, sizeof code);
        if (!target) code[strcspn(code, "-")] = '\0'; /* DeepL's sources have no variants */
        const char *name = mt_lang_name(ours);
        if (target && strcmp(code, "EN") == 0) {
            /* DeepL's clients refuse the bare EN and PT as targets: the variants it lists */
            add_lang(arr, "EN-GB", "English (British)", 1);
            add_lang(arr, "EN-US", "English (American)", 1);
        } else if (target && strcmp(code, "PT") == 0) {
            add_lang(arr, "PT-BR", "Portuguese (Brazilian)", 1);
            add_lang(arr, "PT-PT", "Portuguese (European)", 1);
        } else {
            add_lang(arr, code, name, target);
        }
    }
    if (!arr) return NULL;
    size_t n = json_array_size(arr);
    json_t **v = calloc(n + 1, sizeof *v);
    if (!v) return arr;
    for (size_t i = 0; i < n; i++) v[i] = json_incref(json_array_get(arr, i));
    qsort(v, n, sizeof *v, cmp_lang);
    json_array_clear(arr);
    for (size_t i = 0; i < n; i++) json_array_append_new(arr, v[i]);
    free(v);
    return arr;
}

enum MHD_Result srv_ep_deepl_languages(mt_server *s, req_ctx *c)
{
    json_t *obj;
    int from_form;
    char key[256], err[512];
    int st = srv_deepl_begin(s, c, &obj, &from_form, key, sizeof key, err, sizeof err);
    if (st) return srv_deepl_error(c, st, err);
    const char *type = field(c, obj, "type");
    int target = type && strcasecmp(type, "target") == 0;
    if (type && !target && strcasecmp(type, "source") != 0) {
        json_decref(obj);
        return srv_deepl_error(c, 400, "Value for 'type' not supported.");
    }
    json_decref(obj);
    json_t *arr = languages_json(s->svc, target);
    if (!arr) return srv_deepl_error(c, 500, "out of memory");
    return srv_send_json(c, 200, arr, NULL, NULL);
}

/* ---------------------------------------------------------------- GET /v2/usage */

enum MHD_Result srv_ep_deepl_usage(mt_server *s, req_ctx *c)
{
    json_t *obj;
    int from_form;
    char key[256], err[512];
    int st = srv_deepl_begin(s, c, &obj, &from_form, key, sizeof key, err, sizeof err);
    json_decref(obj);
    if (st) return srv_deepl_error(c, st, err);
    /* The character quota is the per-minute one; without one, DeepL's "unlimited". */
    json_int_t count = 0, limit = 1000000000000LL;
    long key_limit = c->key_chars_limit > 0 ? c->key_chars_limit : s->cfg->char_limit_per_minute;
    if (key_limit > 0) limit = key_limit;
    /* what was used is known in process; the shared store's buckets are not read here */
    if (s->ratelimit && s->cfg->char_limit_per_minute > 0 && c->key_chars_limit <= 0) {
        char client[180];
        srv_rate_client(s, c, key, client, sizeof client);
        double req_used = 0, chars_used = 0;
        mt_ratelimit_used(s->ratelimit, client, &req_used, &chars_used);
        count = (json_int_t)(chars_used + 0.5);
    }
    return srv_send_json(c, 200, json_pack("{s:I, s:I}", "character_count", count, "character_limit", limit), NULL,
                         NULL);
}

/* ---------------------------------------------------------------- POST /v2/translate */

/* The per-minute limits: requests (429) and characters (456, DeepL's quota). 0 when the
 * request may go on, else an answer was queued. */
static int rate_check(mt_server *s, req_ctx *c, const char *key, long chars, enum MHD_Result *ret)
{
    char msg[200], after[24];
    int retry = 1;
    long limit = 0;
    int rc = srv_rate_charge(s, c, key, 1, 0, &retry, &limit);
    if (rc != MT_RATE_OK) {
        snprintf(msg, sizeof msg, "Too many requests: the limit is %d per minute; retry after %d s",
                 s->cfg->req_limit, retry);
        snprintf(after, sizeof after, "%d", retry);
        srv_copy_text(c->out.error, sizeof c->out.error, msg);
        *ret = srv_send_json(c, 429, json_pack("{s:s}", "message", msg), MHD_HTTP_HEADER_RETRY_AFTER, after);
        return -1;
    }
    rc = srv_rate_charge(s, c, key, 0, chars, &retry, &limit);
    if (rc == MT_RATE_OK) return 0;
    if (rc == MT_RATE_TOO_LARGE)
        snprintf(msg, sizeof msg, "Quota exceeded: %ld characters is more than the quota of %ld per minute", chars,
                 limit);
    else
        snprintf(msg, sizeof msg, "Quota exceeded: the quota is %ld characters per minute; retry after %d s", limit,
                 retry);
    snprintf(after, sizeof after, "%d", retry);
    srv_copy_text(c->out.error, sizeof c->out.error, msg);
    /* more than a minute's quota: waiting does not help */
    *ret = srv_send_json(c, 456, json_pack("{s:s}", "message", msg),
                         rc == MT_RATE_TOO_LARGE ? NULL : MHD_HTTP_HEADER_RETRY_AFTER, after);
    return -1;
}

/* A boolean parameter: "0"/"1"/"true"/"false" or a JSON boolean or number; absent:
 * `dflt`; -1 when it is none of those. */
static int flag(const json_t *obj, const char *name, int dflt)
{
    const json_t *v = json_object_get(obj, name);
    if (!v || json_is_null(v)) return dflt;
    if (json_is_boolean(v)) return json_is_true(v);
    if (json_is_integer(v)) return json_integer_value(v) != 0;
    const char *t = json_string_value(v);
    if (!t) return -1;
    if (strcmp(t, "1") == 0 || strcasecmp(t, "true") == 0) return 1;
    if (strcmp(t, "0") == 0 || strcasecmp(t, "false") == 0) return 0;
    return -1;
}

/* A tag list: "a,b" or ["a", "b"] into out as ",a,b," (lower case); 0 or -1. */
static int tag_list(const json_t *obj, const char *name, char *out, size_t cap)
{
    const json_t *v = json_object_get(obj, name);
    size_t n = 0;
    out[n++] = ',';
    out[n] = '\0';
    if (!v || json_is_null(v)) return 0;
    const json_t *items[1] = {v};
    size_t count = json_is_array(v) ? json_array_size(v) : 1;
    for (size_t i = 0; i < count; i++) {
        const json_t *e = json_is_array(v) ? json_array_get(v, i) : items[0];
        const char *t = json_string_value(e);
        if (!t) return -1;
        for (const char *p = t; *p; p++) {
            if (*p == ' ') continue;
            if (n + 2 >= cap) return -1;
            out[n++] = *p == ',' ? ',' : (char)tolower((unsigned char)*p);
        }
        if (n + 2 >= cap) return -1;
        out[n++] = ',';
    }
    out[n] = '\0';
    return 0;
}

/* Marks the start tags of ignored elements (names in list ",a,b,") translate="no" so the
 * markup pipeline keeps their content; a new string, or NULL out of memory. */
static char *mark_ignored(const char *text, size_t len, const char *list, size_t *out_len)
{
    size_t marks = 0;
    for (size_t i = 0; i < len; i++) marks += text[i] == '<';
    size_t cap = len + marks * strlen(IGNORE_MARK) + 1;
    char *out = malloc(cap);
    if (!out) return NULL;
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        out[n++] = text[i];
        if (text[i++] != '<' || i >= len || !isalpha((unsigned char)text[i])) continue;
        size_t j = i;
        while (j < len && (isalnum((unsigned char)text[j]) || text[j] == '-' || text[j] == '_' || text[j] == ':' ||
                           text[j] == '.'))
            j++;
        char name[130];
        if (j - i > 120) continue;
        name[0] = ',';
        for (size_t k = i; k < j; k++) name[1 + k - i] = (char)tolower((unsigned char)text[k]);
        name[1 + j - i] = ',';
        name[2 + j - i] = '\0';
        /* a self-closed element has no content to keep */
        const char *gt = memchr(text + j, '>', len - j);
        int self_closed = gt && gt > text + j && gt[-1] == '/';
        memcpy(out + n, text + i, j - i);
        n += j - i;
        i = j;
        if (!self_closed && strstr(list, name)) {
            memcpy(out + n, IGNORE_MARK, strlen(IGNORE_MARK));
            n += strlen(IGNORE_MARK);
        }
    }
    out[n] = '\0';
    *out_len = n;
    return out;
}

/* Removes every IGNORE_MARK from t in place; returns how many. */
static long unmark(char *t)
{
    long k = 0;
    size_t m = strlen(IGNORE_MARK);
    char *p;
    while ((p = strstr(t, IGNORE_MARK)) != NULL) {
        memmove(p, p + m, strlen(p + m) + 1);
        k++;
    }
    return k;
}

/* Reads the request into c->req (DeepL form); 0 or a status with a message. */
static int read_translate(mt_server *s, req_ctx *c, const json_t *obj, char *err, size_t errlen)
{
    mt_request *rq = &c->req;
    memset(rq, 0, sizeof *rq); /* no decoding option given: the service's defaults */
    rq->form = MT_FORM_DEEPL;
    const json_t *text = json_object_get(obj, "text");
    size_t n = json_is_array(text) ? json_array_size(text) : json_is_string(text) ? 1 : 0;
    if (n == 0) return snprintf(err, errlen, "Parameter 'text' not specified."), 400;
    if (n > (size_t)s->cfg->max_texts)
        return snprintf(err, errlen, "Too many texts: %zu (limit %d per request)", n, s->cfg->max_texts), 413;
    const char *target = json_string_value(json_object_get(obj, "target_lang"));
    const char *source = json_string_value(json_object_get(obj, "source_lang"));
    if (!target || !*target) return snprintf(err, errlen, "Parameter 'target_lang' not specified."), 400;
    char tgt[40], src[40];
    if (srv_deepl_lang(s->svc, target, 1, tgt, sizeof tgt))
        return snprintf(err, errlen, "Value for 'target_lang' not supported."), 400;
    if (source && *source && srv_deepl_lang(s->svc, source, 0, src, sizeof src))
        return snprintf(err, errlen, "Value for 'source_lang' not supported."), 400;
    const char *formality = json_string_value(json_object_get(obj, "formality"));
    if (formality && *formality) {
        if (strcmp(formality, "more") == 0 || strcmp(formality, "less") == 0)
            return snprintf(err, errlen, "'formality' is not supported for given 'target_lang'."), 400;
        if (strcmp(formality, "default") != 0 && strcmp(formality, "prefer_more") != 0 &&
            strcmp(formality, "prefer_less") != 0)
            return snprintf(err, errlen, "Value for 'formality' not supported."), 400;
    }
    const char *glossary = json_string_value(json_object_get(obj, "glossary_id"));
    if (glossary && *glossary) {
        if (!source || !*source)
            return snprintf(err, errlen, "Use of a glossary requires the 'source_lang' parameter to be specified."), 400;
    }
    const char *split = json_string_value(json_object_get(obj, "split_sentences"));
    const json_t *split_v = json_object_get(obj, "split_sentences");
    if (json_is_integer(split_v)) split = json_integer_value(split_v) ? "1" : "0";
    if (split_v && !json_is_null(split_v) &&
        (!split || (strcmp(split, "0") && strcmp(split, "1") && strcmp(split, "nonewlines"))))
        return snprintf(err, errlen, "Value for 'split_sentences' not supported."), 400;
    if (flag(obj, "preserve_formatting", 0) < 0)
        return snprintf(err, errlen, "Value for 'preserve_formatting' not supported."), 400;
    if (flag(obj, "outline_detection", 1) < 0)
        return snprintf(err, errlen, "Value for 'outline_detection' not supported."), 400;
    int billed = flag(obj, "show_billed_characters", 0);
    if (billed < 0) return snprintf(err, errlen, "Value for 'show_billed_characters' not supported."), 400;
    rq->show_billed = billed;
    const char *tags = json_string_value(json_object_get(obj, "tag_handling"));
    if (tags && *tags && strcmp(tags, "xml") != 0 && strcmp(tags, "html") != 0)
        return snprintf(err, errlen, "Value for 'tag_handling' not supported."), 400;
    rq->html = tags && *tags;
    rq->one_sentence = split && strcmp(split, "0") == 0;
    char ignore[2048], unused[2048];
    if (tag_list(obj, "ignore_tags", ignore, sizeof ignore) || tag_list(obj, "non_splitting_tags", unused, sizeof unused) ||
        tag_list(obj, "splitting_tags", unused, sizeof unused))
        return snprintf(err, errlen, "Value for 'ignore_tags' / 'splitting_tags' not supported."), 400;
    rq->texts = calloc(n, sizeof *rq->texts);
    rq->lens = calloc(n, sizeof *rq->lens);
    rq->target = strdup(tgt);
    rq->source = strdup(source && *source ? src : "auto");
    if (!rq->texts || !rq->lens || !rq->target || !rq->source) return snprintf(err, errlen, "out of memory"), 500;
    rq->text_is_array = 1;
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_is_array(text) ? json_array_get(text, i) : text;
        const char *t = json_string_value(e);
        if (!t) return snprintf(err, errlen, "Parameter 'text' must hold strings (item %zu)", i), 400;
        size_t len = json_string_length(e);
        if (memchr(t, '\0', len)) return snprintf(err, errlen, "Parameter 'text' holds a NUL byte (item %zu)", i), 400;
        size_t chars = mt_utf8_chars(t, len);
        if (chars > (size_t)s->cfg->max_text_chars)
            return snprintf(err, errlen, "Text %zu has %zu characters (limit %d)", i, chars, s->cfg->max_text_chars), 413;
        char *d;
        size_t dl = len;
        if (rq->html && strcmp(ignore, ",") != 0) d = mark_ignored(t, len, ignore, &dl);
        else d = strndup(t, len);
        if (!d) return snprintf(err, errlen, "out of memory"), 500;
        if (split && strcmp(split, "nonewlines") == 0 && !rq->html)
            for (char *p = d; *p; p++)
                if (*p == '\n' || *p == '\r') *p = ' ';
        rq->texts[i] = d;
        rq->lens[i] = dl;
        rq->n_texts++;
    }
    return 0;
}

static enum MHD_Result start_translate(mt_server *s, req_ctx *c)
{
    json_t *obj;
    int from_form;
    char key[256], err[512];
    int st = srv_deepl_begin(s, c, &obj, &from_form, key, sizeof key, err, sizeof err);
    if (!st) st = read_translate(s, c, obj, err, sizeof err);
    const char *glossary = st ? NULL : json_string_value(json_object_get(obj, "glossary_id"));
    if (glossary && *glossary)
        st = srv_deepl_glossary_load(s, key, glossary, json_string_value(json_object_get(obj, "source_lang")),
                                     json_string_value(json_object_get(obj, "target_lang")), &c->req.glossary, err,
                                     sizeof err);
    json_decref(obj);
    if (st) return srv_deepl_error(c, st, err);
    return srv_submit_translation(s, c, key, rate_check, srv_deepl_error);
}

enum MHD_Result srv_ep_deepl_translate(mt_server *s, req_ctx *c) { return srv_while_arriving(s, c, start_translate); }

json_t *srv_deepl_render(mt_server *s, req_ctx *c)
{
    (void)s;
    const mt_translation *res = mt_service_task_results(c->task);
    json_t *arr = json_array();
    for (int t = 0; arr && t < c->req.n_texts; t++) {
        char *text = strdup(res[t].n_best > 0 ? res[t].texts[0] : "");
        if (!text) {
            json_decref(arr);
            return NULL;
        }
        char code[40];
        srv_deepl_code(mt_service_task_route(c->task, t)->source, code, sizeof code);
        code[strcspn(code, "-")] = '\0';
        if (c->req.html) unmark(text);
        json_t *e = json_pack("{s:s, s:s}", "detected_source_language", code, "text", text);
        free(text);
        if (e && c->req.show_billed) {
            long billed = (long)mt_utf8_chars(c->req.texts[t], c->req.lens[t]);
            if (c->req.html) {
                char *src = strdup(c->req.texts[t]);
                if (src) billed -= unmark(src) * (long)strlen(IGNORE_MARK);
                free(src);
            }
            json_object_set_new(e, "billed_characters", json_integer(billed));
        }
        if (e) json_array_append_new(arr, e);
    }
    return arr ? json_pack("{s:o}", "translations", arr) : NULL;
}
