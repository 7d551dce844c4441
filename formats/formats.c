/* formats.c: file formats for translation. See formats.h for the contract. */
#include "utf8.h"
#include "formats.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <zip.h>

mt_format_options mt_format_options_default(void)
{
    mt_format_options o = {
        .max_input_bytes = 10u << 20,
        .max_part_bytes = 64u << 20,
        .max_total_uncompressed = 256u << 20,
        .max_entries = 10000,
        .max_units = 100000,
        .batch_units = 32,
    };
    return o;
}

void mt_format_global_init(void) { xmlInitParser(); }

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
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

typedef struct {
    const char **texts;
    size_t *lens;
    char **out;
    long n, cap;
} units;

static int units_add(units *u, const char *text, size_t len, const mt_format_options *opt,
                     char *err, size_t errlen)
{
    if (u->n >= opt->max_units) {
        set_err(err, errlen, "more than %ld translatable units (lines, cues or paragraphs)",
                opt->max_units);
        return -1;
    }
    if (u->n == u->cap) {
        long cap = u->cap ? u->cap * 2 : 64;
        const char **t = realloc(u->texts, (size_t)cap * sizeof *t);
        if (t) u->texts = t;
        size_t *l = realloc(u->lens, (size_t)cap * sizeof *l);
        if (l) u->lens = l;
        if (!t || !l) {
            set_err(err, errlen, "out of memory");
            return -1;
        }
        u->cap = cap;
    }
    u->texts[u->n] = text;
    u->lens[u->n] = len;
    u->n++;
    return 0;
}

static void units_free(units *u)
{
    if (u->out)
        for (long i = 0; i < u->n; i++) free(u->out[i]);
    free(u->out);
    free(u->texts);
    free(u->lens);
}

/* Translates all units into u->out, batch by batch, reporting progress. */
static int units_translate(units *u, int html, const mt_format_options *opt,
                           mt_format_translate_fn translate, mt_format_progress_fn progress,
                           void *user, char *err, size_t errlen)
{
    u->out = calloc(u->n > 0 ? (size_t)u->n : 1, sizeof *u->out);
    if (!u->out) {
        set_err(err, errlen, "out of memory");
        return -1;
    }
    if (progress) progress(user, 0, u->n);
    int batch = opt->batch_units > 0 ? opt->batch_units : 1;
    for (long i = 0; i < u->n; i += batch) {
        int k = (int)(u->n - i < batch ? u->n - i : batch);
        char msg[512] = "";
        if (translate(user, u->texts + i, u->lens + i, k, html, u->out + i, msg,
                      sizeof msg) != 0) {
            for (int j = 0; j < k; j++) u->out[i + j] = NULL;
            set_err(err, errlen, "translating unit %ld: %s", i + 1,
                    msg[0] ? msg : "translation failed");
            return -1;
        }
        for (int j = 0; j < k; j++) {
            if (!u->out[i + j]) {
                set_err(err, errlen, "translating unit %ld: no translation returned",
                        i + j + 1);
                return -1;
            }
        }
        if (progress) progress(user, i + k, u->n);
    }
    return 0;
}

/* ---- growable output buffer ----------------------------------------------------------- */

typedef struct {
    unsigned char *p;
    size_t n, cap;
    int oom;
} buf;

static void buf_put(buf *b, const void *data, size_t len)
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
    memcpy(b->p + b->n, data, len);
    b->n += len;
    b->p[b->n] = '\0';
}

static int buf_finish(buf *b, unsigned char **out, size_t *out_len, char *err, size_t errlen)
{
    if (b->oom) {
        free(b->p);
        set_err(err, errlen, "out of memory");
        return -1;
    }
    if (!b->p) buf_put(b, "", 0);
    *out = b->p;
    *out_len = b->n;
    return b->oom ? -1 : 0;
}

/* Byte offset of the first invalid UTF-8 sequence, or -1 if all valid. */
static long utf8_invalid_at(const unsigned char *s, size_t len)
{
    size_t bad;
    return mt_utf8_check((const char *)s, len, &bad) ? -1 : (long)bad;
}

static int is_blank(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (!isspace((unsigned char)s[i])) return 0;
    return 1;
}

/* ---- .txt ---------------------------------------------------------------------------- */

/* Splits [p, end) into lines: *tlen is the line's length without "\r\n"/"\n". */
static const char *next_line(const char *p, const char *end, size_t *tlen)
{
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *stop = nl ? nl : end;
    size_t n = (size_t)(stop - p);
    if (n && p[n - 1] == '\r') n--;
    *tlen = n;
    return nl ? nl + 1 : end;
}

static int do_txt(const char *s, size_t len, const mt_format_options *opt,
                  mt_format_translate_fn tr, mt_format_progress_fn pr, void *user,
                  unsigned char **out, size_t *out_len, char *err, size_t errlen)
{
    units u = {0};
    int rc = -1;
    const char *end = s + len;
    for (const char *p = s; p < end;) {
        size_t n;
        const char *next = next_line(p, end, &n);
        if (!is_blank(p, n) && units_add(&u, p, n, opt, err, errlen) != 0) goto done;
        p = next;
    }
    if (units_translate(&u, 0, opt, tr, pr, user, err, errlen) != 0) goto done;
    buf b = {0};
    long k = 0;
    for (const char *p = s; p < end;) {
        size_t n;
        const char *next = next_line(p, end, &n);
        if (!is_blank(p, n)) {
            buf_put(&b, u.out[k], strlen(u.out[k]));
            k++;
        } else {
            buf_put(&b, p, n);
        }
        buf_put(&b, p + n, (size_t)(next - (p + n))); /* the line ending as it was */
        p = next;
    }
    rc = buf_finish(&b, out, out_len, err, errlen);
done:
    units_free(&u);
    return rc;
}

/* ---- .srt ---------------------------------------------------------------------------- */

typedef struct {
    const char *start;  /* first text line of the cue */
    size_t len;         /* bytes up to the end of the last text line (no line end) */
    char *joined;       /* the lines joined with "\n" (CRLF -> LF), owned */
} srt_cue;

static int do_srt(const char *s, size_t len, const mt_format_options *opt,
                  mt_format_translate_fn tr, mt_format_progress_fn pr, void *user,
                  unsigned char **out, size_t *out_len, char *err, size_t errlen)
{
    units u = {0};
    srt_cue *cues = NULL;
    long n_cues = 0, cap = 0, line_no = 0;
    int rc = -1;
    const char *end = s + len, *p = s;
    if (len >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0) p += 3;
    /* States: 0 = before a cue number, 1 = expecting timing, 2 = in cue text. */
    int state = 0;
    for (; p < end;) {
        size_t n;
        const char *next = next_line(p, end, &n);
        line_no++;
        if (state == 0) {
            if (is_blank(p, n)) { p = next; continue; }
            for (size_t i = 0; i < n; i++) {
                if (!isdigit((unsigned char)p[i]) && !(i > 0 && is_blank(p + i, n - i))) {
                    set_err(err, errlen, "srt: line %ld: expected a cue number, found '%.*s'",
                            line_no, (int)(n > 40 ? 40 : n), p);
                    goto done;
                }
            }
            state = 1;
        } else if (state == 1) {
            const char *arrow = n >= 3 ? memmem(p, n, "-->", 3) : NULL;
            if (!arrow) {
                set_err(err, errlen, "srt: line %ld: expected a timing line "
                        "'00:00:01,000 --> 00:00:02,000', found '%.*s'", line_no,
                        (int)(n > 40 ? 40 : n), p);
                goto done;
            }
            if (n_cues == cap) {
                cap = cap ? cap * 2 : 64;
                srt_cue *c = realloc(cues, (size_t)cap * sizeof *c);
                if (!c) { set_err(err, errlen, "out of memory"); goto done; }
                cues = c;
            }
            cues[n_cues++] = (srt_cue){next, 0, NULL};
            state = 2;
        } else {
            if (is_blank(p, n)) {
                state = 0;
            } else {
                srt_cue *c = &cues[n_cues - 1];
                c->len = (size_t)(p + n - c->start);
            }
        }
        p = next;
    }
    if (state == 1) {
        set_err(err, errlen, "srt: line %ld: the file ends before the cue's timing line",
                line_no);
        goto done;
    }
    for (long i = 0; i < n_cues; i++) {
        srt_cue *c = &cues[i];
        if (c->len == 0) continue;
        c->joined = malloc(c->len + 1);
        if (!c->joined) { set_err(err, errlen, "out of memory"); goto done; }
        size_t k = 0;
        for (size_t j = 0; j < c->len; j++)
            if (!(c->start[j] == '\r' && j + 1 < c->len && c->start[j + 1] == '\n'))
                c->joined[k++] = c->start[j];
        c->joined[k] = '\0';
        if (units_add(&u, c->joined, k, opt, err, errlen) != 0) goto done;
    }
    if (units_translate(&u, 0, opt, tr, pr, user, err, errlen) != 0) goto done;
    /* Copy the file, replacing each cue's text span by its translation. */
    buf b = {0};
    const char *q = s;
    long k = 0;
    int crlf = memmem(s, len, "\r\n", 2) != NULL;
    for (long i = 0; i < n_cues; i++) {
        srt_cue *c = &cues[i];
        if (c->len == 0) continue;
        buf_put(&b, q, (size_t)(c->start - q));
        for (const char *t = u.out[k]; *t; t++) {
            if (*t == '\n' && crlf) buf_put(&b, "\r\n", 2);
            else buf_put(&b, t, 1);
        }
        k++;
        q = c->start + c->len;
    }
    buf_put(&b, q, (size_t)(end - q));
    rc = buf_finish(&b, out, out_len, err, errlen);
done:
    for (long i = 0; i < n_cues; i++) free(cues[i].joined);
    free(cues);
    units_free(&u);
    return rc;
}

/* ---- XML documents inside a zip (.docx, .odt) ------------------------------------------ */

#define W_NS "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
#define TEXT_NS "urn:oasis:names:tc:opendocument:xmlns:text:1.0"

static int is_el(const xmlNode *n, const char *ns, const char *name)
{
    return n->type == XML_ELEMENT_NODE && n->ns && n->ns->href &&
           strcmp((const char *)n->ns->href, ns) == 0 &&
           strcmp((const char *)n->name, name) == 0;
}

/* A paragraph and the nodes that hold its text (w:t elements or text nodes). */
typedef struct {
    xmlNode **nodes;
    int n, cap;
    char *text; /* concatenated text, owned */
} para;

typedef struct {
    para *p;
    long n, cap;
    int docx; /* 1: w:p / w:t; 0: text:p, text:h / text nodes */
} para_list;

static int para_push_node(para *p, xmlNode *node)
{
    if (p->n == p->cap) {
        int cap = p->cap ? p->cap * 2 : 8;
        xmlNode **nn = realloc(p->nodes, (size_t)cap * sizeof *nn);
        if (!nn) return -1;
        p->nodes = nn;
        p->cap = cap;
    }
    p->nodes[p->n++] = node;
    return 0;
}

static int is_para(const para_list *pl, const xmlNode *n)
{
    return pl->docx ? is_el(n, W_NS, "p") : (is_el(n, TEXT_NS, "p") || is_el(n, TEXT_NS, "h"));
}

/* Collects the text holders of paragraph p below node, not entering nested paragraphs
 * (text boxes, notes: they are paragraphs of their own). */
static int collect_text(const para_list *pl, xmlNode *node, para *p)
{
    for (xmlNode *c = node->children; c; c = c->next) {
        if (is_para(pl, c)) continue;
        if (pl->docx) {
            if (is_el(c, W_NS, "t")) {
                if (para_push_node(p, c) != 0) return -1;
                continue;
            }
        } else if (c->type == XML_TEXT_NODE || c->type == XML_CDATA_SECTION_NODE) {
            if (para_push_node(p, c) != 0) return -1;
            continue;
        }
        /* ODF notes' citations and bodies are not running text of this paragraph. */
        if (!pl->docx && is_el(c, TEXT_NS, "note")) continue;
        if (c->type == XML_ELEMENT_NODE && collect_text(pl, c, p) != 0) return -1;
    }
    return 0;
}

/* Finds every paragraph below node, in document order (outer before nested). */
static int find_paras(para_list *pl, xmlNode *node)
{
    for (xmlNode *c = node->children; c; c = c->next) {
        if (c->type != XML_ELEMENT_NODE) continue;
        if (is_para(pl, c)) {
            if (pl->n == pl->cap) {
                long cap = pl->cap ? pl->cap * 2 : 64;
                para *np = realloc(pl->p, (size_t)cap * sizeof *np);
                if (!np) return -1;
                pl->p = np;
                pl->cap = cap;
            }
            para *p = &pl->p[pl->n++];
            memset(p, 0, sizeof *p);
            if (collect_text(pl, c, p) != 0) return -1;
        }
        if (find_paras(pl, c) != 0) return -1;
    }
    return 0;
}

/* Joins each paragraph's text; paragraphs with only blanks are left out (n = 0). */
static int para_texts(para_list *pl)
{
    for (long i = 0; i < pl->n; i++) {
        para *p = &pl->p[i];
        buf b = {0};
        for (int j = 0; j < p->n; j++) {
            xmlChar *t = xmlNodeGetContent(p->nodes[j]);
            if (t) buf_put(&b, t, strlen((const char *)t));
            xmlFree(t);
        }
        if (b.oom) { free(b.p); return -1; }
        if (!b.p || is_blank((const char *)b.p, b.n)) {
            free(b.p);
            p->n = 0;
            continue;
        }
        p->text = (char *)b.p;
    }
    return 0;
}

/* Puts a translation back: into the holder with the most source text (its run carries
 * the paragraph's dominant formatting: in "<b>Note:</b> the rest of the sentence" the
 * translation must not all turn bold), the others emptied or removed. */
static void para_replace(const para_list *pl, para *p, const char *translation)
{
    int best = 0;
    size_t best_len = 0;
    for (int j = 0; j < p->n; j++) {
        xmlChar *t = xmlNodeGetContent(p->nodes[j]);
        size_t n = t ? strlen((const char *)t) : 0;
        xmlFree(t);
        if (n > best_len) {
            best = j;
            best_len = n;
        }
    }
    if (pl->docx) {
        for (int j = 0; j < p->n; j++) {
            xmlNode *t = p->nodes[j];
            while (t->children) {
                xmlNode *c = t->children;
                xmlUnlinkNode(c);
                xmlFreeNode(c);
            }
            if (j == best) {
                xmlAddChild(t, xmlNewText((const xmlChar *)translation));
                /* Leading/trailing spaces in the translation must survive Word. */
                xmlNs *xml = xmlSearchNsByHref(t->doc, t, XML_XML_NAMESPACE);
                if (xml) xmlSetNsProp(t, xml, (const xmlChar *)"space",
                                      (const xmlChar *)"preserve");
            }
        }
    } else {
        for (int j = 0; j < p->n; j++) {
            xmlNode *t = p->nodes[j];
            if (j == best) {
                xmlNode *nt = xmlNewText((const xmlChar *)translation);
                xmlReplaceNode(t, nt);
            } else {
                xmlUnlinkNode(t);
            }
            xmlFreeNode(t);
        }
    }
}

static void para_list_free(para_list *pl)
{
    for (long i = 0; i < pl->n; i++) {
        free(pl->p[i].nodes);
        free(pl->p[i].text);
    }
    free(pl->p);
}

/* One XML part of a zip being translated. */
typedef struct {
    zip_uint64_t index;
    char name[256];
    xmlDoc *doc;
    para_list paras;
} part;

/* Is entry `name` one we translate? */
static int wanted_part(mt_file_format fmt, const char *name)
{
    if (fmt == MT_FILE_ODT) return strcmp(name, "content.xml") == 0;
    if (strcmp(name, "word/document.xml") == 0 || strcmp(name, "word/footnotes.xml") == 0 ||
        strcmp(name, "word/endnotes.xml") == 0)
        return 1;
    const char *base = name + 5;
    if (strncmp(name, "word/", 5) != 0 || strchr(base, '/')) return 0;
    size_t n = strlen(base);
    return n > 4 && strcmp(base + n - 4, ".xml") == 0 &&
           (strncmp(base, "header", 6) == 0 || strncmp(base, "footer", 6) == 0);
}

/* Reads entry idx fully (at most max bytes; a larger real size is an error). */
static unsigned char *read_entry(zip_t *za, zip_uint64_t idx, const char *name,
                                 zip_uint64_t declared, size_t max, size_t *len, char *err,
                                 size_t errlen)
{
    if (declared > max) {
        set_err(err, errlen, "%s: %llu bytes uncompressed, more than the limit of %zu",
                name, (unsigned long long)declared, max);
        return NULL;
    }
    zip_file_t *zf = zip_fopen_index(za, idx, 0);
    if (!zf) {
        set_err(err, errlen, "%s: %s", name, zip_strerror(za));
        return NULL;
    }
    unsigned char *data = malloc((size_t)declared + 2);
    if (!data) {
        zip_fclose(zf);
        set_err(err, errlen, "out of memory");
        return NULL;
    }
    /* Ask for one byte more than declared: an entry that inflates beyond its declared
     * size (a lying header) is refused rather than trusted. */
    zip_int64_t got = 0, r;
    while ((r = zip_fread(zf, data + got, (zip_uint64_t)(declared + 1 - (zip_uint64_t)got))) > 0) {
        got += r;
        if ((zip_uint64_t)got > declared) break;
    }
    if (r < 0 || (zip_uint64_t)got != declared) {
        set_err(err, errlen, "%s: %s", name,
                r < 0 ? zip_file_strerror(zf) : "size differs from the zip directory");
        zip_fclose(zf);
        free(data);
        return NULL;
    }
    zip_fclose(zf);
    data[got] = '\0';
    *len = (size_t)got;
    return data;
}

static xmlDoc *parse_part(const unsigned char *data, size_t len, const char *name, char *err,
                          size_t errlen)
{
    xmlParserCtxtPtr ctx = xmlNewParserCtxt();
    if (!ctx) {
        set_err(err, errlen, "out of memory");
        return NULL;
    }
    /* No network, no external entities or DTDs (XXE), no entity expansion. */
    xmlDoc *doc = xmlCtxtReadMemory(ctx, (const char *)data, (int)len, name, NULL,
                                    XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    if (!doc || !ctx->wellFormed) {
        /* The context keeps the first error: what and where. */
        xmlErrorPtr e = xmlCtxtGetLastError(ctx);
        char msg[256];
        snprintf(msg, sizeof msg, "%s", e && e->message ? e->message : "not well-formed");
        msg[strcspn(msg, "\n")] = '\0';
        set_err(err, errlen, "%s: line %d: invalid XML: %s", name, e ? e->line : 0, msg);
        xmlFreeDoc(doc);
        doc = NULL;
    }
    xmlFreeParserCtxt(ctx);
    return doc;
}

static int do_zip(mt_file_format fmt, const unsigned char *data, size_t len,
                  const mt_format_options *opt, mt_format_translate_fn tr,
                  mt_format_progress_fn pr, void *user, unsigned char **out, size_t *out_len,
                  char *err, size_t errlen)
{
    const char *fname = mt_format_name(fmt);
    zip_error_t ze;
    zip_error_init(&ze);
    zip_source_t *src = zip_source_buffer_create(data, len, 0, &ze);
    if (!src) {
        set_err(err, errlen, "%s: %s", fname, zip_error_strerror(&ze));
        zip_error_fini(&ze);
        return -1;
    }
    zip_t *za = zip_open_from_source(src, ZIP_CHECKCONS, &ze);
    if (!za) {
        set_err(err, errlen, "%s: not a valid zip archive: %s", fname, zip_error_strerror(&ze));
        zip_source_free(src);
        zip_error_fini(&ze);
        return -1;
    }
    zip_error_fini(&ze);
    /* The archive is rewritten into src when closed; keep src alive to read it back. */
    zip_source_keep(src);

    part *parts = NULL;
    int n_parts = 0, rc = -1;
    units u = {0};
    zip_int64_t n_entries = zip_get_num_entries(za, 0);
    if (n_entries > opt->max_entries) {
        set_err(err, errlen, "%s: %lld zip entries, more than the limit of %ld", fname,
                (long long)n_entries, opt->max_entries);
        goto fail;
    }
    parts = calloc((size_t)(n_entries > 0 ? n_entries : 1), sizeof *parts);
    if (!parts) { set_err(err, errlen, "out of memory"); goto fail; }
    zip_uint64_t total = 0;
    int have_main = 0;
    const char *main_part = fmt == MT_FILE_ODT ? "content.xml" : "word/document.xml";
    for (zip_int64_t i = 0; i < n_entries; i++) {
        zip_stat_t st;
        if (zip_stat_index(za, (zip_uint64_t)i, 0, &st) != 0 || !(st.valid & ZIP_STAT_NAME) ||
            !(st.valid & ZIP_STAT_SIZE)) {
            set_err(err, errlen, "%s: zip entry %lld: %s", fname, (long long)i,
                    zip_strerror(za));
            goto fail;
        }
        total += st.size;
        if (total > opt->max_total_uncompressed) {
            set_err(err, errlen, "%s: entries unpack to more than the limit of %zu bytes "
                    "(at %s)", fname, opt->max_total_uncompressed, st.name);
            goto fail;
        }
        if (!wanted_part(fmt, st.name)) continue;
        if (strcmp(st.name, main_part) == 0) have_main = 1;
        part *pt = &parts[n_parts++];
        pt->index = (zip_uint64_t)i;
        snprintf(pt->name, sizeof pt->name, "%s", st.name);
        size_t plen;
        char where[300];
        snprintf(where, sizeof where, "%s: %s", fname, st.name);
        unsigned char *xml = read_entry(za, (zip_uint64_t)i, where, st.size,
                                        opt->max_part_bytes, &plen, err, errlen);
        if (!xml) goto fail;
        pt->doc = parse_part(xml, plen, where, err, errlen);
        free(xml);
        if (!pt->doc) goto fail;
        pt->paras.docx = (fmt == MT_FILE_DOCX);
        xmlNode *root = xmlDocGetRootElement(pt->doc);
        if (!root || find_paras(&pt->paras, root) != 0 || para_texts(&pt->paras) != 0) {
            set_err(err, errlen, "%s: %s: cannot read paragraphs", fname, st.name);
            goto fail;
        }
        for (long k = 0; k < pt->paras.n; k++)
            if (pt->paras.p[k].n && units_add(&u, pt->paras.p[k].text,
                                              strlen(pt->paras.p[k].text), opt, err,
                                              errlen) != 0)
                goto fail;
    }
    if (!have_main) {
        set_err(err, errlen, "%s: the archive has no %s (not a %s document)", fname, main_part,
                fname);
        goto fail;
    }
    if (units_translate(&u, 0, opt, tr, pr, user, err, errlen) != 0) goto fail;

    long k = 0;
    for (int i = 0; i < n_parts; i++) {
        part *pt = &parts[i];
        for (long j = 0; j < pt->paras.n; j++)
            if (pt->paras.p[j].n) para_replace(&pt->paras, &pt->paras.p[j], u.out[k++]);
        xmlChar *xml = NULL;
        int xlen = 0;
        xmlDocDumpMemoryEnc(pt->doc, &xml, &xlen, "UTF-8");
        if (!xml) { set_err(err, errlen, "out of memory"); goto fail; }
        zip_source_t *ps = zip_source_buffer(za, xml, (zip_uint64_t)xlen, 1);
        if (!ps) {
            xmlFree(xml);
            set_err(err, errlen, "%s: %s: %s", fname, pt->name, zip_strerror(za));
            goto fail;
        }
        /* zip_source_buffer with freep = 1 frees with free(); libxml2's xmlFree is free()
         * unless an application replaced it, which this program does not. */
        if (zip_file_replace(za, pt->index, ps, 0) != 0) {
            zip_source_free(ps);
            set_err(err, errlen, "%s: %s: %s", fname, pt->name, zip_strerror(za));
            goto fail;
        }
        zip_set_file_compression(za, pt->index, ZIP_CM_DEFLATE, 0);
    }
    if (zip_close(za) != 0) {
        set_err(err, errlen, "%s: writing the archive: %s", fname, zip_strerror(za));
        goto fail;
    }
    za = NULL;
    /* Read the rewritten archive back out of the buffer source. */
    zip_stat_t st;
    if (zip_source_stat(src, &st) != 0 || zip_source_open(src) != 0) {
        set_err(err, errlen, "%s: reading the written archive back", fname);
        goto fail;
    }
    *out = malloc((size_t)st.size + 1);
    zip_int64_t got = *out ? zip_source_read(src, *out, st.size) : -1;
    zip_source_close(src);
    if (got != (zip_int64_t)st.size) {
        free(*out);
        *out = NULL;
        set_err(err, errlen, "%s: reading the written archive back", fname);
        goto fail;
    }
    *out_len = (size_t)st.size;
    rc = 0;
fail:
    if (za) zip_discard(za);
    zip_source_free(src);
    for (int i = 0; i < n_parts; i++) {
        para_list_free(&parts[i].paras);
        xmlFreeDoc(parts[i].doc);
    }
    free(parts);
    units_free(&u);
    return rc;
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
        set_err(err, errlen, "bad arguments");
        return -1;
    }
    *out = NULL;
    *out_len = 0;
    if (len > opt->max_input_bytes) {
        set_err(err, errlen, "%s: the file has %zu bytes, more than the limit of %zu",
                mt_format_name(fmt), len, opt->max_input_bytes);
        return -1;
    }
    if (!data) data = (const unsigned char *)"";
    if (fmt == MT_FILE_TXT || fmt == MT_FILE_SRT || fmt == MT_FILE_HTML) {
        long bad = utf8_invalid_at(data, len);
        if (bad >= 0) {
            set_err(err, errlen, "%s: not UTF-8 text (invalid byte 0x%02x at offset %ld)",
                    mt_format_name(fmt), data[bad], bad);
            return -1;
        }
        /* Translations come back NUL-terminated, so a NUL inside a text cannot survive. */
        const unsigned char *nul = memchr(data, 0, len);
        if (nul) {
            set_err(err, errlen, "%s: not a text file (NUL byte at offset %ld)",
                    mt_format_name(fmt), (long)(nul - data));
            return -1;
        }
    }
    switch (fmt) {
    case MT_FILE_TXT:
        return do_txt((const char *)data, len, opt, translate, progress, user, out, out_len,
                      err, errlen);
    case MT_FILE_SRT:
        return do_srt((const char *)data, len, opt, translate, progress, user, out, out_len,
                      err, errlen);
    case MT_FILE_HTML: {
        units u = {0};
        int rc = -1;
        buf b = {0};
        if (!is_blank((const char *)data, len) &&
            units_add(&u, (const char *)data, len, opt, err, errlen) != 0)
            goto html_done;
        if (units_translate(&u, 1, opt, translate, progress, user, err, errlen) != 0)
            goto html_done;
        if (u.n) buf_put(&b, u.out[0], strlen(u.out[0]));
        else buf_put(&b, data, len);
        rc = buf_finish(&b, out, out_len, err, errlen);
    html_done:
        units_free(&u);
        return rc;
    }
    case MT_FILE_DOCX:
    case MT_FILE_ODT:
        return do_zip(fmt, data, len, opt, translate, progress, user, out, out_len, err,
                      errlen);
    default:
        set_err(err, errlen, "unsupported file format (supported: %s)", mt_format_extensions());
        return -1;
    }
}
