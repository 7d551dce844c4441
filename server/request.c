/* request.c: POST /translate bodies -> mt_request (see request.h). */
#include "request.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "status.h"
#include "utf8.h"

/* ------------------------------------------------------------------ content type */

static int ieq_n(const char *a, size_t an, const char *b)
{
    return an == strlen(b) && strncasecmp(a, b, an) == 0;
}

mt_content_type mt_request_content_type(const char *header, char *boundary, size_t cap,
                                        char *err, size_t errlen)
{
    if (boundary && cap) boundary[0] = '\0';
    if (!header) return MT_CT_JSON; /* no Content-Type: assume JSON */
    const char *p = header;
    while (*p == ' ' || *p == '\t') p++;
    const char *semi = strchr(p, ';');
    const char *end = semi ? semi : p + strlen(p);
    while (end > p && (end[-1] == ' ' || end[-1] == '\t')) end--;
    size_t n = (size_t)(end - p);
    mt_content_type type;
    if (ieq_n(p, n, "application/json") || ieq_n(p, n, "text/json") ||
        (n > 5 && strncasecmp(p, "application/", 12) == 0 && strncasecmp(end - 5, "+json", 5) == 0))
        type = MT_CT_JSON;
    else if (ieq_n(p, n, "application/x-www-form-urlencoded"))
        type = MT_CT_FORM;
    else if (ieq_n(p, n, "multipart/form-data"))
        type = MT_CT_MULTIPART;
    else {
        char shown[64];
        snprintf(shown, sizeof shown, "%.*s", (int)(n < 60 ? n : 60), p);
        for (char *c = shown; *c; c++)
            if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f || *c == '"') *c = '?';
        mt_error(0, err, errlen, "unsupported content type '%s': send application/json "
             "(or application/x-www-form-urlencoded, multipart/form-data)", shown);
        return MT_CT_UNSUPPORTED;
    }
    /* Parameters: charset must be UTF-8; multipart needs its boundary. */
    while (semi) {
        p = semi + 1;
        semi = strchr(p, ';');
        end = semi ? semi : p + strlen(p);
        while (p < end && (*p == ' ' || *p == '\t')) p++;
        const char *eq = memchr(p, '=', (size_t)(end - p));
        if (!eq) continue;
        const char *k = p, *ke = eq;
        while (ke > k && (ke[-1] == ' ' || ke[-1] == '\t')) ke--;
        const char *v = eq + 1, *ve = end;
        while (v < ve && (*v == ' ' || *v == '\t')) v++;
        while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t')) ve--;
        if (ve - v >= 2 && *v == '"' && ve[-1] == '"') {
            v++;
            ve--;
        }
        size_t vn = (size_t)(ve - v);
        if (ieq_n(k, (size_t)(ke - k), "charset")) {
            if (!ieq_n(v, vn, "utf-8") && !ieq_n(v, vn, "utf8") && !ieq_n(v, vn, "us-ascii")) {
                mt_error(0, err, errlen, "unsupported charset '%.*s': send UTF-8",
                     (int)(vn < 40 ? vn : 40), v);
                return MT_CT_UNSUPPORTED;
            }
        } else if (ieq_n(k, (size_t)(ke - k), "boundary") && type == MT_CT_MULTIPART) {
            if (vn == 0 || vn > 70 || !boundary || vn >= cap) {
                mt_error(0, err, errlen, "invalid multipart boundary");
                return MT_CT_UNSUPPORTED;
            }
            memcpy(boundary, v, vn);
            boundary[vn] = '\0';
        }
    }
    if (type == MT_CT_MULTIPART && (!boundary || !boundary[0])) {
        mt_error(0, err, errlen, "multipart/form-data without a boundary parameter");
        return MT_CT_UNSUPPORTED;
    }
    return type;
}

/* ------------------------------------------------------------------ form bodies */

/* Adds a field to obj: the first value is a string, repeated names become an array. */
static int add_field(json_t *obj, const char *name, size_t nlen, const char *val, size_t vlen,
                     char *err, size_t errlen)
{
    size_t bad;
    if (!mt_utf8_check(name, nlen, &bad) || memchr(name, '\0', nlen))
        return mt_error(400, err, errlen, "form field name is not valid UTF-8 text");
    char key[128];
    if (nlen >= sizeof key) return 0; /* no field we read has a long name: ignore it */
    memcpy(key, name, nlen);
    key[nlen] = '\0';
    if (!mt_utf8_check(val, vlen, &bad))
        return mt_error(400, err, errlen, "form field '%s' is not valid UTF-8 (byte %zu)", key, bad);
    if (memchr(val, '\0', vlen))
        return mt_error(400, err, errlen, "form field '%s' contains a NUL character", key);
    json_t *s = json_stringn(val, vlen);
    if (!s) return mt_error(500, err, errlen, "out of memory");
    json_t *old = json_object_get(obj, key);
    if (!old) {
        if (json_object_set_new(obj, key, s)) return mt_error(500, err, errlen, "out of memory");
        return 0;
    }
    if (json_is_array(old)) {
        if (json_array_append_new(old, s)) return mt_error(500, err, errlen, "out of memory");
        return 0;
    }
    json_t *arr = json_array();
    if (!arr || json_array_append(arr, old) || json_array_append_new(arr, s) ||
        json_object_set_new(obj, key, arr)) {
        json_decref(arr);
        return mt_error(500, err, errlen, "out of memory");
    }
    return 0;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Percent-decodes s[0, n) ('+' is a space) into out; returns the length or -1. */
static long url_decode(const char *s, size_t n, char *out, size_t *bad_at)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '+') {
            out[o++] = ' ';
        } else if (s[i] == '%') {
            int a = i + 1 < n ? hexval((unsigned char)s[i + 1]) : -1;
            int b = i + 2 < n ? hexval((unsigned char)s[i + 2]) : -1;
            if (a < 0 || b < 0) {
                *bad_at = i;
                return -1;
            }
            out[o++] = (char)(a * 16 + b);
            i += 2;
        } else {
            out[o++] = s[i];
        }
    }
    return (long)o;
}

static int decode_urlencoded(const char *body, size_t len, json_t *obj, char *err, size_t errlen)
{
    char *buf = malloc(len + 1);
    if (!buf) return mt_error(500, err, errlen, "out of memory");
    size_t i = 0;
    int rc = 0;
    while (i < len && !rc) {
        size_t j = i;
        while (j < len && body[j] != '&') j++;
        if (j > i) {
            const char *eq = memchr(body + i, '=', j - i);
            size_t kend = eq ? (size_t)(eq - body) : j;
            size_t bad = 0;
            long kl = url_decode(body + i, kend - i, buf, &bad);
            if (kl < 0) {
                rc = mt_error(400, err, errlen, "invalid percent-encoding in form body at byte %zu",
                          i + bad);
                break;
            }
            /* The value is decoded after the key, in the same buffer behind it. */
            char *vbuf = buf + kl;
            long vl = 0;
            if (eq) {
                vl = url_decode(eq + 1, j - kend - 1, vbuf, &bad);
                if (vl < 0) {
                    rc = mt_error(400, err, errlen,
                              "invalid percent-encoding in form body at byte %zu",
                              kend + 1 + bad);
                    break;
                }
            }
            rc = add_field(obj, buf, (size_t)kl, vbuf, (size_t)vl, err, errlen);
        }
        i = j + 1;
    }
    free(buf);
    return rc;
}

static const char *find_mem(const char *h, size_t hn, const char *n, size_t nn)
{
    if (nn == 0 || hn < nn) return NULL;
    return memmem(h, hn, n, nn);
}

/* Reads one Content-Disposition parameter value (quoted or bare) at q (after "key=");
 * returns the position after it, or NULL for an unterminated quote. */
static const char *disposition_value(const char *q, const char *qe, const char **v, size_t *vn)
{
    if (q < qe && *q == '"') {
        const char *cq = memchr(q + 1, '"', (size_t)(qe - q - 1));
        if (!cq) return NULL;
        *v = q + 1;
        *vn = (size_t)(cq - q - 1);
        return cq + 1;
    }
    *v = q;
    while (q < qe && *q != ';' && *q != ' ') q++;
    *vn = (size_t)(q - *v);
    return q;
}

/* Fills a part's name, filename and content type from its header block [p, hend). */
static int part_headers(const char *p, const char *hend, mt_multipart_part *part, char *err,
                        size_t errlen)
{
    for (const char *h = p; h < hend;) {
        const char *le = find_mem(h, (size_t)(hend + 2 - h), "\r\n", 2);
        if (!le || le > hend) le = hend;
        size_t hl = (size_t)(le - h);
        if (hl > 20 && strncasecmp(h, "content-disposition:", 20) == 0) {
            const char *q = h + 20, *qe = le;
            while (q < qe) {
                while (q < qe && (*q == ' ' || *q == ';' || *q == '\t')) q++;
                const char **v = NULL;
                size_t *vn = NULL;
                if (qe - q > 5 && strncasecmp(q, "name=", 5) == 0) {
                    q += 5, v = &part->name, vn = &part->name_len;
                } else if (qe - q > 9 && strncasecmp(q, "filename=", 9) == 0) {
                    q += 9, v = &part->filename, vn = &part->filename_len;
                    part->has_filename = 1;
                }
                if (v) {
                    q = disposition_value(q, qe, v, vn);
                    if (!q) return mt_error(400, err, errlen, "malformed multipart body: unterminated quoted value");
                } else {
                    while (q < qe && *q != ';') q++;
                }
            }
        } else if (hl > 13 && strncasecmp(h, "content-type:", 13) == 0) {
            const char *v = h + 13;
            while (v < le && (*v == ' ' || *v == '\t')) v++;
            part->content_type = v;
            part->content_type_len = (size_t)(le - v);
        }
        h = le + 2;
    }
    return 0;
}

int mt_multipart_parse(const char *boundary, const char *body, size_t len,
                       mt_multipart_fn fn, void *user, char *err, size_t errlen)
{
    char delim[80];
    int dl = snprintf(delim, sizeof delim, "--%s", boundary ? boundary : "");
    if (dl <= 2 || (size_t)dl >= sizeof delim)
        return mt_error(400, err, errlen, "invalid multipart boundary");
    char crd[84];
    int cl = snprintf(crd, sizeof crd, "\r\n%s", delim);
    /* The first delimiter: at the start or after a CRLF (a preamble may precede). */
    const char *p = NULL;
    if (len >= (size_t)dl && memcmp(body, delim, (size_t)dl) == 0) {
        p = body;
    } else {
        const char *f = find_mem(body, len, crd, (size_t)cl);
        if (f) p = f + 2;
    }
    if (!p) return mt_error(400, err, errlen, "malformed multipart body: boundary not found");
    const char *end = body + len;
    for (int index = 0;; index++) {
        p += dl;
        if (end - p >= 2 && p[0] == '-' && p[1] == '-') return 0; /* closing delimiter */
        while (p < end && (*p == ' ' || *p == '\t')) p++;
        if (end - p < 2 || p[0] != '\r' || p[1] != '\n')
            return mt_error(400, err, errlen, "malformed multipart body: bad delimiter line (part %d)", index + 1);
        p += 2;
        const char *hend, *content;
        if (end - p >= 2 && p[0] == '\r' && p[1] == '\n') {
            hend = p; /* no headers at all */
            content = p + 2;
        } else {
            hend = find_mem(p, (size_t)(end - p), "\r\n\r\n", 4);
            if (!hend)
                return mt_error(400, err, errlen, "malformed multipart body: unterminated headers of part %d", index + 1);
            content = hend + 4;
        }
        mt_multipart_part part = {0};
        int rc = part_headers(p, hend, &part, err, errlen);
        if (rc) return rc;
        const char *next = find_mem(content, (size_t)(end - content), crd, (size_t)cl);
        if (!next)
            return mt_error(400, err, errlen, "malformed multipart body: missing closing boundary after part %d", index + 1);
        if (!part.name)
            return mt_error(400, err, errlen, "malformed multipart body: part %d without a form-data name", index + 1);
        part.data = content;
        part.len = (size_t)(next - content);
        if ((rc = fn(user, &part, err, errlen))) return rc;
        p = next + 2;
    }
}

static int field_part(void *user, const mt_multipart_part *part, char *err, size_t errlen)
{
    return add_field(user, part->name, part->name_len, part->data, part->len, err, errlen);
}

static int decode_multipart(const char *boundary, const char *body, size_t len, json_t *obj,
                            char *err, size_t errlen)
{
    return mt_multipart_parse(boundary, body, len, field_part, obj, err, errlen);
}

int mt_request_decode(mt_content_type type, const char *boundary, const char *body, size_t len,
                      json_t **out, int *from_form, char *err, size_t errlen)
{
    *out = NULL;
    *from_form = 0;
    if (type == MT_CT_UNSUPPORTED) return mt_error(415, err, errlen, "unsupported content type");
    size_t i = 0;
    while (i < len && (body[i] == ' ' || body[i] == '\t' || body[i] == '\r' || body[i] == '\n')) i++;
    if (i == len) return mt_error(400, err, errlen, "request body is empty: send a JSON object such as "
                              "{\"text\": \"Hello\", \"source\": \"en\", \"target\": \"de\"}");
    /* `curl -d '{...}'` sends JSON labelled as a form: take it for what it is. */
    if (type == MT_CT_FORM && body[i] == '{') type = MT_CT_JSON;
    if (type == MT_CT_JSON) {
        size_t bad;
        if (!mt_utf8_check(body, len, &bad))
            return mt_error(400, err, errlen, "request body is not valid UTF-8 (byte %zu)", bad);
        json_error_t je;
        json_t *j = json_loadb(body, len, 0, &je);
        if (!j)
            return mt_error(400, err, errlen, "invalid JSON at line %d, column %d: %s", je.line,
                        je.column, je.text);
        if (!json_is_object(j)) {
            json_decref(j);
            return mt_error(400, err, errlen, "request body must be a JSON object");
        }
        *out = j;
        return 0;
    }
    *from_form = 1;
    json_t *obj = json_object();
    if (!obj) return mt_error(500, err, errlen, "out of memory");
    int rc = type == MT_CT_FORM ? decode_urlencoded(body, len, obj, err, errlen)
                                : decode_multipart(boundary ? boundary : "", body, len, obj, err, errlen);
    if (rc) {
        json_decref(obj);
        return rc;
    }
    *out = obj;
    return 0;
}

const char *mt_request_api_key(const json_t *obj)
{
    const json_t *k = json_object_get(obj, "api_key");
    if (json_is_array(k)) k = json_array_get(k, 0);
    return json_string_value(k);
}

/* ------------------------------------------------------------------ fields */

void mt_request_clear(mt_request *req)
{
    for (int i = 0; req->texts && i < req->n_texts; i++) free(req->texts[i]);
    free(req->texts);
    free(req->lens);
    free(req->source);
    free(req->target);
    for (int i = 0; req->target_prefix && i < req->n_texts; i++) free(req->target_prefix[i]);
    free(req->target_prefix);
    memset(req, 0, sizeof *req);
}

/* Reads an optional integer field into *out (untouched when absent or null). */
static int get_int(const json_t *obj, const char *key, int from_form, long lo, long hi, int *out,
                   char *err, size_t errlen)
{
    const json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) return 0;
    if (from_form && json_is_array(v)) v = json_array_get(v, json_array_size(v) - 1);
    long long x;
    if (json_is_integer(v)) {
        x = json_integer_value(v);
    } else if (from_form && json_is_string(v)) {
        const char *s = json_string_value(v);
        char *e;
        while (*s == ' ') s++;
        if (!*s) return 0; /* an empty form field counts as absent */
        x = strtoll(s, &e, 10);
        while (*e == ' ') e++;
        if (*e || e == s)
            return mt_error(400, err, errlen, "field '%s' must be an integer between %ld and %ld",
                        key, lo, hi);
    } else {
        return mt_error(400, err, errlen, "field '%s' must be an integer between %ld and %ld", key,
                    lo, hi);
    }
    if (x < lo || x > hi)
        return mt_error(400, err, errlen, "field '%s' must be an integer between %ld and %ld (got %lld)",
                    key, lo, hi, x);
    *out = (int)x;
    return 0;
}

/* Language codes: ASCII letters, digits, '-' and '_', at most 32 bytes. */
static int get_lang(const json_t *obj, const char *key, int from_form, char **out, char *err,
                    size_t errlen)
{
    const json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) return 0;
    if (from_form && json_is_array(v)) v = json_array_get(v, json_array_size(v) - 1);
    if (!json_is_string(v)) return mt_error(400, err, errlen, "field '%s' must be a string", key);
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (n == 0) {
        if (from_form) return 0;
        return mt_error(400, err, errlen, "field '%s' must not be empty", key);
    }
    int ok = n <= 32;
    for (size_t i = 0; ok && i < n; i++)
        ok = isalnum((unsigned char)s[i]) || s[i] == '-' || s[i] == '_';
    if (!ok) return mt_error(400, err, errlen, "field '%s' is not a language code (such as \"en\")", key);
    if (!(*out = strdup(s))) return mt_error(500, err, errlen, "out of memory");
    return 0;
}

static int add_text(mt_request *req, const json_t *s, int index, const mt_request_limits *lim,
                    char *err, size_t errlen)
{
    const char *t = json_string_value(s);
    size_t n = json_string_length(s);
    if (memchr(t, '\0', n)) return mt_error(400, err, errlen, "text contains a NUL character");
    size_t bad;
    if (!mt_utf8_check(t, n, &bad))
        return mt_error(400, err, errlen, "text is not valid UTF-8 (byte %zu)", bad);
    size_t chars = mt_utf8_chars(t, n);
    if (chars > (size_t)lim->max_text_chars) {
        if (req->text_is_array)
            return mt_error(413, err, errlen, "text %d has %zu characters (limit %d)", index, chars,
                        lim->max_text_chars);
        return mt_error(413, err, errlen, "text has %zu characters (limit %d)", chars,
                    lim->max_text_chars);
    }
    char *d = malloc(n + 1);
    if (!d) return mt_error(500, err, errlen, "out of memory");
    memcpy(d, t, n + 1);
    req->texts[req->n_texts] = d;
    req->lens[req->n_texts] = n;
    req->n_texts++;
    return 0;
}

/* One text's prefix as a string (text, or ids from a string or an array of integers). */
static int prefix_string(const json_t *v, const char *key, int ids, char **out, char *err, size_t errlen)
{
    if (json_is_null(v)) return 0;
    if (json_is_string(v)) {
        size_t bad;
        if (!mt_utf8_check(json_string_value(v), json_string_length(v), &bad) ||
            memchr(json_string_value(v), 0, json_string_length(v)))
            return mt_error(400, err, errlen, "field '%s' is not valid UTF-8 text", key);
        if (!(*out = strdup(json_string_value(v)))) return mt_error(500, err, errlen, "out of memory");
        return 0;
    }
    if (ids && json_is_array(v)) {
        size_t n = json_array_size(v);
        char *s = malloc(n * 21 + 1), *p = s;
        if (!s) return mt_error(500, err, errlen, "out of memory");
        *p = 0;
        for (size_t i = 0; i < n; i++) {
            const json_t *x = json_array_get(v, i);
            if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) > 2147483647) {
                free(s);
                return mt_error(400, err, errlen, "field '%s' must hold target ids (integers >= 0)", key);
            }
            p += sprintf(p, i ? " %lld" : "%lld", (long long)json_integer_value(x));
        }
        *out = s;
        return 0;
    }
    return mt_error(400, err, errlen, "field '%s' must be %s", key,
                    ids ? "a string of target ids, an array of ids, or one of those per text"
                        : "a string, or an array of strings (one per text)");
}

/* "target_prefix" (text) or "target_prefix_ids": one for every text, or one per text. */
static int parse_prefix(const json_t *obj, mt_request *req, char *err, size_t errlen)
{
    const json_t *tv = json_object_get(obj, "target_prefix"), *iv = json_object_get(obj, "target_prefix_ids");
    if (tv && json_is_null(tv)) tv = NULL;
    if (iv && json_is_null(iv)) iv = NULL;
    if (!tv && !iv) return 0;
    if (tv && iv) return mt_error(400, err, errlen, "give 'target_prefix' or 'target_prefix_ids', not both");
    const json_t *v = tv ? tv : iv;
    const char *key = tv ? "target_prefix" : "target_prefix_ids";
    req->prefix_ids = iv != NULL;
    req->target_prefix = calloc((size_t)req->n_texts + 1, sizeof *req->target_prefix);
    if (!req->target_prefix) return mt_error(500, err, errlen, "out of memory");
    /* per text: an array of strings (or of id arrays); else one for all */
    int per_text = json_is_array(v) && json_array_size(v) > 0 &&
                   (tv || json_is_array(json_array_get(v, 0)) || json_is_string(json_array_get(v, 0)) ||
                    json_is_null(json_array_get(v, 0)));
    if (per_text && (size_t)req->n_texts != json_array_size(v))
        return mt_error(400, err, errlen, "field '%s' has %zu entries for %d texts", key, json_array_size(v),
                        req->n_texts);
    for (int i = 0; i < req->n_texts; i++) {
        int rc = prefix_string(per_text ? json_array_get(v, (size_t)i) : v, key, req->prefix_ids,
                               &req->target_prefix[i], err, errlen);
        if (rc) return rc;
    }
    return 0;
}

/* The decoding options of the request's form, as options.h's table names them; 0 or 400
 * with the table's message. */
static int read_decoding(const json_t *obj, int from_form, const mt_request_limits *lim, mt_request *req,
                         char *err, size_t errlen)
{
    unsigned form = req->form == MT_FORM_LIBRE ? MT_OPT_LIBRE : MT_OPT_NATIVE;
    for (int id = 0; id < MT_OPT_COUNT; id++) {
        const mt_option_desc *d = mt_option(id);
        const json_t *v = json_object_get(obj, d->name);
        if (!(d->where & form) || !v || json_is_null(v)) continue;
        if (from_form && json_is_array(v)) v = json_array_get(v, json_array_size(v) - 1);
        char label[64];
        snprintf(label, sizeof label, "field '%s'", d->name);
        double max = id == MT_OPT_BEAM_SIZE || id == MT_OPT_N_BEST ? lim->max_beam_size : 0;
        int rc;
        if (from_form && json_is_string(v)) {
            const char *t = json_string_value(v);
            while (*t == ' ') t++;
            if (!*t) continue; /* an empty form field counts as absent */
            rc = mt_option_parse(&req->decoding, id, t, max, label, err, errlen);
        } else if (d->type == MT_OPT_BOOL && json_is_boolean(v)) {
            rc = mt_option_set(&req->decoding, id, json_is_true(v), max, label, err, errlen);
        } else if (json_is_integer(v)) {
            rc = mt_option_set(&req->decoding, id, (double)json_integer_value(v), max, label, err, errlen);
        } else if (json_is_real(v) && d->type != MT_OPT_BOOL) {
            rc = mt_option_set(&req->decoding, id, json_real_value(v), max, label, err, errlen);
        } else {
            rc = mt_option_set(&req->decoding, id, NAN, max, label, err, errlen); /* names the type */
        }
        if (rc) return 400;
    }
    if (req->form == MT_FORM_LIBRE) { /* LibreTranslate's n-best: "alternatives" (also as "3") */
        int alternatives = 0;
        int rc = get_int(obj, "alternatives", 1, 0, lim->max_beam_size - 1, &alternatives, err, errlen);
        if (rc) return rc;
        if (alternatives > 0) mt_option_set(&req->decoding, MT_OPT_N_BEST, alternatives + 1, 0, "", err, errlen);
    }
    return 0;
}

/* "format", the decoding options and the target prefix; 0 or an HTTP status with a message. */
static int parse_options(const json_t *obj, int from_form, const mt_request_limits *lim,
                         mt_request *req, char *err, size_t errlen)
{
    const json_t *fmt = json_object_get(obj, "format");
    if (from_form && json_is_array(fmt)) fmt = json_array_get(fmt, 0);
    if (fmt && !json_is_null(fmt)) {
        const char *f = json_string_value(fmt);
        if (!f) return mt_error(400, err, errlen, "field 'format' must be \"text\" or \"html\"");
        if (strcasecmp(f, "html") == 0) req->html = 1;
        else if (strcasecmp(f, "text") != 0 && !(from_form && !*f))
            return mt_error(400, err, errlen, "field 'format' must be \"text\" or \"html\"");
    }
    int rc = read_decoding(obj, from_form, lim, req, err, errlen);
    return rc ? rc : parse_prefix(obj, req, err, errlen);
}

int mt_request_parse(const json_t *obj, int from_form, const mt_request_limits *lim,
                     mt_request *req, char *err, size_t errlen)
{
    memset(req, 0, sizeof *req);
    const char *field = "text";
    const json_t *t = json_object_get(obj, "q");
    if (t && !json_is_null(t)) {
        req->form = MT_FORM_LIBRE;
        field = "q";
    } else {
        t = json_object_get(obj, "text");
    }
    if (!t || json_is_null(t))
        return mt_error(400, err, errlen, "missing field 'text' (or 'q' as LibreTranslate clients "
                    "send): the text to translate");
    int rc = 0;
    size_t n;
    if (json_is_string(t)) {
        n = 1;
    } else if (json_is_array(t)) {
        n = json_array_size(t);
        req->text_is_array = 1;
        for (size_t i = 0; i < n; i++)
            if (!json_is_string(json_array_get(t, i)))
                return mt_error(400, err, errlen,
                            "field '%s' must be a string or an array of strings (element %zu is not a string)",
                            field, i);
    } else {
        return mt_error(400, err, errlen, "field '%s' must be a string or an array of strings", field);
    }
    if (n > (size_t)lim->max_texts)
        return mt_error(413, err, errlen, "too many texts: %zu (limit %d)", n, lim->max_texts);
    req->texts = calloc(n + 1, sizeof *req->texts);
    req->lens = calloc(n + 1, sizeof *req->lens);
    if (!req->texts || !req->lens) {
        rc = mt_error(500, err, errlen, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n && !rc; i++)
        rc = add_text(req, json_is_string(t) ? t : json_array_get(t, i), (int)i, lim, err, errlen);
    if (rc) goto out;

    if ((rc = get_lang(obj, "source", from_form, &req->source, err, errlen))) goto out;
    if ((rc = get_lang(obj, "target", from_form, &req->target, err, errlen))) goto out;
    /* LibreTranslate answers 400 to an empty q (a "" or an empty list) and to a missing
     * target; its clients rely on it, so the LibreTranslate form does the same. */
    if (req->form == MT_FORM_LIBRE) {
        if (req->n_texts == 0 || (!req->text_is_array && req->lens[0] == 0)) {
            rc = mt_error(400, err, errlen, "Invalid request: empty q parameter");
            goto out;
        }
        if (!req->target) {
            rc = mt_error(400, err, errlen, "Invalid request: missing target parameter");
            goto out;
        }
    }

    rc = parse_options(obj, from_form, lim, req, err, errlen);
out:
    if (rc) mt_request_clear(req);
    return rc;
}
