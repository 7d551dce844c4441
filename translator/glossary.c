/* glossary.c: mt_glossary, DeepL's glossary entry formats read and checked. See
 * glossary.h for the contract. */
#include "glossary.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "utf8.h"

typedef struct {
    char *source, *target;
    int line;
} entry;

struct mt_glossary {
    int n, cap;
    entry *e;
};

static int fail(char *err, size_t errlen, int line, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (line > 0) snprintf(err, errlen, "line %d: %s", line, msg);
    else snprintf(err, errlen, "%s", msg);
    return -1;
}

void mt_glossary_free(mt_glossary *g)
{
    if (!g) return;
    for (int i = 0; i < g->n; i++) free(g->e[i].source), free(g->e[i].target);
    free(g->e);
    free(g);
}

int mt_glossary_count(const mt_glossary *g) { return g->n; }
const char *mt_glossary_source(const mt_glossary *g, int i) { return g->e[i].source; }
const char *mt_glossary_target(const mt_glossary *g, int i) { return g->e[i].target; }

/* A term: s[0, n) with spaces trimmed, checked; a malloc'd copy or NULL with err set
 * (*oom when out of memory). */
static char *term(const char *s, size_t n, int line, const char *which, int *oom, char *err, size_t errlen)
{
    while (n && *s == ' ') s++, n--;
    while (n && s[n - 1] == ' ') n--;
    if (n == 0) {
        fail(err, errlen, line, "the %s term is empty", which);
        return NULL;
    }
    size_t bad;
    if (!mt_utf8_check(s, n, &bad)) {
        fail(err, errlen, line, "the %s term is not valid UTF-8 (byte %zu)", which, bad + 1);
        return NULL;
    }
    for (size_t i = 0; i < n;) {
        uint32_t cp = 0;
        int k = mt_utf8_len(s + i, n - i, &cp);
        /* U+FEFF too: a byte order mark starting a TSV written back would be dropped */
        if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 || cp == 0xFEFF) {
            fail(err, errlen, line, "the %s term holds the control character U+%04X", which, (unsigned)cp);
            return NULL;
        }
        i += (size_t)k;
    }
    char *d = malloc(n + 1);
    if (!d) {
        *oom = 1;
        fail(err, errlen, 0, "out of memory");
        return NULL;
    }
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

static int add(mt_glossary *g, const char *src, size_t sn, const char *tgt, size_t tn, int line, char *err,
               size_t errlen)
{
    if (g->n >= MT_GLOSSARY_MAX_ENTRIES)
        return fail(err, errlen, line, "more than %d entries", MT_GLOSSARY_MAX_ENTRIES);
    int oom = 0;
    char *s = term(src, sn, line, "source", &oom, err, errlen);
    char *t = s ? term(tgt, tn, line, "target", &oom, err, errlen) : NULL;
    if (!s || !t) {
        free(s);
        return -1;
    }
    if (g->n == g->cap) {
        int cap = g->cap ? 2 * g->cap : 16;
        entry *e = realloc(g->e, (size_t)cap * sizeof *e);
        if (!e) {
            free(s), free(t);
            return fail(err, errlen, 0, "out of memory");
        }
        g->e = e;
        g->cap = cap;
    }
    g->e[g->n++] = (entry){s, t, line};
    return 0;
}

/* The end of the line starting at p (before its \n, \r\n or \r) and where the next starts. */
static const char *line_end(const char *p, const char *end, const char **next)
{
    const char *q = p;
    while (q < end && *q != '\n' && *q != '\r') q++;
    *next = q < end ? q + (*q == '\r' && q + 1 < end && q[1] == '\n' ? 2 : 1) : end;
    return q;
}

static int parse_tsv(mt_glossary *g, const char *p, const char *end, char *err, size_t errlen)
{
    for (int line = 1; p < end; line++) {
        const char *next, *q = line_end(p, end, &next);
        if (q > p) {
            const char *tab = memchr(p, '\t', (size_t)(q - p));
            if (!tab) return fail(err, errlen, line, "no tab between the source and the target term");
            if (memchr(tab + 1, '\t', (size_t)(q - tab - 1)))
                return fail(err, errlen, line, "more than one tab (an entry is \"source<TAB>target\")");
            if (add(g, p, (size_t)(tab - p), tab + 1, (size_t)(q - tab - 1), line, err, errlen)) return -1;
        }
        p = next;
    }
    return 0;
}

enum { CSV_MAX_FIELDS = 4 };

/* One CSV record from *pp (RFC 4180: quoted fields with "" for a quote); its fields as
 * malloc'd strings in f[], their count in *n. 0, or -1 with a message. */
static int csv_record(const char **pp, const char *end, int *line, char **f, size_t *flen, int *n, char *err,
                      size_t errlen)
{
    const char *p = *pp;
    *n = 0;
    for (;;) {
        if (*n == CSV_MAX_FIELDS) return fail(err, errlen, *line, "more than %d fields", CSV_MAX_FIELDS);
        size_t cap = 16, len = 0;
        char *buf = malloc(cap);
        if (!buf) return fail(err, errlen, 0, "out of memory");
        f[*n] = buf;
        flen[*n] = 0;
        (*n)++;
        int quoted = p < end && *p == '"';
        if (quoted) p++;
        for (;;) {
            if (p >= end) {
                if (quoted) return fail(err, errlen, *line, "a quoted field is not closed");
                break;
            }
            char ch = *p;
            if (quoted && ch == '"') {
                if (p + 1 < end && p[1] == '"') {
                    p += 2;
                } else {
                    p++;
                    if (p < end && *p != ',' && *p != '\n' && *p != '\r')
                        return fail(err, errlen, *line, "text after a closing quote");
                    break;
                }
            } else if (!quoted && (ch == ',' || ch == '\n' || ch == '\r')) {
                break;
            } else {
                if (quoted && ch == '\n') (*line)++;
                if (!quoted && ch == '"') return fail(err, errlen, *line, "a quote inside an unquoted field");
                p++;
            }
            if (len + 2 > cap) {
                char *b = realloc(buf, cap *= 2);
                if (!b) return fail(err, errlen, 0, "out of memory");
                f[*n - 1] = buf = b;
            }
            buf[len++] = ch;
        }
        buf[len] = '\0';
        flen[*n - 1] = len;
        if (p < end && *p == ',') {
            p++;
            continue;
        }
        const char *next;
        line_end(p, end, &next);
        *pp = next;
        return 0;
    }
}

static int parse_csv(mt_glossary *g, const char *p, const char *end, const char *source, const char *target,
                     char *err, size_t errlen)
{
    int line = 1;
    while (p < end) {
        char *f[CSV_MAX_FIELDS] = {0};
        size_t flen[CSV_MAX_FIELDS] = {0};
        int n = 0, first = line;
        int rc = csv_record(&p, end, &line, f, flen, &n, err, errlen);
        if (!rc && !(n == 1 && flen[0] == 0)) { /* an empty line is skipped */
            if (n != 2 && n != 4)
                rc = fail(err, errlen, first, "%d fields: an entry is \"source,target\" or "
                          "\"source,target,source_lang,target_lang\"", n);
            else if (n == 4 && ((source && strcasecmp(f[2], source) != 0) || (target && strcasecmp(f[3], target) != 0)))
                rc = fail(err, errlen, first, "languages \"%.20s\", \"%.20s\" are not the glossary's", f[2], f[3]);
            else
                rc = add(g, f[0], flen[0], f[1], flen[1], first, err, errlen);
        }
        for (int i = 0; i < CSV_MAX_FIELDS; i++) free(f[i]);
        if (rc) return -1;
        line++;
    }
    return 0;
}

static int cmp_source(const void *a, const void *b)
{
    const entry *x = *(const entry *const *)a, *y = *(const entry *const *)b;
    int c = strcmp(x->source, y->source);
    return c ? c : (x->line > y->line) - (x->line < y->line);
}

int mt_glossary_parse(const char *text, size_t len, mt_glossary_format fmt, const char *source,
                      const char *target, mt_glossary **out, char *err, size_t errlen)
{
    *out = NULL;
    mt_glossary *g = calloc(1, sizeof *g);
    if (!g) return fail(err, errlen, 0, "out of memory");
    const char *p = text ? text : "", *end = p + (text ? len : 0);
    if (end - p >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0) p += 3; /* a byte order mark */
    int rc = fmt == MT_GLOSSARY_CSV ? parse_csv(g, p, end, source, target, err, errlen)
                                    : parse_tsv(g, p, end, err, errlen);
    if (!rc && g->n == 0) rc = fail(err, errlen, 0, "no entries");
    if (!rc) {
        /* every source term once: sorted, duplicates are neighbours */
        entry **v = malloc((size_t)g->n * sizeof *v);
        if (!v) rc = fail(err, errlen, 0, "out of memory");
        for (int i = 0; v && i < g->n; i++) v[i] = &g->e[i];
        if (v) qsort(v, (size_t)g->n, sizeof *v, cmp_source);
        for (int i = 1; v && !rc && i < g->n; i++)
            if (strcmp(v[i - 1]->source, v[i]->source) == 0)
                rc = fail(err, errlen, v[i]->line, "the source term \"%.60s\" is already on line %d", v[i]->source,
                          v[i - 1]->line);
        free(v);
    }
    if (rc) {
        mt_glossary_free(g);
        return -1;
    }
    *out = g;
    return 0;
}

char *mt_glossary_tsv(const mt_glossary *g)
{
    size_t n = 1;
    for (int i = 0; i < g->n; i++) n += strlen(g->e[i].source) + strlen(g->e[i].target) + 2;
    char *out = malloc(n), *p = out;
    if (!out) return NULL;
    for (int i = 0; i < g->n; i++) p += sprintf(p, "%s\t%s\n", g->e[i].source, g->e[i].target);
    *p = '\0';
    return out;
}
