/* formats.c: file formats for translation. See include/mt/formats.h for the contract. */
#include "utf8.h"
#include "formats.h"
#include "format_int.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <libxml/parser.h>

mt_format_options mt_format_options_default(void)
{
    mt_format_options o = {
        .max_input_bytes = 10u << 20,
        .max_part_bytes = 32u << 20,
        .max_total_uncompressed = 256u << 20,
        .max_entries = 10000,
        .max_ratio = 100,
        .max_nodes = 1000000,
        .max_depth = 128,
        .max_attributes = 128,
        .max_attr_bytes = 1u << 20,
        .max_units = 100000,
        .batch_units = 32,
        .extracted = NULL,
        .child_cpu_seconds = 30,
        .child_memory = (size_t)1 << 30,
        .child_wall_ms = 60000,
    };
    return o;
}

void mt_format_global_init(void) { xmlInitParser(); }

int fmt_fail(int code, char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* ---- names and detection -------------------------------------------------------- */

static const struct {
    mt_file_format fmt;
    const char *name, *mime, *ext[2];
} formats[] = {
    {MT_FILE_TXT, "txt", "text/plain; charset=utf-8", {".txt", NULL}},
    {MT_FILE_HTML, "html", "text/html; charset=utf-8", {".html", ".htm"}},
    {MT_FILE_SRT, "srt", "application/x-subrip", {".srt", NULL}},
    {MT_FILE_DOCX, "docx",
     "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
     {".docx", NULL}},
    {MT_FILE_ODT, "odt", "application/vnd.oasis.opendocument.text", {".odt", NULL}},
};
enum { N_FORMATS = sizeof formats / sizeof formats[0] };

const char *mt_format_name(mt_file_format fmt)
{
    for (int i = 0; i < N_FORMATS; i++)
        if (formats[i].fmt == fmt) return formats[i].name;
    return "unknown";
}

const char *mt_format_mime(mt_file_format fmt)
{
    for (int i = 0; i < N_FORMATS; i++)
        if (formats[i].fmt == fmt) return formats[i].mime;
    return "application/octet-stream";
}

const char *mt_format_extensions(void) { return ".txt,.html,.htm,.srt,.docx,.odt"; }

static int has_bytes(const unsigned char *d, size_t len, const char *needle)
{
    size_t n = strlen(needle);
    for (size_t i = 0; n <= len && i <= len - n; i++)
        if (memcmp(d + i, needle, n) == 0) return 1;
    return 0;
}

/* Content sniffing, for names without a known extension. */
static mt_file_format sniff(const unsigned char *d, size_t len)
{
    if (len >= 4 && memcmp(d, "PK\3\4", 4) == 0) {
        /* ODF stores "mimetype" first and uncompressed, so its value is visible. */
        if (has_bytes(d, len < 200 ? len : 200, "application/vnd.oasis.opendocument.text"))
            return MT_FILE_ODT;
        if (has_bytes(d, len, "word/document.xml")) return MT_FILE_DOCX;
        return MT_FILE_UNKNOWN;
    }
    size_t head = len < 1024 ? len : 1024;
    char buf[1025];
    for (size_t i = 0; i < head; i++) buf[i] = (char)tolower(d[i]);
    buf[head] = '\0';
    if (strstr(buf, "<!doctype html") || strstr(buf, "<html")) return MT_FILE_HTML;
    /* SubRip: a number line, then a timing line. */
    const char *p = buf;
    if (strncmp(p, "\xef\xbb\xbf", 3) == 0) p += 3;
    while (*p == '\r' || *p == '\n') p++;
    const char *nl = strchr(p, '\n');
    const char *nl2 = nl ? strchr(nl + 1, '\n') : NULL;
    const char *arrow = nl ? strstr(nl, "-->") : NULL;
    if (isdigit((unsigned char)*p) && arrow && (!nl2 || arrow < nl2)) return MT_FILE_SRT;
    for (size_t i = 0; i < len; i++)
        if (d[i] == 0) return MT_FILE_UNKNOWN;
    return MT_FILE_TXT;
}

mt_file_format mt_format_detect(const char *filename, const unsigned char *data, size_t len)
{
    const char *dot = filename ? strrchr(filename, '.') : NULL;
    if (dot)
        for (int i = 0; i < N_FORMATS; i++)
            for (int e = 0; e < 2; e++)
                if (formats[i].ext[e] && strcasecmp(dot, formats[i].ext[e]) == 0)
                    return formats[i].fmt;
    return data ? sniff(data, len) : MT_FILE_UNKNOWN;
}

/* ---- units: the texts of one file, translated in batches -------------------------- */

int fmt_units_add(fmt_units *u, const char *text, size_t len, const mt_format_options *opt,
                  char *err, size_t errlen)
{
    if (u->n >= opt->max_units)
        return fmt_fail(MT_FORMAT_TOO_LARGE, err, errlen,
                        "more than %ld translatable units (lines, cues or paragraphs)",
                        opt->max_units);
    if (u->n == u->cap) {
        long cap = u->cap ? u->cap * 2 : 64;
        const char **t = realloc(u->texts, (size_t)cap * sizeof *t);
        if (t) u->texts = t;
        size_t *l = realloc(u->lens, (size_t)cap * sizeof *l);
        if (l) u->lens = l;
        if (!t || !l) return fmt_fail(MT_FORMAT_FAILED, err, errlen, "out of memory");
        u->cap = cap;
    }
    u->texts[u->n] = text;
    u->lens[u->n] = len;
    u->n++;
    return 0;
}

void fmt_units_free(fmt_units *u)
{
    if (u->out)
        for (long i = 0; i < u->n; i++) free(u->out[i]);
    free(u->out);
    free(u->texts);
    free(u->lens);
}

/* Code points: the bytes that do not continue a UTF-8 sequence. */
static long long count_chars(const char *s, size_t len)
{
    long long n = 0;
    for (size_t i = 0; i < len; i++) n += ((unsigned char)s[i] & 0xC0) != 0x80;
    return n;
}

int fmt_units_translate(fmt_units *u, int html, const mt_format_options *opt,
                        mt_format_translate_fn translate, mt_format_progress_fn progress,
                        void *user, char *err, size_t errlen)
{
    if (opt->extracted) {
        long long chars = 0;
        for (long i = 0; i < u->n; i++) chars += count_chars(u->texts[i], u->lens[i]);
        char msg[512] = "";
        if (opt->extracted(user, u->n, chars, msg, sizeof msg) != 0)
            return fmt_fail(MT_FORMAT_REFUSED, err, errlen, "%s",
                            msg[0] ? msg : "the document was refused");
    }
    u->out = calloc(u->n > 0 ? (size_t)u->n : 1, sizeof *u->out);
    if (!u->out) return fmt_fail(MT_FORMAT_FAILED, err, errlen, "out of memory");
    if (progress) progress(user, 0, u->n);
    int batch = opt->batch_units > 0 ? opt->batch_units : 1;
    for (long i = 0; i < u->n; i += batch) {
        int k = (int)(u->n - i < batch ? u->n - i : batch);
        char msg[512] = "";
        if (translate(user, u->texts + i, u->lens + i, k, html, u->out + i, msg,
                      sizeof msg) != 0) {
            for (int j = 0; j < k; j++) u->out[i + j] = NULL;
            return fmt_fail(MT_FORMAT_FAILED, err, errlen, "translating unit %ld: %s", i + 1,
                            msg[0] ? msg : "translation failed");
        }
        for (int j = 0; j < k; j++)
            if (!u->out[i + j])
                return fmt_fail(MT_FORMAT_FAILED, err, errlen,
                                "translating unit %ld: no translation returned", i + j + 1);
        if (progress) progress(user, i + k, u->n);
    }
    return 0;
}

/* ---- growable output buffer ----------------------------------------------------------- */

void fmt_buf_put(fmt_buf *b, const void *data, size_t len)
{
    if (b->oom) return;
    if (b->n + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + len + 1) cap *= 2;
        unsigned char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    if (len) memcpy(b->p + b->n, data, len);
    b->n += len;
    b->p[b->n] = '\0';
}

int fmt_buf_finish(fmt_buf *b, unsigned char **out, size_t *out_len, char *err, size_t errlen)
{
    if (!b->p) fmt_buf_put(b, "", 0);
    if (b->oom) {
        free(b->p);
        b->p = NULL;
        return fmt_fail(MT_FORMAT_FAILED, err, errlen, "out of memory");
    }
    *out = b->p;
    *out_len = b->n;
    return 0;
}

int fmt_is_blank(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (!isspace((unsigned char)s[i])) return 0;
    return 1;
}

/* Byte offset of the first invalid UTF-8 sequence, or -1 if all valid. */
static long utf8_invalid_at(const unsigned char *s, size_t len)
{
    size_t bad;
    return mt_utf8_check((const char *)s, len, &bad) ? -1 : (long)bad;
}

/* ---- entry point ------------------------------------------------------------------------ */

int mt_format_translate(mt_file_format fmt, const unsigned char *data, size_t len,
                        const mt_format_options *opt, mt_format_translate_fn translate,
                        mt_format_progress_fn progress, void *user, unsigned char **out,
                        size_t *out_len, char *err, size_t errlen)
{
    mt_format_options def = mt_format_options_default();
    if (!opt) opt = &def;
    if (!translate || !out || !out_len || (!data && len)) {
        return fmt_fail(MT_FORMAT_FAILED, err, errlen, "bad arguments");
    }
    *out = NULL;
    *out_len = 0;
    if (len > opt->max_input_bytes) {
        return fmt_fail(MT_FORMAT_TOO_LARGE, err, errlen,
                        "%s: the file has %zu bytes, more than the limit of %zu",
                        mt_format_name(fmt), len, opt->max_input_bytes);
    }
    if (!data) data = (const unsigned char *)"";
    if (fmt == MT_FILE_TXT || fmt == MT_FILE_SRT || fmt == MT_FILE_HTML) {
        long bad = utf8_invalid_at(data, len);
        if (bad >= 0) {
            return fmt_fail(MT_FORMAT_INVALID, err, errlen,
                            "%s: not UTF-8 text (invalid byte 0x%02x at offset %ld)",
                            mt_format_name(fmt), data[bad], bad);
        }
        /* Translations come back NUL-terminated, so a NUL inside a text cannot survive. */
        const unsigned char *nul = memchr(data, 0, len);
        if (nul) {
            return fmt_fail(MT_FORMAT_INVALID, err, errlen,
                            "%s: not a text file (NUL byte at offset %ld)", mt_format_name(fmt),
                            (long)(nul - data));
        }
    }
    switch (fmt) {
    case MT_FILE_TXT:
        return fmt_do_txt((const char *)data, len, opt, translate, progress, user, out, out_len,
                          err, errlen);
    case MT_FILE_SRT:
        return fmt_do_srt((const char *)data, len, opt, translate, progress, user, out, out_len,
                          err, errlen);
    case MT_FILE_HTML:
        return fmt_do_html((const char *)data, len, opt, translate, progress, user, out,
                           out_len, err, errlen);
    case MT_FILE_DOCX:
    case MT_FILE_ODT:
        return fmt_do_office(fmt, data, len, opt, translate, progress, user, out, out_len, err,
                             errlen);
    default:
        return fmt_fail(MT_FORMAT_INVALID, err, errlen, "unsupported file format (supported: %s)",
                        mt_format_extensions());
    }
}
